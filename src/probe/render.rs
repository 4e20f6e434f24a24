//! `topo probe`'s table: copies, each collective's sweep, the ring walk, each
//! figure beside what its path should carry.

use std::fmt::Write;

use topo_model::measure::{CopyKind, CopyResult, Expectation, ProbeReport};
use topo_model::units::size_label;
use topo_model::{Bandwidth, Finding};

/// `25.2 GB/s`: one decimal at every size, so columns and evidence line up.
pub(super) fn gbps(b: Bandwidth) -> String {
    format!("{:.1} GB/s", b.gbps())
}

fn expected_columns(e: &Expectation) -> (String, String, String) {
    (
        e.path.clone().unwrap_or_else(|| "-".into()),
        e.expected.map_or("-".into(), gbps),
        e.ratio.map_or("-".into(), |r| format!("{:.0} %", r * 100.0)),
    )
}

fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

fn copy_what(copy: &CopyResult) -> String {
    match (copy.kind, copy.peer) {
        (CopyKind::Peer, Some(peer)) => format!("P2P -> GPU {peer}"),
        (CopyKind::PeerBothWays, Some(peer)) => format!("P2P <-> GPU {peer}"),
        (kind, _) => kind.label().to_string(),
    }
}

fn copies(out: &mut String, report: &ProbeReport) {
    let bytes = report.copies.first().map_or(0, |c| c.bytes);
    if bytes == 0 {
        // Figures another tool measured (nvbandwidth): its sizes and repetitions are its own.
        out.push_str("Copies (sizes and repetitions as the measuring tool chose):\n");
    } else {
        let _ = writeln!(
            out,
            "Copies: {} each, {} iterations after {} warm-up, CUDA events; both-way figures add the two directions",
            size_label(bytes),
            report.settings.iterations,
            report.settings.warmup
        );
    }
    let _ = writeln!(
        out,
        "{:<4} {:<16} {:<16} {:>12} {:>12} {:>6}",
        "GPU", "copy", "path", "measured", "expected", "ratio"
    );
    for copy in &report.copies {
        let (path, expected, ratio) = expected_columns(&copy.expectation);
        match &copy.error {
            Some(error) => {
                let _ = writeln!(out, "{:<4} {:<16} {:<16} {error}", copy.gpu, copy_what(copy), path);
            }
            None => {
                let _ = writeln!(
                    out,
                    "{:<4} {:<16} {:<16} {:>12} {:>12} {:>6}",
                    copy.gpu,
                    copy_what(copy),
                    path,
                    gbps(copy.bandwidth),
                    expected,
                    ratio
                );
            }
        }
    }
    out.push('\n');
}

fn collectives(out: &mut String, report: &ProbeReport) {
    for result in &report.collectives {
        let e = &result.expectation;
        let _ = write!(out, "{}, {} rank(s)", result.collective.name(), result.ranks);
        match (&e.expected, &e.path) {
            (Some(expected), Some(path)) => {
                let _ = writeln!(out, ": busbw expected {} ({path})", gbps(*expected));
            }
            _ if result.ranks == 1 => {
                let _ = writeln!(out, ": one rank crosses no link, so busbw is 0 and nothing is compared");
            }
            _ => out.push('\n'),
        }
        let _ = writeln!(out, "{:>10} {:>11} {:>13} {:>13} {:>6}", "size", "time", "algbw", "busbw", "wrong");
        for row in &result.rows {
            let _ = writeln!(
                out,
                "{:>10} {:>11} {:>13} {:>13} {:>6}",
                size_label(row.bytes),
                seconds(row.seconds),
                gbps(row.algbw),
                gbps(row.busbw),
                row.wrong
            );
        }
        if let Some(ratio) = e.ratio {
            let best = result.rows.iter().map(|r| r.busbw.0).fold(0.0, f64::max);
            let _ = writeln!(out, "best busbw {} = {:.0} % of expected", gbps(Bandwidth(best)), ratio * 100.0);
        }
        out.push('\n');
    }
}

fn ring_walk(out: &mut String, report: &ProbeReport) {
    if report.ring_walk.is_empty() {
        return;
    }
    let bytes = report.ring_walk.first().map_or(0, |h| h.bytes);
    let _ = writeln!(out, "Ring walk: each hop alone, send/recv of {}", size_label(bytes));
    let _ = writeln!(out, "{:<12} {:<16} {:>12} {:>12} {:>6}", "hop", "path", "measured", "expected", "ratio");
    for hop in &report.ring_walk {
        let (path, expected, ratio) = expected_columns(&hop.expectation);
        let _ = writeln!(
            out,
            "{:<12} {:<16} {:>12} {:>12} {:>6}",
            format!("{} -> {}", hop.from, hop.to),
            path,
            gbps(hop.bandwidth),
            expected,
            ratio
        );
    }
    out.push('\n');
}

/// The whole report as text, findings last.
pub fn plain(report: &ProbeReport, host: &str, findings: &[Finding]) -> String {
    let mut out = String::new();
    let names: Vec<String> = report
        .gpus
        .iter()
        .map(|g| {
            let mark = match (&g.error, &g.mig) {
                (Some(_), _) => " [not opened]",
                (None, Some(_)) => " [MIG slice]",
                (None, None) => "",
            };
            format!("{} {} ({}){mark}", g.ordinal, g.name, g.bus_id)
        })
        .collect();
    let _ = writeln!(
        out,
        "topo probe on {host}: rank {} of {}{}, CUDA driver {}, NCCL {}",
        report.rank,
        report.world,
        report.launcher.as_deref().map(|l| format!(" ({l})")).unwrap_or_default(),
        report.cuda_driver.as_deref().unwrap_or("?"),
        report.nccl_version.as_deref().unwrap_or("not used"),
    );
    let _ = writeln!(out, "GPUs: {}", names.join(", "));
    if !report.nccl_env.is_empty() {
        let env: Vec<String> = report.nccl_env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = writeln!(out, "NCCL settings in effect: {}", env.join(" "));
    }
    out.push('\n');
    tables(&mut out, report);
    out.push_str(&crate::views::findings::render(findings));
    out
}

/// The copies, collectives and ring walk tables (also under `topo show` for a
/// snapshot that carries probe results).
pub fn tables(out: &mut String, report: &ProbeReport) {
    if !report.copies.is_empty() {
        copies(out, report);
    }
    collectives(out, report);
    ring_walk(out, report);
    pairwise(out, report);
    if report.gpus.len() == 1 && report.world == 1 {
        out.push_str(
            "One GPU: no pairs to copy between, and collectives over one rank move nothing across a link.\n\n",
        );
    }
}

/// Rank 0 prints every round and node; the other ranks their own verdict.
fn pairwise(out: &mut String, report: &ProbeReport) {
    let Some(pairwise) = &report.pairwise else { return };
    let verdict = |n: &topo_model::measure::NodeVerdict| if n.passed { "PASS" } else { "FAIL" };
    if report.rank != 0 {
        if let Some(node) = pairwise.nodes.iter().find(|n| n.rank == report.rank) {
            let _ = writeln!(out, "{} rank {} ({}): {}", verdict(node), node.rank, node.host, node.evidence.join("; "));
        }
        return;
    }
    let median = |b: Option<Bandwidth>| b.map_or("-".to_string(), gbps);
    let _ = writeln!(
        out,
        "Pairwise: {} nodes, {} per message; a pair fails below {:.0} % of the first round's median (send/recv {}, all_reduce busbw {}) or on any wrong element",
        pairwise.nodes.len(),
        size_label(pairwise.bytes),
        pairwise.threshold * 100.0,
        median(pairwise.median_sendrecv),
        median(pairwise.median_busbw)
    );
    for (i, round) in pairwise.rounds.iter().enumerate() {
        let _ = writeln!(out, "round {}:", i + 1);
        for pair in round {
            let _ = writeln!(
                out,
                "  {:>4} - {:<4} send/recv {:>12}  all_reduce busbw {:>12}  wrong {:>3}  {}",
                pair.a,
                pair.b,
                gbps(pair.sendrecv),
                gbps(pair.all_reduce_busbw),
                pair.wrong,
                if pair.passed { "pass" } else { "FAIL" }
            );
        }
    }
    for node in &pairwise.nodes {
        let _ = writeln!(out, "{} rank {} ({}): {}", verdict(node), node.rank, node.host, node.evidence.join("; "));
    }
    out.push('\n');
}
