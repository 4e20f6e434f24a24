//! `topo cluster`: read a directory of node snapshots (as `srun topo snapshot
//! -o /shared/topo/%h.json` leaves them) on every core, reduce each to its
//! facts as it is read (memory grows with nodes, not snapshot sizes), and
//! analyse them. Unreadable and foreign files are listed, never fatal.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use topo_model::cluster::{self, ClusterReport, NodeFacts};
use topo_model::{Severity, Snapshot, SnapshotError};

/// Snapshot files are `.yaml`, `.yml` or `.json`; anything else in the
/// directory is listed as foreign.
fn is_snapshot_name(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
}

/// The files under `dirs` (one level of subdirectories, as `%j/%h` makes),
/// in name order.
fn files(dirs: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for dir in dirs {
        if dir.is_file() {
            out.push(dir.clone());
            continue;
        }
        let entries = std::fs::read_dir(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(
                    std::fs::read_dir(&path).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| p.is_file()),
                );
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

enum Read {
    Node(Box<NodeFacts>),
    Unreadable(String, String),
    Foreign(String),
}

fn read_one(path: &Path) -> Read {
    let name = path.display().to_string();
    if !is_snapshot_name(path) {
        return Read::Foreign(name);
    }
    match Snapshot::load(path) {
        Ok(snapshot) => {
            let findings: Vec<String> = crate::checks::hardware(&snapshot)
                .into_iter()
                .filter(|f| f.severity >= Severity::Warning)
                .map(|f| f.code)
                .collect();
            Read::Node(Box::new(NodeFacts::from_snapshot(&snapshot, &name, &findings)))
        }
        Err(SnapshotError::NotASnapshot { .. }) => Read::Foreign(name),
        Err(e) => Read::Unreadable(name, e.to_string()),
    }
}

/// Reads and analyses every snapshot under `dirs`.
pub fn load(dirs: &[PathBuf]) -> anyhow::Result<ClusterReport> {
    let files = files(dirs)?;
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(files.len().max(1));
    let next = Mutex::new(0usize);
    let results: Vec<Vec<(usize, Read)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let index = {
                            let mut next = next.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                            let index = *next;
                            *next += 1;
                            index
                        };
                        let Some(path) = files.get(index) else { break };
                        mine.push((index, read_one(path)));
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut all: Vec<(usize, Read)> = results.into_iter().flatten().collect();
    all.sort_by_key(|(i, _)| *i);
    let (mut nodes, mut unreadable, mut foreign) = (Vec::new(), Vec::new(), Vec::new());
    for (_, read) in all {
        match read {
            Read::Node(node) => nodes.push(*node),
            Read::Unreadable(file, why) => unreadable.push((file, why)),
            Read::Foreign(file) => foreign.push(file),
        }
    }
    Ok(cluster::analyse(nodes, unreadable, foreign))
}

/// The report as text: a summary line, then per class its typical node and
/// its outliers with every fact that differs.
pub fn render(report: &ClusterReport) -> String {
    let mut out = String::new();
    let outliers: usize = report.classes.iter().map(|c| c.outliers.len()).sum();
    let _ = writeln!(
        out,
        "{} node(s) in {} class(es); {outliers} outlier(s); {} unreadable, {} foreign file(s)",
        report.nodes,
        report.classes.len(),
        report.unreadable.len(),
        report.foreign.len()
    );
    for class in &report.classes {
        let typical = |fact: &str| class.typical.get(fact).map(|(v, _)| v.as_str()).unwrap_or("?");
        let nvlinks =
            class.typical.get("gpu0.nvlinks").map_or(String::new(), |(v, _)| format!(", {v} NVLinks per GPU"));
        let _ = writeln!(
            out,
            "\n{}: {} node(s); typically {} GPUs{nvlinks}, {} RDMA NICs, driver {}",
            class.class,
            class.hosts.len(),
            typical("gpu.count"),
            typical("nic.count"),
            typical("driver")
        );
        if class.outliers.is_empty() {
            out.push_str("  no outliers: every node agrees on every fact\n");
        }
        for outlier in &class.outliers {
            let _ = writeln!(out, "  {}  score {}  ({})", outlier.host, outlier.score, outlier.file);
            for d in &outlier.differences {
                let value = d.value.as_deref().unwrap_or("absent");
                let majority = d.majority.as_deref().unwrap_or("absent");
                let _ = writeln!(
                    out,
                    "    {:<22} {value}  (majority: {majority}, {} of {} nodes)",
                    d.fact,
                    d.majority_nodes,
                    class.hosts.len()
                );
            }
        }
    }
    if !report.unreadable.is_empty() || !report.foreign.is_empty() {
        out.push('\n');
    }
    // The error names the file already.
    for (_, why) in &report.unreadable {
        let _ = writeln!(out, "unreadable: {why}");
    }
    for file in &report.foreign {
        let _ = writeln!(out, "not a snapshot: {file}");
    }
    out
}
