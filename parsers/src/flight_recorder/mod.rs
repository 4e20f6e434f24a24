//! PyTorch Flight Recorder dumps (pickle and JSON, one file per rank) read in
//! Rust, and the analysis of where a job's ranks stand: who never entered the
//! collective the others wait in, whose call differs, who left no dump.

mod analysis;
mod dump;
pub mod pickle;

use std::path::Path;

use thiserror::Error;

pub use analysis::analyse;
pub use dump::{RankDump, WINDOW, looks_like_dump, rank_from_name, read as read_dump};

/// Largest dump read (a 20,000-entry buffer with stacks stays far below).
pub const MAX_DUMP_BYTES: u64 = 256 << 20;

#[derive(Debug, Error)]
pub enum FrError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("dump larger than {MAX_DUMP_BYTES} bytes")]
    TooLarge,
    #[error("not a Flight Recorder pickle: {0}")]
    Pickle(#[from] pickle::PickleError),
    #[error("not a Flight Recorder JSON dump: {0}")]
    Json(#[from] serde_json::Error),
    #[error("not a Flight Recorder dump: {0}")]
    Shape(&'static str),
    #[error("Flight Recorder dump version {0} is not one topo reads (2.x)")]
    Version(String),
}

/// Whether the file starts like a Flight Recorder dump (first 64 KiB).
pub fn is_dump_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path).and_then(|f| f.take(64 << 10).read_to_end(&mut head)).is_ok() && looks_like_dump(&head)
}

/// Reads one dump file (bounded by [`MAX_DUMP_BYTES`]).
pub fn read_file(path: &Path) -> Result<RankDump, FrError> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_DUMP_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_DUMP_BYTES {
        return Err(FrError::TooLarge);
    }
    read_dump(&path.display().to_string(), &bytes)
}

/// Reads many dump files on all cores; results in the order given.
pub fn read_files(paths: &[std::path::PathBuf]) -> Vec<Result<RankDump, FrError>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 16);
    let chunk = paths.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = paths
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(|p| read_file(p)).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|_| vec![Err(FrError::Shape("reader thread failed"))]))
            .collect()
    })
}
