//! End-to-end tests of `topo nccl` on real logs.

use std::io::Write;
use std::path::PathBuf;

use assert_cmd::Command;
use predicates::prelude::*;

fn topo() -> Command {
    Command::cargo_bin("topo").unwrap()
}

fn log(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nccl-logs");
    std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(name))
        .unwrap()
}

fn json(args: &[&str]) -> serde_json::Value {
    let output = topo().args(args).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn human_report_of_a_four_node_sharp_run() {
    let output = topo().arg("nccl").arg(log("044")).output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let text = text.replace(log("044").to_str().unwrap(), "044.log");
    insta::assert_snapshot!("nccl_044_plain", text);
}

#[test]
fn json_is_the_documented_interface() {
    let report = json(&["nccl", log("044").to_str().unwrap(), "--format", "json"]);
    assert_eq!(report["schema_version"], 2);
    let comm = &report["communicators"][0];
    assert_eq!((comm["nranks"].as_u64(), comm["nnodes"].as_u64()), (Some(8), Some(4)));
    assert_eq!(comm["ranks"][2]["host"], "gpu36");
    assert_eq!(comm["ranks"][2]["bus_id"], "0000:88:00.0");
    assert_eq!(comm["rings"][0]["order"], serde_json::json!([0, 1, 2, 3, 4, 5, 6, 7]));
    let pxn = comm["connections"].as_array().unwrap().iter().find(|c| c["proxy_rank"] == 2).unwrap();
    assert_eq!(
        (pxn["transport"].as_str(), pxn["gdr"].as_bool(), pxn["cross_node"].as_bool()),
        (Some("net-ib"), Some(true), Some(true))
    );
    assert_eq!(report["env_overrides"][0]["name"], "NCCL_COLLNET_ENABLE");
    assert_eq!(report["warning_count"], 8);
    let warning = &report["warnings"][0];
    assert!(warning["line"].as_u64().unwrap() > 0 && warning["host"] == "gpu36" && warning["rank"] == 2);
    for key in ["nccl_versions", "hosts", "network", "unparsed_lines", "inputs", "collectives", "via"] {
        assert!(report.get(key).is_some(), "{key}");
    }
    let yaml = topo().args(["nccl", log("044").to_str().unwrap(), "--format", "yaml"]).output().unwrap();
    assert!(String::from_utf8_lossy(&yaml.stdout).starts_with("schema_version: 2"));
}

#[test]
fn directories_gzip_and_stdin_give_the_same_report() {
    let source = std::fs::read(log("043")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let half = source.len() / 2;
    let cut = half + source[half..].iter().position(|b| *b == b'\n').unwrap() + 1;
    std::fs::write(dir.path().join("nccl.host.1"), &source[..cut]).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&source[cut..]).unwrap();
    std::fs::write(dir.path().join("nccl.host.2.gz"), gz.finish().unwrap()).unwrap();

    let whole = json(&["nccl", log("043").to_str().unwrap(), "--format", "json"]);
    let split = json(&["nccl", dir.path().to_str().unwrap(), "--format", "json"]);
    for key in ["communicators", "via", "hosts", "warning_count", "init_complete", "env_overrides"] {
        assert_eq!(whole[key], split[key], "{key}");
    }
    assert_eq!(split["inputs"].as_array().unwrap().len(), 2);
    let stdin = topo().args(["nccl", "-", "--format", "json"]).write_stdin(source).output().unwrap();
    let stdin: serde_json::Value = serde_json::from_slice(&stdin.stdout).unwrap();
    assert_eq!(whole["communicators"], stdin["communicators"]);
}

#[test]
fn an_unreadable_input_is_an_error_but_the_others_are_reported() {
    let output =
        topo().args(["nccl", "/nonexistent/nccl.log"]).arg(log("044")).args(["--format", "json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("/nonexistent/nccl.log"));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["communicators"][0]["nranks"], 8);
    assert!(report["inputs"][0]["error"].as_str().unwrap().contains("No such file"));
}

#[test]
fn binary_garbage_is_counted_not_fatal() {
    let mut garbage: Vec<u8> = (0..=255u8).cycle().take(200_000).collect();
    garbage.extend(b"\nh:1:2 [0] NCCL INFO NCCL version 2.20.5+cuda12.4\r\n\x00\x00");
    let report = topo().args(["nccl", "-", "--format", "json"]).write_stdin(garbage).output().unwrap();
    assert!(report.status.success());
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report["nccl_versions"], serde_json::json!(["2.20.5+cuda12.4"]));
    assert!(report["unparsed_lines"].as_u64().unwrap() > 0);
}

#[test]
fn from_a_machine_description_annotates_each_hop() {
    // Log 001 ran two A100s of one host; no published machine file has their bus
    // IDs, so a hand-made NCCL topology file describes that pair (NVLink, NV12).
    let output = topo().arg("nccl").arg(log("001")).args(["--format", "json"]).output().unwrap();
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let ranks = report["communicators"][0]["ranks"].as_array().unwrap();
    let buses: Vec<&str> = ranks.iter().map(|r| r["bus_id"].as_str().unwrap()).collect();
    let xml = format!(
        r#"<system version="1"><cpu numaid="0" affinity="ff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="106">
        <pci busid="{}" class="0x030200" vendor="0x10de" device="0x20b2" link_speed="16.0 GT/s PCIe" link_width="16"><gpu dev="0" sm="80" rank="0" gdr="1"><nvlink target="{}" count="12" tclass="0x030200"/></gpu></pci>
        <pci busid="{}" class="0x030200" vendor="0x10de" device="0x20b2" link_speed="16.0 GT/s PCIe" link_width="16"><gpu dev="1" sm="80" rank="1" gdr="1"><nvlink target="{}" count="12" tclass="0x030200"/></gpu></pci>
        </cpu></system>"#,
        buses[0], buses[1], buses[1], buses[0]
    );
    let dir = tempfile::tempdir().unwrap();
    let machine = dir.path().join("machine.xml");
    std::fs::write(&machine, xml).unwrap();
    let annotated =
        json(&["nccl", log("001").to_str().unwrap(), "--from", machine.to_str().unwrap(), "--format", "json"]);
    let hops = annotated["communicators"][0]["connections"].as_array().unwrap();
    assert!(!hops.is_empty());
    for hop in hops {
        assert_eq!(hop["hardware"]["smi"], "NV12", "{hop}");
        assert_eq!(hop["hardware"]["nccl"], "NVL");
        assert_eq!(hop["hardware"]["expected_gbps"], 300.0);
    }
    topo()
        .arg("nccl")
        .arg(log("001"))
        .args(["--from", machine.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("[NV12 / NVL]"));
}

#[test]
fn a_machine_file_beside_the_log_acts_as_from() {
    let report = json(&["nccl", log("001").to_str().unwrap(), "--format", "json"]);
    let buses: Vec<String> = report["communicators"][0]["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["bus_id"].as_str().unwrap().to_string())
        .collect();
    // Hand-made: the pair's two GPUs on one PCIe switch, no NVLink.
    let xml = format!(
        r#"<system version="1"><cpu numaid="0" affinity="ff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="106">
        <pci busid="0000:10:00.0" class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16">
        <pci busid="{}" class="0x030200" vendor="0x10de" device="0x20b2" link_speed="16.0 GT/s PCIe" link_width="16"/>
        <pci busid="{}" class="0x030200" vendor="0x10de" device="0x20b2" link_speed="16.0 GT/s PCIe" link_width="16"/>
        </pci></cpu></system>"#,
        buses[0], buses[1]
    );
    let dir = tempfile::tempdir().unwrap();
    let machine = dir.path().join("machine.xml");
    std::fs::write(&machine, xml).unwrap();
    let annotated = json(&["nccl", log("001").to_str().unwrap(), machine.to_str().unwrap(), "--format", "json"]);
    assert_eq!(annotated["inputs"].as_array().unwrap().len(), 1, "the machine file is not read as a log");
    let hop = &annotated["communicators"][0]["connections"][0];
    assert_eq!((hop["hardware"]["smi"].as_str(), hop["hardware"]["nccl"].as_str()), (Some("PIX"), Some("PIX")));
    assert_eq!(hop["hardware"]["expected_gbps"], 31.5);
}

/// The wrong file is not "0 findings": a real binary (an hwloc capture), a
/// real text file that is not a log (this repository's SOURCES.md) and an
/// empty file each exit 2 with the reason on stderr, for `nccl` and
/// `diagnose --fail-on` alike; beside a real log, such a file is only named.
#[test]
fn input_with_no_nccl_output_exits_2() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let binary = root.join("tests/fixtures/hwloc/16amd64-8n2c/16amd64-8n2c.tar.bz2");
    let prose = root.join("tests/fixtures/SOURCES.md");
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "").unwrap();
    for wrong in [&binary, &prose, &empty] {
        topo()
            .arg("nccl")
            .arg(wrong)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("nothing in it was NCCL output"));
        topo()
            .args(["diagnose", "--log-only", "--fail-on", "error"])
            .arg(wrong)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("no NCCL output in the input"));
    }
    topo()
        .args(["diagnose", "--log-only"])
        .arg(log("010"))
        .arg(&prose)
        .assert()
        .code(0)
        .stderr(predicate::str::contains("SOURCES.md: nothing in it was NCCL output"));
}

/// A PyTorch failure pasted without any NCCL line (the framework's error and
/// NCCL's last WARN after `Last error:`, as ProcessGroupNCCL prints them) is
/// NCCL output: the WARN's class is the cause. Hand-made from the wording in
/// the research notes (torch 2.3, NCCL 2.20.5).
#[test]
fn a_framework_error_alone_is_diagnosed_by_its_last_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("torch.log");
    let mut file = std::fs::File::create(&path).unwrap();
    writeln!(
        file,
        "[rank1]: Traceback (most recent call last):\n\
         [rank1]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5\n\
         [rank1]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. \n\
         [rank1]: Last error:\n\
         [rank1]: Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)"
    )
    .unwrap();
    let output = topo().args(["diagnose", "--log-only", "--format", "json"]).arg(&path).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let found: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(found[0]["code"], "shm-too-small", "{found:#}");
    assert_eq!(found[0]["severity"], "error");
    assert_eq!(found[0]["ranks"], serde_json::json!([1]));
}
