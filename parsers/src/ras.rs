//! NCCL RAS status output (`ncclras`, or `nc localhost 28028` + `STATUS`):
//! the text report (2.24+) and the JSON one (`ncclras -f json`, 2.28.7+).
//! The text is for people and changes between releases, so lines are matched
//! by their wording (NCCL's `src/ras/client_support.cc`) and anything else is
//! skipped; the JSON is a dump of RAS's raw data and is read by field name.

use topo_model::ras::{RasCommunicator, RasGroup, RasMismatch, RasProcess, RasRankRef, RasStatus};

#[derive(Debug, thiserror::Error)]
pub enum RasError {
    #[error("not NCCL RAS JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("not NCCL RAS output: {0}")]
    Shape(&'static str),
}

/// A `#0-0 (27a079b828ff1a75) MISMATCH` block header: (id, hash, kind).
fn comm_header(line: &str) -> Option<(String, String, String)> {
    let mut words = line.split_whitespace();
    let id = words.next().filter(|w| w.starts_with('#') && w.contains('-'))?;
    let hash = words.next()?.strip_prefix('(')?.strip_suffix(')')?;
    let kind = words.next().unwrap_or_default();
    hash.bytes().all(|b| b.is_ascii_hexdigit()).then(|| (id.to_string(), hash.to_string(), kind.to_string()))
}

/// Whether `text` (the start of a file) is RAS output.
pub fn looks_like_ras(text: &str) -> bool {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') {
        return text.contains("\"communicators\"") && (text.contains("\"nccl_version\"") || text.contains("\"ras\""));
    }
    text.contains("Job summary\n====")
        || text.contains("Communicators... (")
        || text.lines().any(|l| l.starts_with("Group     Comms"))
        || text.lines().any(|l| comm_header(l).is_some())
}

/// Whether a RAS text output also holds log lines: users paste the RAS
/// status together with the job's NCCL or framework errors, which are then
/// read as a log as well. RAS's own header (`NCCL version 2.26.2 compiled
/// with CUDA 12.4`) does not count.
pub fn carries_log_lines(text: &str) -> bool {
    !text.trim_start().starts_with('{')
        && text.lines().any(|l| !l.trim_start().starts_with("NCCL version") && crate::nccl_log::is_log_line(l))
}

pub fn parse(file: &str, text: &str) -> Result<RasStatus, RasError> {
    if text.trim_start().starts_with('{') { parse_json(file, text) } else { Ok(parse_text(file, text)) }
}

#[derive(PartialEq)]
enum Block {
    None,
    Dead,
    IncompleteProcesses,
    Comm { id: String, hash: String },
}

fn num(word: Option<&str>) -> Option<u64> {
    word?.trim_end_matches([',', ':']).parse().ok()
}

/// `Process 3487984 on node 172.16.64.213 managing GPU 5` (or `GPUs 4, 5`).
fn process_line(line: &str) -> Option<RasProcess> {
    let rest = line.strip_prefix("Process ")?;
    let mut words = rest.split_whitespace();
    let pid = num(words.next())?;
    (words.next()? == "on" && words.next()? == "node").then_some(())?;
    let host = words.next()?.to_string();
    let gpus = rest.split_once("managing GPU").map_or(Vec::new(), |(_, g)| {
        g.trim_start_matches('s').split([',', ' ']).filter_map(|x| x.trim().parse().ok()).collect()
    });
    Some(RasProcess { pid, host, gpus })
}

/// `Rank 12 -- GPU 4 managed by process 323032 on node 10.137.190.124`.
fn rank_line(line: &str, comm: &str, hash: &str) -> Option<RasRankRef> {
    let rest = line.strip_prefix("Rank ")?;
    let words: Vec<&str> = rest.split_whitespace().collect();
    let rank = u32::try_from(num(words.first().copied())?).ok()?;
    let after = |key: &str| words.iter().position(|w| *w == key).and_then(|i| words.get(i + 1).copied());
    Some(RasRankRef {
        comm: comm.to_string(),
        hash: Some(hash.to_string()),
        rank,
        gpu: num(after("GPU")).and_then(|g| u32::try_from(g).ok()),
        pid: num(after("process")),
        host: after("node").map(str::to_string),
        flags: Vec::new(),
    })
}

fn parse_text(file: &str, text: &str) -> RasStatus {
    let mut status = RasStatus { file: file.to_string(), format: "text".into(), ..RasStatus::default() };
    let mut block = Block::None;
    let mut in_table = false;
    for raw in text.lines() {
        let line = raw.trim();
        if let Some(rest) = line.strip_prefix("NCCL version ") {
            status.nccl_version = rest.split_whitespace().next().map(str::to_string);
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        // The job summary's one row of five numbers.
        if status.nodes.is_none() && words.len() == 5 && words.iter().all(|w| w.parse::<u64>().is_ok()) {
            let n: Vec<u64> = words.iter().filter_map(|w| w.parse().ok()).collect();
            status.nodes = n.first().copied();
            status.processes = n.get(3).copied();
            status.gpus = n.get(4).copied();
            continue;
        }
        if line.starts_with("Group ") && line.contains("Comms") {
            in_table = true;
            continue;
        }
        if in_table {
            if line.starts_with('#') {
                continue;
            }
            // group, comms, nodes/comm, ranks/node, ranks/comm, ranks in group, status, errors
            if words.len() >= 8 && words.first().is_some_and(|w| w.parse::<u64>().is_ok()) {
                status.communicators.push(RasCommunicator {
                    id: format!("#{}", words.first().copied().unwrap_or_default()),
                    hash: None,
                    ranks: num(words.get(4).copied()),
                    status: words.get(6).copied().unwrap_or_default().to_string(),
                    errors: words.get(7).copied().unwrap_or_default().to_string(),
                });
                continue;
            }
            in_table = false;
        }
        if !raw.starts_with(' ') {
            block = match line {
                "DEAD" => Block::Dead,
                "INCOMPLETE" => Block::IncompleteProcesses,
                _ => match comm_header(line) {
                    Some((id, hash, _)) => Block::Comm { id, hash },
                    None => Block::None,
                },
            };
            continue;
        }
        if let Some(process) = process_line(line) {
            match block {
                Block::Dead => status.dead.push(process),
                _ => status.unresponsive.push(process),
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("Encountered ") {
            status.timeouts = num(rest.split_whitespace().next());
            continue;
        }
        let Block::Comm { id, hash } = &block else { continue };
        if let Some(rest) = line.strip_prefix("The missing rank: ").or_else(|| line.strip_prefix("The missing ranks: "))
        {
            for rank in rest.split(',').filter_map(|r| r.trim().parse().ok()) {
                status.missing_ranks.push(RasRankRef {
                    comm: id.clone(),
                    hash: Some(hash.clone()),
                    rank,
                    ..RasRankRef::default()
                });
            }
        } else if let Some(what) = line.strip_prefix("Communicator ranks have different ") {
            status.mismatches.push(RasMismatch {
                comm: id.clone(),
                hash: Some(hash.clone()),
                what: what.to_string(),
                groups: Vec::new(),
            });
        } else if let Some(group) = group_line(&words) {
            if let Some(m) = status.mismatches.last_mut() {
                m.groups.push(group);
            }
        } else if let Some(rank) = rank_line(line, id, hash) {
            if let Some(group) = status.mismatches.last_mut().and_then(|m| m.groups.last_mut()) {
                group.ranks.push(rank);
            } else {
                status.missing_ranks.push(rank);
            }
        }
    }
    status
}

/// `26 ranks have launched up to operation 6650` / `4 ranks have status RUNNING`.
fn group_line(words: &[&str]) -> Option<RasGroup> {
    let count = num(words.first().copied())?;
    let rank_word = words.get(1)?;
    if !rank_word.starts_with("rank") || !matches!(words.get(2), Some(&"have") | Some(&"has")) {
        return None;
    }
    let value = words.last()?.to_string();
    Some(RasGroup { count, value, ranks: Vec::new() })
}

fn parse_json(file: &str, text: &str) -> Result<RasStatus, RasError> {
    use serde_json::Value;
    let doc: Value = serde_json::from_str(text)?;
    let comms = doc.get("communicators").and_then(Value::as_array).ok_or(RasError::Shape("no `communicators`"))?;
    let mut status = RasStatus {
        file: file.to_string(),
        format: "json".into(),
        nccl_version: doc.get("nccl_version").and_then(Value::as_str).map(str::to_string),
        timeouts: doc.pointer("/ras/timeouts_count").and_then(Value::as_u64),
        ..RasStatus::default()
    };
    let mut hosts = std::collections::BTreeSet::new();
    let mut pids = std::collections::BTreeSet::new();
    for comm in comms {
        let hash = comm.get("hash").and_then(Value::as_str).unwrap_or_default().to_string();
        let rank_ref = |r: &Value| -> Option<RasRankRef> {
            let flags = r
                .get("status")
                .and_then(Value::as_object)
                .map(|s| s.iter().filter(|(_, v)| v.as_bool() == Some(true)).map(|(k, _)| k.clone()).collect())
                .unwrap_or_default();
            Some(RasRankRef {
                comm: hash.clone(),
                hash: Some(hash.clone()),
                rank: u32::try_from(r.get("rank")?.as_u64()?).ok()?,
                gpu: r.get("cuda_dev").and_then(Value::as_u64).and_then(|g| u32::try_from(g).ok()),
                pid: r.get("pid").and_then(Value::as_u64),
                host: r.get("host").and_then(Value::as_str).map(str::to_string),
                flags,
            })
        };
        let ranks: Vec<&Value> =
            comm.get("ranks").and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default();
        for r in &ranks {
            hosts.extend(r.get("host").and_then(Value::as_str).map(str::to_string));
            pids.extend(r.get("pid").and_then(Value::as_u64));
        }
        let missing: Vec<RasRankRef> =
            comm.get("missing_ranks").and_then(Value::as_array).into_iter().flatten().filter_map(rank_ref).collect();
        let errors = if !missing.is_empty() { "INCOMPLETE" } else { "OK" };
        status.communicators.push(RasCommunicator {
            id: hash.clone(),
            hash: Some(hash.clone()),
            ranks: comm.get("size").and_then(Value::as_u64),
            status: String::new(),
            errors: errors.into(),
        });
        for m in &missing {
            if m.flags.iter().any(|f| f == "considered_dead") {
                status.dead.push(RasProcess {
                    pid: m.pid.unwrap_or(0),
                    host: m.host.clone().unwrap_or_default(),
                    gpus: m.gpu.into_iter().collect(),
                });
            }
        }
        status.missing_ranks.extend(missing);
        // Per-op collective counts that differ between the ranks that answered.
        let mut ops: std::collections::BTreeMap<String, std::collections::BTreeMap<u64, Vec<RasRankRef>>> =
            Default::default();
        for r in &ranks {
            let Some(counts) = r.get("collective_counts").and_then(Value::as_object) else { continue };
            for (op, count) in counts {
                if let (Some(count), Some(rr)) = (count.as_u64(), rank_ref(r)) {
                    ops.entry(op.clone()).or_default().entry(count).or_default().push(rr);
                }
            }
        }
        for (op, by_count) in ops.into_iter().filter(|(_, c)| c.len() > 1) {
            status.mismatches.push(RasMismatch {
                comm: hash.clone(),
                hash: Some(hash.clone()),
                what: format!("{op} operation counts"),
                groups: by_count
                    .into_iter()
                    .map(|(count, ranks)| RasGroup { count: ranks.len() as u64, value: count.to_string(), ranks })
                    .collect(),
            });
        }
    }
    status.nodes = (!hosts.is_empty()).then_some(hosts.len() as u64);
    status.processes = (!pids.is_empty()).then_some(pids.len() as u64);
    Ok(status)
}
