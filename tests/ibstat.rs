//! `ibstat` and `ibv_devinfo` text of real machines.

use std::path::PathBuf;

use topo_model::{Nic, NicKind};
use topo_parsers::{ibstat, lspci};

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn ports(nic: &Nic) -> Vec<(u32, Option<&str>, Option<&str>)> {
    nic.ports.iter().map(|p| (p.port, p.state.as_deref(), p.link_layer.as_deref())).collect()
}

#[test]
fn one_machines_ibstat_and_ibv_devinfo_agree() {
    let a = fixture("ibstat/hpc-notes-cx7-hdr-ibstat.txt");
    let b = fixture("ibv_devinfo/hpc-notes-cx7-hdr-ibv_devinfo.txt");
    assert!(ibstat::looks_like_ibstat(&a) && !ibstat::looks_like_ibv_devinfo(&a));
    assert!(ibstat::looks_like_ibv_devinfo(&b) && !ibstat::looks_like_ibstat(&b));
    let from_ibstat = ibstat::parse_ibstat(&a).unwrap();
    let from_devinfo = ibstat::parse_ibv_devinfo(&b).unwrap();
    assert_eq!(from_ibstat.len(), 1);
    assert_eq!(from_devinfo.len(), 1);
    let (x, y) = (&from_ibstat[0], &from_devinfo[0]);
    assert_eq!(x.name, y.name);
    assert_eq!(x.firmware, y.firmware);
    assert_eq!(x.node_guid.as_deref(), Some("c470bd0300cf4964"));
    assert_eq!(x.node_guid, y.node_guid);
    assert_eq!(ports(x), ports(y));
    assert_eq!(ports(x), [(1, Some("ACTIVE"), Some("InfiniBand"))]);
    assert_eq!((x.kind, y.kind), (NicKind::Infiniband, NicKind::Infiniband));
    // Only ibstat prints the rate: HDR, 200 Gb/s.
    assert_eq!(x.ports[0].rate_gbps, Some(200.0));
    assert_eq!(x.ports[0].phys_state.as_deref(), Some("LinkUp"));
}

#[test]
fn ibstat_port_states_as_sysfs_words() {
    let init = ibstat::parse_ibstat(&fixture("ibstat/container-cx4-initializing-ibstat.txt")).unwrap();
    assert_eq!(ports(&init[0]), [(1, Some("INIT"), Some("InfiniBand"))]);
    assert!(!init[0].ports[0].is_active(), "no subnet manager yet: not usable");
    assert_eq!(init[0].firmware.as_deref(), Some("12.20.1010"));
    let qdr = ibstat::parse_ibstat(&fixture("ibstat/singularity-mlx4-qdr-ibstat.txt")).unwrap();
    assert_eq!((qdr[0].name.as_str(), qdr[0].ports[0].rate_gbps), ("mlx4_0", Some(40.0)));
}

#[test]
fn ibv_devinfo_two_dual_port_hcas() {
    let nics = ibstat::parse_ibv_devinfo(&fixture("ibv_devinfo/heioy-books-mlx4-x2-2port.txt")).unwrap();
    let names: Vec<&str> = nics.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["mlx4_1", "mlx4_0"]);
    for nic in &nics {
        assert_eq!(ports(nic), [(1, Some("ACTIVE"), Some("InfiniBand")), (2, Some("DOWN"), Some("InfiniBand"))]);
    }
    assert_eq!(nics[1].node_guid.as_deref(), Some("e41d2d0300e0c740"));
}

#[test]
fn asus_ibv_devinfo_names_the_nics_lspci_found() {
    // The ASUS machine's ibv_devinfo: four mlx5 devices, ports down, RoCE.
    let nics = ibstat::parse_ibv_devinfo(&fixture("lspci/asus-esc8000a-e12-ibv_devinfo.txt")).unwrap();
    assert!(nics.iter().all(|n| n.kind == NicKind::Roce && n.ports.iter().all(|p| p.state.as_deref() == Some("DOWN"))));
    let names: Vec<String> = nics.iter().map(|n| n.name.clone()).collect();
    let tree = lspci::parse_tree(&fixture("lspci/asus-esc8000a-e12-lspci-tv.txt")).unwrap();
    let detail = lspci::parse_verbose(&fixture("lspci/asus-esc8000a-e12-lspci-vvv.txt"));
    let mut topology = lspci::to_topology(&tree, &detail).topology;
    lspci::attach_rdma_devices(&mut topology, &nics).unwrap();
    let mlx5_3 = topology.nic("mlx5_3").unwrap();
    assert_eq!(
        (mlx5_3.kind, mlx5_3.firmware.as_deref()),
        (NicKind::Roce, Some("28.43.2566")),
        "the second card runs newer firmware"
    );
    assert_eq!(mlx5_3.ports[0].state.as_deref(), Some("DOWN"));
    // nvidia-smi topo -m of the same machine: NIC0..3 = mlx5_0..3, NIC0/1 on 21:00.x.
    let legend = fixture("nvidia-smi-topo/asus-esc8000a-e12-rtx6000ada-x4.txt");
    let matrix = topology.matrix();
    for endpoint in matrix.endpoints.iter().filter(|e| e.label.starts_with("NIC")) {
        let line = format!("{}: {}", endpoint.label, endpoint.name.as_deref().unwrap());
        assert!(legend.contains(&line), "{line}");
    }
    assert_eq!(topology.nic("mlx5_1").unwrap().bus_id.unwrap().to_string(), "0000:21:00.1");
    // A count that does not match is refused, not guessed.
    assert!(lspci::name_nics_in_bus_order(&mut topology, &names[..3]).is_err());
}
