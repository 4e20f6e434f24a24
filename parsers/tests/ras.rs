//! NCCL RAS status output: the samples in NCCL's user guide
//! (docs/userguide/source/troubleshooting/ras.rst) and two outputs posted in
//! NVIDIA/nccl issues #1911 and #1730 (tests/fixtures/ras, see SOURCES.md).

use topo_model::ras::RasStatus;
use topo_parsers::ras::{looks_like_ras, parse};

fn ras(name: &str) -> RasStatus {
    let path = format!("{}/../tests/fixtures/ras/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(looks_like_ras(&text), "{name}");
    parse(name, &text).unwrap()
}

#[test]
fn issue_1911_allgather_count_mismatch_with_its_two_listed_ranks() {
    let s = ras("nccl-issue-1911-allgather-count-mismatch.txt");
    assert_eq!(s.nccl_version.as_deref(), Some("2.26.2"));
    assert_eq!((s.nodes, s.processes, s.gpus), (Some(4), Some(32), Some(32)));
    assert_eq!(s.communicators.len(), 1);
    assert_eq!((s.communicators[0].status.as_str(), s.communicators[0].errors.as_str()), ("RUNNING", "MISMATCH"));
    let m = &s.mismatches[0];
    assert_eq!(
        (m.comm.as_str(), m.hash.as_deref(), m.what.as_str()),
        ("#0-0", Some("fa93daea854b060b"), "AllGather operation counts")
    );
    let groups: Vec<(u64, &str, usize)> = m.groups.iter().map(|g| (g.count, g.value.as_str(), g.ranks.len())).collect();
    assert_eq!(groups, vec![(30, "640", 0), (2, "641", 2)]);
    let r = &m.groups[1].ranks[0];
    assert_eq!((r.rank, r.gpu, r.pid, r.host.as_deref()), (12, Some(4), Some(323032), Some("10.137.190.124")));
}

#[test]
fn healthy_256_gpu_job() {
    let s = ras("nccl-issue-1730-healthy-256gpu.txt");
    assert_eq!((s.nodes, s.gpus), (Some(32), Some(256)));
    assert_eq!(s.communicators[0].errors, "OK");
    assert!(s.mismatches.is_empty() && s.dead.is_empty() && s.missing_ranks.is_empty());
}

#[test]
fn docs_incomplete_and_dead() {
    let s = ras("docs-2.28-incomplete-timeout.txt");
    assert_eq!(s.unresponsive.len(), 1);
    assert_eq!(
        (s.unresponsive[0].pid, s.unresponsive[0].host.as_str(), s.unresponsive[0].gpus.clone()),
        (3487984, "172.16.64.213", vec![5])
    );
    assert_eq!(s.missing_ranks.iter().map(|r| r.rank).collect::<Vec<_>>(), vec![21]);
    assert_eq!(s.timeouts, Some(2));
    let d = ras("docs-2.28-dead-process.txt");
    assert_eq!(d.dead.len(), 1);
    assert!(d.unresponsive.is_empty());
    assert_eq!(d.dead[0].pid, 3487984);
}

#[test]
fn docs_count_and_status_mismatches() {
    let s = ras("docs-2.28-count-mismatch-warning.txt");
    let m = &s.mismatches[0];
    assert_eq!(m.what, "collective operation counts");
    assert_eq!(m.groups[1].value, "6649");
    assert_eq!(m.groups[1].ranks.iter().map(|r| r.rank).collect::<Vec<_>>(), vec![0, 2, 3, 4, 5, 7]);
    let f = ras("docs-2.28-status-mismatch-finalize.txt");
    assert_eq!(f.communicators.len(), 3);
    assert_eq!(f.communicators[2].status, "INIT");
    let values: Vec<&str> = f.mismatches[0].groups.iter().map(|g| g.value.as_str()).collect();
    assert_eq!(values, vec!["UNKNOWN", "RUNNING", "FINALIZE"]);
    assert_eq!(f.mismatches[0].groups[2].ranks.iter().map(|r| r.rank).collect::<Vec<_>>(), vec![4, 20]);
}

#[test]
fn docs_json_missing_rank() {
    let s = ras("docs-2.29.1-status.json");
    assert_eq!(s.format, "json");
    assert_eq!(s.nccl_version.as_deref(), Some("2.29.1"));
    let m = &s.missing_ranks[0];
    assert_eq!((m.rank, m.pid, m.host.as_deref(), m.gpu), (1, Some(1524345), Some("172.16.64.245"), Some(1)));
    assert_eq!(m.flags, vec!["unresponsive"]);
    assert!(s.dead.is_empty());
    assert_eq!(s.communicators[0].errors, "INCOMPLETE");
}

#[test]
fn handmade_garbage_is_not_ras_and_bad_json_is_an_error() {
    assert!(!looks_like_ras("hello\nworld\n"));
    assert!(parse("x.json", "{\"communicators\": 3}").is_err());
    assert!(parse("x.json", "{").is_err());
}
