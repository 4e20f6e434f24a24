//! What the log reader keeps is bounded for the whole input, not per entity:
//! a per-communicator or per-host cap multiplied by thousands of crafted
//! communicators or hosts is no bound at all. Each table here has one cap over
//! everything read; past it a fact is counted as not kept (the report says how
//! many), so memory stays flat however long or hostile the log.

use std::collections::BTreeMap;

/// The tables with a cap of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Hosts,
    Processes,
    Threads,
    CommPointers,
    Ranks,
    RankHosts,
    RingOrderRanks,
    RingEdges,
    Trees,
    Connections,
    Progress,
    CommHosts,
    EnvHosts,
    HostDevices,
}

/// (table, name in the report, entries kept at most). Sized so that the full
/// INFO log of a 4,096-rank job with 32 channels fits (262,144 connection
/// lines), and the tables at their caps take well under 200 MiB together.
const CAPS: [(Table, &str, u64); 14] = [
    (Table::Hosts, "hosts", 16_384),
    (Table::Processes, "processes", 65_536),
    (Table::Threads, "threads", 65_536),
    (Table::CommPointers, "communicator pointers", 65_536),
    (Table::Ranks, "ranks", 131_072),
    (Table::RankHosts, "rank hosts", 131_072),
    (Table::RingOrderRanks, "ring order entries", 1_048_576),
    (Table::RingEdges, "ring neighbour entries", 262_144),
    (Table::Trees, "tree entries", 262_144),
    (Table::Connections, "connections", 262_144),
    (Table::Progress, "collective progress entries", 65_536),
    (Table::CommHosts, "communicator hosts", 131_072),
    (Table::EnvHosts, "environment entries", 16_384),
    (Table::HostDevices, "per-host devices", 65_536),
];

#[derive(Debug, Default)]
pub struct Budget {
    used: [u64; CAPS.len()],
    dropped: [u64; CAPS.len()],
}

impl Budget {
    /// Takes `n` entries of `table`; `false` (and counted) when that would pass its cap.
    pub fn take(&mut self, table: Table, n: u64) -> bool {
        let Some(i) = CAPS.iter().position(|(t, ..)| *t == table) else { return false };
        let cap = CAPS[i].2;
        if self.used[i].saturating_add(n) > cap {
            self.dropped[i] = self.dropped[i].saturating_add(1);
            return false;
        }
        self.used[i] += n;
        true
    }

    /// Facts not kept, by table (only tables that dropped any).
    pub fn not_kept(&self) -> BTreeMap<String, u64> {
        CAPS.iter()
            .zip(self.dropped)
            .filter(|(_, n)| *n > 0)
            .map(|((_, name, _), n)| ((*name).to_string(), n))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_holds_and_counts_what_it_refused() {
        let mut budget = Budget::default();
        assert!(budget.take(Table::Hosts, 16_384));
        assert!(!budget.take(Table::Hosts, 1));
        assert!(!budget.take(Table::Hosts, 1));
        assert!(budget.take(Table::Ranks, 1));
        assert_eq!(budget.not_kept(), BTreeMap::from([("hosts".to_string(), 2)]));
    }
}
