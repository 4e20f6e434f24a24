//! The NVML part of a snapshot, on recordings that follow real machines
//! (`tests/fixtures/nvml/`, made by its `build.py` from the real topology data
//! beside it): joined to the sysfs view, rendered, replayed from a file, and
//! degraded the ways a real node degrades.

use std::path::PathBuf;

use assert_cmd::Command;
use topo::sources::{self, Origin};
use topo_model::nvml::{Answer, NvmlRecording};
use topo_model::{SmiClass, Snapshot, Source, Topology};
use topo_parsers::nvidia_smi;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn recording(name: &str) -> NvmlRecording {
    let text = std::fs::read_to_string(fixtures().join("nvml").join(format!("{name}.yaml"))).unwrap();
    serde_yaml::from_str(&text).unwrap()
}

/// The sysfs tree of a real machine with an NVML recording joined, as a live
/// run on that machine builds it.
fn node(sysfs_tree: &str, nvml: NvmlRecording) -> Snapshot {
    let root = fixtures().join("sysfs").join(sysfs_tree);
    let mut snapshot = sources::load(Origin::Sysfs { root: &root, nvml: false }).unwrap();
    snapshot.source = Source::Sysfs { root: format!("tests/fixtures/sysfs/{sysfs_tree}") };
    sources::attach_nvml(&mut snapshot, Ok(nvml));
    snapshot
}

/// A recording alone (no sysfs tree: the NVLink pair's source is a pasted matrix).
fn bare(nvml: NvmlRecording) -> Snapshot {
    let source = Source::Example { name: "nvml recording".into() };
    let mut snapshot = Snapshot::new(source, Default::default(), Topology::default(), Vec::new());
    sources::attach_nvml(&mut snapshot, Ok(nvml));
    snapshot
}

fn plain(snapshot: &Snapshot) -> String {
    topo::views::plain::render(snapshot, false)
}

fn smi(file: &str) -> nvidia_smi::SmiMatrix {
    let path = fixtures().join("nvidia-smi-topo").join(file);
    nvidia_smi::parse(&std::fs::read_to_string(&path).unwrap(), file).unwrap()
}

#[test]
fn h100_nvswitch_node_gets_nv18_switches_and_names_from_nvml() {
    let snapshot = node("ibm-gx3d-h100x8", recording("ibm-gx3d-h100x8"));
    assert!(snapshot.notices.is_empty(), "{:#?}", snapshot.notices);
    let topology = &snapshot.topology;
    assert_eq!(topology.gpus.len(), 8);
    for (i, gpu) in topology.gpus.iter().enumerate() {
        assert_eq!((gpu.index, gpu.name.as_deref(), gpu.sm), (Some(i as u32), Some("NVIDIA H100 80GB HBM3"), Some(90)));
    }
    // The four NVSwitches of the source dump, 5/5/4/4 links from every GPU.
    let switches: Vec<String> = topology.nvswitches.iter().map(|s| s.bus_id.to_string()).collect();
    assert_eq!(switches, ["0000:f3:00.0", "0000:f4:00.0", "0000:f5:00.0", "0000:f6:00.0"]);
    let matrix = topology.matrix();
    for (i, row) in matrix.cells.iter().enumerate().take(8) {
        for (j, cell) in row.iter().enumerate().take(8) {
            assert_eq!(*cell, if i == j { SmiClass::Same } else { SmiClass::Nv(18) }, "GPU{i}-GPU{j}");
        }
    }
    // The same cells nvidia-smi printed on another 8x H100 HGX node.
    let printed = smi("h100x8-nv18-8nic-sglang.txt");
    for i in 0..8 {
        for j in 0..8 {
            assert_eq!(printed.cells[i][j], matrix.cells[i][j]);
        }
    }
    let text = plain(&snapshot);
    assert!(text.contains("GPUs (NVML: driver 550.90.07, NVML 12.550.90.07, CUDA 12.4)"), "{text}");
    assert!(text.contains("NVLink: 18 of 18 active (v4); error counters total 0"));
    assert!(!text.contains("disagree"), "NVML's common ancestors agree with the sysfs tree:\n{text}");
}

/// NVML's PCIe link and CPU affinity for each GPU are the sysfs tree's, joined on the bus ID.
#[test]
fn nvml_and_sysfs_agree_on_shared_facts() {
    let mut compared = 0;
    for (tree, name) in [("ibm-gx3d-h100x8", "ibm-gx3d-h100x8"), ("asus-esc8000a-e12", "asus-rtx6000ada-x4")] {
        let snapshot = node(tree, recording(name));
        let nvml = snapshot.nvml.as_ref().unwrap();
        for (index, device) in nvml.answered() {
            let bus_id = device.bus_id().unwrap();
            let pci =
                snapshot.topology.pci(bus_id).unwrap_or_else(|| panic!("{name}: GPU{index} {bus_id} not in sysfs"));
            let (current, max) = (pci.link.current, pci.link.max);
            let pcie = &device.pcie;
            // Where sysfs knows the value (the IBM dump has no GPU link widths).
            for (nvml, sysfs) in [
                (&pcie.gen_current, current.generation),
                (&pcie.gen_max, max.generation),
                (&pcie.width_current, current.width),
                (&pcie.width_max, max.width),
            ] {
                if let Some(sysfs) = sysfs {
                    assert_eq!(nvml.ok(), Some(&u32::from(sysfs)), "{name} GPU{index}");
                    compared += 1;
                }
            }
            let numa = snapshot.topology.numa_of(bus_id).unwrap();
            let node_cpus = snapshot.topology.numa_nodes.iter().find(|n| n.id == numa).unwrap().cpus.to_string();
            assert_eq!(device.cpu_affinity.ok(), Some(&node_cpus), "{name} GPU{index}");
        }
        // NVML's common ancestor is the PCIe class sysfs gives, for every pair.
        for pair in &nvml.pairs {
            let at = |i: u32| nvml.devices[i as usize].answers.as_ref().unwrap().bus_id().unwrap();
            let nvml_class = topo_model::nvml::ancestor_in_smi_words(pair.common_ancestor.ok().unwrap());
            let sysfs_class = snapshot.topology.pcie_path(at(pair.a), at(pair.b)).smi;
            assert_eq!(nvml_class, sysfs_class.to_string(), "{name} GPU{}-GPU{}", pair.a, pair.b);
        }
    }
    assert_eq!(compared, 8 * 2 + 4 * 4, "link generations of 12 GPUs, widths of the 4 the sources give");
}

#[test]
fn pcie_only_box_shows_p2p_reasons_and_idle_links() {
    let snapshot = node("asus-esc8000a-e12", recording("asus-rtx6000ada-x4"));
    assert!(snapshot.notices.is_empty(), "{:#?}", snapshot.notices);
    assert!(snapshot.topology.nvlinks.is_empty());
    // The cells and CPU affinity nvidia-smi printed on this machine.
    let printed = smi("asus-esc8000a-e12-rtx6000ada-x4.txt");
    let matrix = snapshot.topology.matrix();
    for i in 0..4 {
        for j in 0..4 {
            assert_eq!(printed.cells[i][j], matrix.cells[i][j], "GPU{i}-GPU{j}");
        }
        let device = snapshot.nvml.as_ref().unwrap().devices[i].answers.as_ref().unwrap();
        assert_eq!(device.cpu_affinity.ok(), printed.cpu_affinity[i].as_ref());
    }
    let text = plain(&snapshot);
    assert!(!text.contains("NVLinks (NVML)"), "{text}");
    assert!(text.contains("PCIe Gen1 x16 (max Gen4 x16) below max gen (normal while idle)"), "{text}");
    let p2p_row = text.lines().skip_while(|l| !l.starts_with("P2P status")).nth(2).unwrap();
    assert_eq!(
        p2p_row.split_whitespace().collect::<Vec<_>>(),
        ["GPU0", "X", "OK/OK/NS/NS", "CNS/CNS/NS/NS", "CNS/CNS/NS/NS"]
    );
}

#[test]
fn nvlink_bridge_pair_is_nv2_as_printed() {
    let snapshot = bare(recording("mleng-2gpu-nv2"));
    let printed = smi("mleng-2gpu-nv2.txt");
    let matrix = snapshot.topology.matrix();
    assert_eq!(matrix.cells, printed.cells);
    assert_eq!(matrix.cells[0][1], SmiClass::Nv(2));
    let nvml = snapshot.nvml.as_ref().unwrap();
    for (i, device) in nvml.answered() {
        assert_eq!(device.cpu_affinity.ok(), printed.cpu_affinity[i as usize].as_ref());
        // NUMA Affinity N/A in the source: NVML answers "not supported".
        assert_eq!(device.numa_node, Answer::NotSupported);
    }
    let text = plain(&snapshot);
    // Fields this GPU does not support read `n/a`, not errors.
    assert!(text.contains("remapped rows: n/a"), "{text}");
    assert!(text.contains("fabric n/a"), "{text}");
    assert!(text.contains("ECC off: volatile n/a corrected"), "{text}");
    assert!(!text.contains("error ("), "{text}");
    assert!(text.contains("GPU1 0000:68:00.0"), "NVML's upper-case bus IDs are normalised:\n{text}");
}

#[test]
fn rendered_nvml_sections() {
    for (name, snapshot) in [
        ("h100-nvswitch", node("ibm-gx3d-h100x8", recording("ibm-gx3d-h100x8"))),
        ("rtx6000ada-pcie", node("asus-esc8000a-e12", recording("asus-rtx6000ada-x4"))),
        ("nvlink-bridge-pair", bare(recording("mleng-2gpu-nv2"))),
    ] {
        let text = plain(&snapshot);
        let start = text.find("GPUs (NVML").unwrap();
        insta::assert_snapshot!(format!("nvml-{name}"), &text[start..]);
    }
}

/// `topo snapshot` output, YAML or JSON, replays exactly on a machine without a
/// GPU. The committed YAML (shown in the README) is kept equal to a fresh one;
/// `TOPO_REGENERATE=1` rewrites it.
#[test]
fn recorded_snapshot_replays_exactly() {
    let snapshot = node("ibm-gx3d-h100x8", recording("ibm-gx3d-h100x8"));
    let committed = fixtures().join("snapshots/ibm-gx3d-h100x8-nvml.yaml");
    if std::env::var_os("TOPO_REGENERATE").is_some() {
        std::fs::write(&committed, snapshot.to_yaml()).unwrap();
    }
    assert_eq!(Snapshot::load(&committed).unwrap(), snapshot, "TOPO_REGENERATE=1 cargo test --test nvml rewrites it");
    let dir = tempfile::tempdir().unwrap();
    for (file, text) in [("node.yaml", snapshot.to_yaml()), ("node.json", snapshot.to_json())] {
        let path = dir.path().join(file);
        std::fs::write(&path, text).unwrap();
        assert_eq!(Snapshot::load(&path).unwrap(), snapshot, "{file}");
        let shown =
            Command::cargo_bin("topo").unwrap().args(["show", "--plain", "--from"]).arg(&path).output().unwrap();
        assert!(shown.status.success());
        assert_eq!(String::from_utf8(shown.stdout).unwrap(), plain(&snapshot), "{file}");
    }
}

#[test]
fn no_driver_is_one_notice_and_the_sysfs_view() {
    let output = Command::cargo_bin("topo")
        .unwrap()
        .args(["show", "--plain"])
        .env("TOPO_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("NVML unavailable (no NVIDIA driver: /nonexistent/libnvidia-ml.so.1: cannot open"),
        "{stderr}"
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains(": sysfs under /") && stdout.contains("NUMA node"), "{stdout}");
    // `--no-nvml` does not ask at all.
    let quiet = Command::cargo_bin("topo")
        .unwrap()
        .args(["show", "--plain", "--no-nvml"])
        .env("TOPO_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1")
        .output()
        .unwrap();
    assert!(!String::from_utf8(quiet.stderr).unwrap().contains("NVML"));
}

#[test]
fn driver_without_devices() {
    let none = || NvmlRecording { devices: Vec::new(), pairs: Vec::new(), ..recording("asus-rtx6000ada-x4") };
    let snapshot = node("asus-esc8000a-e12", NvmlRecording { device_count: Answer::Ok(0), ..none() });
    assert_eq!(snapshot.notices, ["NVML: the NVIDIA driver is loaded but reports no GPU"]);
    assert!(plain(&snapshot).contains("the driver reports no GPU"));
    // Counting itself failed: said so, not passed off as "no GPU".
    let failed =
        node("asus-esc8000a-e12", NvmlRecording { device_count: Answer::Error("Unknown Error".into()), ..none() });
    assert_eq!(failed.notices, ["NVML: cannot count the GPUs: error (Unknown Error)"]);
}

/// GPU 5 has fallen off the bus: it is reported, the other seven are probed as usual.
#[test]
fn gpu_off_the_bus_is_reported_and_the_rest_probed() {
    let mut nvml = recording("ibm-gx3d-h100x8");
    nvml.devices[5].answers = None;
    nvml.devices[5].unreachable = Some("GPU is lost".into());
    nvml.pairs.retain(|p| p.a != 5 && p.b != 5);
    let snapshot = node("ibm-gx3d-h100x8", nvml);
    assert_eq!(snapshot.notices, ["GPU 5: NVML cannot reach it (GPU is lost); the other GPUs were probed"]);
    let text = plain(&snapshot);
    assert!(text.contains("GPU5   unreachable: GPU is lost"), "{text}");
    assert_eq!(text.matches("NVLink: 18 of 18 active").count(), 7);
    let matrix = snapshot.topology.matrix();
    let gpu = |label: &str| matrix.endpoints.iter().position(|e| e.label == label).unwrap();
    assert_eq!(matrix.cells[gpu("GPU0")][gpu("GPU7")], SmiClass::Nv(18));
    // Still in the PCIe tree, without NVLink: a PCIe class.
    assert!(!matches!(matrix.cells[gpu("GPU0")][gpu("GPU5")], SmiClass::Nv(_)));
}

/// An H100 NVL pair: 18 links per GPU, 12 of them bridged to the peer by
/// design. A normal partial set, not a fault (labelled hand-made case: the NV2
/// pair's recording with H100 NVL's link set).
#[test]
fn partial_nvlink_set_is_not_a_fault() {
    let mut nvml = recording("mleng-2gpu-nv2");
    for device in &mut nvml.devices {
        let answers = device.answers.as_mut().unwrap();
        answers.name = Answer::Ok("NVIDIA H100 NVL".into());
        let template = answers.nvlinks[0].clone();
        answers.nvlinks = (0..18)
            .map(|link| topo_model::nvml::NvmlLink {
                link,
                active: Answer::Ok(link < 12),
                version: Answer::Ok(4),
                ..template.clone()
            })
            .collect();
    }
    let snapshot = bare(nvml);
    assert!(snapshot.notices.is_empty(), "{:#?}", snapshot.notices);
    let text = plain(&snapshot);
    assert_eq!(text.matches("NVLink: 12 of 18 active (v4)").count(), 2, "{text}");
    assert_eq!(text.matches(" inactive ").count(), 12, "{text}");
    assert!(!text.to_lowercase().contains("fault") && !text.contains(" down"), "{text}");
    assert_eq!(snapshot.topology.matrix().cells[0][1], SmiClass::Nv(12));
}

#[test]
fn link_errors_and_health_are_shown() {
    let mut nvml = recording("ibm-gx3d-h100x8");
    let gpu = nvml.devices[2].answers.as_mut().unwrap();
    gpu.nvlinks[7].errors.replay = Answer::Ok(1234);
    gpu.nvlinks[7].errors.crc_flit = Answer::Ok(56);
    gpu.remapped_rows =
        Answer::Ok(topo_model::nvml::RemappedRows { corrected: 1, uncorrected: 2, pending: true, failed: true });
    gpu.clock_event_reasons = Answer::Ok(0x40);
    gpu.serial = Answer::Error("Insufficient Permissions".into());
    let text = plain(&node("ibm-gx3d-h100x8", nvml));
    let row = text.lines().find(|l| l.starts_with("GPU2   7 ")).unwrap();
    assert!(row.trim_end().ends_with("1234         0        56         0"), "{row}");
    assert!(text.contains("NVLink: 18 of 18 active (v4); error counters total 1290"), "{text}");
    assert!(text.contains("remapped rows: 1 corrected, 2 uncorrected, pending, REMAPPING FAILED"), "{text}");
    assert!(text.contains("clock events: hw-thermal-slowdown (hardware)"), "{text}");
    assert!(text.contains("serial error (Insufficient Permissions)"), "{text}");
}

/// The live path end to end: `topo show` on this machine with the stand-in
/// NVML library of `probes/tests/fake-nvml` (GPU 0 answers, GPU 1 is lost).
#[test]
fn live_show_with_a_stand_in_driver() {
    let dir = tempfile::tempdir().unwrap();
    let library = dir.path().join("libnvidia-ml.so.1");
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("probes/tests/fake-nvml/fake_nvml.c");
    let built = std::process::Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(&library).arg(&source).status();
    assert!(built.expect("a C compiler (`cc`)").success());
    let output = Command::cargo_bin("topo")
        .unwrap()
        .args(["show", "--plain"])
        .env("TOPO_NVML_LIBRARY", &library)
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("GPU 1: NVML cannot reach it (device fell off the bus"), "{stderr}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("GPUs (NVML: driver 999.12.34, NVML n/a, CUDA n/a)"), "{stdout}");
    assert!(stdout.contains("GPU0   Fake H100  0000:1a:00.0"), "{stdout}");
    assert!(stdout.contains("GPU1   unreachable: device fell off the bus"), "{stdout}");
}
