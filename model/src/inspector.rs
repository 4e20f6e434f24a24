//! NCCL Inspector (profiler plugin, `plugins/profiler/inspector`) records:
//! one per collective per rank, with its execution time and bandwidth.

use serde::{Deserialize, Serialize};

/// One `coll_perf` record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InspectorRecord {
    pub file: String,
    /// Line of the record in its file (records are one per line).
    pub line: u64,
    /// The communicator (`header.id`).
    pub comm: String,
    pub rank: u32,
    pub n_ranks: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u64>,
    pub coll: String,
    pub sn: u64,
    pub msg_size_bytes: u64,
    pub exec_time_us: u64,
    pub busbw_gbs: f64,
}

/// A rank that the other ranks of a communicator keep waiting for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InspectorStraggler {
    pub comm: String,
    pub rank: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u64>,
    /// Collectives compared (every rank of the communicator recorded them).
    pub compared: u64,
    /// Of those, how many this rank finished fastest by a wide margin: it
    /// arrived last, so its kernel waited least, while the others' waited for it.
    pub last_to_arrive: u64,
    /// Median over those collectives of the others' median time / this rank's time.
    pub median_ratio: f64,
    /// The collective with the widest spread, as evidence: (coll, sn, this rank's µs, slowest rank, its µs).
    pub example: (String, u64, u64, u32, u64),
}
