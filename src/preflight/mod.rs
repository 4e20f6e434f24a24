//! `topo preflight`: pass/fail for a node before it takes a training job. The
//! hardware checks' findings, grouped into named checks, plus the comparison
//! with an expectations file; the first output line is a one-line verdict fit
//! for a Slurm drain reason.

pub mod expect;
pub mod render;

use serde::Serialize;
use topo_model::{Finding, NicKind, Severity, Snapshot};

use expect::{Expectations, LinkExpectation, version_at_least};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Could not be judged here (not readable without root, no driver, no facts).
    Skip,
    Pass,
    /// Passes, with something worth knowing (an idle GPU's slow link).
    Warn,
    /// A finding of warning or error severity, or a difference from the expectations.
    Fail,
}

#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub name: &'static str,
    pub status: Status,
    /// What was found, or why it fails.
    pub detail: String,
    /// The findings behind a warn or fail.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Preflight {
    pub host: String,
    pub verdict: String,
    pub passed: bool,
    pub checks: Vec<CheckResult>,
}

/// Which finding codes each check owns.
const CHECKS: &[(&str, &[&str])] = &[
    ("gpus", &["gpu-lost"]),
    ("nvlink", &["nvlink-inactive", "nvlink-errors"]),
    ("nvswitch-fabric", &["fabric-not-ready"]),
    ("gpu-pcie", &[]),
    ("pcie-paths", &["pcie-downtrained"]),
    ("numa", &["numa-unknown", "gpu-nic-numa"]),
    ("rdma", &["ib-port-down", "ib-port-slow", "mtu-mismatch"]),
    ("gpudirect-rdma", &["gdr-not-ready"]),
    ("gpu-memory", &["gpu-memory-errors"]),
    ("clocks", &["clock-throttle-hw"]),
    ("versions", &[]),
    ("dev-shm", &["dev-shm-small"]),
    ("memlock", &["memlock-limited"]),
    ("acs", &["acs-redirect"]),
    ("iommu", &["iommu-translated"]),
    (
        "live-bandwidth",
        &[
            "probe-slow-link",
            "probe-slow-collective",
            "probe-copy-failed",
            "probe-p2p-refused",
            "probe-straggler",
            "probe-bad-node",
        ],
    ),
    ("data-integrity", &["probe-data-corruption"]),
];

pub fn run(snapshot: &Snapshot, expectations: &Expectations) -> Preflight {
    // The expectations file's threshold replaces the one the probe ran with.
    let rethreshold = snapshot.probe.is_some() && expectations.probe_threshold.is_some();
    let held = rethreshold.then(|| {
        let mut held = snapshot.clone();
        if let (Some(report), Some(threshold)) = (held.probe.as_mut(), expectations.probe_threshold) {
            report.settings.threshold = threshold;
        }
        held
    });
    let findings = crate::checks::hardware(held.as_ref().unwrap_or(snapshot));
    let mut checks = Vec::new();
    for (name, codes) in CHECKS {
        let mut owned: Vec<Finding> = findings.iter().filter(|f| codes.contains(&f.code.as_str())).cloned().collect();
        let allowed: Vec<String> = owned
            .iter()
            .filter(|f| expectations.allow.contains(&f.code))
            .map(|f| format!("{} allowed", f.code))
            .collect();
        owned.retain(|f| !expectations.allow.contains(&f.code));
        let mut problems = expected(name, snapshot, expectations);
        // A gate is strict: warnings fail too (known exceptions go in `allow`);
        // informational findings (an idle GPU's slow link) only show.
        let status = if !problems.is_empty() || owned.iter().any(|f| f.severity >= Severity::Warning) {
            Status::Fail
        } else if !owned.is_empty() {
            Status::Warn
        } else if let Some(reason) = unjudged(name, snapshot) {
            problems.push(reason);
            Status::Skip
        } else {
            Status::Pass
        };
        let mut detail: Vec<String> = problems;
        detail.extend(owned.iter().map(summary));
        if detail.is_empty() {
            detail.push(found(name, snapshot));
        }
        detail.extend(allowed);
        checks.push(CheckResult { name, status, detail: detail.join("; "), findings: owned });
    }
    let host = snapshot.host.hostname.clone().unwrap_or_else(|| "this node".into());
    let failed: Vec<&CheckResult> = checks.iter().filter(|c| c.status == Status::Fail).collect();
    let count = |s: Status| checks.iter().filter(|c| c.status == s).count();
    let verdict = if failed.is_empty() {
        format!(
            "PASS {host}: {} checks passed, {} warnings, {} skipped",
            count(Status::Pass),
            count(Status::Warn),
            count(Status::Skip)
        )
    } else {
        let reasons: Vec<String> = failed.iter().map(|c| format!("{} ({})", c.name, shorten(&c.detail, 100))).collect();
        format!("FAIL {host}: {}", reasons.join("; "))
    };
    Preflight { host, passed: failed.is_empty(), verdict, checks }
}

/// At most `chars` characters, with `…` when cut: the verdict is one line a
/// Slurm drain reason can hold.
fn shorten(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// A finding in one line: its title and first piece of evidence.
fn summary(finding: &Finding) -> String {
    match finding.evidence.first() {
        Some(e) => format!("{}: {} {}", finding.title, e.at, e.text),
        None => finding.title.clone(),
    }
}

/// The probe's headline figures: slowest host copy, best all_reduce busbw,
/// how many results were checked.
fn probe_summary(report: &topo_model::measure::ProbeReport) -> String {
    use topo_model::measure::CopyKind;
    let slowest = |kind: CopyKind| {
        report
            .copies
            .iter()
            .filter(|c| c.kind == kind && c.error.is_none())
            .map(|c| c.bandwidth.gbps())
            .reduce(f64::min)
    };
    let mut parts = Vec::new();
    if let Some(h2d) = slowest(CopyKind::HostToDevice) {
        parts.push(format!("slowest H2D {h2d:.1} GB/s"));
    }
    if let Some(d2h) = slowest(CopyKind::DeviceToHost) {
        parts.push(format!("slowest D2H {d2h:.1} GB/s"));
    }
    for result in &report.collectives {
        let best = result.rows.iter().map(|r| r.busbw.gbps()).fold(0.0, f64::max);
        parts.push(format!("{} best busbw {best:.1} GB/s over {} ranks", result.collective.name(), result.ranks));
    }
    let sizes: usize = report.collectives.iter().map(|c| c.rows.len()).sum();
    parts.push(format!("{sizes} collective results checked"));
    parts.join(", ")
}

/// Why a check cannot be judged on this snapshot, if so.
fn unjudged(name: &str, snapshot: &Snapshot) -> Option<String> {
    let has_nvml = snapshot.nvml.is_some();
    let topology = &snapshot.topology;
    let reason = match name {
        "nvlink" | "nvswitch-fabric" | "gpu-memory" | "clocks" | "versions" if !has_nvml => "no NVML answers",
        "rdma" | "gpudirect-rdma" if !topology.nics.iter().any(|n| n.kind != NicKind::Ethernet) => "no RDMA NIC",
        "gpudirect-rdma" if snapshot.host.modules.is_empty() => "kernel modules not recorded",
        "dev-shm" if snapshot.host.dev_shm_bytes.is_none() => "/dev/shm size not recorded",
        "memlock" if snapshot.host.memlock.is_none() => "memlock limit not recorded",
        "live-bandwidth" | "data-integrity" if snapshot.probe.is_none() => "no live probe (run with --probe quick)",
        "acs" if topology.pci_devices.iter().all(|d| d.acs_redirect.is_none()) => {
            "PCIe config space not read (needs root) or not recorded"
        }
        "iommu" if topology.pci_devices.iter().all(|d| d.iommu.is_none()) => {
            "no IOMMU groups (IOMMU off or not recorded)"
        }
        _ => return None,
    };
    Some(format!("not checked: {reason}"))
}

/// What a passing check saw, for the report.
fn found(name: &str, snapshot: &Snapshot) -> String {
    let topology = &snapshot.topology;
    match name {
        "gpus" => {
            let mut models: Vec<String> = topology.gpus.iter().map(|g| g.name.clone().unwrap_or("?".into())).collect();
            models.dedup();
            format!("{} GPU(s): {}", topology.gpus.len(), models.join(", "))
        }
        "nvswitch-fabric" => format!("{} NVSwitch(es)", topology.nvswitches.len()),
        "rdma" => format!("{} RDMA NIC(s)", topology.nics.iter().filter(|n| n.kind != NicKind::Ethernet).count()),
        "versions" => {
            let mut text = snapshot.nvml.as_ref().map(crate::views::gpus::versions).unwrap_or_default();
            if let Some(nccl) = snapshot.probe.as_ref().and_then(|p| p.nccl_version.as_deref()) {
                text.push_str(&format!(", NCCL {nccl}"));
            }
            text
        }
        "dev-shm" => snapshot.host.dev_shm_bytes.map(|b| format!("{} MiB", b >> 20)).unwrap_or_default(),
        "memlock" => snapshot.host.memlock.clone().unwrap_or_default(),
        "live-bandwidth" | "data-integrity" => snapshot.probe.as_ref().map(probe_summary).unwrap_or_default(),
        _ => "ok".into(),
    }
}

/// Differences from the expectations file that belong to check `name`.
fn expected(name: &str, snapshot: &Snapshot, expect: &Expectations) -> Vec<String> {
    let topology = &snapshot.topology;
    let mut problems = Vec::new();
    match name {
        "gpus" => {
            if topology.gpus.is_empty() && expect.gpus.as_ref().is_none_or(|g| g.count > 0) {
                problems.push("no NVIDIA GPU found".into());
            }
            if let Some(gpus) = &expect.gpus {
                if topology.gpus.len() as u32 != gpus.count {
                    problems.push(format!("{} GPUs, expected {}", topology.gpus.len(), gpus.count));
                }
                if let Some(model) = &gpus.model {
                    let other: Vec<String> = topology
                        .gpus
                        .iter()
                        .filter(|g| g.name.as_ref() != Some(model))
                        .map(|g| format!("{} is {}", g.bus_id, g.name.as_deref().unwrap_or("unknown")))
                        .collect();
                    if !other.is_empty() {
                        problems.push(format!("expected {model}: {}", other.join(", ")));
                    }
                }
            }
        }
        "nvlink" => {
            if let (Some(want), Some(nvml)) = (expect.nvlinks_per_gpu, &snapshot.nvml) {
                for (index, device) in nvml.answered() {
                    let active = device.nvlinks.iter().filter(|l| l.active.ok() == Some(&true)).count() as u32;
                    if active != want {
                        problems.push(format!("GPU{index} {active} of {want} NVLinks active"));
                    }
                }
            }
        }
        "nvswitch-fabric" => {
            if let Some(want) = expect.nvswitches
                && topology.nvswitches.len() as u32 != want
            {
                problems.push(format!("{} NVSwitches, expected {want}", topology.nvswitches.len()));
            }
        }
        "gpu-pcie" => {
            if let Some(want) = expect.gpu_pcie {
                let label = |g: &topo_model::Gpu| match g.index {
                    Some(i) => format!("GPU{i} {}", g.bus_id),
                    None => format!("GPU {}", g.bus_id),
                };
                let buses = topology.gpus.iter().map(|g| (label(g), g.bus_id)).collect();
                problems.extend(link_problems(snapshot, buses, want));
            }
        }
        "pcie-paths" => {
            if let Some(want) = expect.nic_pcie {
                let buses = topology
                    .nics
                    .iter()
                    .filter(|n| n.kind != NicKind::Ethernet)
                    .filter_map(|n| Some((n.name.clone(), n.bus_id?)))
                    .collect();
                problems.extend(link_problems(snapshot, buses, want));
            }
        }
        "rdma" => {
            if let Some(want) = &expect.rdma {
                let nics: Vec<&topo_model::Nic> =
                    topology.nics.iter().filter(|n| n.kind != NicKind::Ethernet).collect();
                if nics.len() as u32 != want.count {
                    problems.push(format!("{} RDMA NICs, expected {}", nics.len(), want.count));
                }
                if let Some(rate) = want.rate_gbps {
                    for nic in &nics {
                        for port in nic.ports.iter().filter(|p| p.is_active() && p.rate_gbps.is_some_and(|r| r < rate))
                        {
                            problems.push(format!(
                                "{} port {} at {} Gb/s, expected {rate}",
                                nic.name,
                                port.port,
                                port.rate_gbps.unwrap_or(0.0)
                            ));
                        }
                    }
                }
                if let Some(mtu) = want.mtu {
                    for netdev in nics.iter().flat_map(|n| &n.netdevs) {
                        if let Some(found) =
                            topology.net_interfaces.iter().find(|i| &i.name == netdev).and_then(|i| i.mtu)
                            && found != mtu
                        {
                            problems.push(format!("{netdev} MTU {found}, expected {mtu}"));
                        }
                    }
                }
            }
        }
        "versions" => {
            let nvml = snapshot.nvml.as_ref();
            for (what, minimum, found) in [
                ("driver", &expect.driver_min, nvml.and_then(|n| n.driver_version.ok().cloned())),
                ("CUDA", &expect.cuda_min, nvml.and_then(|n| n.cuda_version().ok().cloned())),
                ("NCCL", &expect.nccl_min, snapshot.probe.as_ref().and_then(|p| p.nccl_version.clone())),
            ] {
                match (minimum, found) {
                    (Some(min), Some(found)) if !version_at_least(&found, min) => {
                        problems.push(format!("{what} {found}, expected at least {min}"))
                    }
                    (Some(min), None) if what == "NCCL" => {
                        problems.push(format!("NCCL version unknown (run with --probe), expected at least {min}"))
                    }
                    (Some(min), None) => problems.push(format!("{what} version unknown, expected at least {min}")),
                    _ => {}
                }
            }
        }
        "dev-shm" => {
            if let (Some(min), Some(size)) = (expect.dev_shm_min_gib, snapshot.host.dev_shm_bytes)
                && (size as f64) < min * (1u64 << 30) as f64
            {
                problems.push(format!("/dev/shm {} MiB, expected at least {min} GiB", size >> 20));
            }
        }
        "memlock" => {
            if expect.memlock_unlimited == Some(true)
                && let Some(limit) = snapshot.host.memlock.as_deref().filter(|l| *l != "unlimited")
            {
                problems.push(format!("memlock {limit} bytes, expected unlimited"));
            }
        }
        "live-bandwidth" => {
            if let (Some(report), Some(min)) = (&snapshot.probe, &expect.min_bandwidth) {
                problems.extend(bandwidth_problems(report, min));
            }
        }
        _ => {}
    }
    problems
}

/// Live figures under the expectations file's minimums (GB/s).
fn bandwidth_problems(report: &topo_model::measure::ProbeReport, min: &expect::MinBandwidth) -> Vec<String> {
    use topo_model::collective::Collective;
    use topo_model::measure::CopyKind;
    let mut problems = Vec::new();
    for (kind, floor) in
        [(CopyKind::HostToDevice, min.h2d_gbps), (CopyKind::DeviceToHost, min.d2h_gbps), (CopyKind::Peer, min.p2p_gbps)]
    {
        let Some(floor) = floor else { continue };
        for copy in report.copies.iter().filter(|c| c.kind == kind && c.error.is_none() && c.bandwidth.gbps() < floor) {
            let pair = copy.peer.map(|p| format!(" -> GPU {p}")).unwrap_or_default();
            problems.push(format!(
                "{} GPU {}{pair} {:.1} GB/s, expected at least {floor} GB/s",
                kind.label(),
                copy.gpu,
                copy.bandwidth.gbps()
            ));
        }
    }
    if let Some(floor) = min.all_reduce_busbw_gbps {
        match report.collectives.iter().find(|c| c.collective == Collective::AllReduce) {
            Some(result) => {
                let best = result.rows.iter().map(|r| r.busbw.gbps()).fold(0.0, f64::max);
                if best < floor {
                    problems.push(format!("all_reduce best busbw {best:.1} GB/s, expected at least {floor} GB/s"));
                }
            }
            None => problems.push("all_reduce not measured, but a minimum bus bandwidth is expected".into()),
        }
    }
    problems
}

/// Each device's link against the expected capability, and its lanes trained.
fn link_problems(snapshot: &Snapshot, devices: Vec<(String, topo_model::BusId)>, want: LinkExpectation) -> Vec<String> {
    let mut problems = Vec::new();
    for (label, bus) in devices {
        let Some(device) = snapshot.topology.pci(bus) else { continue };
        let (max, current) = (device.link.max, device.link.current);
        let known = |v: Option<u8>| v.map_or("?".to_string(), |v| v.to_string());
        if max.generation.is_some_and(|g| g < want.generation) || max.width.is_some_and(|w| w < want.width) {
            problems.push(format!(
                "{label} capable of {}, expected Gen{} x{}",
                max.label(),
                want.generation,
                want.width
            ));
        } else if current.width.is_some_and(|w| w < want.width) {
            problems.push(format!("{label} trained x{}, expected x{}", known(current.width), want.width));
        }
    }
    problems
}
