//! Writing results: stdout for results, stderr for notices; colour only on a
//! terminal and never with `NO_COLOR`.

use std::io::{IsTerminal, Write};

/// Writes the whole text to stdout. A closed pipe surfaces as an error that
/// `main` turns into a quiet exit.
pub fn print(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
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
    eprintln!("topo: warning: {message}");
}

pub fn notice(message: &str) {
    eprintln!("topo: {message}");
}
