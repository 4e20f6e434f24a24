//! `topo diagnose` and `topo nccl` on real Flight Recorder dumps (PyTorch 2.15,
//! gloo, 4 ranks: tests/fixtures/flight-recorder, see SOURCES.md).

use std::path::PathBuf;

use assert_cmd::Command;
use serde_json::Value;

fn fr(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/flight-recorder").join(case)
}

/// A real 8-rank NCCL log (4 nodes, 2 GPUs each) from another job: its rank
/// table places ranks 0-3 on gpu34 and gpu36, which is what the join needs.
fn log043() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/nccl-logs/043-nccl2234-4node-8rank-collnet-sharp-hang-full.log")
}

fn diagnose(args: &[&std::ffi::OsStr]) -> Vec<Value> {
    let output = Command::cargo_bin("topo")
        .unwrap()
        .arg("diagnose")
        .arg("--log-only")
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice::<Vec<Value>>(&output.stdout).unwrap()
}

fn codes(findings: &[Value]) -> Vec<&str> {
    findings.iter().map(|f| f["code"].as_str().unwrap()).collect()
}

#[test]
fn sleeping_rank_is_named_first_in_a_collective_hang() {
    let findings = diagnose(&[fr("sleep").as_os_str()]);
    assert_eq!(codes(&findings), vec!["collective-hang"]);
    let hang = &findings[0];
    assert_eq!(hang["ranks"], serde_json::json!([2, 0, 1, 3]));
    let title = hang["title"].as_str().unwrap();
    assert!(title.contains("rank 2") && title.contains("all_reduce #6") && title.contains("default_pg"), "{title}");
    let first = &hang["evidence"][0];
    assert!(first["at"].as_str().unwrap().ends_with("sleep/nccl_trace_rank_2: entries[4]"), "{first}");
    assert!(first["text"].as_str().unwrap().contains("gloo:all_gather #5"), "{first}");
}

#[test]
fn the_log_places_the_stuck_rank_on_its_host_gpu_and_pid() {
    let findings = diagnose(&[log043().as_os_str(), fr("sleep").as_os_str()]);
    let hang = findings.iter().find(|f| f["code"] == "collective-hang").unwrap();
    assert_eq!(hang["hosts"], serde_json::json!(["gpu36"]));
    let fix = hang["fix"].as_str().unwrap();
    assert!(fix.contains("rank 2: on gpu36, `py-spy dump --pid 15433`"), "{fix}");
    assert!(hang["evidence"][0]["text"].as_str().unwrap().starts_with("rank 2 (host gpu36, GPU 0"));
    assert_eq!(findings[0]["code"], "collective-hang", "the hang leads");
}

#[test]
fn skipped_and_wrong_size_calls_are_program_bugs_on_the_odd_rank() {
    for (case, rank, kind) in [("skip", 1, "op differs"), ("size", 3, "sizes differs")] {
        let findings = diagnose(&[fr(case).as_os_str()]);
        assert_eq!(codes(&findings), vec!["collective-mismatch"], "{case}");
        assert_eq!(findings[0]["ranks"], serde_json::json!([rank]), "{case}");
        assert!(findings[0]["title"].as_str().unwrap().contains(kind), "{case}");
        assert!(findings[0]["why"].as_str().unwrap().contains("bug in the program"));
    }
}

#[test]
fn healthy_job_has_no_findings() {
    assert!(diagnose(&[fr("healthy").as_os_str()]).is_empty());
}

#[test]
fn a_rank_with_no_dump_is_a_finding() {
    // The real sleep dumps, rank 2's two files left out.
    let dir = tempfile::tempdir().unwrap();
    for r in [0, 1, 3] {
        for ext in ["", ".json"] {
            let name = format!("nccl_trace_rank_{r}{ext}");
            std::fs::copy(fr("sleep").join(&name), dir.path().join(&name)).unwrap();
        }
    }
    let findings = diagnose(&[dir.path().as_os_str()]);
    assert_eq!(codes(&findings), vec!["rank-missing"]);
    assert_eq!(findings[0]["ranks"], serde_json::json!([2]));
}

#[test]
fn a_truncated_dump_is_reported_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    for r in 0..4 {
        let name = format!("nccl_trace_rank_{r}");
        let bytes = std::fs::read(fr("healthy").join(&name)).unwrap();
        let keep = if r == 1 { bytes.len() / 2 } else { bytes.len() };
        std::fs::write(dir.path().join(&name), &bytes[..keep]).unwrap();
    }
    let findings = diagnose(&[dir.path().as_os_str()]);
    assert_eq!(codes(&findings), vec!["rank-missing", "dump-unreadable"]);
    assert_eq!(findings[0]["ranks"], serde_json::json!([1]));
}

#[test]
fn job_table_groups_ranks_by_host_and_marks_the_stuck_one() {
    let output = Command::cargo_bin("topo").unwrap().arg("nccl").arg(log043()).arg(fr("sleep")).output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let table = &text[text.find("Flight Recorder").unwrap()..];
    insta::assert_snapshot!(table);
}

#[test]
fn job_json_holds_the_log_and_the_job() {
    let output =
        Command::cargo_bin("topo").unwrap().args(["nccl", "--format", "json"]).arg(fr("skip")).output().unwrap();
    assert!(output.status.success());
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(doc["nccl"].is_null());
    assert_eq!(doc["job"]["groups"][0]["verdict"]["mismatches"][0]["odd"], serde_json::json!([1]));
    assert_eq!(doc["job"]["dumps"].as_array().unwrap().len(), 8);
}

fn ras(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ras").join(name)
}

#[test]
fn ras_issue_1911_names_the_30_unlisted_ranks_behind() {
    let findings = diagnose(&[ras("nccl-issue-1911-allgather-count-mismatch.txt").as_os_str()]);
    assert_eq!(codes(&findings), vec!["collective-hang"]);
    let f = &findings[0];
    let expected: Vec<u32> = (0..32).filter(|r| *r != 12 && *r != 13).collect();
    assert_eq!(f["ranks"], serde_json::json!(expected));
    assert_eq!(f["severity"], "warning", "RAS counts can be transient");
    assert!(f["title"].as_str().unwrap().contains("rank 0-11, 14-31 of #0-0 are behind at AllGather operation 640"));
}

#[test]
fn ras_dead_and_unreachable_processes_are_missing_ranks() {
    for (file, label, rank) in [
        ("docs-2.28-dead-process.txt", "considered dead", 21),
        ("docs-2.28-incomplete-timeout.txt", "did not answer", 21),
        ("docs-2.29.1-status.json", "missing", 1),
    ] {
        let findings = diagnose(&[ras(file).as_os_str()]);
        assert_eq!(codes(&findings), vec!["rank-missing"], "{file}");
        assert_eq!(findings[0]["ranks"], serde_json::json!([rank]), "{file}");
        let text: String =
            findings[0]["evidence"].as_array().unwrap().iter().map(|e| e["text"].as_str().unwrap()).collect();
        assert!(text.contains(label), "{file}: {text}");
    }
    let json = diagnose(&[ras("docs-2.29.1-status.json").as_os_str()]);
    assert!(json[0]["fix"].as_str().unwrap().contains("py-spy dump --pid 1524345"));
}

#[test]
fn ras_healthy_and_transitional_outputs_raise_nothing() {
    for file in
        ["nccl-issue-1730-healthy-256gpu.txt", "docs-2.28-job-summary.txt", "docs-2.28-status-mismatch-finalize.txt"]
    {
        assert!(diagnose(&[ras(file).as_os_str()]).is_empty(), "{file}");
    }
}

#[test]
fn ras_text_beside_a_log_and_dumps_in_one_run() {
    let findings = diagnose(&[
        log043().as_os_str(),
        fr("sleep").as_os_str(),
        ras("nccl-issue-1911-allgather-count-mismatch.txt").as_os_str(),
    ]);
    let found = codes(&findings);
    assert_eq!(&found[..2], &["collective-hang", "collective-hang"], "{found:?}");
    assert!(found.contains(&"env-override"), "the log's own findings stay: {found:?}");
}

#[test]
fn inspector_rank_that_arrives_last_is_a_straggler() {
    // Hand-made in the README's record shape (see SOURCES.md): rank 3's kernels are 5x shorter.
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/inspector/handmade-4rank-rank3-arrives-last.log");
    let findings = diagnose(&[file.as_os_str()]);
    assert_eq!(codes(&findings), vec!["straggler-rank"]);
    assert_eq!(findings[0]["ranks"], serde_json::json!([3]));
    assert!(findings[0]["evidence"][1]["at"].as_str().unwrap().ends_with("handmade-4rank-rank3-arrives-last.log:16"));
    assert!(findings[0]["fix"].as_str().unwrap().contains("py-spy dump --pid 1639453"));
}

#[test]
fn handmade_ras_json_joined_with_the_log_by_communicator_hash() {
    // Hand-made: NCCL's documented RAS JSON with its communicator hash replaced by
    // the commId of the real log 043 (8 ranks on gpu34..gpu41): the log then names
    // the missing rank's host and bus ID.
    let text = std::fs::read_to_string(ras("docs-2.29.1-status.json")).unwrap();
    let changed = text.replace("0xae94423cfbb2ef4a", "0x45701cda3f259923");
    assert_ne!(changed, text);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ras.json");
    std::fs::write(&file, changed).unwrap();
    let findings = diagnose(&[log043().as_os_str(), file.as_os_str()]);
    let missing = findings.iter().find(|f| f["code"] == "rank-missing").unwrap();
    assert_eq!(missing["ranks"], serde_json::json!([1]));
    assert_eq!(missing["hosts"], serde_json::json!(["gpu34"]));
    let evidence = missing["evidence"][0]["text"].as_str().unwrap();
    assert!(evidence.contains("host gpu34 in the log") && evidence.contains("0000:0b:00.0"), "{evidence}");
}
