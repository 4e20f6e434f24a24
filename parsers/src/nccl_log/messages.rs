//! Messages worth a finding, one entry per distinct text: WARN lines, INFO
//! lines NCCL's message table lists as degraded choices, and framework errors
//! carrying NCCL's words. Each entry keeps where it first appeared, how often,
//! and which hosts and ranks printed it; the table classifies each text once,
//! when the report is made.

use std::collections::{BTreeSet, HashMap};

use topo_model::nccl::Warning;

use super::catalogue::{CATALOGUE, Level};

/// Distinct texts kept per kind; further ones are counted, not kept.
const MAX_DISTINCT: usize = 512;
/// Hosts and ranks kept per text.
const MAX_WHO: usize = 256;
/// Message texts are cut to this many characters.
const MAX_TEXT_CHARS: usize = 600;

/// Where one line came from.
pub struct Origin<'a> {
    pub host: Option<&'a str>,
    pub rank: Option<u32>,
    pub cuda_dev: Option<u32>,
    pub file: &'a str,
    pub line: u64,
    pub source: Option<&'a str>,
}

struct Entry {
    warning: Warning,
    hosts: BTreeSet<String>,
    ranks: BTreeSet<u32>,
}

/// One kind of message (WARN, notice, framework error).
#[derive(Default)]
pub struct MessageTable {
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    /// Lines of this kind, repeats and texts past the bound included.
    pub count: u64,
    /// Distinct texts not kept (past [`MAX_DISTINCT`]).
    pub dropped: u64,
}

impl MessageTable {
    pub fn add(&mut self, text: &str, origin: Origin) {
        self.count += 1;
        let text = cut(text);
        let at = match self.index.get(text) {
            Some(&i) => i,
            None if self.entries.len() < MAX_DISTINCT => {
                self.entries.push(Entry {
                    warning: Warning {
                        host: origin.host.map(str::to_string),
                        rank: origin.rank,
                        cuda_dev: origin.cuda_dev,
                        file: origin.file.to_string(),
                        line: origin.line,
                        source: origin.source.map(str::to_string),
                        text: text.to_string(),
                        count: 0,
                        ..Warning::default()
                    },
                    hosts: BTreeSet::new(),
                    ranks: BTreeSet::new(),
                });
                self.index.insert(text.to_string(), self.entries.len() - 1);
                self.entries.len() - 1
            }
            None => {
                self.dropped += 1;
                return;
            }
        };
        let Some(entry) = self.entries.get_mut(at) else { return };
        entry.warning.count += 1;
        if let Some(host) = origin.host
            && entry.hosts.len() < MAX_WHO
            && !entry.hosts.contains(host)
        {
            entry.hosts.insert(host.to_string());
        }
        if let Some(rank) = origin.rank
            && entry.ranks.len() < MAX_WHO
        {
            entry.ranks.insert(rank);
        }
    }

    /// The entries in first-seen order, each classified by the message table
    /// at `level`, hosts renamed to their canonical form.
    pub fn finish(self, level: Level, rename: &dyn Fn(&str) -> String) -> Vec<Warning> {
        self.entries
            .into_iter()
            .map(|entry| {
                let mut warning = entry.warning;
                let (class, also) = classify(level, &warning.text, warning.source.as_deref());
                warning.class = class;
                warning.also = also;
                warning.host = warning.host.as_deref().map(rename);
                warning.hosts = entry.hosts.iter().map(|h| rename(h)).collect::<BTreeSet<_>>().into_iter().collect();
                warning.ranks = entry.ranks.into_iter().collect();
                warning
            })
            .collect()
    }
}

/// Classes of calls that fail for many reasons (a socket accept, a proxy
/// connection, a plugin call), which the system error then names.
const CAUSE_CARRIERS: &[&str] = &["bootstrap-connect-failure", "proxy-failure", "net-plugin-failure", "peer-lost"];

/// The class of a message and the further classes it points at. A
/// framework line that quotes NCCL's own words (`Last error:` text) is read
/// with the WARN rows first, which are more specific. A generic class (a CUDA
/// call, no row at all) from an NCCL source file of a known subsystem becomes
/// that subsystem's class, the generic one kept beside it.
fn classify(level: Level, text: &str, source: Option<&str>) -> (Option<String>, Vec<String>) {
    // A framework's or a bare line may quote a WARN cut after its opening words.
    let warn = CATALOGUE
        .classify_at(Level::Warn, text, source)
        .or_else(|| (level == Level::Framework).then(|| CATALOGUE.bare_warn(text)).flatten());
    let own = if level == Level::Warn { None } else { CATALOGUE.classify_at(level, text, source) };
    let generic = |class: &str| matches!(class, "unknown" | "internal-error" | "cuda-error");
    let pick = match (level, warn, own) {
        (Level::Warn, w, _) => w,
        // NCCL's own words, when they say more than the framework row that
        // also matched (a WARN quoted without its prefix, ending in `'out of
        // memory'`: the NVLS bind failure, not a framework's OOM).
        (_, Some(w), Some(o)) if generic(o.row.class) || CATALOGUE.specificity(w) > CATALOGUE.specificity(o) => Some(w),
        (_, _, Some(o)) => Some(o),
        (_, w, None) => w,
    };
    let mut class: Option<&str> = pick.map(|m| m.row.class);
    let mut also: Vec<&str> = pick.map(|m| m.row.also.to_vec()).unwrap_or_default();
    // A row that says internal-error says so on purpose (NCCL's own
    // consistency checks, audited against the source): no subsystem's fault.
    let promotable = |class: &str| matches!(class, "unknown" | "cuda-error");
    if let Some(subsystem) = source.and_then(|s| CATALOGUE.source_class(s))
        && class.is_none_or(promotable)
        && class != Some(subsystem)
    {
        also.extend(class.take());
        class = Some(subsystem);
    }
    // A system error naming a limit (EMFILE, ENOMEM, ...) or a peer gone
    // (ECONNRESET, EPIPE) is the cause whatever call met it; the call's own
    // class stays beside it.
    if let Some(cause) = CATALOGUE.errno_cause(text)
        && class.is_none_or(|c| generic(c) || CAUSE_CARRIERS.contains(&c))
    {
        also.extend(class.take());
        class = Some(cause.class);
    }
    // A failed CUDA call keeps that class beside the specific one a row gives
    // it (`Cuda failure 711 'peer mapping resources exhausted'` is a resource
    // limit, and still a CUDA call that failed).
    // The same from other CUDA checks (`CUDA error: ...`, vLLM's `Cuda error
    // custom_all_reduce.cuh:307 '...'`, nccl-tests' `Test CUDA failure`).
    let cuda_check = ["cuda error", "cuda failure"].iter().any(|w| contains_ignoring_case(text, w));
    if class.is_some_and(|c| c != "cuda-error") && (cuda_check || CATALOGUE.reports_cuda_failure(text)) {
        also.push("cuda-error");
    }
    if let Some(class) = CATALOGUE.completion_status(text).and_then(|s| s.class) {
        also.push(class);
    }
    if let Some(address) = CATALOGUE.unreachable_address(text) {
        also.push(address.class);
    }
    also.retain(|c| Some(*c) != class);
    also.sort();
    also.dedup();
    (class.map(str::to_string), also.into_iter().map(str::to_string).collect())
}

/// Whether `text` holds `word` (ASCII lower case) in any case.
fn contains_ignoring_case(text: &str, word: &str) -> bool {
    text.as_bytes().windows(word.len()).any(|w| w.eq_ignore_ascii_case(word.as_bytes()))
}

/// At most [`MAX_TEXT_CHARS`] characters, cut at a character boundary.
fn cut(text: &str) -> &str {
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}
