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
    let count = fixture("lspci/asus-esc8000a-e12-lspci-tv.txt").matches(|c| c == '.').count();
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
