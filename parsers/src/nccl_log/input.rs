//! Reading logs as a stream of lines: plain or gzip (told by its magic bytes,
//! not the name), from a file or stdin, never whole into memory.

use std::io::{BufRead, BufReader};
use std::path::Path;

use super::report::LogParser;

/// Lines longer than this are cut: the rest is skipped, the line still counts.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Bytes read at a time. 256 KiB keeps the reads few (4,000 a GiB) while the
/// buffer stays a small part of the process's memory; 1 MiB read no faster
/// here and cost 0.75 MiB of peak RSS (`benches/nccl-log.sh`).
const READ_BUFFER_BYTES: usize = 256 << 10;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{name}: {source}")]
    Io { name: String, source: std::io::Error },
}

/// Feeds every line of `path` (`-` = stdin) to `parser`.
pub fn read_lines(path: &Path, parser: &mut LogParser) -> Result<(), LogError> {
    let name = path.display().to_string();
    if name == "-" {
        return read_stream(&name, std::io::stdin().lock(), parser);
    }
    let file = std::fs::File::open(path).map_err(|source| LogError::Io { name: name.clone(), source })?;
    read_stream(&name, file, parser)
}

/// Feeds every line of a stream already opened (and perhaps already partly
/// read by whoever looked at its first bytes: they hand those back chained in
/// front) to `parser`, read once: a pipe or FIFO loses nothing. Gzip is told
/// by its magic bytes.
pub fn read_stream(name: &str, stream: impl std::io::Read, parser: &mut LogParser) -> Result<(), LogError> {
    let io = |source| LogError::Io { name: name.to_string(), source };
    parser.start_input(name);
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, stream);
    let gzip = reader.fill_buf().map_err(io)?.starts_with(&[0x1f, 0x8b]);
    if gzip {
        let decoder = flate2::bufread::MultiGzDecoder::new(reader);
        feed(BufReader::with_capacity(READ_BUFFER_BYTES, decoder), parser).map_err(io)
    } else {
        feed(reader, parser).map_err(io)
    }
}

/// Splits the stream into lines with `memchr`, handing each to the parser
/// without its line ending (`\n`, `\r\n`). A line over [`MAX_LINE_BYTES`] is cut.
/// Bytes that are not UTF-8 are replaced, never fatal. The parser first gets
/// to read a known kind of COLL line straight from the buffer
/// ([`LogParser::known_coll_line`]), which spares those lines (most of a long
/// log) the search for their end.
pub fn feed(mut reader: impl BufRead, parser: &mut LogParser) -> std::io::Result<()> {
    let mut pending: Vec<u8> = Vec::new();
    let mut overlong = false;
    let mut number = 0u64;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        let mut start = 0;
        if !pending.is_empty() || overlong {
            // The line the last chunk ended in.
            match memchr::memchr(b'\n', chunk) {
                Some(end) => {
                    number += 1;
                    append_capped(&mut pending, &chunk[..end], &mut overlong);
                    emit(&pending, number, parser);
                    pending.clear();
                    overlong = false;
                    start = end + 1;
                }
                None => {
                    append_capped(&mut pending, chunk, &mut overlong);
                    start = chunk.len();
                }
            }
        }
        // Checked for UTF-8 once for the chunk; lines inside the valid part are
        // then sliced as text without checking each again (a `\n` is always a
        // character boundary).
        let valid_text = match std::str::from_utf8(chunk) {
            Ok(text) => text,
            Err(e) => std::str::from_utf8(&chunk[..e.valid_up_to()]).unwrap_or_default(),
        };
        while start < chunk.len() {
            if let Some(text) = valid_text.get(start..)
                && let Some(len) = parser.known_coll_line(text, number + 1)
            {
                number += 1;
                start += len + 1;
                continue;
            }
            let rest = &chunk[start..];
            let Some(end) = memchr::memchr(b'\n', rest) else { break };
            number += 1;
            let line = &rest[..end.min(MAX_LINE_BYTES)];
            match valid_text.get(start..start + line.len()) {
                Some(text) => emit_text(text, number, parser),
                None => emit(line, number, parser),
            }
            start += end + 1;
        }
        append_capped(&mut pending, &chunk[start.min(chunk.len())..], &mut overlong);
        let consumed = chunk.len();
        reader.consume(consumed);
    }
    if !pending.is_empty() {
        number += 1;
        emit(&pending, number, parser);
    }
    Ok(())
}

fn append_capped(pending: &mut Vec<u8>, piece: &[u8], overlong: &mut bool) {
    let room = MAX_LINE_BYTES.saturating_sub(pending.len());
    if piece.len() > room {
        *overlong = true;
    }
    pending.extend_from_slice(&piece[..piece.len().min(room)]);
}

fn emit_text(text: &str, number: u64, parser: &mut LogParser) {
    parser.line(text.strip_suffix('\r').unwrap_or(text), number);
}

fn emit(bytes: &[u8], number: u64, parser: &mut LogParser) {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(text) => parser.line(text, number),
        Err(_) => parser.line(&String::from_utf8_lossy(bytes), number),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report_of(bytes: &[u8]) -> topo_model::nccl::NcclReport {
        let mut parser = LogParser::new();
        feed(std::io::Cursor::new(bytes.to_vec()), &mut parser).unwrap();
        parser.finish()
    }

    #[test]
    fn crlf_nul_garbage_and_truncation() {
        let report = report_of(b"h:1:2 [0] NCCL INFO NCCL version 2.20.5+cuda12.4\r\n\x00\xff\xfe garbage\nh:1:2 [0] NCCL INFO Using network IB");
        assert_eq!(report.nccl_versions, ["2.20.5+cuda12.4"]);
        assert_eq!(report.network.used, ["IB"], "the last line has no newline");
        assert_eq!((report.lines, report.unparsed_lines), (3, 1));
    }

    /// COLL lines read straight from the buffer give the report that reading
    /// them one by one gives, whatever the read size (lines cut at every
    /// place), with CRLF endings, a byte that is not UTF-8, a cut-off last line,
    /// and threads taking turns between more communicators than a thread's
    /// memo keeps.
    #[test]
    fn coll_lines_read_from_the_buffer_change_nothing() {
        let real = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/nccl-logs/001-nccl2277-1node-2gpu-a100-nvlink-graph-alloc-full.log"
        ))
        .unwrap();
        let mut log = real.clone();
        for i in 0..60u32 {
            let comm = [0, 1, 2, 3, 4, 0, 0, 5, 1][i as usize % 9];
            let end = if i % 7 == 3 { "\r\n" } else { "\n" };
            log.extend(format!(
                "mew0:64904:64904 [0] NCCL INFO AllReduce: opCount {i:x} sendbuff 0x{comm}00 recvbuff 0x7 count {} datatype {} op 0 root 0 comm 0xc{comm} [nranks=2] stream 0x{comm}{end}",
                i * 977,
                i % 12
            ).bytes());
            if i == 40 {
                log.extend(b"mew0:64904:64904 [0] NCCL INFO AllReduce: opCount 1 sendbuff 0x\xff recvbuff 0x7 count 5 datatype 7 op 0 root 0 comm 0xc0 [nranks=2] stream 0x0\n");
            }
        }
        log.extend(b"mew0:64904:64904 [0] NCCL INFO AllReduce: opCount 2 sendbuff 0x1 recvbuff 0x7 count 5 datatype 7 op 0 root 0 comm 0xc0 [nranks=2] stream 0x0");
        let one_by_one = {
            let mut parser = LogParser::new();
            for (i, line) in log.split(|b| *b == b'\n').enumerate() {
                emit(line, i as u64 + 1, &mut parser);
            }
            parser.finish()
        };
        assert!(one_by_one.collectives.values().map(|c| c.calls).sum::<u64>() > 1000);
        for capacity in [1 << 20, 4096, 333, 64] {
            let mut parser = LogParser::new();
            feed(BufReader::with_capacity(capacity, std::io::Cursor::new(&log)), &mut parser).unwrap();
            assert_eq!(parser.finish(), one_by_one, "read {capacity} bytes at a time");
        }
    }

    /// A launcher's tag before every line (`mpirun --tag-output`) changes
    /// nothing the COLL lines say, now that tagged prefixes are remembered too;
    /// and a timestamp that changes on every line (which stops the remembering)
    /// changes nothing either.
    #[test]
    fn tagged_and_timestamped_coll_lines_read_like_plain_ones() {
        let plain = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/nccl-logs/001-nccl2277-1node-2gpu-a100-nvlink-graph-alloc-full.log"
        ))
        .unwrap();
        let read = |log: &[u8]| {
            let mut parser = LogParser::new();
            feed(std::io::Cursor::new(log), &mut parser).unwrap();
            parser.finish()
        };
        let expected = read(&plain);
        assert!(expected.collectives.values().map(|c| c.calls).sum::<u64>() > 900);
        let mpirun = |_: usize| "[1,0]<stdout>: ".to_string();
        let timestamp = |n: usize| format!("[2026-11-22 12:00:{:02}.{n:06}] ", n % 60);
        for tag in [&mpirun as &dyn Fn(usize) -> String, &timestamp] {
            let mut log = Vec::new();
            for (n, line) in plain.split_inclusive(|b| *b == b'\n').enumerate() {
                log.extend(tag(n).bytes());
                log.extend(line);
            }
            let report = read(&log);
            assert_eq!(report.collectives, expected.collectives, "{}", tag(0));
            assert_eq!(report.progress, expected.progress, "{}", tag(0));
            assert_eq!(report.communicators, expected.communicators, "{}", tag(0));
        }
    }

    #[test]
    fn a_line_longer_than_the_cap_is_cut_not_kept() {
        let mut log = b"h:1:2 [0] NCCL INFO Using network ".to_vec();
        log.extend(std::iter::repeat_n(b'x', 3 * MAX_LINE_BYTES));
        log.extend(b"\nh:1:2 [0] NCCL INFO NCCL version 2.4.8+cuda10.1\n");
        let report = report_of(&log);
        assert_eq!(report.lines, 2);
        assert_eq!(report.nccl_versions, ["2.4.8+cuda10.1"]);
        assert!(report.network.used[0].len() < MAX_LINE_BYTES, "{}", report.network.used[0].len());
    }
}
