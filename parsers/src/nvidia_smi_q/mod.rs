//! `nvidia-smi -q` as pasted into tickets, in both forms: the XML of
//! `nvidia-smi -q -x` and the indented text of `nvidia-smi -q` (or `-a`, or a
//! `-d ECC,PCIE,...` selection). Per GPU it gives what NVML would have
//! answered, as the snapshot's [`NvmlRecording`], so the checks that read live
//! NVML answers read pasted ones the same way.
//!
//! Both forms are first flattened into per-GPU `section/.../key = value`
//! fields ([`fields`]); one table ([`map`]) then says which field of which form
//! answers which NVML question, across the names nvidia-smi used over the
//! years (`clocks_throttle_reasons` became `clocks_event_reasons` in 535,
//! `Power Readings` became `GPU Power Readings`, ...).

mod map;
mod text;
mod xml;

use topo_model::NvmlRecording;

/// Pasted output above this is refused: an 8-GPU `nvidia-smi -q -x` is about
/// 200 KiB, with every supported clock listed.
pub const MAX_QUERY_BYTES: usize = 16 << 20;

/// GPUs kept per file (a 64-GPU listing is far beyond any node).
pub const MAX_GPUS: usize = 1024;

/// Fields kept per GPU (a real `-q -x` GPU has a few hundred).
pub const MAX_FIELDS_PER_GPU: usize = 8192;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum QueryError {
    #[error("{size} bytes is larger than any nvidia-smi -q output ({MAX_QUERY_BYTES} bytes at most)")]
    TooLarge { size: usize },
    #[error("not nvidia-smi -q output (no `<nvidia_smi_log>` and no `NVSMI LOG` banner)")]
    NotQuery,
    #[error("nvidia-smi -q -x: the XML does not parse: {0}")]
    Xml(String),
    #[error("nvidia-smi -q: no GPU listed")]
    NoGpu,
}

/// Which form the text was in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    Xml,
    Text,
}

/// One GPU's fields, in the order the output printed them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct GpuFields {
    /// The bus ID the GPU's block is headed with (`GPU 00000000:19:00.0`, `<gpu id=...>`).
    pub header_bus_id: Option<String>,
    /// `section/sub-section/key` -> value, trimmed.
    pub fields: Vec<(String, String)>,
}

impl GpuFields {
    pub(crate) fn get(&self, path: &str) -> Option<&str> {
        self.fields.iter().find(|(p, _)| p.eq_ignore_ascii_case(path)).map(|(_, v)| v.as_str())
    }

    /// Fields under `prefix/` (the prefix removed).
    pub(crate) fn under<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.fields.iter().filter_map(move |(p, v)| {
            let rest = p.get(prefix.len()..)?;
            (p.get(..prefix.len())?.eq_ignore_ascii_case(prefix) && rest.starts_with('/'))
                .then(|| (&rest[1..], v.as_str()))
        })
    }
}

/// What the whole output said before splitting it by GPU.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Flattened {
    pub driver_version: Option<String>,
    pub cuda_version: Option<String>,
    pub attached_gpus: Option<String>,
    pub gpus: Vec<GpuFields>,
}

/// The result: NVML's answers, and what could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub form: Form,
    pub recording: NvmlRecording,
    /// `Attached GPUs`: more than listed when the output was for one GPU (`-i 0`).
    pub attached_gpus: Option<u32>,
    /// Values present but not understood (each names its GPU and field).
    pub warnings: Vec<String>,
}

/// Whether `text` holds `nvidia-smi -q` output of either form.
pub fn looks_like_query(text: &str) -> bool {
    text.contains("<nvidia_smi_log") || text.contains("==============NVSMI LOG==============")
}

/// Reads `nvidia-smi -q` or `-q -x` output.
pub fn parse(text: &str) -> Result<Query, QueryError> {
    if text.len() > MAX_QUERY_BYTES {
        return Err(QueryError::TooLarge { size: text.len() });
    }
    let (form, flat) = if text.contains("<nvidia_smi_log") {
        (Form::Xml, xml::flatten(text)?)
    } else if text.contains("==============NVSMI LOG==============") {
        (Form::Text, text::flatten(text))
    } else {
        return Err(QueryError::NotQuery);
    };
    if flat.gpus.is_empty() {
        return Err(QueryError::NoGpu);
    }
    let mut warnings = Vec::new();
    let recording = map::recording(&flat, form, &mut warnings);
    let attached_gpus = flat.attached_gpus.as_deref().and_then(|a| a.trim().parse().ok());
    Ok(Query { form, recording, attached_gpus, warnings })
}

/// At most this many characters of an input value in a message.
const ECHO_CHARS: usize = 60;

pub(crate) fn echo(value: &str) -> String {
    match value.char_indices().nth(ECHO_CHARS) {
        Some((cut, _)) => format!("{}...", &value[..cut]),
        None => value.to_string(),
    }
}
