//! The preflight report as text (verdict first) and as JUnit XML for CI systems.

use std::fmt::Write;

use super::{Preflight, Status};

pub fn plain(report: &Preflight) -> String {
    let mut out = format!("{}\n\n", report.verdict);
    for check in &report.checks {
        let status = match check.status {
            Status::Pass => "PASS",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
        };
        let _ = writeln!(out, "{status}  {:<16} {}", check.name, check.detail);
    }
    out
}

/// One `<testcase>` per check: a failure for FAIL, skipped for SKIP; WARN
/// passes with the detail in `system-out`.
pub fn junit(report: &Preflight) -> String {
    let count = |s: Status| report.checks.iter().filter(|c| c.status == s).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuite name=\"topo preflight\" hostname=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">",
        escape(&report.host),
        report.checks.len(),
        count(Status::Fail),
        count(Status::Skip)
    );
    for check in &report.checks {
        let name = escape(check.name);
        let detail = escape(&check.detail);
        let _ = write!(out, "  <testcase classname=\"preflight.{}\" name=\"{name}\"", escape(&report.host));
        match check.status {
            Status::Fail => {
                let _ = writeln!(out, ">\n    <failure message=\"{detail}\"/>\n  </testcase>");
            }
            Status::Skip => {
                let _ = writeln!(out, ">\n    <skipped message=\"{detail}\"/>\n  </testcase>");
            }
            Status::Warn => {
                let _ = writeln!(out, ">\n    <system-out>WARN: {detail}</system-out>\n  </testcase>");
            }
            Status::Pass => out.push_str("/>\n"),
        }
    }
    out.push_str("</testsuite>\n");
    out
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}
