//! Reading logs as a stream of lines: plain or gzip (told by its magic bytes,
//! not the name), from a file or stdin, never whole into memory.

use std::io::{BufRead, BufReader};
use std::path::Path;

use super::report::LogParser;

/// Lines longer than this are cut: the rest is skipped, the line still counts.
pub const MAX_LINE_BYTES: usize = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{name}: {source}")]
    Io { name: String, source: std::io::Error },
}

/// Feeds every line of `path` (`-` = stdin) to `parser`.
pub fn read_lines(path: &Path, parser: &mut LogParser) -> Result<(), LogError> {
    let name = path.display().to_string();
    let io = |source| LogError::Io { name: name.clone(), source };
    parser.start_input(&name);
    if name == "-" {
        return feed(BufReader::with_capacity(1 << 20, std::io::stdin().lock()), parser).map_err(io);
    }
    let file = std::fs::File::open(path).map_err(io)?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let gzip = reader.fill_buf().map_err(io)?.starts_with(&[0x1f, 0x8b]);
    if gzip {
        let decoder = flate2::bufread::MultiGzDecoder::new(reader);
        feed(BufReader::with_capacity(1 << 20, decoder), parser).map_err(io)
    } else {
        feed(reader, parser).map_err(io)
    }
}

/// Splits the stream into lines with `memchr`, handing each to the parser
/// without its line ending (`\n`, `\r\n`). A line over [`MAX_LINE_BYTES`] is cut.
/// Bytes that are not UTF-8 are replaced, never fatal.
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
        // Validate UTF-8 once for the chunk; lines inside the valid part are then
        // sliced as text without checking each again (a `\n` is always a
        // character boundary).
        let valid_text = match std::str::from_utf8(chunk) {
            Ok(text) => text,
            Err(e) => std::str::from_utf8(&chunk[..e.valid_up_to()]).unwrap_or_default(),
        };
        for end in memchr::memchr_iter(b'\n', chunk) {
            number += 1;
            let piece = &chunk[start..end];
            if pending.is_empty() && !overlong {
                let piece = &piece[..piece.len().min(MAX_LINE_BYTES)];
                match valid_text.get(start..start + piece.len()) {
                    Some(text) if end <= valid_text.len() => emit_text(text, number, parser),
                    _ => emit(piece, number, parser),
                }
            } else {
                append_capped(&mut pending, piece, &mut overlong);
                emit(&pending, number, parser);
                pending.clear();
                overlong = false;
            }
            start = end + 1;
        }
        let rest = &chunk[start..];
        append_capped(&mut pending, rest, &mut overlong);
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
