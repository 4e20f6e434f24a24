//! The snapshot: the one serialisable record of a node. Replaying it gives the
//! same output as the live run that recorded it, on any machine.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::nvml::NvmlRecording;
use crate::topology::Topology;

/// Bumped whenever a field changes meaning or a required field is added.
pub const SCHEMA_VERSION: u32 = 1;

/// Snapshots larger than this are refused before parsing: a real node's
/// snapshot is tens of kilobytes.
pub const MAX_SNAPSHOT_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub schema_version: u32,
    /// `topo 0.1.0`: which build wrote it.
    #[serde(default)]
    pub tool: String,
    #[serde(default)]
    pub host: HostInfo,
    pub source: Source,
    pub topology: Topology,
    /// NVML's raw answers, when the node had an NVIDIA driver (replayed by `show`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvml: Option<NvmlRecording>,
    /// A job's NCCL log, parsed (`topo snapshot --nccl-log`), so the node and
    /// what NCCL made of it travel together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl: Option<crate::nccl::NcclReport>,
    /// Live measurements from `topo probe` (copies, collectives, ring hops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<crate::measure::ProbeReport>,
    /// Warnings raised while probing (unreadable files, missing driver), replayed
    /// with the snapshot so a replay reports what the live run reported.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Size of the `/dev/shm` tmpfs (NCCL's shared-memory segments live there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev_shm_bytes: Option<u64>,
    /// The locked-memory limit of the probing process (`unlimited` or bytes), as
    /// `/proc/self/limits` shows it: RDMA registers buffers against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memlock: Option<String>,
    /// Loaded kernel modules that GPU networking depends on (`nvidia`,
    /// `nvidia_peermem`, `nv_peer_mem`, `ib_core`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<String>,
}

/// Where the topology came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Source {
    /// Probed from a sysfs tree (`/` on a live machine).
    Sysfs { root: String },
    /// Imported from an NCCL topology XML file.
    NcclXml { path: String },
    /// A bundled example machine.
    Example { name: String },
    /// Rebuilt from pasted `nvidia-smi topo -m` text: endpoints have synthetic
    /// bus IDs (domain `fffe`), the PCIe tree is the simplest that gives its cells.
    NvidiaSmiText { path: String },
    /// Rebuilt from pasted `lspci -tv` and/or `lspci -vvv` text: real bus IDs;
    /// NUMA nodes only where `lspci -v` printed them, no CPU lists, no NVLink.
    Lspci { path: String },
    /// A directory of pasted tool outputs (`topo show --from DIR`): the tree
    /// from lspci or `nvidia-smi topo -m` when present, GPU facts from
    /// `nvidia-smi -q`; each file's contribution is in the notices.
    Bundle { path: String },
}

impl Source {
    /// Where the PCIe tree's link facts were read, for evidence lines
    /// (`sysfs 0000:17:00.0`, `lspci 0000:17:00.0`).
    pub fn tree_label(&self) -> &'static str {
        match self {
            Source::Sysfs { .. } | Source::Example { .. } => "sysfs",
            Source::NcclXml { .. } => "NCCL topology",
            Source::NvidiaSmiText { .. } => "nvidia-smi topo -m",
            Source::Lspci { .. } | Source::Bundle { .. } => "lspci",
        }
    }
}

/// Renders any serialisable value as YAML (all YAML goes through this module,
/// so the YAML crate can be swapped in one place).
pub fn to_yaml_string<T: Serialize>(value: &T) -> String {
    serde_yaml::to_string(value).unwrap_or_else(|e| format!("# serialisation failed: {e}\n"))
}

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: {size} bytes or more: larger than any snapshot ({MAX_SNAPSHOT_BYTES} bytes at most)")]
    TooLarge { path: String, size: u64 },
    #[error("{path}: {message}")]
    Malformed { path: String, message: String },
    #[error("{path}: not a topo snapshot (no schema_version)")]
    NotASnapshot { path: String },
    #[error(
        "{path}: snapshot schema version {found} is newer than this topo understands ({SCHEMA_VERSION}); use a newer topo"
    )]
    NewerSchema { path: String, found: u64 },
}

/// Brackets nested deeper than this are refused before parsing: the YAML
/// parser's time grows with the square of the depth (200 KB of `[` took 53 s),
/// and a snapshot nests fewer than 10 deep.
pub const MAX_NESTING: usize = 100;

/// How deep `[` and `{` nest in `text`, outside quoted strings (a quote
/// opens a string only where a token starts, as in YAML: `it's` is no quote):
/// a linear scan, run before any parser sees the text.
pub fn flow_nesting(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut quote: Option<u8> = None;
    let mut escaped = false;
    let mut previous = b'\n';
    for &b in text.as_bytes() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if b == b'\\' && q == b'"' {
                    escaped = true;
                } else if b == q {
                    quote = None;
                }
            }
            None => match b {
                b'"' | b'\'' if matches!(previous, b' ' | b'\t' | b'\n' | b':' | b',' | b'[' | b'{' | b'-') => {
                    quote = Some(b)
                }
                b'[' | b'{' => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        previous = b;
    }
    deepest
}

impl Snapshot {
    pub fn new(source: Source, host: HostInfo, topology: Topology, notices: Vec<String>) -> Snapshot {
        Snapshot {
            schema_version: SCHEMA_VERSION,
            tool: format!("topo {}", env!("CARGO_PKG_VERSION")),
            host,
            source,
            topology,
            nvml: None,
            nccl: None,
            probe: None,
            notices,
        }
    }

    pub fn to_yaml(&self) -> String {
        to_yaml_string(self)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Reads a snapshot written as YAML or JSON (JSON is read by the YAML parser).
    pub fn load(path: &Path) -> Result<Snapshot, SnapshotError> {
        let name = path.display().to_string();
        let io = |source| SnapshotError::Io { path: name.clone(), source };
        // Read with a limit, not by the size the file reports (0 for /dev/zero, FIFOs).
        let Some(bytes) = crate::bounded::read_capped(path, MAX_SNAPSHOT_BYTES).map_err(io)? else {
            return Err(SnapshotError::TooLarge { path: name, size: MAX_SNAPSHOT_BYTES + 1 });
        };
        let text = String::from_utf8(bytes).map_err(|e| SnapshotError::Malformed {
            path: name.clone(),
            message: format!("not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()),
        })?;
        Snapshot::from_text(&text, &name)
    }

    /// Parses snapshot text (JSON or YAML); `name` is used in error messages.
    /// One pass when it reads; the version is looked at first only to explain
    /// a failure, so a newer file is reported as newer rather than as whatever
    /// field it renamed.
    pub fn from_text(text: &str, name: &str) -> Result<Snapshot, SnapshotError> {
        let malformed = |message: String| SnapshotError::Malformed { path: name.to_string(), message };
        if flow_nesting(text) > MAX_NESTING {
            return Err(malformed(format!("brackets nested deeper than {MAX_NESTING} levels; refused")));
        }
        let is_json = text.trim_start().starts_with('{');
        let parsed: Result<Snapshot, String> = if is_json {
            serde_json::from_str(text).map_err(|e| e.to_string())
        } else {
            serde_yaml::from_str(text).map_err(|e| e.to_string())
        };
        let version = |snapshot_version: Option<u64>| -> Result<(), SnapshotError> {
            match snapshot_version {
                Some(v) if v > u64::from(SCHEMA_VERSION) => {
                    Err(SnapshotError::NewerSchema { path: name.to_string(), found: v })
                }
                _ => Ok(()),
            }
        };
        match parsed {
            Ok(snapshot) => {
                version(Some(u64::from(snapshot.schema_version)))?;
                Ok(snapshot)
            }
            Err(message) => {
                let header: serde_yaml::Value = serde_yaml::from_str(text).map_err(|e| malformed(e.to_string()))?;
                match header.get("schema_version") {
                    Some(v) => {
                        let v = v.as_u64().ok_or_else(|| malformed("schema_version is not a whole number".into()))?;
                        version(Some(v))?;
                        Err(malformed(message))
                    }
                    None => Err(SnapshotError::NotASnapshot { path: name.to_string() }),
                }
            }
        }
    }
}
