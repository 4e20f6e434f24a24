//! Turning what the user pointed at (this machine, a sysfs capture, a file, an
//! example) into one Snapshot.

use std::path::Path;

use anyhow::{Context, bail};
use topo_model::{HostInfo, Snapshot, Source};
use topo_parsers::nccl_xml;
use topo_probes::sysfs;

use crate::examples::{self, ExampleFormat};

/// Where `show` and `snapshot` take the machine from.
pub enum Origin<'a> {
    /// A sysfs tree; `nvml`: also ask this machine's NVIDIA driver (only when
    /// the tree is this machine's own `/`).
    Sysfs {
        root: &'a Path,
        nvml: bool,
    },
    File(&'a Path),
    Example(&'a str),
}

pub fn load(origin: Origin) -> anyhow::Result<Snapshot> {
    match origin {
        Origin::Sysfs { root, nvml } => {
            let found = sysfs::discover(root)?;
            let source = Source::Sysfs { root: root.display().to_string() };
            let mut snapshot = Snapshot::new(source, found.host, found.topology, found.warnings);
            if nvml {
                let library = std::env::var_os(NVML_LIBRARY_VARIABLE);
                attach_nvml(&mut snapshot, topo_probes::nvml::probe(library.as_deref()));
            }
            Ok(snapshot)
        }
        Origin::File(path) => load_file(path),
        Origin::Example(name) => {
            let Some(example) = examples::find(name) else {
                bail!("no example named {name:?}; examples: {}", examples::names().join(", "));
            };
            match example.format {
                ExampleFormat::NcclXml => {
                    let imported = nccl_xml::import(example.text, name)?;
                    let source = Source::Example { name: name.to_string() };
                    Ok(Snapshot::new(source, HostInfo::default(), imported.topology, imported.warnings))
                }
                ExampleFormat::Snapshot => Ok(Snapshot::from_text(example.text, name)?),
            }
        }
    }
}

/// Names the NVML library to load instead of `libnvidia-ml.so.1` (a path, or a
/// name `dlopen` finds).
pub const NVML_LIBRARY_VARIABLE: &str = "TOPO_NVML_LIBRARY";

/// The start of the one notice a machine without a usable NVIDIA driver gets.
pub const NO_NVML_NOTICE: &str = "NVML unavailable";

/// Joins what NVML answered to the sysfs view; without NVML, one notice and
/// the sysfs view goes on.
pub fn attach_nvml(
    snapshot: &mut Snapshot,
    probed: Result<topo_model::NvmlRecording, topo_probes::nvml::NvmlUnavailable>,
) {
    match probed {
        Ok(recording) => {
            match &recording.device_count {
                topo_model::nvml::Answer::Ok(0) => {
                    snapshot.notices.push("NVML: the NVIDIA driver is loaded but reports no GPU".to_string())
                }
                topo_model::nvml::Answer::Ok(_) => {}
                other => snapshot.notices.push(format!("NVML: cannot count the GPUs: {}", other.show(u32::to_string))),
            }
            let notices = recording.apply(&mut snapshot.topology);
            snapshot.notices.extend(notices);
            snapshot.nvml = Some(recording);
        }
        Err(why) => snapshot.notices.push(format!(
            "{NO_NVML_NOTICE} ({why}): showing the CPU, NUMA, PCI and network view from sysfs, without GPU \
             details, NVLink or P2P status ({NVML_LIBRARY_VARIABLE} names another library)"
        )),
    }
}

/// A file is NCCL topology XML if it starts with `<` (after blanks),
/// `nvidia-smi topo -m` text if its first line is the matrix header, else a
/// snapshot in YAML or JSON.
fn load_file(path: &Path) -> anyhow::Result<Snapshot> {
    if path.is_dir() {
        if crate::bundle::is_bundle(path) {
            return crate::bundle::load(path);
        }
        bail!("{}: is a directory; give an NCCL topology XML file or a snapshot", path.display());
    }
    let mut head = [0u8; 256];
    let read = {
        use std::io::Read;
        let mut file = std::fs::File::open(path).with_context(|| path.display().to_string())?;
        file.read(&mut head).with_context(|| path.display().to_string())?
    };
    let head = &head[..read];
    let looks_like_xml = head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<');
    let looks_like_smi = String::from_utf8_lossy(head)
        .lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.starts_with(char::is_whitespace) && l.split_whitespace().next() == Some("GPU0"));
    if looks_like_smi {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).with_context(|| name.clone())?;
        let matrix = topo_parsers::nvidia_smi::parse(&text, &name)?;
        let (topology, warnings) = topo_parsers::nvidia_smi::to_topology(&matrix);
        return Ok(Snapshot::new(Source::NvidiaSmiText { path: name }, HostInfo::default(), topology, warnings));
    }
    if !looks_like_xml && let Some(snapshot) = load_lspci(path)? {
        return Ok(snapshot);
    }
    if looks_like_xml {
        let imported = nccl_xml::import_file(path)?;
        let source = Source::NcclXml { path: path.display().to_string() };
        Ok(Snapshot::new(source, HostInfo::default(), imported.topology, imported.warnings))
    } else {
        Ok(Snapshot::load(path)?)
    }
}

/// Pasted `lspci -tv` / `lspci -vvv` text (either or both in one file), told
/// apart from a snapshot by content; `None` when the file is not lspci output.
fn load_lspci(path: &Path) -> anyhow::Result<Option<Snapshot>> {
    const MAX_LSPCI_BYTES: u64 = 64 << 20;
    let name = path.display().to_string();
    let size = std::fs::metadata(path).with_context(|| name.clone())?.len();
    if size > MAX_LSPCI_BYTES {
        return Ok(None);
    }
    let Ok(text) = std::fs::read_to_string(path) else { return Ok(None) };
    let first = text.trim_start();
    if first.starts_with("schema_version:") || first.starts_with('{') {
        return Ok(None);
    }
    if !topo_parsers::lspci::looks_like_tree(&text) && !topo_parsers::lspci::looks_like_verbose(&text) {
        return Ok(None);
    }
    let imported = topo_parsers::lspci::import(&text).with_context(|| name.clone())?;
    let source = Source::Lspci { path: name };
    Ok(Some(Snapshot::new(source, HostInfo::default(), imported.topology, imported.warnings)))
}

/// Reads NCCL logs: files (plain or gzip), directories of them (walked in name
/// order, as `NCCL_DEBUG_FILE=nccl.%h.%p` leaves them) and `-` for stdin. An
/// input that cannot be read is reported in the summary and skipped; the others
/// are still read.
pub fn nccl_report(inputs: &[std::path::PathBuf]) -> topo_model::nccl::NcclReport {
    use topo_parsers::nccl_log::{LogParser, read_lines};
    let mut parser = LogParser::new();
    let mut summaries = Vec::new();
    for path in expand(inputs) {
        let before = parser.lines_read();
        let error = read_lines(&path, &mut parser).err().map(|e| e.to_string());
        summaries.push(topo_model::nccl::InputSummary {
            name: path.display().to_string(),
            lines: parser.lines_read() - before,
            error,
        });
    }
    let mut report = parser.finish();
    report.inputs = summaries;
    report
}

/// Directories become the files below them, sorted; other paths stay as given
/// (so a missing one is reported by the reader).
fn expand(inputs: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let mut stack = vec![input.clone()];
            let mut files = Vec::new();
            while let Some(dir) = stack.pop() {
                match std::fs::read_dir(&dir) {
                    Ok(entries) => {
                        for entry in entries.flatten() {
                            let path = entry.path();
                            if path.is_dir() { stack.push(path) } else { files.push(path) }
                        }
                    }
                    Err(_) => files.push(dir),
                }
            }
            files.sort();
            out.extend(files);
        } else {
            out.push(input.clone());
        }
    }
    out
}

/// Whether a file is a machine description (a topo snapshot or an NCCL topology
/// XML) rather than a log: its first line says so.
pub fn is_machine_description(path: &Path) -> bool {
    use std::io::{BufRead, BufReader, Read};
    if path.is_dir() {
        return false;
    }
    let Ok(file) = std::fs::File::open(path) else { return false };
    let mut first = String::new();
    let mut reader = BufReader::new(file).take(4096);
    while first.trim().is_empty() {
        first.clear();
        match reader.read_line(&mut first) {
            Ok(0) | Err(_) => return false,
            Ok(_) => {}
        }
    }
    let first = first.trim_start();
    first.starts_with("schema_version:") || first.starts_with("<system") || first.starts_with("{\"schema_version\"")
}
