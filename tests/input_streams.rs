//! Issue 18 (second set, written beside tests/hostile_input.rs): input that is not a plain file, or that lies about its size, is
//! read once, with a limit, and never hangs. Each case failed before (the
//! first 8 KiB of a pipe lost, loops walked for ever, /dev/zero read until
//! memory ran out, a missing log ignored by `show`).

use std::path::PathBuf;

use assert_cmd::Command;
use predicates::prelude::*;

fn topo() -> Command {
    Command::cargo_bin("topo").unwrap()
}

fn real_log() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nccl-logs");
    std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.to_string_lossy().contains("/044-")).unwrap()
}

fn lines_read(output: &[u8]) -> u64 {
    let report: serde_json::Value = serde_json::from_slice(output).unwrap();
    report["lines"].as_u64().unwrap()
}

#[test]
fn a_pipe_and_a_fifo_are_read_once_and_whole() {
    let text = std::fs::read(real_log()).unwrap();
    let lines = text.iter().filter(|b| **b == b'\n').count() as u64;
    let piped = topo().args(["nccl", "/dev/stdin", "--format", "json"]).write_stdin(text.clone()).output().unwrap();
    assert!(piped.status.success());
    assert_eq!(lines_read(&piped.stdout), lines);
    let dash = topo().args(["nccl", "-", "--format", "json"]).write_stdin(text.clone()).output().unwrap();
    assert_eq!(lines_read(&dash.stdout), lines);

    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let writer = {
        let (fifo, text) = (fifo.clone(), text.clone());
        std::thread::spawn(move || std::fs::write(fifo, text))
    };
    let named = topo()
        .args(["nccl", "--format", "json"])
        .arg(&fifo)
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    writer.join().unwrap().unwrap();
    assert_eq!(lines_read(&named.stdout), lines);

    let snapshot = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshots/asus-esc8000a-e12.yaml");
    topo()
        .args(["show", "--plain", "--from", "/dev/stdin"])
        .write_stdin(std::fs::read(snapshot).unwrap())
        .assert()
        .success()
        .stdout(predicate::str::contains("coyote2"));
}

#[test]
fn directories_with_loops_fifos_and_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    std::fs::copy(real_log(), logs.join("job.log")).unwrap();
    std::os::unix::fs::symlink(".", logs.join("a")).unwrap();
    std::os::unix::fs::symlink(".", logs.join("b")).unwrap();
    std::os::unix::fs::symlink("job.log", logs.join("same.log")).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(logs.join("fifo")).status().unwrap().success());
    let output = topo()
        .args(["nccl", "--format", "json"])
        .arg(&logs)
        .write_stdin("")
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = report["inputs"].as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 1, "{names:?}");
    // The file and the symlink to it are one file, read once (under either name).
    assert!(names[0].ends_with("job.log") || names[0].ends_with("same.log"), "{names:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("fifo: a FIFO, skipped") && stderr.contains("a symlink to a directory, not followed"),
        "{stderr}"
    );
}

#[test]
fn files_that_report_size_zero_are_read_with_a_limit() {
    for args in [&["show", "--plain", "--from", "/dev/zero"][..], &["preflight", "--expect", "/dev/zero"][..]] {
        topo()
            .args(args)
            .timeout(std::time::Duration::from_secs(120))
            .assert()
            .code(2)
            .stderr(predicate::str::contains("larger than"));
    }
}

#[test]
fn show_refuses_a_log_it_cannot_read_before_drawing() {
    topo()
        .args(["show", "--plain", "--example", "h100-sxm-8gpu", "--nccl-log", "/nonexistent/job.log"])
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("/nonexistent/job.log"));
    // A log given to `--from` is named as one, not parsed as YAML.
    topo()
        .args(["show", "--plain", "--from"])
        .arg(real_log())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("this is an NCCL log"));
}
