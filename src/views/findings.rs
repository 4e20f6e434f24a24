//! Findings as text: a summary line, then each finding with its evidence, why
//! it matters and the fix.

use std::fmt::Write;

use topo_model::{Finding, Severity};

pub fn render(findings: &[Finding]) -> String {
    let mut out = String::new();
    let count = |severity| findings.iter().filter(|f| f.severity == severity).count();
    let _ = writeln!(
        out,
        "{} finding(s): {} error, {} warning, {} info",
        findings.len(),
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info)
    );
    for finding in findings {
        let _ = writeln!(out, "\n{:<8} {}  {}", finding.severity, finding.code, finding.title);
        for evidence in &finding.evidence {
            let _ = writeln!(out, "  evidence  {}: {}", evidence.at, evidence.text);
        }
        if let (Some(expected), Some(actual)) = (&finding.expected, &finding.actual) {
            let _ = writeln!(out, "  expected  {expected}; actual {actual}");
        }
        let _ = writeln!(out, "  why       {}", finding.why);
        let _ = writeln!(out, "  fix       {}", finding.fix);
    }
    out
}
