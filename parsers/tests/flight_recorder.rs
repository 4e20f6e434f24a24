//! The Flight Recorder reader and analysis on real PyTorch 2.15 dumps
//! (tests/fixtures/flight-recorder, made by make-dumps.py: see SOURCES.md).

use std::path::{Path, PathBuf};

use topo_model::flight_recorder::JobReport;
use topo_parsers::flight_recorder::{analyse, read_file};

fn fixture(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/flight-recorder").join(case)
}

/// The job's report from one case's pickle (`json` false) or JSON dumps.
fn job(case: &str, json: bool, skip_rank: Option<u32>) -> JobReport {
    let dumps = (0..4u32)
        .filter(|r| Some(*r) != skip_rank)
        .map(|r| {
            let name = if json { format!("nccl_trace_rank_{r}.json") } else { format!("nccl_trace_rank_{r}") };
            let path = fixture(case).join(name);
            (path.display().to_string(), read_file(&path))
        })
        .collect();
    analyse(dumps, &[])
}

#[test]
fn pickle_and_json_dumps_read_the_same() {
    for case in ["healthy", "sleep", "skip", "size"] {
        let (p, mut j) = (job(case, false, None), job(case, true, None));
        // Only the file names differ.
        for (g, pg) in j.groups.iter_mut().zip(&p.groups) {
            for (m, pm) in g.members.iter_mut().zip(&pg.members) {
                assert_eq!(m.file.as_ref().map(|f| f.replace(".json", "")), pm.file);
                m.file = pm.file.clone();
            }
        }
        assert!(p.dumps.iter().all(|d| d.error.is_none() && d.version.as_deref() == Some("2.10")), "{case}: {p:?}");
        assert_eq!(p.groups, j.groups, "{case}");
    }
}

#[test]
fn every_rank_read_with_its_entries() {
    let report = job("healthy", false, None);
    assert_eq!(report.dumps.iter().map(|d| d.entries).collect::<Vec<_>>(), vec![7, 7, 7, 7]);
    let group = &report.groups[0];
    assert_eq!((group.name.as_str(), group.desc.as_str()), ("0", "default_pg"));
    assert_eq!(group.ranks, vec![0, 1, 2, 3]);
    let last = group.members[1].last_entered.as_ref().unwrap();
    assert_eq!((last.seq, last.op.as_str(), last.profiling_name.as_str()), (7, "barrier", "gloo:barrier"));
    assert!(last.time_created_ns.unwrap() > 1_700_000_000_000_000_000);
}

#[test]
fn healthy_job_has_nobody_behind_and_no_mismatch() {
    let v = &job("healthy", false, None).groups[0].verdict;
    assert!(v.behind.is_empty() && v.mismatches.is_empty() && v.no_dump.is_empty(), "{v:?}");
}

#[test]
fn sleeping_rank_is_behind_and_the_others_wait() {
    let g = &job("sleep", false, None).groups[0];
    assert_eq!(g.frontier, Some(6));
    assert_eq!(g.verdict.behind, vec![2]);
    assert_eq!(g.verdict.waiting, vec![0, 1, 3]);
    assert!(g.verdict.mismatches.is_empty());
    let waiting = g.members[0].last_entered.as_ref().unwrap();
    assert_eq!((waiting.op.as_str(), waiting.input_sizes.clone()), ("all_reduce", vec![vec![1024]]));
    assert_eq!(g.members[2].last_entered.as_ref().unwrap().seq, 5);
}

#[test]
fn skipping_rank_shows_as_a_different_op_at_the_same_sequence_id() {
    let v = &job("skip", true, None).groups[0].verdict;
    assert_eq!(v.mismatches.len(), 1, "{v:?}");
    let m = &v.mismatches[0];
    assert_eq!((m.seq, m.kind.as_str(), m.odd.clone()), (6, "op", vec![1]));
    assert_eq!((m.expected.as_str(), m.actual.as_str()), ("all_reduce", "barrier"));
}

#[test]
fn wrong_size_rank_is_named() {
    let v = &job("size", false, None).groups[0].verdict;
    let m = &v.mismatches[0];
    assert_eq!((m.seq, m.kind.as_str(), m.odd.clone()), (6, "sizes", vec![3]));
    assert_eq!(m.actual, "all_reduce of [[2048]]");
    assert_eq!(v.waiting, vec![0, 1, 2]);
}

#[test]
fn a_rank_without_a_dump_is_named_from_the_group_config() {
    // The real sleep dumps with rank 2's files left out: a dead process writes none.
    let v = &job("sleep", false, Some(2)).groups[0].verdict;
    assert_eq!(v.no_dump, vec![2]);
    assert!(v.behind.is_empty());
}

#[test]
fn damaged_dumps_are_errors_not_panics() {
    let bytes = std::fs::read(fixture("sleep").join("nccl_trace_rank_0")).unwrap();
    for cut in [1, 2, 10, bytes.len() / 2, bytes.len() - 1] {
        let result = topo_parsers::flight_recorder::read_dump("x_0", &bytes[..cut]);
        assert!(result.is_err(), "cut at {cut}");
    }
    let json = std::fs::read(fixture("sleep").join("nccl_trace_rank_0.json")).unwrap();
    assert!(topo_parsers::flight_recorder::read_dump("x_0.json", &json[..json.len() / 2]).is_err());
    // Every byte flipped in turn: an error or a dump, never a panic.
    for i in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[i] ^= 0xff;
        let _ = topo_parsers::flight_recorder::read_dump("x_0", &damaged);
    }
}

#[test]
fn handmade_unknown_major_version_is_refused() {
    // Hand-made: a real JSON dump with its version changed to 3.0.
    let json = std::fs::read_to_string(fixture("sleep").join("nccl_trace_rank_0.json")).unwrap();
    let changed = json.replace("\"2.10\"", "\"3.0\"");
    assert_ne!(changed, json);
    let err = topo_parsers::flight_recorder::read_dump("x_0.json", changed.as_bytes()).unwrap_err();
    assert!(err.to_string().contains("version 3.0"), "{err}");
}

#[test]
fn handmade_older_format_fields_read_the_same() {
    // Hand-made from the real sleep dumps: each JSON rewritten the way dump
    // versions before 2.5 spell it (`seq_id` for `collective_seq_id`, no
    // `is_p2p`, no `pg_status`, no dtypes) with a point-to-point entry that
    // carries the last collective's sequence id, as those versions record it.
    let dir = tempfile_dir();
    for r in 0..4u32 {
        let text = std::fs::read_to_string(fixture("sleep").join(format!("nccl_trace_rank_{r}.json"))).unwrap();
        let mut doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        doc["version"] = "2.2".into();
        doc.as_object_mut().unwrap().remove("pg_status");
        let entries = doc["entries"].as_array_mut().unwrap();
        for e in entries.iter_mut() {
            let e = e.as_object_mut().unwrap();
            let seq = e.remove("collective_seq_id").unwrap();
            e.insert("seq_id".into(), seq);
            e.remove("is_p2p");
            e.remove("input_dtypes");
        }
        let mut p2p = entries.last().unwrap().clone();
        p2p["profiling_name"] = "nccl:send 0->1".into();
        p2p["retired"] = false.into();
        entries.push(p2p);
        std::fs::write(dir.join(format!("old_rank_{r}.json")), doc.to_string()).unwrap();
    }
    let dumps = (0..4u32)
        .map(|r| {
            let path = dir.join(format!("old_rank_{r}.json"));
            (path.display().to_string(), read_file(&path))
        })
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    let g = &analyse(dumps, &[]).groups[0];
    assert_eq!(g.frontier, Some(6));
    assert_eq!(g.verdict.behind, vec![2]);
    assert_eq!(g.verdict.waiting, vec![0, 1, 3]);
    assert!(g.verdict.mismatches.is_empty(), "the send is not compared with the all_reduce: {:?}", g.verdict);
}

/// A directory of this test binary's own under Cargo's target tmp dir (the
/// machine's /tmp is not the tests' to fill).
fn tempfile_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fr-old-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn tutorial_dump_of_format_2_3_with_stack_frames() {
    // The dump printed in PyTorch's Flight Recorder tutorial (format 2.3, PyTorch 2.5),
    // written as pickle (protocol 2) and JSON: see SOURCES.md.
    for name in ["nccl_trace_rank_0", "nccl_trace_rank_0.json"] {
        let path = fixture("tutorial-2.3").join(name);
        let report = analyse(vec![(path.display().to_string(), read_file(&path))], &[]);
        assert_eq!(report.dumps[0].version.as_deref(), Some("2.3"), "{name}");
        let g = &report.groups[0];
        assert_eq!((g.name.as_str(), g.desc.as_str(), g.ranks.clone()), ("0", "default_pg", vec![0, 1]), "{name}");
        let last = g.members[0].last_entered.as_ref().unwrap();
        assert_eq!((last.seq, last.op.as_str(), last.state.as_str()), (1, "all_reduce", "completed"));
        assert_eq!(last.input_sizes, vec![vec![3, 4]]);
        assert_eq!(g.members[0].last_completed, Some(2), "pg_status counts completions beyond the entries");
        assert_eq!(g.verdict.no_dump, vec![1]);
    }
}
