//! Evidence for log findings: the first log line behind a fact (`file:line`
//! and the message), or the fact itself when the line is not known.

use topo_model::Evidence;
use topo_model::nccl::{NcclReport, TransportKind, Warning};

pub(super) fn warning_evidence(warning: &Warning) -> Evidence {
    let repeats = if warning.count > 1 { format!(" (×{})", warning.count) } else { String::new() };
    Evidence { at: format!("{}:{}", warning.file, warning.line), text: format!("{}{repeats}", warning.text) }
}

pub(super) fn warnings_matching<'a>(report: &'a NcclReport, needles: &[&str]) -> Vec<&'a Warning> {
    report.warnings.iter().filter(|w| needles.iter().any(|n| w.text.contains(n))).collect()
}

pub(super) fn fact(at: &str, text: String) -> Evidence {
    Evidence { at: at.into(), text }
}

/// The log line where the report first saw `key` (see `NcclReport::first_lines`),
/// with `more` appended; the bare fact when the line is not known.
pub(super) fn first_line(report: &NcclReport, key: &str, fallback: String, more: &str) -> Evidence {
    match report.first_lines.get(key) {
        Some(line) => Evidence { at: format!("{}:{}", line.file, line.line), text: format!("{}{more}", line.text) },
        None => fact("report", format!("{fallback}{more}")),
    }
}

/// `via` strings of one transport kind: the first line of each, and how many there were.
pub(super) fn via_of(report: &NcclReport, kind: TransportKind) -> Vec<Evidence> {
    report
        .via
        .iter()
        .filter(|(via, _)| topo_parsers::nccl_log::transport_kind(via) == kind)
        .map(|(via, lines)| {
            let more = if *lines > 1 { format!(" (first of {lines} lines via {via})") } else { String::new() };
            first_line(report, &format!("via/{via}"), format!("via {via}"), &more)
        })
        .collect()
}
