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
    let mut app = App::new(UiData { snapshot, nccl: None, findings });
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let mut group = c.benchmark_group("frame/1024-gpus/200x60");
    for (i, screen) in Screen::ALL.iter().enumerate() {
        app.on_key(KeyEvent::new(KeyCode::Char(char::from(b'1' + i as u8)), KeyModifiers::NONE));
        group.bench_function(screen.title(), |b| {
            b.iter(|| terminal.draw(|frame| topo_tui::ui::draw(frame, &mut app)).unwrap().area)
        });
    }
    group.finish();

    c.bench_function("first-frame/h100-sxm-8gpu", |b| {
        b.iter(|| {
            let snapshot = sources::load(Origin::Example("h100-sxm-8gpu")).unwrap();
            let findings = topo::checks::hardware(&snapshot);
            let mut app = App::new(UiData { snapshot, nccl: None, findings });
            let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
            terminal.draw(|frame| topo_tui::ui::draw(frame, &mut app)).unwrap().area
        })
    });
}

criterion_group!(benches, frames);
criterion_main!(benches);
