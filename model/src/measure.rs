//! What `topo probe` measured on live GPUs: copies, collectives and the hops of
//! a ring, each with the bandwidth the topology says it should reach. Stored in
//! the snapshot (`probe:`) so `show`, `diagnose` and `preflight` read the same
//! numbers the run printed.

use serde::{Deserialize, Serialize};

use crate::Bandwidth;
use crate::collective::Collective;

/// One `topo probe` run on one node (one process of a job).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// This process's place in a multi-node job (`rank` of `world`), and the
    /// launcher that said so; rank 0 of 1 when run alone.
    pub rank: u32,
    pub world: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launcher: Option<String>,
    /// `12.4`, from `cuDriverGetVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_driver: Option<String>,
    /// `2.21.5`, from `ncclGetVersion`; `None` when no collective ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_library: Option<String>,
    /// `NCCL_*` environment variables in effect for the run (NCCL obeys them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nccl_env: Vec<(String, String)>,
    pub gpus: Vec<ProbedGpu>,
    pub settings: ProbeSettings,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<CopyResult>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collectives: Vec<CollectiveResult>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ring_walk: Vec<HopResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairwise: Option<PairwiseReport>,
    /// Every NCCL rank of the job, gathered through NCCL: its host and its
    /// GPU's host copies, so a slow GPU on another node shows up here too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RankFigures>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankFigures {
    pub rank: u32,
    pub host: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2d: Option<Bandwidth>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d2h: Option<Bandwidth>,
}

/// A GPU as CUDA numbers it (CUDA's order can differ from NVML's and PCI's:
/// the bus ID is what joins it to the topology).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbedGpu {
    pub ordinal: u32,
    pub bus_id: String,
    pub name: String,
    /// This GPU's rank in the NCCL communicator, when collectives ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_rank: Option<u32>,
    /// Why the GPU could not be opened (held by another process in
    /// exclusive-process mode, an uncorrectable ECC error): it is left out of
    /// every measurement and the others go on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The MIG instance (`MIG-<uuid>`) when this is a slice of a GPU: it has a
    /// share of the GPU's copy engines and no peer access, so it is not held
    /// against the whole GPU's links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig: Option<String>,
}

/// How the run was asked for, so a reader can tell a quick run from a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeSettings {
    pub warmup: u32,
    pub iterations: u32,
    /// Bytes per copy.
    pub copy_bytes: u64,
    /// Collective message sizes, nccl-tests' convention (the larger buffer).
    pub sizes: Vec<u64>,
    /// A measurement below `threshold` x expected is a finding.
    pub threshold: f64,
}

impl Default for ProbeSettings {
    fn default() -> Self {
        ProbeSettings { warmup: 2, iterations: 10, copy_bytes: 256 << 20, sizes: Vec::new(), threshold: 0.75 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CopyKind {
    /// Pinned host memory to the GPU.
    HostToDevice,
    DeviceToHost,
    /// Both directions over the GPU's PCIe link at once (sum of the two).
    Bidirectional,
    /// A copy inside one GPU's memory (bytes copied, not read + written).
    DeviceLocal,
    /// `gpu` to `peer` with peer access on.
    Peer,
    /// `gpu` to `peer` and `peer` to `gpu` at once (sum of the two).
    PeerBothWays,
}

impl CopyKind {
    /// `H2D`, `D2H`, ... as bandwidth tools label them.
    pub fn label(self) -> &'static str {
        match self {
            CopyKind::HostToDevice => "H2D",
            CopyKind::DeviceToHost => "D2H",
            CopyKind::Bidirectional => "H2D+D2H",
            CopyKind::DeviceLocal => "D2D",
            CopyKind::Peer => "P2P",
            CopyKind::PeerBothWays => "P2P both ways",
        }
    }

    /// Whether the figure adds up two directions.
    pub fn both_directions(self) -> bool {
        matches!(self, CopyKind::Bidirectional | CopyKind::PeerBothWays)
    }
}

/// One copy measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CopyResult {
    pub kind: CopyKind,
    /// CUDA ordinal of the GPU (the source for peer copies).
    pub gpu: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<u32>,
    pub bytes: u64,
    /// Seconds per copy (per pair of copies for both-way kinds), from CUDA events.
    pub seconds: f64,
    pub bandwidth: Bandwidth,
    #[serde(flatten)]
    pub expectation: Expectation,
    /// Host copies: the NUMA node the pinned host memory was placed on (the
    /// GPU's own when topo could bind to its CPUs), as nvbandwidth places it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_node: Option<i32>,
    /// Why the copy could not run (peer access refused, allocation failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What the topology says a measurement should reach, and how close it came.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Expectation {
    /// `PCIe Gen5 x16`, `NV18`, `PXB`: the path the figure is held against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Bandwidth>,
    /// measured / expected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
}

impl Expectation {
    pub fn new(path: Option<String>, expected: Option<Bandwidth>, measured: Bandwidth) -> Expectation {
        let ratio = expected.filter(|e| e.0 > 0.0).map(|e| measured.0 / e.0);
        Expectation { path, expected, ratio }
    }
}

/// One collective over all the job's GPUs, swept over sizes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectiveResult {
    pub collective: Collective,
    /// NCCL ranks (GPUs) in the communicator.
    pub ranks: u32,
    pub rows: Vec<CollectiveRow>,
    /// Held against the best bus bandwidth of the sweep.
    #[serde(flatten)]
    pub expectation: Expectation,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectiveRow {
    pub bytes: u64,
    /// Seconds per operation, the average over every rank whose time is
    /// known (nccl-tests' default, `-a 1`); `algbw` and `busbw` come from it.
    pub seconds: f64,
    /// Seconds per operation of the slowest rank.
    #[serde(default)]
    pub slowest: f64,
    pub algbw: Bandwidth,
    pub busbw: Bandwidth,
    /// Output elements that differ from the exactly known result, over this
    /// process's ranks; any is a failed run.
    pub wrong: u64,
    /// Seconds per operation of each of this process's ranks (NCCL rank, seconds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_rank: Vec<(u32, f64)>,
}

impl CollectiveRow {
    /// Sets `seconds` (the average over `per_rank`), `slowest` and the
    /// bandwidths from the per-rank times, as nccl-tests reports a row.
    pub fn settle(&mut self, collective: Collective, ranks: u32) {
        let times: Vec<f64> = self.per_rank.iter().map(|(_, s)| *s).filter(|s| s.is_finite()).collect();
        if times.is_empty() {
            return;
        }
        self.seconds = times.iter().sum::<f64>() / times.len() as f64;
        self.slowest = times.iter().copied().fold(0.0, f64::max);
        let (algbw, busbw) = crate::collective::bandwidths(collective, self.bytes, self.seconds, ranks);
        self.algbw = Bandwidth::from_gbps(algbw);
        self.busbw = Bandwidth::from_gbps(busbw);
    }
}

/// One hop of a ring, timed alone with send/recv.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HopResult {
    /// NCCL ranks.
    pub from: u32,
    pub to: u32,
    pub bytes: u64,
    pub seconds: f64,
    pub bandwidth: Bandwidth,
    #[serde(flatten)]
    pub expectation: Expectation,
}

/// `topo probe --pairwise`: the job's processes (nodes) paired, every pair
/// measured at once, and the nodes of failed pairs measured again against
/// nodes that passed, so a bad node is isolated rather than its partner blamed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PairwiseReport {
    /// Bytes per message.
    pub bytes: u64,
    pub threshold: f64,
    /// The first round's medians, which every pair is held against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_sendrecv: Option<Bandwidth>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_busbw: Option<Bandwidth>,
    /// Host of each rank.
    pub hosts: Vec<String>,
    pub rounds: Vec<Vec<PairResult>>,
    pub nodes: Vec<NodeVerdict>,
}

/// One pair of ranks: send/recv both ways at once (per direction) and a
/// two-rank all_reduce with its data check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairResult {
    pub a: u32,
    pub b: u32,
    pub sendrecv: Bandwidth,
    pub all_reduce_busbw: Bandwidth,
    pub wrong: u64,
    pub passed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeVerdict {
    pub rank: u32,
    pub host: String,
    pub passed: bool,
    pub evidence: Vec<String>,
}
