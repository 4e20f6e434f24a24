//! `--from DIR` where DIR holds one machine's pasted outputs (`lspci -tv`,
//! `lspci -vvv`, `ibstat`/`ibv_devinfo`, `nvidia-smi topo -m`, `nvidia-smi -q`
//! or `-q -x`, `nvidia-smi nvlink -s`/`-e`, `nvidia-smi topo -p2p`,
//! nvbandwidth, NCCL graph dumps) in files of any name, each recognised by its
//! content. The machine is rebuilt from lspci (or `topo -m`, or `-q` alone),
//! the RDMA devices and the GPUs' own answers are joined to it, measured
//! copies and NCCL's graphs are kept beside it, and what every file
//! contributed is listed; every disagreement between files is reported as a
//! contradiction. A directory with snapshot files (`.yaml`, `.json`) is a
//! cluster, not a bundle.

mod gpu_answers;
mod measured;
mod recognise;

use std::collections::BTreeSet;

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use topo_model::{HostInfo, Snapshot, Source, Topology};
use topo_parsers::{ibstat, lspci, nccl_graph, nvbandwidth, nvidia_smi, nvidia_smi_q, nvlink, p2p_matrix};

/// Larger files are not pasted command output; they are listed and skipped.
const MAX_FILE_BYTES: u64 = 16 << 20;

use recognise::{Kind, recognise};

fn files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| dir.display().to_string())?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// A directory is a bundle when it holds no snapshot files and at least one
/// file of pasted output.
pub fn is_bundle(dir: &Path) -> bool {
    let Ok(files) = files(dir) else { return false };
    let snapshot = |p: &PathBuf| p.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json");
    !files.iter().any(snapshot) && files.iter().any(|f| read_small(f).is_some_and(|t| recognise(&t).is_some()))
}

/// A file's text, read with a limit (not by the size it reports: /proc-like
/// files report 0); `None` when unreadable, too large or not UTF-8.
fn read_small(path: &Path) -> Option<String> {
    let bytes = topo_model::bounded::read_capped(path, MAX_FILE_BYTES).ok()??;
    String::from_utf8(bytes).ok()
}

/// Reads the bundle into one snapshot; its notices list each file's
/// contribution and every contradiction.
pub fn load(dir: &Path) -> anyhow::Result<Snapshot> {
    let mut notices = Vec::new();
    let mut lspci_text = String::new();
    let mut rdma: Option<(String, Vec<topo_model::Nic>)> = None;
    let mut smi: Option<(String, nvidia_smi::SmiMatrix)> = None;
    let mut pasted = gpu_answers::Pasted::default();
    let mut runs: Vec<(String, nvbandwidth::NvbandwidthRun)> = Vec::new();
    let mut graphs = Vec::new();
    for path in files(dir)? {
        let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        let Some(text) = read_small(&path) else {
            notices.push(format!("bundle: {name}: not read (unreadable, or over {MAX_FILE_BYTES} bytes)"));
            continue;
        };
        match recognise(&text) {
            Some(Kind::Lspci) => {
                notices.push(format!("bundle: {name}: lspci output (PCI tree, links, NUMA nodes where printed)"));
                lspci_text.push_str(&text);
                lspci_text.push('\n');
            }
            Some(kind @ (Kind::Ibstat | Kind::IbvDevinfo)) => {
                let devices =
                    if kind == Kind::Ibstat { ibstat::parse_ibstat(&text) } else { ibstat::parse_ibv_devinfo(&text) }
                        .with_context(|| name.clone())?;
                let tool = if kind == Kind::Ibstat { "ibstat" } else { "ibv_devinfo" };
                notices.push(format!("bundle: {name}: {tool} ({} RDMA devices: names, ports)", devices.len()));
                if rdma.as_ref().is_some_and(|(_, d)| d.len() != devices.len()) {
                    notices.push(format!(
                        "contradiction: {name} lists {} RDMA devices, another file a different number",
                        devices.len()
                    ));
                }
                rdma.get_or_insert((name, devices));
            }
            Some(Kind::NvidiaSmiTopo) => {
                let matrix = nvidia_smi::parse(&text, &name)?;
                notices.push(format!(
                    "bundle: {name}: nvidia-smi topo -m ({} endpoints), checked against the rest",
                    matrix.labels.len()
                ));
                smi = Some((name, matrix));
            }
            Some(Kind::NvidiaSmiQuery) => {
                pasted.queries.push((name.clone(), nvidia_smi_q::parse(&text).with_context(|| name.clone())?));
            }
            Some(Kind::NvidiaSmiNvlink) => {
                pasted.nvlinks.push((name.clone(), nvlink::parse(&text).with_context(|| name.clone())?));
            }
            Some(Kind::NvidiaSmiP2p) => {
                pasted.p2p.push((name.clone(), p2p_matrix::parse(&text).with_context(|| name.clone())?));
            }
            Some(Kind::Nvbandwidth) => {
                runs.push((name.clone(), nvbandwidth::parse(&text).with_context(|| name.clone())?));
            }
            Some(Kind::NcclGraph) => {
                let dump = nccl_graph::parse(&text, &name).with_context(|| name.clone())?;
                let channels: usize = dump.graphs.iter().map(|g| g.channels.len()).sum();
                notices.push(format!(
                    "bundle: {name}: NCCL graph dump ({} graphs, {channels} channels: GPU order and NICs per channel)",
                    dump.graphs.len()
                ));
                graphs.push(dump);
            }
            None => notices.push(format!("bundle: {name}: not recognised, skipped")),
        }
    }
    let recording = (!pasted.is_empty()).then(|| gpu_answers::recording(&pasted, &mut notices));
    let mut topology = if !lspci_text.is_empty() {
        let imported = lspci::import(&lspci_text).with_context(|| dir.display().to_string())?;
        notices.extend(imported.warnings);
        imported.topology
    } else if let Some((_, matrix)) = &smi {
        let (topology, warnings) = nvidia_smi::to_topology(matrix);
        notices.extend(warnings);
        topology
    } else if recording.as_ref().is_some_and(|r| r.answered().any(|(_, d)| d.bus_id().is_some())) {
        // `nvidia-smi -q` alone: the GPUs at their bus IDs, no PCIe tree.
        Topology::default()
    } else {
        bail!("{}: no lspci, nvidia-smi topo -m or nvidia-smi -q output among the files", dir.display())
    };
    let lspci_gpus: Option<BTreeSet<topo_model::BusId>> =
        (!lspci_text.is_empty()).then(|| topology.gpus.iter().map(|g| g.bus_id).collect());
    if let Some((name, devices)) = &rdma
        && !lspci_text.is_empty()
        && let Err(why) = lspci::attach_rdma_devices(&mut topology, devices)
    {
        notices.push(format!("contradiction: {name}: {why}"));
    }
    if let Some((name, matrix)) = &smi
        && !lspci_text.is_empty()
    {
        notices.extend(contradictions(&topology, matrix, name));
    }
    if let Some(recording) = &recording {
        let smi_ref = smi.as_ref().map(|(n, m)| (n.as_str(), m));
        notices.extend(gpu_answers::contradictions(&pasted, lspci_gpus.as_ref(), smi_ref));
        // Synthetic bus IDs (a topology rebuilt from `topo -m`) cannot join by bus ID.
        if topology.gpus.iter().all(|g| !g.bus_id.is_synthetic() && g.bus_id.domain != 0xfffe) {
            gpu_answers::apply(recording, &mut topology, &mut notices);
        }
    }
    let source = Source::Bundle { path: dir.display().to_string() };
    let mut snapshot = Snapshot::new(source, HostInfo::default(), topology, Vec::new());
    snapshot.nvml = recording;
    if let Some((name, run)) = runs.first() {
        let (report, skipped) = measured::report(run, &snapshot.topology, name);
        let compared = report.copies.iter().filter(|c| c.expectation.expected.is_some()).count();
        notices.push(format!(
            "bundle: {name}: nvbandwidth {} ({} test cases, {} copies measured, {compared} held against their path{})",
            run.version.as_deref().unwrap_or("(version not printed)"),
            run.testcases.len(),
            report.copies.len(),
            if skipped.is_empty() { String::new() } else { format!("; not compared: {}", skipped.join(", ")) }
        ));
        for gpu in &report.gpus {
            if let Ok(bus) = gpu.bus_id.parse::<topo_model::BusId>()
                && !snapshot.topology.gpus.is_empty()
                && snapshot.topology.gpu(bus).is_none()
            {
                notices.push(format!("contradiction: {name} ran on a GPU at {bus}, the other files show no GPU there"));
            }
        }
        snapshot.probe = Some(report);
    }
    for (name, _) in runs.iter().skip(1) {
        notices.push(format!("bundle: {name}: nvbandwidth, skipped (only the first run is kept)"));
    }
    if !graphs.is_empty() {
        snapshot.nccl = Some(topo_model::nccl::NcclReport {
            schema_version: topo_model::nccl::NCCL_REPORT_SCHEMA_VERSION,
            graph_dumps: graphs,
            ..Default::default()
        });
    }
    snapshot.notices.extend(notices);
    Ok(snapshot)
}

/// Every cell (and NIC name) where the rebuilt matrix and the pasted
/// `nvidia-smi topo -m` differ.
fn contradictions(topology: &Topology, smi: &nvidia_smi::SmiMatrix, name: &str) -> Vec<String> {
    let ours = topology.matrix();
    let labels: Vec<&str> = ours.endpoints.iter().map(|e| e.label.as_str()).collect();
    if labels != smi.labels.iter().map(String::as_str).collect::<Vec<_>>() {
        return vec![format!(
            "contradiction: {name} has endpoints {:?}, the other files give {:?}",
            smi.labels, labels
        )];
    }
    let mut found = Vec::new();
    for (i, row) in smi.cells.iter().enumerate() {
        for (j, cell) in row.iter().enumerate().filter(|(j, _)| *j > i) {
            let mine = ours.cells.get(i).and_then(|r| r.get(j));
            if mine != Some(cell) {
                let mine = mine.map_or("?".to_string(), |c| c.to_string());
                found.push(format!(
                    "contradiction: {} x {}: {name} says {cell}, the other files give {mine}",
                    labels[i], labels[j]
                ));
            }
        }
    }
    for (label, smi_name) in &smi.nic_names {
        let mine = ours.endpoints.iter().find(|e| &e.label == label).and_then(|e| e.name.as_deref());
        if mine != Some(smi_name.as_str()) {
            found.push(format!("contradiction: {label}: {name} names it {smi_name}, the other files {mine:?}"));
        }
    }
    found
}
