//! Hardware checks over a node's snapshot (sysfs + NVML facts): each finds one
//! kind of fault and returns one finding listing every device it affects.
//! `diagnose --from` and `preflight` both run them.

mod hardware;

use topo_model::{Evidence, Finding, Severity, Snapshot};

/// Every hardware finding for the node, most severe first.
pub fn hardware(snapshot: &Snapshot) -> Vec<Finding> {
    let mut findings: Vec<Finding> = hardware::CHECKS.iter().filter_map(|check| check(snapshot)).collect();
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.code.cmp(&b.code)));
    findings
}

/// At most this many pieces of evidence per finding; a last entry counts the rest.
const MAX_EVIDENCE: usize = 8;

/// A finding with its evidence capped at [`MAX_EVIDENCE`].
pub fn finding(
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
    }
}
