//! `--from DIR` where DIR holds one machine's pasted outputs (`lspci -tv`,
//! `lspci -vvv`, `ibstat`/`ibv_devinfo`, `nvidia-smi topo -m`) in files of any
//! name, each recognised by its content. The machine is rebuilt from lspci,
//! the RDMA devices are joined to it, and what every file contributed is
//! listed; `nvidia-smi topo -m` is held against the rebuilt matrix cell by
//! cell and every difference is reported as a contradiction. A directory with
//! snapshot files (`.yaml`, `.json`) is a cluster, not a bundle.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use topo_model::{HostInfo, Snapshot, Source, Topology};
use topo_parsers::{ibstat, lspci, nvidia_smi};

/// Larger files are not pasted command output; they are listed and skipped.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// What one file was recognised as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Lspci,
    Ibstat,
    IbvDevinfo,
    NvidiaSmiTopo,
}

fn recognise(text: &str) -> Option<Kind> {
    let smi = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.starts_with(char::is_whitespace) && l.split_whitespace().next() == Some("GPU0"));
    if smi {
        Some(Kind::NvidiaSmiTopo)
    } else if lspci::looks_like_tree(text) || lspci::looks_like_verbose(text) {
        Some(Kind::Lspci)
    } else if ibstat::looks_like_ibv_devinfo(text) {
        Some(Kind::IbvDevinfo)
    } else if ibstat::looks_like_ibstat(text) {
        Some(Kind::Ibstat)
    } else {
        None
    }
}

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
            None => notices.push(format!("bundle: {name}: not recognised, skipped")),
        }
    }
    let mut topology = if lspci_text.is_empty() {
        match &smi {
            Some((_, matrix)) => {
                let (topology, warnings) = nvidia_smi::to_topology(matrix);
                notices.extend(warnings);
                topology
            }
            None => bail!("{}: no lspci or nvidia-smi topo -m output among the files", dir.display()),
        }
    } else {
        let imported = lspci::import(&lspci_text).with_context(|| dir.display().to_string())?;
        notices.extend(imported.warnings);
        imported.topology
    };
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
    let source = Source::Lspci { path: dir.display().to_string() };
    let mut snapshot = Snapshot::new(source, HostInfo::default(), topology, Vec::new());
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
