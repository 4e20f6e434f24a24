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

fn notices_of(snapshot: &topo_model::Snapshot, prefix: &str) -> Vec<String> {
    snapshot.notices.iter().filter(|n| n.starts_with(prefix)).cloned().collect()
}

fn findings(snapshot: &topo_model::Snapshot) -> Vec<topo_model::Finding> {
    topo::checks::hardware(snapshot)
}

/// The eight-A100 machine whose `nvidia-smi -q -d ECC`, `nvlink -s -i 0` and
/// `nvlink -e` were published together: one GPU's 87 corrected DRAM errors are
/// recorded, the links join their GPUs by UUID, and nothing is contradicted.
#[test]
fn a100_pastes_record_nvml_answers_by_bus_id_and_uuid() {
    let dir = bundle(&[
        "nvidia-smi-q/brev-a100-sxm4-40gb-x8-q-d-ecc.txt",
        "nvidia-smi-nvlink/brev-a100-sxm4-40gb-x8-nvlink-s-i0.txt",
        "nvidia-smi-nvlink/brev-a100-sxm4-40gb-x8-nvlink-e.txt",
    ]);
    let snapshot = load(dir.path());
    assert!(notices_of(&snapshot, "contradiction").is_empty(), "{:#?}", snapshot.notices);
    assert!(notices_of(&snapshot, "bundle: paste-0.txt: nvidia-smi -q (driver 535.161.08, 8 GPUs").len() == 1);
    let nvml = snapshot.nvml.as_ref().unwrap();
    assert_eq!(nvml.devices.len(), 8, "the nvlink listings add no GPU of their own");
    let (_, gpu1) = nvml.answered().nth(1).unwrap();
    assert_eq!(gpu1.bus_id().unwrap().to_string(), "0000:0b:00.0");
    assert_eq!(gpu1.ecc.aggregate_corrected.ok(), Some(&87));
    let gpu0 = nvml.answered().next().unwrap().1;
    assert_eq!(gpu0.nvlinks.len(), 12);
    assert!(gpu0.nvlinks.iter().all(|l| l.speed_gbps == Some(25.0) && l.errors.replay.ok() == Some(&0)));
    assert_eq!(
        snapshot.topology.gpus.iter().map(|g| g.index).collect::<Vec<_>>(),
        (0..8).map(Some).collect::<Vec<_>>()
    );
    // `-e` lists counters, not states: no GPU is taken for one with its links down.
    assert!(findings(&snapshot).iter().all(|f| f.code != "nvlink-inactive"), "{:#?}", findings(&snapshot));
}

/// Two RTX 5090s under one host bridge whose `topo -p2p rw` says GNS: P2P is
/// refused where the PCIe path allows it.
#[test]
fn p2p_refused_between_gpus_the_topology_connects() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["club-3090-1229-2x5090-topo-m.txt", "club-3090-1229-2x5090-p2p-rw.txt"] {
        std::fs::copy(fixtures().join("nvidia-smi-p2p").join(file), dir.path().join(file)).unwrap();
    }
    let snapshot = load(dir.path());
    assert!(
        notices_of(&snapshot, "bundle: club-3090-1229-2x5090-p2p-rw.txt: nvidia-smi topo -p2p (2 GPUs, read").len()
            == 1
    );
    let found = findings(&snapshot);
    let p2p = found.iter().find(|f| f.code == "p2p-not-supported").expect("p2p finding");
    assert_eq!(p2p.evidence[0].text, "PHB path; P2P read gpu-not-supported");

    // Five GPUs whose `topo -p2p p` is all OK: nothing to report.
    let dir = tempfile::tempdir().unwrap();
    for file in ["aikitoria-13-5gpu-topo-m.txt", "aikitoria-13-5gpu-p2p-p.txt"] {
        std::fs::copy(fixtures().join("nvidia-smi-p2p").join(file), dir.path().join(file)).unwrap();
    }
    let snapshot = load(dir.path());
    assert_eq!(snapshot.nvml.as_ref().unwrap().pairs.len(), 20);
    assert!(findings(&snapshot).iter().all(|f| f.code != "p2p-not-supported"));
}

/// The ASUS machine's pastes with a hand-made nvbandwidth run (named as such:
/// no real run of this machine is published) in which GPU 3's host copies
/// crawl: the copies are held against each GPU's PCIe link and the probe's
/// slow-link finding names GPU 3.
#[test]
fn nvbandwidth_copies_are_held_against_their_paths() {
    let mut files = ASUS.to_vec();
    files.push("nvbandwidth/handmade-asus-h2d-ce-gpu3-slow.txt");
    let dir = bundle(&files);
    let snapshot = load(dir.path());
    assert!(notices_of(&snapshot, "contradiction").is_empty(), "{:#?}", snapshot.notices);
    let said = notices_of(&snapshot, "bundle: paste-6.txt: nvbandwidth v0.8");
    assert!(
        said[0].contains(
            "4 copies measured, 4 held against their path; not compared: device_to_device_bidirectional_memcpy_read_ce"
        ),
        "{said:?}"
    );
    let probe = snapshot.probe.as_ref().unwrap();
    assert_eq!(
        probe.gpus.iter().map(|g| g.bus_id.as_str()).collect::<Vec<_>>(),
        ["0000:01:00.0", "0000:41:00.0", "0000:c1:00.0", "0000:e1:00.0"]
    );
    let found = findings(&snapshot);
    let slow = found.iter().find(|f| f.code == "probe-slow-link").expect("slow link");
    assert_eq!(slow.evidence.len(), 1);
    assert!(slow.evidence[0].at.contains("GPU 3"), "{slow:#?}");
}

/// Real nvbandwidth runs (v0.10 text, v0.5 `-j` JSON) pasted on their own:
/// recognised, but with no file that describes the machine the bundle is
/// refused with a message saying what is missing (no published run comes with
/// its machine's lspci, `topo -m` or `-q`).
#[test]
fn real_nvbandwidth_runs_alone_ask_for_the_machine() {
    for file in ["nvbandwidth/dell-7gpu-v0.10-ce-suite.txt", "nvbandwidth/dcgm-v0.5-json-1gpu-verbose.json"] {
        let dir = bundle(&[file]);
        assert!(topo::bundle::is_bundle(dir.path()), "{file}");
        let error = topo::bundle::load(dir.path()).unwrap_err().to_string();
        assert!(error.contains("no lspci, nvidia-smi topo -m or nvidia-smi -q output among the files"), "{error}");
    }
}

/// Real files of different machines put together: the contradictions name them.
#[test]
fn pastes_of_different_machines_contradict() {
    let mut files = ASUS[..3].to_vec();
    files.push("nvidia-smi-q/princeton-della-h100-nvidia-smi-a.txt");
    files.push("nvbandwidth/nvbandwidth-issue42-a100-h2d-sm.txt");
    let dir = bundle(&files);
    let snapshot = load(dir.path());
    let contradictions = notices_of(&snapshot, "contradiction");
    assert!(
        contradictions
            .contains(&"contradiction: paste-3.txt lists a GPU at 0000:19:00.0, lspci shows no GPU there".to_string()),
        "{contradictions:#?}"
    );
    assert!(
        contradictions.contains(
            &"contradiction: paste-4.txt ran on a GPU at 0000:99:00.0, the other files show no GPU there".to_string()
        ),
        "{contradictions:#?}"
    );
}

/// A hand-made `nvidia-smi nvlink -s` (a fault no published output shows):
/// the H800 listing with two of GPU 1's links `<inactive>`, against a
/// `topo -m` that counts NV8 between every pair.
#[test]
fn inactive_nvlinks_contradict_topo_m() {
    let dir = tempfile::tempdir().unwrap();
    let status = std::fs::read_to_string(fixtures().join("nvidia-smi-nvlink/h800-x8-nvlink-status.txt")).unwrap();
    let broken = status.replacen("GPU 1: NVIDIA H800 (UUID: GPU-f5046fa5-3db4-45e8-870a-dc1376becaa5)\n         Link 0: 26.562 GB/s\n         Link 1: 26.562 GB/s", "GPU 1: NVIDIA H800 (UUID: GPU-f5046fa5-3db4-45e8-870a-dc1376becaa5)\n         Link 0: <inactive>\n         Link 1: <inactive>", 1);
    assert_ne!(broken, status);
    std::fs::write(dir.path().join("handmade-nvlink-s.txt"), broken).unwrap();
    let labels: Vec<String> = (0..8).map(|i| format!("GPU{i}")).collect();
    let mut topo_m = format!("\t{}\tCPU Affinity\tNUMA Affinity\n", labels.join("\t"));
    for (i, label) in labels.iter().enumerate() {
        let cells: Vec<&str> = (0..8).map(|j| if i == j { " X " } else { "NV8" }).collect();
        topo_m.push_str(&format!("{label}\t{}\t0-31\t0\n", cells.join("\t")));
    }
    std::fs::write(dir.path().join("handmade-topo-m.txt"), topo_m).unwrap();
    let snapshot = load(dir.path());
    let contradictions = notices_of(&snapshot, "contradiction");
    assert_eq!(
        contradictions,
        [
            "contradiction: GPU1: handmade-topo-m.txt says NV8, handmade-nvlink-s.txt shows 6 active and 2 inactive links"
        ]
    );
    let found = findings(&snapshot);
    let inactive = found.iter().find(|f| f.code == "nvlink-inactive").expect("nvlink-inactive");
    assert_eq!(inactive.evidence.len(), 1);
    assert!(inactive.evidence[0].text.starts_with("6 of 8 NVLinks active"), "{inactive:#?}");
}

/// NCCL graph dumps are kept beside the topology and shown like logged rings.
#[test]
fn graph_dumps_are_shown_per_channel() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixtures().join("nccl-graph/azure-ncv4-a100x4-graph.xml"), dir.path().join("graph.xml.txt")).unwrap();
    std::fs::copy(fixtures().join("nvidia-smi-q/princeton-della-h100-nvidia-smi-a.txt"), dir.path().join("q.txt"))
        .unwrap();
    let output = assert_cmd::Command::cargo_bin("topo")
        .unwrap()
        .args(["show", "--plain", "--from"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let graphs = &stdout[stdout.find("NCCL graph dump").expect("graph section")..];
    insta::assert_snapshot!("bundle_graph_dump_azure_ncv4", graphs);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bundle: graph.xml.txt: NCCL graph dump (3 graphs, 10 channels"), "{stderr}");
}

/// `topo diagnose --from DIR` judges a bundle with no log.
#[test]
fn diagnose_reads_a_bundle_without_a_log() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["club-3090-1229-2x5090-topo-m.txt", "club-3090-1229-2x5090-p2p-rw.txt"] {
        std::fs::copy(fixtures().join("nvidia-smi-p2p").join(file), dir.path().join(file)).unwrap();
    }
    let output = assert_cmd::Command::cargo_bin("topo")
        .unwrap()
        .args(["diagnose", "--fail-on", "warning", "--from"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    insta::assert_snapshot!("bundle_diagnose_2x5090_p2p", String::from_utf8_lossy(&output.stdout));
}

/// The H800's `nvidia-smi -q -i 0` and `nvidia-smi nvlink --status`, published
/// together: GPU 0 joins by UUID (its bus ID from -q, its links from nvlink);
/// GPUs 1 and 7, listed by nvlink alone, keep their links but no bus ID.
#[test]
fn h800_query_and_nvlink_status_join_by_uuid() {
    let dir = bundle(&["nvidia-smi-q/h800-x8-nvidia-smi-q-i0.txt", "nvidia-smi-nvlink/h800-x8-nvlink-status.txt"]);
    let snapshot = load(dir.path());
    assert!(notices_of(&snapshot, "contradiction").is_empty(), "{:#?}", snapshot.notices);
    assert!(
        notices_of(&snapshot, "bundle: paste-0.txt: nvidia-smi -q (driver 525.105.17, 1 GPU of 8 attached").len() == 1
    );
    let nvml = snapshot.nvml.as_ref().unwrap();
    let (_, gpu0) = nvml.answered().next().unwrap();
    assert_eq!(gpu0.bus_id().unwrap().to_string(), "0000:18:00.0");
    assert_eq!(gpu0.nvlinks.len(), 8);
    assert!(gpu0.nvlinks.iter().all(|l| l.speed_gbps == Some(26.562)));
    assert_eq!(nvml.answered().filter(|(_, d)| d.bus_id().is_none()).map(|(i, _)| i).collect::<Vec<_>>(), [1, 7]);
    assert_eq!(snapshot.topology.gpus.len(), 1);
    assert!(findings(&snapshot).is_empty(), "{:#?}", findings(&snapshot));
}

/// A hand-made graph dump for the ASUS machine (no real dump of it is
/// published): channel 00 enters and leaves through the NICs of its end GPUs'
/// sockets; channel 01 through the other socket's NICs, which the check names.
#[test]
fn graph_channels_through_a_far_nic_are_reported() {
    let dir = bundle(&ASUS);
    let graph = r#"<graphs version="1">
  <graph id="0" pattern="4" crossnic="0" nchannels="2" speedintra="20" speedinter="20" latencyinter="0" typeintra="SYS" typeinter="SYS" samechannels="0">
    <channel>
      <net dev="0"/>
      <gpu dev="0"/>
      <gpu dev="1"/>
      <gpu dev="2"/>
      <gpu dev="3"/>
      <net dev="3"/>
    </channel>
    <channel>
      <net dev="2"/>
      <gpu dev="0"/>
      <gpu dev="1"/>
      <gpu dev="2"/>
      <gpu dev="3"/>
      <net dev="1"/>
    </channel>
  </graph>
</graphs>
"#;
    std::fs::write(dir.path().join("handmade-graph.xml"), graph).unwrap();
    let snapshot = load(dir.path());
    let found = findings(&snapshot);
    let far = found.iter().find(|f| f.code == "graph-nic-not-nearest").expect("far NIC finding");
    let texts: Vec<&str> = far.evidence.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "GPU 0 uses NET 2 (mlx5_2, SYS); its nearest NIC is mlx5_0 (NODE)",
            "GPU 3 uses NET 1 (mlx5_1, SYS); its nearest NIC is mlx5_2 (NODE)"
        ]
    );
    assert_eq!(far.evidence[0].at, "handmade-graph.xml ring channel 01");
}

/// `topo nccl` takes a graph dump among its inputs and shows its channels next
/// to what the logs say (the dump is not counted as a log).
#[test]
fn topo_nccl_shows_a_graph_dump_given_with_the_logs() {
    let output = assert_cmd::Command::cargo_bin("topo")
        .unwrap()
        .arg("nccl")
        .arg(fixtures().join("nccl-graph/nccl-issue524-4gpu-2nic-ring-tree.xml"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let start = stdout.find("NCCL graph dump").expect("graph section");
    let end = stdout.find("Lines:").unwrap_or(stdout.len());
    let section = stdout[start..end].replace(&fixtures().display().to_string(), "FIXTURES");
    insta::assert_snapshot!("nccl_graph_dump_issue524", section);
}

/// `nvidia-smi -q -x` alone, of an AWS Tesla T4 that trained x8 of its x16
/// lanes (telegraf's real test file): no PCI tree, yet `pcie-downtrained`
/// reads the link NVML reported, as it would on the live machine.
#[test]
fn a_pasted_query_alone_shows_its_narrow_link() {
    let dir = bundle(&["nvidia-smi-q/telegraf-tesla-t4.xml"]);
    let snapshot = load(dir.path());
    assert_eq!(snapshot.topology.gpus.len(), 1);
    let found = findings(&snapshot);
    assert_eq!(found.iter().map(|f| f.code.as_str()).collect::<Vec<_>>(), ["pcie-downtrained"]);
    assert_eq!(found[0].evidence[0].text, "Gen3 x8 now, Gen3 x16 capable");
    assert_eq!(found[0].evidence[0].at, "NVML GPU0 0000:00:1e.0");
}
