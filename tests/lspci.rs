//! `lspci` text of real machines rebuilt into topologies, held against what
//! the same machines' other published outputs say.

use std::path::PathBuf;

use topo_model::{BridgeRole, Topology};
use topo_parsers::lspci;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn asus() -> Topology {
    let tree = lspci::parse_tree(&fixture("lspci/asus-esc8000a-e12-lspci-tv.txt")).unwrap();
    let detail = lspci::parse_verbose(&fixture("lspci/asus-esc8000a-e12-lspci-vvv.txt"));
    let import = lspci::to_topology(&tree, &detail);
    assert!(import.warnings.is_empty(), "{:#?}", import.warnings);
    import.topology
}

/// `nvidia-smi topo -m` cells of the same machine, row by row.
fn smi_cells(name: &str) -> (Vec<String>, Vec<Vec<String>>, Vec<String>) {
    let text = fixture(name);
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let labels: Vec<String> = header.split_whitespace().take_while(|t| *t != "CPU").map(str::to_string).collect();
    let mut cells = Vec::new();
    let mut numa = Vec::new();
    for line in lines.take(labels.len()) {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        cells.push(tokens[1..=labels.len()].iter().map(|s| s.to_string()).collect());
        numa.push(tokens.get(labels.len() + 2).map_or(String::new(), |s| s.to_string()));
    }
    (labels, cells, numa)
}

#[test]
fn asus_lspci_gives_nvidia_smis_matrix_cell_by_cell() {
    let mut topology = asus();
    // ibv_devinfo of the same machine names the four mlx5 devices.
    let names: Vec<String> = (0..4).map(|i| format!("mlx5_{i}")).collect();
    lspci::name_nics_in_bus_order(&mut topology, &names).unwrap();
    let matrix = topology.matrix();
    let (labels, cells, numa) = smi_cells("nvidia-smi-topo/asus-esc8000a-e12-rtx6000ada-x4.txt");
    let ours: Vec<&str> = matrix.endpoints.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(ours, labels);
    for (i, row) in cells.iter().enumerate() {
        for (j, cell) in row.iter().enumerate() {
            assert_eq!(matrix.cells[i][j].to_string(), *cell, "{} x {}", labels[i], labels[j]);
        }
        if labels[i].starts_with("GPU") {
            let node = topology.numa_of(matrix.endpoints[i].bus_id).unwrap();
            assert_eq!(node.to_string(), numa[i], "{} NUMA affinity", labels[i]);
        }
    }
    let gpu_names: Vec<Option<&str>> = topology.gpus.iter().map(|g| g.name.as_deref()).collect();
    assert_eq!(gpu_names, vec![Some("RTX 6000 Ada Generation"); 4]);
}

#[test]
fn asus_links_and_bridges_as_lspci_printed_them() {
    let topology = asus();
    // lspci -vvv: idle GPUs at 2.5 GT/s of a 16 GT/s x16 link.
    for gpu in &topology.gpus {
        let link = topology.pci(gpu.bus_id).unwrap().link;
        assert!(link.is_downtrained(), "{}", gpu.bus_id);
        assert_eq!((link.current.generation, link.max.generation, link.max.width), (Some(1), Some(4), Some(16)));
    }
    // 61:00.0 -> 62:00.0 -> 63:00.0 -> 64:xx.0: a switch behind a switch (NVMe cage).
    let role = |id: &str| topology.pci(id.parse().unwrap()).unwrap().bridge;
    assert_eq!(role("0000:60:01.1"), Some(BridgeRole::RootPort));
    assert_eq!(role("0000:61:00.0"), Some(BridgeRole::SwitchUpstream));
    assert_eq!(role("0000:62:00.0"), Some(BridgeRole::SwitchDownstream));
    assert_eq!(role("0000:63:00.0"), Some(BridgeRole::SwitchUpstream));
    assert_eq!(role("0000:64:10.0"), Some(BridgeRole::SwitchDownstream));
    let count = fixture("lspci/asus-esc8000a-e12-lspci-tv.txt").matches('.').count();
    assert!(topology.pci_devices.len() > 100 && topology.pci_devices.len() <= count);
}

#[test]
fn the_lspci_topology_matches_the_sysfs_tree_built_from_it() {
    // tests/fixtures/sysfs/asus-esc8000a-e12 was built from the same lspci text
    // by a script; the Rust reader must agree on every GPU and NIC position.
    let from_sysfs = topo_probes::sysfs::discover(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs/asus-esc8000a-e12"),
    )
    .unwrap()
    .topology;
    let ours = asus();
    for gpu in &from_sysfs.gpus {
        let chain = |t: &Topology| t.ancestors(gpu.bus_id).iter().map(|d| (d.bus_id, d.bridge)).collect::<Vec<_>>();
        assert_eq!(chain(&ours), chain(&from_sysfs), "{}", gpu.bus_id);
        assert_eq!(ours.numa_of(gpu.bus_id), from_sysfs.numa_of(gpu.bus_id));
    }
}

#[test]
fn lenovo_h100_gpus_sit_behind_the_connectx7s_own_switch() {
    // A Lenovo 4x H100 SXM5 node: each GPU hangs off the PCIe switch inside a
    // ConnectX-7 (MT2910 "PCIe Bridge" ports), one per root complex.
    let text = fixture("lspci/lenovo-h100-sxm5-x4-cx7-lspci-tv.txt");
    assert!(lspci::looks_like_tree(&text) && !lspci::looks_like_verbose(&text));
    let import = lspci::import(&text).unwrap();
    // `lspci -t` prints no NUMA node: the one notice says NODE may be SYS.
    assert_eq!(import.warnings.len(), 1, "{:#?}", import.warnings);
    assert!(import.warnings[0].contains("NODE between them may be SYS"), "{:#?}", import.warnings);
    let topology = import.topology;
    let gpus: Vec<String> = topology.gpus.iter().map(|g| g.bus_id.to_string()).collect();
    assert_eq!(gpus, ["0000:06:00.0", "0000:26:00.0", "0000:a6:00.0", "0000:c6:00.0"]);
    assert!(topology.gpus.iter().all(|g| g.name.as_deref() == Some("H100 SXM5 80GB")));
    let nics: Vec<String> = topology.nics.iter().map(|n| n.name.clone()).collect();
    assert_eq!(
        nics,
        ["0000:03:00.0", "0000:23:00.0", "0000:42:00.0", "0000:42:00.1", "0000:a3:00.0", "0000:c3:00.0"],
        "four ConnectX-7 and one dual-port ConnectX-6 Lx; the I210 is no RDMA NIC"
    );
    let chain: Vec<(String, Option<BridgeRole>)> =
        topology.ancestors("0000:06:00.0".parse().unwrap()).iter().map(|d| (d.bus_id.to_string(), d.bridge)).collect();
    assert_eq!(
        chain,
        [
            ("0000:06:00.0".to_string(), None),
            ("0000:05:00.0".to_string(), Some(BridgeRole::SwitchDownstream)),
            ("0000:04:00.0".to_string(), Some(BridgeRole::SwitchUpstream)),
            ("0000:02:02.0".to_string(), Some(BridgeRole::SwitchDownstream)),
            ("0000:01:00.0".to_string(), Some(BridgeRole::SwitchUpstream)),
            ("0000:00:01.1".to_string(), Some(BridgeRole::RootPort)),
        ]
    );
    // GPU and its ConnectX-7 meet below the root port, through two switches.
    let matrix = topology.matrix();
    let label = |bus: &str| matrix.endpoints.iter().position(|e| e.bus_id.to_string() == bus).unwrap();
    assert_eq!(matrix.cells[label("0000:06:00.0")][label("0000:03:00.0")].to_string(), "PXB");
    assert_eq!(matrix.cells[label("0000:42:00.0")][label("0000:42:00.1")].to_string(), "PIX");
    // No NUMA node is printed by `lspci -t`: nothing is claimed about it.
    assert!(topology.numa_nodes.is_empty());
    assert_eq!(topology.numa_of("0000:06:00.0".parse().unwrap()), None);
}

#[test]
fn aws_trn1_efa_devices_on_flat_root_buses() {
    let text = fixture("lspci/aws-trn1-32xlarge-lspci-tv.txt");
    let import = lspci::import(&text).unwrap();
    assert_eq!(import.warnings.len(), 1, "{:#?}", import.warnings);
    assert!(import.warnings[0].contains("on 4 root complexes"), "{:#?}", import.warnings);
    let topology = import.topology;
    assert!(topology.gpus.is_empty());
    // Eight EFA devices, two per root bus; ENA is plain Ethernet.
    assert_eq!(topology.nics.len(), 8);
    let hosts: std::collections::BTreeSet<String> =
        topology.nics.iter().map(|n| topology.host_bridge_of(n.bus_id.unwrap()).unwrap().to_string()).collect();
    assert_eq!(hosts.into_iter().collect::<Vec<_>>(), ["pci0000:10", "pci0000:20", "pci0000:90", "pci0000:a0"]);
    assert_eq!(topology.pci_devices.len(), 42);
    assert!(topology.pci_devices.iter().all(|d| d.parent.is_none()));
}

#[test]
fn detail_alone_gives_gpus_numa_and_links_without_parents() {
    // Only `lspci -vvv -s` records of the ASUS machine: no tree, no root ports.
    let text = fixture("lspci/asus-esc8000a-e12-lspci-vvv.txt");
    assert!(lspci::looks_like_verbose(&text) && !lspci::looks_like_tree(&text));
    let topology = lspci::import(&text).unwrap().topology;
    let numa: Vec<(String, Option<i32>)> =
        topology.gpus.iter().map(|g| (g.bus_id.to_string(), topology.numa_of(g.bus_id))).collect();
    assert_eq!(
        numa,
        [
            ("0000:01:00.0".to_string(), Some(0)),
            ("0000:41:00.0".to_string(), Some(0)),
            ("0000:c1:00.0".to_string(), Some(1)),
            ("0000:e1:00.0".to_string(), Some(1)),
        ]
    );
    assert_eq!(topology.nics.len(), 2, "21:00.0 and 81:00.0 were the ConnectX-7 functions shown");
}

#[test]
fn tree_and_detail_pasted_together_read_as_one() {
    let both = format!(
        "{}\n{}",
        fixture("lspci/asus-esc8000a-e12-lspci-tv.txt"),
        fixture("lspci/asus-esc8000a-e12-lspci-vvv.txt")
    );
    let import = lspci::import(&both).unwrap();
    assert!(import.warnings.is_empty(), "{:#?}", import.warnings);
    assert_eq!(import.topology, asus());
}

#[test]
fn garbage_is_an_error_not_an_empty_machine() {
    assert!(lspci::import("nvidia-smi: command not found\n").is_err());
    assert!(lspci::import("").is_err());
    // A tree cut in the middle of a branch: the orphan is reported.
    let cut: String =
        fixture("lspci/lenovo-h100-sxm5-x4-cx7-lspci-tv.txt").lines().skip(20).collect::<Vec<_>>().join("\n");
    assert!(matches!(lspci::import(&cut), Err(lspci::LspciError::Tree { .. })));
}

#[test]
fn topo_show_reads_pasted_lspci() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lspci/asus-esc8000a-e12-lspci-tv.txt");
    let output = assert_cmd::Command::cargo_bin("topo")
        .unwrap()
        .args(["show", "--plain", "--from"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("lspci text"), "{stdout}");
    assert!(stdout.contains("NIC0: 0000:21:00.0"), "{stdout}");
    // The tree alone has no NUMA nodes: the warning says so on stderr.
    assert!(String::from_utf8_lossy(&output.stderr).contains("may be SYS"));
}

/// A link fact read from pasted lspci text is cited as lspci's, not sysfs':
/// the ASUS GPU 0 idles at Gen1 x16 of Gen4 x16 in its `lspci -vvv`.
#[test]
fn link_evidence_names_lspci_as_its_source() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["asus-esc8000a-e12-lspci-tv.txt", "asus-esc8000a-e12-lspci-vvv.txt"] {
        std::fs::write(dir.path().join(name), fixture(&format!("lspci/{name}"))).unwrap();
    }
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_topo"))
        .args(["preflight", "--from"])
        .arg(dir.path())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("lspci GPU 0000:01:00.0 Gen1 x16 now, Gen4 x16 capable"), "{stdout}");
    assert!(!stdout.contains("sysfs GPU"), "{stdout}");
}
