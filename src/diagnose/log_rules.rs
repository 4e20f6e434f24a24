//! Rules that read the NCCL report, with the snapshot where it sharpens the
//! verdict (a socket fallback on a node that has InfiniBand is an error, not a choice).

use std::collections::{BTreeMap, BTreeSet};

use topo_model::nccl::{Communicator, NcclReport, TransportKind, Warning};
use topo_model::{Evidence, Finding, NcclClass, NicKind, Severity, Snapshot};

use super::Inputs;

type Rule = fn(&Inputs) -> Option<Finding>;

pub const RULES: &[Rule] = &[
    net_socket_fallback,
    gdr_disabled,
    shm_exhausted,
    p2p_not_used,
    env_override,
    rank_mismatch,
    ring_suboptimal,
    few_channels,
    cumem_fallback,
    bootstrap_interface,
    net_error,
    collective_timeout,
    small_messages,
];

fn warning_evidence(warning: &Warning) -> Evidence {
    let repeats = if warning.count > 1 { format!(" (×{})", warning.count) } else { String::new() };
    Evidence { at: format!("{}:{}", warning.file, warning.line), text: format!("{}{repeats}", warning.text) }
}

fn warnings_matching<'a>(report: &'a NcclReport, needles: &[&str]) -> Vec<&'a Warning> {
    report.warnings.iter().filter(|w| needles.iter().any(|n| w.text.contains(n))).collect()
}

fn fact(at: &str, text: String) -> Evidence {
    Evidence { at: at.into(), text }
}

/// The log line where the report first saw `key` (see `NcclReport::first_lines`),
/// with `more` appended; the bare fact when the line is not known.
fn first_line(report: &NcclReport, key: &str, fallback: String, more: &str) -> Evidence {
    match report.first_lines.get(key) {
        Some(line) => Evidence { at: format!("{}:{}", line.file, line.line), text: format!("{}{more}", line.text) },
        None => fact("report", format!("{fallback}{more}")),
    }
}

/// `via` strings of one transport kind: the first line of each, and how many there were.
fn via_of(report: &NcclReport, kind: TransportKind) -> Vec<Evidence> {
    report
        .via
        .iter()
        .filter(|(via, _)| topo_parsers::nccl_log::transport_kind(via) == kind)
        .map(|(via, lines)| {
            let more = if *lines > 1 { format!(" (first of {lines} lines via {via})") } else { String::new() };
            first_line(report, &format!("via/{via}"), format!("via {via}"), &more)
        })
        .collect()
}

fn net_socket_fallback(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let mut evidence = via_of(report, TransportKind::NetSocket);
    if report.network.used.iter().any(|n| n == "Socket") {
        evidence.push(first_line(report, "network/Socket", "Using network Socket".into(), ""));
    }
    if evidence.is_empty() {
        return None;
    }
    if report.network.ib_not_found {
        evidence.push(first_line(report, "net-ib-not-found", "NET/IB : No device found".into(), ""));
    }
    let mut rdma: Vec<String> = inputs
        .machine
        .map(|m| {
            m.topology
                .nics
                .iter()
                .filter(|n| matches!(n.kind, NicKind::Infiniband | NicKind::Roce))
                .map(|n| n.name.clone())
                .collect()
        })
        .unwrap_or_default();
    rdma.sort_by_key(|name| topo_model::matrix::natural_key(name));
    let severity = if rdma.is_empty() { Severity::Warning } else { Severity::Error };
    if !rdma.is_empty() {
        evidence.push(fact("snapshot", format!("RDMA devices on the node: {}", rdma.join(", "))));
    }
    let mut found = Finding::new(
        "net-socket-fallback",
        severity,
        "NCCL's network traffic goes over TCP sockets".into(),
        evidence,
        "The socket transport copies every message through the host and the kernel TCP stack: a fraction \
         of an InfiniBand/RoCE NIC's bandwidth, with far higher latency and CPU load.",
        "Check that the RDMA stack is visible to the job (ibv_devinfo inside the container, /dev/infiniband \
         mounted, the rdma-core libraries and the NCCL net plugin installed); unset NCCL_IB_DISABLE; set \
         NCCL_IB_HCA if the wrong devices are picked. If the node truly has no RDMA NIC this is expected.",
    );
    if !rdma.is_empty() {
        found.expected = Some(format!("NET/IB over {}", rdma.join(", ")));
        found.actual = Some("NET/Socket".into());
    }
    Some(found)
}

fn shm_exhausted(inputs: &Inputs) -> Option<Finding> {
    let hits = warnings_matching(inputs.report, &["/dev/shm", "shared memory segment", "shmutils"]);
    let evidence: Vec<Evidence> = hits.iter().map(|w| warning_evidence(w)).collect();
    (!evidence.is_empty()).then(|| {
        Finding::new(
            "shm-exhausted",
            Severity::Error,
            "NCCL could not create its shared-memory segments".into(),
            evidence,
            "Intra-node transports and proxies need /dev/shm segments; when they cannot be made, \
             communicator setup fails or falls back to slower paths.",
            "Give the container a larger /dev/shm (docker --shm-size=16g or --ipc=host; Kubernetes: an \
             emptyDir with medium: Memory mounted at /dev/shm), and clean stale /dev/shm/nccl-* files.",
        )
    })
}

fn p2p_not_used(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let mut evidence = via_of(report, TransportKind::Shm);
    evidence.extend(
        warnings_matching(report, &["Could not enable P2P", "P2P is disabled", "peer access"])
            .into_iter()
            .map(warning_evidence),
    );
    let limiting: Vec<String> = report
        .env_overrides
        .iter()
        .filter(|e| e.name == "NCCL_P2P_DISABLE" && e.value != "0" || e.name == "NCCL_P2P_LEVEL")
        .map(|e| format!("{}={}", e.name, e.value))
        .collect();
    if evidence.is_empty() {
        return None;
    }
    for setting in &limiting {
        evidence.push(first_line(report, &format!("env/{setting}"), format!("{setting} set by environment"), ""));
    }
    Some(Finding::new(
        "p2p-not-used",
        Severity::Warning,
        "GPUs on the same node talk through host shared memory, not P2P".into(),
        evidence,
        "SHM copies go GPU -> host memory -> GPU; P2P over NVLink or a shared PCIe switch moves data \
         directly, at several times the bandwidth.",
        if limiting.is_empty() {
            "Check `nvidia-smi topo -p2p r` for the GPU pairs, IOMMU/ACS settings that block peer access, and \
             that all ranks of the node see each other's GPUs (same container, CUDA_VISIBLE_DEVICES)."
        } else {
            "Remove the P2P-limiting setting from the job's environment unless it works around a known fault."
        },
    ))
}

/// Settings that change NCCL's choices; left over from debugging, they cost bandwidth.
const TUNING_VARIABLES: &[&str] = &[
    "NCCL_P2P_DISABLE",
    "NCCL_SHM_DISABLE",
    "NCCL_IB_DISABLE",
    "NCCL_P2P_LEVEL",
    "NCCL_MIN_NCHANNELS",
    "NCCL_MAX_NCHANNELS",
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_NET_GDR_LEVEL",
    "NCCL_NET_GDR_READ",
    "NCCL_CROSS_NIC",
    "NCCL_BUFFSIZE",
    "NCCL_NTHREADS",
    "NCCL_TREE_THRESHOLD",
    "NCCL_LL_THRESHOLD",
    "NCCL_CUMEM_ENABLE",
    "NCCL_NVLS_ENABLE",
    "NCCL_COLLNET_ENABLE",
];

fn env_override(inputs: &Inputs) -> Option<Finding> {
    let tuning: Vec<Evidence> = inputs
        .report
        .env_overrides
        .iter()
        .filter(|e| TUNING_VARIABLES.contains(&e.name.as_str()))
        // `NCCL_SHM_DISABLE=0` and friends restate the default.
        .filter(|e| !(e.name.ends_with("_DISABLE") && e.value == "0"))
        .map(|e| {
            let key = format!("env/{}={}", e.name, e.value);
            let hosts = format!(" (hosts: {})", e.hosts.join(", "));
            first_line(inputs.report, &key, format!("{} set by environment to {}", e.name, e.value), &hosts)
        })
        .collect();
    (!tuning.is_empty()).then(|| {
        Finding::new(
            "env-override",
            Severity::Warning,
            format!("{} NCCL tuning variable(s) set in the job's environment", tuning.len()),
            tuning,
            "These override NCCL's own choice of transport, algorithm, protocol or channel count; set once to \
             debug a fault, they stay and quietly cap bandwidth on hardware that no longer needs them.",
            "Remove them unless each is documented as a workaround for this cluster; compare a run without them.",
        )
    })
}

/// Interfaces that cannot carry traffic between nodes, or are container plumbing.
fn unsuitable_interface(name: &str) -> bool {
    let name = name.split(':').next().unwrap_or(name);
    name == "lo"
        || ["docker", "veth", "virbr", "br-", "cni", "flannel", "tun", "tap", "wg", "tailscale", "CloudflareWARP"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

fn bootstrap_interface(inputs: &Inputs) -> Option<Finding> {
    let network = &inputs.report.network;
    let mut evidence: Vec<Evidence> = network
        .bootstrap
        .iter()
        .filter(|i| unsuitable_interface(i))
        .map(|i| first_line(inputs.report, &format!("bootstrap/{i}"), format!("Bootstrap : Using {i}"), ""))
        .collect();
    evidence.extend(
        network
            .devices
            .iter()
            .filter(|d| unsuitable_interface(d))
            .map(|d| fact("network", format!("NET/Socket device {d}"))),
    );
    let mut names: Vec<&str> = network.bootstrap.iter().map(|i| i.split(':').next().unwrap_or(i)).collect();
    names.sort_unstable();
    names.dedup();
    if names.len() > 1 && inputs.report.hosts.len() > 1 {
        evidence.push(fact("bootstrap", format!("interface names differ between hosts: {}", names.join(", "))));
    }
    (!evidence.is_empty()).then(|| {
        Finding::new(
            "bootstrap-interface",
            Severity::Warning,
            "NCCL picked a loopback, container or VPN interface".into(),
            evidence,
            "Bootstrap and socket traffic on loopback cannot reach other nodes (the job hangs at init when \
             multi-node); on docker/VPN interfaces it is slow or blocked.",
            "Set NCCL_SOCKET_IFNAME to the cluster network interface (e.g. NCCL_SOCKET_IFNAME=eth0, or \
             =^lo,docker to exclude), the same on every host.",
        )
    })
}

fn net_error(inputs: &Inputs) -> Option<Finding> {
    let needles = [
        "Got completion",
        "status=12",
        "retry exceeded",
        "Retry Exceeded",
        "async event",
        "IBV_EVENT",
        "NET/OFI",
        "Connection reset",
        "Connection refused",
        "remote process exited",
    ];
    let evidence: Vec<Evidence> =
        warnings_matching(inputs.report, &needles).into_iter().map(warning_evidence).collect();
    (!evidence.is_empty()).then(|| {
        Finding::new(
            "net-error",
            Severity::Error,
            "The network transport reported errors".into(),
            evidence,
            "Completion errors, retries and transport failures abort collectives or make NCCL retry, stalling \
             every rank of the communicator.",
            "Check the named NIC and port (ibstat, `ibv_devinfo -v`, switch port counters), the fabric plugin's \
             configuration, and whether a peer process died first (its own log is then the root cause).",
        )
    })
}

fn small_messages(inputs: &Inputs) -> Option<Finding> {
    const SMALL: u64 = 1 << 20;
    const MIN_CALLS: u64 = 100;
    let (mut calls, mut small) = (0u64, 0u64);
    for stats in inputs.report.collectives.values() {
        calls += stats.calls;
        small += stats.size_histogram.iter().filter(|(upper, _)| *upper <= SMALL).map(|(_, n)| n).sum::<u64>();
    }
    if calls < MIN_CALLS || small * 2 <= calls {
        return None;
    }
    let evidence = inputs
        .report
        .collectives
        .iter()
        .map(|(name, stats)| {
            let small: u64 = stats.size_histogram.iter().filter(|(upper, _)| *upper <= SMALL).map(|(_, n)| n).sum();
            fact("COLL lines", format!("{name}: {} calls, {small} of 1 MiB or less", stats.calls))
        })
        .collect();
    Some(Finding::new(
        "small-messages",
        Severity::Info,
        format!("{small} of {calls} collectives move 1 MiB or less"),
        evidence,
        "Small collectives are latency-bound: each pays the launch and synchronisation cost, so the links run \
         far below their bandwidth.",
        "Bucket gradients into larger all-reduces (DDP bucket_cap_mb, FSDP/ZeRO bucket sizes), overlap \
         communication with compute, or use CUDA graphs to cut launch overhead.",
    ))
}

fn rdma_nics(machine: &Snapshot) -> Vec<&topo_model::Nic> {
    machine.topology.nics.iter().filter(|n| matches!(n.kind, NicKind::Infiniband | NicKind::Roce)).collect()
}

/// GPUDirect RDMA off: an HCA NCCL says has it disabled, or InfiniBand hops
/// without `/GDRDMA`. An error when the snapshot shows a GPU and an RDMA NIC
/// under one PCIe switch, where GDR should work.
fn gdr_disabled(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    // NET/Socket prints the same "Disabled" line for its interfaces: not a GDR fault.
    let socket_device =
        |hca: &str| report.first_lines.get(&format!("gdr/{hca}")).is_some_and(|l| l.text.starts_with("NET/Socket"));
    let mut evidence: Vec<Evidence> = report
        .network
        .gdr_by_hca
        .iter()
        .filter(|(hca, enabled)| !**enabled && !socket_device(hca))
        .map(|(hca, _)| {
            first_line(report, &format!("gdr/{hca}"), format!("GPU Direct RDMA Disabled for HCA '{hca}'"), "")
        })
        .collect();
    let ib_hops = via_of(report, TransportKind::NetIb);
    // GDRDMA on receives only is GDR read left off (the default before 2.12), not GDR missing.
    if !ib_hops.iter().any(|e| e.text.contains("GDRDMA")) {
        evidence.extend(ib_hops.iter().cloned());
    }
    if evidence.is_empty() {
        return None;
    }
    // A job that used no network loses nothing to it; the node's state is still worth knowing.
    let used_network = report.via.keys().any(|v| v.starts_with("NET/"));
    let near = inputs.machine.and_then(|m| {
        let topology = &m.topology;
        topology.gpus.iter().find_map(|g| {
            rdma_nics(m).into_iter().find_map(|n| {
                let class = topology.pcie_path(g.bus_id, n.bus_id?).nccl;
                matches!(class, NcclClass::Pix | NcclClass::Pxb)
                    .then(|| format!("{} and {} share a PCIe switch ({class:?})", g.bus_id, n.name))
            })
        })
    });
    let severity = match (used_network, near.is_some()) {
        (false, _) => Severity::Info,
        (true, true) => Severity::Error,
        (true, false) => Severity::Warning,
    };
    if let Some(pair) = near {
        evidence.push(fact("snapshot", pair));
    }
    let title = if used_network {
        "GPUDirect RDMA is not used for network traffic"
    } else {
        "GPUDirect RDMA is disabled on this node's HCAs (this job used no network)"
    };
    Some(Finding::new(
        "gdr-disabled",
        severity,
        title.into(),
        evidence,
        "Without GDR the NIC reads and writes GPU memory through a bounce buffer in host memory: an extra copy per \
         message and a PCIe round trip through the CPU, capping inter-node bandwidth.",
        "Load nvidia_peermem (or use DMA-BUF with the open kernel modules), check NCCL_NET_GDR_LEVEL is not \
         limiting it, and that GPU and NIC sit under the same PCIe switch.",
    ))
}

/// Ranks that should agree but do not: NCCL versions, or environment overrides
/// set on some hosts only or with different values.
fn rank_mismatch(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let mut evidence = Vec::new();
    if report.nccl_versions.len() > 1 {
        evidence.push(fact("NCCL version lines", format!("versions in one job: {}", report.nccl_versions.join(", "))));
    }
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
            "Ranks of one job run with different NCCL versions, settings or NICs".into(),
            evidence,
            "Ranks that disagree on protocol, channel counts or transports build mismatched connections: hangs, \
             `receiving X bytes instead of Y`, or one slow rank.",
            "Run every rank from the same image with the same environment (and /etc/nccl.conf); set per-job \
             variables in the launcher, not per host.",
        )
    })
}

/// Host of each rank in a communicator, where the log says.
fn rank_hosts(comm: &Communicator) -> BTreeMap<u32, &str> {
    comm.ranks.iter().filter_map(|r| Some((r.rank, r.host.as_deref()?))).collect()
}

/// Rings that leave a node more often than needed (a ring over N nodes must
/// cross N times), and same-node hops through SHM or the network where the
/// GPUs have NVLink (with `--from`).
fn ring_suboptimal(inputs: &Inputs) -> Option<Finding> {
    let mut evidence = Vec::new();
    for comm in &inputs.report.communicators {
        let hosts = rank_hosts(comm);
        let nodes: BTreeSet<&str> = hosts.values().copied().collect();
        if nodes.len() > 1 {
            for ring in &comm.rings {
                let known = ring.order.iter().all(|r| hosts.contains_key(r));
                let crossings = (0..ring.order.len())
                    .filter(|&i| hosts.get(&ring.order[i]) != hosts.get(&ring.order[(i + 1) % ring.order.len()]))
                    .count();
                if known && crossings > nodes.len() {
                    let text = format!(
                        "comm {} ring {:02} crosses nodes {crossings} times for {} nodes",
                        comm.id,
                        ring.channel,
                        nodes.len()
                    );
                    evidence.push(fact("rings", text));
                }
            }
        }
        for connection in &comm.connections {
            let nvlink = connection.hardware.as_ref().is_some_and(|h| h.smi.starts_with("NV"));
            let slow =
                matches!(connection.transport, TransportKind::Shm | TransportKind::NetIb | TransportKind::NetSocket);
            if nvlink && slow && connection.cross_node != Some(true) {
                let hw = connection.hardware.as_ref().map_or(String::new(), |h| h.smi.clone());
                let text = format!(
                    "comm {} channel {:02}: {} -> {} via {} although the GPUs are joined by {hw}",
                    comm.id,
                    connection.channel,
                    connection.from,
                    connection.to.map_or("?".into(), |t| t.to_string()),
                    connection.detail
                );
                evidence.push(fact("connections", text));
            }
        }
    }
    (!evidence.is_empty()).then(|| {
        Finding::new(
            "ring-suboptimal",
            Severity::Warning,
            "Rings take slower paths than the hardware offers".into(),
            evidence,
            "Every extra node crossing puts the ring's traffic on the network (tens of GB/s) instead of NVLink \
             (hundreds); a same-node hop through SHM or the NIC where NVLink exists wastes the fastest link.",
            "Check rank placement (ranks of a node contiguous: srun --distribution=block), that the GPUs can use \
             P2P (no NCCL_P2P_DISABLE / P2P_LEVEL), and that NCCL sees the real topology (NCCL_TOPO_FILE in VMs).",
        )
    })
}

/// Channel counts below what the hardware can feed.
fn few_channels(inputs: &Inputs) -> Option<Finding> {
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

fn cumem_fallback(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let mut evidence: Vec<Evidence> =
        warnings_matching(report, &["cuMem host allocations do not appear to be working"])
            .into_iter()
            .map(warning_evidence)
            .collect();
    if report.first_lines.contains_key("cumem-fallback") {
        evidence.push(first_line(report, "cumem-fallback", String::new(), ""));
    }
    (!evidence.is_empty()).then(|| {
        Finding::new(
            "cumem-fallback",
            Severity::Warning,
            "cuMem host allocations failed; NCCL fell back to /dev/shm".into(),
            evidence,
            "Ranks that choose different host-memory paths fail to attach each other's segments (`Error while \
             attaching to shared memory segment ... (size 0)`), and /dev/shm becomes a hard limit.",
            "In containers add `--cap-add SYS_NICE` (NUMA-aware cuMem), or set NCCL_CUMEM_HOST_ENABLE=0 on every \
             rank; newer NCCL and drivers fix several causes.",
        )
    })
}

/// Framework watchdog timeouts and NCCL's own, with where each rank stopped.
fn collective_timeout(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let mut evidence: Vec<Evidence> = report
        .timeouts
        .iter()
        .map(|t| {
            let rank = t.rank.map_or("rank ?".into(), |r| format!("rank {r}"));
            let ran = match (t.ran_ms, t.timeout_ms) {
                (Some(ran), Some(limit)) => format!(" ran {ran} ms of its {limit} ms limit"),
                _ => String::new(),
            };
            let last = t.last_completed.map_or(String::new(), |c| format!("; last completed work {c}"));
            let seq = t.seq.map_or(String::new(), |s| format!(" #{s}"));
            Evidence { at: format!("{}:{}", t.file, t.line), text: format!("{rank}: {}{seq}{ran}{last}", t.op) }
        })
        .collect();
    evidence
        .extend(warnings_matching(report, &["Timeout", "timed out", "Timed out"]).into_iter().map(warning_evidence));
    if evidence.is_empty() {
        return None;
    }
    // Where each process stopped, from COLL lines: the one behind is the suspect.
    let mut by_comm: BTreeMap<&str, Vec<&topo_model::nccl::RankProgress>> = BTreeMap::new();
    for progress in &report.progress {
        by_comm.entry(progress.comm.as_str()).or_default().push(progress);
    }
    for (comm, processes) in by_comm {
        let Some(lowest) = processes.iter().map(|p| p.last_op_count).min() else { continue };
        let highest = processes.iter().map(|p| p.last_op_count).max().unwrap_or(lowest);
        for p in processes.iter().filter(|p| lowest < highest && p.last_op_count == lowest) {
            let who = format!("{}:{}", p.host.as_deref().unwrap_or("?"), p.pid.map_or("?".into(), |x| x.to_string()));
            let text = format!(
                "comm {comm}: {who} last issued {} opCount {:#x}, others reached {highest:#x}",
                p.last_op, p.last_op_count
            );
            evidence.push(fact("COLL lines", text));
        }
    }
    Some(Finding::new(
        "collective-timeout",
        Severity::Error,
        "Collectives timed out".into(),
        evidence,
        "A collective completes only when every rank joins it: one rank that stopped (crashed, stuck in compute or \
         I/O, or on a dead link) holds all the others until the watchdog kills the job.",
        "Find the rank that did not arrive (lowest last opCount or completed work, or the one with an earlier \
         error in its own log); check that node's GPUs, NICs and host logs (XIDs, link errors) before restarting.",
    ))
}
