//! NCCL's own channel plan (a graph dump) held against the topology: a channel
//! that enters or leaves the node through a NIC farther from its GPU than the
//! GPU's nearest NIC crosses more PCIe (or the CPU) than it needs to.
//!
//! NCCL numbers network devices in the order its IB plugin lists them, which
//! is the RDMA devices' name order (`mlx5_0`, `mlx5_1`, ...): `<net dev=N>` is
//! taken as the N-th RDMA NIC by name.

use topo_model::nccl_graph::pattern_name;
use topo_model::{BusId, Evidence, Finding, Severity, SmiClass, Snapshot};

use super::facts::{evidence, gpu_bus_by_index};

/// How far apart two devices are on PCIe, for comparing NICs (nearer is smaller).
fn distance(class: SmiClass) -> u8 {
    match class {
        SmiClass::Same => 0,
        SmiClass::Pix => 1,
        SmiClass::Pxb => 2,
        SmiClass::Phb => 3,
        SmiClass::Node => 4,
        SmiClass::Sys => 5,
        SmiClass::Nv(_) | SmiClass::Unknown => 6,
    }
}

pub(super) fn channel_nic_not_nearest(snapshot: &Snapshot) -> Option<Finding> {
    let dumps = &snapshot.nccl.as_ref()?.graph_dumps;
    let topology = &snapshot.topology;
    let mut nics: Vec<(&str, BusId)> =
        topology.nics.iter().filter_map(|n| Some((n.name.as_str(), n.bus_id?))).collect();
    nics.sort();
    if nics.is_empty() {
        return None;
    }
    let gpu = |dev: u32| gpu_bus_by_index(topology, dev);
    let mut items: Vec<Evidence> = Vec::new();
    for dump in dumps {
        for graph in &dump.graphs {
            for (c, channel) in graph.channels.iter().enumerate() {
                let gpus = channel.gpus();
                let ends = [(channel.net_in(), gpus.first()), (channel.net_out(), gpus.last())];
                for (net, dev) in ends {
                    let (Some(net), Some(&dev)) = (net, dev) else { continue };
                    let (Some(&(nic, nic_bus)), Some(gpu_bus)) =
                        (usize::try_from(net).ok().and_then(|n| nics.get(n)), gpu(dev))
                    else {
                        continue;
                    };
                    let used = topology.smi_class(gpu_bus, nic_bus);
                    let nearest = nics
                        .iter()
                        .map(|(name, b)| (topology.smi_class(gpu_bus, *b), *name))
                        .min_by_key(|(class, name)| (distance(*class), *name));
                    if let Some((class, name)) = nearest.filter(|(class, _)| distance(*class) < distance(used)) {
                        items.push(evidence(
                            format!("{} {} channel {c:02}", dump.source, pattern_name(graph.pattern)),
                            format!("GPU {dev} uses NET {net} ({nic}, {used}); its nearest NIC is {name} ({class})"),
                        ));
                    }
                }
            }
        }
    }
    (!items.is_empty()).then(|| {
        Finding::new(
            "graph-nic-not-nearest",
            Severity::Warning,
            "NCCL channels use a NIC farther from their GPU than its nearest".into(),
            items,
            "Traffic between the GPU and a far NIC crosses extra PCIe switches or the CPU: GPUDirect RDMA may be \
             off for that pair and the channel runs below the NIC's rate.",
            "Check NCCL_IB_HCA / NCCL_CROSS_NIC and the topology NCCL saw (NCCL_TOPO_DUMP_FILE); in a VM, give NCCL \
             the real topology with NCCL_TOPO_FILE.",
        )
    })
}
