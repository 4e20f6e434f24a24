//! The table of NCCL's own messages (`parsers/data/nccl-messages.yaml`): for
//! each WARN format string, each INFO line that signals a degraded choice and
//! each framework error that carries NCCL's words, the root-cause class it
//! points at; for each class, why it matters and what to do. Knowledge lives in
//! that file; this module only reads it and matches lines against it.

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use super::pattern::{CompiledPattern, collapse_spaces};

/// Literal characters a WARN row needs before a line without NCCL's prefix is
/// taken as its text (`Error while creating shared memory segment` yes, `%s:%d %s` no).
const MIN_BARE_LITERAL: usize = 24;
/// Characters of a WARN row's opening text a bare line must repeat to be
/// taken for NCCL's words: no other program prints 40 characters of them.
const MIN_BARE_OPENING: usize = 40;

/// How many characters `text` shares with the start of `opening`, cut back
/// to where both are at a word's end.
fn shared_words(opening: &str, text: &str) -> usize {
    let same = opening.bytes().zip(text.bytes()).take_while(|(a, b)| a == b).count();
    let at_end = |s: &str, i: usize| s.as_bytes().get(i).is_none_or(|b| !b.is_ascii_alphanumeric());
    (0..=same)
        .rev()
        .find(|&i| {
            at_end(opening, i)
                && at_end(text, i)
                && opening.as_bytes().get(i.wrapping_sub(1)).is_some_and(|b| !b.is_ascii_whitespace())
        })
        .unwrap_or(0)
}

// The rows, compiled from `data/nccl-messages.yaml` by `build.rs` (which fails
// the build on a row naming an unknown class).
include!(concat!(env!("OUT_DIR"), "/nccl_messages.rs"));

/// RCCL prints NCCL's messages through hipify, which renames CUDA's API in
/// them: `hipIpcGetMemHandle failed : %s`, `HIP failure '%s'` where NCCL says
/// `cudaIpcGetMemHandle failed : %s`, `Cuda failure '%s'` (ROCm/rccl, built
/// from NVIDIA/nccl's tree). The table holds NCCL's words, and an RCCL line is
/// read in them; NCCL itself prints no `hip` identifier.
fn nccl_spelling(text: String) -> String {
    if !text.contains("hip") && !text.contains("HIP failure") {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text.as_str();
    while let Some(at) = rest.find("hip") {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        let word_start = out.chars().next_back().is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_');
        let api = from[3..].starts_with(|c: char| c.is_ascii_uppercase());
        out.push_str(if word_start && api { "cuda" } else { "hip" });
        rest = &from[3..];
    }
    out.push_str(rest);
    out.replace("HIP failure", "Cuda failure")
}

/// The table as shipped, with its lookup keys built once.
pub static CATALOGUE: LazyLock<Catalogue> = LazyLock::new(Catalogue::shipped);

/// Where a message comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// NCCL's WARN macro (also the `Last error:` text frameworks repeat).
    Warn,
    /// An INFO line that says NCCL chose a slower or degraded path.
    Info,
    /// A framework's error line (PyTorch, DeepSpeed, Horovod, Ray) carrying NCCL's words.
    Framework,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Info,
    Warning,
    Error,
}

/// What is known about one root-cause class.
#[derive(Debug, Clone, Copy, Default)]
pub struct Class {
    pub severity: Option<Severity>,
    pub title: &'static str,
    pub why: &'static str,
    pub fix: &'static str,
    /// The network a message of this class shows carrying traffic (a work
    /// completion comes only from a transport in use), for logs that print no
    /// `Using network` line (before 2.5, or excerpts).
    pub carried_by: Option<&'static str>,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Message {
    /// NCCL's format string as in its source (framework rows: the text as printed).
    pub pattern: &'static str,
    pub level: Level,
    pub versions: Option<&'static str>,
    pub source: Option<&'static str>,
    pub class: &'static str,
    pub severity: Option<Severity>,
    pub why: Option<&'static str>,
    pub fix: Option<&'static str>,
    /// Further classes the message points at (a connect failure with `No
    /// route to host` is also the interface NCCL chose).
    pub also: &'static [&'static str],
    /// The row holds only for a message printed from this NCCL source file (a
    /// path prefix): the same CUDA error means another thing in another
    /// subsystem (`peer access is not supported` from transport/shm.cc is
    /// cuMem host memory, not P2P).
    pub only_in: Option<&'static str>,
    /// The network a message from this row proves in use (a network plugin's
    /// own WARN: `NET/OFI ...` is aws-ofi-nccl over libfabric).
    pub carries: Option<&'static str>,
    /// A line every run prints at its end (a local rank closing its proxy
    /// connection): a finding only when the log shows a failure.
    pub after_failure: bool,
    /// A line NCCL prints also for a communicator of one rank, where it says
    /// nothing (`Check P2P Type intraNodeP2pSupport 0`: a node holding one
    /// rank has no peer to reach): a finding only where a communicator has
    /// several ranks.
    pub needs_peers: bool,
    /// A message about the network between nodes not being there (libibverbs
    /// or a net plugin that would not load, no provider): NCCL falls back and,
    /// on a job the log shows on one node, no traffic would have used it.
    /// Then it is said at info severity, never dropped.
    pub off_node: bool,
    /// The text is NCCL's own even without its prefix and though short
    /// (`Cuda failure 999 'unknown error'`, include/checks.h's wording, which
    /// frameworks spell `CUDA error`): a pasted line of it alone is NCCL output.
    pub bare: bool,
    /// A line processes print as they tear their communicators down (the
    /// proxy service thread's socket calls failing under an abort, `Abort
    /// COMPLETE`, a framework's destructor): noise at the end of a run that
    /// finished, a symptom where anything else in the log failed (see
    /// `src/diagnose/teardown.rs`).
    pub at_exit: bool,
}

/// The subsystem an NCCL source file belongs to.
#[derive(Debug, Clone, Copy)]
pub struct SourceClass {
    /// A path relative to NCCL's `src/` (a prefix: `transport/net_ib/` covers the directory).
    pub file: &'static str,
    pub class: &'static str,
    /// The network a message from this file proves in use (`IB`, `Socket`).
    pub carries: Option<&'static str>,
}

/// An error-trail line NCCL prints when one transport's init fails and it goes
/// on with the next (2.28+'s `ncclIbInit` without libibverbs or an IB device,
/// then the socket transport): no failure, when the job used another network.
#[derive(Debug, Clone, Copy)]
pub struct FallbackTrail {
    /// `file:line` as the trail prints it.
    pub location: &'static str,
    /// The network NCCL used instead.
    pub instead: &'static str,
}

/// An `NCCL_*` setting that overrides NCCL's own choice (`NCCL_X set by
/// environment to Y`): left over from debugging, it costs bandwidth.
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    pub name: &'static str,
    /// Values that switch a transport or path off entirely (`NCCL_P2P_LEVEL=LOC`).
    pub turns_off: &'static [&'static str],
    /// What is lost when it is off.
    pub class: Option<&'static str>,
    /// It selects hardware (interfaces, HCAs, a GID, a topology) rather than
    /// tuning NCCL: often required, named so the reader sees what the job was
    /// told (launchers such as Ray set some of these unasked).
    pub selects: bool,
    /// It changes what NCCL reports, not what it does (debug output, dumps,
    /// RAS): not a setting the diagnosis reports.
    pub quiet: bool,
    pub meaning: &'static str,
}

/// Every variable NCCL reads by name, extracted from its release tags
/// (`data/nccl-env-params.tsv`): a job's setting the table does not describe
/// is still one it made.
const ENV_PARAMS: &str = include_str!("../../data/nccl-env-params.tsv");

/// A variable NCCL's source reads, as `data/nccl-env-params.tsv` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvParam {
    pub name: &'static str,
    /// Its NCCL_PARAM default in the newest release that reads it (an integer).
    pub default: Option<i64>,
    /// The first minor version whose source names it (`2.12`).
    pub since: &'static str,
    /// Its source file under src/ in the newest release that reads it.
    pub source: &'static str,
}

/// The variable `name` as NCCL's source reads it, if it does.
pub fn env_param(name: &str) -> Option<EnvParam> {
    ENV_PARAMS.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let mut cols = l.split('\t');
        let found = cols.next()?;
        (found == name).then(|| EnvParam {
            name: found,
            default: cols.next().and_then(|d| d.parse().ok()),
            since: cols.next().unwrap_or(""),
            source: cols.next().unwrap_or(""),
        })
    })
}

impl Setting {
    /// Whether `value` switches off what this setting governs.
    pub fn turns_off(&self, value: &str) -> bool {
        self.turns_off.iter().any(|v| v.eq_ignore_ascii_case(value.trim()))
    }
}

/// How far a job reached, as far as its log tells (see `first_when`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    SingleNode,
    MultiNode,
    /// The failed collective came after others completed (a watchdog's
    /// sequence number past the first): the data path had worked.
    AfterProgress,
    /// Init stopped while NCCL set up its data path: rings, trees or
    /// connections were printed, so the ranks had met.
    Connecting,
    /// The network the job used is an RDMA one (InfiniBand, RoCE, EFA, a
    /// plugin over them), not TCP sockets.
    Rdma,
    /// Init stopped in NVLS (NVLink SHARP multicast) setup: its lines were
    /// printed, and NCCL sets NVLS up after its rings and trees.
    Nvls,
    /// The job forced GPUDirect RDMA past NCCL's own distance limit
    /// (`NCCL_NET_GDR_LEVEL` at PHB or SYS, see [`gdr_forced`]): the path
    /// NCCL would not have chosen carries the data.
    GdrForced,
    /// The network is HPE Slingshot: aws-ofi-nccl over libfabric's `cxi`
    /// provider (see [`slingshot`]), whose provider settings decide whether
    /// large GPU-memory transfers complete.
    Slingshot,
}

/// Whether the network devices NCCL listed are libfabric's `cxi` provider
/// (`NET/OFI Selected Provider is cxi (found 4 nics)`, or its NICs `cxi0`...
/// by name): HPE Slingshot.
pub fn slingshot(devices: &[String]) -> bool {
    devices.iter().any(|d| d.starts_with("cxi"))
}

/// Whether a `NCCL_NET_GDR_LEVEL` value lets GPUDirect RDMA cross a host
/// bridge or the CPU interconnect (PHB, SYS; as numbers 3 and up, the
/// pre-2.4 scale NCCL still reads). NCCL's own limit is PXB (a PCIe switch
/// shared by NIC and GPU), past which it stages through host memory; on many
/// platforms a GPUDirect write through the root complex stalls or is slow
/// (NCCL's environment documentation, NCCL_NET_GDR_LEVEL).
pub fn gdr_forced(value: &str) -> bool {
    let value = value.trim().trim_end_matches('.');
    ["PHB", "SYS"].iter().any(|v| value.eq_ignore_ascii_case(v)) || value.parse::<u32>().is_ok_and(|n| n >= 3)
}

/// A cause public threads established for a failure whose log names none.
#[derive(Debug, Clone, Copy)]
pub struct Suspect {
    pub class: &'static str,
    /// How to tell this cause apart on the machine.
    pub check: &'static str,
    /// The suspect leads when all of these hold of the job (one node or
    /// several, failed after collectives had completed, where init stopped);
    /// empty: it never leads.
    pub first_when: &'static [Scope],
}

/// The suspects of one kind of failure that names no cause (a bare
/// `unhandled system error`), most frequent first.
#[derive(Debug, Clone, Copy)]
pub struct Suspects {
    pub failure: &'static str,
    pub title: &'static str,
    /// Finding codes of such a failure.
    pub codes: &'static [&'static str],
    /// Evidence text that marks it (matched without regard to case).
    pub words: &'static [&'static str],
    /// Where the order comes from.
    pub basis: &'static str,
    pub list: &'static [Suspect],
}

impl Suspects {
    /// Whether a failure finding of `code` with these evidence texts is this kind.
    pub fn matches<'a>(&self, code: &str, texts: impl IntoIterator<Item = &'a str>) -> bool {
        if self.codes.contains(&code) {
            return true;
        }
        let words: Vec<String> = self.words.iter().map(|w| w.to_ascii_lowercase()).collect();
        texts.into_iter().any(|t| {
            let t = t.to_ascii_lowercase();
            words.iter().any(|w| t.contains(w.as_str()))
        })
    }

    /// The list in the order that fits the job: the suspects whose
    /// `first_when` is among what the log shows of it lead, in the order of
    /// `shown` (the stronger fact first); the rest keep the table's order.
    pub fn ordered(&self, shown: &[Scope]) -> Vec<&'static Suspect> {
        // Its place: that of the strongest fact it needs, when it needs only facts shown.
        let rank = |s: &Suspect| {
            let places: Option<Vec<usize>> = s.first_when.iter().map(|w| shown.iter().position(|x| x == w)).collect();
            places.and_then(|p| p.into_iter().min())
        };
        let leads = |s: &Suspect| rank(s).is_some();
        let mut out: Vec<&'static Suspect> = self.list.iter().filter(|s| leads(s)).collect();
        out.sort_by_key(|s| rank(s));
        out.extend(self.list.iter().filter(|s| !leads(s)));
        out
    }
}

/// An address no other node can reach, as connect failures print it.
#[derive(Debug, Clone, Copy)]
pub struct UnreachableAddress {
    pub prefix: &'static str,
    pub class: &'static str,
    pub meaning: &'static str,
}

/// A system error (strerror text) that names the cause whatever call met it:
/// a limit the node ran out of (`Accept failed: Too many open files`), or a
/// peer that went away (`Call to recv from 10.0.0.2<5555> failed : Connection
/// reset by peer`).
#[derive(Debug, Clone, Copy)]
pub struct ErrnoCause {
    pub text: &'static str,
    pub errno: &'static str,
    pub class: &'static str,
    pub meaning: &'static str,
}

/// A completion status code (`status=12`) and what it usually means.
#[derive(Debug, Clone, Copy)]
pub struct WcStatus {
    pub code: i64,
    pub name: &'static str,
    pub meaning: &'static str,
    pub hint: Option<&'static str>,
    /// The class this status usually points at beyond the completion error
    /// itself (a protection error on a GPUDirect path: `gdr-path-broken`).
    pub class: Option<&'static str>,
    /// A libfabric provider's error (EFA, CXI): its own words, which the
    /// completion line quotes, and the provider. `None` for verbs statuses.
    pub text: Option<&'static str>,
    pub provider: Option<&'static str>,
}

/// An `ncclResult_t` value as error trails print it (`init.cc:1234 -> 2`).
#[derive(Debug, Clone, Copy)]
pub struct ResultCode {
    pub code: i64,
    pub name: &'static str,
    pub meaning: &'static str,
    pub class: Option<&'static str>,
}

/// The table with its lookup keys.
pub struct Catalogue {
    pub classes: BTreeMap<&'static str, Class>,
    pub messages: &'static [Message],
    pub wc_status: &'static [WcStatus],
    /// libfabric providers' completion errors, as aws-ofi-nccl prints them.
    pub provider_errors: &'static [WcStatus],
    pub results: &'static [ResultCode],
    pub sources: &'static [SourceClass],
    pub fallback_trails: &'static [FallbackTrail],
    pub unreachable_addresses: &'static [UnreachableAddress],
    pub errno_causes: &'static [ErrnoCause],
    pub settings: &'static [Setting],
    /// Suspects of failures that name no cause, in table order.
    pub suspects: &'static [Suspects],
    patterns: &'static [CompiledPattern],
    /// INFO rows by the first word of their (anchored) pattern.
    info_by_word: HashMap<&'static str, Vec<usize>>,
    /// WARN rows with enough literal text to recognise a line that lost its
    /// prefix, by the first word of their pattern.
    warn_by_word: HashMap<&'static str, Vec<usize>>,
    /// The framework rows' texts in one automaton, and each text's row: the
    /// only rows a candidate framework line (on the per-line path) is held
    /// against, all found in one pass over the line.
    framework_rows: Option<(aho_corasick::AhoCorasick, Vec<usize>)>,
}

/// A row of the table that matched a line.
#[derive(Debug, Clone, Copy)]
pub struct Match<'a> {
    pub index: usize,
    pub row: &'a Message,
}

impl Catalogue {
    fn shipped() -> Catalogue {
        let mut info_by_word: HashMap<&'static str, Vec<usize>> = HashMap::new();
        let mut warn_by_word: HashMap<&'static str, Vec<usize>> = HashMap::new();
        let (rows, texts): (Vec<usize>, Vec<&str>) = MESSAGES
            .iter()
            .enumerate()
            .filter(|(_, m)| m.level == Level::Framework)
            .map(|(i, m)| (i, m.pattern.trim()))
            .unzip();
        // Fails only past the automaton's size limits, which a table of a
        // few hundred short texts is far from (a test holds it built).
        let framework_rows = aho_corasick::AhoCorasick::new(texts).ok().map(|automaton| (automaton, rows));
        for (i, (row, pattern)) in MESSAGES.iter().zip(PATTERNS).enumerate() {
            let Some(word) = pattern.first_word() else { continue };
            match row.level {
                Level::Info => info_by_word.entry(word).or_default().push(i),
                Level::Warn if pattern.specificity() >= MIN_BARE_LITERAL || row.bare => {
                    warn_by_word.entry(word).or_default().push(i)
                }
                _ => {}
            }
        }
        Catalogue {
            classes: CLASSES.iter().copied().collect(),
            messages: MESSAGES,
            wc_status: WC_STATUS,
            provider_errors: PROVIDER_ERRORS,
            results: RESULTS,
            sources: SOURCES,
            fallback_trails: FALLBACK_TRAILS,
            unreachable_addresses: UNREACHABLE_ADDRESSES,
            errno_causes: ERRNO_CAUSES,
            settings: SETTINGS,
            suspects: SUSPECTS,
            patterns: PATTERNS,
            info_by_word,
            warn_by_word,
            framework_rows,
        }
    }

    /// The most specific row of `level` that printed `text` (most literal
    /// characters wins: `Call to posix_fallocate failed : %s` over `Call to %s
    /// failed : %s`). Framework rows match anywhere in the line.
    pub fn classify(&self, level: Level, text: &str) -> Option<Match<'_>> {
        self.classify_at(level, text, None)
    }

    /// [`Self::classify`] for a message printed from NCCL source location
    /// `source` (`transport/shm.cc:590`), where rows held to a file apply.
    pub fn classify_at(&self, level: Level, text: &str, source: Option<&str>) -> Option<Match<'_>> {
        let text = nccl_spelling(collapse_spaces(text.trim()));
        let file = source.and_then(|s| s.split(':').next());
        let mut best: Option<(usize, (bool, usize, bool))> = None;
        // Framework rows: their text anywhere in the line, all in one pass;
        // in table order, which settles ties as the table's order does.
        let mut framework_hits: Vec<usize> = self
            .framework_rows
            .iter()
            .filter(|_| level == Level::Framework)
            .flat_map(|(automaton, rows)| {
                automaton.find_overlapping_iter(text.as_str()).filter_map(|hit| rows.get(hit.pattern().as_usize()))
            })
            .copied()
            .collect();
        framework_hits.sort_unstable();
        framework_hits.dedup();
        let other_rows = (0..self.messages.len()).filter(|_| level != Level::Framework);
        for i in framework_hits.into_iter().chain(other_rows) {
            let (Some(row), Some(pattern)) = (self.messages.get(i), self.patterns.get(i)) else { continue };
            if row.level != level || pattern.specificity() < 4 {
                continue;
            }
            if row.only_in.is_some_and(|only| !file.is_some_and(|f| f.starts_with(only))) {
                continue;
            }
            // The literal characters the line holds: a row's all, or those
            // before the cut of a line that stops inside one (a multi-line
            // WARN's first line, an excerpt).
            let held = match level {
                Level::Framework => Some(pattern.specificity()),
                Level::Warn => pattern.matched_warn(&text),
                _ => pattern.matched(&text),
            };
            let Some(held) = held else { continue };
            // A framework line that names a cause (`internal error`) is read by
            // it before a generic wrapper (`ncclCommInitRank failed`); a row
            // held to this file outranks the same words anywhere.
            let named = level != Level::Framework || row.class != "unknown";
            let rank = (named, held, row.only_in.is_some());
            if best.is_none_or(|(_, r)| rank > r) {
                best = Some((i, rank));
            }
        }
        best.and_then(|(index, _)| Some(Match { index, row: self.messages.get(index)? }))
    }

    /// How much of the WARN row that best explains `text` the text holds:
    /// (literal characters held, the row's whole). Less than whole is a WARN
    /// cut inside its row: an excerpt, or a paste hard-wrapped at the
    /// terminal's width whose next lines carry the rest.
    pub fn warn_held(&self, text: &str) -> Option<(usize, usize)> {
        let found = self.classify(Level::Warn, text)?;
        let pattern = self.patterns.get(found.index)?;
        Some((pattern.matched_warn(&collapse_spaces(text.trim()))?, pattern.specificity()))
    }

    /// Whether an INFO message is one the table lists (cheap: one hash lookup
    /// on its first word before any pattern runs; this is on the per-line path).
    pub fn info_row(&self, message: &str) -> Option<Match<'_>> {
        self.row_by_first_word(&self.info_by_word, message)
    }

    /// A WARN row that printed `message` although the line has no NCCL prefix:
    /// the whole text, or its opening when the line stops or turns aside
    /// after enough of it (a WARN whose format has a line break prints the
    /// rest on bare lines; a quote cut or reworded after the opening words).
    pub fn bare_warn(&self, message: &str) -> Option<Match<'_>> {
        self.row_by_first_word(&self.warn_by_word, message).or_else(|| self.warn_by_opening(message))
    }

    /// The WARN row whose opening text `message` repeats for the most
    /// characters, at least [`MIN_BARE_OPENING`], up to a word's end.
    fn warn_by_opening(&self, message: &str) -> Option<Match<'_>> {
        let rows = self.warn_by_word.get(message.split_whitespace().next()?)?;
        let text = collapse_spaces(message.trim());
        rows.iter()
            .filter_map(|&i| Some((i, self.messages.get(i)?, self.patterns.get(i)?.literals.first()?)))
            .map(|(i, row, opening)| (i, row, shared_words(opening, &text)))
            .filter(|(_, _, shared)| *shared >= MIN_BARE_OPENING)
            .max_by_key(|(_, _, shared)| *shared)
            .map(|(index, row, _)| Match { index, row })
    }

    /// The most specific row among those whose pattern begins with the
    /// message's first word.
    fn row_by_first_word(&self, by_word: &HashMap<&'static str, Vec<usize>>, message: &str) -> Option<Match<'_>> {
        let rows = by_word.get(message.split_whitespace().next()?)?;
        let text = collapse_spaces(message.trim());
        rows.iter()
            .filter_map(|&i| Some((i, self.messages.get(i)?, self.patterns.get(i)?)))
            .filter(|(_, _, p)| p.matches_collapsed(&text))
            .max_by_key(|(_, _, p)| p.specificity())
            .map(|(index, row, _)| Match { index, row })
    }

    /// The tuning setting called `name`, if the table lists it.
    pub fn setting(&self, name: &str) -> Option<&Setting> {
        self.settings.iter().find(|s| s.name == name)
    }

    /// Whether a text reports a failed CUDA call: one of the table's generic
    /// CUDA-failure WARN rows (class `cuda-error`) matches it.
    pub fn reports_cuda_failure(&self, text: &str) -> bool {
        let text = collapse_spaces(text.trim());
        self.messages
            .iter()
            .zip(self.patterns)
            .any(|(row, p)| row.level == Level::Warn && row.class == "cuda-error" && p.matches_collapsed(&text))
    }

    /// The network a WARN's text proves in use (its row's `carries`).
    pub fn text_network(&self, text: &str) -> Option<&'static str> {
        self.classify_at(Level::Warn, text, None)?.row.carries
    }

    /// The network a message from this NCCL source location proves in use.
    pub fn source_network(&self, location: &str) -> Option<&'static str> {
        self.source_row(location)?.carries
    }

    /// The row of an NCCL source location (`transport/nvls.cc:157`). Some
    /// builds print the path from the repository root (`src/transport/...`) or
    /// a bundling tree's (`external/nccl_archive/src/transport/...`): the part
    /// after the last `src/` is NCCL's own.
    fn source_row(&self, location: &str) -> Option<&'static SourceClass> {
        let file = location.split(':').next()?;
        let file = file.rsplit_once("src/").map_or(file, |(_, own)| own);
        // NCCL 2.4 and older named their CUDA-compiled files `.cu`
        // (`transport/net_ib.cu`): the same file as today's `.cc`.
        let old = file.strip_suffix(".cu").map(|stem| (stem, ".cc"));
        self.sources.iter().find(|s| match old {
            Some((stem, cc)) => s.file.strip_prefix(stem) == Some(cc),
            None => file.starts_with(s.file),
        })
    }

    /// The subsystem class of an NCCL source location (`transport/nvls.cc:157`).
    pub fn source_class(&self, location: &str) -> Option<&str> {
        self.source_row(location).map(|s| s.class)
    }

    /// The class of an unreachable peer address in a connect failure
    /// (`Connect to 127.0.0.1<45069> failed`), with what the address is.
    pub fn unreachable_address(&self, text: &str) -> Option<&UnreachableAddress> {
        let at = text.find("Connect to ")? + "Connect to ".len();
        let address = &text[at..];
        self.unreachable_addresses.iter().find(|a| {
            if a.prefix.starts_with('<') { address.contains(a.prefix) } else { address.starts_with(a.prefix) }
        })
    }

    /// The cause a failure's system error names (`... failed: Too many open
    /// files`): the errno's words after a `:`, `,` or `(` anywhere in the text.
    pub fn errno_cause(&self, text: &str) -> Option<&ErrnoCause> {
        self.errno_causes
            .iter()
            .find(|e| text.match_indices(e.text).any(|(at, _)| text[..at].trim_end().ends_with([':', ',', '('])))
    }

    /// The row of an interface address NCCL listed (`172.17.0.3<0>` from
    /// `eth0:172.17.0.3<0>`, `fe80::1%bond0<0>`) that no other node can reach.
    /// The same for an interface as NCCL lists it (`enP1s1:fe80::1%enP1s1<0>`,
    /// `eth0:10.0.0.1<0>`): the address after the name.
    pub fn unreachable_interface(&self, entry: &str) -> Option<&UnreachableAddress> {
        self.unreachable_interface_address(entry.split_once(':').map_or("", |(_, address)| address))
    }

    pub fn unreachable_interface_address(&self, address: &str) -> Option<&UnreachableAddress> {
        let address = address.trim();
        if address.is_empty() {
            return None;
        }
        self.unreachable_addresses.iter().find(|a| match a.prefix.strip_prefix('<').and_then(|p| p.strip_suffix('>')) {
            // `<::1>` stands for the whole address in connect lines' `host<port>` form.
            Some(whole) => {
                address == whole || address.strip_prefix(whole).is_some_and(|rest| rest.starts_with(['<', '%']))
            }
            None => address.starts_with(a.prefix),
        })
    }

    pub fn class(&self, name: &str) -> Option<&Class> {
        self.classes.get(name)
    }

    /// How many literal characters a matched row's pattern holds (how much of
    /// the line it pins down).
    pub fn specificity(&self, m: Match) -> usize {
        self.patterns.get(m.index).map_or(0, |p| p.specificity())
    }

    /// The severity of a row: its own, else its class's, else warning.
    pub fn severity(&self, row: &Message) -> Severity {
        row.severity.or_else(|| self.class(row.class).and_then(|c| c.severity)).unwrap_or(Severity::Warning)
    }

    pub fn result(&self, code: i64) -> Option<&ResultCode> {
        self.results.iter().find(|r| r.code == code)
    }

    /// The status of a completion error as NCCL prints it: `status=12`,
    /// `with error 12`, `status=IBV_WC_RETRY_EXC_ERR(12)`; or a libfabric
    /// provider's error that aws-ofi-nccl quotes (`completed with error. RC:
    /// 103. Error: 4126 (Unresponsive receiver ...)`), known by its words.
    pub fn completion_status(&self, text: &str) -> Option<&WcStatus> {
        if text.contains("completed with error") {
            return self.provider_errors.iter().find(|e| e.text.is_some_and(|words| text.contains(words)));
        }
        if !text.contains("completion") {
            return None;
        }
        let code = ["status=", "with error "].iter().find_map(|key| {
            let at = text.find(key)? + key.len();
            let rest = &text[at..];
            let rest = match rest.find('(') {
                Some(open) if !rest[..open].contains(' ') => &rest[open + 1..],
                _ => rest,
            };
            rest.chars().take_while(char::is_ascii_digit).collect::<String>().parse::<i64>().ok()
        })?;
        self.wc_status(code)
    }

    pub fn wc_status(&self, code: i64) -> Option<&WcStatus> {
        self.wc_status.iter().find(|s| s.code == code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpudirect_is_forced_past_a_pcie_switch_only() {
        for value in ["PHB", "sys", "3", "4", "5", "PHB."] {
            assert!(gdr_forced(value), "{value}");
        }
        for value in ["LOC", "PIX", "PXB", "0", "2", "", "on"] {
            assert!(!gdr_forced(value), "{value}");
        }
    }

    #[test]
    fn every_framework_row_is_searched() {
        let (automaton, rows) = CATALOGUE.framework_rows.as_ref().expect("the framework rows' automaton");
        assert_eq!(automaton.patterns_len(), rows.len());
        assert_eq!(rows.len(), CATALOGUE.messages.iter().filter(|m| m.level == Level::Framework).count());
        // Rows whose texts overlap in one line are all found, each once held against it.
        let line =
            "torch.distributed.DistBackendError: NCCL error in: x.cpp:1, unhandled system error, ncclSystemError";
        let hits: std::collections::BTreeSet<&str> = automaton
            .find_overlapping_iter(line)
            .filter_map(|hit| rows.get(hit.pattern().as_usize()))
            .filter_map(|&i| CATALOGUE.messages.get(i).map(|m| m.pattern))
            .collect();
        for text in ["unhandled system error", "ncclSystemError", "NCCL error in:"] {
            assert!(hits.iter().any(|h| h.contains(text)), "{text} not among {hits:?}");
        }
        assert!(CATALOGUE.classify(Level::Framework, line).is_some());
    }

    #[test]
    fn the_shipped_table_is_compiled_in_whole() {
        // build.rs refuses unknown classes; here: every row and pattern came through.
        let yaml = include_str!("../../data/nccl-messages.yaml");
        let rows = yaml.lines().filter(|l| l.trim_start().starts_with("- {pattern:")).count();
        assert!(rows > 900, "{rows} rows in the YAML file");
        assert_eq!(CATALOGUE.messages.len(), rows);
        assert_eq!(PATTERNS.len(), rows);
        assert!(CATALOGUE.classes.len() >= 30);
        assert!(CATALOGUE.classes.contains_key("unknown"));
        assert_eq!(CATALOGUE.wc_status.iter().find(|s| s.code == 12).map(|s| s.name), Some("IBV_WC_RETRY_EXC_ERR"));
    }

    #[test]
    fn rccl_lines_are_read_in_nccl_words() {
        // Corpus 1983 and 2580 (ROCm/rccl#2188): RCCL's hipified P2P IPC failure.
        let hit = CATALOGUE.classify(Level::Warn, "hipIpcGetMemHandle failed : invalid argument").unwrap();
        assert_eq!(hit.row.pattern, "cudaIpcGetMemHandle failed : %s");
        assert_eq!(
            nccl_spelling("HIP failure 'out of memory' at x.cc:3".into()),
            "Cuda failure 'out of memory' at x.cc:3"
        );
        // Only an API name's `hip` is CUDA's: other words keep theirs.
        assert_eq!(nccl_spelling("chipset hipify/src hip_x".into()), "chipset hipify/src hip_x");
    }

    #[test]
    fn the_most_specific_row_wins() {
        let hit = CATALOGUE.classify(Level::Warn, "Call to posix_fallocate failed : No space left on device").unwrap();
        assert_eq!(hit.row.class, "shm-too-small");
        let generic = CATALOGUE.classify(Level::Warn, "Call to bind failed : Address already in use");
        assert!(generic.is_some());
    }

    /// The same CUDA error means cuMem host memory in SHM's file (NVIDIA/nccl#1838)
    /// and P2P anywhere else.
    #[test]
    fn a_line_cut_after_a_shared_word_is_not_another_message() {
        // `Call to %s failed : Connection reset by peer` cut after `failed`
        // would match every complete `Call to ... failed`: the row the line
        // holds whole wins when the two say different things.
        let class = |text| CATALOGUE.classify(Level::Warn, text).map(|m| m.row.class);
        assert_eq!(class("Call to ibv_create_qp failed"), Some("ib-verbs-failure"));
        assert_eq!(class("Call to recv failed : Connection reset by peer"), Some("peer-lost"));
        assert_eq!(class("Call to bind failed: Address already in use"), Some("resource-exhausted"));
        // One punctuation mark is no evidence of a cut line.
        assert_ne!(class("mlx5: host_unknown: got completion with error:"), Some("invalid-usage"));
        // A multi-line WARN's first line still takes its own row (NCCL 2.27+
        // prints the NVLS advice on the next lines).
        let first = "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation cannot be performed in the present state'.";
        let hit = CATALOGUE.classify(Level::Warn, first).unwrap();
        assert_eq!((hit.row.class, hit.row.also.contains(&"nvlink-fabric-failure")), ("nvls-failure", true));
    }

    #[test]
    fn a_bare_line_that_opens_a_warn_is_that_warn() {
        // A WARN whose format has a line break: its first line alone (520).
        let cut = CATALOGUE.bare_warn("Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152:").unwrap();
        assert_eq!(cut.row.class, "nvls-failure");
        // Reworded after 40 shared characters (422).
        let loose = CATALOGUE.bare_warn("Failed to bind NVLink SHARP (NVLS) Multicast memory: CUDA error 401").unwrap();
        assert_eq!(loose.row.class, "nvls-failure");
        // Fewer shared characters, or a shared run ending inside a word: not NCCL's.
        assert!(CATALOGUE.bare_warn("Failed to bind the socket to port 80").is_none());
        assert!(CATALOGUE.bare_warn("Failed to bind NVLink SHARP (NVLS) Multicastxyz memory of size 1").is_none());
    }

    #[test]
    fn provider_errors_are_known_by_their_words() {
        let efa = "NET/OFI Request 0x7f456c224810 completed with error. RC: 103. Error: 4126 (Unresponsive receiver (reachable by EFA device but handshake failed) My EFA addr: fi_addr_efa://[fe80::c55:2eff:fe44:db5]:0:142160333";
        let status = CATALOGUE.completion_status(efa).unwrap();
        assert_eq!(
            (status.name, status.class, status.provider),
            ("FI_EFA_ERR_UNESTABLISHED_RECV_UNRESP", Some("peer-lost"), Some("efa"))
        );
        let hit = CATALOGUE.classify(Level::Warn, efa).unwrap();
        assert_eq!((hit.row.class, hit.row.carries), ("ib-completion-error", Some("AWS Libfabric")));
        // The verbs status numbers are not read from an OFI line, and no
        // provider's words from a verbs line.
        assert!(
            CATALOGUE
                .completion_status(
                    "NET/OFI Request 0x1 completed with error. RC: 20. Error: unknown error. Completed length: 0"
                )
                .is_none()
        );
        let verbs = CATALOGUE
            .completion_status(
                "NET/IB : Got completion from peer 10.0.0.2<5555> with status=12 opcode=0 len=0 vendor err 129",
            )
            .unwrap();
        assert_eq!((verbs.name, verbs.provider), ("IBV_WC_RETRY_EXC_ERR", None));
        // A plugin that failed to start proves no network (NCCL falls back).
        assert_eq!(CATALOGUE.text_network("NET/OFI aws-ofi-nccl initialization failed"), None);
    }

    #[test]
    fn old_cu_source_files_are_todays_cc_files() {
        assert_eq!(CATALOGUE.source_class("transport/net_ib.cu:555"), Some("ib-verbs-failure"));
        assert_eq!(CATALOGUE.source_network("transport/net_ib.cu:555"), Some("IB"));
        assert_eq!(CATALOGUE.source_class("transport/net.cu:12"), Some("proxy-failure"));
        assert_eq!(CATALOGUE.source_class("transport/nvls_other.cu:1"), None);
    }

    #[test]
    fn a_row_held_to_a_file_applies_there_only() {
        let text = "Cuda failure 217 'peer access is not supported between these two devices'";
        let class = |source| CATALOGUE.classify_at(Level::Warn, text, source).map(|m| m.row.class);
        assert_eq!(class(Some("transport/shm.cc:590")), Some("cumem-unsupported"));
        assert_eq!(class(Some("transport/p2p.cc:275")), Some("p2p-disabled"));
        assert_eq!(class(None), Some("p2p-disabled"));
    }

    /// A CUDA error string names the same cause in NCCL's WARN (both forms)
    /// and in a framework's `CUDA error:` line (lines as users paste them).
    #[test]
    fn cuda_error_strings_name_their_cause_everywhere() {
        for (text, class) in [
            ("uncorrectable NVLink error detected during the execution", "nvlink-fabric-failure"),
            ("peer mapping resources exhausted", "resource-exhausted"),
            ("invalid device ordinal", "configuration-error"),
            ("system has unsupported display driver / cuda driver combination", "version-mismatch"),
            ("an illegal memory access was encountered", "cuda-error"),
        ] {
            let warn = CATALOGUE.classify(Level::Warn, &format!("Cuda failure '{text}'"));
            let numbered = CATALOGUE.classify(Level::Warn, &format!("Cuda failure 999 '{text}'"));
            let framework = CATALOGUE.classify(Level::Framework, &format!("RuntimeError: CUDA error: {text}"));
            for found in [warn, numbered, framework] {
                assert_eq!(found.map(|m| m.row.class), Some(class), "{text}");
            }
        }
        // In quotes, as other CUDA checks print it (SGLang's custom all-reduce, sglang-project/sglang#552).
        let quoted = "Failed: Cuda error /home/runner/work/vllm/vllm/csrc/custom_all_reduce.cuh:307 'peer access is not supported between these two devices'";
        assert_eq!(CATALOGUE.classify(Level::Framework, quoted).map(|m| m.row.class), Some("p2p-disabled"));
        // An unknown CUDA error stays a CUDA error.
        let other = CATALOGUE.classify(Level::Warn, "Cuda failure 'misaligned address'").map(|m| m.row.class);
        assert_eq!(other, Some("cuda-error"));
    }

    /// PyTorch's rendezvous store failing before NCCL starts, in the words
    /// of public reports (vllm-project/vllm#19670; a retried connect from a
    /// DDP tutorial's output): the timeout is fatal, one failed connect is not.
    #[test]
    fn the_rendezvous_store_failing_is_a_bootstrap_failure() {
        let fatal = "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying to connect to (172.17.0.9, 46229).";
        let retried = "[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:12345 (errno: 101 - Network is unreachable).";
        let fatal = CATALOGUE.classify(Level::Framework, fatal).unwrap();
        let retried = CATALOGUE.classify(Level::Framework, retried).unwrap();
        assert_eq!((fatal.row.class, retried.row.class), ("bootstrap-connect-failure", "bootstrap-connect-failure"));
        assert_eq!(
            (CATALOGUE.severity(fatal.row), CATALOGUE.severity(retried.row)),
            (Severity::Error, Severity::Warning)
        );
    }

    /// PyTorch's own words for NCCL's unique id not arriving through its store
    /// (ProcessGroupNCCL broadcastUniqueNCCLID, both spellings), as public
    /// reports quote them (huggingface/transformers#15618's `Socket Timeout`,
    /// a Databricks notebook's `Connection reset by peer`, a vLLM benchmark's
    /// `Broken pipe`), and its debug wrapper's collective mismatch.
    #[test]
    fn pytorch_unique_id_store_failures_and_collective_mismatch() {
        let class = |text: &str| CATALOGUE.classify(Level::Framework, text).map(|m| m.row.class);
        let store = "[3] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: ";
        assert_eq!(class(&format!("RuntimeError: {store}Socket Timeout")), Some("bootstrap-connect-failure"));
        assert_eq!(class(&format!("{store}wait timeout after 300000ms")), Some("bootstrap-connect-failure"));
        assert_eq!(
            class(&format!("torch.distributed.DistBackendError: {store}Connection reset by peer")),
            Some("peer-lost")
        );
        assert_eq!(class(&format!("{store}Broken pipe")), Some("peer-lost"));
        let old = store.replace("retrieving", "retreiving");
        assert_eq!(class(&format!("{old}Socket Timeout")), Some("bootstrap-connect-failure"));
        let mismatch = "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: CollectiveFingerPrint(OpType=ALLGATHER, TensorShape=[4]), but Rank 1 is running collective: CollectiveFingerPrint(OpType=ALLREDUCE).";
        assert_eq!(class(mismatch), Some("collective-mismatch"));
        // The source line of vLLM's traceback is not an NCCL error.
        assert_eq!(class("    raise RuntimeError(f\"NCCL error: {error_str}\")"), None);
    }

    /// The store's retried connect is a warning even where it quotes the
    /// socket's timeout (a Chinese write-up of a vLLM run quotes it so); a
    /// failed store and PyTorch's driver check are errors; an NCCL_COMM_ID
    /// NCCL cannot read is a setting's value, not the network.
    #[test]
    fn pytorch_store_retries_store_errors_and_driver_check() {
        let retry = "[W728 15:01:59.562622567 TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host 127.0.0.1:48315 - retrying (try=0, timeout=600000ms, delay=33924ms): The client socket has timed out after 600000ms while trying to connect to (127.0.0.1, 48315).";
        let hit = CATALOGUE.classify(Level::Framework, retry).unwrap();
        assert_eq!((hit.row.class, CATALOGUE.severity(hit.row)), ("bootstrap-connect-failure", Severity::Warning));
        let store = CATALOGUE.classify(Level::Framework, "torch.distributed.DistStoreError: Socket Timeout").unwrap();
        assert_eq!((store.row.class, CATALOGUE.severity(store.row)), ("bootstrap-connect-failure", Severity::Error));
        let comm_id = "Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or <hostname>:<port>";
        assert_eq!(CATALOGUE.classify(Level::Warn, comm_id).map(|m| m.row.class), Some("configuration-error"));
        let driver = "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).";
        assert_eq!(CATALOGUE.classify(Level::Framework, driver).map(|m| m.row.class), Some("version-mismatch"));
    }

    #[test]
    fn variables_nccl_reads_are_known_with_their_defaults() {
        let p2p = env_param("NCCL_IGNORE_DISABLED_P2P").unwrap();
        assert_eq!((p2p.default, p2p.since, p2p.source), (Some(0), "2.12", "graph/paths.cc"));
        assert!(env_param("NCCL_SOCKET_IFNAME").is_some_and(|p| p.default.is_none()));
        assert!(env_param("NCCL_NOT_A_VARIABLE").is_none());
        assert!(CATALOGUE.setting("NCCL_TOPO_DUMP_FILE").is_some_and(|s| s.quiet));
    }

    #[test]
    fn settings_say_which_values_switch_a_path_off() {
        let level = CATALOGUE.setting("NCCL_P2P_LEVEL").unwrap();
        assert!(level.turns_off("LOC") && level.turns_off("loc") && !level.turns_off("NVL"));
        assert_eq!(level.class, Some("p2p-disabled"));
        assert!(CATALOGUE.setting("NCCL_GRAPH_FILE").is_some_and(|s| s.turns_off.is_empty()));
        assert!(CATALOGUE.setting("NCCL_DEBUG").is_some_and(|s| s.quiet && s.turns_off.is_empty()));
    }

    /// A suspect leads only when every fact it needs is shown, placed by the
    /// strongest of them; the rest keep the table's order.
    #[test]
    fn suspects_lead_when_all_their_facts_are_shown() {
        let hang = CATALOGUE.suspects.iter().find(|k| k.failure == "init-hang").expect("init-hang");
        let order = |shown: &[Scope]| hang.ordered(shown).into_iter().map(|s| s.class).take(2).collect::<Vec<_>>();
        assert_eq!(order(&[]), ["p2p-disabled", "bootstrap-connect-failure"]);
        assert_eq!(order(&[Scope::SingleNode]), ["p2p-disabled", "bootstrap-connect-failure"]);
        assert_eq!(order(&[Scope::MultiNode]), ["bootstrap-connect-failure", "bootstrap-interface"]);
        // The data path of an RDMA network leads only once the ranks had met over it.
        assert_eq!(order(&[Scope::Connecting, Scope::MultiNode]), ["bootstrap-connect-failure", "bootstrap-interface"]);
        assert_eq!(
            order(&[Scope::Connecting, Scope::Rdma, Scope::MultiNode]),
            ["gdr-path-broken", "roce-gid-mismatch"]
        );
    }
}
