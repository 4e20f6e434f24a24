//! `topo report`: one self-contained HTML file to attach to a ticket or mail
//! to a vendor. Inline CSS and inline SVG only, no script, no font, no image,
//! nothing fetched when it is opened (a Content-Security-Policy says so to the
//! browser as well). Every string from the input goes through [`escape::text`].
//!
//! Sections: host summary, the GPU/NIC matrix, the topology picture, the PCIe
//! tree, NCCL's rings (with a log), measured against expected (with probe
//! results), and the findings with evidence, why and fix.

pub mod escape;
pub mod matrix;
pub mod svg;

use std::fmt::Write;

use topo_model::measure::{Expectation, ProbeReport};
use topo_model::nccl::NcclReport;
use topo_model::{Finding, Severity, Snapshot, Source};

use escape::text;

/// Path-class colours, shared by the matrix cells, the picture's edges and
/// the legend (and looked for in the report's screenshot test).
pub const NVLINK: &str = "#2e8b57";
pub const PCIE_SWITCH: &str = "#1e88e5";
pub const HOST_BRIDGE: &str = "#f9a825";
pub const SOCKET: &str = "#c62828";

const STYLE: &str = include_str!("style.css");

/// The whole page.
pub fn render(snapshot: &Snapshot, findings: &[Finding]) -> String {
    let host = snapshot.host.hostname.as_deref().unwrap_or("(unnamed host)");
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>topo report: {}</title>\n<style>\n{STYLE}\n:root {{ --nv: {NVLINK}; --pix: {PCIE_SWITCH}; --node: {HOST_BRIDGE}; --sys: {SOCKET}; }}\n</style>\n</head>\n<body>\n",
        text(host)
    );
    let _ = writeln!(
        out,
        "<header><h1>topo report: {}</h1><p class=\"meta\">written by topo {}</p></header>",
        text(host),
        env!("CARGO_PKG_VERSION")
    );
    section(&mut out, "summary", "Host", |out| summary(out, snapshot, findings));
    section(&mut out, "matrix", "GPU / NIC matrix", |out| matrix::render(out, &snapshot.topology));
    section(&mut out, "picture", "Topology", |out| {
        out.push_str("<div class=\"picture\">\n");
        out.push_str(&svg::render(&snapshot.topology));
        out.push_str("</div>\n");
    });
    section(&mut out, "pcie", "PCIe tree", |out| {
        let mut tree = String::new();
        crate::views::plain::pci_tree(&mut tree, &snapshot.topology, !snapshot.topology.matrix_endpoints().is_empty());
        if tree.is_empty() {
            out.push_str("<p>No PCI devices recorded.</p>\n");
        } else {
            let _ = writeln!(out, "<pre>{}</pre>", text(&tree));
        }
    });
    if let Some(report) = &snapshot.nccl {
        section(&mut out, "nccl", "NCCL rings", |out| nccl(out, report));
    }
    if let Some(report) = &snapshot.probe {
        section(&mut out, "probe", "Measured against expected", |out| probe(out, report));
    }
    section(&mut out, "findings", "Findings", |out| self::findings(out, findings));
    out.push_str("</body>\n</html>\n");
    out
}

fn section(out: &mut String, id: &str, title: &str, body: impl FnOnce(&mut String)) {
    let _ = writeln!(out, "<section id=\"{id}\">\n<h2>{title}</h2>");
    body(out);
    out.push_str("</section>\n");
}

fn summary(out: &mut String, snapshot: &Snapshot, findings: &[Finding]) {
    let topology = &snapshot.topology;
    let source = match &snapshot.source {
        Source::Sysfs { root } => format!("sysfs under {root}"),
        Source::NcclXml { path } => format!("NCCL topology file {path}"),
        Source::Example { name } => format!("bundled example {name}"),
        Source::NvidiaSmiText { path } => format!("nvidia-smi topo -m text {path}"),
        Source::Lspci { path } => format!("lspci text {path}"),
        Source::Bundle { path } => format!("pasted outputs in {path}"),
    };
    let mut rows: Vec<(&str, String)> =
        vec![("Host", snapshot.host.hostname.clone().unwrap_or_else(|| "(unnamed host)".into())), ("Source", source)];
    if let Some(kernel) = &snapshot.host.kernel {
        rows.push(("Kernel", kernel.clone()));
    }
    let cpu = &topology.cpu;
    let mut cpu_facts: Vec<String> = cpu.describe().into_iter().collect();
    cpu_facts.extend(cpu.sockets.map(|s| format!("{s} socket(s)")));
    cpu_facts.extend(cpu.logical_cpus.map(|c| format!("{c} logical CPUs")));
    cpu_facts.push(format!("{} NUMA node(s)", topology.numa_nodes.len()));
    rows.push(("CPU", cpu_facts.join(", ")));
    let mut models: Vec<(String, usize)> = Vec::new();
    for gpu in topology.gpus_in_order() {
        let name = gpu.name.clone().unwrap_or_else(|| "NVIDIA GPU".into());
        match models.iter_mut().find(|(n, _)| *n == name) {
            Some((_, count)) => *count += 1,
            None => models.push((name, 1)),
        }
    }
    let gpus: Vec<String> = models.iter().map(|(name, count)| format!("{count}x {name}")).collect();
    rows.push(("GPUs", if gpus.is_empty() { "none".into() } else { gpus.join(", ") }));
    if !topology.nvswitches.is_empty() {
        rows.push(("NVSwitches", topology.nvswitches.len().to_string()));
    }
    let nics: Vec<String> = topology.nics.iter().map(|n| format!("{} ({})", n.name, n.kind.label())).collect();
    rows.push(("NICs", if nics.is_empty() { "none".into() } else { nics.join(", ") }));
    if let Some(nvml) = &snapshot.nvml {
        if let Some(driver) = nvml.driver_version.ok() {
            rows.push(("Driver", driver.clone()));
        }
        if let Some(cuda) = nvml.cuda_version().ok() {
            rows.push(("CUDA (driver)", cuda.clone()));
        }
    }
    let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    rows.push((
        "Findings",
        format!(
            "{} error, {} warning, {} info",
            count(Severity::Error),
            count(Severity::Warning),
            count(Severity::Info)
        ),
    ));
    out.push_str("<dl class=\"summary\">\n");
    for (key, value) in rows {
        let _ = writeln!(out, "<dt>{key}</dt><dd>{}</dd>", text(&value));
    }
    out.push_str("</dl>\n");
}

/// Every communicator's rings as rank sequences; the whole `topo nccl`
/// report folded underneath.
fn nccl(out: &mut String, report: &NcclReport) {
    let version = match report.nccl_versions.as_slice() {
        [] => "NCCL (version not printed)".to_string(),
        versions => format!("NCCL {}", text(&versions.join(", "))),
    };
    let hosts = report.hosts.iter().take(16).cloned().collect::<Vec<_>>().join(", ");
    let more = report.hosts.len().saturating_sub(16);
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    let _ = writeln!(out, "<p>{version} on {} host(s): {}{more}</p>", report.hosts.len(), text(&hosts));
    let mut any = false;
    for comm in &report.communicators {
        if comm.rings.is_empty() {
            continue;
        }
        any = true;
        let ranks = comm.nranks.map_or("?".to_string(), |n| n.to_string());
        let _ = writeln!(out, "<h3>communicator {} ({ranks} ranks)</h3>\n<table class=\"rings\">", text(&comm.id));
        out.push_str("<tr><th>channel</th><th>ring (rank order)</th><th>hops: transport (hardware path)</th></tr>\n");
        let index = topo_model::nccl::HopIndex::new(comm);
        for ring in &comm.rings {
            let mut order: Vec<String> = ring.order.iter().map(u32::to_string).collect();
            if let Some(first) = ring.order.first() {
                order.push(first.to_string());
            }
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                ring.channel,
                order.join(" &rarr; "),
                ring_hops(&index, ring)
            );
        }
        out.push_str("</table>\n");
    }
    if !any {
        out.push_str("<p>The log lists no rings (NCCL_DEBUG=INFO prints them at init).</p>\n");
    }
    let _ = writeln!(
        out,
        "<details><summary>The whole NCCL report (topo nccl)</summary>\n<pre>{}</pre>\n</details>",
        text(&crate::views::nccl::render(report))
    );
}

/// Each hop of a ring with the transport NCCL logged for it, coloured by
/// the hardware path between the two GPUs when the machine is known.
fn ring_hops(index: &topo_model::nccl::HopIndex, ring: &topo_model::nccl::Ring) -> String {
    let n = ring.order.len();
    let hops: Vec<String> = (0..n)
        .map(|i| {
            let (from, to) = (ring.order[i], ring.order[(i + 1) % n]);
            match index.hop(ring.channel, from, to) {
                Some(c) => {
                    let hardware = c.hardware.as_ref();
                    let class = hardware
                        .and_then(|h| topo_model::SmiClass::parse(&h.smi))
                        .map_or("hop".to_string(), |c| format!("hop {}", matrix::class_css(c)));
                    let path = hardware.map_or(String::new(), |h| format!(" ({})", text(&h.smi)));
                    let cross = if c.cross_node == Some(true) { " cross-node" } else { "" };
                    format!("<span class=\"{class}\">{from}&rarr;{to} {}{path}{cross}</span>", text(&c.detail))
                }
                None => format!("<span class=\"hop\">{from}&rarr;{to} ?</span>"),
            }
        })
        .collect();
    hops.join(" ")
}

fn gbps(bytes_per_second: f64) -> String {
    format!("{:.1} GB/s", bytes_per_second / 1e9)
}

/// A table row of measured against expected, the ratio coloured by the
/// run's threshold.
fn figure_row(out: &mut String, what: &str, measured: Option<f64>, e: &Expectation, threshold: f64) {
    let path = e.path.as_deref().unwrap_or("-");
    let expected = e.expected.map_or("-".to_string(), |b| gbps(b.0));
    let (ratio, class) = match e.ratio {
        Some(r) if r < threshold => (format!("{:.0} %", r * 100.0), "bad"),
        Some(r) => (format!("{:.0} %", r * 100.0), "good"),
        None => ("-".to_string(), ""),
    };
    let measured = measured.map_or("failed".to_string(), gbps);
    let _ = writeln!(
        out,
        "<tr><td>{}</td><td>{}</td><td class=\"num\">{measured}</td><td class=\"num\">{expected}</td><td class=\"num {class}\">{ratio}</td></tr>",
        text(what),
        text(path)
    );
}

fn probe(out: &mut String, report: &ProbeReport) {
    let threshold = report.settings.threshold;
    let _ = writeln!(
        out,
        "<p>topo probe: CUDA driver {}, NCCL {}; below {:.0} % of expected is a finding.</p>",
        text(report.cuda_driver.as_deref().unwrap_or("?")),
        text(report.nccl_version.as_deref().unwrap_or("not used")),
        threshold * 100.0
    );
    let header = "<table class=\"figures\">\n<tr><th>what</th><th>path</th><th>measured</th><th>expected</th><th>ratio</th></tr>\n";
    if !report.copies.is_empty() {
        out.push_str("<h3>Copies</h3>\n");
        out.push_str(header);
        for copy in &report.copies {
            let what = match copy.peer {
                Some(peer) => format!("GPU {} {} GPU {peer}", copy.gpu, copy.kind.label()),
                None => format!("GPU {} {}", copy.gpu, copy.kind.label()),
            };
            let measured = copy.error.is_none().then_some(copy.bandwidth.0);
            figure_row(out, &what, measured, &copy.expectation, threshold);
        }
        out.push_str("</table>\n");
    }
    if !report.collectives.is_empty() {
        out.push_str("<h3>Collectives (best busbw over the sizes)</h3>\n");
        out.push_str(header);
        for c in &report.collectives {
            let best = c.rows.iter().map(|r| r.busbw.0).reduce(f64::max);
            let what = format!("{}, {} rank(s)", c.collective.name(), c.ranks);
            figure_row(out, &what, best, &c.expectation, threshold);
        }
        out.push_str("</table>\n");
    }
    if !report.ring_walk.is_empty() {
        out.push_str("<h3>Ring walk (each hop alone)</h3>\n");
        out.push_str(header);
        for hop in &report.ring_walk {
            figure_row(out, &format!("{} -> {}", hop.from, hop.to), Some(hop.bandwidth.0), &hop.expectation, threshold);
        }
        out.push_str("</table>\n");
    }
}

fn findings(out: &mut String, findings: &[Finding]) {
    if findings.is_empty() {
        out.push_str("<p>No findings.</p>\n");
        return;
    }
    for finding in findings {
        let _ = writeln!(
            out,
            "<div class=\"finding {0}\"><h3><span class=\"severity\">{0}</span> <code>{1}</code> {2}</h3>",
            finding.severity,
            text(&finding.code),
            text(&finding.title)
        );
        if !finding.evidence.is_empty() {
            out.push_str("<ul class=\"evidence\">\n");
            for evidence in &finding.evidence {
                let _ = writeln!(
                    out,
                    "<li><code>{}</code>: <code>{}</code></li>",
                    text(&evidence.at),
                    text(&evidence.text)
                );
            }
            out.push_str("</ul>\n");
        }
        if let (Some(expected), Some(actual)) = (&finding.expected, &finding.actual) {
            let _ = writeln!(out, "<p><b>Expected</b> {}; <b>actual</b> {}</p>", text(expected), text(actual));
        }
        if !finding.hosts.is_empty() {
            let _ = writeln!(out, "<p><b>Hosts</b> {}</p>", text(&finding.hosts.join(", ")));
        }
        let _ = writeln!(out, "<p><b>Why</b> {}</p>\n<p><b>Fix</b> {}</p>", text(&finding.why), text(&finding.fix));
        if let Some(suspects) = &finding.suspects {
            let _ = writeln!(
                out,
                "<p><b>Suspects</b> (the lines do not say which cause; {})</p>\n<ol>",
                text(&suspects.basis)
            );
            for s in &suspects.list {
                let _ = writeln!(
                    out,
                    "<li><code>{}</code>: {}<br>check: {}</li>",
                    text(&s.code),
                    text(&s.title),
                    text(&s.check)
                );
            }
            out.push_str("</ol>\n");
        }
        out.push_str("</div>\n");
    }
}
