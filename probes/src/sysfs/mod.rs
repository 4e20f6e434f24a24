//! Discovery from Linux sysfs and procfs, rooted anywhere (`/` on a live machine,
//! an unpacked capture in tests).
//!
//! Read-only, and tolerant: a file that is missing, unreadable or holds garbage
//! leaves its field unknown and adds a warning; it never fails the run. Only a
//! root that does not exist is an error.

mod files;
mod host;
mod net;
mod numa;
mod pci;

use std::path::{Path, PathBuf};

use topo_model::{HostInfo, Topology};

pub use files::Warnings;

#[derive(Debug, thiserror::Error)]
pub enum SysfsError {
    #[error("{0}: sysfs root does not exist or is not a directory")]
    MissingRoot(String),
}

/// What one pass over a sysfs tree found.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovery {
    pub topology: Topology,
    pub host: HostInfo,
    pub warnings: Vec<String>,
}

/// Reads the machine described by the tree under `root` (which holds `sys/` and
/// `proc/`).
pub fn discover(root: &Path) -> Result<Discovery, SysfsError> {
    if !root.is_dir() {
        return Err(SysfsError::MissingRoot(root.display().to_string()));
    }
    let tree = Tree { root: root.to_path_buf() };
    let mut warnings = Warnings::default();
    let mut topology = Topology::default();
    topology.cpu = numa::cpu_info(&tree, &mut warnings);
    topology.numa_nodes = numa::numa_nodes(&tree, &mut warnings);
    pci::read_pci(&tree, &mut topology, &mut warnings);
    net::read_rdma(&tree, &mut topology, &mut warnings);
    net::read_net_interfaces(&tree, &mut topology, &mut warnings);
    topology.canonicalize();
    let host = HostInfo {
        hostname: files::read_optional(&tree.proc("sys/kernel/hostname"), &mut warnings),
        kernel: files::read_optional(&tree.proc("sys/kernel/osrelease"), &mut warnings),
        dev_shm_bytes: host::dev_shm_bytes(&tree, &mut warnings),
        memlock: host::memlock(&tree, &mut warnings),
        modules: host::modules(&tree),
    };
    Ok(Discovery { topology, host, warnings: warnings.into_vec(root) })
}

/// Paths inside the captured (or live) tree.
pub(crate) struct Tree {
    root: PathBuf,
}

impl Tree {
    fn sys(&self, relative: &str) -> PathBuf {
        self.root.join("sys").join(relative)
    }

    fn proc(&self, relative: &str) -> PathBuf {
        self.root.join("proc").join(relative)
    }
}
