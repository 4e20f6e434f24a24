//! Peer-to-peer refused where the wiring allows it: NVML (live, or a pasted
//! `nvidia-smi topo -p2p`) answers something other than OK for two GPUs that
//! share an NVLink or sit on one socket's PCIe. Across sockets (`SYS`) many
//! platforms refuse P2P by design, so that is not reported.

use topo_model::{Evidence, Finding, Severity, SmiClass, Snapshot};

use super::facts::{evidence, gpu_bus_by_index};

pub(super) fn p2p_not_supported(snapshot: &Snapshot) -> Option<Finding> {
    let nvml = snapshot.nvml.as_ref()?;
    let topology = &snapshot.topology;
    let bus = |index: u32| {
        gpu_bus_by_index(topology, index).or_else(|| {
            nvml.answered()
                .find(|(i, _)| *i == index)
                .and_then(|(_, d)| d.bus_id())
                .filter(|b| topology.gpu(*b).is_some())
        })
    };
    let mut items: Vec<Evidence> = Vec::new();
    for pair in nvml.pairs.iter().filter(|p| p.a < p.b) {
        let p = &pair.p2p;
        let refused: Vec<String> =
            [("read", &p.read), ("write", &p.write), ("nvlink", &p.nvlink), ("atomics", &p.atomics), ("prop", &p.prop)]
                .iter()
                .filter_map(|(what, answer)| answer.ok().filter(|w| *w != "ok").map(|w| format!("{what} {w}")))
                .collect();
        let (Some(a), Some(b)) = (bus(pair.a), bus(pair.b)) else { continue };
        let class = topology.smi_class(a, b);
        let near = matches!(class, SmiClass::Nv(_) | SmiClass::Pix | SmiClass::Pxb | SmiClass::Phb | SmiClass::Node);
        if near && !refused.is_empty() {
            items.push(evidence(
                format!("GPU{} x GPU{}", pair.a, pair.b),
                format!("{class} path; P2P {}", refused.join(", ")),
            ));
        }
    }
    (!items.is_empty()).then(|| {
        Finding::new(
            "p2p-not-supported",
            Severity::Warning,
            "GPU pairs refused peer-to-peer although the topology connects them directly".into(),
            items,
            "Without P2P, CUDA copies and NCCL's P2P transport between these GPUs go through host memory (NCCL uses \
             SHM): a fraction of what their NVLink or PCIe path carries.",
            "GNS means the GPU model or driver does not offer P2P (GeForce cards); CNS/TNS point at the chipset, \
             ACS or IOMMU: check `topo diagnose` for ACS redirect, the IOMMU mode, and the driver's P2P support.",
        )
    })
}
