//! `topo cluster` on a directory built from the real fixtures: six nodes like
//! the recorded 8x H100 (two with one labelled hand-made fault each, one with
//! two), three like the ASUS PCIe box, a garbage file and a foreign one.

use std::path::Path;

use assert_cmd::Command;
use topo_model::Snapshot;
use topo_model::nvml::Answer;

fn load(path: &str) -> Snapshot {
    Snapshot::load(Path::new(env!("CARGO_MANIFEST_DIR")).join(path).as_path()).unwrap()
}

fn write(dir: &Path, name: &str, snapshot: &Snapshot) {
    let text = if name.ends_with(".json") { snapshot.to_json() } else { snapshot.to_yaml() };
    std::fs::write(dir.join(name), text).unwrap();
}

fn build(dir: &Path) {
    let h100 = load("tests/fixtures/snapshots/ibm-gx3d-h100x8-nvml.yaml");
    for i in 0..6 {
        let mut node = h100.clone();
        node.host.hostname = Some(format!("h100-{i:02}"));
        // NIC firmware (the fixture records none): one node runs an older one.
        for nic in &mut node.topology.nics {
            nic.firmware = Some(if i == 5 { "28.36.1010" } else { "28.39.1002" }.to_string());
        }
        match i {
            // Two of GPU3's NVLinks down.
            2 => {
                let gpu = node.nvml.as_mut().unwrap().devices[3].answers.as_mut().unwrap();
                for link in &mut gpu.nvlinks[16..] {
                    link.active = Answer::Ok(false);
                }
            }
            // A NIC port down and an older driver.
            4 => {
                node.topology.nics[2].ports[0].state = Some("DOWN".into());
                node.nvml.as_mut().unwrap().driver_version = Answer::Ok("535.183.01".into());
            }
            _ => {}
        }
        write(dir, &format!("h100-{i:02}.{}", if i % 2 == 0 { "json" } else { "yaml" }), &node);
    }
    let asus = load("tests/fixtures/snapshots/asus-esc8000a-e12.yaml");
    for i in 0..3 {
        let mut node = asus.clone();
        node.host.hostname = Some(format!("ada-{i}"));
        write(dir, &format!("ada-{i}.yaml"), &node);
    }
    std::fs::write(dir.join("broken.yaml"), "schema_version: 1\ntopology: [unclosed\n").unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nccl-topo/ibm-gx3d-h100x8.xml"),
        dir.join("topo.xml"),
    )
    .unwrap();
}

#[test]
fn classes_outliers_and_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let output =
        Command::cargo_bin("topo").unwrap().arg("cluster").arg(dir.path()).args(["--format", "json"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["nodes"], 9);
    let classes = report["classes"].as_array().unwrap();
    assert_eq!(classes.len(), 2);
    assert_eq!(classes[0]["class"], "NVIDIA H100 80GB HBM3 / RoCE");
    assert_eq!(classes[1]["class"], "RTX 6000 Ada Generation / RoCE");
    // Most different first: the node on older NIC firmware (8 NICs), the node with a
    // port down and an old driver, then the NVLinks.
    let outliers: Vec<(String, Vec<String>)> = classes[0]["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let facts =
                o["differences"].as_array().unwrap().iter().map(|d| d["fact"].as_str().unwrap().to_string()).collect();
            (o["host"].as_str().unwrap().to_string(), facts)
        })
        .collect();
    let firmware: Vec<String> = (0..8).map(|i| format!("nic.mlx5_{i}.firmware")).collect();
    assert_eq!(
        outliers,
        [
            ("h100-05".to_string(), firmware),
            ("h100-04".to_string(), vec!["driver".to_string(), "finding.ib-port-down".into(), "nic.mlx5_5".into()]),
            ("h100-02".to_string(), vec!["finding.nvlink-inactive".to_string(), "gpu3.nvlinks".into()]),
        ]
    );
    let gpu3 = &classes[0]["outliers"][2]["differences"][1];
    assert_eq!(
        (gpu3["value"].as_str(), gpu3["majority"].as_str(), gpu3["majority_nodes"].as_u64()),
        (Some("16"), Some("18"), Some(5))
    );
    assert!(classes[1]["outliers"].as_array().unwrap().is_empty());
    assert_eq!(report["unreadable"].as_array().unwrap().len(), 1);
    assert!(report["unreadable"][0][0].as_str().unwrap().ends_with("broken.yaml"));
    assert!(report["foreign"][0].as_str().unwrap().ends_with("topo.xml"));
}

#[test]
fn plain_report() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let output = Command::cargo_bin("topo").unwrap().arg("cluster").arg(dir.path()).output().unwrap();
    let text = String::from_utf8(output.stdout).unwrap().replace(&dir.path().display().to_string(), "DIR");
    insta::assert_snapshot!(text);
}

#[test]
fn nothing_readable_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    Command::cargo_bin("topo").unwrap().arg("cluster").arg(dir.path()).assert().code(2);
}

/// `topo show --from DIR` in the UI: the cluster screen lists the classes with
/// outliers first; Enter on an outlier opens that node on the other screens.
#[test]
fn cluster_screen_and_drill_down() {
    use topo_tui::ratatui::Terminal;
    use topo_tui::ratatui::backend::TestBackend;
    use topo_tui::ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let report = topo::cluster::load(&[dir.path().to_path_buf()]).unwrap();
    let open: topo_tui::OpenNode = Box::new(|file: &str| {
        let snapshot = Snapshot::load(Path::new(file)).ok()?;
        let findings = topo::checks::hardware(&snapshot);
        Some((snapshot, findings))
    });
    let (snapshot, findings) = open(&report.classes[0].outliers[0].file).unwrap();
    let cluster = Some(topo_tui::ClusterView { report, open });
    let mut app = topo_tui::App::new(topo_tui::UiData { snapshot, nccl: None, findings, cluster });
    assert_eq!(app.screen, topo_tui::Screen::Cluster);
    let mut terminal = Terminal::new(TestBackend::new(120, 24)).unwrap();
    let mut draw = |app: &mut topo_tui::App| {
        terminal.draw(|frame| topo_tui::ui::draw(frame, app)).unwrap();
        terminal.backend().to_string().replace(&dir.path().display().to_string(), "DIR")
    };
    insta::assert_snapshot!("cluster-screen-120x24", draw(&mut app));
    // Row 0 is the class heading, 1 to 3 the outliers: open h100-02.
    for code in [KeyCode::Down, KeyCode::Down, KeyCode::Down, KeyCode::Enter] {
        app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
    }
    assert_eq!(app.screen, topo_tui::Screen::Overview);
    assert_eq!(app.data.snapshot.host.hostname.as_deref(), Some("h100-02"));
    assert!(draw(&mut app).contains("nvlink-inactive"), "the opened node's own findings");
}

/// Stored probe results join the comparison: a node whose host copies run at
/// half the class median is an outlier on that measure, ranked with the rest.
/// (Nodes: the ASUS box's snapshot with stand-in probe results, three hosts.)
#[test]
fn measured_bandwidth_below_the_class_median() {
    let dir = tempfile::tempdir().unwrap();
    let base = load("tests/fixtures/snapshots/asus-esc8000a-e12-standin-probe.yaml");
    for (host, scale) in [("node-a", 1.0), ("node-b", 1.0), ("node-c", 0.5)] {
        let mut node = base.clone();
        node.host.hostname = Some(host.into());
        let report = node.probe.as_mut().unwrap();
        for copy in report.copies.iter_mut().filter(|c| c.kind == topo_model::measure::CopyKind::HostToDevice) {
            copy.bandwidth.0 *= scale;
        }
        write(dir.path(), &format!("{host}.yaml"), &node);
    }
    let output = Command::cargo_bin("topo").unwrap().arg("cluster").arg(dir.path()).args(["--format", "json"]).output();
    let json: serde_json::Value = serde_json::from_slice(&output.unwrap().stdout).unwrap();
    let outliers = json["classes"][0]["outliers"].as_array().unwrap();
    assert_eq!(outliers.len(), 1, "{outliers:?}");
    assert_eq!(outliers[0]["host"], "node-c");
    let difference = &outliers[0]["differences"][0];
    assert_eq!(difference["fact"], "probe.h2d_min_gbps");
    // GPU 3 is the slowest on every node: 8.9 GB/s, halved on node-c.
    assert_eq!((difference["value"].as_str(), difference["majority"].as_str()), (Some("4.5"), Some("median 8.9")));
}
