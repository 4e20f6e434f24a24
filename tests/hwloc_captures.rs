//! hwloc's captures of real machines (`tests/fixtures/hwloc/*`): for every capture,
//! the NUMA nodes, their CPU sets and each PCI device's NUMA locality that topo reads
//! from the sysfs tree agree with the output hwloc's own test suite expects from
//! the same tree (`.console` = `lstopo -v`, or `.xml`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use topo_model::{BusId, CpuSet, Topology};
use topo_probes::sysfs;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hwloc")
}

/// What hwloc says: NUMA node id -> CPUs, and PCI device -> CPUs it is local to.
#[derive(Default, Debug)]
struct Expected {
    numa: BTreeMap<i32, CpuSet>,
    pci: BTreeMap<BusId, CpuSet>,
    all_cpus: CpuSet,
}

/// Reads `lstopo -v` text: objects nest by two-space indentation; a NUMA node's
/// CPUs are the PUs below its parent; an I/O object's locality is the PUs below
/// its nearest non-I/O ancestor.
fn parse_console(text: &str) -> Expected {
    struct Object {
        depth: usize,
        kind: String,
        os_index: Option<u32>,
        busid: Option<BusId>,
        parent: Option<usize>,
    }
    let mut objects: Vec<Object> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let depth = line.len() - line.trim_start().len();
        if n > 0 && depth == 0 {
            break; // "Special depth", distance matrices: the tree is over.
        }
        let trimmed = line.trim_start();
        let kind = trimmed.split([' ', '(']).next().unwrap_or("").to_string();
        let os_index = trimmed.split("P#").nth(1).and_then(|s| s.split([' ', ')']).next()).and_then(|s| s.parse().ok());
        let busid =
            trimmed.split("busid=").nth(1).and_then(|s| s.split([' ', ')']).next()).and_then(|s| s.parse().ok());
        let parent = objects.iter().rposition(|o| o.depth < depth);
        objects.push(Object { depth, kind, os_index, busid, parent });
    }
    let is_io = |kind: &str| {
        matches!(kind, "HostBridge" | "PCIBridge" | "PCI" | "Net" | "OpenFabrics" | "Block" | "GPU" | "CoProc" | "DMA")
            || kind.starts_with("Block")
    };
    let pus_below = |root: usize| -> CpuSet {
        let mut cpus = Vec::new();
        for (i, object) in objects.iter().enumerate() {
            if object.kind != "PU" {
                continue;
            }
            let mut cursor = Some(i);
            while let Some(c) = cursor {
                if c == root {
                    cpus.extend(object.os_index);
                    break;
                }
                cursor = objects[c].parent;
            }
        }
        CpuSet::new(cpus)
    };
    let mut expected = Expected { all_cpus: pus_below(0), ..Expected::default() };
    for object in &objects {
        if object.kind.starts_with("NUMANode") {
            // Memory-side caches sit between a node and the CPUs it belongs to.
            let mut holder = object.parent;
            while let Some(h) = holder.filter(|h| objects[*h].kind == "MemCache") {
                holder = objects[h].parent;
            }
            let cpus = holder.map(pus_below).unwrap_or_default();
            expected.numa.insert(object.os_index.unwrap_or(0) as i32, cpus);
        }
        if let (Some(busid), true) = (object.busid, is_io(&object.kind)) {
            let mut cursor = object.parent;
            while let Some(c) = cursor {
                if !is_io(&objects[c].kind) {
                    break;
                }
                cursor = objects[c].parent;
            }
            expected.pci.insert(busid, cursor.map(pus_below).unwrap_or_default());
        }
    }
    expected
}

/// Reads a hwloc XML export: cpusets are written on every non-I/O object.
fn parse_xml(text: &str) -> Expected {
    let options = roxmltree::ParsingOptions { allow_dtd: true, ..roxmltree::ParsingOptions::default() };
    let document = roxmltree::Document::parse_with_options(text, options).expect("hwloc XML parses");
    let bitmap = |s: &str| CpuSet::parse_mask(&s.replace("0x", "")).expect("hwloc cpuset");
    let mut expected = Expected::default();
    for node in document.descendants().filter(|n| n.has_tag_name("object")) {
        match node.attribute("type") {
            Some("Machine") => expected.all_cpus = bitmap(node.attribute("cpuset").unwrap_or("0x0")),
            Some("NUMANode") => {
                let id = node.attribute("os_index").and_then(|s| s.parse().ok()).unwrap_or(0);
                expected.numa.insert(id, bitmap(node.attribute("cpuset").unwrap_or("0x0")));
            }
            _ => {}
        }
        if let Some(busid) = node.attribute("pci_busid").and_then(|s| s.parse::<BusId>().ok()) {
            let locality = node.ancestors().skip(1).find_map(|a| a.attribute("cpuset")).map(bitmap).unwrap_or_default();
            expected.pci.insert(busid, locality);
        }
    }
    expected
}

/// Unpacks a capture into a temporary directory and returns its sysfs root.
fn unpack(tarball: &Path, into: &Path) -> PathBuf {
    let status = Command::new("tar").arg("xjf").arg(tarball).arg("-C").arg(into).status().expect("tar runs");
    assert!(status.success(), "tar xjf {}", tarball.display());
    let entry = std::fs::read_dir(into).unwrap().next().expect("tarball holds one directory").unwrap();
    entry.path()
}

/// The capture's test descriptors as (tarball, expected output, whether PCI
/// locality comes from sysfs). Two kinds of expected output depend on an
/// environment override of what sysfs says, and topo reports what the kernel
/// reports: GPU NUMA nodes hidden (the `-kept` variant is used instead), and PCI
/// locality forced by `HWLOC_PCI_LOCALITY` (NUMA nodes are still compared).
fn descriptors(dir: &Path) -> Vec<(String, String, bool)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "test") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let field = |key: &str| text.lines().find_map(|l| l.strip_prefix(key)).map(|v| v.trim().to_string());
        let env = text.lines().filter(|l| l.starts_with("env:")).collect::<Vec<_>>().join(" ");
        let hides_gpu_numa = dir.join(format!("{}-kept.test", path.file_stem().unwrap().to_string_lossy())).exists();
        if hides_gpu_numa {
            continue;
        }
        if let (Some(source), Some(target)) = (field("source:"), field("target:")) {
            found.push((source, target, !env.contains("HWLOC_PCI_LOCALITY")));
        }
    }
    found
}

fn check(topology: &Topology, expected: &Expected, name: &str, check_pci: bool) -> usize {
    let ours: BTreeMap<i32, CpuSet> = topology.numa_nodes.iter().map(|n| (n.id, n.cpus.clone())).collect();
    // hwloc drops CPUs and nodes a cgroup forbids; every node it shows must match ours.
    for (id, cpus) in &expected.numa {
        let mine = ours.get(id).unwrap_or_else(|| panic!("{name}: NUMA node {id} missing; have {ours:?}"));
        if mine.is_empty() {
            // A memory-only node (HBM, NVM, GPU memory): the kernel lists no CPUs
            // and topo says so; hwloc draws it next to the CPUs nearest to it.
            continue;
        }
        assert!(cpus.is_subset_of(mine), "{name}: node {id}: hwloc {cpus}, topo {mine}");
        if expected.all_cpus == CpuSet::new(ours.values().flat_map(|c| c.cpus().to_vec()).collect()) {
            assert_eq!(cpus, mine, "{name}: node {id}");
        }
    }
    let mut checked = 0;
    for (busid, locality) in expected.pci.iter().filter(|_| check_pci) {
        let device = topology.pci(*busid).unwrap_or_else(|| panic!("{name}: topo did not find PCI device {busid}"));
        match topology.numa_of(device.bus_id) {
            Some(node) => {
                let node_cpus = ours.get(&node).cloned().unwrap_or_default();
                assert!(
                    node_cpus.is_subset_of(locality) || locality.is_subset_of(&node_cpus),
                    "{name}: {busid}: topo says NUMA {node} (CPUs {node_cpus}), hwloc says local to {locality}"
                );
            }
            None => assert_eq!(locality, &expected.all_cpus, "{name}: {busid}: topo has no NUMA node, hwloc does"),
        }
        checked += 1;
    }
    checked
}

#[test]
fn every_hwloc_capture_agrees_with_hwlocs_expected_output() {
    let scratch = tempfile::tempdir().unwrap();
    let mut captures = 0;
    let mut devices = 0;
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures()).unwrap().map(|e| e.unwrap().path()).collect();
    dirs.sort();
    for dir in dirs {
        for (source, target, check_pci) in descriptors(&dir) {
            let into = scratch.path().join(&target);
            std::fs::create_dir_all(&into).unwrap();
            let root = unpack(&dir.join(&source), &into);
            let found = sysfs::discover(&root).unwrap_or_else(|e| panic!("{target}: {e}"));
            let text = std::fs::read_to_string(dir.join(&target)).unwrap();
            let expected = if target.ends_with(".xml") { parse_xml(&text) } else { parse_console(&text) };
            assert!(!expected.numa.is_empty(), "{target}: no NUMA node parsed from hwloc's output");
            devices += check(&found.topology, &expected, &target, check_pci);
            captures += 1;
        }
    }
    assert_eq!(captures, 18, "every descriptor but the GPU-NUMA-hidden one");
    assert_eq!(devices, 176, "PCI devices whose locality was compared");
}
