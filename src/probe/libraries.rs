//! Finding the CUDA driver and NCCL before anything loads them: cudarc panics
//! on a missing library, and it never looks for `libnccl.so.2`, the name pip's
//! `nvidia-nccl` wheels and distro packages ship. The search is explicit and
//! every place looked at is reported.

use std::path::{Path, PathBuf};

/// Where a library was found, or everywhere it was looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    At(PathBuf),
    Missing { looked: Vec<PathBuf> },
}

/// Directories to search, in order: the override, `LD_LIBRARY_PATH`, the
/// usual system and CUDA directories, then Python environments' NVIDIA wheels.
fn directories(env_path: Option<&str>, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = extra.to_vec();
    dirs.extend(env_path.unwrap_or_default().split(':').filter(|d| !d.is_empty()).map(PathBuf::from));
    for d in [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/cuda/lib64",
        "/usr/local/cuda/targets/x86_64-linux/lib",
        "/usr/local/nvidia/lib64",
        "/usr/local/lib",
    ] {
        dirs.push(PathBuf::from(d));
    }
    dirs
}

/// `site-packages/nvidia/<package>/lib` under the Python environments of this machine.
fn python_wheel_dirs(package: &str) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(prefix) = std::env::var_os(var) {
            roots.push(PathBuf::from(prefix).join("lib"));
        }
    }
    if let Some(home) = std::env::var_os("HOME") {
        roots.push(PathBuf::from(home).join(".local/lib"));
    }
    roots.extend(["/usr/lib", "/usr/local/lib", "/opt/conda/lib"].map(PathBuf::from));
    let mut out = Vec::new();
    for root in roots {
        let Ok(entries) = std::fs::read_dir(&root) else { continue };
        let mut pythons: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python3")))
            .collect();
        pythons.sort();
        for python in pythons {
            for packages in ["site-packages", "dist-packages"] {
                out.push(python.join(packages).join("nvidia").join(package).join("lib"));
            }
        }
    }
    out
}

fn search(names: &[&str], dirs: &[PathBuf]) -> Found {
    let mut looked = Vec::new();
    for dir in dirs {
        for name in names {
            let path = dir.join(name);
            if path.is_file() {
                return Found::At(path);
            }
            looked.push(path);
        }
    }
    Found::Missing { looked }
}

/// The CUDA driver library (`libcuda.so.1`, from the NVIDIA driver).
pub fn cuda_driver() -> Found {
    let env = std::env::var("LD_LIBRARY_PATH").ok();
    search(&["libcuda.so.1", "libcuda.so"], &directories(env.as_deref(), &[]))
}

/// NCCL: `explicit` (`--nccl-lib` or `TOPO_NCCL_LIBRARY`, a file or a
/// directory) first, then the search path and Python's `nvidia-nccl` wheels.
pub fn nccl(explicit: Option<&Path>) -> Found {
    if let Some(path) = explicit.filter(|p| p.is_file()) {
        return Found::At(path.to_path_buf());
    }
    let env = std::env::var("LD_LIBRARY_PATH").ok();
    let mut dirs = directories(env.as_deref(), &explicit.map(Path::to_path_buf).into_iter().collect::<Vec<_>>());
    dirs.extend(python_wheel_dirs("nccl"));
    search(&["libnccl.so.2", "libnccl.so"], &dirs)
}

/// A line for the error message: how many places were looked at and the first few.
pub fn describe_missing(name: &str, looked: &[PathBuf], hint: &str) -> String {
    let shown: Vec<String> = looked.iter().take(4).map(|p| p.display().to_string()).collect();
    format!("{name} not found (looked in {} places: {}, ...); {hint}", looked.len(), shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_then_search_path_and_everything_looked_at_reported() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("libnccl.so.2");
        std::fs::write(&lib, b"not really").unwrap();
        assert_eq!(nccl(Some(&lib)), Found::At(lib.clone()));
        assert_eq!(nccl(Some(dir.path())), Found::At(lib));
        let empty = tempfile::tempdir().unwrap();
        match search(&["libnccl.so.2"], &[empty.path().to_path_buf()]) {
            Found::Missing { looked } => assert_eq!(looked, [empty.path().join("libnccl.so.2")]),
            found => panic!("{found:?}"),
        }
        let text = describe_missing("libnccl.so.2", &[PathBuf::from("/a/libnccl.so.2")], "set --nccl-lib");
        assert_eq!(text, "libnccl.so.2 not found (looked in 1 places: /a/libnccl.so.2, ...); set --nccl-lib");
    }
}
