//! What NCCL wrote to `NCCL_GRAPH_DUMP_FILE`: per graph (ring, tree, CollNet,
//! NVLS) its search result and, per channel, the order NCCL walks the local
//! GPUs and the NICs the channel enters and leaves the node through. Kept next
//! to the rings read from a log (`NcclReport::graph_dumps`).

use serde::{Deserialize, Serialize};

/// One dump file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GraphDump {
    /// The file it came from, as the user named it.
    pub source: String,
    /// `<graphs version="1">`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    pub graphs: Vec<DumpedGraph>,
}

/// One `<graph>`: NCCL's search result for one pattern.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DumpedGraph {
    pub id: u32,
    /// NCCL's `NCCL_TOPO_PATTERN_*` number; [`pattern_name`] names it.
    pub pattern: u32,
    pub crossnic: bool,
    pub nchannels: u32,
    /// GB/s per channel inside the node and across nodes, as NCCL's search scored them.
    pub speed_intra: f64,
    pub speed_inter: f64,
    /// NCCL path types (`NVL`, `PIX`, `SYS`, ...).
    pub type_intra: String,
    pub type_inter: String,
    pub same_channels: bool,
    pub channels: Vec<DumpedChannel>,
}

/// One `<channel>`: its steps in the order NCCL wrote them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DumpedChannel {
    pub steps: Vec<GraphStep>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GraphStep {
    /// `<net dev=N/>`: NCCL's network device N (its order of `NET/IB` devices).
    Net(u64),
    /// `<gpu dev=N/>`: the node's CUDA device N.
    Gpu(u32),
}

impl DumpedChannel {
    pub fn gpus(&self) -> Vec<u32> {
        self.steps.iter().filter_map(|s| if let GraphStep::Gpu(g) = s { Some(*g) } else { None }).collect()
    }

    /// The NIC the channel enters the node through (the first step), if any.
    pub fn net_in(&self) -> Option<u64> {
        match self.steps.first() {
            Some(GraphStep::Net(n)) => Some(*n),
            _ => None,
        }
    }

    /// The NIC the channel leaves the node through (the last step), if any.
    pub fn net_out(&self) -> Option<u64> {
        match self.steps.last() {
            Some(GraphStep::Net(n)) if self.steps.len() > 1 => Some(*n),
            _ => None,
        }
    }
}

/// NCCL's pattern numbers (`src/graph/topo.h`, `NCCL_TOPO_PATTERN_*`).
pub const PATTERNS: &[(u32, &str)] =
    &[(1, "balanced tree"), (2, "split tree"), (3, "tree"), (4, "ring"), (5, "NVLS"), (6, "CollNet direct")];

pub fn pattern_name(pattern: u32) -> &'static str {
    PATTERNS.iter().find(|(p, _)| *p == pattern).map_or("unknown pattern", |(_, name)| name)
}
