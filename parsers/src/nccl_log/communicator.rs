//! One communicator as the log reader learns it (ranks, rings, trees,
//! connections, sizes), and how it becomes the report's `Communicator`: rings
//! rebuilt from whatever the log printed (rank 0's listing, per-rank
//! neighbour lines, connection lines), hops judged cross-node, transports named.
//! Split from `report.rs`, which reads lines and keeps the tables of a whole log.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use topo_model::nccl::{
    ChannelCounts, Communicator, Connection, Direction, GraphSearch, RankInfo, Ring, TransportKind, TreeNode,
};

use super::limits::{Budget, Table};

/// channel, connIndex, from, to, direction, transport text.
pub(super) type ConnectionKey = (u32, u32, u32, Option<u32>, Direction, String);

/// What the log said about one communicator so far.
#[derive(Default)]
pub(super) struct CommState {
    pub(super) id: String,
    /// Printed by init lines.
    pub(super) nranks: Option<u32>,
    /// From `[nranks=N]` on COLL lines.
    pub(super) coll_nranks: Option<u32>,
    pub(super) highest_rank: Option<u32>,
    pub(super) hosts_seen: BTreeSet<String>,
    pub(super) nnodes: Option<u32>,
    pub(super) ranks: BTreeMap<u32, RankInfo>,
    /// Host of each rank as learnt from lines that rank printed.
    pub(super) rank_hosts: BTreeMap<u32, String>,
    pub(super) ring_orders: BTreeMap<u32, Vec<u32>>,
    pub(super) ring_next: BTreeMap<u32, BTreeMap<u32, u32>>,
    pub(super) ring_prev: BTreeMap<u32, BTreeMap<u32, u32>>,
    pub(super) trees: BTreeMap<(u32, u32), (i64, Vec<u32>)>,
    pub(super) connections: BTreeSet<ConnectionKey>,
    pub(super) channels: Option<ChannelCounts>,
    pub(super) graphs: Vec<GraphSearch>,
    pub(super) init_complete: BTreeSet<u32>,
    pub(super) init_seconds: Option<f64>,
    /// Second `Init START`s of a rank under this ID by the process that held it.
    pub(super) id_reused: Vec<topo_model::nccl::IdReuse>,
    /// Ranks that printed `Init START` (2.18+) for this communicator.
    pub(super) started: BTreeSet<u32>,
    /// For the lines a thread prints after a communicator's `Init COMPLETE`
    /// when no `Init START` opened it (NCCL before 2.18): the communicator
    /// they follow, which takes them if no other init line claims them.
    pub(super) pending_after: Option<usize>,
    /// Grouped by size alone (no pointer or commId ties its ranks) while
    /// other communicators of the log have that size too: which process
    /// holds which rank is a guess, so hosts do not say a hop stays on a node.
    pub(super) size_shared: bool,
}

/// Marks the communicators grouped by size alone whose size another such
/// communicator shares (Megatron's many groups of two, before NCCL 2.16's commId).
pub(super) fn mark_shared_sizes(comms: &mut [CommState]) {
    let mut sizes: HashMap<u32, usize> = HashMap::new();
    for size in comms.iter().filter(|c| c.id.starts_with(SIZE_GROUPED)).filter_map(|c| c.nranks) {
        *sizes.entry(size).or_default() += 1;
    }
    let several = comms.len() > 1;
    for comm in comms.iter_mut() {
        if comm.id.starts_with(SIZE_GROUPED) {
            comm.size_shared = comm.nranks.is_some_and(|n| sizes.get(&n).is_some_and(|&k| k > 1));
        } else if comm.id == UNIDENTIFIED || comm.id == UNPLACED {
            // Lines no init line placed, beside other communicators: their
            // rank numbers may be of any of them.
            comm.size_shared = several || comm.id == UNPLACED;
        }
    }
}

/// The ID of the lines no init line placed (see [`merge_orphans`]).
pub(super) const UNIDENTIFIED: &str = "unidentified";
/// The ID of the lines that several communicators could own, or none of
/// those their thread had (a process's async or proxy threads, a rank
/// beyond the size of the thread's latest): kept apart, never merged.
pub(super) const UNPLACED: &str = "unplaced";

/// The ID prefix of a communicator its init lines grouped by size (`nranks-8-0`).
pub(super) const SIZE_GROUPED: &str = "nranks-";

/// The ID prefix of a thread's lines waiting for the init line they precede.
pub(super) const PENDING: &str = "pending-";

/// NCCL before 2.18 prints a communicator's rings, trees and connections
/// before its `Init COMPLETE` and no `Init START`: a process that creates
/// several communicators prints each one's lines between the previous
/// one's COMPLETE and its own. The lines a thread printed after a COMPLETE
/// went to a pending communicator; those that no later init line of the
/// thread took (lazily connected P2P channels, an excerpt's end) belong to
/// the communicator they follow. Pending communicators leave the list.
pub(super) fn settle_pending(mut comms: Vec<CommState>, mut orphans: Option<usize>) -> (Vec<CommState>, Option<usize>) {
    for i in 0..comms.len() {
        if !comms[i].id.starts_with(PENDING) {
            continue;
        }
        // Lines of a thread before any init line of its process that none
        // claimed: of no known communicator (see `merge_orphans`).
        let Some(owner) = comms[i].pending_after.filter(|&o| o < comms.len() && o != i) else {
            match orphans.filter(|&o| o < comms.len() && o != i) {
                Some(o) => {
                    let lines = std::mem::take(&mut comms[i]);
                    comms[o].absorb(lines);
                }
                None => {
                    comms[i].id = UNIDENTIFIED.to_string();
                    orphans = Some(i);
                }
            }
            continue;
        };
        let lines = std::mem::take(&mut comms[i]);
        // Lines naming a rank the communicator they follow does not have
        // are not its own: kept apart (see `UNPLACED`).
        let beyond = lines.highest_rank.zip(comms[owner].nranks).is_some_and(|(high, n)| high >= n);
        if !beyond {
            comms[owner].absorb(lines);
        } else if let Some(apart) = comms.iter().position(|c| c.id == UNPLACED) {
            comms[apart].absorb(lines);
        } else {
            comms.push(CommState { id: UNPLACED.to_string(), ..CommState::default() });
            if let Some(apart) = comms.last_mut() {
                apart.absorb(lines);
            }
        }
    }
    let mut kept = Vec::with_capacity(comms.len());
    let mut orphans_at = None;
    for (i, comm) in comms.into_iter().enumerate() {
        if comm.id.starts_with(PENDING) || (comm.id.is_empty() && comm.nranks.is_none()) {
            continue;
        }
        if orphans == Some(i) {
            orphans_at = Some(kept.len());
        }
        kept.push(comm);
    }
    (kept, orphans_at)
}

/// Lines of processes that printed no init line (an excerpt, or 2.4-2.8 logs
/// whose ring lines come before `Init COMPLETE`) belong to the one
/// communicator whose printed size holds every rank they name; with none or
/// several such, they stay a communicator of their own.
pub(super) fn merge_orphans(mut comms: Vec<CommState>, orphans: Option<usize>) -> Vec<CommState> {
    let Some(at) = orphans.filter(|&i| i < comms.len()) else { return comms };
    let needed = comms[at].highest_rank.map_or(0, |r| r + 1);
    let fits: Vec<usize> = comms
        .iter()
        .enumerate()
        .filter(|(i, c)| *i != at && c.nranks.is_some_and(|n| n >= needed && n > 1))
        .map(|(i, _)| i)
        .collect();
    let [target] = fits.as_slice() else { return comms };
    let target = *target;
    let orphan = comms.remove(at);
    let target = if target > at { target - 1 } else { target };
    if let Some(comm) = comms.get_mut(target) {
        comm.absorb(orphan);
    }
    comms
}

impl CommState {
    /// Takes in what another (unidentified) communicator learnt; facts
    /// already known here win.
    pub(super) fn absorb(&mut self, other: CommState) {
        self.coll_nranks = self.coll_nranks.or(other.coll_nranks);
        if let Some(rank) = other.highest_rank {
            self.saw_rank(rank);
        }
        self.hosts_seen.extend(other.hosts_seen);
        self.nnodes = self.nnodes.or(other.nnodes);
        for (rank, info) in other.ranks {
            self.ranks.entry(rank).or_insert(info);
        }
        for (rank, host) in other.rank_hosts {
            self.rank_hosts.entry(rank).or_insert(host);
        }
        for (channel, order) in other.ring_orders {
            self.ring_orders.entry(channel).or_insert(order);
        }
        for (channel, next) in other.ring_next {
            let mine = self.ring_next.entry(channel).or_default();
            for (me, n) in next {
                mine.entry(me).or_insert(n);
            }
        }
        for (channel, prev) in other.ring_prev {
            let mine = self.ring_prev.entry(channel).or_default();
            for (me, p) in prev {
                mine.entry(me).or_insert(p);
            }
        }
        for (key, tree) in other.trees {
            self.trees.entry(key).or_insert(tree);
        }
        // Already counted against the budget when first read.
        self.connections.extend(other.connections);
        self.channels = self.channels.take().or(other.channels);
        for graph in other.graphs {
            if !self.graphs.contains(&graph) && self.graphs.len() < 64 {
                self.graphs.push(graph);
            }
        }
        self.init_complete.extend(other.init_complete);
        self.init_seconds = self.init_seconds.or(other.init_seconds);
    }

    pub(super) fn saw_host(&mut self, host: Option<&str>, budget: &mut Budget) {
        if let Some(host) = host
            && !self.hosts_seen.contains(host)
            && budget.take(Table::CommHosts, 1)
        {
            self.hosts_seen.insert(host.to_string());
        }
    }

    pub(super) fn saw_rank(&mut self, rank: u32) {
        self.highest_rank = Some(self.highest_rank.map_or(rank, |r| r.max(rank)));
    }

    pub(super) fn add_tree(&mut self, channel: u32, parent: i64, me: i64, children: &[i64], budget: &mut Budget) {
        let Ok(me) = u32::try_from(me) else { return };
        self.saw_rank(me);
        for rank in children.iter().chain([&parent]).filter_map(|r| u32::try_from(*r).ok()) {
            self.saw_rank(rank);
        }
        if !self.trees.contains_key(&(channel, me)) && !budget.take(Table::Trees, 1 + children.len() as u64) {
            return;
        }
        let children = children.iter().filter_map(|c| u32::try_from(*c).ok()).collect();
        self.trees.insert((channel, me), (parent.max(-1), children));
    }

    pub(super) fn into_report(self, rename: &dyn Fn(&str) -> String) -> Communicator {
        let mut ranks: Vec<RankInfo> = self.ranks.into_values().collect();
        for rank in &mut ranks {
            rank.host = rank.host.as_deref().map(rename);
        }
        // One lookup table: a scan of every rank per connection was quadratic
        // in the communicator's size.
        let rank_host: HashMap<u32, &str> = ranks.iter().filter_map(|r| Some((r.rank, r.host.as_deref()?))).collect();
        let host_of = |rank: u32| -> Option<String> {
            rank_host.get(&rank).map(|h| h.to_string()).or_else(|| self.rank_hosts.get(&rank).map(|h| rename(h)))
        };
        let listing = self.ring_orders.values().map(|o| o.len() as u32).max();
        let (nranks, nranks_source) = match (self.nranks, self.coll_nranks, listing, self.highest_rank) {
            (Some(n), ..) => (Some(n), Some("printed")),
            (None, Some(n), ..) => (Some(n), Some("coll-line")),
            (None, None, Some(n), _) => (Some(n), Some("ring-listing")),
            (None, None, None, Some(r)) => (Some(r + 1), Some("highest-rank-seen")),
            _ => (None, None),
        };
        let mut rings: Vec<Ring> =
            self.ring_orders.iter().map(|(channel, order)| Ring { channel: *channel, order: order.clone() }).collect();
        // Without rank 0's listing, a ring can still be read from the per-rank
        // neighbour lines, or from connection lines where each rank has one
        // outgoing edge in the channel (more would mean tree edges are mixed in).
        let mut edges: BTreeMap<u32, BTreeSet<(u32, u32)>> = BTreeMap::new();
        for (channel, next) in &self.ring_next {
            edges.entry(*channel).or_default().extend(next.iter().map(|(a, b)| (*a, *b)));
        }
        for (channel, prev) in &self.ring_prev {
            edges.entry(*channel).or_default().extend(prev.iter().map(|(me, p)| (*p, *me)));
        }
        // Connection lines fix a channel the neighbour lines leave open (an
        // excerpt that kept a few ranks' `Ring 00 : 7 -> 0 -> 1` but every hop).
        let mut hops: BTreeMap<u32, BTreeSet<(u32, u32)>> = BTreeMap::new();
        for (channel, conn_index, from, to, _, _) in &self.connections {
            // `a -> b [receive]` (printed by b) is the same edge as `a -> b [send]`.
            if let (0, Some(to)) = (conn_index, to) {
                hops.entry(*channel).or_default().insert((*from, *to));
            }
        }
        let channels: BTreeSet<u32> = edges.keys().chain(hops.keys()).copied().collect();
        for channel in channels {
            if self.ring_orders.contains_key(&channel) {
                continue;
            }
            let from = |table: &BTreeMap<u32, BTreeSet<(u32, u32)>>| {
                table.get(&channel).and_then(|pairs| ring_from_edges(pairs, nranks))
            };
            if let Some(order) = from(&edges).or_else(|| from(&hops)) {
                rings.push(Ring { channel, order });
            }
        }
        rings.sort_by_key(|r| r.channel);
        let trees = self
            .trees
            .into_iter()
            .map(|((channel, rank), (parent, children))| TreeNode { channel, rank, parent, children })
            .collect();
        let over_network = |via: &str| {
            matches!(
                transport_kind(via),
                TransportKind::NetIb
                    | TransportKind::NetSocket
                    | TransportKind::NetOfi
                    | TransportKind::NetOther
                    | TransportKind::CollNet
            )
        };
        let same_host = |from: u32, to: Option<u32>| Some(host_of(from)? == host_of(to?)?);
        // NCCL also sends over the network between GPUs of one node (P2P and
        // SHM ruled out, or the NIC closer than the GPUs' own path). A network
        // hop between two ranks of one host shows this communicator does.
        let network_within_node = !self.size_shared
            && self
                .connections
                .iter()
                .any(|(_, _, from, to, _, via)| over_network(via) && same_host(*from, *to) == Some(true));
        let connections: Vec<Connection> = self
            .connections
            .into_iter()
            .map(|(channel, conn_index, from, to, direction, via)| {
                // Host names decide; without them, a one-node communicator has no
                // cross-node hop, and a hop NCCL sends over the network leaves
                // the node unless the lines show it using the network within one.
                let transport = transport_kind(&via);
                let judged = same_host(from, to).filter(|&same| !(same && self.size_shared && over_network(&via)));
                // Lines no communicator could claim say nothing of nodes.
                let placed = self.id != UNPLACED;
                let cross_node = judged
                    .map(|same| !same)
                    .or((self.nnodes == Some(1)).then_some(false))
                    .or((placed && over_network(&via) && !network_within_node).then_some(true));
                Connection {
                    channel,
                    conn_index,
                    from,
                    to,
                    direction,
                    transport,
                    gdr: via.contains("/GDRDMA"),
                    proxy_rank: proxy_rank(&via),
                    detail: via,
                    cross_node,
                    hardware: None,
                }
            })
            .collect();
        // A hop that leaves the node (without a printed `nNodes`): the hosts
        // named are one node's lines, and the communicator spans at least two.
        let leaves_node = connections.iter().any(|c| c.cross_node == Some(true));
        let hosts: BTreeSet<String> = ranks
            .iter()
            .filter_map(|r| r.host.clone())
            .chain(self.rank_hosts.values().map(|h| rename(h)))
            .chain(self.hosts_seen.iter().map(|h| rename(h)))
            .collect();
        Communicator {
            id: self.id,
            nranks,
            nranks_source: nranks_source.map(str::to_string),
            nnodes: self.nnodes.or(match (hosts.len(), leaves_node) {
                (0 | 1, true) => Some(2),
                (0, false) => None,
                (n, _) => Some(n as u32),
            }),
            nnodes_at_least: self.nnodes.is_none() && leaves_node && hosts.len() < 2,
            ranks_guessed: self.size_shared,
            ranks,
            rings,
            trees,
            connections,
            channels: self.channels,
            graphs: self.graphs,
            init_complete: self.init_complete.into_iter().collect(),
            init_seconds: self.init_seconds,
            id_reused: self.id_reused,
        }
    }
}

/// The ring order (from rank 0) that a set of `a -> b` ring edges implies, or
/// `None` when they do not fix it: a rank with two successors, a cycle that
/// skips ranks, or more than one rank missing. With the communicator size known,
/// a single rank missing from the edges goes into the single gap.
fn ring_from_edges(edges: &BTreeSet<(u32, u32)>, nranks: Option<u32>) -> Option<Vec<u32>> {
    let mut next: BTreeMap<u32, u32> = BTreeMap::new();
    let mut prev: BTreeMap<u32, u32> = BTreeMap::new();
    for &(a, b) in edges {
        if a == b || next.insert(a, b).is_some_and(|old| old != b) || prev.insert(b, a).is_some_and(|old| old != a) {
            return None;
        }
    }
    // `placed` answers "already in the ring?" in constant time: a linear
    // search of the ring so far made a 250,000-rank chain take seconds.
    let mut placed_ranks: HashSet<u32> = HashSet::from([0]);
    let mut forward = vec![0u32];
    while let Some(&n) = next.get(forward.last()?) {
        if n == 0 {
            break;
        }
        if !placed_ranks.insert(n) {
            return None;
        }
        forward.push(n);
    }
    let closed = next.get(forward.last()?) == Some(&0);
    let ranks: BTreeSet<u32> = next.keys().chain(prev.keys()).copied().collect();
    let total = nranks.map_or(ranks.len(), |n| n as usize);
    if closed {
        return (forward.len() == total && ranks.len() == total).then_some(forward);
    }
    let mut backward = Vec::new();
    let mut at = 0u32;
    while let Some(&p) = prev.get(&at) {
        if !placed_ranks.insert(p) {
            return None;
        }
        backward.push(p);
        at = p;
    }
    backward.reverse();
    let placed = forward.len() + backward.len();
    // At most one rank may be missing: a printed size far above the ranks
    // seen (a hostile `nranks 4294967295`) is not walked rank by rank.
    if total > placed + 1 {
        return None;
    }
    let missing: Vec<u32> = (0..nranks?).filter(|r| !placed_ranks.contains(r)).collect();
    match missing.as_slice() {
        [] if placed == total => Some([forward, backward].concat()),
        [only] if placed + 1 == total => Some([forward, vec![*only], backward].concat()),
        _ => None,
    }
}

/// The transport named by the text after `via`.
pub fn transport_kind(via: &str) -> TransportKind {
    if via.starts_with("P2P/") {
        TransportKind::P2p
    } else if via.starts_with("SHM/") || via.starts_with("direct shared memory") {
        TransportKind::Shm
    } else if via.starts_with("NET/IB") {
        TransportKind::NetIb
    } else if via.starts_with("NET/Socket") {
        TransportKind::NetSocket
    } else if via.starts_with("NET/AWS Libfabric") || via.starts_with("NET/Libfabric") || via.starts_with("NET/OFI") {
        TransportKind::NetOfi
    } else if via.starts_with("NET/") {
        TransportKind::NetOther
    } else if via.starts_with("COLLNET/") {
        TransportKind::CollNet
    } else {
        TransportKind::Other
    }
}

/// `NET/IBext_v8/0(4)/GDRDMA` -> 4: PXN through local rank 4.
fn proxy_rank(via: &str) -> Option<u32> {
    let open = via.find('(')?;
    let close = via[open..].find(')')? + open;
    via[open + 1..close].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transports_and_proxy_ranks_from_the_via_text() {
        assert_eq!(proxy_rank("NET/IBext_v8/0(4)/GDRDMA"), Some(4));
        assert_eq!(transport_kind("NET/AWS Libfabric/0/GDRDMA"), TransportKind::NetOfi);
    }

    #[test]
    fn rings_only_where_the_edges_fix_them() {
        let set = |pairs: &[(u32, u32)]| pairs.iter().copied().collect::<BTreeSet<_>>();
        assert_eq!(ring_from_edges(&set(&[(0, 1), (1, 3), (3, 2), (2, 0)]), None), Some(vec![0, 1, 3, 2]));
        // Rank 0 says 2 -> 0 -> 1; with 4 ranks, 3 must sit between 1 and 2.
        assert_eq!(ring_from_edges(&set(&[(2, 0), (0, 1)]), Some(4)), Some(vec![0, 1, 3, 2]));
        assert_eq!(ring_from_edges(&set(&[(2, 0), (0, 1)]), Some(5)), None, "two ranks missing");
        assert_eq!(ring_from_edges(&set(&[(0, 1), (1, 0), (2, 3), (3, 2)]), None), None);
        assert_eq!(ring_from_edges(&set(&[(0, 1), (0, 2), (1, 0), (2, 0)]), None), None, "tree edges mixed in");
    }
}
