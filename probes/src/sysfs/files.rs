//! Reading single-value sysfs files without ever failing the run.

use std::io::{ErrorKind, Read};
use std::path::Path;

/// Problems met while reading, reported on stderr and kept in the snapshot.
#[derive(Debug, Default)]
pub struct Warnings(Vec<String>);

impl Warnings {
    pub fn push(&mut self, path: &Path, problem: &str) {
        self.0.push(format!("{}: {problem}; taken as unknown", path.display()));
    }

    /// The warnings, with paths shown relative to the root so a capture replays
    /// with the same text wherever it is unpacked.
    pub fn into_vec(self, root: &Path) -> Vec<String> {
        let prefix = |p: &Path| format!("{}/", p.display().to_string().trim_end_matches('/'));
        let mut prefixes = vec![prefix(root)];
        // Device paths are resolved through symlinks, so they start with the
        // canonical root.
        prefixes.extend(std::fs::canonicalize(root).ok().map(|p| prefix(&p)));
        if prefixes.iter().any(|p| p == "/") {
            return self.0;
        }
        self.0
            .into_iter()
            .map(|w| match prefixes.iter().find_map(|p| w.strip_prefix(p.as_str())) {
                Some(rest) => format!("<root>/{rest}"),
                None => w,
            })
            .collect()
    }
}

/// Files larger than this are not sysfs attributes; refuse to slurp them.
const MAX_ATTRIBUTE_BYTES: u64 = 64 * 1024;

/// Reads a one-value file, trimmed. `None` and no warning when it does not exist
/// (many attributes are optional); `None` and a warning when it exists but cannot
/// be read, is huge, or is not UTF-8. One open and one read: this runs for every
/// attribute of every PCI function.
pub fn read_optional(path: &Path, warnings: &mut Warnings) -> Option<String> {
    read_attribute(path, false, warnings)
}

/// Like [`read_optional`], but a missing file is worth a warning too.
pub fn read_expected(path: &Path, warnings: &mut Warnings) -> Option<String> {
    read_attribute(path, true, warnings)
}

fn read_attribute(path: &Path, expected: bool, warnings: &mut Warnings) -> Option<String> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if expected {
                warnings.push(path, "missing");
            }
            return None;
        }
        Err(e) => {
            warnings.push(path, &format!("unreadable ({e})"));
            return None;
        }
    };
    let mut bytes = Vec::new();
    match file.take(MAX_ATTRIBUTE_BYTES + 1).read_to_end(&mut bytes) {
        Ok(_) if bytes.len() as u64 > MAX_ATTRIBUTE_BYTES => {
            warnings.push(path, "too large for a sysfs attribute");
            None
        }
        Ok(_) => match String::from_utf8(bytes) {
            Ok(text) => Some(text.trim().to_string()),
            Err(_) => {
                warnings.push(path, "not UTF-8 text");
                None
            }
        },
        // Some attributes (a down link's `speed`) answer EINVAL by design.
        Err(e) if e.raw_os_error() == Some(22) => None,
        Err(e) => {
            warnings.push(path, &format!("unreadable ({e})"));
            None
        }
    }
}

/// Reads and parses a file; text that does not parse is a warning.
pub fn read_parsed<T>(
    path: &Path,
    expected: bool,
    warnings: &mut Warnings,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Option<T> {
    let text = if expected { read_expected(path, warnings)? } else { read_optional(path, warnings)? };
    let value = parse(&text);
    if value.is_none() {
        warnings.push(path, &format!("unreadable value {:?}", truncate(&text)));
    }
    value
}

fn truncate(text: &str) -> String {
    text.chars().take(60).collect()
}

/// Parses `0x10de` style hex.
pub fn parse_hex_u32(text: &str) -> Option<u32> {
    u32::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()
}

pub fn parse_hex_u16(text: &str) -> Option<u16> {
    u16::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()
}

/// The final component of a symlink's target (`driver` -> `nvidia`).
pub fn link_name(path: &Path) -> Option<String> {
    std::fs::read_link(path).ok()?.file_name().map(|n| n.to_string_lossy().into_owned())
}
