//! Findings from what NCCL (and the framework around it) said: every WARN
//! line, every INFO line the message table lists as a degraded choice, every
//! framework error carrying NCCL's words, and error trails (`file.cc:NNN ->
//! N`). One finding per root-cause class, with the class's why and fix from
//! `parsers/data/nccl-messages.yaml`; a WARN no row explains still becomes a
//! finding of its own. Nothing NCCL warned about is dropped.

use std::collections::BTreeMap;

use topo_model::nccl::{NcclReport, Warning};
use topo_model::{Evidence, Finding, Severity};
use topo_parsers::nccl_log::catalogue::{self, CATALOGUE, Level};

/// Code of the finding for WARN lines no row of the table explains.
pub(super) const UNCLASSIFIED_WARNING: &str = "nccl-warning";
/// A peer went away (a connection closed, a remote error).
const PEER_LOST: &str = "peer-lost";
const COMM_ABORTED: &str = "comm-aborted";
/// The code of a collective that timed out (the watchdog's, NCCL's own).
pub(super) const COLLECTIVE_TIMEOUT: &str = "collective-timeout";
/// The class of the bootstrap's source files in the table's `sources`.
const BOOTSTRAP: &str = "bootstrap-connect-failure";

/// Code of the finding for framework errors and error trails that name no cause.
pub(super) const UNEXPLAINED_ERROR: &str = "nccl-error";

/// One message with what kind it was.
struct Said<'a> {
    warning: &'a Warning,
    level: Level,
    /// A message about the network between nodes on a job the log shows on
    /// one node (an `off_node` row): said, at info severity.
    moot: bool,
}

/// Which finding a message belongs to: its class, or the generic codes.
fn code_of(said: &Said) -> String {
    match (said.warning.class.as_deref(), said.level) {
        (Some("unknown") | None, Level::Warn | Level::Info) => UNCLASSIFIED_WARNING.into(),
        (Some("unknown") | None, Level::Framework) => UNEXPLAINED_ERROR.into(),
        (Some(class), _) => class.into(),
    }
}

/// Whether the log shows the job failed: a framework error, a watchdog
/// timeout, an abort, or an error trail that init did not get past (NCCL
/// also prints trails for faults it recovers from, e.g. CollNet falling back
/// to the network: then every rank that started still completes init).
pub(super) fn fatal(report: &NcclReport) -> bool {
    let trail = report.error_codes.iter().any(|e| e.code != 0 && e.code != 7);
    let init_unfinished = report.init_complete == 0
        || report.communicators.iter().any(|c| c.ranks.iter().any(|r| !c.init_complete.contains(&r.rank)));
    // A framework row below error severity (libfabric's `provider efa output
    // empty list`, a fallback) is not by itself a failure.
    let framework_failed = report.framework_errors.iter().any(|w| {
        CATALOGUE
            .classify(Level::Framework, &w.text)
            .is_none_or(|m| CATALOGUE.severity(m.row) == catalogue::Severity::Error)
    });
    (trail && init_unfinished)
        || framework_failed
        || !report.timeouts.is_empty()
        || report.warnings.iter().any(|w| w.text == "NCCL ABORT")
}

/// The table row a message matched (its level's rows, else the WARN rows a
/// framework may quote).
fn row_of(said: &Said) -> Option<&'static catalogue::Message> {
    let text = &said.warning.text;
    let source = said.warning.source.as_deref();
    CATALOGUE
        .classify_at(said.level, text, source)
        .or_else(|| CATALOGUE.classify_at(Level::Warn, text, source))
        .map(|m| m.row)
}

/// Severity the table gives a message (its row's, else its class's).
fn table_severity(said: &Said) -> Severity {
    if said.moot {
        return Severity::Info;
    }
    let severity = match (row_of(said), said.warning.class.as_deref()) {
        (Some(row), _) => CATALOGUE.severity(row),
        (None, Some(class)) => CATALOGUE.class(class).and_then(|c| c.severity).unwrap_or(catalogue::Severity::Warning),
        (None, None) => catalogue::Severity::Warning,
    };
    match severity {
        catalogue::Severity::Info => Severity::Info,
        catalogue::Severity::Warning => Severity::Warning,
        catalogue::Severity::Error => Severity::Error,
    }
}

/// Evidence for one message: where it first appeared, how often, who.
fn evidence_of(said: &Said) -> Evidence {
    let w = said.warning;
    let mut text = w.text.clone();
    if w.count > 1 {
        text.push_str(&format!(" (×{})", w.count));
    }
    let mut who = Vec::new();
    if !w.hosts.is_empty() {
        who.push(format!("hosts {}", list(&w.hosts)));
    }
    if !w.ranks.is_empty() {
        let ranks: Vec<String> = w.ranks.iter().map(u32::to_string).collect();
        who.push(format!("ranks {}", list(&ranks)));
    }
    if let Some(source) = &w.source {
        who.push(format!("from {source}"));
    }
    if !who.is_empty() {
        text.push_str(&format!(" [{}]", who.join("; ")));
    }
    if let Some(decoded) = completion_status(&w.text) {
        text.push_str(&format!(" — {decoded}"));
    }
    Evidence { at: format!("{}:{}", w.file, w.line), text }
}

/// A short list: the first few items and a count of the rest.
fn list(items: &[String]) -> String {
    const SHOWN: usize = 6;
    let mut out = items.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > SHOWN {
        out.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    out
}

/// The status of a completion error read with the table's meaning and hint.
fn completion_status(text: &str) -> Option<String> {
    let status = CATALOGUE.completion_status(text)?;
    let hint = status.hint.map_or(String::new(), |h| format!("; {h}"));
    Some(format!("status {} = {}: {}{hint}", status.code, status.name, status.meaning))
}

/// A framework's own words (`ncclInvalidUsage: This usually reflects ...`),
/// as opposed to NCCL's (WARN lines, and the `Last error:` text a framework
/// repeats): NCCL's words name the cause more precisely.
fn is_wrapper(said: &Said) -> bool {
    said.level == Level::Framework && said.warning.source.is_none()
}

/// Position of a message in the input, for ordering (input order is not
/// known here; the file name and line keep one file's order).
fn position(w: &Warning) -> (String, u64) {
    (w.file.clone(), w.line)
}

/// The findings for every message; the first causal one of a failed job is an
/// error and comes first.
pub(super) fn findings(report: &NcclReport, scope: super::Scope) -> (Vec<Finding>, Option<String>) {
    let one_node = scope == super::Scope::SingleNode;
    let said_as = |warning, level| {
        let mut said = Said { warning, level, moot: false };
        said.moot = one_node && row_of(&said).is_some_and(|row| row.off_node);
        said
    };
    let mut said: Vec<Said> = Vec::new();
    said.extend(report.warnings.iter().map(|warning| said_as(warning, Level::Warn)));
    // Lines every run prints at its end speak only beside a failure.
    // A framework's own teardown line (its destructor at exit) is no failure.
    let at_exit = |w: &Warning| CATALOGUE.classify(Level::Framework, &w.text).is_some_and(|m| m.row.at_exit);
    let failed = fatal(report) || !report.warnings.is_empty() || report.framework_errors.iter().any(|w| !at_exit(w));
    // Every communicator the log sizes has one rank: lines about peers say nothing.
    let mut sizes = report.communicators.iter().filter_map(|c| c.nranks).peekable();
    let alone = sizes.peek().is_some() && sizes.all(|n| n == 1);
    let quiet = |w: &Warning| {
        CATALOGUE.info_row(&w.text).is_some_and(|m| (!failed && m.row.after_failure) || (alone && m.row.needs_peers))
    };
    said.extend(report.notices.iter().filter(|w| !quiet(w)).map(|warning| said_as(warning, Level::Info)));
    said.extend(report.framework_errors.iter().map(|warning| said_as(warning, Level::Framework)));
    // The earliest message of the trail that is not a benign notice: the
    // cause, when the job failed. A specific WARN beats a framework echo.
    let fatal = fatal(report);
    let first = said
        .iter()
        .filter(|s| table_severity(s) > Severity::Info && s.warning.text != "NCCL ABORT")
        .min_by_key(|s| (code_of(s) == UNEXPLAINED_ERROR, is_wrapper(s), position(s.warning)));
    // A framework's abort or bare error after a watchdog timeout in the same
    // file (`watchdog thread terminated with exception` under `Watchdog
    // caught collective operation timeout`) is the timeout's consequence:
    // the timeout is the first failure.
    let timed_out_before =
        |s: &Said| report.timeouts.iter().any(|t| t.file == s.warning.file && t.line < s.warning.line);
    let causal = first.map(|s| match code_of(s) {
        code if (code == COMM_ABORTED || code == UNEXPLAINED_ERROR) && is_wrapper(s) && timed_out_before(s) => {
            COLLECTIVE_TIMEOUT.to_string()
        }
        code => code,
    });

    // The first failure is a connection the peer closed, and the error trail
    // runs through the bootstrap (`bootstrap.cc:701 -> 6`): the ranks'
    // bootstrap failed, whether the peer died or something else (a scanner, a
    // firewall) closed it.
    let bootstrap_trail = fatal
        && causal.as_deref() == Some(PEER_LOST)
        && report
            .error_codes
            .iter()
            .filter(|e| e.code != 0)
            .any(|e| CATALOGUE.source_class(&e.location) == Some(BOOTSTRAP));
    let mut by_code: BTreeMap<String, Vec<&Said>> = BTreeMap::new();
    for s in &said {
        by_code.entry(code_of(s)).or_default().push(s);
        if bootstrap_trail && code_of(s) == PEER_LOST {
            by_code.entry(BOOTSTRAP.to_string()).or_default().push(s);
        }
        // The further classes the message points at get it as evidence too.
        for also in &s.warning.also {
            let list = by_code.entry(also.clone()).or_default();
            if !list.iter().any(|x| std::ptr::eq(*x, s)) {
                list.push(s);
            }
        }
    }
    let mut out = Vec::new();
    for (code, mut group) in by_code {
        group.sort_by_key(|s| (is_wrapper(s), position(s.warning)));
        let mut severity = group.iter().map(|s| table_severity(s)).max().unwrap_or(Severity::Warning);
        let is_cause = fatal && causal.as_deref() == Some(code.as_str());
        if is_cause {
            severity = Severity::Error;
        }
        let mut evidence: Vec<Evidence> = group.iter().map(|s| evidence_of(s)).collect();
        if group.iter().any(|s| s.moot) {
            evidence.push(super::evidence::fact(
                "scope",
                "every rank of the job is on one node: no traffic needed the network between nodes".into(),
            ));
        }
        if is_cause && let Some(trail) = trail_summary(report) {
            evidence.push(trail);
        }
        let hosts = group.iter().flat_map(|s| s.warning.hosts.iter().cloned().chain(s.warning.host.clone()));
        let ranks = group.iter().flat_map(|s| s.warning.ranks.iter().copied().chain(s.warning.rank));
        let mut finding =
            finding_for(&code, severity, evidence, is_cause).on(hosts.collect::<Vec<_>>(), ranks.collect::<Vec<_>>());
        // The earliest message whose own row explains it (`bind` with
        // EADDRINUSE, a provider's error) says more than its class.
        if let Some(row) = group.iter().filter_map(|s| row_of(s)).find(|r| r.class == code && r.why.is_some()) {
            finding.why = row.why.unwrap_or_default().to_string();
            finding.fix = row.fix.map_or(finding.fix, str::to_string);
        }
        out.push(finding);
    }
    // NCCL's own verdict in the trail's result codes (`-> 3`, ncclInternalError;
    // `-> 5`, ncclInvalidUsage), where no message already says it: a bootstrap
    // WARN followed by `-> 3` is NCCL calling it an internal error.
    if !said.is_empty() {
        for class in verdicts_of_trail(report) {
            if !out.iter().any(|f| f.code == class) {
                let evidence: Vec<Evidence> = trail_summary(report).into_iter().collect();
                // Beside a cause the messages name, NCCL's verdict is context;
                // so it is in a job the log does not show failing: every trail
                // there is one NCCL went past (init completed), as a CollNet
                // setup that falls back to the network (`coll_net.h:21 -> 3`).
                let named = fatal && causal.as_deref().is_some_and(|c| c != UNEXPLAINED_ERROR && c != class);
                let severity = match CATALOGUE.class(class).and_then(|c| c.severity) {
                    _ if named || !fatal => Severity::Info,
                    Some(catalogue::Severity::Error) => Severity::Error,
                    _ => Severity::Warning,
                };
                out.push(finding_for(class, severity, evidence, false));
            }
        }
    }
    // An error trail with nothing that says why: the trail itself.
    if said.is_empty() && report.error_codes.iter().any(|e| e.code != 0 && e.code != 7) {
        let trail = trail_only(report);
        let cause = trail.as_ref().map(|f| f.code.clone());
        out.extend(trail);
        // NCCL's verdict in the result code (`-> 3`, an internal error) beside
        // the place the trail names: context, the place is the cause.
        for class in verdicts_of_trail(report) {
            if !out.iter().any(|f| f.code == class) {
                let evidence: Vec<Evidence> = trail_summary(report).into_iter().collect();
                let severity = if cause.is_some() { Severity::Info } else { Severity::Error };
                out.push(finding_for(class, severity, evidence, false));
            }
        }
        return (out, cause);
    }
    let mut cause = causal.filter(|_| fatal);
    // A framework error that names no cause (`unhandled system error`) over an
    // error trail: the trail's first line says where NCCL failed
    // (`misc/socket.cc:666 -> 2` under `bootstrap.cc`), which names more.
    if cause.as_deref() == Some(UNEXPLAINED_ERROR)
        && let Some(trail) = trail_only(report).filter(|t| t.code != UNEXPLAINED_ERROR)
    {
        let code = trail.code.clone();
        match out.iter_mut().find(|f| f.code == code) {
            Some(existing) => {
                existing.severity = Severity::Error;
                existing.evidence.extend(trail.evidence);
            }
            None => out.push(trail),
        }
        cause = Some(code);
    }
    // A bare NCCL error or a watchdog timeout (nothing else named) after the
    // program's own exception: the rank that raised it exited or stopped
    // calling collectives, and its peers' NCCL calls failed or waited for that.
    let echoes = match cause.as_deref() {
        Some(code) => code == UNEXPLAINED_ERROR || code == COLLECTIVE_TIMEOUT,
        None => !report.timeouts.is_empty(),
    };
    if echoes && let Some(raised) = &report.application_error {
        // The timeout is no longer the first failure: the program's error is.
        let who = raised.rank.map_or("a rank".to_string(), |r| format!("rank {r}"));
        for finding in out.iter_mut().filter(|f| f.code == COLLECTIVE_TIMEOUT) {
            let title = finding.title.trim_end_matches(FIRST_FAILURE);
            finding.title = format!("{title} (after the program's own error on {who})");
        }
        out.push(application_exit(raised));
        cause = Some(PEER_LOST.to_string());
    }
    if let Some(cause) = cause.as_deref().filter(|c| *c != UNEXPLAINED_ERROR) {
        // The framework's own report is the echo of the cause found above.
        for finding in out.iter_mut().filter(|f| f.code == UNEXPLAINED_ERROR) {
            finding.title = format!("The framework reported NCCL's failure (its cause: {cause})");
        }
    }
    (out, cause)
}

/// How the title of the finding that is a failed job's cause ends.
const FIRST_FAILURE: &str = " (the first failure in the log)";

/// The program's exception before a bare NCCL error (see
/// `NcclReport::application_error`): the rank that raised it went away.
fn application_exit(raised: &Warning) -> Finding {
    let who = raised.rank.map_or("A rank".to_string(), |r| format!("Rank {r}"));
    let mut finding = finding_for(PEER_LOST, Severity::Error, vec![super::evidence::warning_evidence(raised)], true);
    finding.why = format!(
        "{who} raised an error of the program itself (`{}`) before any NCCL failure: a rank that raises one \
         exits (its connections close, and its peers' NCCL calls fail with a bare system or remote error) \
         or stops calling collectives (its peers wait until the watchdog times them out). That NCCL error \
         or timeout is the echo; NCCL and the network are not at fault.",
        raised.text
    );
    finding.fix = "Fix the program's error on that rank (its traceback is above the NCCL error in the log); \
                   rerun and check that no rank raises before the collective."
        .to_string();
    finding.on(raised.host.clone(), raised.rank)
}

/// A finding of a table class, in its words (for rules that read a fault
/// from facts rather than from a message).
pub(super) fn of_class(code: &str, severity: Severity, evidence: Vec<Evidence>) -> Option<Finding> {
    CATALOGUE.class(code)?;
    Some(finding_for(code, severity, evidence, false))
}

/// The finding for one code, in the words of the class's table entry.
fn finding_for(code: &str, severity: Severity, evidence: Vec<Evidence>, is_cause: bool) -> Finding {
    let (title, why, fix) = match CATALOGUE.class(code) {
        Some(class) => (class.title.to_string(), class.why.to_string(), class.fix.to_string()),
        None if code == UNEXPLAINED_ERROR => (
            "The job failed with an NCCL error that names no cause".to_string(),
            "The framework reports NCCL's error code; the reason is in NCCL's own WARN lines (run with \
             NCCL_DEBUG=WARN or INFO on every rank) or in the log of the rank that failed first."
                .to_string(),
            "Rerun with NCCL_DEBUG=INFO (NCCL_DEBUG_FILE=/tmp/nccl.%h.%p) and read the first WARN on any rank; \
             check the other ranks' logs for the process that exited first."
                .to_string(),
        ),
        None => {
            let unknown = CATALOGUE.class("unknown").cloned().unwrap_or_default();
            (
                format!("NCCL warned ({} message(s) not in topo's table)", evidence.len()),
                unknown.why.to_string(),
                unknown.fix.to_string(),
            )
        }
    };
    let title = if is_cause { format!("{title}{FIRST_FAILURE}") } else { title };
    Finding::new(code, severity, title, evidence, &why, &fix)
}

/// The classes of the trail's result codes that are NCCL's verdict on the
/// failure rather than its mechanism (an internal error, invalid usage).
fn verdicts_of_trail(report: &NcclReport) -> Vec<&'static str> {
    const VERDICTS: [&str; 2] = ["internal-error", "invalid-usage"];
    let mut out: Vec<&'static str> = report
        .error_codes
        .iter()
        .filter_map(|e| CATALOGUE.result(e.code)?.class)
        .filter(|c| VERDICTS.contains(c))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// One line about the error trail: how many propagation lines, which codes.
fn trail_summary(report: &NcclReport) -> Option<Evidence> {
    let mut codes: BTreeMap<i64, u64> = BTreeMap::new();
    for trace in report.error_codes.iter().filter(|e| e.code != 0) {
        *codes.entry(trace.code).or_default() += trace.count;
    }
    if codes.is_empty() {
        return None;
    }
    let words: Vec<String> = codes
        .iter()
        .map(|(code, n)| {
            let name = CATALOGUE.result(*code).map_or("?".to_string(), |r| r.name.to_string());
            format!("{n} × {code} ({name})")
        })
        .collect();
    let first = report.error_codes.first().map_or(String::new(), |e| format!(", e.g. {} -> {}", e.location, e.code));
    Some(Evidence { at: "error trail".into(), text: format!("propagated as {}{first}", words.join(", ")) })
}

/// Error-trail lines and nothing else: the codes say what kind of failure.
fn trail_only(report: &NcclReport) -> Option<Finding> {
    let first = report.error_codes.iter().find(|e| e.code != 0 && e.code != 7)?;
    let result = CATALOGUE.result(first.code);
    // The first trail line is where the error began. A generic code
    // (ncclSystemError, ncclInternalError, a CUDA failure) says little; the
    // subsystem of that source file says more (`misc/socket.cc:568 -> 2` is
    // a socket failure), as it does for a WARN line of a generic class.
    let generic = |class: &&str| matches!(*class, "unknown" | "internal-error" | "cuda-error");
    let code = result
        .and_then(|r| r.class)
        .filter(|c| !generic(c))
        .or_else(|| CATALOGUE.source_class(&first.location))
        .or_else(|| result.and_then(|r| r.class).filter(|c| *c != "unknown"))
        .unwrap_or(UNEXPLAINED_ERROR);
    let evidence: Vec<Evidence> = report
        .error_codes
        .iter()
        .filter(|e| e.code != 0)
        .map(|e| {
            let meaning = CATALOGUE.result(e.code).map_or(String::new(), |r| format!(" ({}: {})", r.name, r.meaning));
            Evidence {
                at: "error trail".into(), text: format!("{} -> {}{meaning} (×{})", e.location, e.code, e.count)
            }
        })
        .collect();
    Some(finding_for(code, Severity::Error, evidence, true))
}
