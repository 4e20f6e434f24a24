//! Accumulates what every line says into one [`NcclReport`].
//!
//! Memory grows with ranks, channels and distinct facts, never with the number of
//! lines: per-operation lines become counters and histograms, repeated warnings a
//! count, and every table has a cap that a hostile input cannot push past.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use topo_model::BusId;
use topo_model::nccl::{
    ChannelCounts, CollectiveCall, CollectiveStats, CollectiveTimeout, Communicator, Connection, Direction,
    EnvOverride, ErrorTrace, GraphSearch, LineRef, LoggedPath, NCCL_REPORT_SCHEMA_VERSION, NcclReport, Network,
    RankInfo, RankProgress, Ring, TransportKind, TreeNode, TuningChoice,
};

use super::bytes::short_eq;
use super::catalogue::{CATALOGUE, Level as MessageLevel};
use super::framework;
use super::limits::{Budget, Table};
use super::message::{self, Collective, CommInit, ConnectionLine, Event};
use super::messages::{MessageTable, Origin};
use super::prefix::{self, Level, LogLine};
use super::prefix_cache::{Known, PrefixCache};

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

/// channel, connIndex, from, to, direction, transport text.
type ConnectionKey = (u32, u32, u32, Option<u32>, Direction, String);

#[derive(Default)]
struct CommState {
    id: String,
    /// Printed by init lines.
    nranks: Option<u32>,
    /// From `[nranks=N]` on COLL lines.
    coll_nranks: Option<u32>,
    highest_rank: Option<u32>,
    hosts_seen: BTreeSet<String>,
    nnodes: Option<u32>,
    ranks: BTreeMap<u32, RankInfo>,
    /// Host of each rank as learnt from lines that rank printed.
    rank_hosts: BTreeMap<u32, String>,
    ring_orders: BTreeMap<u32, Vec<u32>>,
    ring_next: BTreeMap<u32, BTreeMap<u32, u32>>,
    ring_prev: BTreeMap<u32, BTreeMap<u32, u32>>,
    trees: BTreeMap<(u32, u32), (i64, Vec<u32>)>,
    connections: BTreeSet<ConnectionKey>,
    channels: Option<ChannelCounts>,
    graphs: Vec<GraphSearch>,
    init_complete: BTreeSet<u32>,
    init_seconds: Option<f64>,
}

/// What is known about the processes of one host.
#[derive(Default)]
struct HostState {
    lines: u64,
    pids: BTreeSet<Option<u64>>,
    current_by_thread: FastMap<(Option<u64>, Option<u64>), usize>,
    current_by_pid: FastMap<Option<u64>, usize>,
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
    /// A framework printed `Last error:`; the next line is NCCL's last WARN text.
    last_error_pending: bool,
    /// What stood before `Last error:` on its line (a logger's prefix).
    last_error_prefix: String,
    logged_paths: Vec<LoggedPath>,
    /// (host, from, to) of the paths kept, to keep each once.
    logged_path_keys: std::collections::HashSet<(Option<String>, String, String)>,
    /// The communicator of lines whose process printed no init line.
    orphans: Option<usize>,
    /// One cap per table over the whole input.
    budget: Budget,
    /// Error-trail lines: (count, order of first appearance), so the trail
    /// is reported from where the error began.
    errors: BTreeMap<(String, i64), (u64, usize)>,
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
        self.lines += 1;
        self.line_number = number;
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
        self.read_split(text, line);
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
                let line = prefix::split(part);
                self.read_split(part, line);
            }
        }
        true
    }

    /// Everything but COLL lines in the plain prefix: the general reader.
    fn read_split(&mut self, text: &str, line: LogLine) {
        let number = self.line_number;
        self.line_host = self.host_slot(line.host);
        if line.level != Level::Bare {
            self.nccl_lines += 1;
            if line.host.is_some() {
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
        if matches!(line.level, Level::Warn | Level::Abort) {
            self.warning(&line, number);
            return;
        }
        if line.level == Level::Bare && self.framework_line(&line, text) {
            return;
        }
        match message::parse(line.message) {
            Some(event) => {
                if line.level == Level::Bare {
                    self.nccl_lines += 1;
                }
                let coll_line = matches!(event, Event::Collective(_));
                self.event(&line, event);
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
    /// but the line's transport still counts.
    fn via_fragment(&mut self, text: &str) -> bool {
        let Some((edge, via)) = text.split_once(" via ") else { return false };
        let Some((_, to)) = edge.rsplit_once("->") else { return false };
        let to = to.trim();
        if via.is_empty() || !to.starts_with(|c: char| c.is_ascii_digit()) || to.contains(' ') {
            return false;
        }
        let via = via.trim();
        if self.via.len() < MAX_DISTINCT_VIA || self.via.contains_key(via) {
            *self.via.entry(via.to_string()).or_default() += 1;
        }
        self.nccl_lines += 1;
        true
    }

    /// NCCL's own `NCCL version 2.21.5+cuda12.8` line (a printf, no prefix of
    /// NCCL's) behind a logger's or console's prefix (`  | 2025-05-16T16:39:51 | `,
    /// a timestamp, a worker name): the version ends the line.
    fn prefixed_version(&mut self, message: &str) -> bool {
        let Some(at) = message.rfind("NCCL version ") else { return false };
        let version = message[at + "NCCL version ".len()..].trim();
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
        let rank = framework::rank_in(raw);
        if std::mem::take(&mut self.last_error_pending) && !text.trim().is_empty() {
            self.nccl_lines += 1;
            // The logger's prefix of the `Last error:` line repeats on this one.
            let prefix = std::mem::take(&mut self.last_error_prefix);
            let detail = text.trim().strip_prefix(prefix.as_str()).unwrap_or(text.trim()).trim();
            self.add_framework_error(framework::without_rank_tag(detail), Some("Last error"), rank);
            return true;
        }
        let Some(found) = framework::recognise(text) else {
            return self.bare_warn_text(text, rank);
        };
        self.nccl_lines += 1;
        if let Some(version) = framework::version_in(text)
            && self.versions.len() < 64
        {
            self.versions.insert(version.to_string());
        }
        match found {
            framework::Found::LastErrorNext => {
                self.last_error_pending = true;
                let before = text.trim().find("Last error:").map_or("", |at| text.trim()[..at].trim_end());
                self.last_error_prefix = before.chars().take(256).collect();
            }
            framework::Found::LastError(detail) => self.add_framework_error(detail, Some("Last error"), rank),
            framework::Found::Error => self.add_framework_error(text.trim(), None, rank),
            // Watchdog lines are read as timeouts below, with their sequence
            // numbers and limits: the timeout rule cites them.
            framework::Found::Watchdog => return false,
        }
        true
    }

    /// NCCL's WARN text printed without NCCL's prefix (a framework re-printing
    /// `ncclGetLastError()`, a launcher that kept only the message): a line
    /// that one of the table's WARN rows printed, long enough to be no accident.
    fn bare_warn_text(&mut self, text: &str, rank: Option<u32>) -> bool {
        let message = framework::without_rank_tag(text.trim());
        if CATALOGUE.bare_warn(message).is_none() {
            return false;
        }
        self.nccl_lines += 1;
        self.add_framework_error(message, Some("NCCL text without its prefix"), rank);
        true
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
        let index = match self.current_index(line) {
            Some(i) => i,
            None => {
                let index = self.new_comm("unidentified".to_string());
                self.orphans = Some(index);
                index
            }
        };
        let (comm, budget) = (&mut self.comms[index], &mut self.budget);
        comm.saw_host(line.host, budget);
        (comm, budget)
    }

    fn new_comm(&mut self, id: String) -> usize {
        if self.comms.len() >= MAX_COMMUNICATORS {
            return self.comms.len() - 1;
        }
        self.comms.push(CommState { id: id.clone(), ..CommState::default() });
        self.comm_by_id.insert(id, self.comms.len() - 1);
        self.comms.len() - 1
    }

    fn event(&mut self, line: &LogLine, event: Event) {
        match event {
            Event::Version(v) => {
                if self.versions.len() < MAX_SMALL_TABLE {
                    self.versions.insert(v.to_string());
                }
            }
            Event::Env { name, value } => {
                self.first_line(format!("env/{name}={value}"), line.message);
                let key = (name.to_string(), value.to_string());
                if !self.env.contains_key(&key) && !self.budget.take(Table::EnvHosts, 1) {
                    return;
                }
                let hosts = self.env.entry(key).or_default();
                if let Some(host) = line.host
                    && !hosts.contains(host)
                    && self.budget.take(Table::EnvHosts, 1)
                {
                    hosts.insert(host.to_string());
                }
            }
            Event::UsingNetwork(name) => {
                self.first_line(format!("network/{name}"), line.message);
                push_unique(&mut self.network.used, name)
            }
            Event::NetDevices(devices) => {
                if let Some(host) = line.host {
                    let budget = &mut self.budget;
                    let listed = self.network.devices_by_host.get(host).map_or(0, Vec::len);
                    if listed == 0 && budget.take(Table::HostDevices, 1) {
                        self.network.devices_by_host.insert(host.to_string(), Vec::new());
                    }
                    if let Some(listed) = self.network.devices_by_host.get_mut(host) {
                        for device in &devices {
                            if !listed.iter().any(|d| d == device) && budget.take(Table::HostDevices, 1) {
                                listed.push(device.to_string());
                            }
                        }
                    }
                }
                devices.into_iter().for_each(|d| push_unique(&mut self.network.devices, d))
            }
            Event::LegacyInterface(interface) => {
                self.first_line(format!("bootstrap/{interface}"), line.message);
                push_unique(&mut self.network.bootstrap, interface);
                let name = interface.split(':').next().unwrap_or(interface);
                push_unique(&mut self.network.socket_interfaces, name);
            }
            Event::SocketInterfaces(interfaces) => {
                interfaces.into_iter().for_each(|d| push_unique(&mut self.network.socket_interfaces, d))
            }
            Event::NetIbNotFound => {
                self.first_line("net-ib-not-found".to_string(), line.message);
                self.network.ib_not_found = true
            }
            Event::OfiProvider { provider, nics } => {
                let plural = if nics == 1 { "" } else { "s" };
                push_unique(&mut self.network.devices, &format!("{provider} ({nics} nic{plural})"));
            }
            Event::Bootstrap(interfaces) => {
                for interface in interfaces {
                    self.first_line(format!("bootstrap/{interface}"), line.message);
                    push_unique(&mut self.network.bootstrap, interface);
                }
            }
            Event::GdrForHca { hca, enabled } => {
                self.first_line(format!("gdr/{hca}"), line.message);
                if self.network.gdr_by_hca.len() < MAX_SMALL_TABLE {
                    self.network.gdr_by_hca.insert(hca.to_string(), enabled);
                }
            }
            Event::CommInit(init) => self.comm_init(line, init),
            Event::CommNodes { comm, nranks, nnodes, .. } => {
                let index = self.host(line.host).and_then(|h| h.comm_for_pointer(comm, line.pid));
                let state = match index {
                    Some(i) => &mut self.comms[i],
                    None => self.current(line).0,
                };
                state.nranks = Some(nranks);
                state.nnodes = Some(nnodes);
            }
            Event::RankCount { rank, nranks } => {
                let (comm, _) = self.current(line);
                if let Some(rank) = rank {
                    comm.saw_rank(rank);
                }
                comm.nranks.get_or_insert(nranks);
            }
            Event::RingOrder { channel, ranks } => {
                let (comm, budget) = self.current(line);
                ranks.iter().for_each(|r| comm.saw_rank(*r));
                if !comm.ring_orders.contains_key(&channel)
                    && budget.take(Table::RingOrderRanks, ranks.len() as u64 + 1)
                {
                    comm.ring_orders.insert(channel, ranks);
                }
            }
            Event::RingNeighbours { channel, prev, me, next } => {
                let (comm, budget) = self.current(line);
                [prev, me, next].iter().for_each(|r| comm.saw_rank(*r));
                let known = comm.ring_next.get(&channel).is_some_and(|n| n.contains_key(&me));
                if known || budget.take(Table::RingEdges, 1) {
                    comm.ring_next.entry(channel).or_default().insert(me, next);
                    comm.ring_prev.entry(channel).or_default().insert(me, prev);
                }
            }
            Event::Connection(connection) => self.connection(line, connection),
            Event::Trees(entries) => {
                let size = annotated_nranks(line.message);
                let (comm, budget) = self.current(line);
                comm.coll_nranks = comm.coll_nranks.or(size);
                for (channel, parent, me, children) in entries {
                    comm.add_tree(channel, parent, me, &children, budget);
                }
            }
            Event::GraphTree { channel, parent, me, children } => {
                let (comm, budget) = self.current(line);
                comm.add_tree(channel, parent, me, &children, budget);
            }
            Event::Channels(counts) => self.current(line).0.channels = Some(counts),
            Event::GraphSearch(graph) => {
                let (comm, _) = self.current(line);
                if !comm.graphs.contains(&graph) && comm.graphs.len() < 64 {
                    comm.graphs.push(graph);
                }
            }
            Event::WatchdogTimeout { rank, seq, op, timeout_ms, ran_ms } => {
                let known = self.timeouts.iter().any(|t| t.rank == rank && t.seq == seq);
                if !known && self.timeouts.len() < MAX_TIMEOUTS {
                    self.timeouts.push(CollectiveTimeout {
                        rank,
                        seq,
                        op: op.to_string(),
                        timeout_ms,
                        ran_ms,
                        last_completed: None,
                        file: self.input_name.clone(),
                        line: self.line_number,
                    });
                }
            }
            Event::WatchdogProgress { rank, last_completed } => {
                if let Some(timeout) = self.timeouts.iter_mut().rev().find(|t| t.rank == rank) {
                    timeout.last_completed = last_completed.or(timeout.last_completed);
                }
            }
            Event::InitTimings { total, .. } => {
                let (comm, _) = self.current(line);
                comm.init_seconds = Some(comm.init_seconds.map_or(total, |t: f64| t.max(total)));
            }
            Event::Collective(collective) => self.collective(line, collective),
            Event::ErrorTrace { location, code } => {
                let key = (location.to_string(), code);
                let next = self.errors.len();
                if next < MAX_DISTINCT_ERRORS || self.errors.contains_key(&key) {
                    self.errors.entry(key).or_insert((0, next)).0 += 1;
                }
            }
            Event::Tuning { collective, bytes, algorithm, protocol } => {
                let key = (collective.to_string(), algorithm.to_string(), protocol.to_string(), bytes);
                if self.tuning.len() < MAX_SMALL_TABLE || self.tuning.contains_key(&key) {
                    *self.tuning.entry(key).or_default() += 1;
                }
            }
        }
    }

    fn comm_init(&mut self, line: &LogLine, init: CommInit) {
        if init.complete {
            self.init_complete += 1;
        }
        let known = self.host(line.host).and_then(|h| h.comm_for_pointer(init.comm, line.pid));
        // Ranks of one communicator share its commId (2.16+); before that, group by
        // size and start a new communicator when a rank number comes back.
        let index = match (init.comm_id, known) {
            (_, Some(i)) => i,
            (Some(id), None) => match self.comm_by_id.get(id) {
                Some(&i) => i,
                None => self.new_comm(id.to_string()),
            },
            (None, None) => {
                let fits = |c: &CommState| {
                    c.nranks == Some(init.nranks)
                        && !c.id.starts_with("0x")
                        && c.ranks.get(&init.rank).is_none_or(|r| r.host.as_deref() == line.host && r.pid == line.pid)
                };
                match self.comms.iter().rposition(fits) {
                    Some(i) => i,
                    None => {
                        let id = format!("nranks-{}-{}", init.nranks, self.comms.len());
                        self.new_comm(id)
                    }
                }
            }
        };
        let (state, budget) = (&mut self.hosts[self.line_host].1, &mut self.budget);
        state.last_collective.clear();
        if known.is_none() && budget.take(Table::CommPointers, 1) {
            state.comm_by_pointer.entry(init.comm.to_string()).or_default().push((line.pid, index));
        }
        let thread = (line.pid, line.tid);
        if state.current_by_thread.contains_key(&thread) || budget.take(Table::Threads, 1) {
            state.current_by_thread.insert(thread, index);
            state.current_by_pid.insert(line.pid, index);
        }
        let (comm, budget) = (&mut self.comms[index], &mut self.budget);
        comm.nranks = Some(init.nranks);
        comm.saw_rank(init.rank);
        comm.saw_host(line.host, budget);
        if init.complete && (comm.init_complete.contains(&init.rank) || budget.take(Table::Ranks, 1)) {
            comm.init_complete.insert(init.rank);
        }
        if comm.ranks.contains_key(&init.rank) || budget.take(Table::Ranks, 1) {
            let rank =
                comm.ranks.entry(init.rank).or_insert_with(|| RankInfo { rank: init.rank, ..RankInfo::default() });
            rank.host = line.host.map(str::to_string);
            rank.pid = line.pid;
            rank.cuda_dev = init.cuda_dev.or(rank.cuda_dev);
            rank.nvml_dev = init.nvml_dev.or(rank.nvml_dev);
            rank.bus_id = init.bus_id.and_then(|b| BusId::from_nccl_int(b).ok()).or(rank.bus_id);
        }
        if let Some(host) = line.host
            && (comm.rank_hosts.contains_key(&init.rank) || budget.take(Table::RankHosts, 1))
        {
            comm.rank_hosts.insert(init.rank, host.to_string());
        }
    }

    fn connection(&mut self, line: &LogLine, connection: ConnectionLine) {
        if self.via.len() < MAX_DISTINCT_VIA || self.via.contains_key(connection.via) {
            *self.via.entry(connection.via.to_string()).or_default() += 1;
            self.first_line(format!("via/{}", connection.via), line.message);
        }
        let size = annotated_nranks(line.message);
        let (comm, budget) = self.current(line);
        comm.coll_nranks = comm.coll_nranks.or(size);
        comm.saw_rank(connection.from);
        connection.to.iter().for_each(|r| comm.saw_rank(*r));
        // P2P/SHM lines and [send] halves are printed by the sender, [receive] by the receiver.
        let printer = match connection.direction {
            Direction::Receive => connection.to.unwrap_or(connection.from),
            _ => connection.from,
        };
        if let Some(host) = line.host
            && !comm.rank_hosts.contains_key(&printer)
            && budget.take(Table::RankHosts, 1)
        {
            comm.rank_hosts.insert(printer, host.to_string());
        }
        let key = (
            connection.channel,
            connection.conn_index,
            connection.from,
            connection.to,
            connection.direction,
            connection.via.to_string(),
        );
        if !comm.connections.contains(&key) && budget.take(Table::Connections, 1) {
            comm.connections.insert(key);
        }
    }

    fn collective(&mut self, line: &LogLine, op: Collective) {
        let bytes = op.count.saturating_mul(datatype_size(op.datatype));
        let bucket = if bytes == 0 { 0 } else { (64 - (bytes - 1).leading_zeros()) as usize };
        let add = |entry: &mut CollectiveAccumulator| {
            entry.0 += 1;
            if let Some(slot) = entry.1.get_mut(bucket) {
                *slot += 1;
            }
            entry.2 = entry.2.saturating_add(bytes);
        };
        let last = self.last_collective_op;
        let index = match self.collectives.get(last) {
            Some((name, _)) if short_eq(name, op.op) => Some(last),
            _ => self.collective_index.get(op.op).copied().or_else(|| {
                (self.collectives.len() < MAX_SMALL_TABLE).then(|| {
                    self.collectives.push((op.op.to_string(), (0, [0; 65], 0)));
                    self.collective_index.insert(op.op.to_string(), self.collectives.len() - 1);
                    self.collectives.len() - 1
                })
            }),
        };
        let op_index = index;
        if let Some(index) = index {
            self.last_collective_op = index;
            if let Some((_, entry)) = self.collectives.get_mut(index) {
                add(entry);
            }
        }

        let pointer = op.comm.unwrap_or("?");
        let cached = self
            .line_state()
            .last_collective
            .iter()
            .find(|(pid, last, ..)| *pid == line.pid && short_eq(last, pointer))
            .map(|(_, _, comm, slot)| (*comm, *slot));
        let (index, slot) = match cached {
            Some(hit) => hit,
            None => match self.locate_collective(line, pointer, op.nranks) {
                Some(found) => found,
                None => return,
            },
        };
        let state = self.line_state();
        let Some((_, _, progress)) = state.progress.get_mut(slot) else {
            return;
        };
        if let (Some(slot), Some(op_index)) =
            (progress.recent.get_mut(progress.calls as usize % RECENT_CALLS), op_index)
        {
            *slot = (op.op_count, op_index, op.count, op.datatype);
        }
        progress.calls += 1;
        progress.last_op_count = op.op_count;
        progress.last_op = op_index;
        progress.nranks = progress.nranks.or(op.nranks);
        if cached.is_none() {
            let entry = (line.pid, pointer.to_string(), index, slot);
            // One entry per (process, communicator): a thread that takes turns
            // between communicators must not evict its own entries.
            let cache = &mut state.last_collective;
            if cache.len() < MAX_RECENT_COMMS {
                cache.push(entry);
            } else if let Some(oldest) = cache.first_mut() {
                *oldest = entry;
                cache.rotate_left(1);
            }
        }
    }

    /// First COLL line of a (process, communicator): finds the communicator, notes
    /// its size and host, and makes the progress slot. Returns (communicator, slot).
    fn locate_collective(
        &mut self,
        line: &LogLine,
        pointer: &str,
        nranks: Option<u32>,
    ) -> Option<(Option<usize>, usize)> {
        let index = self.host(line.host).and_then(|h| h.comm_for_pointer(pointer, line.pid));
        let (comm, budget) = match index {
            Some(i) => (&mut self.comms[i], &mut self.budget),
            None => self.current(line),
        };
        comm.saw_host(line.host, budget);
        if comm.coll_nranks.is_none() {
            comm.coll_nranks = nranks;
        }
        let rank = index.and_then(|i| {
            self.comms[i].ranks.values().find(|r| r.host.as_deref() == line.host && r.pid == line.pid).map(|r| r.rank)
        });
        let (state, budget) = (&mut self.hosts[self.line_host].1, &mut self.budget);
        let known = state.progress_index.get(pointer).and_then(|list| list.iter().find(|(pid, _)| *pid == line.pid));
        let slot = match known {
            Some((_, slot)) => *slot,
            None if budget.take(Table::Progress, 1) => {
                state.progress.push((pointer.to_string(), line.pid, Progress { rank, ..Progress::default() }));
                let slot = state.progress.len() - 1;
                state.progress_index.entry(pointer.to_string()).or_default().push((line.pid, slot));
                slot
            }
            None => return None,
        };
        Some((index, slot))
    }

    /// The report of everything read so far.
    pub fn finish(self) -> NcclReport {
        let host_lines: HashMap<String, u64> = self
            .hosts
            .iter()
            .filter(|(h, s)| !h.is_empty() && s.lines > 0)
            .map(|(h, s)| (h.clone(), s.lines))
            .collect();
        let op_names: Vec<String> = self.collectives.iter().map(|(name, _)| name.clone()).collect();
        let (tuning_table, tuning_ranges) = self.tuning_table.finish();
        let mut collectives_sorted = self.collectives;
        collectives_sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let hosts = canonical_hosts(&host_lines);
        let rename = |h: &str| hosts.get(h).cloned().unwrap_or_else(|| h.to_string());
        let host_list: Vec<String> = hosts.values().cloned().collect::<BTreeSet<_>>().into_iter().collect();
        let processes: BTreeSet<(String, Option<u64>)> = self
            .hosts
            .iter()
            .filter(|(h, _)| !h.is_empty())
            .flat_map(|(h, s)| s.pids.iter().map(move |p| (rename(h), *p)))
            .collect();

        let comms = merge_orphans(self.comms, self.orphans);
        let communicators = comms.into_iter().map(|c| c.into_report(&rename)).collect();
        let env_overrides = self
            .env
            .into_iter()
            .map(|((name, value), hosts)| EnvOverride {
                name,
                value,
                hosts: hosts.iter().map(|h| rename(h)).collect::<BTreeSet<_>>().into_iter().collect(),
            })
            .collect();
        let mut not_kept = self.budget.not_kept();
        for (name, table) in [
            ("distinct warnings", &self.warnings),
            ("distinct notices", &self.notices),
            ("distinct framework errors", &self.framework_errors),
        ] {
            if table.dropped > 0 {
                not_kept.insert(name.to_string(), table.dropped);
            }
        }
        let warning_count = self.warnings.count;
        let warnings = self.warnings.finish(MessageLevel::Warn, &rename);
        let notices = self.notices.finish(MessageLevel::Info, &rename);
        let framework_errors = self.framework_errors.finish(MessageLevel::Framework, &rename);
        let mut logged_paths = self.logged_paths;
        for path in &mut logged_paths {
            path.host = path.host.as_deref().map(rename);
        }
        let collectives = collectives_sorted
            .into_iter()
            .map(|(op, (calls, histogram, total_bytes))| {
                let size_histogram = histogram
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .map(|(bucket, n)| (if bucket == 0 { 0 } else { 1u64 << (bucket - 1).min(63) }, *n))
                    .collect();
                (op, CollectiveStats { calls, size_histogram, total_bytes })
            })
            .collect();
        let mut progress: Vec<RankProgress> = Vec::new();
        for (host, state) in self.hosts {
            for (comm, pid, p) in state.progress {
                progress.push(RankProgress {
                    host: (!host.is_empty()).then(|| rename(&host)),
                    pid,
                    comm,
                    rank: p.rank,
                    last_op: p.last_op.and_then(|i| op_names.get(i)).cloned().unwrap_or_default(),
                    last_op_count: p.last_op_count,
                    calls: p.calls,
                    nranks: p.nranks,
                    recent: (0..RECENT_CALLS.min(p.calls as usize))
                        .rev()
                        .filter_map(|back| {
                            let at = (p.calls as usize - 1 - back) % RECENT_CALLS;
                            let (op_count, op, count, datatype) = *p.recent.get(at)?;
                            Some(CollectiveCall { op_count, op: op_names.get(op)?.clone(), count, datatype })
                        })
                        .collect(),
                });
            }
        }
        progress.sort_by(|a, b| (&a.host, a.pid, &a.comm).cmp(&(&b.host, b.pid, &b.comm)));
        let mut report = NcclReport {
            schema_version: NCCL_REPORT_SCHEMA_VERSION,
            graph_dumps: Vec::new(),
            inputs: Vec::new(),
            nccl_versions: self.versions.into_iter().collect(),
            hosts: host_list,
            processes: processes.len() as u64,
            nodes: None,
            communicators,
            network: Network {
                // Merged under each host's canonical name, as everywhere else.
                devices_by_host: {
                    let mut merged: BTreeMap<String, Vec<String>> = BTreeMap::new();
                    for (host, devices) in &self.network.devices_by_host {
                        let listed = merged.entry(rename(host)).or_default();
                        devices.iter().for_each(|d| push_unique(listed, d));
                    }
                    merged
                },
                // Without a `Using network` line, the NET transports of the
                // connection lines name it (`NET/Socket/0` -> `Socket`).
                used: if self.network.used.is_empty() {
                    let mut used: Vec<String> = Vec::new();
                    for via in self.via.keys() {
                        if let Some(name) = via.strip_prefix("NET/").and_then(|v| v.split('/').next())
                            && !name.is_empty()
                            && !used.iter().any(|u| u == name)
                        {
                            used.push(name.to_string());
                        }
                    }
                    used
                } else {
                    self.network.used.clone()
                },
                // The transport's devices; the socket transport's interfaces
                // only when nothing else was listed (they are listed always).
                devices: if self.network.devices.is_empty() {
                    self.network.socket_interfaces.clone()
                } else {
                    self.network.devices.clone()
                },
                ..self.network
            },
            env_overrides,
            warnings,
            warning_count,
            notices,
            framework_errors,
            logged_paths,
            error_codes: {
                let mut trail: Vec<((String, i64), (u64, usize))> = self.errors.into_iter().collect();
                trail.sort_by_key(|(_, (_, first))| *first);
                trail.into_iter().map(|((location, code), (count, _))| ErrorTrace { location, code, count }).collect()
            },
            collectives,
            progress,
            tuning: self
                .tuning
                .into_iter()
                .map(|((collective, algorithm, protocol, bytes), count)| TuningChoice {
                    collective,
                    algorithm,
                    protocol,
                    bytes,
                    count,
                })
                .collect(),
            init_complete: self.init_complete,
            via: self.via,
            first_lines: self.first_lines,
            timeouts: self.timeouts,
            nccl_tests: self.nccl_tests.finish(),
            tuning_table,
            tuning_ranges,
            lines: self.lines,
            nccl_lines: self.nccl_lines,
            unparsed_lines: self.unparsed_lines,
            not_kept,
        };
        report.annotate_from_logged_paths();
        let printed = report.communicators.iter().filter_map(|c| c.nnodes).max();
        let named = u32::try_from(report.hosts.len()).ok().filter(|n| *n > 0);
        report.nodes = printed.max(named);
        report
    }
}

/// Lines of processes that printed no init line (an excerpt, or 2.4-2.8 logs
/// whose ring lines come before `Init COMPLETE`) belong to the one
/// communicator whose printed size holds every rank they name; with none or
/// several such, they stay a communicator of their own.
fn merge_orphans(mut comms: Vec<CommState>, orphans: Option<usize>) -> Vec<CommState> {
    let Some(at) = orphans.filter(|&i| i < comms.len()) else { return comms };
    let needed = comms[at].highest_rank.map_or(0, |r| r + 1);
    let fits: Vec<usize> = comms
        .iter()
        .enumerate()
        .filter(|(i, c)| *i != at && c.nranks.is_some_and(|n| n >= needed && n > 1))
        .map(|(i, _)| i)
        .collect();
    let [target] = fits.as_slice() else { return comms };
    let target = *target;
    let orphan = comms.remove(at);
    let target = if target > at { target - 1 } else { target };
    if let Some(comm) = comms.get_mut(target) {
        comm.absorb(orphan);
    }
    comms
}

impl CommState {
    /// Takes in what another (unidentified) communicator learnt; facts
    /// already known here win.
    fn absorb(&mut self, other: CommState) {
        self.coll_nranks = self.coll_nranks.or(other.coll_nranks);
        if let Some(rank) = other.highest_rank {
            self.saw_rank(rank);
        }
        self.hosts_seen.extend(other.hosts_seen);
        self.nnodes = self.nnodes.or(other.nnodes);
        for (rank, info) in other.ranks {
            self.ranks.entry(rank).or_insert(info);
        }
        for (rank, host) in other.rank_hosts {
            self.rank_hosts.entry(rank).or_insert(host);
        }
        for (channel, order) in other.ring_orders {
            self.ring_orders.entry(channel).or_insert(order);
        }
        for (channel, next) in other.ring_next {
            let mine = self.ring_next.entry(channel).or_default();
            for (me, n) in next {
                mine.entry(me).or_insert(n);
            }
        }
        for (channel, prev) in other.ring_prev {
            let mine = self.ring_prev.entry(channel).or_default();
            for (me, p) in prev {
                mine.entry(me).or_insert(p);
            }
        }
        for (key, tree) in other.trees {
            self.trees.entry(key).or_insert(tree);
        }
        // Already counted against the budget when first read.
        self.connections.extend(other.connections);
        self.channels = self.channels.take().or(other.channels);
        for graph in other.graphs {
            if !self.graphs.contains(&graph) && self.graphs.len() < 64 {
                self.graphs.push(graph);
            }
        }
        self.init_complete.extend(other.init_complete);
        self.init_seconds = self.init_seconds.or(other.init_seconds);
    }

    fn saw_host(&mut self, host: Option<&str>, budget: &mut Budget) {
        if let Some(host) = host
            && !self.hosts_seen.contains(host)
            && budget.take(Table::CommHosts, 1)
        {
            self.hosts_seen.insert(host.to_string());
        }
    }

    fn saw_rank(&mut self, rank: u32) {
        self.highest_rank = Some(self.highest_rank.map_or(rank, |r| r.max(rank)));
    }

    fn add_tree(&mut self, channel: u32, parent: i64, me: i64, children: &[i64], budget: &mut Budget) {
        let Ok(me) = u32::try_from(me) else { return };
        self.saw_rank(me);
        for rank in children.iter().chain([&parent]).filter_map(|r| u32::try_from(*r).ok()) {
            self.saw_rank(rank);
        }
        if !self.trees.contains_key(&(channel, me)) && !budget.take(Table::Trees, 1 + children.len() as u64) {
            return;
        }
        let children = children.iter().filter_map(|c| u32::try_from(*c).ok()).collect();
        self.trees.insert((channel, me), (parent.max(-1), children));
    }

    fn into_report(self, rename: &dyn Fn(&str) -> String) -> Communicator {
        let mut ranks: Vec<RankInfo> = self.ranks.into_values().collect();
        for rank in &mut ranks {
            rank.host = rank.host.as_deref().map(rename);
        }
        // One lookup table: a scan of every rank per connection was quadratic
        // in the communicator's size.
        let rank_host: HashMap<u32, &str> = ranks.iter().filter_map(|r| Some((r.rank, r.host.as_deref()?))).collect();
        let host_of = |rank: u32| -> Option<String> {
            rank_host.get(&rank).map(|h| h.to_string()).or_else(|| self.rank_hosts.get(&rank).map(|h| rename(h)))
        };
        let listing = self.ring_orders.values().map(|o| o.len() as u32).max();
        let (nranks, nranks_source) = match (self.nranks, self.coll_nranks, listing, self.highest_rank) {
            (Some(n), ..) => (Some(n), Some("printed")),
            (None, Some(n), ..) => (Some(n), Some("coll-line")),
            (None, None, Some(n), _) => (Some(n), Some("ring-listing")),
            (None, None, None, Some(r)) => (Some(r + 1), Some("highest-rank-seen")),
            _ => (None, None),
        };
        let mut rings: Vec<Ring> =
            self.ring_orders.iter().map(|(channel, order)| Ring { channel: *channel, order: order.clone() }).collect();
        // Without rank 0's listing, a ring can still be read from the per-rank
        // neighbour lines, or from connection lines where each rank has one
        // outgoing edge in the channel (more would mean tree edges are mixed in).
        let mut edges: BTreeMap<u32, BTreeSet<(u32, u32)>> = BTreeMap::new();
        for (channel, next) in &self.ring_next {
            edges.entry(*channel).or_default().extend(next.iter().map(|(a, b)| (*a, *b)));
        }
        for (channel, prev) in &self.ring_prev {
            edges.entry(*channel).or_default().extend(prev.iter().map(|(me, p)| (*p, *me)));
        }
        if edges.is_empty() {
            for (channel, conn_index, from, to, direction, _) in &self.connections {
                // `a -> b [receive]` (printed by b) is the same edge as `a -> b [send]`.
                if let (0, Some(to), _) = (conn_index, to, direction) {
                    edges.entry(*channel).or_default().insert((*from, *to));
                }
            }
        }
        for (channel, pairs) in &edges {
            if self.ring_orders.contains_key(channel) {
                continue;
            }
            if let Some(order) = ring_from_edges(pairs, nranks) {
                rings.push(Ring { channel: *channel, order });
            }
        }
        rings.sort_by_key(|r| r.channel);
        let trees = self
            .trees
            .into_iter()
            .map(|((channel, rank), (parent, children))| TreeNode { channel, rank, parent, children })
            .collect();
        let connections = self
            .connections
            .into_iter()
            .map(|(channel, conn_index, from, to, direction, via)| {
                // Host names decide; without them, a one-node communicator has no
                // cross-node hop, and a hop NCCL sends over the network leaves
                // the node (NCCL uses NET within a node only when P2P and SHM
                // are both ruled out, which the via text would not show).
                let transport = transport_kind(&via);
                let over_network = matches!(
                    transport,
                    TransportKind::NetIb | TransportKind::NetSocket | TransportKind::NetOfi | TransportKind::NetOther
                ) || transport == TransportKind::CollNet;
                let cross_node = to
                    .and_then(|to| Some(host_of(from)? != host_of(to)?))
                    .or((self.nnodes == Some(1)).then_some(false))
                    .or(over_network.then_some(true));
                Connection {
                    channel,
                    conn_index,
                    from,
                    to,
                    direction,
                    transport,
                    gdr: via.contains("/GDRDMA"),
                    proxy_rank: proxy_rank(&via),
                    detail: via,
                    cross_node,
                    hardware: None,
                }
            })
            .collect();
        let hosts: BTreeSet<String> = ranks
            .iter()
            .filter_map(|r| r.host.clone())
            .chain(self.rank_hosts.values().map(|h| rename(h)))
            .chain(self.hosts_seen.iter().map(|h| rename(h)))
            .collect();
        Communicator {
            id: self.id,
            nranks,
            nranks_source: nranks_source.map(str::to_string),
            nnodes: self.nnodes.or((!hosts.is_empty()).then_some(hosts.len() as u32)),
            ranks,
            rings,
            trees,
            connections,
            channels: self.channels,
            graphs: self.graphs,
            init_complete: self.init_complete.into_iter().collect(),
            init_seconds: self.init_seconds,
        }
    }
}

/// The ring order (from rank 0) that a set of `a -> b` ring edges implies, or
/// `None` when they do not fix it: a rank with two successors, a cycle that
/// skips ranks, or more than one rank missing. With the communicator size known,
/// a single rank missing from the edges goes into the single gap.
fn ring_from_edges(edges: &BTreeSet<(u32, u32)>, nranks: Option<u32>) -> Option<Vec<u32>> {
    let mut next: BTreeMap<u32, u32> = BTreeMap::new();
    let mut prev: BTreeMap<u32, u32> = BTreeMap::new();
    for &(a, b) in edges {
        if a == b || next.insert(a, b).is_some_and(|old| old != b) || prev.insert(b, a).is_some_and(|old| old != a) {
            return None;
        }
    }
    // `placed` answers "already in the ring?" in constant time: a linear
    // search of the ring so far made a 250,000-rank chain take seconds.
    let mut placed_ranks: HashSet<u32> = HashSet::from([0]);
    let mut forward = vec![0u32];
    while let Some(&n) = next.get(forward.last()?) {
        if n == 0 {
            break;
        }
        if !placed_ranks.insert(n) {
            return None;
        }
        forward.push(n);
    }
    let closed = next.get(forward.last()?) == Some(&0);
    let ranks: BTreeSet<u32> = next.keys().chain(prev.keys()).copied().collect();
    let total = nranks.map_or(ranks.len(), |n| n as usize);
    if closed {
        return (forward.len() == total && ranks.len() == total).then_some(forward);
    }
    let mut backward = Vec::new();
    let mut at = 0u32;
    while let Some(&p) = prev.get(&at) {
        if !placed_ranks.insert(p) {
            return None;
        }
        backward.push(p);
        at = p;
    }
    backward.reverse();
    let placed = forward.len() + backward.len();
    // At most one rank may be missing: a printed size far above the ranks
    // seen (a hostile `nranks 4294967295`) is not walked rank by rank.
    if total > placed + 1 {
        return None;
    }
    let missing: Vec<u32> = (0..nranks?).filter(|r| !placed_ranks.contains(r)).collect();
    match missing.as_slice() {
        [] if placed == total => Some([forward, backward].concat()),
        [only] if placed + 1 == total => Some([forward, vec![*only], backward].concat()),
        _ => None,
    }
}

/// Hosts as printed, mapped to a canonical name: a name that is another known
/// name with junk glued in front (application output without a newline) is
/// folded into that name.
fn canonical_hosts(lines: &HashMap<String, u64>) -> HashMap<String, String> {
    // Each name's proper suffixes are looked up (linear in the names' length,
    // not quadratic in their number): the longest known one printed more often wins.
    lines
        .iter()
        .map(|(name, count)| {
            let target = name
                .char_indices()
                .skip(1)
                .map(|(at, _)| &name[at..])
                .find(|suffix| lines.get(*suffix).is_some_and(|other| other > count))
                .map_or_else(|| name.clone(), str::to_string);
            (name.clone(), target)
        })
        .collect()
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

/// The transport named by the text after `via`.
pub fn transport_kind(via: &str) -> TransportKind {
    if via.starts_with("P2P/") {
        TransportKind::P2p
    } else if via.starts_with("SHM/") || via.starts_with("direct shared memory") {
        TransportKind::Shm
    } else if via.starts_with("NET/IB") {
        TransportKind::NetIb
    } else if via.starts_with("NET/Socket") {
        TransportKind::NetSocket
    } else if via.starts_with("NET/AWS Libfabric") || via.starts_with("NET/Libfabric") || via.starts_with("NET/OFI") {
        TransportKind::NetOfi
    } else if via.starts_with("NET/") {
        TransportKind::NetOther
    } else if via.starts_with("COLLNET/") {
        TransportKind::CollNet
    } else {
        TransportKind::Other
    }
}

/// `NET/IBext_v8/0(4)/GDRDMA` -> 4: PXN through local rank 4.
fn proxy_rank(via: &str) -> Option<u32> {
    let open = via.find('(')?;
    let close = via[open..].find(')')? + open;
    via[open + 1..close].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_only_where_the_edges_fix_them() {
        let set = |pairs: &[(u32, u32)]| pairs.iter().copied().collect::<BTreeSet<_>>();
        assert_eq!(ring_from_edges(&set(&[(0, 1), (1, 3), (3, 2), (2, 0)]), None), Some(vec![0, 1, 3, 2]));
        // Rank 0 says 2 -> 0 -> 1; with 4 ranks, 3 must sit between 1 and 2.
        assert_eq!(ring_from_edges(&set(&[(2, 0), (0, 1)]), Some(4)), Some(vec![0, 1, 3, 2]));
        assert_eq!(ring_from_edges(&set(&[(2, 0), (0, 1)]), Some(5)), None, "two ranks missing");
        assert_eq!(ring_from_edges(&set(&[(0, 1), (1, 0), (2, 3), (3, 2)]), None), None);
        assert_eq!(ring_from_edges(&set(&[(0, 1), (0, 2), (1, 0), (2, 0)]), None), None, "tree edges mixed in");
    }

    #[test]
    fn glued_hostnames_fold_into_the_real_one() {
        let lines: HashMap<String, u64> = [("mew0".to_string(), 100), ("-1mew0".to_string(), 1)].into();
        assert_eq!(canonical_hosts(&lines)["-1mew0"], "mew0");
        assert_eq!(proxy_rank("NET/IBext_v8/0(4)/GDRDMA"), Some(4));
        assert_eq!(transport_kind("NET/AWS Libfabric/0/GDRDMA"), TransportKind::NetOfi);
    }
}
