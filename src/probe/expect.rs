//! What each live measurement should have reached, from the topology model:
//! per link for copies, per path for pairs and ring hops, the ring's slowest
//! hop for collectives, the nearest RDMA NIC for hops from other nodes.

use topo_model::collective::Collective;
use topo_model::measure::{CopyKind, Expectation, ProbeReport};
use topo_model::{Bandwidth, BusId, HopKind, Topology};

/// Share of the raw per-direction PCIe rate a copy engine reaches: 256-byte
/// payloads carry ~24 bytes of TLP/DLLP framing (0.91), and DMA engines lose a
/// little more. Matches measured H2D: 52-55 GB/s on Gen5 x16 (63 raw), 26.8 on
/// Gen4 x16 (31.5 raw); research/anchors.md section 11.
pub const PCIE_EFFICIENCY: f64 = 0.86;
/// Share of the raw NVLink rate a copy or ring reaches (NCCL's own link
/// constants are ~80 % of raw; nvbandwidth on H100 NVSwitch shows ~85 %).
pub const NVLINK_EFFICIENCY: f64 = 0.85;

/// A GPU's PCIe path to its CPU: the slowest link capability on the way up,
/// with its label. Capability, not the trained speed, since idle GPUs train
/// their links down to save power.
fn host_link(topology: &Topology, gpu: BusId) -> Option<(String, Bandwidth)> {
    topology
        .ancestors(gpu)
        .into_iter()
        .filter_map(|d| d.link.max.bandwidth().map(|b| (d.link.max, b)))
        .min_by(|a, b| a.1.0.total_cmp(&b.1.0))
        .map(|(spec, b)| (format!("PCIe {}", spec.label()), Bandwidth(b.0 * PCIE_EFFICIENCY)))
}

/// Between two GPUs: the path's class (`NV18`, `PXB`) and its bottleneck,
/// scaled by the efficiency of the bottleneck's kind of link.
fn gpu_path(topology: &Topology, a: BusId, b: BusId) -> (Option<String>, Option<Bandwidth>) {
    if topology.gpu(a).is_none() || topology.gpu(b).is_none() {
        return (None, None);
    }
    let path = topology.path(a, b);
    let efficiency = match path.bottleneck.and_then(|i| path.hops.get(i)).map(|h| h.kind) {
        Some(HopKind::NvLink { .. }) => NVLINK_EFFICIENCY,
        _ => PCIE_EFFICIENCY,
    };
    (Some(path.smi.to_string()), path.expected.map(|e| Bandwidth(e.0 * efficiency)))
}

/// Share of an RDMA port's line rate NCCL's send/recv reaches: the per-NIC
/// anchors (NDR 400 Gb/s: 46-48 GB/s busbw, 92-96 %; EDR 100: 12.2 GB/s, 98 %)
/// less a margin for the protocol headers of RoCE. research/anchors.md section 11.
pub const NIC_EFFICIENCY: f64 = 0.9;

/// For a hop to or from another node: the RDMA NIC nearest `gpu` (the one NCCL
/// would pick, by nvidia-smi's distance) with an active (or unrecorded) port, and what that
/// port should carry.
fn nic_link(topology: &Topology, gpu: BusId) -> Option<(String, Bandwidth)> {
    let distance = |class: topo_model::SmiClass| match class {
        topo_model::SmiClass::Pix => 0,
        topo_model::SmiClass::Pxb => 1,
        topo_model::SmiClass::Phb => 2,
        topo_model::SmiClass::Node => 3,
        topo_model::SmiClass::Sys => 4,
        _ => 5,
    };
    topology
        .nics
        .iter()
        .filter(|n| n.kind != topo_model::NicKind::Ethernet)
        .filter_map(|n| {
            // A port of unknown state counts (NCCL's topology dump lists only
            // the NICs it uses and records no port state); a port known to be
            // down does not.
            let usable = |p: &&topo_model::NicPort| p.is_active() || p.state.is_none();
            let rate = n.ports.iter().filter(usable).filter_map(|p| p.rate_gbps).reduce(f64::max)?;
            Some((distance(topology.path(gpu, n.bus_id?).smi), n, rate))
        })
        .min_by(|a, b| a.0.cmp(&b.0).then(b.2.total_cmp(&a.2)))
        .map(|(_, nic, rate)| {
            (format!("NET {} {rate:.0} Gb/s", nic.name), Bandwidth(rate / 8.0 * 1e9 * NIC_EFFICIENCY))
        })
}

/// Where each GPU's pinned host memory belongs: its NUMA node, and the CPUs
/// to allocate from (the device's own `local_cpulist`, as NVML's CPU affinity
/// that nvbandwidth binds to, else its node's CPUs). GPUs whose node is not
/// known are left out.
pub fn host_homes(topology: &Topology) -> Vec<(String, topo_probes::live::affinity::HostHome)> {
    topology
        .gpus
        .iter()
        .filter_map(|gpu| {
            let node = topology.numa_of(gpu.bus_id)?;
            let own = topology.ancestors(gpu.bus_id).into_iter().find_map(|d| d.local_cpus.clone());
            let cpus = own.or_else(|| topology.numa_node(node).map(|n| n.cpus.clone()))?;
            (!cpus.is_empty()).then(|| {
                (gpu.bus_id.to_string(), topo_probes::live::affinity::HostHome { node, cpus: cpus.cpus().to_vec() })
            })
        })
        .collect()
}

fn bus(report: &ProbeReport, ordinal: u32) -> Option<BusId> {
    report.gpus.iter().find(|g| g.ordinal == ordinal).and_then(|g| g.bus_id.parse().ok())
}

fn bus_of_rank(report: &ProbeReport, rank: u32) -> Option<BusId> {
    report.gpus.iter().find(|g| g.nccl_rank == Some(rank)).and_then(|g| g.bus_id.parse().ok())
}

fn doubled(found: (Option<String>, Option<Bandwidth>), both: bool) -> (Option<String>, Option<Bandwidth>) {
    let (path, expected) = found;
    (path, expected.map(|e| if both { Bandwidth(e.0 * 2.0) } else { e }))
}

/// Fills every measurement's expectation from `topology`.
pub fn annotate(report: &mut ProbeReport, topology: &Topology) {
    let copies = std::mem::take(&mut report.copies);
    report.copies = copies
        .into_iter()
        .map(|mut copy| {
            let both = copy.kind.both_directions();
            let slice = |ordinal: u32| report.gpus.iter().any(|g| g.ordinal == ordinal && g.mig.is_some());
            let (path, expected) = match (copy.kind, bus(report, copy.gpu), copy.peer.and_then(|p| bus(report, p))) {
                // A MIG slice has a share of its GPU's copy engines: the whole
                // GPU's link is no measure of it.
                _ if slice(copy.gpu) || copy.peer.is_some_and(slice) => (Some("MIG slice".to_string()), None),
                (CopyKind::DeviceLocal, ..) | (_, None, _) => (None, None),
                (CopyKind::Peer | CopyKind::PeerBothWays, Some(a), Some(b)) => doubled(gpu_path(topology, a, b), both),
                (CopyKind::Peer | CopyKind::PeerBothWays, _, None) => (None, None),
                (_, Some(gpu), _) => match host_link(topology, gpu) {
                    Some((path, e)) => (Some(path), Some(if both { Bandwidth(e.0 * 2.0) } else { e })),
                    None => (None, None),
                },
            };
            if copy.error.is_none() {
                copy.expectation = Expectation::new(path, expected, copy.bandwidth);
            } else {
                copy.expectation = Expectation { path, expected, ratio: None };
            }
            copy
        })
        .collect();
    let ring = ring_expectation(report, topology);
    for result in &mut report.collectives {
        let best = result.rows.iter().map(|r| r.busbw).fold(Bandwidth(0.0), |a, b| if b.0 > a.0 { b } else { a });
        result.expectation = match (&ring, traffic(result.collective)) {
            (Some((path, expected)), Traffic::RingHops) if result.ranks > 1 => {
                Expectation::new(Some(path.clone()), Some(*expected), best)
            }
            _ => Expectation::default(),
        };
    }
    let hops = std::mem::take(&mut report.ring_walk);
    report.ring_walk = hops
        .into_iter()
        .map(|mut hop| {
            match (bus_of_rank(report, hop.from), bus_of_rank(report, hop.to)) {
                (Some(a), Some(b)) => {
                    let (path, expected) = gpu_path(topology, a, b);
                    hop.expectation = Expectation::new(path, expected, hop.bandwidth);
                }
                // The sender is on another node: the hop arrives through this node's NIC.
                (None, Some(local)) | (Some(local), None) => {
                    if let Some((path, expected)) = nic_link(topology, local) {
                        hop.expectation = Expectation::new(Some(path), Some(expected), hop.bandwidth);
                    }
                }
                (None, None) => {}
            }
            hop
        })
        .collect();
}

/// How a collective's traffic meets the links, which decides what its busbw
/// can honestly be held against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Traffic {
    /// Each rank sends to one neighbour and receives from another at a time
    /// (NCCL's ring algorithms; sendrecv to the next rank): nccl-tests' busbw
    /// factor turns the figure into what each ring hop carries, so it is held
    /// against the ring's slowest hop.
    RingHops,
    /// Every pair at once (all_to_all): each GPU's link carries (n-1)/n of its
    /// buffer while every pair across the socket link (or the network) shares
    /// the bisection. No single hop bounds it, and the topology gives no
    /// bisection figure that the measured figure could be held against, so
    /// it raises no finding.
    AllPairs,
}

/// The traffic of each collective: nccl-tests' doc/PERFORMANCE.md derives the
/// busbw factors (all_reduce 2(n-1)/n, all_gather and reduce_scatter (n-1)/n,
/// broadcast and reduce 1) from ring traffic; alltoall's (n-1)/n is every
/// rank's share that leaves it, sent to all peers at once.
const TRAFFIC: [(Collective, Traffic); 7] = [
    (Collective::AllReduce, Traffic::RingHops),
    (Collective::AllGather, Traffic::RingHops),
    (Collective::ReduceScatter, Traffic::RingHops),
    (Collective::Broadcast, Traffic::RingHops),
    (Collective::Reduce, Traffic::RingHops),
    (Collective::SendRecv, Traffic::RingHops),
    (Collective::AllToAll, Traffic::AllPairs),
];

fn traffic(collective: Collective) -> Traffic {
    TRAFFIC.iter().find(|(c, _)| *c == collective).map_or(Traffic::AllPairs, |(_, t)| *t)
}

/// The bus bandwidth a ring over this process's GPUs (in NCCL rank order)
/// should reach: its slowest hop. `None` when the ranks span processes (the
/// network hop is not in this node's topology) or there is no hop.
fn ring_expectation(report: &ProbeReport, topology: &Topology) -> Option<(String, Bandwidth)> {
    let world = report.collectives.first()?.ranks;
    let mut ring: Vec<(u32, BusId)> =
        report.gpus.iter().filter_map(|g| Some((g.nccl_rank?, g.bus_id.parse().ok()?))).collect();
    if ring.len() < 2 || ring.len() as u32 != world {
        return None;
    }
    ring.sort_by_key(|(rank, _)| *rank);
    (0..ring.len())
        .filter_map(|i| {
            let (a, b) = (ring[i].1, ring[(i + 1) % ring.len()].1);
            let (path, expected) = gpu_path(topology, a, b);
            Some((format!("ring, slowest hop {}", path?), expected?))
        })
        .min_by(|a, b| a.1.0.total_cmp(&b.1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efficiencies_match_measured_anchor_figures() {
        // Gen5 x16: 63.0 raw -> 54.2 expected (AzNHC expects 52 on H100, 55 on H200).
        let gen5 = topo_model::PcieLinkSpec::new(Some(5), Some(16)).bandwidth().unwrap();
        assert_eq!(format!("{:.1}", gen5.gbps() * PCIE_EFFICIENCY), "54.2");
        // Gen4 x16: 31.5 raw -> 27.1; the RTX 6000 Ada box measured 26.8 H2D (0.99).
        let gen4 = topo_model::PcieLinkSpec::new(Some(4), Some(16)).bandwidth().unwrap();
        assert_eq!(format!("{:.1}", gen4.gbps() * PCIE_EFFICIENCY), "27.1");
    }
}
