//! A run that finished, and the lines its processes printed as they tore
//! their communicators down. `ncclCommAbort` (or a framework's destructor at
//! exit, such as PyTorch's `ProcessGroupNCCL` when `destroy_process_group`
//! was not called) sets the abort flag and closes the proxy service's
//! sockets under it: its accept and receive fail with a stale errno
//! (`Accept failed Success`, `Resource temporarily unavailable`), a pending
//! `Close` cannot complete, and the socket calls leave `-> 3` trails. NCCL
//! 2.30 prints the failed accept at INFO level for that reason (proxy.cc).
//!
//! Each such line is a message-table row marked `at_exit`. Where every WARN
//! of the log is one and nothing else failed (no watchdog timeout, no
//! framework error, no trail with another result than ncclInternalError, no
//! trail before init completed), the findings they make are the run's
//! teardown: information when the log shows the teardown itself (`Abort
//! COMPLETE`, the framework's destructor warning), a warning when it does not
//! (the job may not have finished). Anything else failing makes them
//! symptoms again.

use topo_model::nccl::{NcclReport, Warning};
use topo_model::{Finding, Severity};
use topo_parsers::nccl_log::catalogue::{CATALOGUE, Level};

/// ncclInternalError: what a socket call ended by the abort flag returns.
const INTERNAL_ERROR: i64 = 3;

/// The finding NCCL's verdict in the trail (`-> 3`) makes.
const INTERNAL_ERROR_CODE: &str = "internal-error";

/// What the log shows of a run's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Teardown {
    /// The log shows the teardown itself (`Abort COMPLETE`, a framework's
    /// destructor at exit), not only lines it would print.
    pub(super) seen: bool,
    /// The classes of the teardown's lines: the findings said as the end.
    classes: Vec<&'static str>,
}

/// Whether the log's complaints are all a finished run's teardown (each
/// message classified once).
pub(super) fn judged(report: &NcclReport) -> Option<Teardown> {
    if super::messages::fatal(report) || report.error_codes.iter().any(|e| e.code != 0 && e.code != INTERNAL_ERROR) {
        return None;
    }
    let at_exit = |level: Level, w: &Warning| {
        CATALOGUE.classify_at(level, &w.text, w.source.as_deref()).map(|m| m.row).filter(|row| row.at_exit)
    };
    // Every WARN must be one the teardown prints.
    let mut classes =
        report.warnings.iter().map(|w| Some(at_exit(Level::Warn, w)?.class)).collect::<Option<Vec<_>>>()?;
    let warned = classes.len();
    let ends = report
        .notices
        .iter()
        .map(|w| (Level::Info, w))
        .chain(report.framework_errors.iter().map(|w| (Level::Framework, w)));
    classes.extend(ends.filter_map(|(level, w)| at_exit(level, w)).map(|row| row.class));
    let seen = classes.len() > warned;
    (!classes.is_empty()).then_some(Teardown { seen, classes })
}

/// The findings of a finished run's teardown, said as such.
pub(super) fn soften(findings: &mut [Finding], report: &NcclReport, teardown: &Teardown) {
    let severity = if teardown.seen { Severity::Info } else { Severity::Warning };
    let end = if teardown.seen {
        "the log shows the teardown itself (`Abort COMPLETE`, or the framework's destructor at exit)"
    } else {
        "the log does not show the end itself: if the job stopped before its work was done, read these as a peer lost"
    };
    let why = if report.warnings.is_empty() {
        format!(
            "The communicators were aborted at the end of the run and nothing before failed: {end}. PyTorch's \
             ProcessGroupNCCL aborts its communicators in its destructor when destroy_process_group was not called, \
             and some frameworks abort at shutdown by design."
        )
    } else {
        format!(
            "Every NCCL warning in this log is one NCCL prints while processes tear their communicators down, and \
             nothing else failed: {end}. ncclCommAbort (or PyTorch's ProcessGroupNCCL destructor when \
             destroy_process_group was not called) closes the proxy service's sockets under it, so its accept and \
             receive fail with a stale errno, a pending Close cannot complete, and the socket calls return \
             ncclInternalError (`-> 3`). NCCL 2.30 prints the failed accept at INFO level."
        )
    };
    for finding in findings.iter_mut() {
        let trail = finding.code == INTERNAL_ERROR_CODE;
        if !trail && !teardown.classes.contains(&finding.code.as_str()) {
            continue;
        }
        finding.severity = finding.severity.min(severity);
        finding.why.clone_from(&why);
        finding.fix = "Nothing to fix on the network or the GPUs. To end cleanly, call \
                       torch.distributed.destroy_process_group() (ncclCommDestroy) before the program exits; PyTorch \
                       2.4+ warns when it is not called."
            .to_string();
    }
}
