//! Small helpers the checks share: evidence entries, GPU labels, NVML's
//! answers per GPU, RDMA ports, the bridges on GPU/NIC paths.

use topo_model::nvml::DeviceAnswers;
use topo_model::{BusId, Evidence, NicKind, Snapshot};

use super::endpoints;

pub(super) fn evidence(at: impl Into<String>, text: String) -> Evidence {
    Evidence { at: at.into(), text }
}

pub(super) fn gpu_label(snapshot: &Snapshot, bus_id: BusId) -> String {
    match snapshot.topology.gpu(bus_id).and_then(|g| g.index) {
        Some(i) => format!("GPU{i} {bus_id}"),
        None => format!("GPU {bus_id}"),
    }
}

/// NVML's answers per GPU index.
pub(super) fn nvml_gpus(snapshot: &Snapshot) -> Vec<(u32, &DeviceAnswers)> {
    snapshot.nvml.as_ref().map(|n| n.answered().collect()).unwrap_or_default()
}

pub(super) fn rdma_ports(snapshot: &Snapshot) -> impl Iterator<Item = (&topo_model::Nic, &topo_model::NicPort)> {
    snapshot
        .topology
        .nics
        .iter()
        .filter(|n| n.kind != NicKind::Ethernet)
        .flat_map(|n| n.ports.iter().map(move |p| (n, p)))
}

pub(super) fn has_rdma(snapshot: &Snapshot) -> bool {
    snapshot.topology.nics.iter().any(|n| matches!(n.kind, NicKind::Infiniband | NicKind::Roce))
}

/// The bridges on the PCIe paths of GPUs and RDMA NICs.
pub(super) fn path_bridges(snapshot: &Snapshot) -> Vec<&topo_model::PciDevice> {
    let topology = &snapshot.topology;
    let mut seen = std::collections::BTreeSet::new();
    endpoints(topology)
        .flat_map(|e| topology.ancestors(e))
        .filter(|d| d.bridge.is_some() && seen.insert(d.bus_id))
        .collect()
}

/// GPU `index` as the matrix labels it: the GPU NVML numbered so, or, where no
/// source numbered the GPUs (lspci, NCCL XML), the index-th in the matrix's order.
pub(super) fn gpu_bus_by_index(topology: &topo_model::Topology, index: u32) -> Option<BusId> {
    match topology.gpus.iter().find(|g| g.index == Some(index)) {
        Some(gpu) => Some(gpu.bus_id),
        None if topology.gpus.iter().all(|g| g.index.is_none()) => {
            topology.gpus.get(usize::try_from(index).ok()?).map(|g| g.bus_id)
        }
        None => None,
    }
}
