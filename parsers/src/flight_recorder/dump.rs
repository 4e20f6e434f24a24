//! One rank's dump, pickle or JSON, reduced to what the analysis needs: per
//! process group, the last collective entered, the last completed, and a
//! window of recent entries to compare across ranks. Every dump format
//! version 2.x (PyTorch 2.2 to today) is read: fields are looked up by name and
//! the ones a version lacks stay empty (`seq_id` before `collective_seq_id`;
//! no dtypes before 2.3; no `pg_status` before 2.4; no `is_p2p` before 2.5).

use std::collections::BTreeMap;

use serde::Deserialize;
use topo_model::flight_recorder::CollectiveRecord;

use super::FrError;
use super::pickle::{NodeId, Pickle};

/// Point-to-point operations (`nccl:send 0->1`, `nccl:recv 1<-0`), left out of the
/// collective analysis: they have their own sequence (`p2p_seq_id`).
const P2P_OPS: &[&str] = &["send", "recv", "isend", "irecv", "batch_isend_irecv"];

/// Recent entries kept per rank and group for cross-rank comparison.
pub const WINDOW: usize = 32;

/// What one dump file says.
#[derive(Debug, Clone, Default)]
pub struct RankDump {
    pub file: String,
    pub rank: Option<u32>,
    pub format: &'static str,
    pub version: Option<String>,
    pub entries: u64,
    /// Group name -> ranks, from `pg_config`.
    pub pg_config: BTreeMap<String, PgConfig>,
    pub groups: BTreeMap<String, GroupTrack>,
}

#[derive(Debug, Clone, Default)]
pub struct PgConfig {
    pub desc: String,
    pub ranks: Vec<u32>,
}

/// One group as one rank recorded it.
#[derive(Debug, Clone, Default)]
pub struct GroupTrack {
    pub desc: String,
    pub pg_id: Option<i64>,
    pub last_entered: Option<CollectiveRecord>,
    pub last_completed: Option<u64>,
    /// The last [`WINDOW`] collectives, oldest first.
    pub recent: Vec<CollectiveRecord>,
}

/// One entry, format-neutral.
#[derive(Default)]
struct Entry {
    profiling_name: String,
    input_sizes: Vec<Vec<u64>>,
    output_sizes: Vec<Vec<u64>>,
    input_dtypes: Vec<String>,
    state: String,
    retired: bool,
    time_created_ns: Option<u64>,
}

/// A pickle (protocol 2+) whose root is a dict, or a JSON object, holding `entries`.
pub fn looks_like_dump(head: &[u8]) -> bool {
    let has = |needle: &[u8]| head.windows(needle.len()).any(|w| w == needle);
    let pickle = head.first() == Some(&0x80) && has(b"entries");
    let json = head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
        && has(b"\"entries\"")
        && (has(b"\"pg_config\"") || has(b"\"version\"") || has(b"profiling_name"));
    pickle || json
}

/// The rank a file belongs to: its name's trailing digits (after dropping an
/// extension), as PyTorch's `fr_trace` reads `<prefix><rank>`.
pub fn rank_from_name(name: &str) -> Option<u32> {
    let base = name.rsplit('/').next().unwrap_or(name);
    let stem = match base.rsplit_once('.') {
        Some((stem, ext)) if !ext.is_empty() && !ext.bytes().all(|b| b.is_ascii_digit()) => stem,
        _ => base,
    };
    let digits: String = stem.chars().rev().take_while(|c| c.is_ascii_digit()).collect();
    digits.chars().rev().collect::<String>().parse().ok()
}

pub fn read(file: &str, bytes: &[u8]) -> Result<RankDump, FrError> {
    let mut dump = RankDump { file: file.to_string(), rank: rank_from_name(file), ..RankDump::default() };
    let mut status: BTreeMap<String, i64> = BTreeMap::new();
    if bytes.first() == Some(&0x80) {
        dump.format = "pickle";
        read_pickle(bytes, &mut dump, &mut status)?;
    } else {
        dump.format = "json";
        read_json(bytes, &mut dump, &mut status)?;
    }
    if let Some(version) = &dump.version {
        let major = version.split('.').next().and_then(|m| m.trim().parse::<u32>().ok());
        if major != Some(2) {
            return Err(FrError::Version(version.clone()));
        }
    }
    for track in dump.groups.values_mut() {
        // Gathered newest first.
        track.recent.reverse();
        track.last_entered = track.recent.iter().max_by_key(|r| r.seq).cloned();
    }
    // pg_status (2.4+) counts completions the entries may no longer show.
    for track in dump.groups.values_mut() {
        let key = track.pg_id.map(|id| id.to_string());
        if let Some(done) = key.and_then(|k| status.get(&k)).and_then(|v| u64::try_from(*v).ok()) {
            track.last_completed = Some(track.last_completed.map_or(done, |c| c.max(done)));
        }
    }
    Ok(dump)
}

/// What every entry gives cheaply; the full record is built only for the
/// newest [`WINDOW`] entries of each group (entries are visited newest first).
struct Cheap<'e> {
    pg_name: &'e str,
    profiling_name: &'e str,
    seq: Option<u64>,
    completed: bool,
    is_p2p: bool,
}

fn absorb(dump: &mut RankDump, cheap: Cheap<'_>, build: impl FnOnce() -> (String, Option<i64>, CollectiveRecord)) {
    // Before `is_p2p` (2.5), point-to-point entries carry the last collective's sequence id.
    let op = cheap.profiling_name.rsplit(':').next().unwrap_or_default().trim_start();
    let p2p = cheap.is_p2p || P2P_OPS.iter().any(|p| op.starts_with(p));
    let Some(seq) = cheap.seq.filter(|_| !p2p) else { return };
    if !dump.groups.contains_key(cheap.pg_name) {
        dump.groups.insert(cheap.pg_name.to_string(), GroupTrack::default());
    }
    let Some(track) = dump.groups.get_mut(cheap.pg_name) else { return };
    if cheap.completed {
        track.last_completed = Some(track.last_completed.map_or(seq, |c| c.max(seq)));
    }
    if track.recent.len() < WINDOW {
        let (desc, pg_id, record) = build();
        if track.desc.is_empty() {
            track.desc = desc;
        }
        if track.pg_id.is_none() {
            track.pg_id = pg_id;
        }
        track.recent.push(record);
    }
}

fn record(seq: u64, index: u64, e: Entry) -> CollectiveRecord {
    CollectiveRecord {
        seq,
        entry: index,
        op: e.profiling_name.rsplit(':').next().unwrap_or_default().to_string(),
        profiling_name: e.profiling_name,
        input_sizes: e.input_sizes,
        output_sizes: e.output_sizes,
        input_dtypes: e.input_dtypes,
        state: e.state,
        retired: e.retired,
        time_created_ns: e.time_created_ns,
    }
}

/// `"[0, 1, 2, 3]"` (how pg_config writes ranks) or a list of numbers.
fn parse_rank_list(text: &str) -> Vec<u32> {
    text.trim_matches(|c| c == '[' || c == ']').split(',').filter_map(|r| r.trim().parse().ok()).collect()
}

fn read_pickle(bytes: &[u8], dump: &mut RankDump, status: &mut BTreeMap<String, i64>) -> Result<(), FrError> {
    let p = Pickle::parse(bytes)?;
    let root = p.root();
    if !matches!(p.node(root), super::pickle::Node::Dict(_)) {
        return Err(FrError::Shape("the pickle's root is not a dict"));
    }
    let entries_node = p.get(root, "entries").ok_or(FrError::Shape("no `entries` in the dump"))?;
    dump.version = p.get(root, "version").and_then(|v| p.text(v)).map(|v| v.into_owned());
    if let Some(config) = p.get(root, "pg_config") {
        for (name, value) in p.items(config) {
            let Some(name) = p.text(name) else { continue };
            let desc = p.get(value, "desc").and_then(|d| p.text(d)).unwrap_or_default().into_owned();
            let ranks = match p.get(value, "ranks") {
                Some(r) if p.len(r) > 0 => p.list(r).filter_map(|x| u32::try_from(p.int(x)?).ok()).collect(),
                Some(r) => p.text(r).map(|t| parse_rank_list(&t)).unwrap_or_default(),
                None => Vec::new(),
            };
            dump.pg_config.insert(name.into_owned(), PgConfig { desc, ranks });
        }
    }
    if let Some(pg_status) = p.get(root, "pg_status") {
        for (pg, value) in p.items(pg_status) {
            let key = p.text(pg).map(|k| k.into_owned()).or_else(|| p.int(pg).map(|i| i.to_string()));
            let done = p.get(value, "last_completed_collective").and_then(|v| p.int(v));
            if let (Some(key), Some(done)) = (key, done) {
                status.insert(key, done);
            }
        }
    }
    let sizes = |id: Option<NodeId>| -> Vec<Vec<u64>> {
        id.map(|id| {
            p.list(id).map(|shape| p.list(shape).filter_map(|d| u64::try_from(p.int(d)?).ok()).collect()).collect()
        })
        .unwrap_or_default()
    };
    let text = |id: Option<NodeId>| id.and_then(|id| p.text(id)).map(|t| t.into_owned()).unwrap_or_default();
    let entries: Vec<NodeId> = p.list(entries_node).collect();
    dump.entries = entries.len() as u64;
    for (index, &e) in entries.iter().enumerate().rev() {
        let pg_node = p.get(e, "process_group");
        let pg_name = pg_node.and_then(|g| p.list(g).next()).and_then(|n| p.text(n)).unwrap_or_default();
        let state = p.get(e, "state").and_then(|s| p.text(s)).unwrap_or_default();
        let retired = p.get(e, "retired").and_then(|v| p.bool(v)).unwrap_or(false);
        let seq =
            p.get(e, "collective_seq_id").or_else(|| p.get(e, "seq_id")).and_then(|v| u64::try_from(p.int(v)?).ok());
        let name = p.get(e, "profiling_name").and_then(|n| p.text(n)).unwrap_or_default();
        let cheap = Cheap {
            pg_name: &pg_name,
            profiling_name: &name,
            seq,
            completed: state == "completed" || retired,
            is_p2p: p.get(e, "is_p2p").and_then(|v| p.bool(v)).unwrap_or(false),
        };
        absorb(dump, cheap, || {
            let entry = Entry {
                profiling_name: text(p.get(e, "profiling_name")),
                input_sizes: sizes(p.get(e, "input_sizes")),
                output_sizes: sizes(p.get(e, "output_sizes")),
                input_dtypes: p
                    .get(e, "input_dtypes")
                    .map(|d| p.list(d).filter_map(|x| p.text(x).map(|t| t.into_owned())).collect())
                    .unwrap_or_default(),
                state: state.to_string(),
                retired,
                time_created_ns: p.get(e, "time_created_ns").and_then(|v| u64::try_from(p.int(v)?).ok()),
            };
            let desc = text(pg_node.and_then(|g| p.list(g).nth(1)));
            (desc, p.get(e, "pg_id").and_then(|v| p.int(v)), record(seq.unwrap_or_default(), index as u64, entry))
        });
    }
    Ok(())
}

#[derive(Deserialize)]
struct JsonDump {
    version: Option<serde_json::Value>,
    #[serde(default)]
    pg_config: BTreeMap<String, JsonPgConfig>,
    #[serde(default)]
    pg_status: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
    entries: Vec<JsonEntry>,
}

#[derive(Deserialize)]
struct JsonPgConfig {
    #[serde(default)]
    desc: String,
    #[serde(default)]
    ranks: serde_json::Value,
}

#[derive(Deserialize)]
struct JsonEntry {
    collective_seq_id: Option<u64>,
    seq_id: Option<u64>,
    #[serde(default)]
    profiling_name: String,
    #[serde(default)]
    input_sizes: Vec<Vec<u64>>,
    #[serde(default)]
    output_sizes: Vec<Vec<u64>>,
    #[serde(default)]
    input_dtypes: Vec<String>,
    #[serde(default)]
    state: String,
    #[serde(default)]
    retired: bool,
    time_created_ns: Option<u64>,
    #[serde(default)]
    process_group: Vec<String>,
    pg_id: Option<i64>,
    #[serde(default)]
    is_p2p: bool,
}

fn json_int(v: &serde_json::Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_str()?.trim().parse().ok())
}

fn read_json(bytes: &[u8], dump: &mut RankDump, status: &mut BTreeMap<String, i64>) -> Result<(), FrError> {
    let raw: JsonDump = serde_json::from_slice(bytes)?;
    dump.version = raw.version.map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
    for (name, config) in raw.pg_config {
        let ranks = match &config.ranks {
            serde_json::Value::Array(items) => items.iter().filter_map(|r| u32::try_from(json_int(r)?).ok()).collect(),
            serde_json::Value::String(text) => parse_rank_list(text),
            _ => Vec::new(),
        };
        dump.pg_config.insert(name, PgConfig { desc: config.desc, ranks });
    }
    for (pg, fields) in raw.pg_status {
        if let Some(done) = fields.get("last_completed_collective").and_then(json_int) {
            status.insert(pg, done);
        }
    }
    dump.entries = raw.entries.len() as u64;
    for (index, e) in raw.entries.into_iter().enumerate().rev() {
        let mut pg = e.process_group.into_iter();
        let (pg_name, pg_desc) = (pg.next().unwrap_or_default(), pg.next().unwrap_or_default());
        let seq = e.collective_seq_id.or(e.seq_id);
        let name = e.profiling_name;
        let cheap = Cheap {
            pg_name: &pg_name,
            profiling_name: &name,
            seq,
            completed: e.state == "completed" || e.retired,
            is_p2p: e.is_p2p,
        };
        let pg_id = e.pg_id;
        let entry = Entry {
            profiling_name: name.clone(),
            input_sizes: e.input_sizes,
            output_sizes: e.output_sizes,
            input_dtypes: e.input_dtypes,
            state: e.state,
            retired: e.retired,
            time_created_ns: e.time_created_ns.filter(|t| *t > 0),
        };
        absorb(dump, cheap, || (pg_desc, pg_id, record(seq.unwrap_or_default(), index as u64, entry)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_comes_from_trailing_digits() {
        assert_eq!(rank_from_name("dumps/nccl_trace_rank_12"), Some(12));
        assert_eq!(rank_from_name("dumps/nccl_trace_rank_3.json"), Some(3));
        assert_eq!(rank_from_name("dumps/trace.json"), None);
    }
}
