//! Host facts that decide whether a node can run NCCL well: the size of
//! `/dev/shm`, the locked-memory limit, and which GPU-networking kernel modules
//! are loaded. All read from files under the root, so captures replay them.

use super::Tree;
use super::files::{Warnings, read_optional};

/// Modules whose presence matters: the GPU driver, GPUDirect RDMA's peer-memory
/// bridges, GPUDirect Storage and the RDMA core.
const MODULES: [&str; 7] =
    ["nvidia", "nvidia_uvm", "nvidia_peermem", "nv_peer_mem", "nvidia_fs", "ib_core", "ib_uverbs"];

pub fn modules(tree: &Tree) -> Vec<String> {
    MODULES.iter().filter(|m| tree.sys(&format!("module/{m}")).is_dir()).map(|m| m.to_string()).collect()
}

/// The `/dev/shm` tmpfs size: its `size=` mount option, else the tmpfs default
/// of half the RAM. `None` when `/dev/shm` is not a tmpfs or nothing is readable.
pub fn dev_shm_bytes(tree: &Tree, warnings: &mut Warnings) -> Option<u64> {
    let mounts = read_optional(&tree.proc("mounts"), warnings)?;
    let options = mounts.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.get(1) == Some(&"/dev/shm") && fields.get(2) == Some(&"tmpfs")).then(|| fields.get(3).copied())
    })??;
    match options.split(',').find_map(|o| o.strip_prefix("size=")) {
        Some(size) => parse_size(size),
        None => {
            let meminfo = read_optional(&tree.proc("meminfo"), warnings)?;
            let total_kib: u64 =
                meminfo.lines().find_map(|l| l.strip_prefix("MemTotal:"))?.split_whitespace().next()?.parse().ok()?;
            Some(total_kib * 1024 / 2)
        }
    }
}

/// `65536k`, `64m`, `16g` or bytes, as mount options write sizes.
fn parse_size(text: &str) -> Option<u64> {
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let value: u64 = digits.parse().ok()?;
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return None,
    };
    value.checked_mul(scale)
}

/// The soft "Max locked memory" limit: `unlimited` or a byte count.
pub fn memlock(tree: &Tree, warnings: &mut Warnings) -> Option<String> {
    let limits = read_optional(&tree.proc("self/limits"), warnings)?;
    let line = limits.lines().find(|l| l.starts_with("Max locked memory"))?;
    line.trim_start_matches("Max locked memory").split_whitespace().next().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("65536k"), Some(64 << 20));
        assert_eq!(parse_size("16g"), Some(16 << 30));
        assert_eq!(parse_size("1048576"), Some(1 << 20));
        assert_eq!((parse_size("12q"), parse_size("")), (None, None));
    }
}
