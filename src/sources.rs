//! Turning what the user pointed at (this machine, a sysfs capture, a file, an
//! example) into one Snapshot.

use std::io::Read;
use std::path::Path;

use anyhow::bail;
use topo_model::{HostInfo, Snapshot, Source};
use topo_parsers::nccl_xml;
use topo_probes::sysfs;

use crate::examples::{self, ExampleFormat};
use crate::input;

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

/// The most a machine description named by `--from` may hold: the largest of
/// the formats' own limits (snapshot 256 MiB, XML 64 MiB, `nvidia-smi` 4 MiB),
/// each checked again once the format is known.
pub const MAX_MACHINE_BYTES: u64 = topo_model::snapshot::MAX_SNAPSHOT_BYTES;

/// Reads `path` once, bounded, and tells what it is from the bytes read:
/// `show --from /dev/stdin`, `--from -` and FIFOs work, and `/dev/zero` is
/// refused at the limit.
fn load_file(path: &Path) -> anyhow::Result<Snapshot> {
    if path.is_dir() {
        if crate::bundle::is_bundle(path) {
            return crate::bundle::load(path);
        }
        bail!("{}: is a directory; give an NCCL topology XML file or a snapshot", path.display());
    }
    let bytes = input::read_bounded(path, MAX_MACHINE_BYTES)?;
    load_bytes(&bytes, &path.display().to_string())
}

/// A machine description from its bytes: NCCL topology XML if it starts with
/// `<` (after blanks), `nvidia-smi topo -m` text if its first line is the
/// matrix header, else a snapshot in YAML or JSON. An NCCL log is named as one.
pub fn load_bytes(bytes: &[u8], name: &str) -> anyhow::Result<Snapshot> {
    let head = &bytes[..bytes.len().min(4096)];
    let looks_like_xml = head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<');
    let looks_like_smi = String::from_utf8_lossy(head)
        .lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.starts_with(char::is_whitespace) && l.split_whitespace().next() == Some("GPU0"));
    if looks_like_smi {
        let text = String::from_utf8_lossy(bytes);
        let matrix = topo_parsers::nvidia_smi::parse(&text, name)?;
        let (topology, warnings) = topo_parsers::nvidia_smi::to_topology(&matrix);
        let source = Source::NvidiaSmiText { path: name.to_string() };
        return Ok(Snapshot::new(source, HostInfo::default(), topology, warnings));
    }
    if !looks_like_xml && let Some(snapshot) = load_lspci(bytes, name)? {
        return Ok(snapshot);
    }
    if looks_like_xml {
        if bytes.len() as u64 > nccl_xml::MAX_XML_BYTES {
            bail!("{name}: larger than any NCCL topology file ({} bytes at most)", nccl_xml::MAX_XML_BYTES);
        }
        let imported = nccl_xml::import(&String::from_utf8_lossy(bytes), name)?;
        let source = Source::NcclXml { path: name.to_string() };
        return Ok(Snapshot::new(source, HostInfo::default(), imported.topology, imported.warnings));
    }
    if looks_like_nccl_log(head) {
        bail!(
            "{name}: this is an NCCL log, not a machine description; read it with `topo nccl {name}`, or give it to \
             `topo show --nccl-log`"
        );
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!("{name}: not a snapshot: not UTF-8 text (invalid byte at offset {})", e.valid_up_to())
    })?;
    Ok(Snapshot::from_text(text, name)?)
}

/// Pasted `lspci -tv` / `lspci -vvv` text (either or both in one file), told
/// apart from a snapshot by content; `None` when the bytes are not lspci output.
fn load_lspci(bytes: &[u8], name: &str) -> anyhow::Result<Option<Snapshot>> {
    let Ok(text) = std::str::from_utf8(bytes) else { return Ok(None) };
    let first = text.trim_start();
    if first.starts_with("schema_version:") || first.starts_with('{') {
        return Ok(None);
    }
    if !topo_parsers::lspci::looks_like_tree(text) && !topo_parsers::lspci::looks_like_verbose(text) {
        return Ok(None);
    }
    let imported = anyhow::Context::with_context(topo_parsers::lspci::import(text), || name.to_string())?;
    let source = Source::Lspci { path: name.to_string() };
    Ok(Some(Snapshot::new(source, HostInfo::default(), imported.topology, imported.warnings)))
}

/// Whether the first bytes hold an NCCL log line (`NCCL INFO`, `NCCL WARN`).
fn looks_like_nccl_log(head: &[u8]) -> bool {
    String::from_utf8_lossy(head).lines().take(20).any(|l| l.contains(" NCCL INFO") || l.contains(" NCCL WARN"))
}

/// What reading the logs found: the report, and the first machine description
/// (snapshot or topology XML) found among them, when asked to look for one.
pub struct LogInputs {
    pub report: topo_model::nccl::NcclReport,
    pub machine: Option<anyhow::Result<Snapshot>>,
}

/// Reads NCCL logs: files (plain or gzip), directories of them (walked once,
/// in name order, as `NCCL_DEBUG_FILE=nccl.%h.%p` leaves them), FIFOs and `-`
/// for stdin, each opened and read once. An input that cannot be read is
/// reported in the summary and skipped; the others are still read. With
/// `find_machine`, an input whose first line says it is a snapshot or NCCL
/// topology XML is taken as the machine instead of a log.
pub fn read_logs(inputs: &[std::path::PathBuf], find_machine: bool) -> LogInputs {
    use topo_parsers::nccl_log::{LogParser, read_stream};
    let walked = input::walk(inputs, None);
    for skipped in &walked.skipped {
        crate::output::warn(skipped);
    }
    let mut parser = LogParser::new();
    let mut summaries = Vec::new();
    let mut machine = None;
    let mut graph_dumps = Vec::new();
    for (dir, why) in &walked.unreadable {
        summaries.push(topo_model::nccl::InputSummary {
            name: dir.display().to_string(),
            lines: 0,
            nccl_lines: 0,
            error: Some(format!("{}: {why}", dir.display())),
        });
    }
    for path in &walked.files {
        let name = path.display().to_string();
        let (before, nccl_before) = (parser.lines_read(), parser.nccl_lines_read());
        let read = (|| -> anyhow::Result<bool> {
            let mut stream = input::open(path)?;
            let head = read_head(&mut stream).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
            if find_machine && machine.is_none() && is_machine_description(&head) {
                let chained = std::io::Cursor::new(head).chain(stream);
                let bytes = input::read_stream_bounded(chained, &name, MAX_MACHINE_BYTES)?;
                machine = Some(load_bytes(&bytes, &name));
                return Ok(true);
            }
            // An NCCL_GRAPH_DUMP_FILE given with the logs: NCCL's channels, shown beside the rings.
            if String::from_utf8_lossy(&head).trim_start().starts_with("<graphs") {
                let chained = std::io::Cursor::new(head).chain(stream);
                let bytes =
                    input::read_stream_bounded(chained, &name, topo_parsers::nccl_graph::MAX_GRAPH_BYTES as u64)?;
                graph_dumps.push(topo_parsers::nccl_graph::parse(&String::from_utf8_lossy(&bytes), &name)?);
                return Ok(true);
            }
            read_stream(&name, std::io::Cursor::new(head).chain(stream), &mut parser)?;
            Ok(false)
        })();
        let error = match read {
            // A machine description or graph dump is no log: not listed among the inputs.
            Ok(true) => continue,
            Ok(false) => None,
            Err(e) => Some(format!("{e:#}")),
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
    report.graph_dumps = graph_dumps;
    LogInputs { report, machine }
}

/// Reads NCCL logs as [`read_logs`] does, every input taken as a log.
pub fn nccl_report(inputs: &[std::path::PathBuf]) -> topo_model::nccl::NcclReport {
    read_logs(inputs, false).report
}

/// The first bytes of a stream, enough to see its first non-blank line (or
/// gzip's magic): up to 4 KiB, read until a line ends or the stream does.
fn read_head(stream: &mut impl std::io::Read) -> std::io::Result<Vec<u8>> {
    let mut head = vec![0u8; 4096];
    let mut filled = 0;
    while filled < head.len() {
        let read = match stream.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        filled += read;
        let seen = &head[..filled];
        let a_line_with_text = seen.split(|b| *b == b'\n').rev().skip(1).any(|l| !l.trim_ascii().is_empty());
        if seen.starts_with(&[0x1f, 0x8b]) || a_line_with_text {
            break;
        }
    }
    head.truncate(filled);
    Ok(head)
}

/// Whether a stream's first bytes say it is a machine description (a topo
/// snapshot or an NCCL topology XML) rather than a log: its first line says so.
pub fn is_machine_description(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let Some(first) = text.lines().find(|l| !l.trim().is_empty()) else { return false };
    let first = first.trim_start();
    first.starts_with("schema_version:") || first.starts_with("<system") || first.starts_with("{\"schema_version\"")
}
