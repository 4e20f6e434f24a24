//! Prometheus text exposition (format 0.0.4) of `topo preflight`, `topo probe`
//! and `topo cluster`, for node_exporter's textfile collector
//! (`--collector.textfile.directory`). docs/prometheus.md lists every metric.
//!
//! Conventions, because alerts are written against these names for years:
//! base units only (bytes, seconds, `_bytes_per_second`), ratios as 0..1,
//! gauges everywhere (a run's figures are a state, not a count that only
//! grows, so no `_total`), one `_info` metric carrying the strings. Every
//! family is written once, with HELP and TYPE, its samples together: the
//! textfile collector rejects a file that repeats a family.

use std::fmt::Write;

use topo_model::cluster::ClusterReport;
use topo_model::measure::{CopyKind, CopyResult, Expectation, ProbeReport};
use topo_model::{Finding, Severity};

use crate::preflight::{Preflight, Status};

/// Label value escaping of the exposition format: backslash, double quote and
/// line feed are the three characters that could end a value early or split a
/// line; a host name or check detail from the input can hold any of them.
pub fn escape_label_value(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// HELP text escaping: backslash and line feed (quotes are literal there).
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

/// The exposition being written: families in the order they are opened.
#[derive(Default)]
struct Exposition {
    out: String,
}

/// One metric family: its samples are written straight after the header.
struct Family<'a> {
    out: &'a mut String,
    name: &'static str,
}

impl Exposition {
    fn gauge(&mut self, name: &'static str, help: &str) -> Family<'_> {
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} gauge");
        Family { out: &mut self.out, name }
    }
}

impl Family<'_> {
    /// One sample; a value that is not finite (no measurement) is left out
    /// rather than written as NaN, which alert rules would compare silently.
    fn sample(&mut self, labels: &[(&str, &str)], value: f64) -> &mut Self {
        if !value.is_finite() {
            return self;
        }
        self.out.push_str(self.name);
        if !labels.is_empty() {
            let pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label_value(v))).collect();
            let _ = write!(self.out, "{{{}}}", pairs.join(","));
        }
        let _ = writeln!(self.out, " {value}");
        self
    }
}

fn bool_value(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

/// `topo_info`: which topo wrote the file, for which command, on which host;
/// the `command` label keeps three files in one textfile directory apart.
fn info(exposition: &mut Exposition, command: &str, host: &str) {
    exposition
        .gauge("topo_info", "The topo that wrote these metrics, the command and the host it described; always 1.")
        .sample(&[("command", command), ("host", host), ("version", env!("CARGO_PKG_VERSION"))], 1.0);
}

fn findings_by_severity(exposition: &mut Exposition, name: &'static str, help: &str, findings: &[&Finding]) {
    let mut family = exposition.gauge(name, help);
    for severity in [Severity::Error, Severity::Warning, Severity::Info] {
        let count = findings.iter().filter(|f| f.severity == severity).count();
        family.sample(&[("severity", &severity.to_string())], count as f64);
    }
}

/// `topo preflight --format prometheus`.
pub fn preflight(report: &Preflight) -> String {
    let mut exposition = Exposition::default();
    info(&mut exposition, "preflight", &report.host);
    exposition
        .gauge("topo_preflight_passed", "1 when every preflight check passed (the node may take a job), else 0.")
        .sample(&[], bool_value(report.passed));
    let mut ok = exposition.gauge(
        "topo_preflight_check_ok",
        "1 when the check did not fail (pass, warn or skip), 0 when it failed; see topo_preflight_check_status.",
    );
    for check in &report.checks {
        ok.sample(&[("check", check.name)], bool_value(check.status != Status::Fail));
    }
    let mut status = exposition.gauge(
        "topo_preflight_check_status",
        "Each check's status as a state set: 1 on the status it has (pass, warn, fail, skip), 0 on the others.",
    );
    for check in &report.checks {
        for (name, value) in
            [("pass", Status::Pass), ("warn", Status::Warn), ("fail", Status::Fail), ("skip", Status::Skip)]
        {
            status.sample(&[("check", check.name), ("status", name)], bool_value(check.status == value));
        }
    }
    let findings: Vec<&Finding> = report.checks.iter().flat_map(|c| &c.findings).collect();
    findings_by_severity(
        &mut exposition,
        "topo_preflight_findings",
        "Hardware findings behind the checks, by severity (allowed codes not counted).",
        &findings,
    );
    exposition.out
}

/// A copy's endpoints as `src`/`dst` labels: `host` for pinned host memory.
fn copy_ends(copy: &CopyResult) -> (String, String) {
    let gpu = copy.gpu.to_string();
    match copy.kind {
        CopyKind::HostToDevice | CopyKind::Bidirectional => ("host".into(), gpu),
        CopyKind::DeviceToHost => (gpu, "host".into()),
        CopyKind::DeviceLocal => (gpu.clone(), gpu),
        CopyKind::Peer | CopyKind::PeerBothWays => (gpu, copy.peer.map_or("?".into(), |p| p.to_string())),
    }
}

/// Short, stable `kind` label values (the JSON's names are long and may grow).
fn copy_kind(kind: CopyKind) -> &'static str {
    match kind {
        CopyKind::HostToDevice => "h2d",
        CopyKind::DeviceToHost => "d2h",
        CopyKind::Bidirectional => "h2d_d2h",
        CopyKind::DeviceLocal => "d2d",
        CopyKind::Peer => "p2p",
        CopyKind::PeerBothWays => "p2p_both_ways",
    }
}

/// One labelled figure beside what its path should carry.
struct Figure {
    labels: Vec<(&'static str, String)>,
    measured: Option<f64>,
    expectation: Expectation,
}

/// A figure's labels, with its path class when known.
fn borrowed(f: &Figure) -> Vec<(&str, &str)> {
    let mut labels: Vec<(&str, &str)> = f.labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
    if let Some(path) = &f.expectation.path {
        labels.push(("path", path.as_str()));
    }
    labels
}

fn figures(exposition: &mut Exposition, prefix: Prefix, figures: &[Figure]) {
    let mut family = exposition.gauge(prefix.measured, prefix.measured_help);
    for f in figures {
        if let Some(measured) = f.measured {
            family.sample(&borrowed(f), measured);
        }
    }
    let mut family = exposition.gauge(prefix.expected, prefix.expected_help);
    for f in figures {
        if let Some(expected) = f.expectation.expected {
            family.sample(&borrowed(f), expected.0);
        }
    }
    let mut family = exposition.gauge(prefix.ratio, "Measured over expected (0..1 and above).");
    for f in figures {
        if let (Some(ratio), Some(_)) = (f.expectation.ratio, f.measured) {
            family.sample(&borrowed(f), ratio);
        }
    }
}

/// The three family names of one kind of figure.
#[derive(Clone, Copy)]
struct Prefix {
    measured: &'static str,
    measured_help: &'static str,
    expected: &'static str,
    expected_help: &'static str,
    ratio: &'static str,
}

/// `topo probe --format prometheus`: every copy, the best busbw of every
/// collective (and each size's busbw), the ring walk, each beside what its
/// path should carry; failures, wrong elements and findings by severity.
pub fn probe(report: &ProbeReport, host: &str, findings: &[Finding]) -> String {
    let mut exposition = Exposition::default();
    info(&mut exposition, "probe", host);
    probe_families(&mut exposition, report, findings);
    exposition.out
}

/// The `topo_probe_*` families alone: `topo preflight` adds them after its
/// own when the node was probed (`--probe`, or a snapshot saved by `topo
/// probe --save`), so one timer's file carries the verdict and the figures.
pub fn probe_metrics(report: &ProbeReport, findings: &[Finding]) -> String {
    let mut exposition = Exposition::default();
    probe_families(&mut exposition, report, findings);
    exposition.out
}

fn probe_families(exposition: &mut Exposition, report: &ProbeReport, findings: &[Finding]) {
    let errors = findings.iter().any(|f| f.severity == Severity::Error);
    exposition
        .gauge("topo_probe_passed", "1 when the probe found no error (every figure within its threshold), else 0.")
        .sample(&[], bool_value(!errors));
    exposition.gauge("topo_probe_gpus", "GPUs this process measured.").sample(&[], report.gpus.len() as f64);
    exposition
        .gauge("topo_probe_ranks", "Ranks of the run (processes, across nodes).")
        .sample(&[], report.world as f64);
    exposition
        .gauge("topo_probe_threshold_ratio", "A figure below this share of its expected bandwidth is a finding.")
        .sample(&[], report.settings.threshold);

    let copies: Vec<Figure> = report
        .copies
        .iter()
        .map(|copy| {
            let (src, dst) = copy_ends(copy);
            Figure {
                labels: vec![("kind", copy_kind(copy.kind).to_string()), ("src", src), ("dst", dst)],
                measured: copy.error.is_none().then_some(copy.bandwidth.0),
                expectation: copy.expectation.clone(),
            }
        })
        .collect();
    figures(
        exposition,
        Prefix {
            measured: "topo_probe_bandwidth_bytes_per_second",
            measured_help: "Measured copy bandwidth; both-way kinds add the two directions.",
            expected: "topo_probe_expected_bandwidth_bytes_per_second",
            expected_help: "What the copy's path should carry (the topology's bottleneck, derated).",
            ratio: "topo_probe_bandwidth_ratio",
        },
        &copies,
    );
    let mut failed =
        exposition.gauge("topo_probe_copy_failed", "1 for a copy that could not run (peer access refused).");
    for (copy, figure) in report.copies.iter().zip(&copies) {
        if copy.error.is_some() {
            let labels: Vec<(&str, &str)> = figure.labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            failed.sample(&labels, 1.0);
        }
    }

    let best: Vec<Figure> = report
        .collectives
        .iter()
        .map(|c| Figure {
            labels: vec![("collective", c.collective.name().to_string()), ("ranks", c.ranks.to_string())],
            measured: c.rows.iter().map(|r| r.busbw.0).reduce(f64::max),
            expectation: c.expectation.clone(),
        })
        .collect();
    figures(
        exposition,
        Prefix {
            measured: "topo_probe_collective_best_busbw_bytes_per_second",
            measured_help: "The best bus bandwidth (nccl-tests' busbw) over the sizes swept.",
            expected: "topo_probe_collective_expected_busbw_bytes_per_second",
            expected_help: "The busbw the ring's slowest hop should carry.",
            ratio: "topo_probe_collective_busbw_ratio",
        },
        &best,
    );
    let mut busbw =
        exposition.gauge("topo_probe_collective_busbw_bytes_per_second", "Bus bandwidth at each message size.");
    for c in &report.collectives {
        for row in &c.rows {
            busbw.sample(&[("collective", c.collective.name()), ("size_bytes", &row.bytes.to_string())], row.busbw.0);
        }
    }
    let mut wrong = exposition.gauge(
        "topo_probe_collective_wrong_elements",
        "Elements that came back wrong, summed over the sizes (anything above 0 is corruption).",
    );
    for c in &report.collectives {
        wrong.sample(&[("collective", c.collective.name())], c.rows.iter().map(|r| r.wrong).sum::<u64>() as f64);
    }

    let hops: Vec<Figure> = report
        .ring_walk
        .iter()
        .map(|h| Figure {
            labels: vec![("src", h.from.to_string()), ("dst", h.to.to_string())],
            measured: Some(h.bandwidth.0),
            expectation: h.expectation.clone(),
        })
        .collect();
    if !hops.is_empty() {
        figures(
            exposition,
            Prefix {
                measured: "topo_probe_ring_hop_bandwidth_bytes_per_second",
                measured_help: "Send/recv bandwidth of each hop of the ring, alone.",
                expected: "topo_probe_ring_hop_expected_bandwidth_bytes_per_second",
                expected_help: "What the hop's path should carry.",
                ratio: "topo_probe_ring_hop_bandwidth_ratio",
            },
            &hops,
        );
    }
    if let Some(pairwise) = &report.pairwise {
        let mut nodes = exposition.gauge("topo_probe_pairwise_node_passed", "Pairwise: 1 for a node that passed.");
        for node in &pairwise.nodes {
            nodes.sample(&[("rank", &node.rank.to_string()), ("node", &node.host)], bool_value(node.passed));
        }
    }
    let findings: Vec<&Finding> = findings.iter().collect();
    findings_by_severity(exposition, "topo_probe_findings", "Findings of the probe, by severity.", &findings);
}

/// `topo cluster --format prometheus`: node and class counts, each class's
/// outliers with their score, files that could not be read. `host` is the
/// machine that read the directory.
pub fn cluster(report: &ClusterReport, host: &str) -> String {
    let mut exposition = Exposition::default();
    info(&mut exposition, "cluster", host);
    exposition.gauge("topo_cluster_nodes", "Nodes whose snapshots were read.").sample(&[], report.nodes as f64);
    exposition
        .gauge("topo_cluster_classes", "Hardware classes (GPU model, RDMA NIC kind) among them.")
        .sample(&[], report.classes.len() as f64);
    let mut nodes = exposition.gauge("topo_cluster_class_nodes", "Nodes in each hardware class.");
    for class in &report.classes {
        nodes.sample(&[("class", &class.class)], class.hosts.len() as f64);
    }
    let mut outliers =
        exposition.gauge("topo_cluster_class_outliers", "Nodes of the class that differ from its majority.");
    for class in &report.classes {
        outliers.sample(&[("class", &class.class)], class.outliers.len() as f64);
    }
    let mut score = exposition.gauge(
        "topo_cluster_outlier_score",
        "How far an outlier differs from its class's majority (higher is more different; 0 or absent: typical).",
    );
    for class in &report.classes {
        for outlier in &class.outliers {
            score.sample(&[("class", &class.class), ("node", &outlier.host)], f64::from(outlier.score));
        }
    }
    let mut differences =
        exposition.gauge("topo_cluster_outlier_differences", "Facts on which an outlier differs from its majority.");
    for class in &report.classes {
        for outlier in &class.outliers {
            differences.sample(&[("class", &class.class), ("node", &outlier.host)], outlier.differences.len() as f64);
        }
    }
    exposition
        .gauge("topo_cluster_unreadable_files", "Files or directories that could not be read.")
        .sample(&[], report.unreadable.len() as f64);
    exposition
        .gauge("topo_cluster_foreign_files", "Files that are not topo snapshots.")
        .sample(&[], report.foreign.len() as f64);
    exposition.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_cannot_break_out() {
        assert_eq!(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(escape_label_value("gpu-01.example"), "gpu-01.example");
        let mut exposition = Exposition::default();
        exposition.gauge("x", "help \\ with\nnewline").sample(&[("host", "evil\"} 1\nx 2")], 1.0).sample(&[], f64::NAN);
        assert_eq!(
            exposition.out,
            "# HELP x help \\\\ with\\nnewline\n# TYPE x gauge\nx{host=\"evil\\\"} 1\\nx 2\"} 1\n"
        );
    }
}
