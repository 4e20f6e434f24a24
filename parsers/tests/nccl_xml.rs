//! The NCCL topology XML importer on every real file in `tests/fixtures/nccl-topo`.

use std::path::PathBuf;

use topo_model::{BusId, NicKind, NvLinkRemote, SmiClass, Topology};
use topo_parsers::nccl_xml::{XmlError, import, import_file, to_xml};

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/nccl-topo")
}

fn load(name: &str) -> (Topology, Vec<String>) {
    let imported = import_file(&fixture_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    (imported.topology, imported.warnings)
}

fn bus(text: &str) -> BusId {
    text.parse().unwrap()
}

fn class(topology: &Topology, a: &str, b: &str) -> SmiClass {
    topology.path(bus(a), bus(b)).smi
}

#[test]
fn every_fixture_loads_and_round_trips() {
    let mut count = 0;
    for entry in std::fs::read_dir(fixture_dir()).unwrap() {
        let path = entry.unwrap().path();
        let first = import_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).topology;
        let exported = to_xml(&first);
        let second = import(&exported, "export").unwrap_or_else(|e| panic!("{}: re-import: {e}", path.display()));
        assert_eq!(first, second.topology, "{}: import -> export -> import changed the model", path.display());
        assert!(
            second.warnings.is_empty(),
            "{}: export produced unreadable fields: {:?}",
            path.display(),
            second.warnings
        );
        count += 1;
    }
    assert_eq!(count, 14);
}

/// Inputs the fuzzer once broke (`fuzz/fuzz_targets/nccl_xml.rs`): whatever
/// imports must export and re-import unchanged.
#[test]
fn fuzz_regressions_round_trip() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        if let Ok(first) = import(&text, "fuzz") {
            let second = import(&to_xml(&first.topology), "export").unwrap();
            assert_eq!(first.topology, second.topology, "{}", path.display());
        }
    }
}

#[test]
fn ibm_h100_vm_nvswitches_are_targets_and_widths_are_unknown() {
    let (t, warnings) = load("ibm-gx3d-h100x8.xml");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(t.gpus.len(), 8);
    assert!(t.gpus.iter().all(|g| g.sm == Some(90)));
    assert_eq!(t.nics.len(), 8);
    assert_eq!(t.nvswitches.len(), 4);
    assert!(t.nvswitches.iter().all(|s| !s.visible));
    for gpu in &t.gpus {
        assert_eq!(t.nvlink_count(gpu.bus_id), 18, "5+5+4+4 links over 4 NVSwitches");
    }
    // GPU0 and mlx5_7 share an emulated bridge; GPUs of one socket meet at the CPU.
    assert_eq!(class(&t, "0000:a4:00.0", "0000:a3:00.0"), SmiClass::Pix);
    assert_eq!(class(&t, "0000:a4:00.0", "0000:ae:00.0"), SmiClass::Nv(18));
    assert_eq!(t.pcie_path(bus("0000:a4:00.0"), bus("0000:ae:00.0")).smi, SmiClass::Phb);
    let gpu0 = t.pci(bus("0000:a4:00.0")).unwrap();
    assert_eq!(gpu0.link.max.generation, Some(5));
    assert_eq!(gpu0.link.max.width, None, "link_width=\"0\" is unknown, not x0");
    // H100: 18 links x 25 GB/s per direction.
    let expected = t.path(bus("0000:a4:00.0"), bus("0000:ae:00.0")).expected.unwrap();
    assert_eq!(expected.gbps(), 450.0);
}

#[test]
fn alibaba_a100_nested_switches_and_nvswitch_pairs() {
    let (t, _) = load("alibaba-a100-sxm80g-x8-cx6bond.xml");
    assert_eq!(t.gpus.len(), 8);
    assert_eq!(t.nics.len(), 5, "the file name says 4 CX6, but 5 NICs are present");
    assert_eq!(t.nvswitches.len(), 6);
    let gpus = t.gpus_in_order();
    assert_eq!(t.path(gpus[0].bus_id, gpus[7].bus_id).smi, SmiClass::Nv(12));
    // Each GPU sits in its own third-level PEX switch: GPU pairs below one top
    // switch, and GPU0 and its NIC, cross several switches (PXB, as nvidia-smi
    // prints on such boards); the other socket is SYS.
    assert_eq!(t.pcie_path(gpus[0].bus_id, gpus[1].bus_id).smi, SmiClass::Pxb);
    assert_eq!(class(&t, "0000:19:00.0", "0000:1a:00.0"), SmiClass::Pxb);
    assert_eq!(t.pcie_path(gpus[0].bus_id, gpus[7].bus_id).smi, SmiClass::Sys);
    let hops = t.pcie_path(bus("0000:19:00.0"), bus("0000:1a:00.0")).hops;
    assert_eq!(hops.len(), 3, "GPU -> 17 -> 15 <- NIC: {hops:#?}");
    let bond = t.nic("mlx5_bond_0").unwrap();
    assert_eq!(t.pci(bond.bus_id.unwrap()).unwrap().parent, None, "the front-end NIC hangs off the CPU");
    assert_eq!(bond.kind, NicKind::Roce);
}

#[test]
fn aws_p4d_skeleton_with_comments_and_fake_switches() {
    let (t, warnings) = load("aws-p4d-24xlarge-a100x8.xml");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(t.gpus.len(), 8);
    assert!(t.gpus.iter().all(|g| g.index.is_none()), "skeleton: no <gpu> elements");
    assert_eq!(t.nics.len(), 4);
    assert!(t.nics.iter().all(|n| n.kind == NicKind::Efa));
    assert_eq!(class(&t, "0000:10:1c.0", "0000:10:1d.0"), SmiClass::Pix);
    assert_eq!(class(&t, "0000:10:1c.0", "0000:10:1b.0"), SmiClass::Pix);
    assert!(t.pci(bus("ffff:ff:01.0")).unwrap().bus_id.is_synthetic());
    assert_eq!(t.pci(bus("0000:10:1c.0")).unwrap().link.max.generation, Some(3), "old '8 GT/s' form");
}

#[test]
fn aws_p5_minimal_attributes_and_malformed_speed() {
    let (t, warnings) = load("aws-p5-48xlarge-pci-only.xml");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(t.gpus.is_empty(), "the file says GPUs are not reported");
    let leaf = t.pci(bus("0000:4f:00.0")).unwrap();
    assert_eq!(leaf.link.max.generation, Some(5), "'32 GT/s PCIe/s' read as Gen5");
    assert_eq!(leaf.class, None);
    assert_eq!(t.numa_nodes.len(), 2);
}

#[test]
fn azure_nc_self_targeted_nvlink_is_ignored_with_a_warning() {
    let (t, warnings) = load("azure-nc-a100-v4-x4.xml");
    assert_eq!(t.gpus.len(), 4);
    assert!(t.nvlinks.is_empty());
    assert_eq!(warnings.len(), 4, "{warnings:?}");
    assert!(warnings[0].contains("names the GPU itself"));
    assert_eq!(t.numa_nodes.len(), 4);
    let eth0 = t.nic("eth0").unwrap();
    assert_eq!((eth0.bus_id, eth0.kind), (None, NicKind::Ethernet));
    assert_eq!(class(&t, "0001:00:00.0", "0002:00:00.0"), SmiClass::Sys);
    assert_eq!(t.pci(bus("0001:00:00.0")).unwrap().link.max.generation, None, "link_speed=\"\"");
}

#[test]
fn modal_b200_invisible_nvswitch_placeholder() {
    let (t, _) = load("modal-b200x8-vm.xml");
    assert_eq!(t.gpus.len(), 8);
    assert_eq!(t.nvswitches.len(), 1);
    assert_eq!(t.nvswitches[0].bus_id, BusId::NCCL_INVISIBLE);
    assert!(!t.nvswitches[0].visible);
    assert!(t.nvlinks.iter().all(|l| l.remote == NvLinkRemote::NvSwitch(BusId::NCCL_INVISIBLE) && l.links == 18));
    let gpus = t.gpus_in_order();
    assert_eq!(t.path(gpus[0].bus_id, gpus[7].bus_id).smi, SmiClass::Nv(18));
    assert_eq!(t.path(gpus[0].bus_id, gpus[7].bus_id).expected.unwrap().gbps(), 900.0);
    assert_eq!(t.nics.len(), 13, "many <net> per <nic>");
}

#[test]
fn rtx4090_pairs_numa_ids_and_dual_port_nics() {
    let (t, _) = load("rtx4090x2-epyc-cx4.xml");
    let ids: Vec<i32> = t.numa_nodes.iter().map(|n| n.id).collect();
    assert_eq!(ids, vec![3, 2]);
    assert_eq!(t.numa_nodes[0].cpus.to_string(), "6-7,14-15", "short mask 'c0c0'");
    let matrix = t.matrix();
    let labels: Vec<&str> = matrix.endpoints.iter().map(|e| e.label.as_str()).collect();
    assert_eq!(labels, ["GPU0", "GPU1", "NIC0", "NIC1"]);
    assert_eq!(matrix.cells[2][3], SmiClass::Pix, "two ports of one ConnectX-4");
    assert_eq!(matrix.cells[0][1], SmiClass::Sys);

    let (t, _) = load("rtx4090x4-epyc-nps4.xml");
    let third = t.gpus.iter().find(|g| g.index == Some(3)).unwrap();
    assert_eq!(third.nccl_rank, Some(2), "dev != rank");
    let socket_nics = t.nics.iter().filter(|n| n.bus_id.is_none()).count();
    let distinct: std::collections::BTreeSet<&str> =
        t.nics.iter().filter(|n| n.bus_id.is_none()).map(|n| n.name.as_str()).collect();
    assert!(socket_nics > 10);
    assert_eq!(socket_nics, distinct.len(), "repeated socket NIC lists are merged");
}

#[test]
fn bad_xml_is_a_clear_error_with_a_line() {
    let err = import("<system>\n  <cpu numaid=\"0\">\n    </pci>\n</system>\n", "cut.xml").unwrap_err();
    let message = err.to_string();
    assert!(message.starts_with("cut.xml:3:"), "{message}");
    assert!(matches!(err, XmlError::Malformed { line: 3, .. }), "{err:?}");
    let err = import("<system>\n  <cpu numaid=\"0\">\n", "truncated.xml").unwrap_err();
    assert!(err.to_string().starts_with("truncated.xml:"), "{err}");

    let err = import("<hwloc><object/></hwloc>", "other.xml").unwrap_err();
    assert!(err.to_string().contains("not an NCCL topology file"), "{err}");

    let err = import_file(&fixture_dir().join("missing.xml")).unwrap_err();
    assert!(err.to_string().contains("missing.xml"), "{err}");
}

#[test]
fn garbage_fields_become_unknown_with_warnings() {
    let text = r#"<system version="1"><cpu numaid="zero" affinity="xyz">
        <pci busid="not-a-bus"><pci busid="0000:01:00.0"/></pci>
        <pci busid="0000:02:00.0" class="0x030200" link_speed="fast" link_width="-3"><gpu dev="x" sm="90"/></pci>
    </cpu></system>"#;
    let imported = import(text, "garbage.xml").unwrap();
    assert_eq!(imported.topology.gpus.len(), 1);
    assert_eq!(imported.topology.gpus[0].index, None);
    assert_eq!(imported.topology.pci_devices.len(), 1, "the subtree under an unreadable bus ID is skipped");
    // numaid, affinity, busid (and the skipped subtree), link_speed, link_width, dev.
    assert_eq!(imported.warnings.len(), 7, "{:#?}", imported.warnings);
    assert!(imported.warnings.iter().all(|w| w.starts_with("garbage.xml:")));
}
