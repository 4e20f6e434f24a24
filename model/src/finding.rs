//! What `topo diagnose` (and later `preflight`) reports: one finding per
//! problem, with a stable code scripts can match on, the evidence it rests on,
//! why it costs bandwidth and what to do about it.

use serde::{Deserialize, Serialize};

/// Ordered: `Info < Warning < Error`, so `--fail-on warning` means "at least warning".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Stable, kebab-case (`net-socket-fallback`).
    pub code: String,
    pub severity: Severity,
    pub title: String,
    pub evidence: Vec<Evidence>,
    /// Why it costs bandwidth or stops the job.
    pub why: String,
    /// What the hardware should give, where the topology model knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<String>,
    pub fix: String,
    /// The hosts the finding applies to, as the evidence names them (empty:
    /// not known, or the whole input).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// The ranks it applies to (empty: not known, or every rank).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<u32>,
    /// For a failure whose evidence names no cause (a bare `unhandled system
    /// error`): the causes public threads established for such failures,
    /// most likely first, each with the check that tells it apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspects: Option<Suspects>,
}

/// Likely causes of a failure the log does not explain, and why this order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspects {
    /// Where the order comes from (threads that established the cause).
    pub basis: String,
    pub list: Vec<Suspect>,
}

/// One likely cause: its finding code, what it is, how to check it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Suspect {
    pub code: String,
    pub title: String,
    pub check: String,
}

/// One fact a finding rests on: a log line (`file:line`) or a fact of the
/// report or snapshot (`at` names where it came from).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub at: String,
    pub text: String,
}

/// At most this many pieces of evidence per finding; a last entry counts the rest.
pub const MAX_EVIDENCE: usize = 8;

impl Finding {
    /// A finding with no bandwidth figures, its evidence capped at [`MAX_EVIDENCE`].
    pub fn new(
        code: &str,
        severity: Severity,
        title: String,
        evidence: Vec<Evidence>,
        why: &str,
        fix: &str,
    ) -> Finding {
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
            hosts: Vec::new(),
            ranks: Vec::new(),
            suspects: None,
        }
    }

    /// Names the hosts and ranks the finding applies to (sorted, each once).
    pub fn on(mut self, hosts: impl IntoIterator<Item = String>, ranks: impl IntoIterator<Item = u32>) -> Finding {
        let hosts: std::collections::BTreeSet<String> = hosts.into_iter().filter(|h| !h.is_empty()).collect();
        let ranks: std::collections::BTreeSet<u32> = ranks.into_iter().collect();
        self.hosts = hosts.into_iter().collect();
        self.ranks = ranks.into_iter().collect();
        self
    }
}
