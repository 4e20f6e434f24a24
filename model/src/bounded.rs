//! Reading a whole input with a byte limit, whatever the file says its size
//! is: `/dev/zero`, `/dev/urandom`, a FIFO and `/proc` files report 0 (or
//! nothing) and would otherwise be read forever. `-` is standard input.

use std::io::Read;
use std::path::Path;

/// The bytes of `path`, or `Ok(None)` when it holds more than `max` bytes
/// (reading stops one byte past the limit).
pub fn read_capped(path: &Path, max: u64) -> std::io::Result<Option<Vec<u8>>> {
    if path.as_os_str() == "-" {
        read_capped_from(std::io::stdin().lock(), max)
    } else {
        read_capped_from(std::fs::File::open(path)?, max)
    }
}

/// The bytes of `reader` to its end, or `Ok(None)` once more than `max` have
/// come: the one limit every input of topo is read under (files, stdin,
/// FIFOs; `src/input.rs` names the input in its errors around this).
pub fn read_capped_from(reader: impl Read, max: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    reader.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= max).then_some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_never_ends_stops_at_the_limit() {
        assert_eq!(read_capped(Path::new("/dev/zero"), 1024).unwrap(), None);
        let dir = std::env::temp_dir().join(format!("topo-bounded-{}", std::process::id()));
        std::fs::write(&dir, b"12345").unwrap();
        assert_eq!(read_capped(&dir, 5).unwrap().as_deref(), Some(&b"12345"[..]));
        assert_eq!(read_capped(&dir, 4).unwrap(), None);
        std::fs::remove_file(&dir).unwrap();
    }
}
