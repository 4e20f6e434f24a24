//! Hardware checks over a node's snapshot (sysfs + NVML facts): each finds one
//! kind of fault and returns one finding listing every device it affects.
//! `diagnose --from` and `preflight` both run them.

mod facts;
mod gpu;
mod hardware;
mod host;
mod nccl_graph;
mod p2p;
mod pcie;

use topo_model::{BusId, Finding, Snapshot, Topology};

/// Every hardware finding for the node, most severe first.
pub fn hardware(snapshot: &Snapshot) -> Vec<Finding> {
    let mut findings: Vec<Finding> = hardware::CHECKS.iter().filter_map(|check| check(snapshot)).collect();
    // Measured figures the snapshot carries (`topo probe --save`) are facts of the node too.
    findings.extend(crate::probe::findings::probe_findings(snapshot));
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.code.cmp(&b.code)));
    findings
}

/// The GPUs and the NICs that have a PCI location: the devices whose paths matter.
fn endpoints(topology: &Topology) -> impl Iterator<Item = BusId> + '_ {
    topology.gpus.iter().map(|g| g.bus_id).chain(topology.nics.iter().filter_map(|n| n.bus_id))
}
