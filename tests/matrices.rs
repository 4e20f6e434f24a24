//! The connection matrix derived from sysfs trees of real machines, checked
//! against what the source data says about the same machine.

use std::path::{Path, PathBuf};

use topo_model::{Matrix, SmiClass, Topology};
use topo_parsers::nccl_xml;
use topo_probes::sysfs;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn from_sysfs(tree: &str) -> Topology {
    let found = sysfs::discover(&fixtures().join("sysfs").join(tree)).unwrap();
    assert!(found.warnings.is_empty(), "{tree}: {:#?}", found.warnings);
    found.topology
}

fn from_xml(file: &str) -> Topology {
    nccl_xml::import_file(&fixtures().join("nccl-topo").join(file)).unwrap().topology
}

/// `nvidia-smi topo -m` as printed: labels, cells, CPU and NUMA affinity per row.
struct SmiOutput {
    labels: Vec<String>,
    cells: Vec<Vec<String>>,
    affinity: Vec<Option<(String, String)>>,
    nic_names: Vec<String>,
}

fn read_smi(path: &Path) -> SmiOutput {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    let labels: Vec<String> = header.split_whitespace().take_while(|t| *t != "CPU").map(str::to_string).collect();
    let (mut cells, mut affinity) = (Vec::new(), Vec::new());
    for line in lines.by_ref().take(labels.len()) {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        cells.push(tokens[1..=labels.len()].iter().map(|s| s.to_string()).collect());
        affinity.push(tokens.get(labels.len() + 1).map(|cpu| (cpu.to_string(), tokens[labels.len() + 2].to_string())));
    }
    let nic_names = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("NIC"))
        .filter_map(|l| l.split_once(": "))
        .map(|(_, n)| n.to_string())
        .collect();
    SmiOutput { labels, cells, affinity, nic_names }
}

#[test]
fn asus_lspci_tree_gives_nvidia_smis_matrix_cell_by_cell() {
    let topology = from_sysfs("asus-esc8000a-e12");
    let matrix = topology.matrix();
    let smi = read_smi(&fixtures().join("nvidia-smi-topo/asus-esc8000a-e12-rtx6000ada-x4.txt"));
    let labels: Vec<&str> = matrix.endpoints.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(labels, smi.labels);
    let names: Vec<String> =
        matrix.endpoints.iter().filter_map(|e| e.name.clone()).filter(|n| n.starts_with("mlx5")).collect();
    assert_eq!(names, smi.nic_names);
    for (i, row) in smi.cells.iter().enumerate() {
        for (j, cell) in row.iter().enumerate() {
            assert_eq!(matrix.cells[i][j].to_string(), *cell, "{} x {}", smi.labels[i], smi.labels[j]);
        }
    }
    for (i, expected) in smi.affinity.iter().enumerate() {
        let Some((cpus, numa)) = expected else { continue };
        let bus = matrix.endpoints[i].bus_id;
        let ours = topology.numa_of(bus).unwrap();
        assert_eq!(ours.to_string(), *numa, "{} NUMA affinity", smi.labels[i]);
        assert_eq!(topology.numa_node(ours).unwrap().cpus.to_string(), *cpus, "{} CPU affinity", smi.labels[i]);
    }
    // lspci -vvv: idle GPUs at 2.5 GT/s of a 16 GT/s x16 link.
    for gpu in &topology.gpus {
        let link = topology.pci(gpu.bus_id).unwrap().link;
        assert!(link.is_downtrained(), "{}", gpu.bus_id);
        assert_eq!((link.current.generation, link.max.generation, link.max.width), (Some(1), Some(4), Some(16)));
    }
}

/// The matrix from a sysfs tree rebuilt from an NCCL dump equals the one from the
/// dump itself, except that sysfs knows root complexes: devices under one CPU
/// but in different PCI domains are NODE where the dump can only say PHB.
fn assert_same_matrix(sysfs_matrix: &Matrix, xml_matrix: &Matrix, name: &str) {
    let labels = |m: &Matrix| m.endpoints.iter().map(|e| (e.label.clone(), e.bus_id)).collect::<Vec<_>>();
    assert_eq!(labels(sysfs_matrix), labels(xml_matrix), "{name}");
    for (i, row) in xml_matrix.cells.iter().enumerate() {
        for (j, xml_cell) in row.iter().enumerate() {
            let sysfs_cell = sysfs_matrix.cells[i][j];
            let (a, b) = (xml_matrix.endpoints[i].bus_id, xml_matrix.endpoints[j].bus_id);
            if *xml_cell == SmiClass::Phb && sysfs_cell == SmiClass::Node {
                assert_ne!(a.domain, b.domain, "{name}: {a} x {b}: NODE only across root complexes");
                continue;
            }
            if xml_cell.to_string().starts_with("NV") {
                // NVLink comes from NVML or the dump; sysfs alone sees PCIe.
                continue;
            }
            assert_eq!(sysfs_cell, *xml_cell, "{name}: {a} x {b}");
        }
    }
}

#[test]
fn nvswitch_h100_box_with_a_nic_per_gpu() {
    let sysfs = from_sysfs("ibm-gx3d-h100x8");
    let xml = from_xml("ibm-gx3d-h100x8.xml");
    assert_same_matrix(&sysfs.matrix(), &xml.matrix(), "ibm-gx3d-h100x8");
    assert_eq!((sysfs.gpus.len(), sysfs.nics.len()), (8, 8));
    // Rail layout: each GPU is PIX to exactly one NIC.
    let matrix = sysfs.matrix();
    for i in 0..8 {
        assert_eq!(matrix.cells[i][8..].iter().filter(|c| **c == SmiClass::Pix).count(), 1, "GPU{i}");
    }
    assert!(sysfs.nics.iter().all(|n| n.ports[0].rate_gbps == Some(200.0) && n.ports[0].is_active()));
}

#[test]
fn a100_box_with_nested_pcie_switches() {
    let sysfs = from_sysfs("alibaba-a100x8");
    let xml = from_xml("alibaba-a100-sxm80g-x8-cx6bond.xml");
    assert_same_matrix(&sysfs.matrix(), &xml.matrix(), "alibaba-a100x8");
    let gpus = sysfs.gpus_in_order();
    let path = sysfs.path(gpus[0].bus_id, gpus[1].bus_id);
    assert_eq!(path.smi, SmiClass::Pxb);
    // GPU -> 3 switches -> GPU, each hop Gen4 x16.
    assert!(path.hops.iter().filter(|h| h.bandwidth.is_some()).count() >= 4, "{:#?}", path.hops);
    assert!((path.expected.unwrap().gbps() - 31.5).abs() < 0.1);
}

#[test]
fn pcie_only_workstation_with_four_gpus() {
    let sysfs = from_sysfs("dell-rtxa6000x4");
    let xml = from_xml("rtxa6000x4-dell-skylake.xml");
    assert_same_matrix(&sysfs.matrix(), &xml.matrix(), "dell-rtxa6000x4");
    let matrix = sysfs.matrix();
    assert_eq!(matrix.endpoints.len(), 4, "no RDMA NICs: only the four GPUs");
    assert_eq!(matrix.cells[0][1], SmiClass::Phb);
    assert_eq!(matrix.cells[0][3], SmiClass::Sys);
    let gpus = sysfs.gpus_in_order();
    let cross = sysfs.path(gpus[0].bus_id, gpus[3].bus_id);
    // Gen3 x16 is 15.75 GB/s; Skylake's inter-socket figure (NCCL: 10 GB/s) is the bottleneck.
    assert_eq!(cross.expected.unwrap().gbps(), 10.0);
}

#[test]
fn dual_socket_vm_with_flattened_pcie() {
    let sysfs = from_sysfs("modal-b200x8-vm");
    let xml = from_xml("modal-b200x8-vm.xml");
    assert_same_matrix(&sysfs.matrix(), &xml.matrix(), "modal-b200x8-vm");
    let matrix = sysfs.matrix();
    assert_eq!(matrix.endpoints.iter().filter(|e| e.label.starts_with("NIC")).count(), 13);
    // mlx5_0..4 sit on a host bridge function in domain 0000; the GPUs in 0002 and 0003.
    let nic0 = matrix.endpoints.iter().position(|e| e.name.as_deref() == Some("mlx5_0")).unwrap();
    assert_eq!(matrix.cells[0][nic0], SmiClass::Node);
}
