//! `topo diagnose` on the real NCCL logs of `tests/fixtures/nccl-logs/`: every
//! log gets exactly the findings its content supports, no more.

use std::path::PathBuf;

use assert_cmd::Command;
use topo_model::{Finding, Severity};

fn log(prefix: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nccl-logs");
    let mut found = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| {
        p.file_name().unwrap().to_string_lossy().starts_with(prefix) && p.extension().is_some_and(|e| e == "log")
    });
    found.next().unwrap_or_else(|| panic!("no log {prefix}-*"))
}

fn findings(args: &[&str]) -> Vec<Finding> {
    let output =
        Command::cargo_bin("topo").unwrap().arg("diagnose").args(args).args(["--format", "json"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The codes each real log should raise (logs not listed raise none). What
/// each rests on, from the log itself: 004 `via NET/Socket` on 64 AWS ranks;
/// 010/011 `/dev/shm ... No space left on device`; 013/038 `via SHM`; 020
/// `NET/OFI Couldn't open AV`; 031 bootstrap on `lo`; 043/044
/// `NCCL_COLLNET_ENABLE=1`; 049 `NET/IB : No device found`, sockets over a
/// `CloudflareWARP` VPN device; 050 `NCCL_IB_DISABLE=1`, `NCCL_P2P_LEVEL=LOC`;
/// 052 `NCCL_P2P_LEVEL=LOC`, `via SHM/direct`, `Using network Socket`.
const EXPECTED: &[(&str, &[&str])] = &[
    ("004", &["net-socket-fallback"]),
    ("010", &["shm-exhausted"]),
    ("011", &["shm-exhausted"]),
    ("013", &["p2p-not-used"]),
    ("020", &["net-error"]),
    ("031", &["bootstrap-interface"]),
    ("038", &["p2p-not-used"]),
    ("043", &["env-override"]),
    ("044", &["env-override"]),
    ("049", &["bootstrap-interface", "net-socket-fallback"]),
    ("050", &["env-override", "net-socket-fallback"]),
    ("052", &["env-override", "net-socket-fallback", "p2p-not-used"]),
];

#[test]
fn every_real_log_gets_the_findings_it_supports() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nccl-logs");
    let mut logs: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    logs.sort();
    assert_eq!(logs.len(), 35);
    for name in logs {
        let prefix = &name[..3];
        let mut codes: Vec<String> = findings(&[log(prefix).to_str().unwrap()]).into_iter().map(|f| f.code).collect();
        codes.sort();
        let expected: Vec<&str> = EXPECTED.iter().find(|(p, _)| *p == prefix).map_or(&[][..], |(_, c)| c).to_vec();
        assert_eq!(codes, expected, "{name}");
    }
}

#[test]
fn evidence_points_at_the_log_line() {
    let found = findings(&[log("010").to_str().unwrap()]);
    let evidence = &found[0].evidence;
    assert!(evidence[0].at.ends_with("010-nccl2297-ci-t4-timestamped-warn-devshm-full.log:1"), "{evidence:?}");
    assert!(evidence[0].text.contains("No space left on device"));
    let env = findings(&[log("050").to_str().unwrap()]);
    let overrides = env.iter().find(|f| f.code == "env-override").unwrap();
    // Each override cited at the first line that set it, as NCCL printed it.
    let cited: Vec<(&str, &str)> =
        overrides.evidence.iter().map(|e| (e.at.rsplit('/').next().unwrap(), e.text.as_str())).collect();
    assert_eq!(
        cited,
        [
            (
                "050-nccl217to218-p2p-level-loc-ib-disabled-wrapped-line.log:6",
                "NCCL_IB_DISABLE set by environment to 1. (hosts: ncg12)"
            ),
            (
                "050-nccl217to218-p2p-level-loc-ib-disabled-wrapped-line.log:9",
                "NCCL_P2P_LEVEL set by environment to LOC (hosts: ncg12)"
            ),
        ]
    );
}

/// Labelled combination: the AWS socket-transport log (004) judged against a
/// node that has InfiniBand (the IBM H100 dump): the fallback becomes an error.
#[test]
fn socket_fallback_on_an_infiniband_node_is_an_error() {
    let machine = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nccl-topo/ibm-gx3d-h100x8.xml");
    let found = findings(&[log("004").to_str().unwrap(), "--from", machine.to_str().unwrap()]);
    let fallback = found.iter().find(|f| f.code == "net-socket-fallback").unwrap();
    assert_eq!(fallback.severity, Severity::Error);
    assert_eq!(fallback.actual.as_deref(), Some("NET/Socket"));
    assert!(fallback.expected.as_deref().unwrap().starts_with("NET/IB over mlx5_0"), "{fallback:?}");
}

#[test]
fn fail_on_sets_the_exit_code() {
    let shm = log("010");
    let topo = || Command::cargo_bin("topo").unwrap();
    topo().arg("diagnose").arg(&shm).assert().code(0);
    topo().arg("diagnose").arg(&shm).args(["--fail-on", "error"]).assert().code(1);
    topo().arg("diagnose").arg(log("031")).args(["--fail-on", "error"]).assert().code(0);
    topo().arg("diagnose").arg(log("031")).args(["--fail-on", "warning"]).assert().code(1);
    topo().arg("diagnose").arg(log("001")).args(["--fail-on", "info"]).assert().code(0);
    topo().args(["diagnose", "/nonexistent.log"]).assert().code(2);
}

#[test]
fn plain_report() {
    let output = Command::cargo_bin("topo").unwrap().arg("diagnose").arg(log("052")).output().unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    let text = text.replace(log("052").to_str().unwrap(), "052.log");
    insta::assert_snapshot!(text);
}

/// Labelled hand-made case: 037's AllGather line repeated 150 times with a
/// 1 KiB count (no real log here has 100+ COLL lines), plus 30 large calls.
#[test]
fn small_messages_from_coll_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("coll.log");
    let line = |op: u32, count: u64| {
        format!(
            "hopper01:191370:191425 [1] NCCL INFO AllGather: opCount {op:x} sendbuff 0x7fa921200000 recvbuff \
             0x7fa915800000 count {count} datatype 7 op 0 root 0 comm 0x55fca23fc0f0 [nranks=2] stream 0x55fca193e8e0\n"
        )
    };
    let text: String = (0..180).map(|i| line(i, if i < 150 { 256 } else { 2097152 })).collect();
    std::fs::write(&path, text).unwrap();
    let found = findings(&[path.to_str().unwrap()]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].code.as_str(), found[0].severity), ("small-messages", Severity::Info));
    assert_eq!(found[0].title, "150 of 180 collectives move 1 MiB or less");
}

/// With `--from`, the node's hardware is checked too: the ASUS box's four RDMA
/// ports are down in its source data, and its idle GPUs run at Gen1.
#[test]
fn hardware_findings_join_the_log_findings() {
    let machine = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshots/asus-esc8000a-e12.yaml");
    let found = findings(&[log("010").to_str().unwrap(), "--from", machine.to_str().unwrap()]);
    let codes: Vec<(&str, Severity)> = found.iter().map(|f| (f.code.as_str(), f.severity)).collect();
    assert_eq!(
        codes,
        [("ib-port-down", Severity::Error), ("shm-exhausted", Severity::Error), ("pcie-downtrained", Severity::Info)]
    );
}
