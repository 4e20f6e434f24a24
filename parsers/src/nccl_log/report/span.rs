//! How many nodes a job spans when its lines name fewer hosts than it had.
//!
//! One node's lines of a multi-node job are common (each node writes its own
//! file; a user pastes the one that failed). The hosts named then count one
//! node, but the lines often prove there were others: a hop NCCL sends over
//! the network, or a peer address on the data path or outside the node's own
//! interfaces. `nodes` is then a lower bound, and the report says so rather
//! than print a count the log cannot support.

use topo_model::nccl::NcclReport;

use super::super::catalogue::CATALOGUE;

/// What stands before each `<port>` of a line: NCCL writes a peer as
/// `address<port>` or `name<port>`. Interface listings' `<0>` are not peers.
fn peers(text: &str) -> impl Iterator<Item = &str> {
    text.match_indices('<').filter_map(|(at, _)| {
        let port = text[at + 1..].split('>').next()?;
        if port.is_empty() || port == "0" || !port.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let before = &text[..at];
        let start = before.rfind([' ', '\t', ',', '(', '=']).map_or(0, |i| i + 1);
        Some(&before[start..])
    })
}

/// The peer addresses a line names in NCCL's `address<port>` form
/// (`Got completion from peer 10.2.0.5<33092>`, `Connect to 192.168.102.1<38007>`,
/// `[fe80::1%ib0]<5000>`).
fn peer_addresses(text: &str) -> impl Iterator<Item = &str> {
    peers(text).filter_map(|peer| {
        let address = peer.trim_start_matches('[').trim_end_matches(']');
        // IPv6 may carry a zone after `%` (`fe80::1%ib0`).
        let bare = address.split('%').next().unwrap_or(address);
        let looks_like_ip = bare.contains('.') && bare.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            || bare.contains(':') && bare.bytes().all(|b| b.is_ascii_hexdigit() || b == b':');
        looks_like_ip.then_some(address)
    })
}

/// The peers a line names by host name in NCCL's `name<port>` form
/// (`Connection closed by remote peer node-2.cluster.internal<55912>`, what
/// getnameinfo gave NCCL), as their short names: not addresses, not
/// `localhost`.
fn peer_names(text: &str) -> impl Iterator<Item = &str> {
    peers(text).filter_map(|name| {
        let short = name.split('.').next().unwrap_or(name);
        let host_like = short.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && short.bytes().any(|b| b.is_ascii_alphabetic())
            && !short.eq_ignore_ascii_case("localhost");
        // An address is not a name (`fe80::1`, `abcd::2`: read by `peer_addresses`).
        let address = name.bytes().all(|b| b.is_ascii_hexdigit() || b == b'.' || b == b':');
        (host_like && !address).then_some(short)
    })
}

/// The addresses of the node's own interfaces as NCCL listed them
/// (`eth0:10.0.0.1<0>`, `OOB ib0:10.128.31.149<0>`, `bond0:fe80::1%bond0<0>`).
fn own_addresses(report: &NcclReport) -> Vec<&str> {
    let network = &report.network;
    network
        .bootstrap
        .iter()
        .chain(&network.socket_interfaces)
        .chain(&network.devices)
        .filter_map(|listed| {
            let (_, address) = listed.split_once(':')?;
            let address = address.split('<').next()?;
            Some(address.split('%').next().unwrap_or(address))
        })
        .filter(|a| !a.is_empty())
        .collect()
}

fn loopback(address: &str) -> bool {
    address.starts_with("127.") || address == "::1"
}

/// NCCL sends over the network within a node only when both P2P and SHM are
/// switched off; a network hop then proves nothing about other nodes.
fn network_used_within_nodes(report: &NcclReport) -> bool {
    let off = |name: &str| report.env_overrides.iter().any(|e| e.name == name && e.value.trim() == "1");
    off("NCCL_P2P_DISABLE") && off("NCCL_SHM_DISABLE")
}

/// Whether the lines prove a peer on another node than the hosts they name:
/// a hop over the network, a peer on a network transport's data path, or a
/// peer address that is none of the node's own.
pub(super) fn remote_peer_shown(report: &NcclReport) -> bool {
    if network_used_within_nodes(report) {
        return false;
    }
    let network_hop = report.communicators.iter().flat_map(|c| &c.connections).any(|c| c.cross_node == Some(true));
    if network_hop {
        return true;
    }
    let own = own_addresses(report);
    // Host names as NCCL's prefixes print them are short (gethostname up to
    // the first `.`); a peer named by another short name is another machine.
    let own_names: Vec<&str> = report.hosts.iter().map(|h| h.split('.').next().unwrap_or(h)).collect();
    report.warnings.iter().chain(&report.framework_errors).any(|w| {
        let on_data_path = w.source.as_deref().and_then(|s| CATALOGUE.source_network(s)).is_some()
            || CATALOGUE.text_network(&w.text).is_some();
        peer_addresses(&w.text)
            .any(|peer| !loopback(peer) && (on_data_path || (!own.is_empty() && !own.contains(&peer))))
            || (!own_names.is_empty() && peer_names(&w.text).any(|peer| !own_names.contains(&peer)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_addresses_with_a_port() {
        let found: Vec<&str> =
            peer_addresses("NET/IB : Got completion from peer 10.2.0.5<33092> with error 12").collect();
        assert_eq!(found, ["10.2.0.5"]);
        let found: Vec<&str> = peer_addresses("socketStartConnect: Connect to [fe80::1%ib0]<38007> failed").collect();
        assert_eq!(found, ["fe80::1%ib0"]);
        // Interface listings carry `<0>`, and host names are not addresses.
        assert_eq!(peer_addresses("Using [0]eth0:10.0.0.1<0> [1]ib0:10.1.0.1<0>").count(), 0);
        assert_eq!(peer_addresses("closed by remote peer node-2<5000>").count(), 0);
        assert_eq!(peer_addresses("<<<>>> 1<2 <12345").count(), 0);
    }

    #[test]
    fn peers_by_name_are_short_host_names() {
        // Corpus 1701 (GKE, NCCL 2.22.3): a survivor's socket sees its peer node go.
        let text = "socketProgress: Connection closed by remote peer \
                    gke-hypercomputer-a3-a3-high-flex-poo-27562461-zcn4.c.hdlab-elideng.internal<55912>";
        assert_eq!(peer_names(text).collect::<Vec<_>>(), ["gke-hypercomputer-a3-a3-high-flex-poo-27562461-zcn4"]);
        assert_eq!(peer_names("closed by remote peer node-2<5000>").collect::<Vec<_>>(), ["node-2"]);
        // Addresses, interface listings and localhost are not names.
        assert_eq!(peer_names("Connect to 10.0.0.2<5000> failed").count(), 0);
        assert_eq!(peer_names("Using [0]eth0:10.0.0.1<0>").count(), 0);
        assert_eq!(peer_names("remote peer localhost<5000>").count(), 0);
    }
}
