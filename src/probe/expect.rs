//! What each live measurement should have reached, from the topology model,
//! and the findings when it did not: a copy or collective below the threshold,
//! a pair refused peer access, a wrong element, a straggling rank.

use topo_model::measure::{CopyKind, Expectation, ProbeReport};
use topo_model::{Bandwidth, BusId, Evidence, Finding, HopKind, Severity, Topology};

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
/// would pick, by nvidia-smi's distance) with an active port, and what that
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
            let rate = n.ports.iter().filter(|p| p.is_active()).filter_map(|p| p.rate_gbps).reduce(f64::max)?;
            Some((distance(topology.path(gpu, n.bus_id?).smi), n, rate))
        })
        .min_by(|a, b| a.0.cmp(&b.0).then(b.2.total_cmp(&a.2)))
        .map(|(_, nic, rate)| {
            (format!("NET {} {rate:.0} Gb/s", nic.name), Bandwidth(rate / 8.0 * 1e9 * NIC_EFFICIENCY))
        })
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
            let (path, expected) = match (copy.kind, bus(report, copy.gpu), copy.peer.and_then(|p| bus(report, p))) {
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
        result.expectation = match &ring {
            Some((path, expected)) if result.ranks > 1 => Expectation::new(Some(path.clone()), Some(*expected), best),
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

/// The findings of the probe results a snapshot carries (none without them),
/// with NVML's P2P status added to refused pairs.
pub fn probe_findings(snapshot: &topo_model::Snapshot) -> Vec<Finding> {
    match &snapshot.probe {
        Some(report) => findings(report, &|a, b| super::run::nvml_p2p_status(snapshot, report, a, b)),
        None => Vec::new(),
    }
}

fn gbps(b: Bandwidth) -> String {
    format!("{:.1} GB/s", b.gbps())
}

/// Findings from a probe run, measured against `threshold` (0.75: a figure
/// below 75 % of what its path should carry).
pub fn findings(report: &ProbeReport, nvml_p2p: &dyn Fn(u32, u32) -> Option<String>) -> Vec<Finding> {
    let threshold = report.settings.threshold;
    let mut out = Vec::new();
    let mut slow = Vec::new();
    let mut refused = Vec::new();
    let mut failed = Vec::new();
    for copy in &report.copies {
        let what = match (copy.peer, copy.kind) {
            (Some(peer), CopyKind::PeerBothWays) => format!("P2P GPU {} <-> GPU {peer}", copy.gpu),
            (Some(peer), _) => format!("{} GPU {} -> GPU {peer}", copy.kind.label(), copy.gpu),
            (None, _) => format!("{} GPU {}", copy.kind.label(), copy.gpu),
        };
        match (&copy.error, copy.expectation.ratio, copy.expectation.expected) {
            (Some(error), ..) if error.starts_with("peer access refused") => {
                let nvml = copy.peer.and_then(|p| nvml_p2p(copy.gpu, p));
                let nvml = nvml.map(|s| format!("; NVML P2P status: {s}")).unwrap_or_default();
                refused.push(Evidence { at: what, text: format!("{error}{nvml}") });
            }
            (Some(error), ..) => failed.push(Evidence { at: what, text: error.clone() }),
            (None, Some(ratio), Some(expected)) if ratio < threshold => slow.push(Evidence {
                at: what,
                text: format!(
                    "{} measured, {} expected over {} ({:.0} %)",
                    gbps(copy.bandwidth),
                    gbps(expected),
                    copy.expectation.path.as_deref().unwrap_or("its path"),
                    ratio * 100.0
                ),
            }),
            _ => {}
        }
    }
    for hop in &report.ring_walk {
        if let (Some(ratio), Some(expected)) = (hop.expectation.ratio, hop.expectation.expected)
            && ratio < threshold
        {
            slow.push(Evidence {
                at: format!("ring hop rank {} -> rank {}", hop.from, hop.to),
                text: format!(
                    "{} measured, {} expected over {} ({:.0} %)",
                    gbps(hop.bandwidth),
                    gbps(expected),
                    hop.expectation.path.as_deref().unwrap_or("its path"),
                    ratio * 100.0
                ),
            });
        }
    }
    if !slow.is_empty() {
        let mut finding = Finding::new(
            "probe-slow-link",
            Severity::Error,
            format!("{} measurement(s) below {:.0} % of what their link should carry", slow.len(), threshold * 100.0),
            slow,
            "A copy or ring hop well under its path's bandwidth means a downtrained or degraded link, a GPU on the wrong slot, or traffic forced through the CPU; every collective crossing that link runs at its speed.",
            "Check the link's trained speed under load (`topo show`, `nvidia-smi -q -d PCIE`), NVLink error counters (`nvidia-smi nvlink -e`) and ACS/IOMMU settings; reseat or replace the part, then probe again.",
        );
        finding.expected = Some(format!("at least {:.0} % of the path's bandwidth", threshold * 100.0));
        out.push(finding);
    }
    if !refused.is_empty() {
        out.push(Finding::new(
            "probe-p2p-refused",
            Severity::Warning,
            format!("{} GPU pair(s) refused peer-to-peer access", refused.len()),
            refused,
            "Without P2P, NCCL stages GPU-to-GPU traffic through host memory (SHM), at a fraction of the link's bandwidth.",
            "Check ACS on the PCIe switches and the IOMMU (`topo diagnose`), the driver's P2P support for this GPU model, and that both GPUs are in the same container/VM.",
        ));
    }
    if !failed.is_empty() {
        out.push(Finding::new(
            "probe-copy-failed",
            Severity::Error,
            format!("{} copy measurement(s) could not run", failed.len()),
            failed,
            "A GPU that cannot allocate or copy will fail a training job the same way.",
            "Read the CUDA error; check `nvidia-smi` for the GPU's state, Xid errors in `dmesg`, and free memory.",
        ));
    }
    out.extend(collective_findings(report, copy_stragglers(report)));
    if let Some(pairwise) = &report.pairwise {
        let bad: Vec<Evidence> = pairwise
            .nodes
            .iter()
            .filter(|n| !n.passed)
            .map(|n| Evidence { at: format!("rank {} ({})", n.rank, n.host), text: n.evidence.join("; ") })
            .collect();
        if !bad.is_empty() {
            out.push(Finding::new(
                "probe-bad-node",
                Severity::Error,
                format!("{} node(s) failed the pairwise test", bad.len()),
                bad,
                "A node whose pairs run slow or return wrong data slows or corrupts every job that lands on it; re-pairing with nodes that passed shows it is this node, not its partner.",
                "Drain the node; check its NICs (`topo show`, `ibstat`, port counters), GPUDirect RDMA (`topo diagnose`), cables and switch ports, then run the pairwise test again.",
            ));
        }
    }
    out
}

/// GPUs whose host copies are more than 10 % slower than the median GPU's:
/// the same test as for ranks, on the one figure every GPU should share.
fn copy_stragglers(report: &ProbeReport) -> Vec<Evidence> {
    if report.ranks.len() >= 3 {
        return rank_stragglers(report);
    }
    let mut out = Vec::new();
    for kind in [CopyKind::HostToDevice, CopyKind::DeviceToHost] {
        let times: Vec<(u32, f64)> = report
            .copies
            .iter()
            .filter(|c| c.kind == kind && c.error.is_none() && c.bandwidth.0 > 0.0)
            .map(|c| (c.gpu, 1.0 / c.bandwidth.0))
            .collect();
        if times.len() < 3 {
            continue;
        }
        for (gpu, over) in topo_model::collective::stragglers(&times, 0.10) {
            out.push(Evidence {
                at: format!("{} GPU {gpu}", kind.label()),
                text: format!("{:.0} % slower than the median GPU", over * 100.0),
            });
        }
    }
    out
}

/// The same rule over every rank of the job (gathered through NCCL), which
/// names GPUs on other nodes too.
fn rank_stragglers(report: &ProbeReport) -> Vec<Evidence> {
    let mut out = Vec::new();
    for (label, pick) in [
        ("H2D", (|r: &topo_model::measure::RankFigures| r.h2d) as fn(&topo_model::measure::RankFigures) -> _),
        ("D2H", |r: &topo_model::measure::RankFigures| r.d2h),
    ] {
        let times: Vec<(u32, f64)> =
            report.ranks.iter().filter_map(|r| pick(r).filter(|b| b.0 > 0.0).map(|b| (r.rank, 1.0 / b.0))).collect();
        if times.len() < 3 {
            continue;
        }
        for (rank, over) in topo_model::collective::stragglers(&times, 0.10) {
            let host = report.ranks.iter().find(|r| r.rank == rank).map_or("", |r| r.host.as_str());
            out.push(Evidence {
                at: format!("{label} rank {rank} ({host})"),
                text: format!("{:.0} % slower than the median rank", over * 100.0),
            });
        }
    }
    out
}

fn collective_findings(report: &ProbeReport, mut stragglers: Vec<Evidence>) -> Vec<Finding> {
    let threshold = report.settings.threshold;
    let mut out = Vec::new();
    let mut wrong = Vec::new();
    let mut slow = Vec::new();
    for result in &report.collectives {
        let name = result.collective.name();
        for row in result.rows.iter().filter(|r| r.wrong > 0) {
            wrong.push(Evidence {
                at: format!("{name} {}", topo_probes::live::collectives::size_label(row.bytes)),
                text: format!("{} wrong element(s)", row.wrong),
            });
        }
        if let (Some(ratio), Some(expected)) = (result.expectation.ratio, result.expectation.expected)
            && ratio < threshold
        {
            let best = result.rows.iter().map(|r| r.busbw.0).fold(0.0, f64::max);
            slow.push(Evidence {
                at: format!("{name}, {} ranks", result.ranks),
                text: format!(
                    "best busbw {}, {} expected over the {} ({:.0} %)",
                    gbps(Bandwidth(best)),
                    gbps(expected),
                    result.expectation.path.as_deref().unwrap_or("ring"),
                    ratio * 100.0
                ),
            });
        }
        // Stragglers at the largest size, where timing noise is smallest.
        if let Some(row) = result.rows.last() {
            for (rank, over) in topo_model::collective::stragglers(&row.per_rank, 0.10) {
                stragglers.push(Evidence {
                    at: format!("{name} {}", topo_probes::live::collectives::size_label(row.bytes)),
                    text: format!("rank {rank} {:.0} % slower than the median rank", over * 100.0),
                });
            }
        }
    }
    if !wrong.is_empty() {
        out.push(Finding::new(
            "probe-data-corruption",
            Severity::Error,
            format!("collective results wrong in {} case(s)", wrong.len()),
            wrong,
            "NCCL returned data that differs from the exactly known result: a training job on this node would silently compute wrong gradients.",
            "Do not use this node. Check `dmesg` for Xid errors, NVLink CRC/replay counters and ECC errors (`nvidia-smi -q -d ECC`); rerun with NCCL_PROTO=Simple to see whether one protocol is at fault.",
        ));
    }
    if !slow.is_empty() {
        out.push(Finding::new(
            "probe-slow-collective",
            Severity::Error,
            format!("{} collective(s) below {:.0} % of the ring's bottleneck", slow.len(), threshold * 100.0),
            slow,
            "A collective's bus bandwidth should approach the slowest link of its ring; far below it, a link, a setting (NCCL_P2P_DISABLE, NCCL_ALGO) or another process is in the way.",
            "Run `topo probe --ring-walk` to time each hop alone, and `topo diagnose` on the job's NCCL_DEBUG=INFO log.",
        ));
    }
    if !stragglers.is_empty() {
        out.push(Finding::new(
            "probe-straggler",
            Severity::Warning,
            format!("{} GPU(s) or rank(s) more than 10 % slower than the median", stragglers.len()),
            stragglers,
            "A collective runs at the pace of its slowest rank, and GPUs of one node should copy alike.",
            "Check that rank's GPU clocks and throttling (`nvidia-smi -q -d PERFORMANCE`), its PCIe/NVLink state and other processes on it.",
        ));
    }
    out
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
