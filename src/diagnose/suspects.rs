//! Suspects for a failure whose log names no cause. A framework's bare
//! `unhandled system error`, an `internal error` with no WARN before it, a
//! watchdog timeout with nothing earlier: the lines cannot say why, but public
//! threads that found out say which causes are common. The failure's finding
//! gets them from the message table's `suspects` section, most frequent
//! first, ordered for the job's scope (one node or several), each with the
//! check that tells it apart. A suspect the log also shows as a finding of
//! its own (an interface warning before the bare error) leads: the lines
//! point at it.

use topo_model::finding::{Suspect, Suspects};
use topo_model::nccl::NcclReport;
use topo_model::{Finding, Severity};
use topo_parsers::nccl_log::catalogue::{self, CATALOGUE};

use super::Scope;

/// Adds suspects to the finding that is the failure's cause (without one, to
/// each error-level finding), where it is a kind the table lists and its
/// evidence names nothing more specific. `stopped`: where a hung job's lines
/// stop (see `hung`), which leads the order.
pub(super) fn attach(
    findings: &mut [Finding],
    cause: Option<&str>,
    report: &NcclReport,
    scope: Scope,
    stopped: &[catalogue::Scope],
) {
    let reported: Vec<(String, Severity)> = findings.iter().map(|f| (f.code.clone(), f.severity)).collect();
    let mut shown: Vec<catalogue::Scope> = match scope {
        Scope::SingleNode => vec![catalogue::Scope::SingleNode],
        Scope::MultiNode => vec![catalogue::Scope::MultiNode],
        Scope::Unknown => Vec::new(),
    };
    // A watchdog timeout past the process group's first collective (or with
    // one completed): the data path had carried earlier collectives.
    let progressed =
        report.timeouts.iter().any(|t| t.seq.is_some_and(|s| s > 1) || t.last_completed.is_some_and(|c| c >= 1));
    // It says more than the job's scope: it leads.
    if progressed {
        shown.insert(0, catalogue::Scope::AfterProgress);
    }
    // A GPUDirect path the job forced past NCCL's own limit is the data
    // path's first suspect: the job chose it, and turning it off is the test.
    let forced = report.env_overrides.iter().any(|e| e.name == "NCCL_NET_GDR_LEVEL" && catalogue::gdr_forced(&e.value));
    // Slingshot's provider settings lead before progress made: its rendezvous
    // breaks the first large transfer, after small collectives went through.
    if catalogue::slingshot(&report.network.devices) {
        shown.insert(0, catalogue::Scope::Slingshot);
    }
    if forced {
        shown.insert(0, catalogue::Scope::GdrForced);
    }
    // Where a hung job's lines stop says more than the job's scope too.
    for (i, scope) in stopped.iter().enumerate() {
        shown.insert(i, *scope);
    }
    // An NCCL WARN of the finding's own class names the check that failed
    // (`Proxy append out of bound`, `Invalid rank requested`): the failure has
    // its cause in the lines, and the suspects of the bare verdict do not apply.
    let named = |code: &str| -> Vec<&str> {
        if !NAMED_BY_THEIR_WARNS.contains(&code) {
            return Vec::new();
        }
        report.warnings.iter().filter(|w| w.class.as_deref() == Some(code)).map(|w| w.text.as_str()).collect()
    };
    for finding in findings.iter_mut() {
        let failure = match cause {
            Some(cause) => finding.code == cause,
            None => finding.severity == Severity::Error,
        } || [super::hung::IN_INIT, super::hung::AFTER_INIT].contains(&finding.code.as_str());
        if failure {
            finding.suspects = suspects_of(finding, &reported, &shown, &named(&finding.code));
        }
    }
}

/// Verdicts whose WARN rows each name the check that failed (NCCL's own
/// consistency checks, audited against its source; the program's wrong
/// arguments), where the bare verdict (`ncclInternalError`, `invalid usage`)
/// names none.
const NAMED_BY_THEIR_WARNS: [&str; 2] = ["internal-error", "invalid-usage"];

/// The suspects of one failure finding, those the log also shows first.
fn suspects_of(
    finding: &Finding,
    reported: &[(String, Severity)],
    scope: &[catalogue::Scope],
    naming_warns: &[&str],
) -> Option<Suspects> {
    let texts = finding.evidence.iter().map(|e| e.text.as_str());
    let kind = CATALOGUE.suspects.iter().find(|k| k.matches(&finding.code, texts.clone()))?;
    // A kind for those WARNs' own words (`does not loop back`) still applies.
    if !naming_warns.is_empty() && !kind.matches("", naming_warns.iter().copied()) {
        return None;
    }
    let shown = |class: &str| reported.iter().any(|(r, _)| r == class);
    // What the log shows leads, unless topo itself judged it information only
    // (an interface list on a host whose job's scope is unknown).
    let leads = |class: &str| reported.iter().any(|(r, severity)| r == class && *severity >= Severity::Warning);
    let (mut list, rest): (Vec<&catalogue::Suspect>, Vec<_>) =
        kind.ordered(scope).into_iter().filter(|s| s.class != finding.code).partition(|s| leads(s.class));
    list.extend(rest);
    let list: Vec<Suspect> = list
        .into_iter()
        .map(|s| {
            let title = CATALOGUE.class(s.class).map_or(String::new(), |c| c.title.to_string());
            let title = if shown(s.class) { format!("{title} (reported above)") } else { title };
            Suspect { code: s.class.to_string(), title, check: s.check.to_string() }
        })
        .collect();
    (!list.is_empty()).then(|| Suspects { basis: format!("{}: {}", kind.title, kind.basis), list })
}
