//! The arithmetic of collective measurements, as nccl-tests defines it, kept
//! apart from the GPU code so it is tested without a GPU: bus bandwidth
//! factors, the data check's exact inputs and results, message-size sweeps
//! and stragglers.

use serde::{Deserialize, Serialize};

/// The collectives `topo probe` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Collective {
    AllReduce,
    AllGather,
    ReduceScatter,
    Broadcast,
    Reduce,
    AllToAll,
    #[serde(rename = "sendrecv")]
    SendRecv,
}

impl Collective {
    pub const ALL: [Collective; 7] = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::Broadcast,
        Collective::Reduce,
        Collective::AllToAll,
        Collective::SendRecv,
    ];

    /// `all_reduce`, as nccl-tests names its binaries (without `_perf`).
    pub fn name(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce",
            Collective::AllGather => "all_gather",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::Broadcast => "broadcast",
            Collective::Reduce => "reduce",
            Collective::AllToAll => "all_to_all",
            Collective::SendRecv => "sendrecv",
        }
    }

    pub fn from_name(name: &str) -> Option<Collective> {
        let name = name.trim().to_lowercase().replace('-', "_");
        let name = name.strip_suffix("_perf").unwrap_or(&name);
        Collective::ALL.into_iter().find(|c| c.name() == name || c.name().replace('_', "") == name)
    }

    /// nccl-tests' factor from algorithm to bus bandwidth for `ranks` ranks:
    /// what each rank's busiest link carries, so results compare with link speed.
    pub fn bus_factor(self, ranks: u32) -> f64 {
        let n = f64::from(ranks.max(1));
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::AllGather | Collective::ReduceScatter | Collective::AllToAll => (n - 1.0) / n,
            Collective::Broadcast | Collective::Reduce | Collective::SendRecv => 1.0,
        }
    }
}

/// (algbw, busbw) in GB/s (10^9) for `bytes` moved in `seconds` by `ranks` ranks.
pub fn bandwidths(collective: Collective, bytes: u64, seconds: f64, ranks: u32) -> (f64, f64) {
    if seconds <= 0.0 {
        return (0.0, 0.0);
    }
    let algbw = bytes as f64 / seconds / 1e9;
    (algbw, algbw * collective.bus_factor(ranks))
}

/// The data check's input: element `i` of rank `rank` holds a small integer,
/// exact in every float type, so every correct result is known exactly.
pub fn input(rank: u32, i: u64) -> f64 {
    f64::from(rank % 7 + 1) + (i % 3) as f64
}

/// What element `i` must hold on `rank` after the collective with sum
/// reductions and root 0. `None`: that rank's output is not defined (reduce
/// on a non-root rank). For all_gather and all_to_all, `i` indexes the
/// concatenated output of `ranks` blocks of `block` elements.
pub fn expected(collective: Collective, rank: u32, i: u64, ranks: u32, block: u64) -> Option<f64> {
    // The sum over ranks in closed form, so checking a GiB stays linear.
    let rank_terms = |n: u32| f64::from(n / 7 * 28 + (1..=n % 7).sum::<u32>());
    let sum = |i: u64| rank_terms(ranks) + f64::from(ranks) * (i % 3) as f64;
    let block = block.max(1);
    match collective {
        Collective::AllReduce => Some(sum(i)),
        Collective::Reduce => (rank == 0).then(|| sum(i)),
        Collective::Broadcast => Some(input(0, i)),
        // Rank r's block of the reduction.
        Collective::ReduceScatter => Some(sum(u64::from(rank) * block + i)),
        // Block b came from rank b.
        Collective::AllGather => Some(input((i / block) as u32, i % block)),
        // Block b came from rank b, which sent its block number `rank`.
        Collective::AllToAll => Some(input((i / block) as u32, u64::from(rank) * block + i % block)),
        // Ranks send to the next and receive from the previous.
        Collective::SendRecv => Some(input((rank + ranks - 1) % ranks, i)),
    }
}

/// Elements of `output` that differ from what `rank` must hold (the check
/// fails on any). `output` starts at element `start` of the rank's buffer, so
/// a large buffer is checked in pieces. Values are `f32`, as the probes move
/// them; the inputs are small integers, exact in `f32`.
///
/// Gigabytes go through here. Every expected value repeats with period 3
/// (within a block, for the per-block collectives), so each run is compared
/// against a three-entry table in a loop the compiler vectorises; the tests
/// hold it equal to [`expected`].
pub fn wrong_elements(collective: Collective, rank: u32, ranks: u32, block: u64, start: u64, output: &[f32]) -> u64 {
    if collective == Collective::Reduce && rank != 0 {
        return 0;
    }
    let block = block.max(1);
    let n = ranks.max(1);
    let rank_terms = (n / 7 * 28 + (1..=n % 7).sum::<u32>()) as f32;
    let base3 = (u64::from(rank) * block % 3) as u32;
    // The value at residue r (0, 1, 2) of the index the pattern follows.
    let table = |value: &dyn Fn(u32) -> f32| [value(0), value(1), value(2)];
    match collective {
        Collective::AllGather | Collective::AllToAll => {
            let mut wrong = 0;
            let mut at = start;
            let mut rest = output;
            while !rest.is_empty() {
                let (block_no, offset) = (at / block, at % block);
                let len = ((block - offset) as usize).min(rest.len());
                let source = (block_no % 7 + 1) as f32;
                let values = match collective {
                    Collective::AllGather => table(&|r| source + r as f32),
                    _ => table(&|r| source + ((base3 + r) % 3) as f32),
                };
                wrong += count_periodic(&rest[..len], (offset % 3) as usize, values);
                rest = &rest[len..];
                at += len as u64;
            }
            wrong
        }
        _ => {
            let values = match collective {
                Collective::Broadcast => table(&|r| 1.0 + r as f32),
                Collective::SendRecv => table(&|r| ((rank + n - 1) % n % 7 + 1) as f32 + r as f32),
                Collective::ReduceScatter => table(&|r| rank_terms + (n * ((base3 + r) % 3)) as f32),
                _ => table(&|r| rank_terms + (n * r) as f32),
            };
            count_periodic(output, (start % 3) as usize, values)
        }
    }
}

/// Elements of `values` that differ from `table[(phase + i) % 3]` (a NaN
/// differs from everything, so an unwritten 0xff-filled element counts).
fn count_periodic(values: &[f32], phase: usize, table: [f32; 3]) -> u64 {
    let t = [table[phase % 3], table[(phase + 1) % 3], table[(phase + 2) % 3]];
    let chunks = values.chunks_exact(3);
    let tail = chunks.remainder();
    let mut wrong = 0u64;
    for c in chunks {
        wrong += u64::from(c[0] != t[0]) + u64::from(c[1] != t[1]) + u64::from(c[2] != t[2]);
    }
    wrong + tail.iter().zip(t).map(|(v, want)| u64::from(*v != want)).sum::<u64>()
}

/// `8`, `64K`, `1M`, `4G` (binary units, as nccl-tests reads `-b`/`-e`).
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let value: u64 = digits.parse().ok()?;
    let scale: u64 = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        _ => return None,
    };
    value.checked_mul(scale)
}

/// Sizes from `min` to `max`, doubling (nccl-tests' `-f 2`), always ending on `max`.
pub fn sweep(min: u64, max: u64) -> Vec<u64> {
    let mut sizes = Vec::new();
    let mut size = min.max(1);
    while size < max {
        sizes.push(size);
        size = size.saturating_mul(2);
    }
    sizes.push(max.max(min));
    sizes
}

/// The median (the upper one of an even count); `None` for no values.
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut sorted: Vec<f64> = values.into_iter().collect();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied()
}

/// Ranks more than `slack` (0.10 = 10 %) slower than the median, with how much.
pub fn stragglers(times: &[(u32, f64)], slack: f64) -> Vec<(u32, f64)> {
    let Some(median) = median(times.iter().map(|(_, t)| *t)).filter(|m| *m > 0.0) else { return Vec::new() };
    times.iter().filter(|(_, t)| *t > median * (1.0 + slack)).map(|(r, t)| (*r, t / median - 1.0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_factors_match_nccl_tests() {
        // nccl-tests doc/PERFORMANCE.md: allreduce 2(n-1)/n, allgather and
        // reducescatter (n-1)/n, broadcast and reduce 1.
        assert_eq!(Collective::AllReduce.bus_factor(8), 1.75);
        assert_eq!(Collective::AllGather.bus_factor(8), 0.875);
        assert_eq!(Collective::ReduceScatter.bus_factor(4), 0.75);
        assert_eq!(Collective::AllToAll.bus_factor(2), 0.5);
        assert_eq!(Collective::Broadcast.bus_factor(8), 1.0);
        // One rank moves nothing across a link.
        assert_eq!(Collective::AllReduce.bus_factor(1), 0.0);
        // The 1 GiB out-of-place row of the real all_reduce_perf run in log 044
        // (8 ranks): 87174 us, algbw 12.32, busbw 21.56.
        let (algbw, busbw) = bandwidths(Collective::AllReduce, 1 << 30, 87_174e-6, 8);
        assert_eq!((format!("{algbw:.2}"), format!("{busbw:.2}")), ("12.32".to_string(), "21.56".to_string()));
        assert_eq!(bandwidths(Collective::AllReduce, 8, 0.0, 2), (0.0, 0.0));
    }

    /// The data check catches every wrong element and accepts the right results.
    #[test]
    fn data_check_results() {
        let (ranks, block) = (4u32, 6u64);
        for collective in Collective::ALL {
            for rank in 0..ranks {
                let len = match collective {
                    Collective::AllGather | Collective::AllToAll => block * u64::from(ranks),
                    _ => block,
                };
                let good: Vec<f32> =
                    (0..len).map(|i| expected(collective, rank, i, ranks, block).unwrap_or(-1.0) as f32).collect();
                assert_eq!(wrong_elements(collective, rank, ranks, block, 0, &good), 0, "{collective:?}");
                let mut bad = good.clone();
                bad[3] += 1.0;
                let defined = expected(collective, rank, 3, ranks, block).is_some();
                assert_eq!(
                    wrong_elements(collective, rank, ranks, block, 0, &bad),
                    u64::from(defined),
                    "{collective:?}"
                );
                // Checked in two pieces, the same count.
                let (head, tail) = bad.split_at(2);
                let pieces = wrong_elements(collective, rank, ranks, block, 0, head)
                    + wrong_elements(collective, rank, ranks, block, 2, tail);
                assert_eq!(pieces, u64::from(defined), "{collective:?}");
            }
        }
        // all_reduce of 8 ranks: every element is the sum of the inputs.
        assert_eq!(expected(Collective::AllReduce, 5, 0, 8, 1), Some((1..=7).sum::<u32>() as f64 + 1.0));
        // The closed form equals the plain sum for every rank count and residue.
        for ranks in 1..40u32 {
            for i in 0..6u64 {
                let plain: f64 = (0..ranks).map(|r| input(r, i)).sum();
                assert_eq!(expected(Collective::AllReduce, 0, i, ranks, 1), Some(plain), "{ranks} ranks, element {i}");
            }
        }
    }

    /// The counter-based check agrees with `expected` everywhere, starting
    /// at any element (a chunk boundary can fall anywhere in a block).
    #[test]
    fn fast_check_equals_the_definition() {
        for collective in Collective::ALL {
            for ranks in [1u32, 2, 3, 8, 9] {
                for block in [1u64, 2, 5, 7] {
                    for rank in 0..ranks {
                        let len = match collective {
                            Collective::AllGather | Collective::AllToAll => block * u64::from(ranks),
                            _ => block,
                        };
                        let good: Vec<f32> = (0..len)
                            .map(|i| expected(collective, rank, i, ranks, block).unwrap_or(f64::NAN) as f32)
                            .collect();
                        for start in 0..len {
                            let tail = &good[start as usize..];
                            let wrong = wrong_elements(collective, rank, ranks, block, start, tail);
                            assert_eq!(
                                wrong, 0,
                                "{collective:?} {ranks} ranks, block {block}, rank {rank}, from {start}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn names_sizes_sweeps_and_stragglers() {
        assert_eq!(Collective::from_name("all_reduce_perf"), Some(Collective::AllReduce));
        assert_eq!(Collective::from_name("all-gather"), Some(Collective::AllGather));
        assert_eq!(Collective::from_name("sendrecv"), Some(Collective::SendRecv));
        assert_eq!(Collective::from_name("scan"), None);
        assert_eq!(
            (parse_size("1M"), parse_size("4G"), parse_size("8"), parse_size("2x")),
            (Some(1 << 20), Some(4 << 30), Some(8), None)
        );
        assert_eq!(sweep(8, 64), [8, 16, 32, 64]);
        assert_eq!(sweep(8, 100), [8, 16, 32, 64, 100]);
        assert_eq!(sweep(64, 64), [64]);
        let times = [(0, 1.0), (1, 1.02), (2, 1.25), (3, 0.99)];
        let slow = stragglers(&times, 0.10);
        assert_eq!(slow.len(), 1);
        assert_eq!(slow[0].0, 2);
        assert!((slow[0].1 - 0.2255).abs() < 0.001, "{slow:?}");
    }
}
