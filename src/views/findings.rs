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
        if !finding.hosts.is_empty() || !finding.ranks.is_empty() {
            let _ = writeln!(out, "  on        {}", applies_to(finding));
        }
        let _ = writeln!(out, "  why       {}", finding.why);
        let _ = writeln!(out, "  fix       {}", finding.fix);
        if let Some(suspects) = &finding.suspects {
            let _ = writeln!(out, "  suspects  the lines do not say which cause; {}", suspects.basis);
            for (i, s) in suspects.list.iter().enumerate() {
                let _ = writeln!(out, "    {}. {}: {}\n       check: {}", i + 1, s.code, s.title, s.check);
            }
        }
    }
    out
}

/// `hosts a, b; ranks 0-3, 7`: whom a finding concerns, compactly.
fn applies_to(finding: &Finding) -> String {
    let mut parts = Vec::new();
    if !finding.hosts.is_empty() {
        let shown: Vec<&str> = finding.hosts.iter().take(8).map(String::as_str).collect();
        let more = finding.hosts.len().saturating_sub(shown.len());
        let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
        parts.push(format!("hosts {}{tail}", shown.join(", ")));
    }
    if !finding.ranks.is_empty() {
        parts.push(format!("ranks {}", ranges(&finding.ranks)));
    }
    parts.join("; ")
}

/// Sorted ranks as ranges: `0-3, 7, 9-10`.
fn ranges(ranks: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut iter = ranks.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        out.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranks_as_ranges() {
        assert_eq!(super::ranges(&[0, 1, 2, 3, 7, 9, 10]), "0-3, 7, 9-10");
        assert_eq!(super::ranges(&[5]), "5");
    }
}
