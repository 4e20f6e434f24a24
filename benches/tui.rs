//! The terminal UI's frame time on a 128-node / 1,024-GPU snapshot (the IBM
//! 8x H100 dump repeated 128 times, one PCI domain per node), every screen at
//! 200x60; and start to first frame on the bundled 8-GPU example. Targets
//! (issue 7): under 16 ms a frame, under 100 ms to the first frame.

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use topo::sources::{self, Origin};
use topo_model::{HostInfo, Snapshot, Source, Topology};
use topo_tui::ratatui::Terminal;
use topo_tui::ratatui::backend::TestBackend;
use topo_tui::ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use topo_tui::{App, Screen, UiData};

/// 128 copies of the 8-GPU node, each in its own PCI domain and NUMA ids.
fn cluster() -> Snapshot {
    let xml = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nccl-topo/ibm-gx3d-h100x8.xml"),
    )
    .unwrap();
    let mut merged = Topology::default();
    for node in 0..128u32 {
        let text = xml.replace("\"0000:", &format!("\"{:04x}:", node + 1));
        let mut topology = topo_parsers::nccl_xml::import(&text, "cluster").unwrap().topology;
        for numa in &mut topology.numa_nodes {
            numa.id += 2 * node as i32;
        }
        for device in &mut topology.pci_devices {
            device.numa_node = device.numa_node.map(|n| n + 2 * node as i32);
        }
        merged.numa_nodes.extend(topology.numa_nodes);
        merged.pci_devices.extend(topology.pci_devices);
        merged.gpus.extend(topology.gpus);
        merged.nics.extend(topology.nics);
        merged.nvswitches.extend(topology.nvswitches);
        merged.nvlinks.extend(topology.nvlinks);
        merged.cpu = topology.cpu;
    }
    for (i, gpu) in merged.gpus.iter_mut().enumerate() {
        gpu.index = Some(i as u32);
    }
    merged.canonicalize();
    Snapshot::new(Source::Example { name: "cluster-128x8".into() }, HostInfo::default(), merged, Vec::new())
}

fn frames(c: &mut Criterion) {
    let snapshot = cluster();
    assert_eq!(snapshot.topology.gpus.len(), 1024);
    let findings = topo::checks::hardware(&snapshot);
    let mut app = App::new(UiData { snapshot, nccl: None, findings, cluster: None });
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let mut group = c.benchmark_group("frame/1024-gpus/200x60");
    for (i, screen) in Screen::ALL.iter().enumerate() {
        app.on_key(KeyEvent::new(KeyCode::Char(char::from(b'1' + i as u8)), KeyModifiers::NONE));
        group.bench_function(screen.title(), |b| {
            b.iter(|| terminal.draw(|frame| topo_tui::ui::draw(frame, &mut app)).unwrap().area)
        });
    }
    group.finish();

    // The cluster screen over 4,096 nodes (3 of 4 like the recorded H100 node,
    // every 97th with a port down; the rest like the ASUS box).
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshots");
    let h100 = Snapshot::load(&fixtures.join("ibm-gx3d-h100x8-nvml.yaml")).unwrap();
    let asus = Snapshot::load(&fixtures.join("asus-esc8000a-e12.yaml")).unwrap();
    let nodes = (0..4096)
        .map(|i| {
            let mut node = if i % 4 == 3 { asus.clone() } else { h100.clone() };
            node.host.hostname = Some(format!("node-{i:05}"));
            if i % 97 == 0 && i % 4 != 3 {
                node.topology.nics[0].ports[0].state = Some("DOWN".into());
            }
            topo_model::cluster::NodeFacts::from_snapshot(&node, &format!("node-{i:05}.json"), &[])
        })
        .collect();
    let report = topo_model::cluster::analyse(nodes, Vec::new(), Vec::new());
    let cluster = Some(topo_tui::ClusterView { report, open: Box::new(|_| None) });
    let mut app = App::new(UiData { snapshot: h100.clone(), nccl: None, findings: Vec::new(), cluster });
    c.bench_function("frame/cluster-4096-nodes/200x60", |b| {
        b.iter(|| terminal.draw(|frame| topo_tui::ui::draw(frame, &mut app)).unwrap().area)
    });

    c.bench_function("first-frame/h100-sxm-8gpu", |b| {
        b.iter(|| {
            let snapshot = sources::load(Origin::Example("h100-sxm-8gpu")).unwrap();
            let findings = topo::checks::hardware(&snapshot);
            let mut app = App::new(UiData { snapshot, nccl: None, findings, cluster: None });
            let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
            terminal.draw(|frame| topo_tui::ui::draw(frame, &mut app)).unwrap().area
        })
    });
}

criterion_group!(benches, frames);
criterion_main!(benches);
