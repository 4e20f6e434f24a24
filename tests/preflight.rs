//! `topo preflight` on the recorded 8x H100 node: it passes as recorded and
//! against expectations written from itself; each fault injected alone (a
//! labelled hand-made change to the real topology) fails the check that owns
//! it, with exit code 1 and a one-line verdict first.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use topo_model::nvml::Answer;
use topo_model::{BusId, Snapshot};

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path)
}

fn healthy() -> Snapshot {
    Snapshot::load(&fixture("snapshots/ibm-gx3d-h100x8-nvml.yaml")).unwrap()
}

/// Runs preflight on `snapshot` (written to `dir`), returning exit code and stdout.
fn preflight(dir: &Path, snapshot: &Snapshot, args: &[&str]) -> (i32, String) {
    let path = dir.join("node.yaml");
    std::fs::write(&path, snapshot.to_yaml()).unwrap();
    let output =
        Command::cargo_bin("topo").unwrap().arg("preflight").arg("--from").arg(&path).args(args).output().unwrap();
    (output.status.code().unwrap(), String::from_utf8(output.stdout).unwrap())
}

fn check_line<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout.lines().find(|l| l.split_whitespace().nth(1) == Some(name)).unwrap_or_else(|| panic!("{name}:\n{stdout}"))
}

#[test]
fn healthy_node_passes_alone_and_against_its_own_expectations() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout) = preflight(dir.path(), &healthy(), &[]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.starts_with("PASS gx3d-h100: 10 checks passed, 0 warnings, 7 skipped\n"), "{stdout}");

    let expect = dir.path().join("h100.yaml");
    let (code, stdout) = preflight(dir.path(), &healthy(), &["--write-expect", expect.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}");
    insta::assert_snapshot!("h100-expectations", std::fs::read_to_string(&expect).unwrap());
    let (code, _) = preflight(dir.path(), &healthy(), &["--expect", expect.to_str().unwrap()]);
    assert_eq!(code, 0);
}

fn gpu(snapshot: &mut Snapshot, index: usize) -> &mut topo_model::nvml::DeviceAnswers {
    snapshot.nvml.as_mut().unwrap().devices[index].answers.as_mut().unwrap()
}

fn pci<'a>(snapshot: &'a mut Snapshot, bus: &str) -> &'a mut topo_model::PciDevice {
    let bus: BusId = bus.parse().unwrap();
    snapshot.topology.pci_devices.iter_mut().find(|d| d.bus_id == bus).unwrap()
}

#[test]
fn each_fault_fails_its_check() {
    let dir = tempfile::tempdir().unwrap();
    let expect = fixture("preflight/h100-node.yaml");
    type Inject = fn(&mut Snapshot);
    let cases: &[(&str, &str, Inject)] = &[
        ("gpus", "GPU is lost", |s| {
            let device = &mut s.nvml.as_mut().unwrap().devices[5];
            device.answers = None;
            device.unreachable = Some("GPU is lost".into());
        }),
        ("gpus", "7 GPUs, expected 8", |s| {
            s.topology.gpus.pop();
        }),
        ("nvlink", "GPU3 16 of 18 NVLinks active", |s| {
            for link in &mut gpu(s, 3).nvlinks[16..] {
                link.active = Answer::Ok(false);
            }
        }),
        ("nvswitch-fabric", "fabric in-progress", |s| {
            if let Answer::Ok(fabric) = &mut gpu(s, 2).fabric {
                fabric.state = "in-progress".into();
            }
        }),
        ("gpu-pcie", "GPU0 0000:a4:00.0 capable of Gen4 x?, expected Gen5 x16", |s| {
            pci(s, "0000:a4:00.0").link.max.generation = Some(4);
        }),
        ("pcie-paths", "mlx5_7 trained x8, expected x16", |s| {
            let nic = pci(s, "0000:a3:00.0");
            nic.link.current.width = Some(8);
            nic.link.max.width = Some(16);
        }),
        ("numa", "nearest NIC mlx5_7", |s| pci(s, "0000:a3:00.0").numa_node = Some(1)),
        ("rdma", "state DOWN", |s| s.topology.nics[0].ports[0].state = Some("DOWN".into())),
        ("rdma", "at 100 Gb/s, expected 200", |s| s.topology.nics[0].ports[0].rate_gbps = Some(100.0)),
        ("gpu-memory", "row remapping failed", |s| {
            gpu(s, 1).remapped_rows = Answer::Ok(topo_model::nvml::RemappedRows {
                corrected: 0,
                uncorrected: 1,
                pending: false,
                failed: true,
            })
        }),
        ("versions", "driver 535.183.01, expected at least 550.90.07", |s| {
            s.nvml.as_mut().unwrap().driver_version = Answer::Ok("535.183.01".into())
        }),
        ("dev-shm", "/dev/shm 64 MiB, expected at least 16 GiB", |s| s.host.dev_shm_bytes = Some(64 << 20)),
        ("memlock", "memlock 65536 bytes, expected unlimited", |s| s.host.memlock = Some("65536".into())),
    ];
    for (check, detail, inject) in cases {
        let mut snapshot = healthy();
        snapshot.host.dev_shm_bytes = Some(64 << 30);
        snapshot.host.memlock = Some("unlimited".into());
        inject(&mut snapshot);
        let (code, stdout) = preflight(dir.path(), &snapshot, &["--expect", expect.to_str().unwrap()]);
        assert_eq!(code, 1, "{check}: {stdout}");
        let verdict = stdout.lines().next().unwrap();
        assert!(verdict.starts_with(&format!("FAIL gx3d-h100: {check} (")), "{check}: {verdict}");
        let line = check_line(&stdout, check);
        assert!(line.starts_with("FAIL") && line.contains(detail), "{check}: {line}");
        // Only that check fails.
        assert_eq!(stdout.lines().filter(|l| l.starts_with("FAIL  ")).count(), 1, "{check}:\n{stdout}");
    }
}

#[test]
fn notes_do_not_fail_and_allowed_codes_pass() {
    let dir = tempfile::tempdir().unwrap();
    // An idle GPU's link at Gen1 is shown, not failed; NVLink errors fail.
    let mut snapshot = healthy();
    pci(&mut snapshot, "0000:a4:00.0").link.current.generation = Some(1);
    let (code, stdout) = preflight(dir.path(), &snapshot, &[]);
    assert_eq!(code, 0);
    assert!(check_line(&stdout, "pcie-paths").starts_with("WARN"), "{stdout}");
    gpu(&mut snapshot, 6).nvlinks[2].errors.replay = Answer::Ok(12);
    let (code, stdout) = preflight(dir.path(), &snapshot, &[]);
    assert_eq!(code, 1);
    assert!(check_line(&stdout, "nvlink").starts_with("FAIL"), "{stdout}");
    // The ASUS box's RDMA ports are down in its source; allowed, the node passes.
    let asus = Snapshot::load(&fixture("snapshots/asus-esc8000a-e12.yaml")).unwrap();
    let (code, stdout) = preflight(dir.path(), &asus, &[]);
    assert_eq!(code, 1, "{stdout}");
    let allow = dir.path().join("allow.yaml");
    std::fs::write(&allow, "allow: [ib-port-down]\n").unwrap();
    let (code, stdout) = preflight(dir.path(), &asus, &["--expect", allow.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}");
    assert!(check_line(&stdout, "rdma").contains("ib-port-down allowed"), "{stdout}");
}

#[test]
fn junit_and_could_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut snapshot = healthy();
    snapshot.topology.nics[0].ports[0].state = Some("DOWN".into());
    let (code, xml) = preflight(dir.path(), &snapshot, &["--format", "junit"]);
    assert_eq!(code, 1);
    insta::assert_snapshot!("junit-port-down", xml);
    // A bad expectations file, and live probes asked of a stored snapshot: exit 2.
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "gpus: {count: eight}\n").unwrap();
    let (code, _) = preflight(dir.path(), &snapshot, &["--expect", bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    let (code, _) = preflight(dir.path(), &snapshot, &["--probe", "quick"]);
    assert_eq!(code, 2);
}
