//! What NCCL's RAS subsystem (2.24+) reports about a running job: the job
//! summary, its communicators, ranks and processes it cannot reach or
//! considers dead, and ranks whose collective counts or status differ. Read
//! from `ncclras` text output or (2.28.7+) its JSON (`ncclras -f json`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RasStatus {
    /// The file it was read from.
    pub file: String,
    /// `text` or `json`.
    pub format: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u64>,
    /// Summary rows (text) or one per communicator (JSON).
    pub communicators: Vec<RasCommunicator>,
    /// Processes RAS declared dead (unreachable for 60 s).
    pub dead: Vec<RasProcess>,
    /// Processes that did not answer this query.
    pub unresponsive: Vec<RasProcess>,
    /// Ranks missing from a communicator's data.
    pub missing_ranks: Vec<RasRankRef>,
    /// Ranks grouped by a property that should agree (operation counts, status).
    pub mismatches: Vec<RasMismatch>,
    /// `Encountered N communication timeouts while gathering communicator data`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<u64>,
}

/// One row of the communicators table, or one JSON communicator.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RasCommunicator {
    /// `#0-0` style id where known (text), else the hash.
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Ranks per communicator (text: the table's `Ranks per comm`; JSON: `size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<u64>,
    /// `RUNNING`, `INIT`, `FINALIZE`, ...
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// `OK`, `MISMATCH`, `INCOMPLETE`, `ERROR`, ...
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub errors: String,
}

/// A process as RAS names it: pid, node address, GPUs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RasProcess {
    pub pid: u64,
    pub host: String,
    pub gpus: Vec<u32>,
}

/// A rank of a communicator, with what RAS knows of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RasRankRef {
    /// `#0-0` or the communicator hash.
    pub comm: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    pub rank: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// JSON: `unresponsive`, `considered_dead`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

/// `Communicator ranks have different <what>`, with its groups.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RasMismatch {
    pub comm: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// `collective operation counts`, `AllGather operation counts`, `status`.
    pub what: String,
    pub groups: Vec<RasGroup>,
}

/// `N ranks have launched up to operation K` / `N ranks have status X`, and
/// the ranks RAS lists under it (it lists only small outlier groups).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RasGroup {
    pub count: u64,
    /// The operation count, or the status.
    pub value: String,
    pub ranks: Vec<RasRankRef>,
}
