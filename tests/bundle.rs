//! `--from DIR` with one machine's pasted outputs: each file recognised by
//! content, the machine rebuilt, contributions listed, contradictions reported.

use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A bundle directory with the named fixtures under neutral names (content,
/// not the file name, says what each is).
fn bundle(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (i, file) in files.iter().enumerate() {
        std::fs::copy(fixtures().join(file), dir.path().join(format!("paste-{i}.txt"))).unwrap();
    }
    dir
}

const ASUS: [&str; 6] = [
    "lspci/asus-esc8000a-e12-lspci-tv.txt",
    "lspci/asus-esc8000a-e12-lspci-vvv.txt",
    "lspci/asus-esc8000a-e12-ibv_devinfo.txt",
    "lspci/asus-esc8000a-e12-acsctl.txt",
    "lspci/asus-esc8000a-e12-numactl.txt",
    "nvidia-smi-topo/asus-esc8000a-e12-rtx6000ada-x4.txt",
];

fn load(dir: &Path) -> topo_model::Snapshot {
    assert!(topo::bundle::is_bundle(dir));
    topo::bundle::load(dir).unwrap()
}

#[test]
fn asus_pastes_rebuild_the_machine_its_nvidia_smi_shows() {
    let dir = bundle(&ASUS);
    let snapshot = load(dir.path());
    let contradictions: Vec<&String> = snapshot.notices.iter().filter(|n| n.starts_with("contradiction")).collect();
    assert!(contradictions.is_empty(), "{contradictions:#?}");
    let said = |file: usize, what: &str| {
        snapshot.notices.iter().any(|n| n.starts_with(&format!("bundle: paste-{file}.txt: {what}")))
    };
    assert!(said(0, "lspci output") && said(1, "lspci output"));
    assert!(said(2, "ibv_devinfo (4 RDMA devices"));
    assert!(said(3, "not recognised") && said(4, "not recognised"));
    assert!(said(5, "nvidia-smi topo -m (8 endpoints)"));
    let names: Vec<&str> = snapshot.topology.nics.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]);
}

#[test]
fn a_wrong_machines_nvidia_smi_is_reported_not_merged() {
    // The ASUS lspci with a 2-GPU desktop's nvidia-smi topo -m: pasted by mistake.
    let dir = bundle(&[ASUS[0], ASUS[1], "nvidia-smi-topo/gtx1080ti-x2-desktop-phb.txt"]);
    let snapshot = load(dir.path());
    let contradictions: Vec<&String> = snapshot.notices.iter().filter(|n| n.starts_with("contradiction")).collect();
    assert_eq!(contradictions.len(), 1, "{contradictions:#?}");
    assert!(contradictions[0].contains("has endpoints"), "{}", contradictions[0]);
    assert_eq!(snapshot.topology.gpus.len(), 4, "the machine comes from lspci");
}

#[test]
fn a_changed_cell_is_named() {
    // The ASUS nvidia-smi with GPU0 x GPU1 changed from NODE to PIX (hand-made
    // from the real file: the fault a re-cabled machine would show).
    let dir = bundle(&[ASUS[0], ASUS[1], ASUS[2]]);
    let smi = std::fs::read_to_string(fixtures().join(ASUS[5])).unwrap();
    let changed = smi.replacen("GPU0     X      NODE", "GPU0     X      PIX ", 1);
    assert_ne!(changed, smi);
    std::fs::write(dir.path().join("handmade-smi.txt"), changed).unwrap();
    let snapshot = load(dir.path());
    let contradictions: Vec<&String> = snapshot.notices.iter().filter(|n| n.starts_with("contradiction")).collect();
    assert_eq!(
        contradictions,
        [&"contradiction: GPU0 x GPU1: handmade-smi.txt says PIX, the other files give NODE".to_string()]
    );
}

#[test]
fn a_cluster_directory_is_not_a_bundle() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixtures().join("snapshots/asus-esc8000a-e12.yaml"), dir.path().join("node1.yaml")).unwrap();
    std::fs::copy(fixtures().join(ASUS[0]), dir.path().join("lspci.txt")).unwrap();
    assert!(!topo::bundle::is_bundle(dir.path()));
    let empty = tempfile::tempdir().unwrap();
    assert!(!topo::bundle::is_bundle(empty.path()));
}

#[test]
fn topo_show_from_a_bundle_directory() {
    let dir = bundle(&ASUS);
    let output = assert_cmd::Command::cargo_bin("topo")
        .unwrap()
        .args(["show", "--plain", "--from"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("NIC0: mlx5_0"), "{stdout}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("nvidia-smi topo -m (8 endpoints), checked against the rest"), "{stderr}");
    assert!(!stderr.contains("contradiction"), "{stderr}");
}
