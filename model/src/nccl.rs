//! What an NCCL debug log says: communicators, their ranks, rings, trees and the
//! transport of every connection, plus the network, environment overrides,
//! warnings and per-collective statistics. Serialised as `topo nccl --format json`,
//! a documented interface (`docs/nccl-report.md`); bump [`NCCL_REPORT_SCHEMA_VERSION`]
//! whenever a field changes meaning.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bus_id::BusId;

pub const NCCL_REPORT_SCHEMA_VERSION: u32 = 2;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NcclReport {
    pub schema_version: u32,
    /// Every input read, with its line counts (or why it could not be read).
    pub inputs: Vec<InputSummary>,
    /// Distinct `NCCL version` strings (`2.23.4+cuda12.4`).
    pub nccl_versions: Vec<String>,
    /// Hostnames as NCCL printed them, sorted.
    pub hosts: Vec<String>,
    /// Distinct (host, pid) pairs that printed NCCL lines.
    pub processes: u64,
    /// Nodes the job spans as far as the log tells: the largest `nNodes` a
    /// communicator printed, or the hosts named, whichever is more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
    /// `nodes` is a lower bound: the lines name fewer hosts than they prove
    /// (one node's log of a multi-node job: a hop over the network, a peer on
    /// another node).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nodes_at_least: bool,
    pub communicators: Vec<Communicator>,
    pub network: Network,
    /// `NCCL_X set by environment to Y`, one entry per variable and value.
    pub env_overrides: Vec<EnvOverride>,
    /// WARN lines: the first few of each distinct text, each with where it was.
    pub warnings: Vec<Warning>,
    /// All WARN lines, including repeats not listed in `warnings`.
    pub warning_count: u64,
    /// INFO lines that NCCL's message table lists as a degraded or failed
    /// choice (`Could not find a path for pattern ...`), one per distinct text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<Warning>,
    /// Lines of the framework around NCCL (PyTorch, DeepSpeed, Horovod, Ray)
    /// that carry NCCL's error words, and the `Last error:` text they repeat.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub framework_errors: Vec<Warning>,
    /// The application's own exception (`[rank3]: RuntimeError: Expected 2D
    /// tensor ...`, a Python error line with no NCCL words) printed before any
    /// NCCL failure: a rank that raises one exits, and its peers' NCCL calls
    /// then fail with a bare system or remote error that echoes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application_error: Option<Warning>,
    /// Paths NCCL's topology dump printed (`GPU/0-4e000 :GPU/0-4f000
    /// (1/240.0/NVL) ...`, NCCL_DEBUG_SUBSYS=GRAPH): per host, between GPUs
    /// and from GPUs to NICs, in NCCL's path types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logged_paths: Vec<LoggedPath>,
    /// `file:line -> N` error-propagation lines: the ncclResult_t codes seen.
    pub error_codes: Vec<ErrorTrace>,
    /// Per collective, from `NCCL_DEBUG_SUBSYS=COLL` lines.
    pub collectives: BTreeMap<String, CollectiveStats>,
    /// The last collective each (host, pid, communicator) issued: after a hang,
    /// the one behind the others is the one that stopped.
    pub progress: Vec<RankProgress>,
    /// Collectives a framework's watchdog timed out (PyTorch `ProcessGroupNCCL`), one
    /// per rank and sequence number.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeouts: Vec<CollectiveTimeout>,
    /// Algorithm/protocol choices from TUNING lines, per collective.
    pub tuning: Vec<TuningChoice>,
    /// The latency/bandwidth table NCCL prints at init (rank 0), per collective,
    /// algorithm and protocol; entries with zero bandwidth (unavailable) left out.
    pub tuning_table: Vec<TuningModelEntry>,
    /// From `tuning_table`: the fastest algorithm and protocol by NCCL's own
    /// model (latency + size / bandwidth) for each collective and size range.
    pub tuning_ranges: Vec<TuningRange>,
    /// `Init COMPLETE` lines seen.
    pub init_complete: u64,
    /// Lines of NVLS multicast setup (`NVLS Bind mem`, `NVLS comm 0x..
    /// headRank`, ...): NCCL's last large step of init, after its rings and
    /// trees (init.cc 2.17-2.30), where a hang on an NVSwitch machine waits.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub nvls_setup: u64,
    /// Lines of user-buffer registration (NCCL_REG: `register comm 0x..
    /// buffer`, `rank 3 - NET register userbuff`, `IPC reuse buffer`, ...).
    /// NCCL registers a program's buffers when it calls ncclCommRegister or
    /// enqueues a collective on them, both after init: the communicator was
    /// in use, even where the excerpt dropped its `Init COMPLETE`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub buffer_registrations: u64,
    /// Exact transport strings after `via`, with the number of lines each.
    pub via: BTreeMap<String, u64>,
    /// nccl-tests output found in the same input.
    pub nccl_tests: Vec<NcclTestsRun>,
    /// The first line behind each fact `topo diagnose` cites as evidence, keyed
    /// `via/<transport>`, `network/<name>`, `env/<NAME>=<value>`,
    /// `bootstrap/<interface>`, `gdr/<hca>` and `net-ib-not-found`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub first_lines: BTreeMap<String, LineRef>,
    /// Lines read, lines holding an NCCL marker or message, and lines nothing was
    /// learnt from (application output, formats not understood).
    pub lines: u64,
    pub nccl_lines: u64,
    pub unparsed_lines: u64,
    /// Facts read but not kept because a table reached its cap (by table):
    /// memory stays bounded whatever the input; the counts say what is missing.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_kept: BTreeMap<String, u64>,
    /// Graphs NCCL wrote to `NCCL_GRAPH_DUMP_FILE` (one entry per file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub graph_dumps: Vec<crate::nccl_graph::GraphDump>,
}

/// One watchdog timeout: which rank, which collective (`ALLREDUCE`, sequence
/// number), how long it ran against its limit, and the last work that rank completed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectiveTimeout {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The process group's id where the line names it (PyTorch 2.2+):
    /// sequence numbers count per group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pg: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    pub op: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ran_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_completed: Option<u64>,
    /// The process group's rank count, where the operation's sizes give it:
    /// an all-gather's `NumelOut` is `NumelIn` times the ranks, a
    /// reduce-scatter's `NumelIn` is `NumelOut` times them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_size: Option<u32>,
    /// `NumelIn=` and `NumelOut=` (PyTorch 2.0+): ranks of one group at one
    /// sequence number must agree on them for most operations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numel_in: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numel_out: Option<u64>,
    pub file: String,
    pub line: u64,
}

/// Where a fact was first seen, and the NCCL message of that line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRef {
    pub file: String,
    pub line: u64,
    pub text: String,
}

/// One path of NCCL's own topology dump: how NCCL saw the hardware when no
/// topology file is at hand.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoggedPath {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// `GPU/0-4e000` as printed.
    pub from: String,
    pub to: String,
    /// The bus IDs when both ends are GPUs (or a GPU and a NIC with a bus ID).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_bus: Option<BusId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_bus: Option<BusId>,
    /// NCCL's path type (`NVL`, `PIX`, `PXB`, `PHB`, `SYS`, `NET`, ...).
    pub path_type: String,
    /// NCCL's bandwidth for the path, GB/s.
    pub bw: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InputSummary {
    pub name: String,
    pub lines: u64,
    /// Lines that were NCCL output (prefixed or bare NCCL messages, framework
    /// errors carrying NCCL's words): zero means the wrong file.
    #[serde(default)]
    pub nccl_lines: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Communicator {
    /// `commId` (2.16+) when printed, else a label built from what is known.
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nranks: Option<u32>,
    /// Where `nranks` comes from: `printed` (init lines), `coll-line`
    /// (`[nranks=N]`), `ring-listing` (rank 0's ring order) or
    /// `highest-rank-seen` (an excerpt's best estimate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nranks_source: Option<String>,
    /// Printed `nNodes`, else the number of distinct hosts whose lines belong to
    /// this communicator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nnodes: Option<u32>,
    /// `nnodes` is a lower bound: a hop leaves the node, and only one host's
    /// lines were read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nnodes_at_least: bool,
    /// Its ranks were grouped by the communicator size their init lines
    /// print, beside other communicators of that size (NCCL before 2.16
    /// prints no commId): which process holds which rank, and so each
    /// rank's host, is the reader's best guess.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ranks_guessed: bool,
    pub ranks: Vec<RankInfo>,
    pub rings: Vec<Ring>,
    pub trees: Vec<TreeNode>,
    pub connections: Vec<Connection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<ChannelCounts>,
    pub graphs: Vec<GraphSearch>,
    /// Ranks that printed `Init COMPLETE`.
    pub init_complete: Vec<u32>,
    /// Slowest `Init timings` total over the ranks, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_seconds: Option<f64>,
    /// Processes that began a second communicator with this one's unique
    /// ID (`commId`) for a rank they already held in it: a process group
    /// initialised twice, or a `ncclUniqueId` kept past its communicator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub id_reused: Vec<IdReuse>,
}

/// A rank's second `Init START` under a communicator ID its process had used.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdReuse {
    pub rank: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u64>,
    /// The input and line of the second `Init START`.
    pub file: String,
    pub line: u64,
}

impl Communicator {
    /// Each rank's entry by rank number (the first when a log printed a rank
    /// twice), for lookups per connection that would otherwise scan every rank.
    pub fn rank_map(&self) -> std::collections::HashMap<u32, &RankInfo> {
        let mut map = std::collections::HashMap::with_capacity(self.ranks.len());
        for r in &self.ranks {
            map.entry(r.rank).or_insert(r);
        }
        map
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankInfo {
    pub rank: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_dev: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvml_dev: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_id: Option<BusId>,
}

/// A ring channel: the order ranks pass data in, wrapping from last to first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ring {
    pub channel: u32,
    pub order: Vec<u32>,
}

/// One rank's place in a tree channel. `parent` -1 is the root.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TreeNode {
    pub channel: u32,
    pub rank: u32,
    pub parent: i64,
    pub children: Vec<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Send,
    Receive,
    /// P2P and SHM lines name no side (the sender prints them).
    None,
}

/// How a connection moves data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransportKind {
    /// GPU to GPU (NVLink or PCIe): `P2P/IPC`, `P2P/CUMEM`, `P2P/direct pointer`, ...
    P2p,
    /// Through host shared memory.
    Shm,
    /// InfiniBand / RoCE verbs (`NET/IB`, `NET/IBext*`).
    NetIb,
    NetSocket,
    /// aws-ofi-nccl (`NET/AWS Libfabric`, `NET/Libfabric`).
    NetOfi,
    /// Another network plugin.
    NetOther,
    CollNet,
    Other,
}

/// One connection line (`Channel 02/0 : 3[3] -> 4[4] [send] via NET/IB/1/GDRDMA`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Connection {
    pub channel: u32,
    /// 0 = collective (ring/tree) connection, 1 = point-to-point (2.12+).
    pub conn_index: u32,
    pub from: u32,
    /// `None` for CollNet lines, which name one rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<u32>,
    pub direction: Direction,
    pub transport: TransportKind,
    /// The text after `via`.
    pub detail: String,
    /// GPUDirect RDMA (`/GDRDMA`).
    pub gdr: bool,
    /// PXN: the local rank whose NIC carries it (`NET/IB/0(7)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_rank: Option<u32>,
    /// Whether the two ranks are on different hosts, when both hosts are known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_node: Option<bool>,
    /// The hardware path between the two ranks' GPUs, when a snapshot of their
    /// machine was given (`topo nccl --from`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<HardwarePath>,
}

/// The collective connection carrying each ring hop of a communicator, found
/// in one pass: views and rules look hops up per ring edge, and a scan of every
/// connection per edge made a 250,000-rank ring take minutes to print.
pub struct HopIndex<'a> {
    hops: std::collections::HashMap<(u32, u32, u32), &'a Connection>,
}

impl<'a> HopIndex<'a> {
    /// Indexes `comm`'s collective connections (`conn_index` 0) by
    /// (channel, from, to), preferring the sender's line over the receiver's:
    /// the sender's side names the transport NCCL chose for the hop.
    pub fn new(comm: &'a Communicator) -> Self {
        let rank = |c: &Connection| match c.direction {
            Direction::Send | Direction::None => 0,
            Direction::Receive => 1,
        };
        let mut hops: std::collections::HashMap<(u32, u32, u32), &'a Connection> = std::collections::HashMap::new();
        for c in comm.connections.iter().filter(|c| c.conn_index == 0) {
            let Some(to) = c.to else { continue };
            hops.entry((c.channel, c.from, to))
                .and_modify(|kept| {
                    if rank(c) < rank(kept) {
                        *kept = c;
                    }
                })
                .or_insert(c);
        }
        Self { hops }
    }

    /// The connection of the hop `from -> to` on `channel`.
    pub fn hop(&self, channel: u32, from: u32, to: u32) -> Option<&'a Connection> {
        self.hops.get(&(channel, from, to)).copied()
    }
}

/// How the machine connects two GPUs, in both vocabularies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HardwarePath {
    /// nvidia-smi's class (`NV18`, `PIX`, `SYS`, ...).
    pub smi: String,
    /// NCCL's path type (`NVL`, `PXB`, `PHB`, ...).
    pub nccl: String,
    /// What the path should carry per direction, GB/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_gbps: Option<f64>,
}

impl NcclReport {
    /// Annotates same-host connections that have no hardware path yet with the
    /// path NCCL's own topology dump printed between the two ranks' GPUs
    /// (`logged_paths`): how NCCL saw the wiring, when no topology file or
    /// snapshot is at hand. Returns how many connections were annotated.
    pub fn annotate_from_logged_paths(&mut self) -> usize {
        if self.logged_paths.is_empty() {
            return 0;
        }
        let mut by_pair: std::collections::HashMap<(Option<&str>, BusId, BusId), &str> =
            std::collections::HashMap::new();
        for path in &self.logged_paths {
            if let (Some(a), Some(b)) = (path.from_bus, path.to_bus) {
                by_pair.insert((path.host.as_deref(), a, b), path.path_type.as_str());
            }
        }
        let mut annotated = 0;
        for comm in &mut self.communicators {
            let ranks = comm.rank_map();
            let rank_of = |rank: u32| ranks.get(&rank).copied();
            let mut found = Vec::new();
            for (i, connection) in comm.connections.iter().enumerate() {
                if connection.hardware.is_some() || connection.cross_node == Some(true) {
                    continue;
                }
                let (Some(a), Some(b)) = (rank_of(connection.from), connection.to.and_then(rank_of)) else { continue };
                if a.host != b.host {
                    continue;
                }
                let (Some(x), Some(y)) = (a.bus_id, b.bus_id) else { continue };
                if let Some(kind) = by_pair.get(&(a.host.as_deref(), x, y)) {
                    found.push((i, (*kind).to_string()));
                }
            }
            for (i, kind) in found {
                if let Some(connection) = comm.connections.get_mut(i) {
                    let smi = if kind == "NVL" { "NV".to_string() } else { kind.clone() };
                    connection.hardware = Some(HardwarePath { smi, nccl: kind, expected_gbps: None });
                    annotated += 1;
                }
            }
        }
        annotated
    }

    /// Annotates every same-host connection with the hardware path between the
    /// two ranks' GPUs, for ranks whose bus ID the log printed and whose host is
    /// the machine `topology` describes (`host` = its hostname; `None` accepts any
    /// single-host communicator). Returns how many connections were annotated.
    pub fn annotate(&mut self, topology: &crate::Topology, host: Option<&str>) -> usize {
        let mut annotated = 0;
        for comm in &mut self.communicators {
            let hosts: std::collections::BTreeSet<&str> = comm.ranks.iter().filter_map(|r| r.host.as_deref()).collect();
            let on_machine = |rank: &RankInfo| match (host, rank.host.as_deref()) {
                (Some(h), Some(r)) => h == r,
                (None, _) => hosts.len() <= 1,
                (Some(_), None) => false,
            };
            let ranks = comm.rank_map();
            let bus_of = |rank: u32| -> Option<BusId> {
                ranks.get(&rank).copied().filter(|r| on_machine(r)).and_then(|r| r.bus_id)
            };
            let pairs: Vec<(usize, BusId, BusId)> = comm
                .connections
                .iter()
                .enumerate()
                .filter_map(|(i, c)| Some((i, bus_of(c.from)?, bus_of(c.to?)?)))
                .collect();
            for (i, a, b) in pairs {
                if topology.gpu(a).is_none() || topology.gpu(b).is_none() {
                    continue;
                }
                let path = topology.path(a, b);
                if let Some(connection) = comm.connections.get_mut(i) {
                    connection.hardware = Some(HardwarePath {
                        smi: path.smi.to_string(),
                        nccl: path.nccl.to_string(),
                        expected_gbps: path.expected.map(|b| (b.gbps() * 10.0).round() / 10.0),
                    });
                    annotated += 1;
                }
            }
        }
        annotated
    }
}

/// `N coll channels, N collnet channels, N nvls channels, N p2p channels, N p2p channels per peer`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelCounts {
    pub coll: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collnet: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvls: Option<u32>,
    pub p2p: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2p_per_peer: Option<u32>,
}

/// A graph-search result (`Pattern 4, crossNic 0, nChannels 2, bw 40.000000/40.000000, type NVL/PIX, sameChannels 1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphSearch {
    pub pattern: u32,
    pub channels: u32,
    pub bw_intra: f64,
    pub bw_inter: f64,
    pub type_intra: String,
    pub type_inter: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Network {
    /// `Using network X`: `IB`, `Socket`, `IBext_v8`, `AWS Libfabric`, ...
    pub used: Vec<String>,
    /// Devices NCCL listed (`mlx5_0:1/RoCE`, `eth0:10.0.0.1<0>`).
    pub devices: Vec<String>,
    /// Per-HCA GPUDirect RDMA capability lines (`mlx5_0` -> enabled).
    pub gdr_by_hca: BTreeMap<String, bool>,
    /// Bootstrap interfaces (`eth0:10.7.147.73<0>`).
    pub bootstrap: Vec<String>,
    /// `NET/IB : No device found.` was printed.
    pub ib_not_found: bool,
    /// Interfaces the socket transport listed (`NET/Socket : Using [0]eth0:...`),
    /// kept apart from `devices`: NCCL lists them even when IB carries the traffic.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub socket_interfaces: Vec<String>,
    /// The socket transport's interfaces whose address cannot reach another
    /// node (`enP1s1:fe80::1%enP1s1<0>`: link-local, loopback), as listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub socket_unreachable: Vec<String>,
    /// The network devices each host listed, to compare hosts (absent when
    /// the log names no host).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub devices_by_host: BTreeMap<String, Vec<String>>,
    /// The network plugin each host's processes loaded (`internal` for NCCL's
    /// own transports), to find hosts that differ.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plugins_by_host: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EnvOverride {
    pub name: String,
    pub value: String,
    /// Hosts that printed it (empty when lines carry no host).
    pub hosts: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// The CUDA device in the line prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_dev: Option<u32>,
    /// The input and line number where it first appeared.
    pub file: String,
    pub line: u64,
    /// The NCCL source location that warned (`transport/net_ib.cc:1295`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub text: String,
    /// Lines with this same text (this one included).
    pub count: u64,
    /// The root-cause class NCCL's message table gives this text
    /// (`parsers/data/nccl-messages.yaml`); absent when no row matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Further classes it points at: the subsystem of the NCCL source file a
    /// generic failure came from, an unreachable peer address, a row's `also`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also: Vec<String>,
    /// Every host that printed this text (up to a bound), sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// Every rank known to have printed it (up to a bound), sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankProgress {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u64>,
    /// The communicator pointer as that process printed it.
    pub comm: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    pub last_op: String,
    pub last_op_count: u64,
    pub calls: u64,
    /// The communicator size its COLL lines printed (`[nranks=8]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nranks: Option<u32>,
    /// Its last few collectives, oldest first: what ranks of one communicator
    /// issued at the same opCount must agree (a mismatch is a program bug).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recent: Vec<CollectiveCall>,
}

/// One collective call as a COLL line printed it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectiveCall {
    pub op_count: u64,
    pub op: String,
    /// Elements, not bytes.
    pub count: u64,
    /// `ncclDataType_t` (7 = float32).
    pub datatype: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ErrorTrace {
    /// `transport/net_ib.cc:1295`
    pub location: String,
    pub code: i64,
    pub count: u64,
    /// Of `count`, the lines a thread printed after its socket progress said
    /// `abort called`: the communicator's abort flag ended the call (an
    /// ncclInternalError by design), so they are the abort, not a fault.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub after_abort: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CollectiveStats {
    pub calls: u64,
    /// Message sizes in bytes: `(upper bound of a power-of-two bucket, calls)`.
    pub size_histogram: Vec<(u64, u64)>,
    pub total_bytes: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TuningChoice {
    pub collective: String,
    pub algorithm: String,
    pub protocol: String,
    /// Message size in bytes, when the line says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    pub count: u64,
}

/// One nccl-tests run (`all_reduce_perf` and friends) found in the input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NcclTestsRun {
    /// `all_reduce_perf`, from the closing `Collective test concluded` line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
    /// The `# nThread 1 nGpus 1 minBytes ...` parameter line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<String>,
    pub ranks: Vec<NcclTestsRank>,
    pub rows: Vec<NcclTestsRow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg_bus_bandwidth: Option<f64>,
    /// `# Out of bounds values : 0 OK`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out_of_bounds: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NcclTestsRank {
    pub rank: u32,
    pub group: u32,
    pub pid: u64,
    pub host: String,
    pub device: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_id: Option<BusId>,
    pub name: String,
}

/// One size of the table: out-of-place and in-place measurements.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NcclTestsRow {
    pub bytes: u64,
    pub count: u64,
    pub datatype: String,
    pub redop: String,
    pub root: i64,
    pub out_of_place: NcclTestsMeasure,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_place: Option<NcclTestsMeasure>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NcclTestsMeasure {
    pub time_us: f64,
    /// GB/s.
    pub algbw: f64,
    /// GB/s.
    pub busbw: f64,
    /// Wrong elements (`#wrong`); `None` for `N/A` (checks off). Old versions
    /// print a relative error here instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrong: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TuningModelEntry {
    pub collective: String,
    pub algorithm: String,
    pub protocol: String,
    pub latency_us: f64,
    /// GB/s.
    pub bandwidth_gbps: f64,
}

/// Messages of `from_bytes..=to_bytes` bytes go to `algorithm`/`protocol`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TuningRange {
    pub collective: String,
    pub from_bytes: u64,
    pub to_bytes: u64,
    pub algorithm: String,
    pub protocol: String,
}

/// For `skip_serializing_if`: a count that is zero says nothing.
fn is_zero(n: &u64) -> bool {
    *n == 0
}
