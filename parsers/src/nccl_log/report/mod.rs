//! Accumulates what every line says into one [`NcclReport`].
//!
//! Memory grows with ranks, channels and distinct facts, never with the number of
//! lines: per-operation lines become counters and histograms, repeated warnings a
//! count, and every table has a cap that a hostile input cannot push past.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use topo_model::BusId;
use topo_model::nccl::{
    CollectiveCall, CollectiveStats, CollectiveTimeout, Direction, EnvOverride, ErrorTrace, LineRef, LoggedPath,
    NCCL_REPORT_SCHEMA_VERSION, NcclReport, Network, RankInfo, RankProgress, TransportKind, TuningChoice, Warning,
};

mod continuation;
mod events;
mod finish;
mod hosts;
mod span;

use continuation::{HeldWarn, MAX_WRAPPED_WARN_CHARS, OpenQuote, WRAPPED_LINES};
use hosts::{canonical_hosts, fold_cut_heads};

use super::bytes::short_eq;
use super::catalogue::{CATALOGUE, Level as MessageLevel};
use super::communicator::{
    CommState, PENDING, SIZE_GROUPED, UNIDENTIFIED, UNPLACED, mark_shared_sizes, merge_orphans, settle_pending,
    transport_kind,
};
use super::framework;
use super::limits::{Budget, Table};
use super::message::{self, Collective, CommInit, ConnectionLine, Event};
use super::messages::{MessageTable, Origin};
use super::prefix::{self, Level, LogLine};
use super::prefix_cache::{Known, PrefixCache};
use super::wrapper;

/// FNV-1a: the keys here are short (hostnames, pointers, small tuples) and
/// hashed several times per line; SipHash's flood resistance buys nothing when
/// every table is capped anyway.
#[derive(Default, Clone, Copy)]
struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for byte in bytes {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;

/// Calls, size histogram (by power-of-two bucket) and total bytes of one collective.
type CollectiveAccumulator = (u64, [u64; 65], u64);

/// Lines of other processes allowed between `Last error:` and its text.
const LAST_ERROR_WAIT: u8 = 8;

/// The longest collectors' tag kept for a line (who printed it).
const MAX_TAG_CHARS: usize = 256;

/// The text of the line after `Last error:` without the logger's prefix it
/// repeats (`ERROR 01-15 02:47:32 multiproc_worker_utils.py:226]`), whose
/// time may have moved on: cut after the prefix's last word where the line
/// begins with its first.
fn without_logger_prefix<'a>(line: &'a str, prefix: &str) -> &'a str {
    if let Some(rest) = line.strip_prefix(prefix) {
        return rest.trim();
    }
    let words: Vec<&str> = prefix.split_whitespace().collect();
    if let [first, .., last] = words[..]
        && line.starts_with(first)
        && let Some(at) = line.find(last)
    {
        return line[at + last.len()..].trim();
    }
    line
}

/// Caps on distinct entries; past them, facts are counted but not kept.
const MAX_COMMUNICATORS: usize = 4096;
/// Paths of NCCL's topology dump kept (per host, GPU to GPU and to NICs).
const MAX_LOGGED_PATHS: usize = 1 << 14;
const MAX_DISTINCT_ERRORS: usize = 1024;
const MAX_DISTINCT_VIA: usize = 4096;
const MAX_SMALL_TABLE: usize = 4096;
const MAX_FIRST_LINES: usize = 4096;
const MAX_TIMEOUTS: usize = 1024;
/// (process, communicator) pairs per host whose COLL lines skip every lookup.
const MAX_RECENT_COMMS: usize = 64;
/// Evidence lines are cut to this many characters.
const MAX_EVIDENCE_CHARS: usize = 300;
/// How far below a fatal signal its backtrace may name NCCL (gdb and UCX print
/// a few dozen frames).
const CRASH_FRAMES: u64 = 64;
/// What is known about the processes of one host.
#[derive(Default)]
struct HostState {
    lines: u64,
    pids: BTreeSet<Option<u64>>,
    current_by_thread: FastMap<(Option<u64>, Option<u64>), usize>,
    current_by_pid: FastMap<Option<u64>, usize>,
    /// Processes that initialised more than one communicator: a line of one
    /// of their threads that initialised none (an async or proxy thread) is
    /// of any of them.
    pids_with_several: BTreeSet<Option<u64>>,
    /// Communicator pointer (as that process printed it) -> (pid, communicator).
    comm_by_pointer: FastMap<String, Vec<(Option<u64>, usize)>>,
    /// Communicator pointer -> (pid, index into `progress`).
    progress_index: FastMap<String, Vec<(Option<u64>, usize)>>,
    /// (communicator pointer, pid, progress), in first-seen order.
    progress: Vec<(String, Option<u64>, Progress)>,
    /// Per (process, communicator pointer) seen lately in COLL lines: the
    /// communicator and progress slot, so those lines skip every lookup.
    last_collective: Vec<(Option<u64>, String, Option<usize>, usize)>,
}

impl HostState {
    fn comm_for_pointer(&self, pointer: &str, pid: Option<u64>) -> Option<usize> {
        self.comm_by_pointer.get(pointer)?.iter().find(|(p, _)| *p == pid).map(|(_, i)| *i)
    }
}

#[derive(Default)]
struct Progress {
    rank: Option<u32>,
    /// Index into `LogParser::collectives` of the last operation.
    last_op: Option<usize>,
    last_op_count: u64,
    calls: u64,
    nranks: Option<u32>,
    /// The last [`RECENT_CALLS`] calls: (opCount, op index, count, datatype),
    /// a ring written at `calls % RECENT_CALLS`.
    recent: [(u64, usize, u64, u32); RECENT_CALLS],
}

/// How c10 begins the C++ backtrace of an error it raises (c10/util/Exception.cpp).
const BACKTRACE_HEADER: &str = "Exception raised from ";

/// Collectives remembered per (process, communicator), to compare ranks.
const RECENT_CALLS: usize = 4;

/// Reads lines one at a time; [`LogParser::finish`] gives the report.
#[derive(Default)]
pub struct LogParser {
    lines: u64,
    nccl_lines: u64,
    unparsed_lines: u64,
    versions: BTreeSet<String>,
    /// Per host (the empty name for lines without one): everything keyed by
    /// process, so a line costs one lookup by `&str` and no allocation.
    hosts: Vec<(String, HostState)>,
    host_index: FastMap<String, usize>,
    /// The host of the line being read: looked up once per line.
    line_host: usize,
    comms: Vec<CommState>,
    comm_by_id: HashMap<String, usize>,
    network: Network,
    env: BTreeMap<(String, String), BTreeSet<String>>,
    warnings: MessageTable,
    notices: MessageTable,
    framework_errors: MessageTable,
    /// The application's exception before any NCCL failure (see
    /// [`framework::application_error`]), the first one only.
    application_error: Option<Warning>,
    /// What stood before `Last error:` on its line (a logger's prefix).
    last_error_prefix: String,
    /// Who the line being read was printed by, as its collectors' wrappers
    /// say (`3:`, `node-7:`, `[1,3]<stdout>:`), and the rank they give.
    line_tag: String,
    line_tag_rank: Option<u32>,
    /// A coloured line without its colours, and a line without a rich
    /// editor's links: buffers, reused.
    uncoloured: String,
    unlinked: String,
    /// The launcher's tag of the `Last error:` line: with several processes
    /// writing one output, NCCL's text is the next line with the same tag.
    last_error_speaker: String,
    /// A framework printed `Last error:` and its text is still to come: the
    /// lines (other processes' ones included) it may yet take, 0 when none is.
    last_error_wait: u8,
    /// An XLA quote of NCCL's text wrapped over lines, until it closes.
    open_quote: Option<OpenQuote>,
    /// A watchdog report cut after `operation timeout:` (a terminal's wrap,
    /// a paste): its text so far, the timeout it made and its last line's
    /// number, until its `WorkNCCL(...)` lines come on the lines right after
    /// (see [`LogParser::watchdog_goes_on`]).
    wrapped_watchdog: Option<(String, usize, u64)>,
    /// The last WARN line until the next line is read (see [`HeldWarn`]).
    held_warn: Option<HeldWarn>,
    /// The held WARN's line, prefix and all, and any continuations after a
    /// space: one buffer, reused, so holding costs no allocation per WARN.
    held_warn_text: String,
    /// How much of its table row each held WARN text holds, by text: a log
    /// repeats its WARNs (every rank, every retry), and a bare line after
    /// each one would otherwise hold it against the whole WARN table again
    /// (a log of WARNs each followed by a traceback line read at 26 MB/s).
    held_rows: HashMap<String, Option<(usize, usize)>>,
    /// NCCL could not load libibverbs (`Failed to open libibverbs.so[.1]`: a
    /// WARN up to 2.11, an INFO line since): its IB transport has no devices.
    verbs_missing: bool,
    /// The socket transport listed its interfaces (`NET/Socket : Using
    /// [0]eth0:...`): NCCL starts it only when no network before it (a plugin,
    /// IB) could be used, or NCCL_NET named it.
    socket_transport_started: bool,
    /// aws-ofi-nccl's provider summaries (`efa (16 nics)`) among the devices,
    /// until a `GUID of NIC` line names the NICs themselves.
    ofi_summaries: Vec<String>,
    ofi_nics_named: bool,
    /// The last fatal signal's line (number, text), until a backtrace frame in
    /// NCCL makes it NCCL's crash or [`CRASH_FRAMES`] lines pass.
    crash: Option<(u64, String)>,
    logged_paths: Vec<LoggedPath>,
    /// (host, from, to) of the paths kept, to keep each once.
    logged_path_keys: std::collections::HashSet<(Option<String>, String, String)>,
    /// The communicator of lines whose process printed no init line.
    orphans: Option<usize>,
    /// The lines no communicator can claim (see [`Self::current_holding`]).
    unplaced: Option<usize>,
    /// One cap per table over the whole input.
    budget: Budget,
    /// Error-trail lines by (location, code), so the trail is reported from
    /// where the error began.
    errors: BTreeMap<(String, i64), ErrorCount>,
    /// The threads (pid, tid) whose socket progress said `abort called`:
    /// their later `-> 3` trail lines are the abort's (see [`ErrorTrace::after_abort`]).
    aborting_threads: Vec<(Option<u64>, Option<u64>)>,
    /// Per collective name: its statistics, in first-seen order, with an index
    /// and the last one used (consecutive COLL lines usually name the same op).
    collectives: Vec<(String, CollectiveAccumulator)>,
    collective_index: FastMap<String, usize>,
    last_collective_op: usize,

    tuning: BTreeMap<(String, String, String, Option<u64>), u64>,
    via: BTreeMap<String, u64>,
    first_lines: BTreeMap<String, LineRef>,
    timeouts: Vec<CollectiveTimeout>,
    prefixes: PrefixCache,
    /// Prefixes remembered from lines with a launcher's tag
    /// ([`LogParser::tagged_prefixes_pay`]).
    tagged_prefixes: u64,
    /// The 1-based number of the line being read, for `first_lines`.
    line_number: u64,
    init_complete: u64,
    nvls_setup: u64,
    buffer_registrations: u64,
    input_name: String,
    nccl_tests: crate::nccl_tests::NcclTestsParser,
    tuning_table: super::tuning_table::TuningTable,
}

impl LogParser {
    pub fn new() -> LogParser {
        LogParser::default()
    }

    /// Lines read so far, over all inputs.
    pub fn lines_read(&self) -> u64 {
        self.lines
    }

    /// Lines read so far that were NCCL output, over all inputs.
    pub fn nccl_lines_read(&self) -> u64 {
        self.nccl_lines
    }

    /// Names the input the following lines come from (for warnings' locations).
    pub fn start_input(&mut self, name: &str) {
        self.input_name = name.to_string();
    }

    /// Reads the line at the front of `text` (a read buffer, lines and all)
    /// if it is a COLL line of a thread already seen whose tail repeats one of
    /// that thread's: most of a long log. Returns the line's length without its
    /// `\n`, or `None`: nothing was read, hand the line to [`LogParser::line`].
    /// What it reads is what `line` would.
    pub fn known_coll_line(&mut self, text: &str, number: u64) -> Option<usize> {
        let known = self.prefixes.get_mut(text.as_bytes())?;
        let prefix_len = known.prefix.len();
        let message = text.get(prefix_len..)?;
        if !message.as_bytes().first().is_some_and(u8::is_ascii_uppercase) {
            return None;
        }
        let (op, len) = message::collective_in(message, &known.memo)?;
        if prefix_len + len > super::input::MAX_LINE_BYTES {
            // The line reader cuts such a line; let it.
            return None;
        }
        let (host, pid, tid, cuda_dev, host_slot) = (known.host, known.pid, known.tid, known.cuda_dev, known.host_slot);
        let host = host.and_then(|(from, to)| text.get(from..to));
        self.lines += 1;
        self.line_number = number;
        // Counting a COLL line reads the prefix's fields, never the message.
        let line =
            LogLine { level: Level::Info, host, pid, tid, cuda_dev, source: None, message: "", interrupted: false };
        self.count_known_collective(&line, host_slot, op);
        Some(prefix_len + len)
    }

    /// A COLL line of a thread whose prefix is remembered: the pid was noted
    /// when the prefix was first seen.
    fn count_known_collective(&mut self, line: &LogLine, host_slot: usize, op: message::Collective) {
        self.nccl_lines += 1;
        self.line_host = host_slot;
        self.line_state().lines += 1;
        self.collective(line, op);
    }

    /// Reads one line (without its line ending); `number` is its 1-based line
    /// number in the current input.
    pub fn line(&mut self, text: &str, number: u64) {
        // A JSON log record (docker's json-file driver, log shippers): the
        // line it carries, each line of it if it carries several.
        if text.starts_with('{')
            && let Some(carried) = wrapper::json_record_text(text)
        {
            for line in carried.lines() {
                self.plain_line(line, number);
            }
            return;
        }
        self.plain_line(text, number);
    }

    /// [`LogParser::line`] for a line that is no JSON record.
    fn plain_line(&mut self, text: &str, number: u64) {
        let (colours, links) = (wrapper::has_colours(text), wrapper::has_autolinks(text));
        if !colours && !links {
            return self.unwrapped_line(text, number);
        }
        // A terminal's colours and a rich editor's links are undone first,
        // in buffers kept for the next such line.
        let (mut plain, mut unlinked) = (std::mem::take(&mut self.uncoloured), std::mem::take(&mut self.unlinked));
        let mut text = text;
        if colours {
            wrapper::without_colours(text, &mut plain);
            text = &plain;
        }
        if links {
            wrapper::without_autolinks(text, &mut unlinked);
            text = &unlinked;
        }
        self.unwrapped_line(text, number);
        (self.uncoloured, self.unlinked) = (plain, unlinked);
    }

    /// Reads one line as it was printed: its collectors' wrappers are taken
    /// off first (see [`wrapper`]), and who they say printed it is kept for
    /// the framework's lines.
    fn unwrapped_line(&mut self, text: &str, number: u64) {
        let unwrapped = wrapper::unwrap(text);
        let text = unwrapped.text;
        self.line_tag.clear();
        self.line_tag.extend(unwrapped.tag.chars().take(MAX_TAG_CHARS));
        self.line_tag_rank = unwrapped.rank;
        self.lines += 1;
        self.line_number = number;
        if self.held_warn.is_some() && self.warn_goes_on(text) {
            return;
        }
        self.read_text(text);
    }

    /// Reads one line's text (its wrappers off, a held WARN's continuation
    /// already taken).
    fn read_text(&mut self, text: &str) {
        // Most of a long log is COLL lines in NCCL's plain prefix: read those
        // without the general splitter's full-line scan. (A line with another
        // process's prefix glued in fails the COLL shape and takes the general path.)
        if let Some(known) = self.prefixes.get_mut(text.as_bytes()) {
            let (prefix_len, host, pid, tid, cuda_dev, host_slot) =
                (known.prefix.len(), known.host, known.pid, known.tid, known.cuda_dev, known.host_slot);
            let message = &text[prefix_len..];
            if message.as_bytes().first().is_some_and(u8::is_ascii_uppercase)
                && let Some(op) = message::collective_after(message, &mut known.memo)
            {
                let host = host.and_then(|(from, to)| text.get(from..to));
                let line =
                    LogLine { level: Level::Info, host, pid, tid, cuda_dev, source: None, message, interrupted: false };
                self.count_known_collective(&line, host_slot, op);
                return;
            }
        }
        if let Some(line) = prefix::split_plain_info(text)
            && line.message.as_bytes().first().is_some_and(u8::is_ascii_uppercase)
            && let Some(op) = message::collective(line.message)
        {
            self.nccl_lines += 1;
            if let Some(repaired) = self.repaired_host(text, &line) {
                return self.read_text(&repaired);
            }
            self.line_host = self.host_slot(line.host);
            let (state, budget) = (&mut self.hosts[self.line_host].1, &mut self.budget);
            state.lines += 1;
            if !state.pids.contains(&line.pid) && budget.take(Table::Processes, 1) {
                state.pids.insert(line.pid);
            }
            self.remember_prefix(text, &line);
            self.collective(&line, op);
            return;
        }
        let line = prefix::split(text);
        if line.interrupted && self.read_glued(text) {
            return;
        }
        if let Some(repaired) = self.repaired_host(text, &line) {
            return self.read_text(&repaired);
        }
        self.read_split(text, line);
    }

    /// The line with its host name made whole where another process's write
    /// cut its head off (see [`Self::host_of_cut_name`]); `None` for a line
    /// whose host is known or not so cut. (Junk glued before a name is
    /// folded at the end, by line counts: `hosts::canonical_hosts`.)
    fn repaired_host(&self, text: &str, line: &LogLine) -> Option<String> {
        let host = line.host?;
        // Most lines come from the previous line's host: compared before hashing.
        if self.hosts.get(self.line_host).is_some_and(|(name, _)| name == host) || self.host_index.contains_key(host) {
            return None;
        }
        let whole = self.host_of_cut_name(host, line.pid)?;
        let at = Self::offset_in(text, host)?;
        Some(format!("{}{whole}{}", &text[..at], &text[at + host.len()..]))
    }

    /// Where `part`, a slice of `text`, starts in it.
    fn offset_in(text: &str, part: &str) -> Option<usize> {
        let at = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
        (text.get(at..at + part.len()) == Some(part)).then_some(at)
    }

    /// The known host whose name ends with `cut` and whose lines already
    /// hold this process: the rest of a line whose start another process's
    /// line took (`x3207c0s25b0` glued before another line, then
    /// `n0:3793505:...` on a line of its own).
    fn host_of_cut_name(&self, cut: &str, pid: Option<u64>) -> Option<&str> {
        pid?;
        if self.host_index.len() > 4096 {
            return None;
        }
        // The part the other line took begins a name, not markup (a markdown
        // quote's backtick) or another message's end glued before a name
        // (`[senx3005c0s31b0n0`, seen once): the whole name has lines of its own.
        let mut owners = self.hosts.iter().filter(|(name, state)| {
            name.len() > cut.len()
                && name.ends_with(cut)
                && name.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
                && state.lines >= 2
                && state.pids.contains(&pid)
        });
        let (name, _) = owners.next()?;
        owners.next().is_none().then_some(name.as_str())
    }

    /// Two writes on one line (another process's prefix in the middle, with or
    /// without a newline lost): each part is read as a line of its own. The cut
    /// goes before the glued prefix's host name where that name is known from
    /// other lines (`...via P2P/IPChostB:1:3 [1] NCCL INFO ...`).
    fn read_glued(&mut self, text: &str) -> bool {
        let starts = prefix::glued_starts(text);
        if starts.is_empty() {
            return false;
        }
        let mut cuts = vec![0];
        for (offset, host_part) in starts {
            // Bounded: with very many hosts the token start is cut point enough.
            let known = (self.host_index.len() <= 4096)
                .then(|| self.host_index.keys())
                .into_iter()
                .flatten()
                .filter(|h| !h.is_empty() && host_part.ends_with(h.as_str()))
                .map(String::len)
                .max();
            let cut = offset + known.map_or(0, |len| host_part.len() - len);
            if cut > *cuts.last().unwrap_or(&0) && text.is_char_boundary(cut) {
                cuts.push(cut);
            }
        }
        cuts.push(text.len());
        for pair in cuts.windows(2) {
            if let [from, to] = pair
                && let Some(part) = text.get(*from..*to)
            {
                self.read_held_warn_now();
                let line = prefix::split(part);
                self.read_split(part, line);
            }
        }
        // A WARN glued to another process's line is no wrapped paste.
        self.read_held_warn_now();
        true
    }

    /// Everything but COLL lines in the plain prefix: the general reader.
    fn read_split(&mut self, text: &str, line: LogLine) {
        // A line kept from its level word on (`INFO NET/IB : GPU Direct RDMA
        // Disabled for HCA 0 'mlx5_0'`): an INFO line when NCCL's reader or
        // message table knows the message.
        if line.level == Level::Bare
            && let Some(rest) = line.message.strip_prefix("INFO ").map(str::trim_start)
            && (message::parse(rest).is_some() || CATALOGUE.info_row(rest).is_some())
        {
            return self.read_split(text, LogLine { level: Level::Info, message: rest, ..line });
        }
        // NCCL 1.x's WARN: no prefix, the source after the level
        // (`WARN src/reduce.cu:126 Cuda failure 'invalid resource handle'`).
        if line.level == Level::Bare
            && let Some((location, rest)) = line.message.strip_prefix("WARN ").and_then(|r| r.split_once(' '))
            && is_source_location(location)
        {
            let message = rest.trim_start();
            return self.read_split(text, LogLine { level: Level::Warn, source: Some(location), message, ..line });
        }
        let number = self.line_number;
        if line.message.starts_with("Failed to open libibverbs") || line.message == "Count not open libibverbs.so.1" {
            // The line the socket fallback is cited by when nothing says `Using network Socket`.
            self.verbs_missing = true;
            self.first_line("libibverbs-missing".to_string(), line.message);
        }
        self.line_host = self.host_slot(line.host);
        if line.level != Level::Bare {
            self.nccl_lines += 1;
            // A redacted host (`:21831:21831 [0]`) still names its process.
            if line.host.is_some() || line.pid.is_some() {
                let (state, budget) = (&mut self.hosts[self.line_host].1, &mut self.budget);
                state.lines += 1;
                if !state.pids.contains(&line.pid) && budget.take(Table::Processes, 1) {
                    state.pids.insert(line.pid);
                }
            }
        }
        if line.interrupted
            && let Some(cut) = prefix::interrupted_part(text)
            && let Some(host) = prefix::split(cut).host
        {
            // The process whose line was cut off printed too.
            let pid = prefix::split(cut).pid;
            let slot = self.host_slot(Some(host));
            if !self.hosts[slot].1.pids.contains(&pid) && self.budget.take(Table::Processes, 1) {
                self.hosts[slot].1.pids.insert(pid);
            }
        }
        if line.level != Level::Bare {
            self.close_quote();
        }
        if line.level == Level::Warn
            && text.len() <= MAX_WRAPPED_WARN_CHARS
            && let Some(message_at) = offset_in(text, line.message)
        {
            let source_at = line.source.and_then(|s| offset_in(text, s).map(|at| (at, at + s.len())));
            self.held_warn_text.clear();
            self.held_warn_text.push_str(text);
            let lines_left = WRAPPED_LINES;
            self.held_warn = Some(HeldWarn { line: number, message_at, source_at, held: None, lines_left });
            return;
        }
        if matches!(line.level, Level::Warn | Level::Abort) {
            self.warning(&line, number);
            return;
        }
        if line.level == Level::Bare && self.framework_line(&line, text) {
            return;
        }
        if line.level == Level::Info && socket_abort(line.message) {
            let thread = (line.pid, line.tid);
            if !self.aborting_threads.contains(&thread) && self.aborting_threads.len() < MAX_SMALL_TABLE {
                self.aborting_threads.push(thread);
            }
        }
        match message::parse(line.message) {
            Some(event) => {
                if line.level == Level::Bare {
                    self.nccl_lines += 1;
                }
                let coll_line = matches!(event, Event::Collective(_));
                // A plugin line is a fact and may be a failure too (`dlerror=...
                // version ... not found ... using internal implementation`).
                // So are a communicator's end (`Abort COMPLETE`) and a network
                // device without a PCI path (`Could not find real path of
                // /sys/class/net/eth0/device`).
                let also_notice = matches!(
                    event,
                    Event::NetPlugin(_) | Event::CommInit(CommInit { ends: true, .. }) | Event::SocketInterfaces(_)
                );
                self.event(&line, event);
                if also_notice && line.level == Level::Info {
                    self.notice(&line);
                }
                // A launcher's tag (`srun -l`, `--tag-output`, Ray) before NCCL's
                // prefix: the next COLL lines of this thread take the fast path too.
                if coll_line
                    && line.level == Level::Info
                    && line.host.is_some()
                    && line.source.is_none()
                    && !line.interrupted
                    && ends_text(line.message, text)
                    && self.tagged_prefixes_pay()
                {
                    self.remember_prefix(text, &line);
                }
            }
            None if line.level == Level::Bare && self.via_fragment(line.message) => {}
            None if line.level == Level::Bare && self.init_complete_fragment(line.message) => {}
            None if line.level == Level::Bare && self.prefixed_version(line.message) => {}
            None if line.level == Level::Bare && !self.nccl_tests.line(line.message) => self.unparsed_lines += 1,
            None if line.level == Level::Info && !self.notice(&line) && !self.topology_line(&line) => {
                self.tuning_table.line(line.pid, line.tid, line.message);
            }
            None => {}
        }
    }

    /// The second half of a connection line another process's output cut in
    /// two (`4] -> 5[5] via P2P/IPC`): the channel is lost with the first half,
    /// but the line's transport still counts. A cut inside the peer's rank
    /// (`] via P2P/IPC/read`, as Ray's interleaved workers leave it) counts
    /// when what follows ` via ` is one of NCCL's transports.
    fn via_fragment(&mut self, text: &str) -> bool {
        let Some((edge, via)) = text.split_once(" via ") else { return false };
        // `9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA`: the direction is not the peer.
        let edge = edge.trim().trim_end_matches("[send]").trim_end_matches("[receive]").trim();
        let via = via.trim();
        let peer_ok = match edge.rsplit_once("->") {
            Some((_, to)) => {
                let to = to.trim();
                to.starts_with(|c: char| c.is_ascii_digit()) && !to.contains(' ')
            }
            None => edge.ends_with(']') && !edge.contains(' ') && transport_kind(via) != TransportKind::Other,
        };
        if via.is_empty() || !peer_ok {
            return false;
        }
        if self.via.len() < MAX_DISTINCT_VIA || self.via.contains_key(via) {
            *self.via.entry(via.to_string()).or_default() += 1;
        }
        self.nccl_lines += 1;
        true
    }

    /// The tail of an `ncclCommInitRank ... - Init COMPLETE` line another
    /// process's output cut (`aDev 0 nvmlDev 0 busId 100000 commId 0x9bdf... -
    /// Init COMPLETE`): the communicator is lost with the head, the count is not.
    fn init_complete_fragment(&mut self, text: &str) -> bool {
        let Some(head) = text.trim_end().strip_suffix(" - Init COMPLETE") else { return false };
        if !head.contains(" commId 0x") && !head.contains(" busId ") {
            return false;
        }
        self.init_complete += 1;
        self.nccl_lines += 1;
        true
    }

    /// NCCL's own `NCCL version 2.21.5+cuda12.8` line (a printf, no prefix of
    /// NCCL's) behind a logger's or console's prefix (`  | 2025-05-16T16:39:51 | `,
    /// a timestamp, a worker name): the version ends the line.
    fn prefixed_version(&mut self, message: &str) -> bool {
        let Some(at) = message.rfind("NCCL version ") else { return false };
        let version = message[at + "NCCL version ".len()..].trim().trim_end_matches('*');
        let looks_like_version =
            version.split('.').take(2).all(|p| p.chars().next().is_some_and(|c| c.is_ascii_digit()));
        if !looks_like_version || version.contains(char::is_whitespace) || self.versions.len() >= 64 {
            return false;
        }
        self.versions.insert(version.to_string());
        self.nccl_lines += 1;
        true
    }

    /// A framework's error line carrying NCCL's words, or the `Last error:`
    /// text after one (PyTorch prints NCCL's last WARN there). Counts as NCCL
    /// output: a log of nothing but these is still an NCCL failure.
    fn framework_line(&mut self, line: &LogLine, raw: &str) -> bool {
        let text = line.message;
        // The rank is in the launcher's tag, which the splitter removed.
        let rank = framework::rank_in(raw).or(self.line_tag_rank);
        if self.open_quote.is_some() && self.quote_goes_on(text.trim()) {
            return true;
        }
        if self.wrapped_watchdog.is_some() && self.watchdog_goes_on(text.trim()) {
            return true;
        }
        if self.last_error_wait > 0 && !text.trim().is_empty() {
            // Another process's line between (vLLM's workers write one output):
            // not the text, which is the next line of the same process.
            if self.speaker(raw) != self.last_error_speaker {
                self.last_error_wait -= 1;
            } else {
                self.last_error_wait = 0;
                let prefix = std::mem::take(&mut self.last_error_prefix);
                let detail = framework::without_rank_tag(without_logger_prefix(text.trim(), &prefix));
                // PyTorch's backtrace header right after: NCCL had no last
                // error to give (`Last error:`, a blank line, `Exception raised from`).
                if !detail.starts_with(BACKTRACE_HEADER) {
                    self.nccl_lines += 1;
                    self.add_framework_error(detail, Some("Last error"), rank);
                    return true;
                }
            }
        }
        if framework::crash_signal(text) {
            self.crash = Some((self.line_number, text.trim().chars().take(MAX_EVIDENCE_CHARS).collect()));
        }
        let Some(found) = framework::recognise(text) else {
            let nccl = self.crash_in_nccl(text, rank) || self.bare_warn_text(text, rank);
            if !nccl {
                self.application_error(text, rank);
            }
            return nccl;
        };
        self.nccl_lines += 1;
        if let Some(version) = framework::version_in(text)
            && self.versions.len() < 64
        {
            self.versions.insert(version.to_string());
        }
        if matches!(
            found,
            framework::Found::LastErrorNext | framework::Found::LastError(_) | framework::Found::QuoteOpen(_)
        ) && let Some(head) = framework::error_before_quote(text)
        {
            self.add_framework_error(head, None, rank);
        }
        match found {
            framework::Found::LastErrorNext => {
                let before = text.trim().find("Last error:").map_or("", |at| text.trim()[..at].trim_end());
                self.last_error_prefix = before.chars().take(256).collect();
                self.last_error_speaker = self.speaker(raw);
                self.last_error_wait = LAST_ERROR_WAIT;
            }
            framework::Found::LastError(detail) => self.add_framework_error(detail, Some("Last error"), rank),
            framework::Found::QuoteOpen(start) => {
                let text = start.chars().take(MAX_EVIDENCE_CHARS).collect();
                self.open_quote = Some(OpenQuote { text, lines_left: WRAPPED_LINES, line: self.line_number, rank });
            }
            framework::Found::Error => self.add_framework_error(text.trim(), None, rank),
            // Watchdog lines are read as timeouts, with their sequence numbers
            // and limits (the timeout rule cites them), wherever the line puts
            // them; a watchdog line that is no timeout (`watchdog thread
            // terminated with exception: NCCL error ...`) is the framework's error.
            framework::Found::Watchdog => match message::watchdog(text) {
                // Progress with no timeout of its rank before it (`Exception (either
                // an error or timeout) detected by watchdog at work`) is the failure
                // itself: the error that came with it is on another line or lost.
                Some(Event::WatchdogProgress { rank: of, .. }) if !self.timeouts.iter().any(|t| t.rank == of) => {
                    self.add_framework_error(text.trim(), None, rank)
                }
                Some(event) => {
                    let cut = matches!(event, Event::WatchdogTimeout { op: "", .. }) && text.trim_end().ends_with(':');
                    let before = self.timeouts.len();
                    self.watchdog(event);
                    if cut && self.timeouts.len() > before {
                        self.wrapped_watchdog = Some((text.trim().to_string(), before, self.line_number));
                    }
                }
                None => self.add_framework_error(text.trim(), None, rank),
            },
        }
        true
    }

    /// Who printed a framework's line: the collectors' tag taken off it and
    /// any launcher tag still before its text (`[rank1]:` after Ray's).
    fn speaker(&self, raw: &str) -> String {
        let tag = prefix::launcher_tag(raw);
        let mut speaker = String::with_capacity(self.line_tag.len() + tag.len() + 1);
        speaker.push_str(&self.line_tag);
        speaker.push(' ');
        speaker.extend(tag.chars().take(256));
        speaker
    }

    /// A frame of the backtrace after a fatal signal that is in NCCL: the
    /// crash was NCCL's (a SIGBUS there is a /dev/shm mapping the tmpfs could
    /// not back). The table's framework rows read the signal's words.
    fn crash_in_nccl(&mut self, text: &str, rank: Option<u32>) -> bool {
        let Some(at) = self.crash.as_ref().map(|(at, _)| *at) else { return false };
        if self.line_number.saturating_sub(at) > CRASH_FRAMES {
            self.crash = None;
            return false;
        }
        if !framework::nccl_frame(text) {
            return false;
        }
        let Some((_, signal)) = self.crash.take() else { return false };
        self.nccl_lines += 1;
        let frame: String = text.trim().chars().take(MAX_EVIDENCE_CHARS).collect();
        self.add_framework_error(
            &format!("{signal} with NCCL on the stack: {frame}"),
            Some("a crash's backtrace"),
            rank,
        );
        true
    }

    /// NCCL's WARN text printed without NCCL's prefix (a framework re-printing
    /// `ncclGetLastError()`, a launcher that kept only the message): a line
    /// that one of the table's WARN rows printed, long enough to be no accident.
    fn bare_warn_text(&mut self, text: &str, rank: Option<u32>) -> bool {
        let message = without_source_and_level(framework::without_rank_tag(text.trim()));
        let message = message.strip_prefix("WARN ").map_or(message, str::trim_start);
        if CATALOGUE.bare_warn(message).is_none() {
            return false;
        }
        self.nccl_lines += 1;
        self.add_framework_error(message, Some("NCCL text without its prefix"), rank);
        true
    }

    /// The application's own exception, kept when it comes before any NCCL
    /// failure: what it says is not NCCL's, but a rank that raises it exits,
    /// and the bare NCCL errors after it are its echo.
    fn application_error(&mut self, text: &str, rank: Option<u32>) {
        let failed = self.warnings.count > 0
            || self.framework_errors.count > 0
            || !self.errors.is_empty()
            || !self.timeouts.is_empty();
        if self.application_error.is_some() || failed {
            return;
        }
        let Some(error) = framework::application_error(text) else { return };
        self.application_error = Some(Warning {
            rank: rank.or_else(|| framework::rank_in(text)),
            file: self.input_name.clone(),
            line: self.line_number,
            text: error.chars().take(MAX_EVIDENCE_CHARS).collect(),
            count: 1,
            ..Warning::default()
        });
    }

    fn add_framework_error(&mut self, text: &str, source: Option<&str>, rank: Option<u32>) {
        let origin = Origin {
            host: None,
            rank: rank.or_else(|| framework::rank_in(text)),
            cuda_dev: None,
            file: &self.input_name,
            line: self.line_number,
            source,
        };
        self.framework_errors.add(framework::without_rank_tag(text), origin);
    }

    /// An INFO line NCCL's message table lists (a degraded choice).
    fn notice(&mut self, line: &LogLine) -> bool {
        if CATALOGUE.info_row(line.message).is_none() {
            return false;
        }
        let rank = self.rank_of(line);
        let origin = line_origin(line, rank, &self.input_name, self.line_number, None);
        self.notices.add(line.message, origin);
        true
    }

    /// A path line of NCCL's topology dump (`GPU/0-4e000 :GPU/0-4f000
    /// (1/240.0/NVL) NET/0-0 (3/24.0/PHB) ...`): GPU-to-GPU and GPU-to-NIC paths.
    fn topology_line(&mut self, line: &LogLine) -> bool {
        let Some((from, paths)) = super::topology_lines::paths(line.message) else { return false };
        for path in paths {
            if self.logged_paths.len() >= MAX_LOGGED_PATHS {
                break;
            }
            let logged = LoggedPath { host: line.host.map(str::to_string), from: from.to_string(), ..path };
            if self.logged_path_keys.insert((logged.host.clone(), logged.from.clone(), logged.to.clone())) {
                self.logged_paths.push(logged);
            }
        }
        true
    }

    /// Whether prefixes with a launcher's tag are still worth remembering: not
    /// when they keep changing (a timestamp in front), which would evict the
    /// others and allocate on every line. Judged once 256 were remembered, by
    /// the NCCL lines read per prefix; once judged not to pay, never again, and
    /// the cache they churned is emptied (the plain prefixes come back on their
    /// next lines).
    fn tagged_prefixes_pay(&mut self) -> bool {
        const GAVE_UP: u64 = u64::MAX;
        if self.tagged_prefixes == GAVE_UP {
            return false;
        }
        if self.tagged_prefixes >= 256 && self.nccl_lines < self.tagged_prefixes.saturating_mul(16) {
            self.tagged_prefixes = GAVE_UP;
            self.prefixes = PrefixCache::default();
            return false;
        }
        self.tagged_prefixes += 1;
        true
    }

    /// Remembers the prefix of a COLL line (everything before its message,
    /// which must end the text) with what it said; the line's host is the
    /// current one.
    fn remember_prefix(&mut self, text: &str, line: &LogLine) {
        if line.pid.is_none() {
            return;
        }
        let known = Known {
            prefix: Box::default(),
            host: None,
            pid: line.pid,
            tid: line.tid,
            cuda_dev: line.cuda_dev,
            host_slot: self.line_host,
            memo: Default::default(),
        };
        self.prefixes.insert(text, line.message, line.host, known);
    }

    /// The index of a host's state, created on first sight (bounded in number;
    /// past the bound, further hosts share the nameless state).
    fn host_slot(&mut self, host: Option<&str>) -> usize {
        let name = host.unwrap_or("");
        if let Some(&i) = self.host_index.get(name) {
            return i;
        }
        let name = if self.budget.take(Table::Hosts, 1) { name } else { "" };
        if let Some(&i) = self.host_index.get(name) {
            return i;
        }
        self.hosts.push((name.to_string(), HostState::default()));
        self.host_index.insert(name.to_string(), self.hosts.len() - 1);
        self.hosts.len() - 1
    }

    /// The state of the current line's host.
    fn line_state(&mut self) -> &mut HostState {
        &mut self.hosts[self.line_host].1
    }

    /// The state of the current line's host (`host` is that line's host; the
    /// slot was found once when the line came in).
    fn host(&self, host: Option<&str>) -> Option<&HostState> {
        let (name, state) = self.hosts.get(self.line_host)?;
        (name == host.unwrap_or("") || name.is_empty()).then_some(state)
    }

    /// Notes where `key` was first seen (bounded like the other fact tables).
    fn first_line(&mut self, key: String, message: &str) {
        if self.first_lines.len() < MAX_FIRST_LINES && !self.first_lines.contains_key(&key) {
            let text: String = message.chars().take(MAX_EVIDENCE_CHARS).collect();
            let line = LineRef { file: self.input_name.clone(), line: self.line_number, text };
            self.first_lines.insert(key, line);
        }
    }

    fn warning(&mut self, line: &LogLine, number: u64) {
        let text = if line.level == Level::Abort { "NCCL ABORT" } else { line.message };
        let rank = self.rank_of(line);
        let origin = line_origin(line, rank, &self.input_name, number, line.source);
        self.warnings.add(text, origin);
    }

    /// The rank a line's process and CUDA device belong to, in its current communicator.
    fn rank_of(&self, line: &LogLine) -> Option<u32> {
        let comm = self.comms.get(self.current_index(line)?)?;
        comm.ranks
            .values()
            .find(|r| r.host.as_deref() == line.host && r.pid == line.pid && r.cuda_dev == line.cuda_dev)
            .map(|r| r.rank)
    }

    fn current_index(&self, line: &LogLine) -> Option<usize> {
        self.host(line.host)
            .and_then(|h| h.current_by_thread.get(&(line.pid, line.tid)).or_else(|| h.current_by_pid.get(&line.pid)))
            .copied()
            .or(self.orphans)
    }

    /// The communicator a line without a comm pointer belongs to: the last one
    /// its thread (or process) initialised. Lines of processes that printed no
    /// init line (yet) go to one shared communicator, never to whichever was
    /// created last: which one they belong to is decided when the report is
    /// made, by rank count ([`merge_orphans`]).
    fn current(&mut self, line: &LogLine) -> (&mut CommState, &mut Budget) {
        let index = self.place(line, None);
        self.seen_in(index, line)
    }

    /// The communicator of a line without a comm pointer, looked up once: a
    /// line of the communicator its thread waits to initialise, or, for a line
    /// naming ranks up to `highest` that its thread's communicator cannot own
    /// (see [`Self::current_holding`]), none; else the thread's or process's.
    fn place(&mut self, line: &LogLine, highest: Option<u32>) -> usize {
        let current = self.current_index(line);
        if let Some(i) = current.filter(|&i| self.awaits_own_init(line, i)) {
            return self.pending_for_thread(line, Some(i));
        }
        if let Some(highest) = highest {
            let too_small =
                current.and_then(|i| self.comms.get(i)).and_then(|c| c.nranks).is_some_and(|n| highest >= n);
            let other_thread = self.host(line.host).is_some_and(|h| {
                !h.current_by_thread.contains_key(&(line.pid, line.tid)) && h.pids_with_several.contains(&line.pid)
            });
            if too_small || other_thread {
                return self.unplaced_index();
            }
        }
        match current {
            Some(i) => i,
            None if self.comms.len() < MAX_COMMUNICATORS && self.host(line.host).is_some() => {
                self.pending_for_thread(line, None)
            }
            None => self.orphans_index(),
        }
    }

    /// The communicator of lines no init line names yet (see
    /// [`merge_orphans`]), made on first use.
    fn orphans_index(&mut self) -> usize {
        if let Some(index) = self.orphans {
            return index;
        }
        let index = self.new_comm(UNIDENTIFIED.to_string());
        self.orphans = Some(index);
        index
    }

    /// The communicator of lines no communicator can claim (see
    /// [`Self::current_holding`]), made on first use.
    fn unplaced_index(&mut self) -> usize {
        if let Some(index) = self.unplaced {
            return index;
        }
        let index = self.new_comm(UNPLACED.to_string());
        self.unplaced = Some(index);
        index
    }

    /// `comms[index]`, as the communicator of this line's host.
    fn seen_in(&mut self, index: usize, line: &LogLine) -> (&mut CommState, &mut Budget) {
        let (comm, budget) = (&mut self.comms[index], &mut self.budget);
        comm.saw_host(line.host, budget);
        (comm, budget)
    }

    /// [`Self::current`] for a line that names ranks up to `highest`: a
    /// communicator of fewer ranks cannot be its own (a pointer-less line
    /// printed after a small communicator's init on the same thread, such as
    /// a larger one's lazily connected P2P channel), nor can the latest of a
    /// process's several communicators claim a line of a thread that
    /// initialised none. Such lines are kept apart, of no communicator.
    fn current_holding(&mut self, line: &LogLine, highest: u32) -> (&mut CommState, &mut Budget) {
        let index = self.place(line, Some(highest));
        self.seen_in(index, line)
    }

    /// Whether a line of a thread that printed no init line yet, in a
    /// process whose latest communicator `current` no `Init START` opened
    /// (NCCL before 2.18), waits for its own: such NCCLs initialise a
    /// communicator on the thread that prints its lines, then its COMPLETE.
    fn awaits_own_init(&self, line: &LogLine, current: usize) -> bool {
        let unknown_thread =
            self.host(line.host).is_some_and(|h| !h.current_by_thread.contains_key(&(line.pid, line.tid)));
        unknown_thread
            && self.comms.len() < MAX_COMMUNICATORS
            && self.comms.get(current).is_some_and(|c| c.nranks.is_some() && c.started.is_empty())
    }

    /// A pending communicator for this thread's lines until its init line
    /// (see `settle_pending`); `after` takes them if none comes, or, with
    /// none, the lines of no known communicator.
    fn pending_for_thread(&mut self, line: &LogLine, after: Option<usize>) -> usize {
        if !self.budget.take(Table::Threads, 1) {
            return after.unwrap_or_else(|| self.orphans_index());
        }
        let pending = self.new_comm(format!("{PENDING}{}", self.comms.len()));
        self.comms[pending].pending_after = after;
        self.hosts[self.line_host].1.current_by_thread.insert((line.pid, line.tid), pending);
        pending
    }

    fn new_comm(&mut self, id: String) -> usize {
        if self.comms.len() >= MAX_COMMUNICATORS {
            return self.comms.len() - 1;
        }
        self.comms.push(CommState { id: id.clone(), ..CommState::default() });
        self.comm_by_id.insert(id, self.comms.len() - 1);
        self.comms.len() - 1
    }
}

/// Where `part` (a slice of `text`) begins in `text`; `None` for a slice of
/// anything else.
fn offset_in(text: &str, part: &str) -> Option<usize> {
    let at = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    (at + part.len() <= text.len() && text.is_char_boundary(at)).then_some(at)
}

/// The message of a WARN line that lost only its `host:pid:tid [dev]` prefix
/// (`include/socket.h:344 WARN Socket creation failed : ...`, as a launcher or
/// a paste keeps it): without NCCL's source location and level word.
fn without_source_and_level(text: &str) -> &str {
    // `file.cc:NN [NCCL] WARN message`, anywhere in the line: what comes before
    // may be a prefix NCCL's splitter does not know (`machine [0] ...` of a
    // host with no pid and tid, a launcher's own tag).
    for (at, _) in text.match_indices("WARN ") {
        let head = text[..at].trim_end();
        let head = head.strip_suffix("NCCL").map_or(head, str::trim_end);
        let location = head.rsplit(char::is_whitespace).next().unwrap_or(head);
        if (at == 0 || text[..at].ends_with(' ')) && is_source_location(location) {
            return text[at + "WARN ".len()..].trim_start();
        }
    }
    text
}

/// `misc/ibvwrap.cu:269`: an NCCL source file and line.
fn is_source_location(token: &str) -> bool {
    let (file, line) = token.rsplit_once(':').unwrap_or(("", ""));
    message::is_source_file(file) && !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit())
}

/// NCCL's socket progress found the communicator's abort flag set and
/// returned ncclInternalError on purpose: `Socket progress: abort called`
/// (misc/socket.cc 2.12-2.16), `socketProgressOpt: abort called` (2.17-2.28),
/// `ncclOsSocketProgressOpt: abort called` (os/linux.cc 2.29+).
fn socket_abort(message: &str) -> bool {
    message.ends_with("abort called") && message.contains("rogress")
}

/// One error-trail key's lines: how many, how many after an abort, and the
/// order of its first appearance.
#[derive(Debug, Default)]
struct ErrorCount {
    lines: u64,
    after_abort: u64,
    first: usize,
}

fn push_unique(list: &mut Vec<String>, item: &str) {
    if list.len() < MAX_SMALL_TABLE && !list.iter().any(|i| i == item) {
        list.push(item.to_string());
    }
}

/// Where a line of NCCL's own came from, for the message tables.
fn line_origin<'a>(
    line: &LogLine<'a>,
    rank: Option<u32>,
    file: &'a str,
    number: u64,
    source: Option<&'a str>,
) -> Origin<'a> {
    Origin { host: line.host, rank, cuda_dev: line.cuda_dev, file, line: number, source }
}

/// ` comm 0x5609976f9470 nRanks 32` appended to Trees and connection lines by
/// some builds: the communicator's size.
fn annotated_nranks(message: &str) -> Option<u32> {
    let at = message.find(" comm 0x")?;
    let rest = &message[at..];
    let size = rest.find(" nRanks ")? + " nRanks ".len();
    rest[size..].split_whitespace().next()?.parse().ok()
}

/// Whether `part`, a slice of `text`, runs to its end (nothing was trimmed
/// after it): a comparison of addresses, not of bytes.
fn ends_text(part: &str, text: &str) -> bool {
    part.as_ptr() as usize + part.len() == text.as_ptr() as usize + text.len()
}

/// Bytes per element of an `ncclDataType_t`.
fn datatype_size(datatype: u32) -> u64 {
    match datatype {
        0 | 1 | 10 | 11 => 1,
        6 | 9 => 2,
        2 | 3 | 7 => 4,
        4 | 5 | 8 => 8,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::continuation::MAX_HELD_ROWS;
    use super::*;

    #[test]
    fn a_warn_without_its_prefix_keeps_its_message() {
        let text = "include/socket.h:344 WARN Socket creation failed : Address family not supported by protocol";
        assert_eq!(without_source_and_level(text), "Socket creation failed : Address family not supported by protocol");
        assert_eq!(without_source_and_level("misc/socket.cc:71 NCCL WARN socketProgress: x"), "socketProgress: x");
        // Not a source location: left alone.
        assert_eq!(without_source_and_level("Traceback: WARN x"), "Traceback: WARN x");
        assert_eq!(without_source_and_level("socket.h:3a WARN x"), "socket.h:3a WARN x");
    }

    /// The report of `text`, read line by line.
    fn report_of(text: &str) -> NcclReport {
        let mut parser = LogParser::new();
        for (n, line) in text.lines().enumerate() {
            parser.line(line, n as u64 + 1);
        }
        parser.finish()
    }

    /// A watchdog report cut after `operation timeout:` is read whole across
    /// its lines (the real cases are corpus 1032, three lines, and 1440, two);
    /// a line that is no continuation ends it, and the first line's timeout
    /// stays as it was.
    #[test]
    fn a_watchdog_report_wrapped_over_lines_is_read_whole() {
        let three = "[Rank 1] Watchdog caught collective operation timeout:\n\
                     WorkNCCL(SeqNum=12590, OpType=_ALLGATHER_BASE, NumelIn=1404928, NumelOut=2809856,\n\
                     \x20        Timeout(ms)=600000) ran for 600060 milliseconds before timing out.\n";
        let t = &report_of(three).timeouts[0];
        assert_eq!((t.rank, t.seq, t.op.as_str()), (Some(1), Some(12590), "_ALLGATHER_BASE"));
        assert_eq!((t.timeout_ms, t.ran_ms, t.group_size, t.line), (Some(600_000), Some(600_060), Some(2), 1));
        let two = "Watchdog caught collective operation timeout:\nWorkNCCL(SeqNum=1, OpType=ALLREDUCE)\n";
        let t = &report_of(two).timeouts[0];
        assert_eq!((t.seq, t.op.as_str()), (Some(1), "ALLREDUCE"));
        // Not on the next line (an NCCL line between): not its continuation.
        let apart = "Watchdog caught collective operation timeout:\nh:1:2 [0] NCCL INFO x\nWorkNCCL(SeqNum=1, OpType=ALLREDUCE)\n";
        assert_eq!(report_of(apart).timeouts[0].op, "");
        // Something else next: the timeout keeps what its line gave.
        let cut = "[Rank 0] Watchdog caught collective operation timeout:\nTraceback (most recent call last):\n";
        let report = report_of(cut);
        assert_eq!((report.timeouts.len(), report.timeouts[0].op.as_str()), (1, ""));
    }

    /// Hand-made: the bounds of a wrapped quote. One never closed is read as
    /// far as four more lines, cited at its first line and cut at the evidence
    /// length; an NCCL line ends it early (the real wrapped case is 900).
    /// Hand-made: WARNs each followed by a bare line. Repeated texts are held
    /// against the table once, distinct ones are remembered only up to the
    /// bound, and the report is the same either way.
    #[test]
    fn held_warn_rows_are_remembered_within_bounds() {
        let warn = |i: usize| {
            format!(
                "h:1:2 [0] misc/socket.cc:567 NCCL WARN socketPollConnect: Connect to 10.0.0.{i}<1> failed : Connection refused\nTraceback (most recent call last):\n"
            )
        };
        let mut parser = LogParser::new();
        let same: String = (0..2000).map(|_| warn(2)).collect();
        for (n, line) in same.lines().enumerate() {
            parser.line(line, n as u64 + 1);
        }
        assert_eq!(parser.held_rows.len(), 1);
        let distinct: String = (0..2000).map(warn).collect();
        for (n, line) in distinct.lines().enumerate() {
            parser.line(line, n as u64 + 1);
        }
        assert_eq!(parser.held_rows.len(), MAX_HELD_ROWS);
        let report = parser.finish();
        assert_eq!(report.warning_count, 4000);
        assert!(report.warnings.iter().all(|w| w.class.as_deref() == Some("bootstrap-connect-failure")));
    }

    #[test]
    fn a_wrapped_quote_is_bounded() {
        let read = |text: &str| report_of(text).framework_errors;
        let open = "E1 x.cc:1] NCCL operation ncclGroupEnd() failed: unhandled system error. Last NCCL warning(error) log entry (may be unrelated) 'Error";
        let long = "y".repeat(10_000);
        let errors = read(&format!("{open}\nwhile creating\n{long}\nmore\nand more\nnot part of it\n"));
        let quoted = errors.iter().find(|e| e.text.starts_with("Error while creating")).expect("the quote");
        assert_eq!(quoted.line, 1);
        assert!(quoted.text.chars().count() <= MAX_EVIDENCE_CHARS + 8, "{}", quoted.text.len());
        assert!(!quoted.text.contains("not part of it"));
        let cut = read(&format!("{open}\nwhile creating\nh:1:2 [0] NCCL INFO Using network Socket\n"));
        assert!(cut.iter().any(|e| e.text == "Error while creating"), "{cut:?}");
    }

    /// Hand-made: a WARN cut inside its row takes the bare lines after it
    /// only while they carry more of the row, at most four, and is cited at
    /// its own line; a WARN whole on its line takes nothing (the real
    /// wrapped case is 965).
    #[test]
    fn a_wrapped_warn_takes_only_its_own_rest() {
        let read = |text: &str| report_of(text).warnings;
        let cut = "h:1:2 [0] net_ib.cc:1 NCCL WARN NET/IB: Got completion";
        let wrapped = read(&format!(
            "{cut}\nfrom peer 10.0.0.2<1> with status=IBV_WC_LOC_PROT_ERR(4)\nTraceback (most recent call last):\n"
        ));
        assert_eq!(wrapped.len(), 1, "{wrapped:?}");
        assert_eq!(wrapped[0].line, 1);
        assert!(wrapped[0].text.ends_with("status=IBV_WC_LOC_PROT_ERR(4)"), "{}", wrapped[0].text);
        // The next line carries nothing of the row: the WARN stays as it was.
        let alone = read(&format!("{cut}\nTraceback (most recent call last):\n"));
        assert_eq!(alone[0].text, "NET/IB: Got completion");
        // Whole on its line: the bare line after it is not joined.
        let whole = read("h:1:2 [0] x.cc:1 NCCL WARN Cuda failure 'out of memory'\nfrom peer x with status=1\n");
        assert_eq!(whole[0].text, "Cuda failure 'out of memory'");
    }
}
