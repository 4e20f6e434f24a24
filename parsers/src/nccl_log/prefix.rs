//! Splitting one log line into NCCL's prefix and the message.
//!
//! NCCL writes `host:pid:tid [cudaDev] NCCL INFO msg` and
//! `host:pid:tid [cudaDev] file:line [(function)] NCCL WARN msg`. In the wild the
//! prefix is wrapped in launcher tags (`[1,0]<stdout>:`, `(RayTrainWorker pid=...)`,
//! `[rank3]:`), preceded by a timestamp (2.26+ WARN), redacted, stripped, or cut in
//! half by another process writing at the same moment. The prefix is therefore
//! read from the marker leftwards, taking only what has NCCL's shape.

use super::bytes::{digits, short_find};

/// Which NCCL logger produced the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Trace,
    Call,
    Abort,
    /// No marker: a bare message (version line, prefix-stripped logs) or not NCCL at all.
    Bare,
}

/// The parts of one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogLine<'a> {
    pub level: Level,
    pub host: Option<&'a str>,
    pub pid: Option<u64>,
    pub tid: Option<u64>,
    pub cuda_dev: Option<u32>,
    /// WARN lines: the `file:line` of the code that warned.
    pub source: Option<&'a str>,
    pub message: &'a str,
    /// Another process's line was cut off by this one's prefix.
    pub interrupted: bool,
}

const MARKERS: [(&str, Level); 5] = [
    ("NCCL INFO", Level::Info),
    ("NCCL WARN", Level::Warn),
    ("NCCL TRACE", Level::Trace),
    ("NCCL CALL", Level::Call),
    ("NCCL ABORT", Level::Abort),
];

static MARKER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"NCCL "));

/// Finds the last level marker in the line: (start, end, level, markers seen).
fn scan_markers(line: &str) -> (Option<(usize, usize, Level)>, usize) {
    let mut found = None;
    let mut seen = 0;
    for (start, end, level) in markers(line) {
        found = Some((start, end, level));
        seen += 1;
    }
    if seen == 0
        && let Some(legacy) = legacy_marker(line)
    {
        return (Some(legacy), 1);
    }
    (found, seen)
}

/// Every `NCCL INFO`/`NCCL WARN`/... marker of the line: (start, end, level).
fn markers(line: &str) -> impl Iterator<Item = (usize, usize, Level)> + '_ {
    MARKER.find_iter(line.as_bytes()).filter_map(move |start| {
        let rest = line.get(start..)?;
        let (marker, level) = MARKERS.iter().find(|(m, _)| rest.starts_with(m))?;
        let end = start + marker.len();
        // The marker ends the prefix: a space or the end of line follows.
        (line[end..].is_empty() || line[end..].starts_with(' ')).then_some((start, end, *level))
    })
}

/// NCCL 2.2 and earlier wrote `host:pid:tid [0] INFO msg` and
/// `host:pid:tid [0] file:line WARN msg`, without the word NCCL. Only that exact
/// shape is taken (a `[digits]` device before INFO; `[digits] file:line` before
/// WARN), so an application's own `INFO`/`WARN` lines stay application output.
fn legacy_marker(line: &str) -> Option<(usize, usize, Level)> {
    for (word, level) in [(" INFO", Level::Info), (" WARN", Level::Warn)] {
        let Some(at) = memchr::memmem::find(line.as_bytes(), word.as_bytes()) else { continue };
        let end = at + word.len();
        if !(line[end..].is_empty() || line[end..].starts_with(' ')) {
            continue;
        }
        let mut tokens = Tokens { text: &line[..at] };
        let mut next = tokens.next_back();
        if level == Level::Warn {
            // `file:line` between the device and the word.
            next = next.filter(|t| t.rsplit_once(':').is_some_and(|(_, n)| n.parse::<u64>().is_ok()));
            next?;
            next = tokens.next_back();
        }
        let device = next.and_then(|t| t.strip_prefix('[')).and_then(|t| t.strip_suffix(']'));
        if device.is_none_or(|d| d.parse::<u32>().is_err()) {
            continue;
        }
        if tokens.next_back().map(host_pid_tid).is_some_and(|(_, pid, _)| pid.is_some()) {
            return Some((at + 1, end, level));
        }
    }
    None
}

/// Where each NCCL line glued into this one begins (another process wrote
/// its line before this one's newline): for every marker after the first,
/// the offset of its `host:pid:tid` token and that token's host part, which
/// may carry the end of the previous message glued to it.
pub fn glued_starts(line: &str) -> Vec<(usize, &str)> {
    let mut starts = Vec::new();
    for (start, _, level) in markers(line).skip(1) {
        let before = line[..start].trim_end();
        let mut tokens = Tokens { text: before };
        let mut next = tokens.next_back();
        if level == Level::Warn || level == Level::Trace {
            if next.is_some_and(|t| t.starts_with('(') && t.ends_with(')')) {
                next = tokens.next_back();
            }
            if next.is_some_and(|t| t.rsplit_once(':').is_some_and(|(_, n)| n.parse::<u64>().is_ok())) {
                next = tokens.next_back();
            }
        }
        // A flattened paste (a markdown quote joins its lines with spaces)
        // of lines whose prefix is the device tag alone: `... [0] NCCL INFO ...`.
        let mut bracket = None;
        if next.is_some_and(|t| t.starts_with('[') && t.ends_with(']')) {
            bracket = Some(tokens.text.len());
            next = tokens.next_back();
        }
        let Some(token) = next.filter(|t| host_pid_tid(t).1.is_some()) else {
            if let Some(offset) = bracket.filter(|_| line.starts_with('[')) {
                starts.push((offset, ""));
            }
            continue;
        };
        // `tokens.text` is what is left before the token: the token starts there.
        let offset = tokens.text.len();
        let host = token.split(':').next().unwrap_or("");
        starts.push((offset, host));
    }
    starts
}

fn last_marker(line: &str) -> Option<(usize, usize, Level)> {
    scan_markers(line).0
}

/// The text before the last marker's prefix, when another process's line was
/// cut there: it holds the interrupted line's own prefix.
pub fn interrupted_part(line: &str) -> Option<&str> {
    let (start, _, _) = last_marker(line)?;
    let before = &line[..start];
    last_marker(before).map(|(_, end, _)| &line[..end])
}

/// Splits a line (already without its line ending).
pub fn split(line: &str) -> LogLine<'_> {
    let (marker, markers_seen) = scan_markers(line);
    let Some((start, end, level)) = marker else {
        if let Some(plugin_line) = plugin_test_line(line) {
            return plugin_line;
        }
        return LogLine {
            level: Level::Bare,
            host: None,
            pid: None,
            tid: None,
            cuda_dev: None,
            source: None,
            message: without_repeat_note(strip_launcher_tag(line.trim())),
            interrupted: false,
        };
    };
    let message = without_repeat_note(line[end..].trim());
    let before = line[..start].trim_end();
    // Another marker before this one means another process's line was cut.
    let interrupted = markers_seen > 1;
    let mut tokens = Tokens { text: before };
    let mut next = tokens.next_back();
    let mut source = None;
    if level == Level::Warn || level == Level::Trace {
        // `(function)` (2.30.7), then `file:line` (TRACE: `function:line`, after
        // a milliseconds field).
        if next.is_some_and(|t| t.starts_with('(') && t.ends_with(')')) {
            next = tokens.next_back();
        }
        if next.is_some_and(|t| t.rsplit_once(':').is_some_and(|(_, n)| n.parse::<u64>().is_ok())) {
            source = next;
            next = tokens.next_back();
        }
        if level == Level::Trace && next.is_some_and(|t| t.parse::<f64>().is_ok()) {
            next = tokens.next_back();
        }
    }
    let mut cuda_dev = None;
    if let Some(dev) = next.and_then(|t| t.strip_prefix('[')).and_then(|t| t.strip_suffix(']')) {
        cuda_dev = dev.parse().ok();
        next = tokens.next_back();
    }
    let (host, pid, tid) = next.map_or((None, None, None), host_pid_tid);
    LogLine { level, host, pid, tid, cuda_dev, source, message, interrupted }
}

/// aws-ofi-nccl's own test programs (nccl_message_transfer, ring, the unit
/// tests) run the plugin without NCCL and print its log lines themselves:
/// `WARN: Function: create_nccl_ofi_component Line: 459: NET/OFI Couldn't open
/// AV. ...` (tests/functional and tests/unit, every release since 2018), often
/// behind a launcher's tag (`10.3.35.83: ` from pdsh). The level word must stand
/// at the start or after such a tag, and `Line: N:` must follow the function,
/// so an application's own `INFO: Function:` prose stays application output.
fn plugin_test_line(line: &str) -> Option<LogLine<'_>> {
    // The level word opens the line or follows its first token (the tag):
    // two fixed places, so a bare line costs a few byte compares, not a scan.
    let after_tag = short_find(line.as_bytes(), b' ').map(|space| space + 1);
    let (start, level, word) = [Some(0), after_tag].into_iter().flatten().find_map(|at| {
        let rest = line.get(at..)?;
        [("WARN", Level::Warn), ("INFO", Level::Info), ("TRACE", Level::Trace)]
            .into_iter()
            .find(|(word, _)| rest.starts_with(word) && rest[word.len()..].starts_with(": Function: "))
            .map(|(word, level)| (at, level, word))
    })?;
    // Before the level: nothing, or one launcher tag ending in `:` or `]`.
    let tag = line[..start].trim();
    if !(tag.is_empty() || tag.ends_with(':') || tag.ends_with(']')) {
        return None;
    }
    let at = start + word.len();
    let rest = &line[at + ": Function: ".len()..];
    let (function, rest) = rest.split_once(" Line: ")?;
    let (number, message) = rest.split_once(": ").or_else(|| rest.strip_suffix(':').map(|n| (n, "")))?;
    if function.contains(' ') || digits(number).is_none() {
        return None;
    }
    Some(LogLine {
        level,
        host: None,
        pid: None,
        tid: None,
        cuda_dev: None,
        source: None,
        message: without_repeat_note(message.trim()),
        interrupted: false,
    })
}

/// Space-separated tokens taken from the right, on bytes (this runs for every line).
struct Tokens<'a> {
    text: &'a str,
}

impl<'a> Tokens<'a> {
    fn next_back(&mut self) -> Option<&'a str> {
        let trimmed = self.text.trim_end_matches(' ');
        if trimmed.is_empty() {
            return None;
        }
        let start = memchr::memrchr(b' ', trimmed.as_bytes()).map_or(0, |i| i + 1);
        self.text = &trimmed[..start];
        Some(&trimmed[start..])
    }
}

/// `host:pid:tid`, possibly glued to a launcher tag (`[1,0]<stdout>:host:1:2`) or
/// a redacted `pod-id:num:num`.
fn host_pid_tid(token: &str) -> (Option<&str>, Option<u64>, Option<u64>) {
    let bytes = token.as_bytes();
    let Some(second) = bytes.iter().rposition(|b| *b == b':') else { return (None, None, None) };
    let Some(first) = bytes[..second].iter().rposition(|b| *b == b':') else { return (None, None, None) };
    // A redacted prefix (`pod-id:num:num`) names no real host or process.
    let (Some(pid), Some(tid)) = (digits(&token[first + 1..second]), digits(&token[second + 1..])) else {
        return (None, None, None);
    };
    let head = &token[..first];
    // A tab ends whatever stood before the host too: log viewers' exports put
    // their timestamp columns before the line with tabs (`39.643\thost:1:2`).
    let host_start = head.bytes().rposition(|b| matches!(b, b':' | b'>' | b']' | b')' | b'\t')).map_or(0, |i| i + 1);
    let host = &head[host_start..];
    let host = if host.is_empty() { redacted_host(head).unwrap_or(host) } else { host };
    ((!host.is_empty()).then_some(host), Some(pid), Some(tid))
}

/// A host name the user replaced with a placeholder before posting
/// (`<host>:38:10588`, `<cluster_name>:462:635`, `[hostname]:1:2`): one
/// host all the same. Launcher tags (`<stdout>`, `[1,0]`) are not hosts.
fn redacted_host(head: &str) -> Option<&str> {
    let inner = head
        .strip_prefix('<')
        .and_then(|h| h.strip_suffix('>'))
        .or_else(|| head.strip_prefix('[').and_then(|h| h.strip_suffix(']')))?;
    let word = !inner.is_empty()
        && inner.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && inner.bytes().any(|b| b.is_ascii_alphabetic());
    (word && !matches!(inner, "stdout" | "stderr" | "stdin")).then_some(head)
}

/// The common shape `host:pid:tid [dev] NCCL INFO message`, read left to right
/// without scanning the whole line: `None` for anything else (tags with
/// spaces, WARN lines, interleaving), which [`split`] then reads.
pub fn split_plain_info(line: &str) -> Option<LogLine<'_>> {
    let bytes = line.as_bytes();
    let space = short_find(bytes, b' ')?;
    let rest = line.get(space + 1..)?.strip_prefix('[')?;
    let close = short_find(rest.as_bytes(), b']')?;
    let message = rest.get(close + 1..)?.strip_prefix(" NCCL INFO ")?;
    let (host, pid, tid) = host_pid_tid(&line[..space]);
    pid?;
    Some(LogLine {
        level: Level::Info,
        host,
        pid,
        tid,
        cuda_dev: digits(&rest[..close]).and_then(|d| u32::try_from(d).ok()),
        source: None,
        message,
        interrupted: false,
    })
}

/// Removes a launcher's tag from a bare line: `[1,0]<stdout>:`, `[rank0]:`.
/// The line without Ray's log deduplication note (`... [repeated 15x across
/// cluster]`), which Ray appends to a line other workers also printed.
fn without_repeat_note(message: &str) -> &str {
    let Some(body) = message.strip_suffix(" across cluster]") else { return message };
    let Some((kept, note)) = body.rsplit_once(" [repeated ") else { return message };
    match note.strip_suffix('x').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) {
        true => kept.trim_end(),
        false => message,
    }
}

/// The text after Ray's actor tag (`(RayWorkerVllm pid=5085) `, `(pid=909597) `),
/// or `None` when the line does not open with one.
pub(crate) fn after_ray_tag(line: &str) -> Option<&str> {
    let end = super::wrapper::ray_tag_end(line)?;
    Some(line[end + 2..].trim_start())
}

/// The launcher's tags before a line's text (`(VllmWorkerProcess pid=3985) `,
/// `[rank1]:`): who printed it, when many processes share one output.
pub(crate) fn launcher_tag(line: &str) -> &str {
    let line = line.trim_start();
    line[..line.len() - strip_launcher_tag(line).len()].trim_end()
}

/// Ray's actor tag comes first; a launcher's rank tag may follow it
/// (`(...) [rank1]:`).
fn strip_launcher_tag(line: &str) -> &str {
    let line = after_ray_tag(line).unwrap_or(line);
    // A tag is short and one word (`[1,0]<stdout>:`, `[rank12]:`); a line that
    // only opens with a bracket (UCX's `[1721186746.658016] [node02:10366:1] ...
    // region [0x0..0x0]: Invalid parameter`) keeps its text.
    if line.starts_with('[')
        && let Some(end) = line.find(">:").or_else(|| line.find("]:"))
        && end < MAX_TAG_CHARS
        && !line[..end].contains(char::is_whitespace)
    {
        return line[end + 2..].trim_start();
    }
    line
}

/// The longest launcher tag read (`[1,1023]<stderr>:` is 17 characters).
const MAX_TAG_CHARS: usize = 40;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ray_repeat_notes_are_not_part_of_the_message() {
        let line = split(
            "(RayTrainWorker pid=954, ip=10.67.132.202) host:954:3133 [6] NCCL INFO Using network Socket [repeated 15x across cluster]",
        );
        assert_eq!((line.host, line.message), (Some("host"), "Using network Socket"));
        // Only Ray's exact note is dropped.
        assert_eq!(
            split("host:1:2 [0] NCCL INFO x [repeated many across cluster]").message,
            "x [repeated many across cluster]"
        );
    }

    #[test]
    fn a_ray_actor_tag_before_a_framework_line_is_dropped() {
        // Corpus batch AD (vLLM on Ray): the watchdog's line behind Ray's tag.
        let line =
            split("(RayWorkerWrapper pid=2376582) [rank1]:[E ProcessGroupNCCL.cpp:523] [Rank 1] Watchdog caught");
        assert_eq!(line.message, "[E ProcessGroupNCCL.cpp:523] [Rank 1] Watchdog caught");
        let line = split("(RayWorkerVllm pid=5085) [E ProcessGroupNCCL.cpp:475] [Rank 4] Watchdog caught");
        assert_eq!(line.message, "[E ProcessGroupNCCL.cpp:475] [Rank 4] Watchdog caught");
        // Not Ray's tag: kept.
        assert_eq!(split("(see below) text").message, "(see below) text");
    }

    #[test]
    fn a_redacted_host_is_one_host() {
        // Corpus 749 and 750 (batch AA): host names replaced before posting.
        let line = split("<host>:38:10588 [7] NCCL INFO Using network IBext_v8");
        assert_eq!((line.host, line.pid), (Some("<host>"), Some(38)));
        let line = split("<cluster_name>:462:635 [3] proxy.cc:1484 NCCL WARN [Service thread] Error");
        assert_eq!(line.host, Some("<cluster_name>"));
        assert_eq!(split("[hostname]:1:2 [0] NCCL INFO x").host, Some("[hostname]"));
        // Launcher tags before an empty host stay tags.
        assert_eq!(split("<stdout>:1:2 [0] NCCL INFO x").host, None);
        assert_eq!(split("[1,0]:1:2 [0] NCCL INFO x").host, None);
    }

    #[test]
    fn info_warn_and_launcher_tags() {
        let line = split("gpu34:1234:5678 [3] NCCL INFO Channel 00/02 :    0   1");
        assert_eq!(
            (line.level, line.host, line.pid, line.tid, line.cuda_dev),
            (Level::Info, Some("gpu34"), Some(1234), Some(5678), Some(3))
        );
        assert_eq!(line.message, "Channel 00/02 :    0   1");

        let warn = split("[2026-04-22 21:34:20] host:202016:202235 [0] misc/shmutils.cc:88 NCCL WARN Error: failed");
        assert_eq!(
            (warn.level, warn.host, warn.source, warn.message),
            (Level::Warn, Some("host"), Some("misc/shmutils.cc:88"), "Error: failed")
        );

        let new_warn = split("h:1:2 [0] transport/net_ib.cc:99 (ncclIbConnect) NCCL WARN NET/IB : oops");
        assert_eq!((new_warn.source, new_warn.message), (Some("transport/net_ib.cc:99"), "NET/IB : oops"));

        let mpi = split("[1,0]<stdout>:ip-10-0-0-1:44:55 [0] NCCL INFO Using network AWS Libfabric");
        assert_eq!((mpi.host, mpi.pid), (Some("ip-10-0-0-1"), Some(44)));

        let ray =
            split("(RayTrainWorker pid=615, ip=10.72.7.6) worker-l4:615:18953 [2] NCCL INFO AllReduce: opCount 1");
        assert_eq!((ray.host, ray.cuda_dev), (Some("worker-l4"), Some(2)));
    }

    #[test]
    fn nccl_22_lines_without_the_word_nccl() {
        let info = split("node1:1234:1250 [0] INFO NET : Using interface eth0:10.0.0.1<0>");
        assert_eq!((info.level, info.host, info.pid, info.cuda_dev), (Level::Info, Some("node1"), Some(1234), Some(0)));
        assert_eq!(info.message, "NET : Using interface eth0:10.0.0.1<0>");
        let warn = split("node1:1234:1250 [0] include/socket.h:360 WARN Call to connect failed : Connection timed out");
        assert_eq!((warn.level, warn.source), (Level::Warn, Some("include/socket.h:360")));
        assert_eq!(warn.message, "Call to connect failed : Connection timed out");
        // An application's own INFO/WARN words are not NCCL's.
        assert_eq!(split("2024-01-01 12:00:00 INFO starting epoch 3").level, Level::Bare);
        assert_eq!(split("[W] WARN something odd").level, Level::Bare);
    }

    #[test]
    fn a_launchers_rank_tag_before_the_prefix() {
        let line = split("[3] node7:4021:4100 [1] NCCL INFO Channel 00 : 3[1] -> 4[0] via NET/IB/0");
        assert_eq!((line.host, line.pid, line.cuda_dev), (Some("node7"), Some(4021), Some(1)));
        assert_eq!(line.message, "Channel 00 : 3[1] -> 4[0] via NET/IB/0");
    }

    #[test]
    fn glued_writes_are_cut_before_the_second_prefix() {
        let text = "hostA:1:2 [0] NCCL INFO Ring 00 : 0[0] -> 1[1] via P2P/IPChostA:1:3 [1] NCCL INFO Ring 00 : 1[1] -> 0[0] via P2P/IPC";
        let starts = glued_starts(text);
        assert_eq!(starts.len(), 1);
        // The host token carries the end of the first message; the reader cuts it
        // where a known host name begins.
        assert_eq!(starts[0].1, "P2P/IPChostA");
        assert_eq!(&text[starts[0].0..starts[0].0 + 12], "P2P/IPChostA");
    }

    #[test]
    fn interleaved_redacted_and_bare() {
        let line = split("hostA:1:2 [6] NCCL INFO hostA:1:3 [7] NCCL INFO Ring 04 : 7[7] -> 3[3] via P2P/IPC");
        assert_eq!((line.tid, line.cuda_dev, line.interrupted), (Some(3), Some(7), true));
        assert_eq!(line.message, "Ring 04 : 7[7] -> 3[3] via P2P/IPC");

        let redacted = split("pod-id:num:num [3] NCCL INFO NVLS multicast support is not available on dev 3");
        assert_eq!((redacted.host, redacted.pid, redacted.cuda_dev), (None, None, Some(3)));

        let bare = split("[1,0]<stdout>:NCCL version 2.12.7+cuda11.4");
        assert_eq!((bare.level, bare.message), (Level::Bare, "NCCL version 2.12.7+cuda11.4"));
        assert_eq!(split("").level, Level::Bare);
        assert_eq!(split("NCCL INFO").message, "");
    }

    /// aws-ofi-nccl's test programs' logger (tests/functional, tests/unit):
    /// the level word, the function and the line before the plugin's message.
    #[test]
    fn plugin_test_programs_lines_are_read() {
        let warn = split("WARN: Function: create_nccl_ofi_component Line: 459: NET/OFI Couldn't open AV. RC: -22");
        assert_eq!((warn.level, warn.message), (Level::Warn, "NET/OFI Couldn't open AV. RC: -22"));
        // Behind pdsh's tag, and at the other levels.
        let tagged = split("10.3.35.83: INFO: Function: ofi_init Line: 1102: NET/OFI Setting RDMAV_FORK_SAFE to 1.");
        assert_eq!((tagged.level, tagged.message), (Level::Info, "NET/OFI Setting RDMAV_FORK_SAFE to 1."));
        assert_eq!(split("TRACE: Function: main Line: 58: NET/OFI Using CUDA device 0").level, Level::Trace);
        // An application's own prose with those words stays a bare line.
        for text in [
            "INFO: Function: the loader is ready",
            "Note that WARN: Function: f Line: 3: x",
            "DEBUG: Function: f Line: 3: x",
            "WARN: Function: f Line: many: x",
        ] {
            assert_eq!(split(text).level, Level::Bare, "{text}");
        }
    }
}
