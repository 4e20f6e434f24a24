//! NCCL Inspector output: files of JSON objects, one per collective per rank
//! (`<host>-pid<pid>.log`), each with `header` (communicator id, rank,
//! n_ranks), `metadata` (hostname, pid) and `coll_perf` (collective, sequence
//! number, size, execution time, algorithm and bus bandwidth). Point-to-point
//! records (`p2p_perf`) are skipped.
//!
//! A collective's kernels run until every rank has joined, so the rank that
//! arrives last has the *shortest* execution time and the others' times
//! include the wait for it: the rank the others wait for is the one that is
//! consistently much faster than the rest.

use std::collections::BTreeMap;

use serde::Deserialize;
use topo_model::inspector::{InspectorRecord, InspectorStraggler};

#[derive(Debug, thiserror::Error)]
pub enum InspectorError {
    #[error("line {line}: not an NCCL Inspector record: {source}")]
    Json { line: u64, source: serde_json::Error },
}

/// Whether the head of a file looks like Inspector output.
pub fn looks_like_inspector(head: &str) -> bool {
    head.trim_start().starts_with('{')
        && head.contains("\"header\"")
        && (head.contains("\"coll_perf\"")
            || head.contains("\"p2p_perf\"")
            || head.contains("inspector_output_format_version"))
}

#[derive(Deserialize)]
struct Raw {
    header: Header,
    #[serde(default)]
    metadata: Metadata,
    coll_perf: Option<CollPerf>,
}

#[derive(Deserialize)]
struct Header {
    id: String,
    rank: u32,
    n_ranks: u32,
}

#[derive(Deserialize, Default)]
struct Metadata {
    hostname: Option<String>,
    pid: Option<u64>,
}

#[derive(Deserialize)]
struct CollPerf {
    coll: String,
    coll_sn: u64,
    #[serde(default)]
    coll_msg_size_bytes: u64,
    #[serde(default)]
    coll_exec_time_us: u64,
    #[serde(default)]
    coll_busbw_gbs: f64,
}

/// Every collective record of one file (objects one after another, pretty or one per line).
pub fn parse(file: &str, text: &str) -> Result<Vec<InspectorRecord>, InspectorError> {
    let mut out = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Raw>();
    loop {
        let offset = stream.byte_offset();
        // The next record starts after the whitespace that follows the last one.
        let rest = text.get(offset..).unwrap_or_default();
        let start = offset + (rest.len() - rest.trim_start().len());
        let line = text.get(..start).map_or(0, |t| t.bytes().filter(|b| *b == b'\n').count() as u64) + 1;
        match stream.next() {
            None => break,
            Some(Err(source)) => return Err(InspectorError::Json { line, source }),
            Some(Ok(raw)) => {
                let Some(perf) = raw.coll_perf else { continue };
                out.push(InspectorRecord {
                    file: file.to_string(),
                    line,
                    comm: raw.header.id,
                    rank: raw.header.rank,
                    n_ranks: raw.header.n_ranks,
                    host: raw.metadata.hostname,
                    pid: raw.metadata.pid,
                    coll: perf.coll,
                    sn: perf.coll_sn,
                    msg_size_bytes: perf.coll_msg_size_bytes,
                    exec_time_us: perf.coll_exec_time_us,
                    busbw_gbs: perf.coll_busbw_gbs,
                });
            }
        }
    }
    Ok(out)
}

/// A rank arrived last when the others' median time is at least this many times its own.
const WAIT_RATIO: f64 = 2.0;
/// At least this many fully recorded collectives before anyone is named.
const MIN_COMPARED: u64 = 3;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// One rank's late arrivals: the ratios, how many, and the widest case
/// (ratio, its record, the slowest rank's record).
type Tally<'a> = (Vec<f64>, u64, Option<(f64, &'a InspectorRecord, &'a InspectorRecord)>);

/// Per communicator: ranks that arrived last in at least half of the
/// collectives every rank recorded.
pub fn stragglers(records: &[InspectorRecord]) -> Vec<InspectorStraggler> {
    let mut by_op: BTreeMap<(&str, u64, &str), Vec<&InspectorRecord>> = BTreeMap::new();
    for r in records {
        by_op.entry((r.comm.as_str(), r.sn, r.coll.as_str())).or_default().push(r);
    }
    let mut tally: BTreeMap<(&str, u32), Tally> = BTreeMap::new();
    let mut compared: BTreeMap<&str, u64> = BTreeMap::new();
    for ((comm, _, _), ranks) in &by_op {
        let n = ranks.first().map_or(0, |r| r.n_ranks) as usize;
        if n < 2 || ranks.len() != n {
            continue;
        }
        *compared.entry(comm).or_default() += 1;
        let Some(fastest) = ranks.iter().min_by_key(|r| r.exec_time_us) else { continue };
        let Some(slowest) = ranks.iter().max_by_key(|r| r.exec_time_us) else { continue };
        let mut others: Vec<f64> =
            ranks.iter().filter(|r| r.rank != fastest.rank).map(|r| r.exec_time_us as f64).collect();
        let ratio = median(&mut others) / (fastest.exec_time_us.max(1) as f64);
        if ratio >= WAIT_RATIO {
            let entry = tally.entry((comm, fastest.rank)).or_default();
            entry.0.push(ratio);
            entry.1 += 1;
            if entry.2.is_none_or(|(best, _, _)| ratio > best) {
                entry.2 = Some((ratio, fastest, slowest));
            }
        }
    }
    tally
        .into_iter()
        .filter_map(|((comm, rank), (mut ratios, late, example))| {
            let total = compared.get(comm).copied().unwrap_or(0);
            if total < MIN_COMPARED || late * 2 < total {
                return None;
            }
            let (_, me, slow) = example?;
            Some(InspectorStraggler {
                comm: comm.to_string(),
                rank,
                host: me.host.clone(),
                pid: me.pid,
                compared: total,
                last_to_arrive: late,
                median_ratio: median(&mut ratios),
                example: (me.coll.clone(), me.sn, me.exec_time_us, slow.rank, slow.exec_time_us),
            })
        })
        .collect()
}
