//! `topo diagnose`: findings from what NCCL reported (a parsed log) and, when
//! given, what the node is (a snapshot). Rules are pure functions over those
//! two; each returns at most one finding with its evidence.

mod evidence;
pub mod hang;
pub mod hung;
mod job;
mod messages;
mod network;
mod requested;
mod rules;
mod settings;
mod suspects;
mod teardown;

use topo_model::nccl::NcclReport;
use topo_model::{Finding, Snapshot};
use topo_parsers::nccl_log::catalogue::CATALOGUE;

/// What the rules look at.
pub struct Inputs<'a> {
    pub report: &'a NcclReport,
    pub machine: Option<&'a Snapshot>,
    /// How many nodes the job spans as far as the log tells, read once.
    pub(super) scope: Scope,
}

/// Every finding: the cause of a failed job first, then most severe first;
/// among equals, the one whose evidence comes earliest in the log, then by code.
pub fn diagnose(report: &NcclReport, machine: Option<&Snapshot>) -> Vec<Finding> {
    diagnose_job(report, machine, false)
}

/// [`diagnose`], told whether the job hung (`--hung`): what no line can say.
/// A hung job whose log shows no failure gets a finding of where its lines
/// stop, with the causes of such hangs as suspects.
pub fn diagnose_job(report: &NcclReport, machine: Option<&Snapshot>, hung: bool) -> Vec<Finding> {
    let without_abort = trails_that_say_no_fault(report);
    let report = without_abort.as_ref().unwrap_or(report);
    let inputs = Inputs { report, machine, scope: scope(report) };
    let (mut findings, cause) = messages::findings(report, inputs.scope);
    findings.extend(rules::RULES.iter().filter_map(|rule| rule(&inputs)));
    let mut findings = merge_same_code(findings);
    // A finished run's teardown, unless its user says the job hung.
    if let Some(teardown) = teardown::judged(report).filter(|_| !hung) {
        teardown::soften(&mut findings, report, &teardown);
    }
    for finding in &mut findings {
        // A log-wide fact applies to every host the log names.
        if finding.hosts.is_empty() && finding.ranks.is_empty() {
            finding.hosts = report.hosts.clone();
        }
    }
    // A hang its user reports, where no line shows a failure: how far the lines got orders the suspects.
    let mut shown = Vec::new();
    if let Some((finding, scopes)) = hung.then(|| hung::finding(report, &findings)).flatten() {
        findings.push(finding);
        shown = scopes;
    }
    suspects::attach(&mut findings, cause.as_deref(), report, inputs.scope, &shown);
    findings.extend(machine.map(crate::checks::hardware).unwrap_or_default());
    // The cause of a failed job first, then by severity, then log order.
    let is_cause = |f: &Finding| cause.as_deref() == Some(f.code.as_str());
    findings.sort_by(|a, b| {
        is_cause(b)
            .cmp(&is_cause(a))
            .then_with(|| b.severity.cmp(&a.severity))
            .then_with(|| first_line(a).cmp(&first_line(b)))
            .then_with(|| a.code.cmp(&b.code))
    });
    findings
}

/// The report with the error-trail lines that say no fault taken out: those
/// a communicator's abort produced (`-> 3` after `socketProgressOpt: abort
/// called`), which are the abort itself, and those of a transport's init that
/// NCCL went past to use another network (the message table's
/// `fallback_trails`: 2.28+'s IB init on a host without IB, then sockets).
/// Copied only when a log has them.
fn trails_that_say_no_fault(report: &NcclReport) -> Option<NcclReport> {
    let fell_back = |location: &str| {
        CATALOGUE
            .fallback_trails
            .iter()
            .any(|t| t.location == location && report.network.used.iter().any(|n| n == t.instead))
    };
    if report.error_codes.iter().all(|e| e.after_abort == 0 && !fell_back(&e.location)) {
        return None;
    }
    let mut trimmed = report.clone();
    trimmed.error_codes.retain_mut(|e| {
        e.count -= e.after_abort.min(e.count);
        e.after_abort = 0;
        e.count > 0 && !fell_back(&e.location)
    });
    Some(trimmed)
}

/// Findings of one code from different rules (a WARN and the rule that reads
/// the same fault from other lines) become one: evidence joined, the higher
/// severity, hosts and ranks together.
fn merge_same_code(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for finding in findings {
        match out.iter_mut().find(|f| f.code == finding.code) {
            Some(kept) => {
                kept.severity = kept.severity.max(finding.severity);
                for e in finding.evidence {
                    if !kept.evidence.contains(&e) && kept.evidence.len() < topo_model::finding::MAX_EVIDENCE {
                        kept.evidence.push(e);
                    }
                }
                kept.hosts.extend(finding.hosts);
                kept.hosts.sort();
                kept.hosts.dedup();
                kept.ranks.extend(finding.ranks);
                kept.ranks.sort_unstable();
                kept.ranks.dedup();
                kept.expected = kept.expected.take().or(finding.expected);
                kept.actual = kept.actual.take().or(finding.actual);
            }
            None => out.push(finding),
        }
    }
    out
}

/// How many nodes the job spanned, as far as the log tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    /// Every rank of the communicator was seen, all on one host (or nccl-tests
    /// listed every rank of its job there).
    SingleNode,
    /// A hop left a node, or several hosts or nodes are named.
    MultiNode,
    /// An excerpt: one host seen, but not every rank.
    Unknown,
}

pub(super) fn scope(report: &NcclReport) -> Scope {
    let comms = &report.communicators;
    let crosses = comms.iter().flat_map(|c| &c.connections).any(|c| c.cross_node == Some(true));
    if crosses
        || report.hosts.len() > 1
        || report.nodes.is_some_and(|n| n > 1)
        || comms.iter().any(|c| c.nnodes.is_some_and(|n| n > 1))
    {
        return Scope::MultiNode;
    }
    let whole_on_one_host = |c: &topo_model::nccl::Communicator| {
        let hosts: std::collections::BTreeSet<_> = c.ranks.iter().map(|r| r.host.as_deref()).collect();
        c.nnodes == Some(1) && c.nranks.is_some_and(|n| c.ranks.len() as u32 == n) && hosts.len() == 1
    };
    if !comms.is_empty() && comms.iter().filter(|c| c.nranks.is_some_and(|n| n > 1)).all(whole_on_one_host) {
        return Scope::SingleNode;
    }
    // nccl-tests lists every rank of its job (`#  Rank  3 Group  0 Pid ... on
    // host device ...`), gathered from all processes: a table of ranks 0..n on
    // one host, no communicator larger, is a job on that host alone.
    let largest = comms.iter().filter_map(|c| c.nranks).max().unwrap_or(0) as usize;
    let table_on_one_host = |t: &topo_model::nccl::NcclTestsRun| {
        let hosts: std::collections::BTreeSet<_> = t.ranks.iter().map(|r| r.host.as_str()).collect();
        let numbered: std::collections::BTreeSet<u32> = t.ranks.iter().map(|r| r.rank).collect();
        t.ranks.len() > 1
            && hosts.len() == 1
            && numbered.len() == t.ranks.len()
            && numbered.last().is_some_and(|&last| last as usize + 1 == t.ranks.len())
            && largest <= t.ranks.len()
    };
    if report.nccl_tests.iter().any(table_on_one_host) {
        return Scope::SingleNode;
    }
    Scope::Unknown
}

/// The earliest `file:line` a finding's evidence cites (facts without a line
/// sort after every line).
fn first_line(finding: &Finding) -> (u8, String, u64) {
    finding
        .evidence
        .iter()
        .filter_map(|e| {
            let (file, line) = e.at.rsplit_once(':')?;
            Some((0, file.to_string(), line.parse().ok()?))
        })
        .min()
        .unwrap_or((1, String::new(), 0))
}
