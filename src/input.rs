//! Reading what the user names, the one way every command does it (`show
//! --from`, `preflight --expect`, `cluster`, `nccl`, `diagnose`):
//!
//! - a file is read once, with a byte limit, never trusting the size the file
//!   system reports (`/dev/zero` and `/proc` files report 0);
//! - `-` is stdin, and a FIFO or `/dev/stdin` is read once as a stream, so
//!   whatever decides what a file is looks at the bytes already read;
//! - a directory is walked once per (device, inode), without following
//!   symlinked directories, each file counted once, and special files (FIFOs,
//!   sockets, devices) inside it skipped with a warning rather than hanging.

use std::collections::HashSet;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The name that means stdin.
pub const STDIN: &str = "-";

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{name}: {source}")]
    Io { name: String, source: std::io::Error },
    #[error("{name}: larger than {limit} bytes, the most this input may hold; refused")]
    TooLarge { name: String, limit: u64 },
    #[error("{name}: is a directory")]
    Directory { name: String },
}

/// Opens `path` for reading once (`-`: stdin).
pub fn open(path: &Path) -> Result<Box<dyn Read + Send>, InputError> {
    let name = path.display().to_string();
    if path.as_os_str() == STDIN {
        return Ok(Box::new(std::io::stdin()));
    }
    if path.is_dir() {
        return Err(InputError::Directory { name });
    }
    let file = std::fs::File::open(path).map_err(|source| InputError::Io { name, source })?;
    Ok(Box::new(file))
}

/// The whole of `path` (`-`: stdin), refused once more than `limit` bytes
/// have come, whatever size the file system claims.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let name = path.display().to_string();
    let regular_size = std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| m.len());
    if regular_size.is_some_and(|size| size > limit) {
        return Err(InputError::TooLarge { name, limit });
    }
    read_stream_bounded(open(path)?, &name, limit)
}

/// Reads `reader` to its end, refused once more than `limit` bytes have come.
pub fn read_stream_bounded(reader: impl Read, name: &str, limit: u64) -> Result<Vec<u8>, InputError> {
    topo_model::bounded::read_capped_from(reader, limit)
        .map_err(|source| InputError::Io { name: name.to_string(), source })?
        .ok_or_else(|| InputError::TooLarge { name: name.to_string(), limit })
}

/// What a walk over the named inputs found.
#[derive(Debug, Default)]
pub struct Walk {
    /// Files to read, in the order named; a directory's files in name order.
    /// A path named explicitly stays as given (a missing one is reported by
    /// whoever reads it; `-` and FIFOs are streams).
    pub files: Vec<PathBuf>,
    /// Things skipped, said once each (special files, symlinked directories,
    /// the same file reached twice is not said: it is simply counted once).
    pub skipped: Vec<String>,
    /// Directories that could not be listed, with why.
    pub unreadable: Vec<(PathBuf, std::io::Error)>,
}

/// Walks `inputs`: directories to at most `depth` levels below them
/// (`None`: any depth), each directory and file once by (device, inode).
pub fn walk(inputs: &[PathBuf], depth: Option<usize>) -> Walk {
    let mut walk = Walk::default();
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    for input in inputs {
        if input.as_os_str() == STDIN {
            walk.files.push(input.clone());
            continue;
        }
        let Ok(meta) = std::fs::metadata(input) else {
            walk.files.push(input.clone());
            continue;
        };
        if !meta.is_dir() {
            // Named explicitly: read it (once), whatever kind of file it is.
            if seen.insert((meta.dev(), meta.ino())) {
                walk.files.push(input.clone());
            }
            continue;
        }
        if !seen.insert((meta.dev(), meta.ino())) {
            continue;
        }
        let mut found = Vec::new();
        let mut stack = vec![(input.clone(), 0usize)];
        while let Some((dir, level)) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) => {
                    walk.unreadable.push((dir, e));
                    continue;
                }
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let Ok(link) = std::fs::symlink_metadata(&path) else { continue };
                // Follows a symlink to a file, never one to a directory.
                let Ok(meta) = std::fs::metadata(&path) else {
                    walk.skipped.push(format!("{}: a dangling symlink, skipped", path.display()));
                    continue;
                };
                if meta.is_dir() {
                    if link.file_type().is_symlink() {
                        walk.skipped.push(format!("{}: a symlink to a directory, not followed", path.display()));
                    } else if depth.is_some_and(|d| level >= d) {
                        continue;
                    } else if seen.insert((meta.dev(), meta.ino())) {
                        stack.push((path, level + 1));
                    }
                    continue;
                }
                if !meta.is_file() {
                    walk.skipped.push(format!("{}: {}, skipped", path.display(), special_kind(&meta.file_type())));
                    continue;
                }
                if seen.insert((meta.dev(), meta.ino())) {
                    found.push(path);
                }
            }
        }
        found.sort();
        walk.files.extend(found);
    }
    walk
}

fn special_kind(kind: &std::fs::FileType) -> &'static str {
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_that_reports_size_zero_is_still_bounded() {
        let error = read_bounded(Path::new("/dev/zero"), 1 << 16).unwrap_err();
        assert!(matches!(error, InputError::TooLarge { limit: 65536, .. }), "{error}");
    }

    #[test]
    fn a_walk_sees_each_file_once_and_skips_loops_and_fifos() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.log"), "x\n").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/b.log"), "y\n").unwrap();
        std::os::unix::fs::symlink(".", dir.path().join("self")).unwrap();
        std::os::unix::fs::symlink("a.log", dir.path().join("alias.log")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.log")).unwrap();
        let fifo = dir.path().join("pipe.log");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let found = walk(&[dir.path().to_path_buf(), dir.path().join("sub")], None);
        let names: Vec<String> =
            found.files.iter().map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.contains(&"sub/b.log".to_string()));
        assert_eq!(found.skipped.len(), 3, "{:?}", found.skipped);
    }
}
