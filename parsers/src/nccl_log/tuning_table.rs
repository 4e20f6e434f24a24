//! The algorithm/protocol table NCCL prints at init (rank 0, 2.18+):
//!
//! ```text
//!   Algorithm   |      Tree      |      Ring      | ...
//!   Protocol    |  LL | LL128 | Simple |  LL | ...
//!  Max NThreads |  512 | ...
//!     AllReduce |  8.0/ 37.9 | 16.5/ 112.0 | ...      (latency us / bandwidth GB/s)
//! ```
//!
//! Blocks of three algorithms repeat; lines of other threads can fall in between,
//! so rows are collected per printing thread.

use std::collections::HashMap;

use topo_model::nccl::{TuningModelEntry, TuningRange};

#[derive(Default)]
struct Block {
    algorithms: Vec<String>,
    protocols: Vec<String>,
}

/// Collects table rows; one table (the first printed) is kept.
#[derive(Default)]
pub struct TuningTable {
    blocks: HashMap<(Option<u64>, Option<u64>), Block>,
    entries: Vec<TuningModelEntry>,
    owner: Option<(Option<u64>, Option<u64>)>,
}

const MAX_ENTRIES: usize = 4096;

fn cells(row: &str) -> Option<(&str, Vec<&str>)> {
    let (head, rest) = row.split_once('|')?;
    Some((head.trim(), rest.split('|').map(str::trim).filter(|c| !c.is_empty()).collect()))
}

impl TuningTable {
    /// Offers an INFO message printed by (pid, tid); returns whether it was a table row.
    pub fn line(&mut self, pid: Option<u64>, tid: Option<u64>, message: &str) -> bool {
        if !message.contains('|') {
            return false;
        }
        let Some((head, values)) = cells(message) else { return false };
        let thread = (pid, tid);
        if self.owner.is_some_and(|o| o != thread) {
            // Another communicator's copy of the table: one is enough.
            return matches!(head, "Algorithm" | "Protocol" | "Max NThreads") || values.iter().all(|v| v.contains('/'));
        }
        match head {
            "Algorithm" => {
                self.blocks.entry(thread).or_default().algorithms = values.iter().map(|v| v.to_string()).collect();
                true
            }
            "Protocol" => {
                self.blocks.entry(thread).or_default().protocols = values.iter().map(|v| v.to_string()).collect();
                true
            }
            "Max NThreads" => true,
            collective if !collective.is_empty() && !values.is_empty() && values.iter().all(|v| v.contains('/')) => {
                let Some(block) = self.blocks.get(&thread) else { return false };
                let per_algorithm =
                    block.protocols.len().checked_div(block.algorithms.len().max(1)).unwrap_or(0).max(1);
                for (k, value) in values.iter().enumerate() {
                    let (Some(algorithm), Some(protocol)) =
                        (block.algorithms.get(k / per_algorithm), block.protocols.get(k))
                    else {
                        continue;
                    };
                    let Some((latency, bandwidth)) = value.split_once('/') else { continue };
                    let (Ok(latency_us), Ok(bandwidth_gbps)) =
                        (latency.trim().parse::<f64>(), bandwidth.trim().parse::<f64>())
                    else {
                        continue;
                    };
                    if bandwidth_gbps > 0.0 && self.entries.len() < MAX_ENTRIES {
                        self.owner = Some(thread);
                        self.entries.push(TuningModelEntry {
                            collective: collective.to_string(),
                            algorithm: algorithm.clone(),
                            protocol: protocol.clone(),
                            latency_us,
                            bandwidth_gbps,
                        });
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// The table, and the fastest choice per collective for sizes 1 B .. 16 GiB
    /// (powers of two), merged into ranges.
    pub fn finish(self) -> (Vec<TuningModelEntry>, Vec<TuningRange>) {
        let mut collectives: Vec<&str> = self.entries.iter().map(|e| e.collective.as_str()).collect();
        collectives.dedup();
        let mut ranges: Vec<TuningRange> = Vec::new();
        for collective in collectives {
            for power in 0..=34u32 {
                let bytes = 1u64 << power;
                let best = self
                    .entries
                    .iter()
                    .filter(|e| e.collective == collective)
                    .map(|e| (e, e.latency_us + bytes as f64 / (e.bandwidth_gbps * 1e3)))
                    .min_by(|a, b| a.1.total_cmp(&b.1));
                let Some((entry, _)) = best else { continue };
                match ranges.last_mut() {
                    Some(last)
                        if last.collective == collective
                            && last.algorithm == entry.algorithm
                            && last.protocol == entry.protocol =>
                    {
                        last.to_bytes = bytes
                    }
                    _ => ranges.push(TuningRange {
                        collective: collective.to_string(),
                        from_bytes: bytes,
                        to_bytes: bytes,
                        algorithm: entry.algorithm.clone(),
                        protocol: entry.protocol.clone(),
                    }),
                }
            }
        }
        (self.entries, ranges)
    }
}
