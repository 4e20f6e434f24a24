//! Writing results: stdout for results, stderr for notices; colour only on a
//! terminal and never with `NO_COLOR`.

use std::io::{IsTerminal, Write};

/// Writes the whole text to stdout. A closed pipe surfaces as an error that
/// `main` turns into a quiet exit.
pub fn print(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(escape_controls(text, colour_stdout()).as_bytes())?;
    stdout.flush()?;
    Ok(())
}

pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .any(|cause| cause.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}

/// Whether stdout should carry ANSI colour.
pub fn colour_stdout() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}

pub fn warn(message: &str) {
    eprintln!("topo: warning: {}", escape_controls(message, false));
}

pub fn notice(message: &str) {
    eprintln!("topo: {}", escape_controls(message, false));
}

/// An error on stderr: controls escaped, and each line cut after
/// [`MAX_ERROR_LINE_CHARS`] characters (a parser's message may quote a 1 GB
/// line or a 50 MB attribute from the input).
pub fn error(message: &str) {
    let cut: Vec<String> = message.split('\n').map(cut_line).collect();
    eprintln!("topo: error: {}", escape_controls(&cut.join("\n"), false));
}

/// The most characters of one line an error message shows.
pub const MAX_ERROR_LINE_CHARS: usize = 400;

fn cut_line(line: &str) -> String {
    match line.char_indices().nth(MAX_ERROR_LINE_CHARS) {
        Some((at, _)) => format!("{}... ({} more bytes not shown)", &line[..at], line.len() - at),
        None => line.to_string(),
    }
}

/// Text as a terminal may be given it: every control character except newline
/// and tab is written as `\xNN` (`\x1b` for ESC), so text from the input (a log
/// line, a host name, a peer's abort reason) can never retitle, clear or move
/// the terminal. With `keep_colour`, topo's own colour codes (`ESC [ digits m`)
/// pass; any other escape sequence is still shown, not obeyed. The one helper
/// every human-readable output goes through (stdout, stderr; the TUI draws
/// control pictures instead).
pub fn escape_controls(text: &str, keep_colour: bool) -> std::borrow::Cow<'_, str> {
    let needs = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(needs) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if keep_colour && c == '\x1b' {
            let sgr = rest[1..].strip_prefix('[').map(|after| {
                let digits = after.bytes().take_while(|b| b.is_ascii_digit() || *b == b';').count();
                (after.as_bytes().get(digits) == Some(&b'm')).then_some(2 + digits + 1)
            });
            if let Some(Some(len)) = sgr {
                out.push_str(&rest[..len]);
                rest = &rest[len..];
                continue;
            }
        }
        if needs(c) {
            let code = c as u32;
            if code <= 0xff {
                out.push_str(&format!("\\x{code:02x}"));
            } else {
                out.push_str(&format!("\\u{{{code:x}}}"));
            }
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::escape_controls;

    #[test]
    fn controls_are_shown_and_only_colour_passes() {
        let hostile = "host\x1b]0;owned\x07\x1b[2J\r\x1b[1;31mred\x1b[0m\tend\n";
        assert_eq!(escape_controls(hostile, false), "host\\x1b]0;owned\\x07\\x1b[2J\\x0d\\x1b[1;31mred\\x1b[0m\tend\n");
        assert_eq!(escape_controls(hostile, true), "host\\x1b]0;owned\\x07\\x1b[2J\\x0d\x1b[1;31mred\x1b[0m\tend\n");
        assert_eq!(escape_controls("plain text\n", false), "plain text\n");
    }
}
