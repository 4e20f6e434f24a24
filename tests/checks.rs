//! Hardware checks: silent on the healthy recorded H100 node, and each fault,
//! injected alone into that node (labelled hand-made faults on real topology),
//! raises exactly its own code.

use std::path::PathBuf;

use topo_model::nvml::{Answer, Fabric, RemappedRows};
use topo_model::{BusId, NetInterface, Severity, Snapshot};

fn healthy() -> Snapshot {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshots/ibm-gx3d-h100x8-nvml.yaml");
    Snapshot::load(&path).unwrap()
}

fn codes(snapshot: &Snapshot) -> Vec<(String, Severity)> {
    topo::checks::hardware(snapshot).into_iter().map(|f| (f.code, f.severity)).collect()
}

fn gpu_answers(snapshot: &mut Snapshot, index: usize) -> &mut topo_model::nvml::DeviceAnswers {
    snapshot.nvml.as_mut().unwrap().devices[index].answers.as_mut().unwrap()
}

fn pci<'a>(snapshot: &'a mut Snapshot, bus: &str) -> &'a mut topo_model::PciDevice {
    let bus: BusId = bus.parse().unwrap();
    snapshot.topology.pci_devices.iter_mut().find(|d| d.bus_id == bus).unwrap()
}

fn narrow(device: &mut topo_model::PciDevice) {
    device.link.current.width = Some(8);
    device.link.max.width = Some(16);
}

#[test]
fn healthy_node_has_no_hardware_findings() {
    assert_eq!(codes(&healthy()), []);
    // The same with the host facts of a well-set-up live node.
    let mut node = healthy();
    node.host.modules = vec!["nvidia".into(), "nvidia_peermem".into(), "ib_core".into()];
    node.host.dev_shm_bytes = Some(256 << 30);
    node.host.memlock = Some("unlimited".into());
    for device in &mut node.topology.pci_devices {
        device.iommu = Some("identity".into());
        device.acs_redirect = device.bridge.map(|_| false);
    }
    assert_eq!(codes(&node), []);
}

#[test]
fn each_injected_fault_raises_its_own_code() {
    type Inject = fn(&mut Snapshot);
    let cases: &[(&str, Severity, Inject)] = &[
        // NIC mlx5_7 trained at x8 of x16 (the dump gives no widths: both set here).
        ("pcie-downtrained", Severity::Error, |s| narrow(pci(s, "0000:a3:00.0"))),
        // GPU0 at Gen1: maybe idle.
        ("pcie-downtrained", Severity::Info, |s| pci(s, "0000:a4:00.0").link.current.generation = Some(1)),
        ("numa-unknown", Severity::Warning, |s| pci(s, "0000:a4:00.0").numa_node = None),
        // GPU0's PIX NIC reports the other socket.
        ("gpu-nic-numa", Severity::Warning, |s| pci(s, "0000:a3:00.0").numa_node = Some(1)),
        ("nvlink-inactive", Severity::Error, |s| {
            for link in &mut gpu_answers(s, 3).nvlinks[16..] {
                link.active = Answer::Ok(false);
            }
        }),
        ("nvlink-errors", Severity::Warning, |s| gpu_answers(s, 6).nvlinks[2].errors.replay = Answer::Ok(977)),
        ("fabric-not-ready", Severity::Error, |s| {
            gpu_answers(s, 2).fabric = Answer::Ok(Fabric {
                state: "in-progress".into(),
                status: "Success".into(),
                clique_id: 0,
                cluster_uuid: String::new(),
            })
        }),
        ("gpu-memory-errors", Severity::Error, |s| {
            gpu_answers(s, 1).remapped_rows =
                Answer::Ok(RemappedRows { corrected: 0, uncorrected: 3, pending: false, failed: true })
        }),
        ("gpu-memory-errors", Severity::Warning, |s| gpu_answers(s, 1).retired_pages.pending = Answer::Ok(true)),
        ("clock-throttle-hw", Severity::Warning, |s| gpu_answers(s, 4).clock_event_reasons = Answer::Ok(0x80)),
        ("gpu-lost", Severity::Error, |s| {
            let device = &mut s.nvml.as_mut().unwrap().devices[5];
            device.answers = None;
            device.unreachable = Some("device fell off the bus".into());
        }),
        ("ib-port-down", Severity::Error, |s| s.topology.nics[0].ports[0].state = Some("DOWN".into())),
        ("ib-port-slow", Severity::Warning, |s| s.topology.nics[0].ports[0].rate_gbps = Some(100.0)),
        ("mtu-mismatch", Severity::Warning, |s| {
            for (i, nic) in s.topology.nics.iter_mut().enumerate() {
                let name = format!("ib{i}");
                nic.netdevs = vec![name.clone()];
                let mtu = if i == 3 { 2044 } else { 4092 };
                s.topology.net_interfaces.push(NetInterface { name, mtu: Some(mtu), ..NetInterface::default() });
            }
        }),
        ("acs-redirect", Severity::Warning, |s| {
            let gpu: BusId = "0000:a4:00.0".parse().unwrap();
            let bridge = s.topology.pci(gpu).and_then(|d| d.parent).unwrap();
            s.topology.pci_devices.iter_mut().find(|d| d.bus_id == bridge).unwrap().acs_redirect = Some(true);
        }),
        ("iommu-translated", Severity::Warning, |s| pci(s, "0000:a4:00.0").iommu = Some("DMA-FQ".into())),
        ("gdr-not-ready", Severity::Warning, |s| s.host.modules = vec!["nvidia".into(), "ib_core".into()]),
        ("dev-shm-small", Severity::Warning, |s| s.host.dev_shm_bytes = Some(64 << 20)),
        ("memlock-limited", Severity::Warning, |s| s.host.memlock = Some("8388608".into())),
    ];
    for (code, severity, inject) in cases {
        let mut snapshot = healthy();
        inject(&mut snapshot);
        assert_eq!(codes(&snapshot), [(code.to_string(), *severity)], "{code}");
    }
}

/// An idle GPU's slow link and a narrow NIC link: one finding, the worse one leading.
#[test]
fn downtrained_links_list_every_hop() {
    let mut snapshot = healthy();
    narrow(pci(&mut snapshot, "0000:a3:00.0"));
    pci(&mut snapshot, "0000:a4:00.0").link.current.generation = Some(1);
    let findings = topo::checks::hardware(&snapshot);
    assert_eq!(findings.len(), 1);
    let evidence: Vec<String> = findings[0].evidence.iter().map(|e| format!("{}: {}", e.at, e.text)).collect();
    assert_eq!(
        evidence,
        ["sysfs 0000:a3:00.0: Gen5 x8 now, Gen5 x16 capable", "sysfs GPU0 0000:a4:00.0: Gen1 x? now, Gen5 x? capable"]
    );
}

/// Findings carry the bandwidth the hardware should give against what it gives,
/// from the model's tables: a Gen5 link at x8 of x16, two of eighteen H100 NVLinks off.
#[test]
fn expected_and_actual_bandwidth() {
    let mut snapshot = healthy();
    narrow(pci(&mut snapshot, "0000:a3:00.0"));
    for link in &mut gpu_answers(&mut snapshot, 3).nvlinks[16..] {
        link.active = Answer::Ok(false);
    }
    let findings = topo::checks::hardware(&snapshot);
    let numbers: Vec<(&str, Option<&str>, Option<&str>)> =
        findings.iter().map(|f| (f.code.as_str(), f.expected.as_deref(), f.actual.as_deref())).collect();
    assert_eq!(
        numbers,
        [
            ("nvlink-inactive", Some("18 links, 450 GB/s per direction"), Some("16 links on the worst GPU, 400 GB/s")),
            ("pcie-downtrained", Some("63.0 GB/s per direction on the first link listed"), Some("31.5 GB/s")),
        ]
    );
}
