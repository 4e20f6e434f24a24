//! Rules about how the job was set up: shared memory, P2P, environment
//! overrides, ranks that disagree, channel counts, cuMem.

use std::collections::{BTreeMap, BTreeSet};

use topo_model::nccl::{NcclReport, TransportKind, Warning};
use topo_model::{Evidence, Finding, Severity};

use topo_parsers::nccl_log::catalogue::{self, CATALOGUE};

use super::Inputs;
use super::evidence::{fact, first_line, via_of};
use super::network::rdma_nics;

/// How an SHM hop between two GPUs of a node should be judged, from the
/// path between them (the snapshot's, or NCCL's own topology dump).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum ShmHop {
    /// Across the CPU sockets (SYS): P2P cannot cross there by default, SHM is
    /// NCCL's normal choice.
    CrossSocket,
    /// Through the CPU's host bridge (PHB): P2P only with NCCL_P2P_LEVEL=PHB or above.
    HostBridge,
    /// No path known: cannot be judged without the topology.
    Unknown,
    /// NVLink, or a PCIe switch shared by both GPUs: P2P should have been used.
    P2pCapable,
}

fn judge(nccl_path: Option<&str>) -> ShmHop {
    match nccl_path {
        Some("NVL" | "NVB" | "C2C" | "PIX" | "PXB" | "LOC") => ShmHop::P2pCapable,
        Some("PHB") => ShmHop::HostBridge,
        Some("SYS") => ShmHop::CrossSocket,
        _ => ShmHop::Unknown,
    }
}

/// SHM between GPUs of one node. A warning only where P2P should have worked
/// (NVLink, a shared PCIe switch) or a setting turned it off; across CPU
/// sockets it is NCCL's normal choice, said as information.
pub(super) fn p2p_not_used(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let mut hops: Vec<(ShmHop, String, u32, Option<u32>)> = Vec::new();
    let mut hosts = Vec::new();
    // Hops NCCL sent through its network transport although both ranks are
    // on one node (one process driving several GPUs, or the same host): NCCL
    // does that only when P2P and SHM are both ruled out.
    let mut over_network: Vec<String> = Vec::new();
    for comm in &report.communicators {
        let ranks = comm.rank_map();
        let host_of = |rank: u32| ranks.get(&rank).and_then(|r| r.host.clone());
        for c in comm.connections.iter().filter(|c| c.transport == TransportKind::Shm && c.cross_node != Some(true)) {
            let hop = judge(c.hardware.as_ref().map(|h| h.nccl.as_str()));
            hosts.extend(host_of(c.from));
            hops.push((hop, comm.id.clone(), c.from, c.to));
        }
        let net =
            |t: TransportKind| matches!(t, TransportKind::NetIb | TransportKind::NetSocket | TransportKind::NetOfi);
        for c in comm.connections.iter().filter(|c| net(c.transport) && c.cross_node == Some(false)).take(4) {
            hosts.extend(host_of(c.from));
            over_network.push(format!(
                "comm {}: {} -> {} via {} within one node",
                comm.id,
                c.from,
                c.to.map_or("?".into(), |t| t.to_string()),
                c.detail
            ));
        }
    }
    // Settings that limit P2P (the table's P2P settings, `..._DISABLE=0` aside).
    let p2p_settings = || {
        report.env_overrides.iter().filter_map(|e| {
            let setting = CATALOGUE.setting(&e.name).filter(|s| s.class == Some("p2p-disabled"))?;
            (!restates_default(e)).then_some((setting, e))
        })
    };
    let limiting: Vec<String> = p2p_settings().map(|(_, e)| format!("{}={}", e.name, e.value)).collect();
    let mut evidence = via_of(report, TransportKind::Shm);
    evidence.extend(over_network.iter().map(|text| fact("connections", text.clone())));
    if evidence.is_empty() {
        // No hop shown, but a setting that switches P2P off says enough.
        return p2p_switched_off(report, p2p_settings().filter(|(s, e)| s.turns_off(&e.value)).map(|(_, e)| e));
    }
    let worst = hops.iter().map(|h| h.0).max().unwrap_or(ShmHop::Unknown);
    let capable: Vec<String> = hops
        .iter()
        .filter(|h| h.0 == ShmHop::P2pCapable)
        .take(4)
        .map(|(_, comm, from, to)| {
            format!(
                "comm {comm}: {from} -> {} via SHM although the GPUs could use P2P",
                to.map_or("?".into(), |t| t.to_string())
            )
        })
        .collect();
    evidence.extend(capable.into_iter().map(|text| fact("paths", text)));
    for setting in &limiting {
        evidence.push(first_line(report, &format!("env/{setting}"), format!("{setting} set by environment"), ""));
    }
    let (severity, title) = if !over_network.is_empty() {
        (Severity::Warning, "GPUs on the same node talk through the network (the NIC loops back), not P2P or SHM")
    } else if worst == ShmHop::P2pCapable || !limiting.is_empty() {
        (Severity::Warning, "GPUs on the same node talk through host shared memory, not P2P")
    } else if worst == ShmHop::Unknown {
        (
            Severity::Info,
            "GPUs on the same node talk through host shared memory (the topology decides whether P2P should)",
        )
    } else {
        (
            Severity::Info,
            "GPUs on different CPU sockets (or host bridges) use shared memory: NCCL's normal choice there",
        )
    };
    let fix = if !over_network.is_empty() {
        "NCCL uses its network inside a node only when P2P and SHM are both unavailable: check NCCL_P2P_DISABLE and \
         NCCL_SHM_DISABLE, that the ranks of the node share /dev/shm (one container, --ipc=host), and peer access \
         (`nvidia-smi topo -p2p r`, IOMMU/ACS)."
    } else if !limiting.is_empty() {
        "Remove the P2P-limiting setting from the job's environment unless it works around a known fault."
    } else if worst == ShmHop::P2pCapable {
        "Check `nvidia-smi topo -p2p r` for the GPU pairs, IOMMU/ACS settings that block peer access, and that all \
         ranks of the node see each other's GPUs (same container, CUDA_VISIBLE_DEVICES)."
    } else if worst == ShmHop::Unknown {
        "Give the node's topology (`--from` a snapshot or NCCL topology XML, or NCCL_DEBUG_SUBSYS=GRAPH in the log) \
         to tell whether P2P should have been used: across CPU sockets SHM is expected."
    } else {
        "Nothing to fix: to keep traffic off the socket link, place communicating ranks on GPUs of the same socket."
    };
    hosts.sort();
    hosts.dedup();
    Some(
        Finding::new(
            "p2p-not-used",
            severity,
            title.into(),
            evidence,
            "SHM copies go GPU -> host memory -> GPU; P2P over NVLink or a shared PCIe switch moves data directly, at \
             several times the bandwidth. Across CPU sockets P2P is off by default (the socket link is slower for it).",
            fix,
        )
        .on(hosts, hops.iter().flat_map(|h| [Some(h.2), h.3]).flatten().collect::<Vec<_>>()),
    )
}

/// `NCCL_SHM_DISABLE=0` and friends: a setting that restates NCCL's default.
fn restates_default(e: &topo_model::nccl::EnvOverride) -> bool {
    e.name.ends_with("_DISABLE") && e.value == "0"
}

/// P2P switched off by a setting, in a log that shows no hop between GPUs.
fn p2p_switched_off<'a>(
    report: &topo_model::nccl::NcclReport,
    settings: impl Iterator<Item = &'a topo_model::nccl::EnvOverride>,
) -> Option<Finding> {
    let settings: Vec<&topo_model::nccl::EnvOverride> = settings.collect();
    let first = settings.first()?;
    let evidence = settings
        .iter()
        .map(|e| {
            let setting = format!("{}={}", e.name, e.value);
            first_line(report, &format!("env/{setting}"), format!("{setting} set by environment"), "")
        })
        .collect();
    let hosts = settings.iter().flat_map(|e| e.hosts.iter().cloned()).collect::<BTreeSet<_>>();
    Some(
        Finding::new(
            "p2p-not-used",
            Severity::Warning,
            format!("P2P between the GPUs of a node is switched off ({}={})", first.name, first.value),
            evidence,
            "With P2P off, GPUs of a node exchange data through host shared memory (GPU -> host -> GPU), at a \
             fraction of NVLink's or a PCIe switch's bandwidth, and /dev/shm must be large enough to hold the \
             buffers (a container's 64 MB default is not).",
            "Remove the setting unless it works around a known fault (NCCL_P2P_DISABLE=1 hides broken peer access: \
             check `nvidia-smi topo -p2p r` and ACS/IOMMU instead); where it must stay, give /dev/shm room \
             (--shm-size, --ipc=host).",
        )
        .on(hosts, Vec::<u32>::new()),
    )
}

/// Whether a setting the message table does not describe is one to report:
/// any `NCCL_*` variable NCCL printed as set (its own or a plugin's), unless
/// it restates the default NCCL's source gives it.
fn unlisted_setting_made(e: &topo_model::nccl::EnvOverride) -> bool {
    let default = catalogue::env_param(&e.name).and_then(|p| p.default);
    let restates = default.is_some_and(|d| e.value.trim().parse::<i64>().is_ok_and(|v| v == d));
    e.name.starts_with("NCCL_") && !restates && !restates_default(e)
}

pub(super) fn env_override(inputs: &Inputs) -> Option<Finding> {
    // (selects hardware, the setting); quiet ones (debug output) are not settings of the job's.
    let set: Vec<(bool, &topo_model::nccl::EnvOverride)> = inputs
        .report
        .env_overrides
        .iter()
        .filter_map(|e| match CATALOGUE.setting(&e.name) {
            Some(s) => (!s.quiet && !restates_default(e)).then_some((s.selects, e)),
            None => unlisted_setting_made(e).then_some((false, e)),
        })
        .collect();
    if set.is_empty() {
        return None;
    }
    let tuning = set.iter().filter(|(selects, _)| !selects).count();
    let evidence = set
        .iter()
        .map(|(_, e)| {
            let key = format!("env/{}={}", e.name, e.value);
            let hosts = format!(" (hosts: {})", e.hosts.join(", "));
            first_line(inputs.report, &key, format!("{} set by environment to {}", e.name, e.value), &hosts)
        })
        .collect();
    let finding = match tuning {
        0 => Finding::new(
            "env-override",
            Severity::Info,
            format!("{} NCCL setting(s) in the job's environment choose its interfaces or devices", set.len()),
            evidence,
            "They replace NCCL's own choice of interface, NIC, GID or topology. Often needed; but a launcher or \
             image may set them unasked (Ray sets NCCL_SOCKET_IFNAME=^lo,docker,veth by default), overriding the \
             cluster's own /etc/nccl.conf.",
            "Check each names what exists on every node (`ip -br addr`, `ibv_devices`, `show_gids`); unset those \
             the job did not mean to set.",
        ),
        _ => Finding::new(
            "env-override",
            Severity::Warning,
            format!("{tuning} NCCL tuning variable(s) set in the job's environment"),
            evidence,
            "These override NCCL's own choice of transport, algorithm, protocol or channel count; set once to \
             debug a fault, they stay and quietly cap bandwidth on hardware that no longer needs them.",
            "Remove them unless each is documented as a workaround for this cluster; compare a run without them.",
        ),
    };
    let hosts = set.iter().flat_map(|(_, e)| e.hosts.iter().cloned()).collect::<BTreeSet<_>>();
    Some(finding.on(hosts, Vec::<u32>::new()))
}

/// Ranks that should agree but do not: environment overrides set on some
/// hosts only or with different values, or different NICs (NCCL versions
/// are [`version_mismatch`]'s).
pub(super) fn rank_mismatch(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let mut evidence = Vec::new();
    let mut by_name: BTreeMap<&str, Vec<&topo_model::nccl::EnvOverride>> = BTreeMap::new();
    for e in &report.env_overrides {
        by_name.entry(e.name.as_str()).or_default().push(e);
    }
    let hosts: BTreeSet<&str> = report.hosts.iter().map(String::as_str).collect();
    for (name, settings) in by_name {
        let covered: BTreeSet<&str> = settings.iter().flat_map(|e| e.hosts.iter().map(String::as_str)).collect();
        let values: Vec<String> =
            settings.iter().map(|e| format!("{}={} on {}", name, e.value, e.hosts.join(","))).collect();
        if settings.len() > 1 {
            evidence.push(fact("environment", format!("different values: {}", values.join("; "))));
        } else if hosts.len() > 1 && !covered.is_empty() && covered.len() < hosts.len() {
            let missing: Vec<&str> = hosts.difference(&covered).copied().collect();
            evidence.push(fact("environment", format!("{} only; not on {}", values.join("; "), missing.join(", "))));
        }
    }
    // NIC lists: hosts whose devices differ from the most common list.
    let lists = &report.network.devices_by_host;
    if lists.len() > 1 {
        let mut counts: BTreeMap<&Vec<String>, usize> = BTreeMap::new();
        for devices in lists.values() {
            *counts.entry(devices).or_default() += 1;
        }
        if let Some((common, _)) = counts.iter().max_by_key(|(_, n)| **n) {
            for (host, devices) in lists.iter().filter(|(_, d)| d != common) {
                let text = format!("{host} uses {} while most hosts use {}", devices.join(" "), common.join(" "));
                evidence.push(fact("network", text));
            }
        }
    }
    (!evidence.is_empty()).then(|| {
        Finding::new(
            "rank-mismatch",
            Severity::Warning,
            "Ranks of one job run with different NCCL settings or NICs".into(),
            evidence,
            "Ranks that disagree on protocol, channel counts or transports build mismatched connections: hangs, \
             `receiving X bytes instead of Y`, or one slow rank.",
            "Run every rank from the same image with the same environment (and /etc/nccl.conf); set per-job \
             variables in the launcher, not per host.",
        )
    })
}

/// Ranks of one job that run different NCCL releases: their version lines
/// differ, or the WARNs of two hosts come from releases that do not overlap.
/// A WARN's wording and source file exist in a known range of releases
/// (the message table's `versions`, read off NVIDIA/nccl's tags): 2.29 moved
/// `socketPollConnect` from misc/socket.cc to os/linux.cc as
/// `ncclOsSocketPollConnect`, so a host printing one and a host printing the
/// other run different NCCLs even where no version line was kept. Ranks of
/// different releases exchange bootstrap records of different layouts
/// (`Bootstrap Root : mismatch in info from procs ... offset 0 vs -981270526`)
/// and fail or hang at init.
pub(super) fn version_mismatch(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let mut evidence = Vec::new();
    let releases: BTreeSet<&str> = report.nccl_versions.iter().map(|v| v.split('+').next().unwrap_or(v)).collect();
    if releases.len() > 1 {
        evidence.push(fact("NCCL version lines", format!("versions in one job: {}", report.nccl_versions.join(", "))));
    }
    let mut hosts: Vec<String> = Vec::new();
    if let Some(pair) = hosts_of_disjoint_releases(report) {
        for (host, (lo, hi), warning) in pair {
            let mut said = super::evidence::warning_evidence(warning);
            said.text = format!(
                "{host} runs NCCL 2.{lo}-2.{hi} (this WARN's wording and file exist only there): {}",
                said.text
            );
            evidence.push(said);
            hosts.push(host.to_string());
        }
    }
    if evidence.is_empty() {
        return None;
    }
    let finding = super::messages::of_class("version-mismatch", Severity::Error, evidence)?;
    Some(finding.on(hosts, []))
}

/// NCCL 2.x releases, as the lowest and highest minor number.
type Releases = (u32, u32);

/// A host, the releases its WARNs allow, and the first WARN that placed it.
type Placed<'a> = (&'a str, Releases, &'a Warning);

/// Two hosts whose WARNs pin NCCL releases that do not overlap: each host's
/// range is what all its WARNs allow together (a host whose own WARNs
/// disagree is left out: the table cannot place it).
fn hosts_of_disjoint_releases(report: &NcclReport) -> Option<[Placed<'_>; 2]> {
    let mut by_host: BTreeMap<&str, Option<(Releases, &Warning)>> = BTreeMap::new();
    for warning in &report.warnings {
        let Some(file) = warning.source.as_deref().and_then(|s| s.split(':').next()) else { continue };
        let Some((lo, hi)) = topo_parsers::nccl_log::releases::warn_releases(&warning.text, file) else { continue };
        for host in warning.hosts.iter().map(String::as_str).chain(warning.host.as_deref()) {
            let entry = by_host.entry(host).or_insert(Some(((lo, hi), warning)));
            *entry = entry.and_then(|((a, b), first)| {
                let (a, b) = (a.max(lo), b.min(hi));
                (a <= b).then_some(((a, b), first))
            });
        }
    }
    let placed: Vec<Placed> =
        by_host.into_iter().filter_map(|(host, range)| range.map(|(r, w)| (host, r, w))).collect();
    placed.iter().enumerate().find_map(|(i, a)| {
        let b = placed[i + 1..].iter().find(|b| b.1.1 < a.1.0 || a.1.1 < b.1.0)?;
        Some([*a, *b])
    })
}

/// Channel counts below what the hardware can feed.
pub(super) fn few_channels(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let mut evidence: Vec<Evidence> = report
        .env_overrides
        .iter()
        .filter(|e| e.name == "NCCL_MAX_NCHANNELS" && e.value.parse::<u32>().is_ok_and(|n| n < 8))
        .map(|e| first_line(report, &format!("env/{}={}", e.name, e.value), format!("{}={}", e.name, e.value), ""))
        .collect();
    if let Some(machine) = inputs.machine {
        let nics = rdma_nics(machine).len() as u32;
        let nvlinked = !machine.topology.nvlinks.is_empty();
        for comm in &report.communicators {
            let Some(channels) = &comm.channels else { continue };
            let multi_node = comm.nnodes.is_some_and(|n| n > 1);
            let wanted = match (multi_node, nvlinked) {
                (true, _) if nics > 0 => 2 * nics,
                (false, true) => 8,
                _ => continue,
            };
            if channels.coll < wanted {
                let why = if multi_node { format!("{nics} RDMA NICs") } else { "NVLink between the GPUs".into() };
                let text =
                    format!("comm {}: {} coll channels for {why} (at least {wanted} expected)", comm.id, channels.coll);
                evidence.push(fact("channels", text));
            }
        }
    }
    (!evidence.is_empty()).then(|| {
        Finding::new(
            "few-channels",
            Severity::Warning,
            "Too few NCCL channels for the hardware".into(),
            evidence,
            "Each channel drives one SM's worth of copies over its path; too few cannot fill NVLink or every NIC \
             (NCCL uses two per NIC across nodes).",
            "Remove NCCL_MAX_NCHANNELS / low NCCL_MIN_NCHANNELS; if CollNet or the NICs limit it, check every NIC \
             is in use (NCCL_IB_HCA).",
        )
    })
}
