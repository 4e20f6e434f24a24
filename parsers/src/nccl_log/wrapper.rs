//! What log collectors put before each line of a job's output.
//!
//! Few users read NCCL's output as NCCL wrote it: `kubectl logs --timestamps`,
//! CloudWatch, Loki and journald put a timestamp (and journald its host and
//! program) before every line; `srun -l` the task's number; pdsh and
//! DeepSpeed's launcher the host; `mpirun --tag-output` the job and rank;
//! docker compose the service; `kubectl logs --prefix` the pod; a terminal
//! capture colours. Each such wrapper is taken off here, once, before a line is
//! read, so that every reader after this one sees the line NCCL or the
//! framework printed, whatever carried it. The wrappers that say who printed
//! the line (a host, a rank, a pod) are kept as the line's tag.
//!
//! Only exact shapes are taken: a wrapper is removed when the whole of it has
//! its collector's form, so an application's own text (`RuntimeError: ...`,
//! `[E ProcessGroupNCCL.cpp:523] ...`, UCX's `[1721186746.658016] [node:1:2]`)
//! is left as it is.

use super::bytes::short_find;

/// Wrappers nest a few deep at most (a collector's timestamp, then the
/// launcher's tag, then torchrun's `[rank3]:`); the bound keeps the work
/// linear in a hostile line of thousands of them.
const MAX_WRAPPERS: usize = 6;

/// The longest tag a wrapper may be (a pod's `[pod/name/container]` is the
/// longest of the real ones: Kubernetes names are 63 characters each).
const MAX_TAG_BYTES: usize = 200;

/// A line without its collectors' wrappers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unwrapped<'a> {
    /// The line as NCCL or the framework printed it.
    pub text: &'a str,
    /// The wrappers that name who printed it, as they stood (`3:`,
    /// `node-7:`, `[1,3]<stdout>:`, `trainer-1 |`), or empty.
    pub tag: &'a str,
    /// The rank the tag gives, where it gives one (`srun -l`'s task number,
    /// `mpirun`'s `[job,rank]`, torchrun's `[rankN]:`).
    pub rank: Option<u32>,
}

/// Takes off every wrapper before the line's text.
pub fn unwrap(line: &str) -> Unwrapped<'_> {
    let mut rest = line;
    let mut tag_start = None;
    let mut tag_end = 0;
    let mut rank = None;
    for _ in 0..MAX_WRAPPERS {
        let offset = line.len() - rest.len();
        let Some(wrapper) = leading_wrapper(rest) else { break };
        if let Some((from, to)) = wrapper.tag {
            tag_start.get_or_insert(offset + from);
            tag_end = offset + to;
            rank = wrapper.rank.or(rank);
        }
        rest = rest[wrapper.len..].trim_start_matches([' ', '\t']);
    }
    let tag = tag_start.map_or("", |start| line[start..tag_end].trim());
    Unwrapped { text: rest, tag, rank }
}

/// How a colour sequence's ESC byte reaches us when a paste did not keep it
/// as a byte: drawn (`←[36m` from a Windows console, `␛[36m`), written out
/// (`^[[36m` from `cat -v` or less, `ESC[36m` from an editor, `\x1b[36m`,
/// `\033[36m`, `\e[36m` from a string's repr), or the byte itself.
const ESCAPE_FORMS: [&str; 8] = ["\x1b", "\u{2190}", "\u{241b}", "^[", "ESC", "\\x1b", "\\033", "\\e"];

/// The length of an SGR sequence's parameters and final `m` after its `[`
/// (`36m`, `0m`, `1;32m`), if `rest` starts with one.
fn sgr_len(rest: &[u8]) -> Option<usize> {
    let params = rest.iter().take(8).take_while(|b| b.is_ascii_digit() || **b == b';').count();
    (params > 0 && rest.get(params) == Some(&b'm')).then_some(params + 1)
}

/// The colour sequence whose `[` is at `at`, as (start, end) of what to take
/// out: with its ESC in any of [`ESCAPE_FORMS`], or bare (the ESC lost in
/// the paste) where a colour stands for sure: at the line's start or end,
/// or around a launcher's tag (`[36m(RayWorkerWrapper pid=627)[0m`).
fn colour_at(line: &str, at: usize) -> Option<(usize, usize)> {
    let end = at + 1 + sgr_len(&line.as_bytes()[at + 1..])?;
    let head = &line[..at];
    if let Some(form) = ESCAPE_FORMS.iter().find(|f| head.ends_with(**f)) {
        return Some((at - form.len(), end));
    }
    let tail = &line[end..];
    let bare =
        head.trim_start().is_empty() || head.ends_with(')') || tail.starts_with('(') || tail.trim_end().is_empty();
    bare.then_some((at, end))
}

/// Whether the line holds a terminal's colour codes (`ESC [ ... m`, in any
/// form a paste left them), which [`without_colours`] takes out.
pub fn has_colours(line: &str) -> bool {
    memchr::memchr(0x1b, line.as_bytes()).is_some()
        || memchr::memchr_iter(b'[', line.as_bytes()).any(|at| colour_at(line, at).is_some())
}

/// The line without its SGR colour sequences (`ESC [ 36 m`, `ESC [ 0 m`, and
/// the forms of [`ESCAPE_FORMS`]), written into `out`. Any other escape
/// stays, to be shown escaped.
pub fn without_colours(line: &str, out: &mut String) {
    out.clear();
    let mut from = 0;
    for at in memchr::memchr_iter(b'[', line.as_bytes()) {
        if at < from {
            continue;
        }
        if let Some((start, end)) = colour_at(line, at).filter(|(start, _)| *start >= from) {
            out.push_str(&line[from..start]);
            from = end;
        }
    }
    out.push_str(&line[from..]);
}

/// Whether the line went through a rich editor that turned `file.cc:NNN`
/// into a link (`[p2p.cc:783](https://p2p.cc:783/)`: GitHub's editor takes
/// a source location for a host and port), which [`without_autolinks`]
/// undoes.
pub fn has_autolinks(line: &str) -> bool {
    memchr::memmem::find(line.as_bytes(), b"](http").is_some()
}

/// The line with every link whose address is its own text (`[x](https://x/)`)
/// back to that text, written into `out`; other links stay as written.
pub fn without_autolinks(line: &str, out: &mut String) {
    out.clear();
    let mut rest = line;
    while let Some(at) = rest.find("](http") {
        let (before, after) = (&rest[..at], &rest[at + 2..]);
        let open = before.rfind('[');
        let close = after.find(')');
        let undone = open.zip(close).and_then(|(open, close)| {
            let text = &before[open + 1..];
            let address = after[..close].split_once("://")?.1.trim_end_matches('/');
            (address == text).then_some((open, text, close))
        });
        match undone {
            Some((open, text, close)) => {
                out.push_str(&before[..open]);
                out.push_str(text);
                rest = &after[close + 1..];
            }
            None => {
                out.push_str(&rest[..at + 2]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
}

struct Wrapper {
    /// Bytes the wrapper takes, separator included.
    len: usize,
    /// Where, within the wrapper, it names who printed the line (kept as
    /// the tag): `None` for a time alone.
    tag: Option<(usize, usize)>,
    rank: Option<u32>,
}

impl Wrapper {
    fn time(len: usize) -> Option<Wrapper> {
        Some(Wrapper { len, tag: None, rank: None })
    }
    fn speaker(len: usize, tag_len: usize, rank: Option<u32>) -> Option<Wrapper> {
        Some(Wrapper { len, tag: Some((0, tag_len)), rank })
    }
}

/// The wrapper the line opens with, if any. Most lines open with NCCL's own
/// `host:pid:tid`, whose first token ends in digits: they cost one short
/// search for a space.
fn leading_wrapper(line: &str) -> Option<Wrapper> {
    let first = *line.as_bytes().first()?;
    match first {
        b'0'..=b'9' => {
            iso_time(line).or_else(|| clock_time(line)).or_else(|| task_label(line)).or_else(|| host_tag(line))
        }
        b'>' => quote_marker(line),
        b' ' => task_label(line),
        b'[' => bracketed_time(line).or_else(|| bracket_tag(line)).or_else(|| pod_tag(line)),
        b'(' => ray_tag(line),
        _ => syslog_header(line).or_else(|| host_tag(line)).or_else(|| service_tag(line)),
    }
}

/// `2024-05-01T12:00:00.123456789Z `, `2024-05-01 12:00:00,123 `,
/// `2024-05-01T12:00:00+02:00 `: ISO 8601 as collectors and Python's
/// logging write it, followed by a space, a tab or a `|`.
fn iso_time(line: &str) -> Option<Wrapper> {
    let end = iso_time_len(line)?;
    let rest = &line[end..];
    let separator = [" | ", " |", "|", " ", "\t"].into_iter().find(|s| rest.starts_with(s))?;
    // The CRI log format of containerd and CRI-O (the files under
    // /var/log/pods): the time, the stream, and F (a full line) or P (part).
    let cri = ["stdout F ", "stderr F ", "stdout P ", "stderr P "]
        .into_iter()
        .find(|tag| rest[separator.len()..].starts_with(tag))
        .map_or(0, str::len);
    Wrapper::time(end + separator.len() + cri)
}

/// The fields that hold a record's line in the JSON log formats: docker's
/// json-file driver (`log`), fluent-bit, CloudWatch and most shippers (`log`,
/// `message`, `msg`), journalctl -o json (`MESSAGE`), Google Cloud Logging
/// (`textPayload`).
const JSON_TEXT_FIELDS: [&str; 5] = ["log", "message", "msg", "MESSAGE", "textPayload"];

/// The line a JSON log record carries (`{"log":"host:1:2 [0] NCCL INFO
/// ...\n","stream":"stderr","time":"..."}`), without its line end; `None`
/// for a line that is no such record.
pub fn json_record_text(line: &str) -> Option<String> {
    if !line.starts_with('{') || !line.trim_end().ends_with('}') {
        return None;
    }
    let record: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line).ok()?;
    let text = JSON_TEXT_FIELDS.iter().find_map(|field| record.get(*field)?.as_str())?;
    Some(text.trim_end_matches(['\n', '\r']).to_string())
}

/// Bytes of an ISO 8601 date and time at the start of `text`.
fn iso_time_len(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let shape = b"dddd-dd-dd?dd:dd:dd";
    if b.len() < shape.len() {
        return None;
    }
    for (i, want) in shape.iter().enumerate() {
        let ok = match want {
            b'd' => b[i].is_ascii_digit(),
            b'?' => b[i] == b'T' || b[i] == b' ',
            other => b[i] == *other,
        };
        if !ok {
            return None;
        }
    }
    let mut end = shape.len();
    end += fraction_len(&b[end..]);
    match b.get(end) {
        Some(b'Z') => end += 1,
        Some(b'+' | b'-') => {
            let zone = b[end + 1..].iter().take(5).take_while(|c| c.is_ascii_digit() || **c == b':').count();
            if zone >= 2 {
                end += 1 + zone;
            }
        }
        _ => {}
    }
    Some(end)
}

/// Bytes of the fraction of a second at the start of `text` (`.123456789`,
/// `,123`: up to nanoseconds), 0 when there is none.
fn fraction_len(text: &[u8]) -> usize {
    match text {
        [b'.' | b',', digit, ..] if digit.is_ascii_digit() => {
            1 + text[1..].iter().take(9).take_while(|c| c.is_ascii_digit()).count()
        }
        _ => 0,
    }
}

/// A time of day alone, as log viewers and some loggers print it:
/// `12:00:01 `, `12:00:01.123 `.
fn clock_time(line: &str) -> Option<Wrapper> {
    let b = line.as_bytes();
    let shape = b"dd:dd:dd";
    if b.len() <= shape.len()
        || !shape.iter().zip(b).all(|(want, got)| if *want == b'd' { got.is_ascii_digit() } else { got == want })
    {
        return None;
    }
    let mut end = shape.len();
    end += fraction_len(&b[end..]);
    matches!(b.get(end), Some(b' ' | b'\t')).then(|| Wrapper::time(end + 1))?
}

/// A reply's quote marker (`> `, `>> `): logs pasted into an issue thread
/// come back quoted in the answers.
fn quote_marker(line: &str) -> Option<Wrapper> {
    let rest = line.strip_prefix('>')?;
    (rest.is_empty() || rest.starts_with([' ', '>'])).then(|| Wrapper::time(1))?
}

/// `[2024-05-01 12:00:00]`, `[2024-05-01T12:00:00.123Z]` (NCCL 2.26+'s own
/// WARN timestamp has this form too).
fn bracketed_time(line: &str) -> Option<Wrapper> {
    let inner = &line[1..];
    let end = iso_time_len(inner)?;
    inner[end..].starts_with(']').then(|| Wrapper::time(end + 2))?
}

/// `srun -l`'s task number: `3: `, `  12: ` (right-aligned in a wide job).
fn task_label(line: &str) -> Option<Wrapper> {
    let body = line.trim_start_matches(' ');
    let digits = body.bytes().take(7).take_while(u8::is_ascii_digit).count();
    if !(1..=6).contains(&digits) || !body[digits..].starts_with(": ") {
        return None;
    }
    let tag_len = line.len() - body.len() + digits + 1;
    Wrapper::speaker(tag_len + 1, tag_len, body[..digits].parse().ok())
}

/// pdsh's and DeepSpeed's launcher's `host: ` (an address, or a lower-case
/// host name with a digit or a hyphen: `10.3.35.83: `, `node-7: `,
/// `lambda-scalar02: `). Exception and module names (`RuntimeError: `,
/// `torch.distributed.elastic.multiprocessing.api: `) are not host names.
fn host_tag(line: &str) -> Option<Wrapper> {
    let colon = short_find(line.as_bytes(), b':')?;
    let name = &line[..colon];
    if !line[colon..].starts_with(": ") || name.is_empty() || name.len() > 63 {
        return None;
    }
    let allowed = name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.' | b'_'));
    let hostlike = name.bytes().any(|b| b.is_ascii_digit() || b == b'-');
    let starts_well = name.as_bytes()[0].is_ascii_alphanumeric();
    let library = VERBS_PROVIDERS.contains(&name);
    (allowed && hostlike && starts_well && !library && !is_file_name(name))
        .then(|| Wrapper::speaker(colon + 2, colon + 1, None))?
}

/// A file's name before a colon (`libnccl.so.2: cannot open shared object
/// file`, `train_v2.py: error`): the loader's or the program's own words, not a
/// host's tag.
fn is_file_name(name: &str) -> bool {
    const EXTENSIONS: [&str; 11] = ["py", "cc", "cpp", "cu", "c", "h", "hpp", "sh", "log", "txt", "so"];
    name.contains(".so.") || name.rsplit_once('.').is_some_and(|(_, extension)| EXTENSIONS.contains(&extension))
}

/// rdma-core's providers, which open their own messages with their name
/// (`mlx5: node-7: got completion with error:`): not a host's tag.
/// Source: rdma-core providers/ (the names their `verbs_*` logging prints).
const VERBS_PROVIDERS: &[&str] = &[
    "mlx4",
    "mlx5",
    "hfi1",
    "hfi1verbs",
    "qib",
    "efa",
    "rxe",
    "siw",
    "bnxt_re",
    "irdma",
    "i40iw",
    "hns",
    "erdma",
    "mana",
    "ocrdma",
    "vmw_pvrdma",
    "cxgb4",
    "qedr",
    "ipath",
    "mthca",
];

/// docker compose's `service-1  | `.
fn service_tag(line: &str) -> Option<Wrapper> {
    let space = short_find(line.as_bytes(), b' ')?;
    let name = &line[..space];
    let named = !name.is_empty()
        && name.len() <= 63
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    let after = line[space..].trim_start_matches(' ');
    let bar = after.strip_prefix('|')?;
    (named && (bar.is_empty() || bar.starts_with(' '))).then(|| {
        let len = line.len() - bar.len() + usize::from(!bar.is_empty());
        Wrapper::speaker(len, space, None)
    })?
}

/// A launcher's bracketed tag ending in `:` or `>:`: `[1,3]<stdout>:`
/// (mpirun), `[rank3]:`, `[default0]:` (torchrun). Short and one word.
fn bracket_tag(line: &str) -> Option<Wrapper> {
    // Only the line's head can hold one: a prefix-stripped log opens every
    // line with `[0]`, which must not cost a search of the whole line.
    let head = &line.as_bytes()[..line.len().min(MAX_BRACKET_TAG + 1)];
    let end = memchr::memmem::find(head, b">:").or_else(|| memchr::memmem::find(head, b"]:"))?;
    if end >= MAX_BRACKET_TAG || line[..end].contains(char::is_whitespace) {
        return None;
    }
    let tag = &line[..end + 2];
    Wrapper::speaker(end + 2, end + 2, tag_rank(tag))
}

/// The longest bracketed tag (`[1,1023]<stderr>:` is 17 characters).
const MAX_BRACKET_TAG: usize = 40;

/// The rank in a bracketed tag: mpirun's `[job,rank]`, torchrun's `[rankN]`.
fn tag_rank(tag: &str) -> Option<u32> {
    let inner = &tag[1..tag.find(']')?];
    let number = inner.rsplit_once(',').map(|(_, r)| r).or_else(|| inner.strip_prefix("rank"))?;
    number.parse().ok()
}

/// `kubectl logs --prefix`'s `[pod/name/container] `.
fn pod_tag(line: &str) -> Option<Wrapper> {
    if !line.starts_with("[pod/") {
        return None;
    }
    let end = line.get(..MAX_TAG_BYTES.min(line.len()))?.find("] ")?;
    (!line[..end].contains(char::is_whitespace)).then(|| Wrapper::speaker(end + 2, end + 1, None))?
}

/// Ray's actor tag: `(RayWorkerWrapper pid=4242) `, `(pid=909597, ip=10.0.0.1) `.
fn ray_tag(line: &str) -> Option<Wrapper> {
    let end = ray_tag_end(line)?;
    Wrapper::speaker(end + 2, end + 1, None)
}

/// Where Ray's actor tag that opens the line closes (the index of its `)`),
/// looked for in the line's first [`MAX_TAG_BYTES`] only.
pub(crate) fn ray_tag_end(line: &str) -> Option<usize> {
    let head = &line.as_bytes()[..line.len().min(MAX_TAG_BYTES)];
    if head.first() != Some(&b'(') {
        return None;
    }
    let end = memchr::memmem::find(head, b") ")?;
    line[..end].contains("pid=").then_some(end)
}

/// journald's and syslog's `Nov 24 12:00:01 host program[4242]: `.
fn syslog_header(line: &str) -> Option<Wrapper> {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let b = line.as_bytes();
    if b.len() < 16 || !MONTHS.iter().any(|m| line.starts_with(m)) || b[3] != b' ' {
        return None;
    }
    let day = &b[4..6];
    let day_ok = (day[0] == b' ' || day[0].is_ascii_digit()) && day[1].is_ascii_digit();
    let time = &b[6..15];
    let time_ok = time[0] == b' '
        && time[1..].iter().enumerate().all(|(i, c)| if i == 2 || i == 5 { *c == b':' } else { c.is_ascii_digit() });
    if !day_ok || !time_ok {
        return None;
    }
    // Host and program: two words, the second ending in `:` (`python[4242]:`).
    let rest = &line[15..];
    let after_host = rest.strip_prefix(' ')?;
    let host_end = short_find(after_host.as_bytes(), b' ')?;
    let program = &after_host[host_end + 1..];
    let program_end = program.find(": ")?;
    if program_end > 80 || program[..program_end].contains(' ') {
        return None;
    }
    // The tag is the host and program, after the time.
    let tag_from = 16;
    let tag_to = tag_from + host_end + 1 + program_end + 1;
    Some(Wrapper { len: tag_to + 1, tag: Some((tag_from, tag_to)), rank: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &str) -> &str {
        unwrap(line).text
    }

    #[test]
    fn collectors_timestamps_are_taken_off() {
        let nccl = "node-7:4242:4300 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>";
        for wrapped in [
            format!("2024-05-01T12:00:01.123456789Z {nccl}"),
            format!("2024-05-01T12:00:01Z {nccl}"),
            format!("2024-05-01 12:00:01,123 {nccl}"),
            format!("2024-05-01T12:00:01.5+02:00 {nccl}"),
            format!("2024-05-01T12:00:01.5-0700\t{nccl}"),
            format!("2024-05-01 12:00:01 | {nccl}"),
            format!("[2024-05-01 12:00:01] {nccl}"),
            format!("[2024-05-01T12:00:01.123Z] {nccl}"),
            format!("12:00:01 {nccl}"),
            format!("12:00:01.123456 {nccl}"),
            format!("> {nccl}"),
            format!("> > > {nccl}"),
            format!(">> {nccl}"),
        ] {
            let unwrapped = unwrap(&wrapped);
            assert_eq!((unwrapped.text, unwrapped.tag), (nccl, ""), "{wrapped}");
        }
    }

    #[test]
    fn launchers_tags_are_taken_off_and_kept() {
        let nccl = "node-7:4242:4300 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>";
        for (wrapped, tag, rank) in [
            (format!("3: {nccl}"), "3:", Some(3)),
            (format!("  12: {nccl}"), "12:", Some(12)),
            (format!("node-7: {nccl}"), "node-7:", None),
            (format!("10.3.35.83: {nccl}"), "10.3.35.83:", None),
            (format!("[1,3]<stdout>:{nccl}"), "[1,3]<stdout>:", Some(3)),
            (format!("[rank5]: {nccl}"), "[rank5]:", Some(5)),
            (format!("trainer-1  | {nccl}"), "trainer-1", None),
            (format!("[pod/train-0/pytorch] {nccl}"), "[pod/train-0/pytorch]", None),
            (format!("(RayWorkerWrapper pid=4242) {nccl}"), "(RayWorkerWrapper pid=4242)", None),
            (format!("Nov 24 12:00:01 node-7 python[4242]: {nccl}"), "node-7 python[4242]:", None),
        ] {
            let unwrapped = unwrap(&wrapped);
            assert_eq!((unwrapped.text, unwrapped.tag, unwrapped.rank), (nccl, tag, rank), "{wrapped}");
        }
        // Nested: a collector's time, srun's label, torchrun's rank.
        let nested = unwrap("2024-05-01T12:00:01Z 3: [rank3]: RuntimeError: NCCL error");
        assert_eq!((nested.text, nested.tag, nested.rank), ("RuntimeError: NCCL error", "3: [rank3]:", Some(3)));
    }

    #[test]
    fn container_runtimes_formats_are_taken_off() {
        let nccl = "node-7:4242:4300 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.7<0>";
        let cri = format!("2024-05-01T12:00:01.123456789Z stderr F {nccl}");
        assert_eq!(unwrap(&cri).text, nccl);
        let docker = format!(r#"{{"log":"{nccl}\n","stream":"stderr","time":"2024-05-01T12:00:01.1Z"}}"#);
        assert_eq!(json_record_text(&docker).as_deref(), Some(nccl));
        let journal = format!(r#"{{"MESSAGE":"{nccl}","_HOSTNAME":"node-7"}}"#);
        assert_eq!(json_record_text(&journal).as_deref(), Some(nccl));
        // JSON that carries no line (NCCL Inspector's records, RAS) is not a wrapper.
        assert_eq!(json_record_text(r#"{"header":{"id":"0x1"},"coll":"AllReduce"}"#), None);
        assert_eq!(json_record_text("{not json}"), None);
    }

    #[test]
    fn an_applications_own_text_stays() {
        for line in [
            "node-7:4242:4300 [0] NCCL INFO Channel 00/02 :    0   1",
            "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:219",
            "torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 3 closing signal",
            "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970",
            "[E ProcessGroupNCCL.cpp:523] [Rank 1] Watchdog caught collective operation timeout",
            "[1721186746.658016] [node02:10366:1]  ucp_worker.c:1783 UCX  ERROR failed",
            "[0] NCCL INFO Ring 00 : 0 1",
            "mlx5: node-7: got completion with error:",
            "libnccl.so.2: cannot open shared object file: No such file or directory",
            "libnvidia-ml.so: cannot open shared object file",
            "train_v2.py: error: unrecognized arguments",
            "misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.1<35913> failed",
            "2024-05-01",
            "12:00 something",
            ">not a quote",
            "(see below) text",
            "Nov 24 was the day",
            "#       8             2     float     sum      -1    12.34    0.00    0.00      0",
        ] {
            assert_eq!(text(line), line);
        }
    }

    #[test]
    fn hostile_lines_are_read_in_bounded_work() {
        let many = "3: ".repeat(10_000) + "x";
        assert_eq!(text(&many).len(), many.len() - 3 * MAX_WRAPPERS);
        let long = "[".to_string() + &"a".repeat(100_000);
        assert_eq!(text(&long), long);
    }

    #[test]
    fn a_rich_editors_links_on_source_locations_are_undone() {
        // Corpus 1624 (NVIDIA/nccl#2397 as stored): GitHub's editor made links of `p2p.cc:783`.
        let mut out = String::new();
        let line = "[2026-09-09 10:46:33] ubuntu2:319733:319761 [1] transport/net_ib/[p2p.cc:783](https://p2p.cc:783/) NCCL WARN NET/IB: x";
        assert!(has_autolinks(line));
        without_autolinks(line, &mut out);
        assert_eq!(
            out,
            "[2026-09-09 10:46:33] ubuntu2:319733:319761 [1] transport/net_ib/p2p.cc:783 NCCL WARN NET/IB: x"
        );
        // A real link (its text is not its address) stays.
        let link = "see [the docs](https://docs.nvidia.com/) and [a](http://b)";
        without_autolinks(link, &mut out);
        assert_eq!(out, link);
        without_autolinks("x](http", &mut out);
        assert_eq!(out, "x](http");
    }

    #[test]
    fn colours_are_taken_out_and_other_escapes_kept() {
        let mut out = String::new();
        without_colours("\x1b[36mnode-7:1:2 [0] NCCL WARN x\x1b[0m", &mut out);
        assert_eq!(out, "node-7:1:2 [0] NCCL WARN x");
        without_colours("a\x1b]0;title\x07b\x1b[2Jc\x1b", &mut out);
        assert_eq!(out, "a\x1b]0;title\x07b\x1b[2Jc\x1b");
    }

    /// Corpus 1683 (`←[36m`, a Windows console's paste), 1085 (`ESC[36m`),
    /// 300 (`[0m`, the ESC lost): the same colours, drawn or written out.
    #[test]
    fn colours_a_paste_drew_or_lost_are_taken_out() {
        let mut out = String::new();
        for line in [
            "\u{2190}[36m(RayWorkerWrapper pid=367)\u{2190}[0m vllm-0:367:367 [1] NCCL INFO x",
            "ESC[36m(RayWorkerWrapper pid=367)ESC[0m vllm-0:367:367 [1] NCCL INFO x",
            "^[[36m(RayWorkerWrapper pid=367)^[[0m vllm-0:367:367 [1] NCCL INFO x",
            "\\x1b[36m(RayWorkerWrapper pid=367)\\x1b[0m vllm-0:367:367 [1] NCCL INFO x",
            "[36m(RayWorkerWrapper pid=367)[0m vllm-0:367:367 [1] NCCL INFO x",
        ] {
            assert!(has_colours(line), "{line}");
            without_colours(line, &mut out);
            assert_eq!(out, "(RayWorkerWrapper pid=367) vllm-0:367:367 [1] NCCL INFO x", "{line}");
        }
        without_colours("[0m ip-172-31-0-137:14605:14673 [0] NCCL INFO y", &mut out);
        assert_eq!(out, " ip-172-31-0-137:14605:14673 [0] NCCL INFO y");
        // Corpus 1766 (SageMaker): a whole line coloured, both ESCs lost.
        without_colours("[34malgo-1:66:257 [0] NCCL INFO z[0m", &mut out);
        assert_eq!(out, "algo-1:66:257 [0] NCCL INFO z");
        // A bracket that is no colour, or a bare one inside the text, stays.
        for line in ["host:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1]", "took [10m] to start", "a [0m b"] {
            assert!(!has_colours(line), "{line}");
        }
    }
}
