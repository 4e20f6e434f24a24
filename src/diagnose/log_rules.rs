//! Rules that read the NCCL report, with the snapshot where it sharpens the
//! verdict (a socket fallback on a node that has InfiniBand is an error, not a choice).

use topo_model::nccl::{NcclReport, TransportKind, Warning};
use topo_model::{Evidence, Finding, NicKind, Severity};

use super::Inputs;

type Rule = fn(&Inputs) -> Option<Finding>;

pub const RULES: &[Rule] =
    &[net_socket_fallback, shm_exhausted, p2p_not_used, env_override, bootstrap_interface, net_error, small_messages];

/// At most this many pieces of evidence per finding; the count says how many more.
const MAX_EVIDENCE: usize = 8;

fn finding(code: &str, severity: Severity, title: String, evidence: Vec<Evidence>, why: &str, fix: &str) -> Finding {
    let mut evidence = evidence;
    if evidence.len() > MAX_EVIDENCE {
        let more = evidence.len() - MAX_EVIDENCE;
        evidence.truncate(MAX_EVIDENCE);
        evidence.push(Evidence { at: "…".into(), text: format!("{more} more") });
    }
    Finding {
        code: code.into(),
        severity,
        title,
        evidence,
        why: why.into(),
        expected: None,
        actual: None,
        fix: fix.into(),
    }
}

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
    let mut found = finding(
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
        finding(
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
    Some(finding(
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
        finding(
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
    (!evidence.is_empty()).then(|| {
        finding(
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
        finding(
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
    Some(finding(
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
