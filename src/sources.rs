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
/// snapshot in YAML or JSON. Read once, with a limit (a FIFO or `/dev/stdin`
/// can be read only once; `/dev/zero` reports size 0 and never ends).
fn load_file(path: &Path) -> anyhow::Result<Snapshot> {
    if path.is_dir() {
        bail!("{}: is a directory; give an NCCL topology XML file or a snapshot", path.display());
    }
    let name = path.display().to_string();
    let bytes = topo_model::bounded::read_capped(path, topo_model::snapshot::MAX_SNAPSHOT_BYTES)
        .with_context(|| name.clone())?
        .with_context(|| {
            format!(
                "{name}: larger than any machine description ({} bytes at most)",
                topo_model::snapshot::MAX_SNAPSHOT_BYTES
            )
        })?;
    machine_from_bytes(&name, &bytes)
}

/// A machine description from its bytes (already read): `nvidia-smi topo -m`
/// text, NCCL topology XML, or a snapshot.
pub fn machine_from_bytes(name: &str, bytes: &[u8]) -> anyhow::Result<Snapshot> {
    let name = name.to_string();
    let xml = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<');
    if let Err(e) = std::str::from_utf8(bytes)
        && !xml
    {
        bail!("{name}: not UTF-8 text (invalid byte at offset {})", e.valid_up_to());
    }
    let text = String::from_utf8_lossy(bytes);
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if first.starts_with(char::is_whitespace) && first.split_whitespace().next() == Some("GPU0") {
        let matrix = topo_parsers::nvidia_smi::parse(&text, &name)?;
        let (topology, warnings) = topo_parsers::nvidia_smi::to_topology(&matrix);
        return Ok(Snapshot::new(Source::NvidiaSmiText { path: name }, HostInfo::default(), topology, warnings));
    }
    if first.trim_start().starts_with('<') {
        let imported = nccl_xml::import(&text, &name)?;
        let source = Source::NcclXml { path: name };
        return Ok(Snapshot::new(source, HostInfo::default(), imported.topology, imported.warnings));
    }
    if looks_like_nccl_log(&text) {
        bail!(
            "{name}: this is an NCCL log, not a machine description: read it with `topo nccl {name}` or \
             `topo show --nccl-log {name}`"
        );
    }
    Ok(Snapshot::from_text(&text, &name)?)
}

/// Whether text is NCCL debug output (for a clearer error than a YAML one).
fn looks_like_nccl_log(text: &str) -> bool {
    text.lines()
        .take(200)
        .any(|l| l.contains(" NCCL INFO ") || l.contains(" NCCL WARN ") || l.starts_with("NCCL version "))
}

/// Reads NCCL logs: files (plain or gzip), directories of them (walked in name
/// order, as `NCCL_DEBUG_FILE=nccl.%h.%p` leaves them) and `-` for stdin. An
/// input that cannot be read is reported in the summary and skipped; the others
/// are still read.
pub fn nccl_report(inputs: &[std::path::PathBuf]) -> topo_model::nccl::NcclReport {
    read_nccl_inputs(inputs, false).0
}

/// A machine description found among the logs: its name and bytes.
pub type MachineFile = (String, Vec<u8>);

/// As [`nccl_report`]; with `take_machine`, a snapshot or NCCL topology file
/// among the inputs is returned instead of being read as a log. Every input is
/// opened and read once: what is sniffed is kept and read again from memory,
/// so standard input, pipes and FIFOs lose nothing.
pub fn read_nccl_inputs(
    inputs: &[std::path::PathBuf],
    take_machine: bool,
) -> (topo_model::nccl::NcclReport, Option<MachineFile>) {
    use topo_parsers::nccl_log::{LogParser, read_stream};
    let mut parser = LogParser::new();
    let mut summaries = Vec::new();
    let mut machine = None;
    for path in expand(inputs) {
        let name = path.display().to_string();
        let (before, nccl_before) = (parser.lines_read(), parser.nccl_lines_read());
        let error = match open_input(&path) {
            Err(e) => Some(format!("{name}: {e}")),
            Ok(mut stream) => match read_head(&mut stream) {
                Err(e) => Some(format!("{name}: {e}")),
                Ok(head) if take_machine && machine.is_none() && is_machine_text(&head) => {
                    let mut bytes = head;
                    let limit = topo_model::snapshot::MAX_SNAPSHOT_BYTES;
                    match std::io::Read::read_to_end(&mut std::io::Read::take(stream, limit), &mut bytes) {
                        Ok(_) => {
                            machine = Some((name, bytes));
                            continue;
                        }
                        Err(e) => Some(format!("{name}: {e}")),
                    }
                }
                Ok(head) => {
                    let reader = std::io::Read::chain(std::io::Cursor::new(head), stream);
                    read_stream(&name, reader, &mut parser).err().map(|e| e.to_string())
                }
            },
        };
        summaries.push(topo_model::nccl::InputSummary {
            name,
            lines: parser.lines_read() - before,
            nccl_lines: parser.nccl_lines_read() - nccl_before,
            error,
        });
    }
    let mut report = parser.finish();
    report.inputs = summaries;
    (report, machine)
}

/// `-` is standard input; anything else is opened as it is (a named FIFO is
/// read once as a stream).
fn open_input(path: &Path) -> std::io::Result<Box<dyn std::io::Read>> {
    if path.as_os_str() == "-" {
        return Ok(Box::new(std::io::stdin()));
    }
    if path.is_dir() {
        return Err(std::io::Error::other("is a directory"));
    }
    Ok(Box::new(std::fs::File::open(path)?))
}

/// The first bytes of a stream (up to 4 KiB, or its first non-blank line),
/// enough to tell a log from a machine description.
fn read_head(stream: &mut Box<dyn std::io::Read>) -> std::io::Result<Vec<u8>> {
    const HEAD: usize = 4096;
    let mut head = Vec::with_capacity(HEAD);
    let mut chunk = [0u8; HEAD];
    while head.len() < HEAD {
        let read = match stream.read(&mut chunk[..HEAD - head.len()]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        head.extend_from_slice(&chunk[..read]);
        let text = String::from_utf8_lossy(&head);
        if text.lines().any(|l| !l.trim().is_empty()) && text.trim_start().contains('\n') {
            break;
        }
    }
    Ok(head)
}

/// Whether the first non-blank line is that of a topo snapshot or an NCCL
/// topology XML.
fn is_machine_text(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim_start();
    first.starts_with("schema_version:") || first.starts_with("<system") || first.starts_with("{\"schema_version\"")
}

/// Directories become the regular files below them, sorted; other paths stay
/// as given (so a missing one is reported by the reader, and an explicitly
/// named FIFO is read as a stream). Each directory is walked once (by device
/// and inode), symlinked directories are not followed (a `ln -s . loop` would
/// never end), and special files inside (FIFOs, sockets, devices) are skipped
/// with a warning: opening one can block for ever.
pub fn expand(inputs: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut seen_files = std::collections::HashSet::new();
    for input in inputs {
        if !input.is_dir() {
            out.push(input.clone());
            continue;
        }
        let mut visited = std::collections::HashSet::new();
        let mut stack = vec![input.clone()];
        let mut files = Vec::new();
        while let Some(dir) = stack.pop() {
            let Ok(meta) = std::fs::metadata(&dir) else { continue };
            if !visited.insert((meta.dev(), meta.ino())) {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                files.push(dir);
                continue;
            };
            // Real files before symlinks to them, so a file reached both ways is
            // listed under its own name.
            let mut entries: Vec<(bool, std::path::PathBuf)> =
                entries.flatten().map(|e| (e.file_type().is_ok_and(|t| t.is_symlink()), e.path())).collect();
            entries.sort();
            for (_, path) in entries {
                let Ok(own) = std::fs::symlink_metadata(&path) else { continue };
                if own.is_dir() {
                    stack.push(path);
                    continue;
                }
                // A symlink counts for what it points at; a symlinked directory is not walked.
                let target = if own.file_type().is_symlink() { std::fs::metadata(&path).ok() } else { Some(own) };
                match target {
                    Some(meta) if meta.is_file() => {
                        if seen_files.insert((meta.dev(), meta.ino())) {
                            files.push(path);
                        }
                    }
                    Some(meta) if meta.is_dir() => {
                        crate::output::warn(&format!("{}: a symlinked directory, not followed", path.display()))
                    }
                    Some(_) => crate::output::warn(&format!(
                        "{}: not a regular file (FIFO, socket or device), skipped",
                        path.display()
                    )),
                    None => crate::output::warn(&format!("{}: a broken symlink, skipped", path.display())),
                }
            }
        }
        files.sort();
        out.extend(files);
    }
    out
}
