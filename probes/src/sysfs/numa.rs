//! NUMA nodes (`/sys/devices/system/node`) and CPU facts (`/proc/cpuinfo`).

use topo_model::{CpuInfo, CpuSet, NumaNode};

use super::Tree;
use super::files::{Warnings, read_optional, read_parsed};

pub(crate) fn numa_nodes(tree: &Tree, warnings: &mut Warnings) -> Vec<NumaNode> {
    let dir = tree.sys("devices/system/node");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut nodes: Vec<NumaNode> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let id: i32 = name.strip_prefix("node")?.parse().ok()?;
            let path = entry.path();
            // Old kernels have only the mask form.
            let cpus = if path.join("cpulist").exists() {
                read_parsed(&path.join("cpulist"), true, warnings, |t| CpuSet::parse_list(t).ok())
            } else {
                read_parsed(&path.join("cpumap"), true, warnings, |t| CpuSet::parse_mask(t).ok())
            };
            let distances = read_parsed(&path.join("distance"), false, warnings, |t| {
                t.split_whitespace().map(|d| d.parse::<u32>().ok()).collect::<Option<Vec<u32>>>()
            });
            let memory_kib = read_optional(&path.join("meminfo"), warnings).and_then(|text| mem_total_kib(&text));
            Some(NumaNode { id, cpus: cpus.unwrap_or_default(), distances: distances.unwrap_or_default(), memory_kib })
        })
        .collect();
    nodes.sort_by_key(|n| n.id);
    nodes
}

/// `Node 0 MemTotal:       263939348 kB`
fn mem_total_kib(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.contains("MemTotal:"))?;
    line.split_whitespace().rev().nth(1)?.parse().ok()
}

pub(crate) fn cpu_info(tree: &Tree, warnings: &mut Warnings) -> CpuInfo {
    let mut info = CpuInfo::default();
    let Some(text) = read_optional(&tree.proc("cpuinfo"), warnings) else {
        return info;
    };
    let mut packages: Vec<String> = Vec::new();
    let mut processors = 0u32;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        let (key, value) = (key.trim(), value.trim());
        match key {
            "processor" => processors += 1,
            "vendor_id" if info.vendor.is_none() => info.vendor = Some(value.to_string()),
            "cpu family" if info.family.is_none() => info.family = value.parse().ok(),
            "model" if info.model.is_none() => info.model = value.parse().ok(),
            "model name" | "cpu" if info.model_name.is_none() => info.model_name = Some(value.to_string()),
            "physical id" if !packages.iter().any(|p| p == value) => packages.push(value.to_string()),
            "CPU implementer" if info.arch.is_none() => info.arch = Some("aarch64".to_string()),
            _ => {}
        }
    }
    if info.arch.is_none() {
        info.arch = if info.vendor.is_some() {
            Some("x86_64".to_string())
        } else if info.model_name.as_deref().is_some_and(|m| m.starts_with("POWER")) {
            Some("ppc64le".to_string())
        } else {
            None
        };
    }
    info.logical_cpus = (processors > 0).then_some(processors);
    info.sockets = (!packages.is_empty()).then_some(packages.len() as u32);
    info
}
