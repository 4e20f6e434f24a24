//! Which NCCL releases print a WARN from a source file.
//!
//! A WARN line carries its `file:line` and its wording, and both change
//! between releases: 2.29 moved the socket code from `misc/socket.cc` to
//! `os/linux.cc`, 2.29 added `offset` to the bootstrap root's mismatch
//! message. The pair places the release of the NCCL that printed it, even in
//! an excerpt with no `NCCL version` line; two hosts placed in releases that
//! do not overlap run different NCCLs. The table
//! (`data/nccl-warn-releases.tsv`) was read off NVIDIA/nccl's release tags.

use std::sync::LazyLock;

use super::pattern::{Pattern, collapse_spaces};

/// One row: a format printed from one file in a run of releases.
struct Row {
    first: u32,
    last: u32,
    file: &'static str,
    pattern: Pattern,
}

/// Formats with fewer literal characters than this (`%s`, `%s: %s`) would
/// place any text: they place none.
const MIN_LITERAL_CHARS: usize = 8;

static ROWS: LazyLock<Vec<Row>> = LazyLock::new(|| {
    include_str!("../../data/nccl-warn-releases.tsv")
        .lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let mut fields = line.splitn(4, '\t');
            let first = minor(fields.next()?)?;
            let last = minor(fields.next()?)?;
            let file = fields.next()?;
            let pattern = Pattern::new(fields.next()?);
            (pattern.specificity() >= MIN_LITERAL_CHARS).then_some(Row { first, last, file, pattern })
        })
        .collect()
});

/// `2.23` as 23.
fn minor(release: &str) -> Option<u32> {
    release.strip_prefix("2.")?.parse().ok()
}

/// The 2.x releases (lowest and highest minor) whose `file` (relative to
/// NCCL's `src/`) prints a WARN with this text, or `None` when no release's
/// does: a patched NCCL, a plugin, or a file this table does not know.
pub fn warn_releases(text: &str, file: &str) -> Option<(u32, u32)> {
    let text = collapse_spaces(text.trim());
    ROWS.iter()
        .filter(|row| row.file == file && row.pattern.matches_collapsed(&text))
        .map(|row| (row.first, row.last))
        .reduce(|(lo, hi), (first, last)| (lo.min(first), hi.max(last)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warns_wording_and_file_place_its_release() {
        // Corpus 1646 (devopsrustem/slurmv4): two hosts of one job, 2.29 and 2.27.
        let refused =
            "connect to 10.99.91.49<36141> returned Connection refused, exceeded error retry count after 35 attempts";
        assert_eq!(warn_releases(&format!("ncclOsSocketPollConnect: {refused}"), "os/linux.cc"), Some((29, 30)));
        assert_eq!(warn_releases(&format!("socketPollConnect: {refused}"), "misc/socket.cc"), Some((27, 28)));
        let mismatch = "Bootstrap Root : mismatch in info from procs, nranks 16 vs 16, nroots 1 vs 1, iroot 0 vs 0, offset 0 vs -981270526";
        assert_eq!(warn_releases(mismatch, "bootstrap.cc"), Some((23, 30)));
        // Not NCCL's file for it, or not NCCL's text.
        assert_eq!(warn_releases(mismatch, "misc/socket.cc"), None);
        assert_eq!(warn_releases("anything at all", "bootstrap.cc"), None);
    }

    /// The table and the newest release's own list of WARN formats
    /// (`data/nccl-warn-formats-v2.30.7-1.txt`) were read off the tags
    /// separately: every format of 2.30.7 is a row that runs to 2.30.
    #[test]
    fn the_table_holds_the_newest_releases_formats() {
        let formats = include_str!("../../data/nccl-warn-formats-v2.30.7-1.txt");
        let table = include_str!("../../data/nccl-warn-releases.tsv");
        let newest: std::collections::HashSet<(&str, String)> = table
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.splitn(4, '\t').collect();
                (f.len() == 4 && f[1] == "2.30").then(|| (f[2], collapse_spaces(f[3])))
            })
            .collect();
        let mut missing = Vec::new();
        for line in formats.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
            let Some((file, format)) = line.split_once('\t') else { continue };
            if !newest.contains(&(file, collapse_spaces(format))) {
                missing.push(line);
            }
        }
        assert!(
            missing.is_empty(),
            "{} formats of 2.30.7 not in the table: {:?}",
            missing.len(),
            &missing[..missing.len().min(5)]
        );
    }
}
