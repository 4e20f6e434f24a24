//! COLL lines (`NCCL_DEBUG_SUBSYS=COLL`), one per collective call and most of
//! a long log, so read with care for speed: one pass, keys compared at a
//! width known when compiling, and what a thread's recent lines repeated
//! remembered ([`CollMemo`]).

use super::bytes::{digits, leading_digits, short_find, short_find2};
use super::message::Collective;

static COUNT: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b" count "));

/// Whether `text` starts with `key` (given with its spaces: `b" count "`). The
/// width is known when compiling, so this is a word compare or two, not a loop.
#[inline(always)]
fn has_key<const N: usize>(text: &[u8], key: &[u8; N]) -> bool {
    text.first_chunk::<N>() == Some(key)
}

/// Splits `key value` off the front of `text` (`key` with its spaces), if the
/// key is there: returns the value and the rest.
#[inline(always)]
fn take_field<'a, const N: usize>(text: &'a str, key: &[u8; N]) -> Option<(&'a str, &'a str)> {
    if !has_key(text.as_bytes(), key) {
        return None;
    }
    let rest = &text[N..];
    let end = short_find(rest.as_bytes(), b' ').unwrap_or(rest.len());
    Some((&rest[..end], &rest[end..]))
}

/// A hex number (`139d`, at most 16 digits) up to the first space or the end,
/// and its length: one pass instead of a search and a parse.
#[inline(always)]
fn hex_token(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    let mut at = 0;
    while let Some(&b) = bytes.get(at).filter(|b| **b != b' ') {
        let digit = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return None,
        };
        if at == 16 {
            return None;
        }
        value = (value << 4) | u64::from(digit);
        at += 1;
    }
    (at > 0).then_some((value, at))
}

/// `key N` at the front of `bytes` (`key` with its spaces): N (a whole token
/// of at most 19 ASCII digits, as [`digits`] takes it) and the length read, in
/// one pass.
#[inline(always)]
fn number_field<const N: usize>(bytes: &[u8], key: &[u8; N]) -> Option<(u64, usize)> {
    if !has_key(bytes, key) {
        return None;
    }
    let (mut value, mut at) = (0u64, N);
    if let Some(&word) = bytes.get(N..).and_then(<[u8]>::first_chunk::<8>) {
        let (read, len) = leading_digits(word);
        let next = bytes.get(N + len).copied();
        // Whatever the width, one path: only a ninth digit takes the loop.
        if len < 8 || !next.is_some_and(|b| b.is_ascii_digit()) {
            let whole_token = len > 0 && next.is_none_or(|b| b == b' ');
            return whole_token.then_some((read, N + len));
        }
        (value, at) = (read, N + 8);
    }
    while let Some(digit) = bytes.get(at).map(|b| b.wrapping_sub(b'0')).filter(|d| *d < 10) {
        // A 20th digit may not fit: refused before it is added.
        if at - N == 19 {
            return None;
        }
        value = value * 10 + u64::from(digit);
        at += 1;
    }
    let whole_token = at > N && bytes.get(at).is_none_or(|b| *b == b' ');
    whole_token.then_some((value, at))
}

/// ` sendbuff X recvbuff Y count ...`: where ` count ` starts, or `None` for
/// any other shape. A buffer token reading `count` is refused (a search for
/// ` count ` would stop at it), and so is one running into a line end.
#[inline(always)]
fn step_over_buffers(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    for key in [b" sendbuff ", b" recvbuff "] {
        if !has_key(bytes.get(at..)?, key) {
            return None;
        }
        at += key.len();
        let token = bytes.get(at..)?;
        let len = short_find2(token, b' ', b'\n')?;
        if token[len] != b' ' || token[..len] == *b"count" {
            return None;
        }
        at += len;
    }
    has_key(bytes.get(at..)?, b" count ").then_some(at)
}

/// The tails of one thread's recent COLL lines: a thread prints the same
/// `op .. root .. comm .. [nranks=..] stream ..` after `datatype N` for every
/// call on a communicator. A line that repeats a remembered tail byte for byte
/// is read by comparison; since the bytes are equal, so is what reading them
/// would give. A few are kept: one thread often drives several communicators
/// (nccl-tests `-g`, a data-parallel and a sharding group).
#[derive(Debug, Clone, Default)]
pub struct CollMemo {
    tails: [Tail; WAYS],
    /// The way the next new tail replaces.
    next_tail: usize,
}

const WAYS: usize = 4;

/// Everything after `datatype N` and the line end (`\n`), and what was read
/// from it.
#[derive(Debug, Clone, Default)]
struct Tail {
    line_end: Vec<u8>,
    comm: Option<(usize, usize)>,
    nranks: Option<u32>,
}

impl CollMemo {
    /// The communicator pointer and rank count a tail gives.
    fn tail<'a>(&mut self, rest: &'a str) -> (Option<&'a str>, Option<u32>) {
        let same = |t: &&Tail| t.line_end.len() == rest.len() + 1 && t.line_end.starts_with(rest.as_bytes());
        if let Some(known) = self.tails.iter().find(same) {
            return (known.comm.and_then(|(from, to)| rest.get(from..to)), known.nranks);
        }
        let (comm, nranks) = read_tail(rest);
        let way = &mut self.tails[self.next_tail];
        way.line_end.clear();
        way.line_end.extend_from_slice(rest.as_bytes());
        way.line_end.push(b'\n');
        let offset = |c: &str| c.as_ptr() as usize - rest.as_ptr() as usize;
        way.comm = comm.map(|c| (offset(c), offset(c) + c.len()));
        way.nranks = nranks;
        self.next_tail = (self.next_tail + 1) % WAYS;
        (comm, nranks)
    }

    /// The remembered tail `rest` starts with, line end included.
    fn known_tail(&self, rest: &[u8]) -> Option<&Tail> {
        // A way never filled is empty; a filled one holds at least the `\n`.
        self.tails.iter().find(|t| !t.line_end.is_empty() && rest.starts_with(&t.line_end))
    }
}

/// `AllReduce: opCount 139d sendbuff 0x.. recvbuff 0x.. count 7382228 datatype 7 op 0
/// root 0 comm 0x.. [nranks=128] stream 0x..`. The fields after `count` come
/// in a fixed order; `op`, `root`, `comm` and `[nranks=]` may be missing.
pub fn collective(message: &str) -> Option<Collective<'_>> {
    read_collective(message, None)
}

/// [`collective`] for the next line of a thread, with what its last lines said.
pub fn collective_after<'a>(message: &'a str, memo: &mut CollMemo) -> Option<Collective<'a>> {
    read_collective(message, Some(memo))
}

/// A COLL line at the front of `text`, a read buffer: the line ends at the
/// first `\n`. Read only when it is in NCCL's own shape and ends in a tail
/// `memo` holds, so it gives what [`collective_after`] gives for the line: the
/// fields and the line's length (without its `\n`). `None`: read the line the
/// usual way.
// Inlined: returned through memory, the fields are written as words and read
// back as wider vector loads, which stalls store forwarding on every line.
#[inline(always)]
pub fn collective_in<'a>(text: &'a str, memo: &CollMemo) -> Option<(Collective<'a>, usize)> {
    let head = read_head(text, Reading::Buffer)?;
    let rest = text.get(head.tail_at..)?;
    let tail = memo.known_tail(rest.as_bytes())?;
    let comm = match tail.comm {
        Some((from, to)) => Some(rest.get(from..to)?),
        None => None,
    };
    let op = Collective { comm, nranks: tail.nranks, ..head.fields };
    Some((op, head.tail_at + tail.line_end.len() - 1))
}

/// The front of a COLL line, through `datatype N`.
struct Head<'a> {
    /// The fields read; the communicator and rank count are in the tail.
    fields: Collective<'a>,
    /// Where the tail (`op .. root .. comm ..`) starts.
    tail_at: usize,
}

/// What [`read_head`] is given.
#[derive(Clone, Copy, PartialEq)]
enum Reading {
    /// One whole line: anything between the opCount and ` count ` is searched.
    Line,
    /// A read buffer, the line at its front: only NCCL's own shape is read, and
    /// no search may run far past the line.
    Buffer,
}

/// The longest name before `: opCount` looked for in a buffer (NCCL's are
/// under 16 bytes); a longer one is left to the line reader.
const MAX_NAME_IN_BUFFER: usize = 64;

/// `AllReduce: opCount 139d sendbuff 0x.. recvbuff 0x.. count 7382228 datatype 7`.
/// A `\n` ends nothing here: a token running into one is refused, so `text`
/// may run on past the line.
#[inline(always)]
fn read_head(text: &str, reading: Reading) -> Option<Head<'_>> {
    let bytes = text.as_bytes();
    let colon = match reading {
        Reading::Line => short_find(bytes, b':')?,
        Reading::Buffer => short_find(&bytes[..bytes.len().min(MAX_NAME_IN_BUFFER)], b':')?,
    };
    let op = text.get(..colon)?;
    if op.is_empty() || short_find2(op.as_bytes(), b' ', b'\n').is_some() || !has_key(&bytes[colon..], b": opCount ") {
        return None;
    }
    let mut at = colon + b": opCount ".len();
    let (op_count, len) = hex_token(&bytes[at..])?;
    at += len;
    at += match step_over_buffers(&bytes[at..]) {
        Some(count_at) => count_at,
        None if reading == Reading::Line => COUNT.find(&bytes[at..])?,
        None => return None,
    };
    let (count, len) = number_field(&bytes[at..], b" count ")?;
    at += len;
    // A datatype is one digit nearly always: no arithmetic for it.
    let (datatype, len) = match bytes.get(at..).and_then(<[u8]>::first_chunk::<12>) {
        Some([b' ', b'd', b'a', b't', b'a', b't', b'y', b'p', b'e', b' ', digit @ b'0'..=b'9', b' ']) => {
            (u64::from(digit - b'0'), 11)
        }
        _ => number_field(&bytes[at..], b" datatype ")?,
    };
    let datatype = u32::try_from(datatype).ok()?;
    let fields = Collective { op, op_count, count, datatype, comm: None, nranks: None };
    Some(Head { fields, tail_at: at + len })
}

fn read_collective<'a>(message: &'a str, memo: Option<&mut CollMemo>) -> Option<Collective<'a>> {
    let head = read_head(message, Reading::Line)?;
    let rest = message.get(head.tail_at..)?;
    let (comm, nranks) = match memo {
        Some(memo) => memo.tail(rest),
        None => read_tail(rest),
    };
    Some(Collective { comm, nranks, ..head.fields })
}

/// ` op N root N comm X [nranks=N] stream X`, any of it missing: the
/// communicator pointer and the rank count.
fn read_tail(rest: &str) -> (Option<&str>, Option<u32>) {
    let rest = take_field(rest, b" op ").map_or(rest, |(_, r)| r);
    let rest = take_field(rest, b" root ").map_or(rest, |(_, r)| r);
    let (comm, rest) = match take_field(rest, b" comm ") {
        Some((comm, rest)) => (Some(comm), rest),
        None => (None, rest),
    };
    let nranks = rest
        .strip_prefix(" [nranks=")
        .and_then(|r| short_find(r.as_bytes(), b']').map(|end| &r[..end]))
        .and_then(digits)
        .and_then(|n| u32::try_from(n).ok());
    (comm, nranks)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Numbers at and past the widths the one-pass readers take (the fuzzer
    /// found a 20-digit count overflowing): the largest is read, one digit
    /// more is refused, never a panic.
    #[test]
    fn long_numbers_are_refused_not_overflowed() {
        let nineteen = "9".repeat(19);
        let text = format!(" count {nineteen} datatype 7");
        let (value, len) = number_field(text.as_bytes(), b" count ").unwrap();
        assert_eq!((value, &text[len..]), (9_999_999_999_999_999_999, " datatype 7"));
        assert_eq!(number_field(format!(" count {nineteen}9").as_bytes(), b" count "), None);
        assert_eq!(number_field(b" count 12x", b" count "), None);
        assert_eq!(number_field(b" count ", b" count "), None);
        assert_eq!(hex_token(b"ffffffffffffffff rest"), Some((u64::MAX, 16)));
        assert_eq!(hex_token(b"1ffffffffffffffff"), None);
        assert_eq!(hex_token(b"12g"), None);
        assert_eq!(hex_token(b" x"), None);
        let line = format!(
            "AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x2 count {nineteen}9 datatype 7 op 0 root 0 comm 0x3 [nranks=2] stream 0x4"
        );
        assert!(collective(&line).is_none());
    }

    /// A thread's lines read with its memo give what each line gives read
    /// alone: repeated and changed buffers and tails, missing fields, a buffer
    /// that reads `count`, a tail cut short, lines of other shapes between.
    #[test]
    fn remembered_parts_change_nothing() {
        let lines = [
            "AllReduce: opCount 1 sendbuff 0x1 recvbuff 0x2 count 8 datatype 7 op 0 root 0 comm 0xa [nranks=8] stream 0x4",
            "AllReduce: opCount 2 sendbuff 0x1 recvbuff 0x2 count 9 datatype 9 op 0 root 0 comm 0xa [nranks=8] stream 0x4",
            "Broadcast: opCount 3 sendbuff 0x1 recvbuff 0x2 count 10 datatype 9 op 0 root 3 comm 0xa [nranks=8] stream 0x4",
            "AllReduce: opCount 4 sendbuff 0x1 recvbuff 0x2 count 11 datatype 9 op 0 root 0 comm 0xbb [nranks=16] stream 0x4",
            "AllReduce: opCount 5 sendbuff 0x1 recvbuff 0x2 count 11 datatype 9 op 0 root 0 comm 0xbb",
            "AllReduce: opCount 6 sendbuff 0x1 recvbuff 0x2 count 11 datatype 9",
            "AllReduce: opCount 7 sendbuff 0x1 recvbuff 0x2 count 11 datatype 9",
            "AllReduce: opCount 8 sendbuff 0x1 recvbuff 0x2 count 11 datatype 9 op 0 root 0 comm 0xbb [nranks=16] stream 0x4",
            "AllReduce: opCount 9 sendbuff count recvbuff 0x2 count 11 datatype 9 op 0 root 0 comm 0xbb [nranks=16] stream 0x4",
            "AllReduce: opCount a sendbuff 0x1 recvbuff 0x2 count 11 datatype 9 op 0 root 0 comm 0xbb [nranks=16] stream 0x4",
            "AllReduce: opCount b sendbuff 0x1 recvbuff 0x2 count 12 datatype 9 op 0 root 0 comm 0xbb [nranks=16] stream 0x4",
            "AllReduce: opCount c sendbuff 0x1 recvbuff 0x2 count x datatype 9 op 0 root 0 comm 0xbb [nranks=16] stream 0x4",
            "AllReduce: opCount d sendbuff 0x1 recvbuff 0x2 count 13 datatype 9 op 0 root 0 comm 0xbb [nranks=16] stream 0x4",
            "Connected all rings",
            "AllReduce: opCount e sendbuff 0x11 recvbuff 0x2 count 14 datatype 9 op 0 root 0 comm 0xbb [nranks=16] stream 0x4",
            "AllReduce: opCount f sendbuff 0x1 recvbuff 0x2 count 15 datatype 9 op 0 root 0 comm 0xbb [nranks=16] stream 0x4",
            "AllReduce: opCount 10 sendbuff 0x1 recvbuff 0x2 count 15 datatype 9 op 0 root 0 comm 0xbb [nranks=16] stream 0x4 x",
        ];
        let mut memo = CollMemo::default();
        for line in lines {
            assert_eq!(collective_after(line, &mut memo), collective(line), "{line}");
        }
        let repeated = collective_after(lines[16], &mut memo).unwrap();
        assert_eq!((repeated.op_count, repeated.comm, repeated.nranks), (0x10, Some("0xbb"), Some(16)));
        // One thread driving more communicators than the memo has ways, each
        // with its own buffers, in turn and out of turn.
        for i in 0..40u32 {
            let comm = [0, 1, 2, 3, 4, 0, 0, 5, 1][i as usize % 9];
            let line = format!(
                "AllReduce: opCount {i:x} sendbuff 0x{comm}00 recvbuff 0x{comm}00 count {} datatype 7 op 0 root 0 comm 0xc{comm} [nranks={}] stream 0x{comm}",
                i * 1000,
                comm + 2
            );
            let read = collective_after(&line, &mut memo);
            assert_eq!(read, collective(&line), "{line}");
            let want = format!("0xc{comm}");
            assert_eq!(read.map(|c| (c.comm, c.nranks)), Some((Some(want.as_str()), Some(comm + 2))));
        }
    }
}
