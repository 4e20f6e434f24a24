//! What PyTorch's Flight Recorder dumps say about a job, per process group:
//! the last collective each rank entered and completed, and what that means
//! (who holds the others, whose call differs, who left no dump). Built by
//! `topo_parsers::flight_recorder`; judged by `topo diagnose`.

use serde::{Deserialize, Serialize};

/// The job as the dumps (and, where given, the NCCL log's rank table) describe it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JobReport {
    /// One per dump file read (or that failed to read).
    pub dumps: Vec<DumpSummary>,
    pub groups: Vec<GroupState>,
}

/// One dump file: the rank it belongs to and what was in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DumpSummary {
    pub file: String,
    /// From the file name's trailing digits, as PyTorch's own analyser takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// `pickle` or `json`.
    pub format: String,
    /// The dump's format version (`"2.10"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub entries: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A process group and where each of its ranks stands.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupState {
    /// The group's name as entries give it (`process_group[0]`, `"0"` for the default group).
    pub name: String,
    /// Its description (`default_pg`, or what `new_group(group_desc=..)` set).
    pub desc: String,
    /// Global ranks of the group (from `pg_config`, else the ranks that recorded it).
    pub ranks: Vec<u32>,
    pub members: Vec<RankState>,
    /// Highest collective sequence id any rank entered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontier: Option<u64>,
    pub verdict: GroupVerdict,
}

/// One rank in one group.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RankState {
    pub rank: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_dev: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_id: Option<String>,
    /// The dump file; none when the rank left no dump.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_entered: Option<CollectiveRecord>,
    /// Sequence id of the last collective known complete (entry state, `retired`, or `pg_status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_completed: Option<u64>,
}

/// One Flight Recorder entry, as far as the analysis needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CollectiveRecord {
    /// `collective_seq_id` (`seq_id` before dump version 2.3).
    pub seq: u64,
    /// Index of the entry in the dump's `entries` list (the evidence).
    pub entry: u64,
    /// `profiling_name` without the backend prefix (`all_reduce`).
    pub op: String,
    /// `profiling_name` as recorded (`nccl:all_reduce`).
    pub profiling_name: String,
    pub input_sizes: Vec<Vec<u64>>,
    pub output_sizes: Vec<Vec<u64>>,
    pub input_dtypes: Vec<String>,
    /// `scheduled`, `started` or `completed`.
    pub state: String,
    pub retired: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_created_ns: Option<u64>,
}

/// What the group's dumps show.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupVerdict {
    /// Ranks that never entered the collective the others are in, lowest last
    /// sequence id first: the stuck or slow ones.
    pub behind: Vec<u32>,
    /// Ranks that entered the frontier collective and have not completed it: they wait.
    pub waiting: Vec<u32>,
    /// Ranks of the group with no dump at all.
    pub no_dump: Vec<u32>,
    pub mismatches: Vec<Mismatch>,
    /// Ranks that entered recent collectives last, by a margin, most of the time.
    pub stragglers: Vec<Straggler>,
}

/// One sequence id at which ranks called different collectives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    pub seq: u64,
    /// `op`, `sizes` or `dtype`: what differs.
    pub kind: String,
    /// The ranks whose call differs from the most common one (named first in findings).
    pub odd: Vec<u32>,
    /// What most ranks called, and what the odd ranks called.
    pub expected: String,
    pub actual: String,
}

/// A rank that enters collectives late.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Straggler {
    pub rank: u32,
    /// Of the compared collectives, how many it entered last by more than the margin.
    pub late: u64,
    pub compared: u64,
    /// Median lateness behind the first rank, milliseconds.
    pub median_ms: f64,
}

impl GroupState {
    /// What a rank's row says about it, strongest first: `STUCK` (behind while
    /// others wait), `NO DUMP`, `MISMATCH`, `waiting`, `late`, or nothing.
    pub fn mark(&self, rank: u32) -> &'static str {
        let v = &self.verdict;
        if v.behind.contains(&rank) && !v.waiting.is_empty() {
            "STUCK"
        } else if v.no_dump.contains(&rank) {
            "NO DUMP"
        } else if v.mismatches.iter().any(|m| m.odd.contains(&rank)) {
            "MISMATCH"
        } else if v.waiting.contains(&rank) {
            "waiting"
        } else if v.stragglers.iter().any(|s| s.rank == rank) {
            "late"
        } else {
            ""
        }
    }
}

impl RankState {
    /// `#6 all_reduce [[1024]] scheduled`, or `-`.
    pub fn entered_text(&self) -> String {
        self.last_entered
            .as_ref()
            .map_or("-".to_string(), |e| format!("#{} {} {:?} {}", e.seq, e.op, e.input_sizes, e.state))
    }
}
