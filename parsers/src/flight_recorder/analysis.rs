//! Where each rank of each process group stands, from all ranks' dumps: the
//! frontier (highest collective any rank entered), the ranks behind it (the
//! stuck or slow ones: everyone else waits for them), the ranks waiting in it,
//! calls that differ between ranks at one sequence id (a program bug), ranks
//! with no dump, and ranks that enter late most of the time.

use std::collections::{BTreeMap, BTreeSet};

use topo_model::flight_recorder::{
    CollectiveRecord, DumpSummary, GroupState, GroupVerdict, JobReport, Mismatch, RankState, Straggler,
};
use topo_model::nccl::RankInfo;

use super::FrError;
use super::dump::RankDump;

/// Collectives whose per-rank sizes legitimately differ (PyTorch's own
/// analyser exempts the all-to-alls; gather/scatter differ on the root).
const SIZES_MAY_DIFFER: &[&str] =
    &["all_to_all", "alltoall", "alltoall_base", "all_to_all_single", "gather", "scatter"];

/// A rank enters a collective "late" when it is the last, this far behind the first.
const LATE_MARGIN_NS: u64 = 100_000_000;
/// At least this many compared collectives before anyone is called a straggler.
const MIN_COMPARED: u64 = 3;
/// Mismatched sequence ids listed per group.
const MAX_MISMATCHES: usize = 16;

/// Everything the dumps say, with ranks placed on hosts and GPUs where `ranks`
/// (the NCCL log's rank table of the world communicator) says.
pub fn analyse(dumps: Vec<(String, Result<RankDump, FrError>)>, ranks: &[RankInfo]) -> JobReport {
    let mut report = JobReport::default();
    let mut by_rank: BTreeMap<u32, RankDump> = BTreeMap::new();
    for (file, result) in dumps {
        match result {
            Ok(dump) => {
                report.dumps.push(DumpSummary {
                    file: dump.file.clone(),
                    rank: dump.rank,
                    format: dump.format.into(),
                    version: dump.version.clone(),
                    entries: dump.entries,
                    error: dump.rank.is_none().then(|| "no rank in the file name (<prefix><rank>)".to_string()),
                });
                // Pickle and JSON of one rank say the same: the first read is kept.
                if let Some(rank) = dump.rank {
                    by_rank.entry(rank).or_insert(dump);
                }
            }
            Err(error) => report.dumps.push(DumpSummary {
                rank: super::rank_from_name(&file),
                file,
                format: String::new(),
                error: Some(error.to_string()),
                ..DumpSummary::default()
            }),
        }
    }
    let places: BTreeMap<u32, &RankInfo> = ranks.iter().map(|r| (r.rank, r)).collect();
    let names: BTreeSet<&String> = by_rank.values().flat_map(|d| d.groups.keys()).collect();
    for name in names {
        report.groups.push(group_state(name, &by_rank, &places));
    }
    report
}

/// The ranks a group should have: its `pg_config` entry (by name, or the only
/// one when there is one group), widened by the ranks that recorded it.
fn expected_ranks(name: &str, by_rank: &BTreeMap<u32, RankDump>) -> (BTreeSet<u32>, String) {
    let mut ranks = BTreeSet::new();
    let mut desc = String::new();
    for (rank, dump) in by_rank {
        let Some(track) = dump.groups.get(name) else { continue };
        ranks.insert(*rank);
        if desc.is_empty() {
            desc = track.desc.clone();
        }
        let config = dump.pg_config.get(name).or_else(|| {
            (dump.pg_config.len() == 1 && dump.groups.len() == 1).then(|| dump.pg_config.values().next()).flatten()
        });
        if let Some(config) = config {
            ranks.extend(config.ranks.iter().copied());
        }
    }
    (ranks, desc)
}

fn group_state(name: &str, by_rank: &BTreeMap<u32, RankDump>, places: &BTreeMap<u32, &RankInfo>) -> GroupState {
    let (expected, desc) = expected_ranks(name, by_rank);
    let mut members = Vec::new();
    let mut recent: Vec<(u32, &[CollectiveRecord])> = Vec::new();
    let mut no_dump = Vec::new();
    for &rank in &expected {
        let place = places.get(&rank);
        let dump = by_rank.get(&rank);
        let track = dump.and_then(|d| d.groups.get(name));
        if dump.is_none() {
            no_dump.push(rank);
        }
        if let Some(track) = track {
            recent.push((rank, &track.recent));
        }
        members.push(RankState {
            rank,
            host: place.and_then(|p| p.host.clone()),
            pid: place.and_then(|p| p.pid),
            cuda_dev: place.and_then(|p| p.cuda_dev),
            bus_id: place.and_then(|p| p.bus_id.map(|b| b.to_string())),
            file: dump.map(|d| d.file.clone()),
            last_entered: track.and_then(|t| t.last_entered.clone()),
            last_completed: track.and_then(|t| t.last_completed),
        });
    }
    let frontier = members.iter().filter_map(|m| m.last_entered.as_ref().map(|e| e.seq)).max();
    let mut verdict = GroupVerdict { no_dump, ..GroupVerdict::default() };
    if let Some(frontier) = frontier {
        let mut behind: Vec<(u64, u32)> = members
            .iter()
            .filter(|m| m.file.is_some())
            .filter_map(|m| {
                let seq = m.last_entered.as_ref().map_or(0, |e| e.seq);
                (seq < frontier).then_some((seq, m.rank))
            })
            .collect();
        behind.sort();
        verdict.behind = behind.into_iter().map(|(_, r)| r).collect();
        verdict.waiting = members
            .iter()
            .filter(|m| {
                m.last_entered.as_ref().is_some_and(|e| e.seq == frontier)
                    && m.last_completed.is_none_or(|c| c < frontier)
            })
            .map(|m| m.rank)
            .collect();
    }
    verdict.mismatches = mismatches(&recent);
    verdict.stragglers = stragglers(&recent);
    GroupState { name: name.to_string(), desc, ranks: expected.into_iter().collect(), members, frontier, verdict }
}

/// Each rank's record at every sequence id it still has.
fn by_seq<'a>(recent: &[(u32, &'a [CollectiveRecord])]) -> BTreeMap<u64, Vec<(u32, &'a CollectiveRecord)>> {
    let mut out: BTreeMap<u64, Vec<(u32, &CollectiveRecord)>> = BTreeMap::new();
    for (rank, records) in recent {
        for record in records.iter() {
            out.entry(record.seq).or_default().push((*rank, record));
        }
    }
    out
}

fn describe(kind: &str, r: &CollectiveRecord) -> String {
    match kind {
        "op" => r.op.clone(),
        "dtype" => format!("{} of {}", r.op, r.input_dtypes.join(",")),
        _ => format!("{} of {:?}", r.op, r.input_sizes),
    }
}

/// Sequence ids at which ranks called different collectives: op first, then
/// dtype, then sizes (where the op's sizes must agree).
fn mismatches(recent: &[(u32, &[CollectiveRecord])]) -> Vec<Mismatch> {
    let mut out = Vec::new();
    for (seq, calls) in by_seq(recent) {
        if calls.len() < 2 {
            continue;
        }
        let sizes_must_agree = calls.iter().all(|(_, r)| !SIZES_MAY_DIFFER.contains(&r.op.as_str()));
        let kinds: &[&str] = if sizes_must_agree { &["op", "dtype", "sizes"] } else { &["op", "dtype"] };
        for kind in kinds {
            let key = |r: &CollectiveRecord| -> String {
                match *kind {
                    "op" => r.op.clone(),
                    "dtype" => r.input_dtypes.join(","),
                    _ => format!("{:?}", r.input_sizes),
                }
            };
            let mut counts: BTreeMap<String, (usize, u32)> = BTreeMap::new();
            for (rank, r) in &calls {
                let e = counts.entry(key(r)).or_insert((0, *rank));
                e.0 += 1;
            }
            if counts.len() < 2 {
                continue;
            }
            // The most common call (ties: the one the lowest rank made) is taken as intended.
            let Some(common) =
                counts.iter().max_by(|a, b| a.1.0.cmp(&b.1.0).then(b.1.1.cmp(&a.1.1))).map(|c| c.0.clone())
            else {
                continue;
            };
            let odd: Vec<(u32, &CollectiveRecord)> = calls.iter().filter(|(_, r)| key(r) != common).copied().collect();
            let expected = calls.iter().find(|(_, r)| key(r) == common).map(|(_, r)| describe(kind, r));
            let actual: BTreeSet<String> = odd.iter().map(|(_, r)| describe(kind, r)).collect();
            out.push(Mismatch {
                seq,
                kind: (*kind).to_string(),
                odd: odd.iter().map(|(rank, _)| *rank).collect(),
                expected: expected.unwrap_or_default(),
                actual: actual.into_iter().collect::<Vec<_>>().join("; "),
            });
            break; // one verdict per sequence id: the most basic difference
        }
        if out.len() >= MAX_MISMATCHES {
            break;
        }
    }
    out
}

/// Ranks that entered most of the compared collectives last, by more than
/// [`LATE_MARGIN_NS`] (clocks of different hosts can differ: the evidence says so).
fn stragglers(recent: &[(u32, &[CollectiveRecord])]) -> Vec<Straggler> {
    let members = recent.len();
    let mut late: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    let mut compared = 0u64;
    for (_, calls) in by_seq(recent) {
        let times: Vec<(u32, u64)> = calls.iter().filter_map(|(rank, r)| Some((*rank, r.time_created_ns?))).collect();
        if members < 2 || times.len() != members {
            continue;
        }
        compared += 1;
        let first = times.iter().map(|t| t.1).min().unwrap_or(0);
        if let Some((rank, last)) = times.iter().max_by_key(|t| t.1) {
            let behind = last - first;
            if behind > LATE_MARGIN_NS {
                late.entry(*rank).or_default().push(behind);
            }
        }
    }
    if compared < MIN_COMPARED {
        return Vec::new();
    }
    late.into_iter()
        .filter(|(_, lags)| lags.len() as u64 * 2 >= compared)
        .map(|(rank, mut lags)| {
            lags.sort_unstable();
            let median = lags.get(lags.len() / 2).copied().unwrap_or(0);
            Straggler { rank, late: lags.len() as u64, compared, median_ms: median as f64 / 1e6 }
        })
        .collect()
}
