//! Flight Recorder dumps among the inputs of `topo diagnose` / `topo nccl`:
//! recognised by content (a directory of dumps may hold the NCCL logs too),
//! read on all cores, and placed on hosts and GPUs through the NCCL log's
//! rank table.

use std::path::{Path, PathBuf};

use topo_model::flight_recorder::JobReport;
use topo_model::nccl::{NcclReport, RankInfo};

/// The inputs of one command, sorted by what they are.
#[derive(Default)]
pub struct JobInputs {
    /// Flight Recorder dumps.
    pub dumps: Vec<PathBuf>,
    /// NCCL RAS status outputs (text or JSON).
    pub ras: Vec<PathBuf>,
    /// NCCL Inspector outputs (JSON records).
    pub inspector: Vec<PathBuf>,
    /// Everything else (logs, snapshots), as given.
    pub rest: Vec<PathBuf>,
}

fn head(path: &Path) -> String {
    use std::io::Read;
    let mut head = Vec::new();
    let _ = std::fs::File::open(path).and_then(|f| f.take(64 << 10).read_to_end(&mut head));
    String::from_utf8_lossy(&head).into_owned()
}

/// Sorts one file into `inputs`; false when it is neither a dump nor RAS output.
fn sort_file(file: &Path, inputs: &mut JobInputs) -> bool {
    if topo_parsers::flight_recorder::is_dump_file(file) {
        inputs.dumps.push(file.to_path_buf());
    } else if topo_parsers::ras::looks_like_ras(&head(file)) {
        // A RAS status pasted with the job's errors is a log as well.
        if topo_parsers::ras::carries_log_lines(&head(file)) {
            inputs.rest.push(file.to_path_buf());
        }
        inputs.ras.push(file.to_path_buf());
    } else if topo_parsers::inspector::looks_like_inspector(&head(file)) {
        inputs.inspector.push(file.to_path_buf());
    } else {
        return false;
    }
    true
}

/// Dumps, RAS outputs and everything else, in the order given. A directory
/// holding at least one dump or RAS output is split file by file (sorted);
/// others stay whole.
pub fn split(paths: &[PathBuf]) -> JobInputs {
    let mut inputs = JobInputs::default();
    for input in paths {
        if input.is_dir() {
            let files = files_under(input);
            let mut found = JobInputs::default();
            let mut others = Vec::new();
            for file in files {
                if !sort_file(&file, &mut found) {
                    others.push(file);
                }
            }
            inputs.dumps.append(&mut found.dumps);
            inputs.ras.append(&mut found.ras);
            inputs.inspector.append(&mut found.inspector);
            // The files already walked (the directory is not walked twice).
            inputs.rest.append(&mut others);
            continue;
        } else if input.is_file() && sort_file(input, &mut inputs) {
            continue;
        }
        inputs.rest.push(input.clone());
    }
    inputs
}

/// Reads RAS outputs; one that cannot be read is an error message.
pub fn ras_reports(paths: &[PathBuf]) -> Vec<Result<topo_model::ras::RasStatus, String>> {
    paths
        .iter()
        .map(|path| {
            const MAX_RAS_BYTES: u64 = 64 << 20;
            let text = topo_model::bounded::read_capped(path, MAX_RAS_BYTES)
                .map_err(|e| format!("{}: {e}", path.display()))?
                .ok_or_else(|| {
                    format!("{}: larger than any RAS output ({MAX_RAS_BYTES} bytes at most)", path.display())
                })?;
            topo_parsers::ras::parse(&path.display().to_string(), &String::from_utf8_lossy(&text))
                .map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect()
}

/// The regular files below a directory, walked as every input is
/// (`input::walk`: once per inode, no symlinked directories, special
/// files skipped with a warning: opening a FIFO would block).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let walked = crate::input::walk(&[dir.to_path_buf()], None);
    for skipped in &walked.skipped {
        crate::output::warn(skipped);
    }
    walked.files
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

/// Reads Inspector outputs (each file bounded to 1 GiB); a file that cannot be
/// read is an error message.
pub fn inspector_records(paths: &[PathBuf]) -> (Vec<topo_model::inspector::InspectorRecord>, Vec<String>) {
    use std::io::Read;
    let (mut records, mut errors) = (Vec::new(), Vec::new());
    for path in paths {
        let mut bytes = Vec::new();
        let read = std::fs::File::open(path).and_then(|f| f.take(1 << 30).read_to_end(&mut bytes));
        match read.map_err(|e| e.to_string()).and_then(|_| {
            topo_parsers::inspector::parse(&path.display().to_string(), &String::from_utf8_lossy(&bytes))
                .map_err(|e| e.to_string())
        }) {
            Ok(mut found) => records.append(&mut found),
            Err(e) => errors.push(format!("{}: {e}", path.display())),
        }
    }
    (records, errors)
}
