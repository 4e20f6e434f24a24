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

/// The active Python environment's own copies, which the job's PyTorch loads
/// (its `libtorch_cuda.so` finds NCCL through an rpath into the environment,
/// whatever LD_LIBRARY_PATH says): `site-packages/nvidia/<package>/lib` of a
/// venv or conda environment, then the conda environment's `lib`.
fn active_env_dirs(virtual_env: Option<&Path>, conda: Option<&Path>, package: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for prefix in [virtual_env, conda].into_iter().flatten() {
        let lib = prefix.join("lib");
        let Ok(entries) = std::fs::read_dir(&lib) else { continue };
        let mut pythons: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("python3")))
            .collect();
        pythons.sort();
        for python in pythons {
            out.push(python.join("site-packages").join("nvidia").join(package).join("lib"));
        }
    }
    if let Some(conda) = conda {
        out.push(conda.join("lib"));
    }
    out
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

/// Whether `path` is a CUDA toolkit stub (`.../stubs/libcuda.so`): it links
/// but every call fails, so it is never the driver.
pub fn is_stub(path: &Path) -> bool {
    path.parent().and_then(Path::file_name).is_some_and(|d| d == "stubs")
}

fn search(names: &[&str], dirs: &[PathBuf]) -> Found {
    let mut looked = Vec::new();
    for dir in dirs {
        for name in names {
            let path = dir.join(name);
            if path.is_file() && !is_stub(&path) {
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
/// directory) first, then the active venv's or conda environment's (the one
/// the job's PyTorch uses), then LD_LIBRARY_PATH, the system, and other
/// Python environments' `nvidia-nccl` wheels.
pub fn nccl(explicit: Option<&Path>) -> Found {
    if let Some(path) = explicit.filter(|p| p.is_file()) {
        return Found::At(path.to_path_buf());
    }
    let env = std::env::var("LD_LIBRARY_PATH").ok();
    let mut first: Vec<PathBuf> = explicit.map(Path::to_path_buf).into_iter().collect();
    let virtual_env = std::env::var_os("VIRTUAL_ENV").map(PathBuf::from);
    let conda = std::env::var_os("CONDA_PREFIX").map(PathBuf::from);
    first.extend(active_env_dirs(virtual_env.as_deref(), conda.as_deref(), "nccl"));
    let mut dirs = directories(env.as_deref(), &first);
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
        // A CUDA stub is never taken for the driver.
        let stubs = dir.path().join("stubs");
        std::fs::create_dir(&stubs).unwrap();
        std::fs::write(stubs.join("libcuda.so"), b"stub").unwrap();
        assert!(is_stub(&stubs.join("libcuda.so")));
        assert!(matches!(search(&["libcuda.so"], std::slice::from_ref(&stubs)), Found::Missing { .. }));
        let text = describe_missing("libnccl.so.2", &[PathBuf::from("/a/libnccl.so.2")], "set --nccl-lib");
        assert_eq!(text, "libnccl.so.2 not found (looked in 1 places: /a/libnccl.so.2, ...); set --nccl-lib");
    }

    /// Defect 13: the active environment's NCCL comes before system paths.
    #[test]
    fn the_active_environment_comes_first() {
        let venv = tempfile::tempdir().unwrap();
        let wheel = venv.path().join("lib/python3.11/site-packages/nvidia/nccl/lib");
        std::fs::create_dir_all(&wheel).unwrap();
        let conda = tempfile::tempdir().unwrap();
        let dirs = active_env_dirs(Some(venv.path()), Some(conda.path()), "nccl");
        assert_eq!(dirs, [wheel, conda.path().join("lib")]);
        assert!(active_env_dirs(None, None, "nccl").is_empty());
    }
}
