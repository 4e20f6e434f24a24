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

/// The files under `inputs` (one level of subdirectories, as `%j/%h` makes),
/// in name order, each once however often it is reached; directories that
/// cannot be listed are named as unreadable, and the rest are still read.
fn files(inputs: &[PathBuf]) -> (Vec<PathBuf>, Vec<(String, String)>) {
    let walked = crate::input::walk(inputs, Some(1));
    for skipped in &walked.skipped {
        crate::output::warn(skipped);
    }
    let mut unreadable: Vec<(String, String)> = walked
        .unreadable
        .iter()
        .map(|(dir, e)| (dir.display().to_string(), format!("{}: {e}", dir.display())))
        .collect();
    let (files, missing): (Vec<PathBuf>, Vec<PathBuf>) =
        walked.files.into_iter().partition(|p| p.as_os_str() == crate::input::STDIN || std::fs::metadata(p).is_ok());
    for path in missing {
        let why = std::fs::metadata(&path).err().map_or_else(String::new, |e| e.to_string());
        unreadable.push((path.display().to_string(), format!("{}: {why}", path.display())));
    }
    (files, unreadable)
}

enum Read {
    /// A node, with its host name and a hash of its content (to find copies).
    Node(Box<NodeFacts>, (String, u64)),
    Unreadable(String, String),
    Foreign(String),
}

fn read_one(path: &Path) -> Read {
    let name = path.display().to_string();
    if !is_snapshot_name(path) {
        return Read::Foreign(name);
    }
    let loaded = crate::input::read_bounded(path, topo_model::snapshot::MAX_SNAPSHOT_BYTES)
        .map_err(|e| e.to_string())
        .and_then(|bytes| String::from_utf8(bytes).map_err(|_| format!("{name}: not UTF-8 text")))
        .map(|text| (Snapshot::from_text(&text, &name), content_hash(&text)));
    let (parsed, hash) = match loaded {
        Ok(pair) => pair,
        Err(why) => return Read::Unreadable(name, why),
    };
    match parsed {
        Ok(snapshot) => {
            let findings: Vec<String> = crate::checks::hardware(&snapshot)
                .into_iter()
                .filter(|f| f.severity >= Severity::Warning)
                .map(|f| f.code)
                .collect();
            let host = snapshot.host.hostname.clone().unwrap_or_default();
            Read::Node(Box::new(NodeFacts::from_snapshot(&snapshot, &name, &findings)), (host, hash))
        }
        Err(SnapshotError::NotASnapshot { .. }) => Read::Foreign(name),
        Err(e) => Read::Unreadable(name, e.to_string()),
    }
}

/// A hash of a snapshot's text, to tell copies of one file.
fn content_hash(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// Reads and analyses every snapshot under `dirs`.
pub fn load(dirs: &[PathBuf]) -> anyhow::Result<ClusterReport> {
    let (files, unreadable_dirs) = files(dirs);
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
    let (mut nodes, mut unreadable, mut foreign) = (Vec::new(), unreadable_dirs, Vec::new());
    let mut copies: std::collections::HashMap<(String, u64), String> = std::collections::HashMap::new();
    for (_, read) in all {
        match read {
            Read::Node(node, key) => {
                // Two files with the same host and the same content are one node saved twice.
                if let Some(first) = copies.get(&key) {
                    crate::output::warn(&format!(
                        "{}: the same snapshot as {first} (host {:?}): counted once",
                        node.file, node.host
                    ));
                    continue;
                }
                copies.insert(key, node.file.clone());
                nodes.push(*node)
            }
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
