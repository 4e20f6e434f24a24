//! Flight Recorder dumps among the inputs of `topo diagnose` / `topo nccl`:
//! recognised by content (a directory of dumps may hold the NCCL logs too),
//! read on all cores, and placed on hosts and GPUs through the NCCL log's
//! rank table.

use std::path::{Path, PathBuf};

use topo_model::flight_recorder::JobReport;
use topo_model::nccl::{NcclReport, RankInfo};

/// Dumps and everything else, in the order given. A directory holding at
/// least one dump is split file by file (sorted); others stay whole.
pub fn split(inputs: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut dumps, mut rest) = (Vec::new(), Vec::new());
    for input in inputs {
        if input.is_dir() {
            let files = files_under(input);
            if files.iter().any(|f| topo_parsers::flight_recorder::is_dump_file(f)) {
                for file in files {
                    if topo_parsers::flight_recorder::is_dump_file(&file) { dumps.push(file) } else { rest.push(file) }
                }
                continue;
            }
        } else if input.is_file() && topo_parsers::flight_recorder::is_dump_file(input) {
            dumps.push(input.clone());
            continue;
        }
        rest.push(input.clone());
    }
    (dumps, rest)
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() { stack.push(path) } else { files.push(path) }
        }
    }
    files.sort();
    files
}

/// The world's rank table from the log: the communicator with the most ranks
/// that name a host (Flight Recorder ranks are global ranks).
pub fn rank_table(report: &NcclReport) -> Vec<RankInfo> {
    report
        .communicators
        .iter()
        .max_by_key(|c| (c.ranks.iter().filter(|r| r.host.is_some()).count(), c.nranks.unwrap_or(0)))
        .map(|c| c.ranks.clone())
        .unwrap_or_default()
}

/// Reads the dumps and analyses them against the log's rank table.
pub fn job_report(dumps: &[PathBuf], log: &NcclReport) -> JobReport {
    let results = topo_parsers::flight_recorder::read_files(dumps);
    let named = dumps.iter().map(|p| p.display().to_string()).zip(results).collect();
    topo_parsers::flight_recorder::analyse(named, &rank_table(log))
}
