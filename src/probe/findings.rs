//! The findings of a probe run: a copy or ring hop below the threshold of
//! what its path should carry, a collective below its ring, a pair refused
//! peer access, a wrong element, a straggling GPU or rank, a node that failed
//! the pairwise test.

use topo_model::measure::{CopyKind, Expectation, ProbeReport};
use topo_model::{Bandwidth, Evidence, Finding, Severity};

use super::render::gbps;

/// The findings of the probe results a snapshot carries (none without them),
/// with NVML's P2P status added to refused pairs.
pub fn probe_findings(snapshot: &topo_model::Snapshot) -> Vec<Finding> {
    match &snapshot.probe {
        Some(report) => findings(report, &|a, b| super::run::nvml_p2p_status(snapshot, report, a, b)),
        None => Vec::new(),
    }
}

/// Findings from a probe run, measured against `threshold` (0.75: a figure
/// below 75 % of what its path should carry).
pub fn findings(report: &ProbeReport, nvml_p2p: &dyn Fn(u32, u32) -> Option<String>) -> Vec<Finding> {
    let threshold = report.settings.threshold;
    let mut out = Vec::new();
    let unavailable: Vec<Evidence> = report
        .gpus
        .iter()
        .filter_map(|g| Some(Evidence { at: format!("GPU {} ({})", g.ordinal, g.bus_id), text: g.error.clone()? }))
        .collect();
    if !unavailable.is_empty() {
        out.push(Finding::new(
            "probe-gpu-unavailable",
            Severity::Error,
            format!("{} GPU(s) could not be opened; the others were measured", unavailable.len()),
            unavailable,
            "A GPU that CUDA cannot open is lost to any job placed on it: another process holds it in exclusive-process mode (CUDA_ERROR_DEVICE_UNAVAILABLE), or an uncorrectable ECC error needs a reset (CUDA_ERROR_ECC_UNCORRECTABLE).",
            "See who holds it (`nvidia-smi --query-compute-apps=pid,gpu_bus_id --format=csv`) and its compute mode (`nvidia-smi -q -d COMPUTE`); for ECC, `nvidia-smi -q -d ECC`, Xid errors in `dmesg`, then reset the GPU or drain the node.",
        ));
    }
    let mut slow = Vec::new();
    let mut refused = Vec::new();
    let mut failed = Vec::new();
    for copy in &report.copies {
        let what = match (copy.peer, copy.kind) {
            (Some(peer), CopyKind::PeerBothWays) => format!("P2P GPU {} <-> GPU {peer}", copy.gpu),
            (Some(peer), _) => format!("{} GPU {} -> GPU {peer}", copy.kind.label(), copy.gpu),
            (None, _) => format!("{} GPU {}", copy.kind.label(), copy.gpu),
        };
        match &copy.error {
            Some(error) if error.starts_with("peer access refused") => {
                let nvml = copy.peer.and_then(|p| nvml_p2p(copy.gpu, p));
                let nvml = nvml.map(|s| format!("; NVML P2P status: {s}")).unwrap_or_default();
                refused.push(Evidence { at: what, text: format!("{error}{nvml}") });
            }
            Some(error) => failed.push(Evidence { at: what, text: error.clone() }),
            None => slow.extend(below(what, copy.bandwidth, &copy.expectation, threshold)),
        }
    }
    for hop in &report.ring_walk {
        let what = format!("ring hop rank {} -> rank {}", hop.from, hop.to);
        slow.extend(below(what, hop.bandwidth, &hop.expectation, threshold));
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

/// `what` measured below `threshold` x its expectation, as evidence.
fn below(what: String, measured: Bandwidth, expectation: &Expectation, threshold: f64) -> Option<Evidence> {
    let (ratio, expected) = (expectation.ratio?, expectation.expected?);
    (ratio < threshold).then(|| Evidence {
        at: what,
        text: format!(
            "{} measured, {} expected over {} ({:.0} %)",
            gbps(measured),
            gbps(expected),
            expectation.path.as_deref().unwrap_or("its path"),
            ratio * 100.0
        ),
    })
}

/// GPUs whose host copies are more than 10 % slower than the median's, the
/// one figure every GPU should share: over every rank of the job when NCCL
/// gathered them (naming GPUs on other nodes too), else over this node's GPUs.
fn copy_stragglers(report: &ProbeReport) -> Vec<Evidence> {
    let by_rank = report.ranks.len() >= 3;
    let mut out = Vec::new();
    for kind in [CopyKind::HostToDevice, CopyKind::DeviceToHost] {
        // (id, time per byte, name) of every GPU that measured this kind.
        let figures: Vec<(u32, Bandwidth, String)> = if by_rank {
            let pick =
                |r: &topo_model::measure::RankFigures| if kind == CopyKind::HostToDevice { r.h2d } else { r.d2h };
            report
                .ranks
                .iter()
                .filter_map(|r| Some((r.rank, pick(r)?, format!("rank {} ({})", r.rank, r.host))))
                .collect()
        } else {
            let copies = report.copies.iter().filter(|c| c.kind == kind && c.error.is_none());
            copies.map(|c| (c.gpu, c.bandwidth, format!("GPU {}", c.gpu))).collect()
        };
        let times: Vec<(u32, f64)> =
            figures.iter().filter(|(_, b, _)| b.0 > 0.0).map(|(id, b, _)| (*id, 1.0 / b.0)).collect();
        if times.len() < 3 {
            continue;
        }
        let median_of = if by_rank { "rank" } else { "GPU" };
        for (id, over) in topo_model::collective::stragglers(&times, 0.10) {
            let name = figures.iter().find(|(i, ..)| *i == id).map_or(String::new(), |(.., n)| n.clone());
            out.push(Evidence {
                at: format!("{} {name}", kind.label()),
                text: format!("{:.0} % slower than the median {median_of}", over * 100.0),
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
                at: format!("{name} {}", topo_model::units::size_label(row.bytes)),
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
                    at: format!("{name} {}", topo_model::units::size_label(row.bytes)),
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
        if !report.nccl_env.is_empty() {
            let env: Vec<String> = report.nccl_env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            slow.push(Evidence {
                at: "environment".into(),
                text: format!("{} (NCCL obeyed these during the run, as it does in the job)", env.join(" ")),
            });
        }
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
