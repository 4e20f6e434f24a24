//! Host names as printed, folded into the real ones: another process's
//! write glued junk before a name, or cut its head off.

use super::*;

/// Hosts as printed, mapped to a canonical name: a name that is another known
/// name with junk glued in front (application output without a newline) is
/// folded into that name.
pub(super) fn canonical_hosts(lines: &HashMap<String, u64>) -> HashMap<String, String> {
    // Each name's proper suffixes are looked up (linear in the names' length,
    // not quadratic in their number): the longest known one printed more often wins.
    lines
        .iter()
        .map(|(name, count)| {
            let target = name
                .char_indices()
                .skip(1)
                .map(|(at, _)| &name[at..])
                .find(|suffix| lines.get(*suffix).is_some_and(|other| other > count))
                .map_or_else(|| name.clone(), str::to_string);
            (name.clone(), target)
        })
        .collect()
}

/// A name that is the tail of another known name whose process it shares
/// (`06c0s1b1n0:1436708:..` beside `x3006c0s1b1n0:1436708:..`): another
/// process's write cut the line's head. It is folded into the whole name,
/// printed more often; a shared pid keeps two real hosts whose names end
/// alike (`node1`, `gpunode1`) apart.
pub(super) fn fold_cut_heads(
    canonical: &mut HashMap<String, String>,
    lines: &HashMap<String, u64>,
    pids: &HashMap<&str, &BTreeSet<Option<u64>>>,
) {
    let mut by_pid: HashMap<u64, Vec<&str>> = HashMap::new();
    for (host, set) in pids {
        for pid in set.iter().flatten() {
            by_pid.entry(*pid).or_default().push(*host);
        }
    }
    let mut folded = Vec::new();
    for (name, count) in lines {
        if canonical.get(name) != Some(name) {
            continue;
        }
        let Some(own) = pids.get(name.as_str()) else { continue };
        let whole = own.iter().flatten().filter_map(|pid| by_pid.get(pid)).flatten().find(|other| {
            other.len() > name.len() && other.ends_with(name.as_str()) && lines.get(**other).is_some_and(|c| c > count)
        });
        if let Some(whole) = whole {
            folded.push((name.clone(), canonical.get(*whole).cloned().unwrap_or_else(|| whole.to_string())));
        }
    }
    canonical.extend(folded);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostnames_with_their_head_cut_fold_into_the_whole_one() {
        let lines: HashMap<String, u64> = [
            ("x3006c0s1b1n0".to_string(), 300),
            ("06c0s1b1n0".to_string(), 1),
            ("gpunode1".to_string(), 50),
            ("node1".to_string(), 20),
        ]
        .into();
        let sets: Vec<(&str, BTreeSet<Option<u64>>)> = vec![
            ("x3006c0s1b1n0", [Some(1436708), Some(1436705)].into()),
            ("06c0s1b1n0", [Some(1436708)].into()),
            ("gpunode1", [Some(7)].into()),
            ("node1", [Some(8)].into()),
        ];
        let pids: HashMap<&str, &BTreeSet<Option<u64>>> = sets.iter().map(|(h, s)| (*h, s)).collect();
        let mut canonical = canonical_hosts(&lines);
        fold_cut_heads(&mut canonical, &lines, &pids);
        assert_eq!(canonical["06c0s1b1n0"], "x3006c0s1b1n0");
        // Two hosts whose names end alike, with no process in common, stay two.
        assert_eq!(canonical["node1"], "node1");
    }

    #[test]
    fn glued_hostnames_fold_into_the_real_one() {
        let lines: HashMap<String, u64> = [("mew0".to_string(), 100), ("-1mew0".to_string(), 1)].into();
        assert_eq!(canonical_hosts(&lines)["-1mew0"], "mew0");
    }
}
