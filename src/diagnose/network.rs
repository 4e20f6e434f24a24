//! Rules about the network: socket fallback, GPUDirect RDMA, the bootstrap
//! interface and transport errors.

use topo_model::nccl::TransportKind;
use topo_model::{Evidence, Finding, NcclClass, NicKind, Severity, Snapshot};
use topo_parsers::nccl_log::catalogue::CATALOGUE;

use super::Inputs;
use super::evidence::{fact, first_line, via_of};

pub(super) fn net_socket_fallback(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    // On one node no traffic leaves it: the socket transport is only NCCL's
    // network of record, not a path anything takes.
    let scope = inputs.scope;
    if scope == super::Scope::SingleNode {
        return None;
    }
    let mut evidence = via_of(report, TransportKind::NetSocket);
    if report.network.used.iter().any(|n| n == "Socket") {
        // Before 2.19 nothing says `Using network Socket`: a libibverbs that
        // would not load is why the socket transport was left.
        let key = match report.first_lines.contains_key("network/Socket") {
            false if report.first_lines.contains_key("libibverbs-missing") => "libibverbs-missing",
            _ => "network/Socket",
        };
        evidence.push(first_line(report, key, "Using network Socket".into(), ""));
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
    let severity = match (rdma.is_empty(), scope) {
        (false, _) => Severity::Error,
        (true, super::Scope::Unknown) => Severity::Info,
        (true, _) => Severity::Warning,
    };
    if scope == super::Scope::Unknown {
        evidence.push(fact("scope", "the log does not show whether the job spans several nodes".into()));
    }
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

/// NCCL could not load libibverbs (a WARN up to 2.10, an INFO line since:
/// `Failed to open libibverbs.so[.1]`, 2.30's `Count not open
/// libibverbs.so.1`) and its traffic went over sockets: the missing library
/// is why. Nothing on one node, where no traffic leaves it.
pub(super) fn verbs_not_loaded(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let scope = inputs.scope;
    if !report.first_lines.contains_key("libibverbs-missing")
        || scope == super::Scope::SingleNode
        || !report.network.used.iter().any(|n| n == "Socket")
    {
        return None;
    }
    let evidence = vec![first_line(report, "libibverbs-missing", "Failed to open libibverbs.so[.1]".into(), "")];
    let severity = if scope == super::Scope::Unknown { Severity::Info } else { Severity::Warning };
    Some(Finding::new(
        "net-plugin-failure",
        severity,
        "NCCL could not load libibverbs: its InfiniBand/RoCE transport had no devices".into(),
        evidence,
        "NCCL opens libibverbs at run time; without it the IB transport finds nothing and traffic between \
         nodes goes over TCP sockets. Normal on nodes without RDMA NICs; where they exist, the container \
         lacks rdma-core (libibverbs and its provider, e.g. libmlx5) or LD_LIBRARY_PATH hides it.",
        "Inside the job: ls /usr/lib/*/libibverbs.so*, ibv_devinfo; install rdma-core (ibverbs-providers) \
         in the image or mount the host's, and /dev/infiniband; NCCL_IBVERBS_LIB names another library.",
    ))
}

pub(super) fn rdma_nics(machine: &Snapshot) -> Vec<&topo_model::Nic> {
    machine.topology.nics.iter().filter(|n| matches!(n.kind, NicKind::Infiniband | NicKind::Roce)).collect()
}

/// GPUDirect RDMA off: an HCA NCCL says has it disabled, or InfiniBand hops
/// without `/GDRDMA`. An error when the snapshot shows a GPU and an RDMA NIC
/// under one PCIe switch, where GDR should work.
pub(super) fn gdr_disabled(inputs: &Inputs) -> Option<Finding> {
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
    // RDMA networks that can read GPU memory directly: NCCL's IB transport and
    // aws-ofi-nccl (EFA); `/GDRDMA` marks the hops that do.
    let mut rdma_hops = via_of(report, TransportKind::NetIb);
    rdma_hops.extend(via_of(report, TransportKind::NetOfi));
    // GDRDMA on receives only is GDR read left off (the default before 2.12), not GDR missing.
    if !rdma_hops.iter().any(|e| e.text.contains("GDRDMA")) {
        evidence.extend(rdma_hops);
    }
    let (uneven, receivers) = receives_without_gdr(report);
    for via in uneven {
        let e =
            first_line(report, &format!("via/{via}"), format!("[receive] via {via}"), " (a receive without GDRDMA)");
        if !evidence.contains(&e) {
            evidence.push(e);
        }
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
    let found = Finding::new(
        "gdr-disabled",
        severity,
        title.into(),
        evidence,
        "Without GDR the NIC reads and writes GPU memory through a bounce buffer in host memory: an extra copy per \
         message and a PCIe round trip through the CPU, capping inter-node bandwidth.",
        "Load nvidia_peermem (or use DMA-BUF with the open kernel modules), check NCCL_NET_GDR_LEVEL is not \
         limiting it, and that GPU and NIC sit under the same PCIe switch. On AWS EFA (aws-ofi-nccl), only \
         instances whose EFA has RDMA read (p4d, p5 and later) can read GPU memory: there, FI_EFA_USE_DEVICE_RDMA=1 \
         and an EFA driver and libfabric with FI_HMEM; g4dn and p3dn have no such path.",
    );
    Some(if receivers.is_empty() { found } else { found.on(Vec::new(), receivers) })
}

/// Receives over the network that do without GPUDirect RDMA where other hops
/// of the job use it: NCCL writes received data straight into GPU memory
/// whenever that GPU and its NIC allow it (GDR read for sends is the optional
/// half), so those receivers' node lacks it: nvidia-peermem not loaded there,
/// or the NIC too far from that GPU (NCCL_NET_GDR_LEVEL). The transports
/// without GDR, and the receiving ranks.
fn receives_without_gdr(report: &topo_model::nccl::NcclReport) -> (Vec<String>, Vec<u32>) {
    use topo_model::nccl::Direction;
    let hops = || {
        report
            .communicators
            .iter()
            .flat_map(|c| &c.connections)
            .filter(|c| matches!(c.transport, TransportKind::NetIb | TransportKind::NetOfi))
    };
    if !hops().any(|c| c.gdr) {
        return (Vec::new(), Vec::new());
    }
    let without: Vec<_> = hops().filter(|c| c.direction == Direction::Receive && !c.gdr).collect();
    let mut vias: Vec<String> = without.iter().map(|c| c.detail.clone()).collect();
    vias.sort();
    vias.dedup();
    let mut ranks: Vec<u32> = without.iter().filter_map(|c| c.to).collect();
    ranks.sort_unstable();
    ranks.dedup();
    (vias, ranks)
}

/// Interfaces that cannot carry traffic between nodes, or are container plumbing,
/// by name (`lo`, `docker0`, `veth...`) or by address: the message table's
/// unreachable addresses (loopback, link-local, docker's default bridge),
/// the same rows that explain a connect failure to such an address.
pub(super) fn unsuitable_interface(interface: &str) -> bool {
    let (name, address) = interface.split_once(':').unwrap_or((interface, ""));
    // `eno1:avahi:...`: avahi-autoipd's alias, which holds a link-local address.
    address.starts_with("avahi:")
        || name == "lo"
        || ["docker", "veth", "virbr", "br-", "cni", "flannel", "tun", "tap", "wg", "tailscale", "CloudflareWARP"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
        || CATALOGUE.unreachable_interface(interface).is_some()
}

/// A link-local address, which can vanish under a running job (avahi-autoipd
/// drops its alias once DHCP answers): a risk on one node too (corpus 1584,
/// `Software caused connection abort` on one 8-GPU host).
fn transient_address(interface: &str) -> bool {
    let address = interface.split_once(':').map_or("", |(_, a)| a);
    address.starts_with("avahi:") || address.starts_with("169.254.") || address.starts_with("fe80:")
}

pub(super) fn bootstrap_interface(inputs: &Inputs) -> Option<Finding> {
    let network = &inputs.report.network;
    // Loopback and container bridges are fine when every rank is on one node;
    // a link-local address is still one that can go away.
    let scope = inputs.scope;
    if scope == super::Scope::SingleNode {
        // The first interface listed is the one the bootstrap binds (2.2-2.4
        // list every socket interface under `NET : Using interface`).
        let mut evidence: Vec<Evidence> = network
            .bootstrap
            .first()
            .into_iter()
            .filter(|i| transient_address(i))
            .map(|i| first_line(inputs.report, &format!("bootstrap/{i}"), format!("Bootstrap : Using {i}"), ""))
            .collect();
        if evidence.is_empty() {
            return None;
        }
        evidence.push(fact("scope", "every rank is on one node: only the address's lifetime matters".into()));
        return Some(Finding::new(
            "bootstrap-interface",
            Severity::Info,
            "NCCL's bootstrap uses a link-local address".into(),
            evidence,
            "On one node a link-local (169.254/16, fe80::, avahi-autoipd alias) address works only while it \
             lasts: avahi-autoipd removes its alias once DHCP answers, and connections to it then abort.",
            "Set NCCL_SOCKET_IFNAME to the host's routed interface (e.g. NCCL_SOCKET_IFNAME=eno1, or =lo on a \
             single node); disable avahi-autoipd on compute nodes.",
        ));
    }
    let mut evidence: Vec<Evidence> = network
        .bootstrap
        .iter()
        .filter(|i| unsuitable_interface(i))
        .map(|i| first_line(inputs.report, &format!("bootstrap/{i}"), format!("Bootstrap : Using {i}"), ""))
        .collect();
    let mut listed: Vec<&String> = network.devices.iter().chain(&network.socket_interfaces).collect();
    listed.sort_unstable();
    listed.dedup();
    evidence.extend(
        listed
            .into_iter()
            .filter(|d| unsuitable_interface(d))
            .map(|d| fact("network", format!("socket interface {d}"))),
    );
    // An interface whose address reaches no other node (an IPv6 link-local
    // one beside the routed one, as on cloud VMs' accelerated-networking VFs):
    // NCCL's socket transport spreads connections over every interface listed.
    evidence.extend(network.socket_unreachable.iter().map(|entry| {
        let meaning = CATALOGUE.unreachable_interface(entry).map_or("", |a| a.meaning);
        let more = format!(" ({entry}: {meaning})");
        first_line(inputs.report, &format!("socket/{entry}"), format!("NET/Socket : Using {entry}"), &more)
    }));
    let mut names: Vec<&str> = network.bootstrap.iter().map(|i| i.split(':').next().unwrap_or(i)).collect();
    names.sort_unstable();
    names.dedup();
    let unsuitable = !evidence.is_empty();
    if names.len() > 1 && inputs.report.hosts.len() > 1 {
        evidence.push(fact("bootstrap", format!("interface names differ between hosts: {}", names.join(", "))));
    }
    if !unsuitable {
        // Names alone: hosts name their NICs differently more often than
        // they sit on different networks (in none of the corpus's twelve such
        // logs did the thread blame it; 1740's timeout is unexplained): a
        // fact to check when init hangs, no fault.
        return (!evidence.is_empty()).then(|| {
            Finding::new(
                "bootstrap-interface",
                Severity::Info,
                "Hosts bootstrap over differently named interfaces".into(),
                evidence,
                "NCCL picks each host's bootstrap interface on its own; differently named interfaces are fine \
                 when they are on one network, and the cause of a hang at init when they are not (one host on \
                 IPoIB, another on Ethernet).",
                "If init hangs: check the addresses are on one routed network, and pin the interface with \
                 NCCL_SOCKET_IFNAME (a prefix list such as =eth,ens,eno matches each host's name).",
            )
        });
    }
    Some(Finding::new(
        "bootstrap-interface",
        if scope == super::Scope::Unknown { Severity::Info } else { Severity::Warning },
        "NCCL picked a loopback, container, link-local or VPN interface".into(),
        evidence,
        "Bootstrap and socket traffic on loopback cannot reach other nodes (the job hangs at init when \
         multi-node); on docker/VPN interfaces it is slow or blocked.",
        "Set NCCL_SOCKET_IFNAME to the cluster network interface (e.g. NCCL_SOCKET_IFNAME=eth0, or \
         =^lo,docker to exclude), the same on every host.",
    ))
}

/// One host name, several machines: the same interface of "one host" at
/// different addresses (`eth1:100.102.32.176` and `eth1:100.102.32.175`, both
/// from `node1`). An interface holds one address per machine; two mean two
/// machines behind one name, which NCCL before 2.5 took for one node.
pub(super) fn shared_host_name(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let [host] = report.hosts.as_slice() else { return None };
    let mut by_interface: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> = Default::default();
    for entry in &report.network.bootstrap {
        let Some((name, rest)) = entry.split_once(':') else { continue };
        let address = rest.split('<').next().unwrap_or(rest);
        if !address.is_empty() {
            by_interface.entry(name).or_default().insert(address);
        }
    }
    let evidence: Vec<Evidence> = by_interface
        .iter()
        .filter(|(_, addresses)| addresses.len() > 1)
        .map(|(name, addresses)| {
            let list: Vec<&str> = addresses.iter().copied().collect();
            fact("bootstrap", format!("{host}'s {name} at {} addresses: {}", list.len(), list.join(", ")))
        })
        .collect();
    if evidence.is_empty() {
        return None;
    }
    // NCCL itself is misled only before 2.5; later, only the log's reader is
    // (and a log whose host names were redacted reads the same way).
    let misled = report.nccl_versions.iter().any(|v| version_below(v, (2, 5)));
    let severity = if misled { Severity::Error } else { Severity::Warning };
    Some(super::messages::of_class("host-name-shared", severity, evidence)?.on([host.clone()], []))
}

/// Whether an `NCCL version` string (`2.4.8+cuda10.1`) is older than `major.minor`.
fn version_below(version: &str, (major, minor): (u32, u32)) -> bool {
    let mut parts = version.split(['.', '+']).map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(a), Some(b)) => (a, b) < (major, minor),
        _ => false,
    }
}

/// Hosts that loaded different network plugins (or one a plugin and another
/// NCCL's internal transports): a plugin installed on some nodes only, or two
/// plugin versions. Their ranks then speak different network protocols and
/// the job fails at connection setup or hangs (NVIDIA/nccl#1634: HPC-X's
/// SHARP plugin on one of two nodes).
pub(super) fn plugin_mismatch(inputs: &Inputs) -> Option<Finding> {
    let by_host = &inputs.report.network.plugins_by_host;
    let mut by_plugin: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for (host, plugin) in by_host {
        by_plugin.entry(plugin.as_str()).or_default().push(host.as_str());
    }
    if by_plugin.len() < 2 {
        return None;
    }
    let evidence = by_plugin
        .iter()
        .map(|(plugin, hosts)| fact("NET/Plugin lines", format!("{}: {plugin}", hosts.join(", "))))
        .collect();
    let mut finding = super::messages::of_class("version-mismatch", Severity::Error, evidence)?;
    finding.title = "Hosts load different network plugins (a plugin on some nodes only)".to_string();
    Some(finding.on(by_host.keys().cloned(), []))
}

/// How NCCL names the GIDs of a failed completion (`localGid fe80::... remoteGid
/// fe80::...`; 2.19+ prints `remoteGids` glued to the address).
const GID_KEYS: [&str; 3] = ["localGid", "remoteGids", "remoteGid"];

/// The IPv6 link-local prefix: a GID of index 0 or 1 (RoCE v1, or v2 without
/// an IPv4 address), which no router forwards.
const LINK_LOCAL: &str = "fe80:";

/// The GIDs a completion error names.
fn gids_of(text: &str) -> Vec<&str> {
    GID_KEYS
        .iter()
        .filter_map(|key| {
            let at = text.find(key)? + key.len();
            text[at..].split_whitespace().next()
        })
        .collect()
}

/// RoCE completions that ran out of retries (status 12) between link-local
/// GIDs: the traffic had no routable address to go to. The GID index is the
/// usual fix (corpus 1323, 2341), where a bare retry-exceeded only suspects it.
pub(super) fn link_local_gids(inputs: &Inputs) -> Option<Finding> {
    let retried = |text: &str| CATALOGUE.completion_status(text).is_some_and(|s| s.code == RETRY_EXCEEDED);
    let linked: Vec<_> = inputs
        .report
        .warnings
        .iter()
        .filter(|w| retried(&w.text) && gids_of(&w.text).iter().any(|g| g.starts_with(LINK_LOCAL)))
        .collect();
    if linked.is_empty() {
        return None;
    }
    let evidence = linked.iter().map(|w| super::evidence::warning_evidence(w)).collect();
    let hosts: Vec<String> = linked.iter().flat_map(|w| w.hosts.iter().cloned().chain(w.host.clone())).collect();
    let mut finding = super::messages::of_class("roce-gid-mismatch", Severity::Warning, evidence)?;
    finding.title = "RoCE completions ran out of retries between link-local GIDs (fe80::)".to_string();
    finding.why = "The failed completions' GIDs are IPv6 link-local (GID index 0 or 1: RoCE v1, or a v2 GID of an \
                   interface without an IPv4 address). Such a GID carries no routable address: across a routed \
                   RoCE fabric or between subnets the packets never reach the peer, and the NIC's retries run out \
                   (status 12)."
        .to_string();
    finding.fix = "Run show_gids on every node and set NCCL_IB_GID_INDEX to the RoCE v2 GID of the port's IPv4 \
                   address (often 3), the same on all nodes; NCCL 2.21+ picks it itself once the RoCE interfaces \
                   have IPv4 addresses."
        .to_string();
    Some(finding.on(hosts, []))
}

/// ibv_wc_status 12, IBV_WC_RETRY_EXC_ERR (verbs.h).
const RETRY_EXCEEDED: i64 = 12;
