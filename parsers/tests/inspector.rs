//! NCCL Inspector records: the two samples in the plugin's README
//! (plugins/profiler/inspector/README.md of NVIDIA/nccl) and a hand-made
//! 4-rank file in the same shape (a rank that arrives last: no public sample
//! has one). Origins in tests/fixtures/SOURCES.md.

use topo_parsers::inspector::{looks_like_inspector, parse, stragglers};

fn read(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../tests/fixtures/inspector/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

#[test]
fn readme_samples_parse_with_their_fields() {
    let text = read("readme-v4.0-allreduce-rank2.json");
    assert!(looks_like_inspector(&text));
    let r = parse("a", &text).unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].comm.as_str(), r[0].rank, r[0].n_ranks), ("0x7f8c496ae9f661", 2, 8));
    assert_eq!((r[0].coll.as_str(), r[0].sn, r[0].exec_time_us), ("AllReduce", 1407, 61974));
    assert_eq!((r[0].host.as_deref(), r[0].pid), (Some("example-hostname"), Some(1639453)));
    assert!((r[0].busbw_gbs - 485.119099).abs() < 1e-9);
    let v = parse("b", &read("readme-v4.0-verbose-reducescatter-rank4.json")).unwrap();
    assert_eq!((v[0].coll.as_str(), v[0].sn, v[0].msg_size_bytes), ("ReduceScatter", 1231, 2147483648));
    // One record per rank: nothing to compare, nobody named.
    assert!(stragglers(&[r, v].concat()).is_empty());
}

#[test]
fn handmade_rank_that_arrives_last_is_named_with_its_line() {
    let records = parse("h", &read("handmade-4rank-rank3-arrives-last.log")).unwrap();
    assert_eq!(records.len(), 16);
    assert_eq!(records[15].line, 16);
    let s = stragglers(&records);
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].rank, s[0].last_to_arrive, s[0].compared, s[0].pid), (3, 4, 4, Some(1639453)));
    assert!(s[0].median_ratio > 5.0);
}

#[test]
fn handmade_truncated_record_is_an_error_with_its_line() {
    let text = read("handmade-4rank-rank3-arrives-last.log");
    let cut = &text[..text.len() - 40];
    let err = parse("h", cut).unwrap_err().to_string();
    assert!(err.starts_with("line 16:"), "{err}");
}
