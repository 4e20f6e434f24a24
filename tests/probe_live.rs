//! `topo probe` end to end on stand-in GPU libraries: `libcuda.so.1` and
//! `libnccl.so.2` built here from `tests/fake-gpu/*.c` (needs `cc`). Device
//! memory is host memory, so the copies and collectives move real bytes and
//! the data check is real; time is simulated per stream, so bandwidths are
//! exact. The topology the figures are held against is the ASUS ESC8000A-E12
//! sysfs tree (4x RTX 6000 Ada, PCIe Gen4 x16, two sockets).

#[path = "support/ports.rs"]
mod ports;
use ports::free_port;
#[path = "support/stand_in_gpu.rs"]
mod stand_in_gpu;
#[path = "support/tools.rs"]
mod tools;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const ASUS: &str = "tests/fixtures/sysfs/asus-esc8000a-e12";
const ASUS_GPUS: &str = "0000:01:00.0,0000:41:00.0,0000:c1:00.0,0000:e1:00.0";

/// Builds the stand-in libraries once per test run, under Cargo's target tmp
/// dir (a static is never dropped, so a temporary directory would stay behind
/// in the machine's /tmp at every run).
fn fake_libraries() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fake-gpu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        stand_in_gpu::build_into(&dir);
        let _ = std::os::unix::fs::symlink("libcuda.so.1", dir.join("libcuda.so"));
        dir
    })
}

fn topo(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_topo"));
    command.args(args).env("LD_LIBRARY_PATH", fake_libraries()).env_remove("TOPO_NCCL_LIBRARY");
    for var in ["RANK", "WORLD_SIZE", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "LOCAL_RANK", "SLURM_LOCALID"]
    {
        command.env_remove(var);
    }
    // The run records the NCCL settings it inherits; the tests set their own.
    for (var, _) in std::env::vars().filter(|(k, _)| k.starts_with("NCCL_")) {
        command.env_remove(var);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().unwrap()
}

fn text(output: &Output) -> (String, String) {
    (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// Every process's exit and stderr: when one rank of a job fails, the cause is
/// usually in another rank's words (the one that ended first).
fn every_stderr(outputs: &[Output]) -> String {
    let each = |(rank, o): (usize, &Output)| format!("--- rank {rank} ({}):\n{}", o.status, text(o).1);
    outputs.iter().enumerate().map(each).collect::<Vec<_>>().join("\n")
}

/// The ASUS box with GPU 3's host link at a third of its speed, GPUs 1 and 2
/// refused peer access, and the send/recv from rank 2 to rank 3 at 4 GB/s.
const FAULTS: [(&str, &str); 4] = [
    ("FAKE_CUDA_BUS", ASUS_GPUS),
    ("FAKE_CUDA_SLOW_GPU", "3:9"),
    ("FAKE_CUDA_NO_PEER", "1-2"),
    ("FAKE_NCCL_SLOW_HOP", "2-3:4"),
];

#[test]
fn every_measurement_held_against_the_topology() {
    let args = ["probe", "--sysfs-root", ASUS, "--copy-size", "4M", "--collectives", "all", "--min", "1M"];
    let env = [&FAULTS[..], &[("NCCL_P2P_DISABLE", "1")]].concat();
    let output = topo(&[&args[..], &["--max", "4M", "--ring-walk", "--format", "json"]].concat(), &env);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let probe = &json["probe"];
    assert_eq!((probe["cuda_driver"].as_str(), probe["nccl_version"].as_str()), (Some("12.4"), Some("2.21.5")));
    // 4 per GPU and 3 per pair.
    let copies = probe["copies"].as_array().unwrap();
    assert_eq!(copies.len(), 4 * 4 + 3 * 6);
    let find = |kind: &str, gpu: u64, peer: Option<u64>| {
        copies
            .iter()
            .find(|c| c["kind"] == kind && c["gpu"] == gpu && c["peer"].as_u64() == peer)
            .unwrap_or_else(|| panic!("{kind} {gpu} {peer:?}"))
    };
    // Gen4 x16 carries 31.5 GB/s raw, 27.1 expected; the stand-in moves 4 MiB
    // at 26 GB/s plus 5 us per copy: 25.2 GB/s, 93 %.
    let h2d = find("host_to_device", 0, None);
    assert_eq!(h2d["path"], "PCIe Gen4 x16");
    assert_eq!(format!("{:.1}", h2d["bandwidth"].as_f64().unwrap() / 1e9), "25.2");
    assert_eq!(format!("{:.2}", h2d["ratio"].as_f64().unwrap()), "0.93");
    // Both directions at once add up.
    let both = find("bidirectional", 0, None);
    assert_eq!(format!("{:.1}", both["bandwidth"].as_f64().unwrap() / 1e9), "50.4");
    assert_eq!(format!("{:.1}", both["expected"].as_f64().unwrap() / 1e9), "54.2");
    // A pair on one socket is NODE, across sockets SYS.
    assert_eq!(find("peer", 0, Some(1))["path"], "NODE");
    assert_eq!(find("peer", 0, Some(2))["path"], "SYS");
    // A refused pair is reported as refused, with no bandwidth to misread.
    let refused = find("peer", 1, Some(2));
    assert!(refused["error"].as_str().unwrap().contains("peer access refused"), "{refused}");
    assert!(refused.get("ratio").is_none());
    // Every collective ran at every size and every element checked out.
    let collectives = probe["collectives"].as_array().unwrap();
    assert_eq!(collectives.len(), 7);
    for result in collectives {
        let rows = result["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 3, "{}", result["collective"]);
        assert!(rows.iter().all(|r| r["wrong"] == 0), "{}", result["collective"]);
        assert_eq!(result["ranks"], 4);
    }
    // all_reduce at 4 MiB: busbw = algbw x 2(n-1)/n; the stand-in's 20 GB/s bus.
    let all_reduce = &collectives[0];
    assert_eq!(all_reduce["collective"], "all_reduce");
    let row = &all_reduce["rows"][2];
    let (algbw, busbw) = (row["algbw"].as_f64().unwrap(), row["busbw"].as_f64().unwrap());
    assert!((busbw / algbw - 1.5).abs() < 1e-9, "{row}");
    assert_eq!(format!("{:.1}", busbw / 1e9), "19.4");
    assert_eq!(all_reduce["path"], "ring, slowest hop SYS");
    // The ring walk names the one slow hop.
    let hops = probe["ring_walk"].as_array().unwrap();
    assert_eq!(hops.len(), 4);
    let slow: Vec<_> = hops.iter().filter(|h| h["ratio"].as_f64().unwrap() < 0.75).collect();
    assert_eq!(slow.len(), 1, "{hops:?}");
    assert_eq!((slow[0]["from"].as_u64(), slow[0]["to"].as_u64()), (Some(2), Some(3)));
    let codes: Vec<&str> = json["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    // sendrecv moves every ring hop at once, so it runs at the slow 2 -> 3
    // hop; all_to_all (every pair at once) is held against no single hop.
    assert_eq!(codes, ["probe-slow-link", "probe-p2p-refused", "probe-slow-collective", "probe-straggler"]);
    let slow_collectives = &json["findings"][2]["evidence"];
    assert_eq!(slow_collectives[0]["at"], "sendrecv, 4 ranks", "{slow_collectives}");
    // The NCCL settings in effect are recorded and offered as evidence.
    assert_eq!(probe["nccl_env"], serde_json::json!([["NCCL_P2P_DISABLE", "1"]]));
    assert_eq!(slow_collectives[1]["at"], "environment", "{slow_collectives}");
    assert!(slow_collectives[1]["text"].as_str().unwrap().starts_with("NCCL_P2P_DISABLE=1 "));
}

#[test]
fn the_table() {
    let args = ["probe", "--sysfs-root", ASUS, "--copy-size", "4M", "--min", "1M", "--max", "4M", "--ring-walk"];
    let output = topo(&args, &FAULTS);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let stdout = stdout
        .replacen(&format!("topo probe on {}:", host.trim()), "topo probe on HOST:", 1)
        .replace(&format!("({})", host.trim()), "(HOST)");
    insta::assert_snapshot!(stdout);
}

#[test]
fn a_wrong_element_fails_the_run() {
    let args = ["probe", "--no-copies", "--collectives", "all_gather,all_reduce", "--min", "64K", "--max", "128K"];
    let output = topo(&args, &[("FAKE_CUDA_BUS", ASUS_GPUS), ("FAKE_NCCL_CORRUPT", "all_gather")]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stdout.contains("error    probe-data-corruption  collective results wrong in 2 case(s)"), "{stdout}");
    assert!(stdout.contains("evidence  all_gather 64 KiB: 1 wrong element(s)"), "{stdout}");
    assert!(!stdout.contains("all_reduce 64 KiB: "), "{stdout}");
}

#[test]
fn one_gpu_says_what_it_cannot_measure() {
    let args = ["probe", "--copy-size", "1M", "--min", "1M", "--max", "2M"];
    let output = topo(&args, &[("FAKE_CUDA_BUS", "0000:17:00.0"), ("NCCL_ALGO", "Ring")]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("\nNCCL settings in effect: NCCL_ALGO=Ring\n"), "{stdout}");
    assert!(stdout.contains("all_reduce, 1 rank(s): one rank crosses no link, so busbw is 0"), "{stdout}");
    assert!(stdout.contains("One GPU: no pairs to copy between"), "{stdout}");
    assert!(!stdout.contains("P2P"), "{stdout}");
}

#[test]
fn failures_are_named() {
    let quick = ["probe", "--copy-size", "1M", "--max", "1M", "--min", "1M"];
    let no_device = topo(&quick, &[("FAKE_CUDA_NO_DEVICE", "1")]);
    let (_, stderr) = text(&no_device);
    assert_eq!(no_device.status.code(), Some(2));
    assert!(stderr.contains("cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"), "{stderr}");

    let init = topo(&quick, &[("FAKE_NCCL_INIT_FAIL", "1")]);
    let (_, stderr) = text(&init);
    assert_eq!(init.status.code(), Some(2));
    assert!(stderr.contains("ncclCommInitRank failed: unhandled system error"), "{stderr}");
    assert!(stderr.contains("NCCL error 2"), "{stderr}");

    let not_nccl = topo(&[&quick[..], &["--nccl-lib", "Cargo.toml"]].concat(), &[]);
    let (_, stderr) = text(&not_nccl);
    assert_eq!(not_nccl.status.code(), Some(2));
    assert!(stderr.contains("cannot load Cargo.toml"), "{stderr}");

    for (flag, value, says) in [
        ("--min", "2x", "--min \"2x\": not a size"),
        ("--collectives", "scan", "unknown collective \"scan\""),
        ("--threshold", "1.5", "--threshold 1.5 is not between 0 and 1"),
    ] {
        let bad = topo(&["probe", flag, value], &[]);
        let (_, stderr) = text(&bad);
        assert_eq!(bad.status.code(), Some(2), "{flag}");
        assert!(stderr.contains(says), "{stderr}");
    }
    // A ring naming ranks the communicator lacks (log 046 rings 4 ranks; 2 GPUs here).
    let log = "tests/fixtures/nccl-logs/046-nccl27to213-1node-4gpu-single-process-p2p-direct-8ch.log";
    let ring = topo(&["probe", "--no-copies", "--collectives", "none", "--ring-from", log], &[]);
    let (_, stderr) = text(&ring);
    assert_eq!(ring.status.code(), Some(2));
    assert!(stderr.contains("the ring names rank 2, but the communicator has 2 ranks"), "{stderr}");
}

#[test]
fn the_ring_nccl_chose_is_walked() {
    // Log 046 (NCCL 2.7-2.13, 4 GPUs, one process): its lowest channel's ring.
    let log = "tests/fixtures/nccl-logs/046-nccl27to213-1node-4gpu-single-process-p2p-direct-8ch.log";
    let args = ["probe", "--no-copies", "--collectives", "none", "--ring-from", log, "--max", "1M", "--format", "json"];
    let output = topo(&args, &[("FAKE_CUDA_BUS", ASUS_GPUS)]);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let hops: Vec<(u64, u64)> = json["probe"]["ring_walk"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["from"].as_u64().unwrap(), h["to"].as_u64().unwrap()))
        .collect();
    assert_eq!(hops, [(0, 1), (1, 2), (2, 3), (3, 0)]);
}

/// Preflight's line for one check (`FAIL  live-bandwidth  ...`).
fn check_line(stdout: &str, name: &str) -> String {
    stdout.lines().find(|l| l.split_whitespace().nth(1) == Some(name)).unwrap_or_default().to_string()
}

#[test]
fn results_travel_in_the_snapshot_to_preflight() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("node.yaml");
    let args = ["probe", "--sysfs-root", ASUS, "--copy-size", "4M", "--min", "1M", "--max", "4M", "--save"];
    let output = topo(&[&args[..], &[saved.to_str().unwrap()]].concat(), &FAULTS);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output).1);
    let preflight = topo(&["preflight", "--from", saved.to_str().unwrap()], &[]);
    let (stdout, _) = text(&preflight);
    assert_eq!(preflight.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("live-bandwidth"), "{stdout}");
    let line = |name: &str| check_line(&stdout, name);
    assert!(line("live-bandwidth").contains("FAIL"), "{stdout}");
    assert!(line("data-integrity").contains("PASS"), "{stdout}");
    assert!(line("data-integrity").contains("all_reduce best busbw 19.4 GB/s over 4 ranks"), "{stdout}");
    // The expectations file's minimums and threshold.
    let expect = dir.path().join("expect.yaml");
    let strict =
        "probe_threshold: 0.2\nnccl_min: 2.22.3\nmin_bandwidth:\n  h2d_gbps: 20\n  all_reduce_busbw_gbps: 25\n";
    std::fs::write(&expect, strict).unwrap();
    let strict = topo(&["preflight", "--from", saved.to_str().unwrap(), "--expect", expect.to_str().unwrap()], &[]);
    let (stdout, _) = text(&strict);
    let line = check_line(&stdout, "live-bandwidth");
    assert!(line.contains("H2D GPU 3 8.9 GB/s, expected at least 20 GB/s"), "{stdout}");
    assert!(line.contains("all_reduce best busbw 19.4 GB/s, expected at least 25 GB/s"), "{stdout}");
    assert!(check_line(&stdout, "versions").contains("NCCL 2.21.5, expected at least 2.22.3"), "{stdout}");
    // At a 0.2 threshold GPU 3's 33 % is no longer a slow link.
    assert!(!line.contains("below 20 %"), "{stdout}");
    // Without a probe the live checks are skipped, not passed.
    let bare = topo(&["preflight", "--sysfs-root", ASUS], &[]);
    let (stdout, _) = text(&bare);
    let line = check_line(&stdout, "live-bandwidth");
    assert!(line.contains("SKIP") && line.contains("no live probe"), "{stdout}");
}

#[test]
fn preflight_runs_the_probe_itself() {
    let args = ["preflight", "--probe", "quick", "--probe-max", "16M", "--sysfs-root", ASUS];
    let output = topo(&args, &[("FAKE_CUDA_BUS", ASUS_GPUS)]);
    let (stdout, stderr) = text(&output);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let line = check_line(&stdout, "data-integrity");
    assert!(line.contains("PASS") && line.contains("all_reduce best busbw"), "{stdout}\n{stderr}");
    let refuse = topo(&["preflight", "--probe", "quick", "--example", "dgx-h100"], &[]);
    assert_eq!(refuse.status.code(), Some(2));
    assert!(text(&refuse).1.contains("cannot be combined with --from or --example"));
}

#[test]
fn a_rank_that_never_arrives_ends_the_run() {
    let port = free_port().to_string();
    let launch = [
        ("RANK", "0"),
        ("WORLD_SIZE", "2"),
        ("MASTER_ADDR", "127.0.0.1"),
        ("TOPO_PORT", port.as_str()),
        ("TOPO_JOB_TOKEN", "probe-test"),
        ("TOPO_RENDEZVOUS_SECRET", "s3cret"),
    ];
    let start = std::time::Instant::now();
    let output = topo(&["probe", "--no-copies", "--max", "1M", "--timeout", "2"], &launch);
    let (_, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("rank 1 never connected"), "{stderr}");
    assert!(start.elapsed().as_secs() < 20);
}

/// `topo show` of a snapshot saved by `topo probe --save` prints the tables
/// after the topology (no GPU libraries needed to read it back).
#[test]
fn show_prints_stored_results() {
    let stored = "tests/fixtures/snapshots/asus-esc8000a-e12-standin-probe.yaml";
    let output = Command::new(env!("CARGO_BIN_EXE_topo")).args(["show", "--from", stored]).output().unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let probe = stdout.split_once("Live probe (topo probe; CUDA driver 12.4, NCCL 2.21.5)").unwrap().1;
    assert!(probe.contains("3    H2D              PCIe Gen4 x16        8.9 GB/s    27.1 GB/s   33 %"), "{probe}");
    assert!(probe.contains("all_gather, 4 rank(s): busbw expected 13.8 GB/s (ring, slowest hop SYS)"), "{probe}");
    assert!(probe.contains("2 -> 3       NODE                 4.0 GB/s    27.1 GB/s   15 %"), "{probe}");
}

/// `ranks` local processes standing in for nodes, as a launcher starts them
/// (torchrun's variables, loopback rendezvous), NCCL between them through the
/// stand-in's shared directory; waits for all and returns their outputs.
fn job(ranks: u32, args: &[&str], env: &[(&str, &str)]) -> Vec<Output> {
    let port = free_port().to_string();
    let shared = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..ranks)
        .map(|rank| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_topo"));
            command
                .args(args)
                .env("LD_LIBRARY_PATH", fake_libraries())
                .env("FAKE_NCCL_DIR", shared.path())
                .env("FAKE_CUDA_BUS", "0000:17:00.0")
                .env("RANK", rank.to_string())
                .env("LOCAL_RANK", rank.to_string())
                .env("WORLD_SIZE", ranks.to_string())
                .env("MASTER_ADDR", "127.0.0.1")
                .env("TOPO_PORT", &port)
                .env("TOPO_JOB_TOKEN", format!("probe-job-{port}"))
                .env("TOPO_RENDEZVOUS_SECRET", "s3cret")
                .envs(env.iter().copied())
                .env_remove("NCCL_DEBUG")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            command.spawn().unwrap()
        })
        .collect();
    children.into_iter().map(|c| c.wait_with_output().unwrap()).collect()
}

/// Defect 5 (issue 15): a peer killed in the middle of the collectives. NCCL
/// (the stand-in, as the real one over a closed socket) fails the operation
/// with a remote error; `ncclCommDestroy` of that communicator would wait for
/// ever, so the survivors must abort it, print NCCL's own message and exit 2
/// well within the timeout.
#[test]
fn a_peer_killed_mid_run_ends_every_process() {
    let args = ["probe", "--no-copies", "--collectives", "all_reduce", "--min", "1M", "--max", "4M", "--timeout", "10"];
    let start = std::time::Instant::now();
    // FAKE_NCCL_WAIT_S bounds the stand-in's hangs (destroy of a broken
    // communicator) at 40 s: past 20 s the survivors hung.
    let outputs = job(3, &args, &[("FAKE_NCCL_EXIT_AT", "2:1"), ("FAKE_NCCL_WAIT_S", "40")]);
    let all: Vec<(String, String)> = outputs.iter().map(text).collect();
    assert!(start.elapsed().as_secs() < 20, "took {:?}: {all:?}", start.elapsed());
    assert_eq!(outputs[2].status.code(), None, "rank 2 was to be killed");
    for output in &outputs[..2] {
        let (stdout, stderr) = text(output);
        assert_eq!(output.status.code(), Some(2), "{stdout}{stderr}");
        assert!(stderr.contains("remote process exited"), "{stderr}");
        assert!(stderr.contains("NCCL: NET/Socket : peer rank 2"), "{stderr}");
    }
}

/// The stand-in's ncclCommInitRank is collective: a rank that dies after the
/// rendezvous leaves the others blocked in it, as the real one does, and the
/// watchdog ends them within the (world-scaled) init timeout.
#[test]
fn a_rank_that_dies_before_nccl_init_ends_the_run() {
    let args = ["probe", "--no-copies", "--collectives", "all_reduce", "--min", "1M", "--max", "1M", "--timeout", "3"];
    let start = std::time::Instant::now();
    let outputs = job(2, &args, &[("FAKE_NCCL_EXIT_AT_INIT", "1"), ("FAKE_NCCL_WAIT_S", "40")]);
    assert!(start.elapsed().as_secs() < 15, "took {:?}", start.elapsed());
    let (stdout, stderr) = text(&outputs[0]);
    assert_eq!(outputs[0].status.code(), Some(2), "{stdout}{stderr}");
    assert!(stderr.contains("making the 2-rank NCCL communicator"), "{stderr}");
}

/// One process per node, three nodes of one GPU: the NCCL id goes over the
/// rendezvous, the collectives span the processes and every element checks out;
/// each process reports the ring hops it received.
#[test]
fn collectives_across_processes() {
    let args = ["probe", "--copy-size", "1M", "--collectives", "all_reduce,all_gather,sendrecv", "--min", "1M"];
    // Each node's topology: the recorded H100 node, whose GPU 0000:a4:00.0 has
    // mlx5_7 (RoCE, 200 Gb/s, active) on its PCIe switch.
    let more =
        ["--max", "4M", "--ring-walk", "--format", "json", "--sysfs-root", "tests/fixtures/sysfs/ibm-gx3d-h100x8"];
    // Rank 2's host links at 9 GB/s, the others' at 26. (This VM's sysfs
    // reports its emulated uplinks as Gen1 x1, so no copy has a usable
    // expectation here: only the comparison between ranks can flag rank 2.)
    let env = [("FAKE_CUDA_BUS", "0000:a4:00.0"), ("FAKE_CUDA_SLOW_RANK", "2:9")];
    let outputs = job(3, &[&args[..], &more[..]].concat(), &env);
    for (rank, output) in outputs.iter().enumerate() {
        assert_eq!(output.status.code(), Some(0), "rank {rank}; every rank said:\n{}", every_stderr(&outputs));
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let probe = &json["probe"];
        assert_eq!((probe["rank"].as_u64(), probe["world"].as_u64()), (Some(rank as u64), Some(3)));
        assert_eq!(probe["gpus"][0]["nccl_rank"].as_u64(), Some(rank as u64));
        for result in probe["collectives"].as_array().unwrap() {
            assert_eq!(result["ranks"], 3);
            assert_eq!(result["rows"].as_array().unwrap().len(), 3);
            assert!(result["rows"].as_array().unwrap().iter().all(|r| r["wrong"] == 0), "{result}");
        }
        let hop = &probe["ring_walk"][0];
        assert_eq!((hop["from"].as_u64(), hop["to"].as_u64()), (Some((rank as u64 + 2) % 3), Some(rank as u64)));
        // A hop from another node arrives through the nearest RDMA NIC: 200 Gb/s x 0.9.
        assert_eq!(hop["path"], "NET mlx5_7 200 Gb/s");
        assert_eq!(hop["expected"].as_f64(), Some(22.5e9));
        // The stand-in moves 4 MiB at 22 GB/s plus 10 us: 21.0 GB/s, 93 %.
        assert_eq!(format!("{:.2}", hop["ratio"].as_f64().unwrap()), "0.93");
        // Every rank's copies came back through NCCL: each process names rank 2.
        assert_eq!(probe["ranks"].as_array().unwrap().len(), 3);
        let straggler = json["findings"].as_array().unwrap().iter().find(|f| f["code"] == "probe-straggler").unwrap();
        assert!(straggler["evidence"][0]["at"].as_str().unwrap().starts_with("H2D rank 2 ("), "{straggler}");
        // And every rank's time of every row.
        let row = &probe["collectives"][0]["rows"][0];
        assert_eq!(row["per_rank"].as_array().unwrap().len(), 3, "{row}");
    }
}

/// `--pairwise` with six local processes standing in for nodes (the same code
/// path as `srun -N 6`: launcher variables, loopback rendezvous, NCCL through
/// the stand-in, which passes data between processes through files). Node 1's
/// network runs at 5 GB/s: its first pair fails, both nodes are retested
/// against nodes that passed, node 0 is cleared and node 1 named.
#[test]
fn pairwise_isolates_the_bad_node() {
    let outputs = job(
        6,
        &["probe", "--pairwise", "--max", "1M", "--timeout", "30", "--format", "json"],
        &[("FAKE_NCCL_RANK_GBPS", "1:5")],
    );
    for (rank, output) in outputs.iter().enumerate() {
        assert_eq!(output.status.code(), Some(1), "rank {rank}; every rank said:\n{}", every_stderr(&outputs));
    }
    let json: serde_json::Value = serde_json::from_slice(&outputs[0].stdout).unwrap();
    let pairwise = &json["probe"]["pairwise"];
    let verdicts: Vec<bool> = pairwise["nodes"].as_array().unwrap().iter().map(|n| n["passed"] == true).collect();
    assert_eq!(verdicts, [true, false, true, true, true, true]);
    let rounds: Vec<Vec<(u64, u64, bool)>> = pairwise["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|p| (p["a"].as_u64().unwrap(), p["b"].as_u64().unwrap(), p["passed"] == true))
                .collect()
        })
        .collect();
    assert_eq!(rounds, [vec![(0, 1, false), (2, 3, true), (4, 5, true)], vec![(0, 2, true), (1, 3, false)]]);
    // Every process decided alike: rank 4 holds the same verdicts.
    let other: serde_json::Value = serde_json::from_slice(&outputs[4].stdout).unwrap();
    assert_eq!(other["probe"]["pairwise"]["nodes"], pairwise["nodes"]);
    let codes: Vec<&str> = json["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["probe-bad-node"]);
    assert!(json["findings"][0]["evidence"][0]["text"].as_str().unwrap().contains("failed again with rank 3"));
    // Alone, there is nothing to pair.
    let alone = topo(&["probe", "--pairwise"], &[]);
    assert_eq!(alone.status.code(), Some(2));
    assert!(text(&alone).1.contains("--pairwise needs two or more processes"));
}

/// `topo diagnose` joins a job's log with a node snapshot; measured figures
/// stored in the snapshot are among the node's facts.
#[test]
fn diagnose_reads_stored_results() {
    let log = "tests/fixtures/nccl-logs/046-nccl27to213-1node-4gpu-single-process-p2p-direct-8ch.log";
    let stored = "tests/fixtures/snapshots/asus-esc8000a-e12-standin-probe.yaml";
    let output = Command::new(env!("CARGO_BIN_EXE_topo")).args(["diagnose", log, "--from", stored]).output().unwrap();
    let (stdout, _) = text(&output);
    assert!(stdout.contains("error    probe-slow-link"), "{stdout}");
    assert!(stdout.contains("evidence  ring hop rank 2 -> rank 3: 4.0 GB/s measured"), "{stdout}");
}

/// `topo probe --format prometheus` on the stand-in libraries, parsed and
/// linted by promtool: every copy, collective and ring hop beside its expected figure.
#[test]
fn prometheus_textfile() {
    let args = ["probe", "--sysfs-root", ASUS, "--copy-size", "4M", "--min", "1M", "--max", "4M", "--ring-walk"];
    let output = topo(&[&args[..], &["--format", "prometheus"]].concat(), &FAULTS);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    tools::promtool_accepts(&stdout);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let stdout = stdout.replacen(&format!("host=\"{}\"", host.trim()), "host=\"HOST\"", 1);
    assert!(stdout.contains("topo_probe_passed 0\n"), "{stdout}");
    assert!(stdout.contains("topo_probe_copy_failed{kind=\"p2p\",src=\"1\",dst=\"2\"} 1\n"), "{stdout}");
    insta::assert_snapshot!(stdout);
}

/// Issue 15, defect 12: ten GPUs on a box without NVSwitch, where a context
/// may have at most eight peers enabled at once. Every pair is measured when
/// peer access is turned off again after each pair.
#[test]
fn ten_gpus_copy_every_pair_within_the_peer_limit() {
    let buses: Vec<String> = (0..10).map(|i| format!("0000:{:02x}:00.0", 0x11 + i)).collect();
    let buses = buses.join(",");
    let args = ["probe", "--copy-size", "1M", "--collectives", "none", "--format", "json"];
    let output = topo(&args, &[("FAKE_CUDA_BUS", buses.as_str())]);
    let (stdout, stderr) = text(&output);
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let copies = json["probe"]["copies"].as_array().unwrap();
    assert_eq!(copies.len(), 4 * 10 + 3 * 45);
    let failed: Vec<_> = copies.iter().filter(|c| c.get("error").is_some()).collect();
    assert!(failed.is_empty(), "{failed:?}");
}

/// Issue 15, defect 8: all_to_all moves every pair at once, so a slow socket
/// link or a busy GPU link shows there and not on one ring hop; it is not
/// held against the ring's slowest hop (nor flagged as if it were).
#[test]
fn all_to_all_is_not_held_against_one_ring_hop() {
    let args = ["probe", "--sysfs-root", ASUS, "--no-copies", "--collectives", "all_to_all,all_reduce"];
    let output = topo(&[&args[..], &["--min", "1M", "--max", "4M", "--format", "json"]].concat(), &FAULTS);
    let (stdout, stderr) = text(&output);
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let all_to_all = &json["probe"]["collectives"][0];
    assert_eq!(all_to_all["collective"], "all_to_all");
    assert!(all_to_all.get("ratio").is_none(), "{all_to_all}");
    let all_reduce = &json["probe"]["collectives"][1];
    assert_eq!(all_reduce["path"], "ring, slowest hop SYS", "{all_reduce}");
    let findings = json["findings"].as_array().unwrap();
    assert!(findings.iter().all(|f| !f.to_string().contains("all_to_all")), "{findings:?}");
}

/// Issue 15, defect 9: with `--warmup 0` the first timed collective would
/// include the wait for the last process to arrive. One untimed collective
/// and a sync come first, so ranks time alike; each row gives the average
/// over ranks (nccl-tests' figure) and the slowest rank beside it.
#[test]
fn ranks_start_the_timed_loop_together() {
    let args = ["probe", "--collectives", "all_reduce", "--min", "1M", "--max", "2M", "--warmup", "0"];
    // Rank 2's host link is slow, so it reads back and checks each size's
    // result last and its stream reaches the next size late.
    let more = ["--copy-size", "1M", "--iters", "2", "--format", "json"];
    let outputs = job(3, &[&args[..], &more[..]].concat(), &[("FAKE_CUDA_SLOW_RANK", "2:2")]);
    for (rank, output) in outputs.iter().enumerate() {
        let (stdout, stderr) = text(output);
        let json: serde_json::Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("rank {rank} {e}: {stderr}"));
        for row in json["probe"]["collectives"][0]["rows"].as_array().unwrap() {
            let times: Vec<f64> = row["per_rank"].as_array().unwrap().iter().map(|p| p[1].as_f64().unwrap()).collect();
            assert_eq!(times.len(), 3, "{row}");
            let mean = times.iter().sum::<f64>() / 3.0;
            let max = times.iter().copied().fold(0.0, f64::max);
            assert!((row["seconds"].as_f64().unwrap() - mean).abs() < 1e-9, "{row}");
            assert!((row["slowest"].as_f64().unwrap() - max).abs() < 1e-9, "{row}");
            assert!(max / mean < 1.01, "ranks timed their wait for each other: {row}");
        }
        let findings = json["findings"].as_array().unwrap();
        assert!(findings.iter().all(|f| !f.to_string().contains("all_reduce 2 MiB")), "{findings:?}");
    }
}

/// Issue 15, defect 11: a GPU held by another process in exclusive-process
/// mode, and one with an uncorrectable ECC error, are rows of their own; the
/// other GPUs are still measured.
#[test]
fn a_gpu_that_cannot_be_opened_is_a_row_of_its_own() {
    let locks = tempfile::tempdir().unwrap();
    // This test process owns GPU 1 (0000:41:00.0) in exclusive-process mode.
    std::fs::write(locks.path().join("0000:41:00.0.lock"), format!("{}\n", std::process::id())).unwrap();
    let env = [
        ("FAKE_CUDA_BUS", ASUS_GPUS),
        ("FAKE_CUDA_EXCLUSIVE", "1"),
        ("FAKE_CUDA_LOCK_DIR", locks.path().to_str().unwrap()),
        ("FAKE_CUDA_ECC", "3"),
    ];
    let args = ["probe", "--sysfs-root", ASUS, "--copy-size", "1M", "--min", "1M", "--max", "1M", "--format", "json"];
    let output = topo(&args, &env);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let gpus = json["probe"]["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 4, "{gpus:?}");
    assert!(gpus[1]["error"].as_str().unwrap().contains("CUDA_ERROR_DEVICE_UNAVAILABLE"), "{gpus:?}");
    assert!(gpus[3]["error"].as_str().unwrap().contains("CUDA_ERROR_ECC_UNCORRECTABLE"), "{gpus:?}");
    assert!(gpus[0].get("error").is_none() && gpus[2].get("error").is_none(), "{gpus:?}");
    // GPUs 0 and 2: 4 copies each and their pair; an all_reduce over the two.
    let copies = json["probe"]["copies"].as_array().unwrap();
    assert_eq!(copies.len(), 4 * 2 + 3, "{copies:?}");
    assert!(copies.iter().all(|c| c.get("error").is_none()), "{copies:?}");
    assert_eq!(json["probe"]["collectives"][0]["ranks"], 2);
    let codes: Vec<&str> = json["findings"].as_array().unwrap().iter().map(|f| f["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"probe-gpu-unavailable"), "{codes:?}");
    // The lock is still this process's: topo never took it.
    assert!(locks.path().join("0000:41:00.0.lock").exists());
}

/// Issue 15, defect 11: a MIG instance is a slice of its GPU: its copies are
/// not held against the whole GPU's PCIe link, and it is marked as a slice.
#[test]
fn a_mig_instance_is_judged_as_a_slice() {
    let args = ["probe", "--sysfs-root", ASUS, "--copy-size", "1M", "--collectives", "none", "--format", "json"];
    let env = [
        ("FAKE_CUDA_BUS", "0000:01:00.0"),
        ("FAKE_CUDA_MIG", "1"),
        ("FAKE_CUDA_PCIE_GBPS", "6"),
        ("CUDA_VISIBLE_DEVICES", "MIG-1c2d3e4f-0000-1111-2222-333344445555"),
    ];
    let output = topo(&args, &env);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let gpu = &json["probe"]["gpus"][0];
    assert_eq!(gpu["mig"], "MIG-1c2d3e4f-0000-1111-2222-333344445555", "{gpu}");
    let h2d = &json["probe"]["copies"][0];
    assert_eq!(h2d["kind"], "host_to_device");
    assert!(h2d.get("ratio").is_none(), "{h2d}");
}

/// The ASUS tree copied with its two sockets' CPUs renumbered to this
/// machine's CPUs 0 and 1, so binding to a GPU's CPUs can happen here.
fn asus_on_two_cpus() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new("cp").args(["-a", ASUS]).arg(dir.path().join("asus")).status().unwrap();
    assert!(status.success());
    let mut stack = vec![dir.path().join("asus")];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() && matches!(entry.file_name().to_str(), Some("cpulist" | "local_cpulist")) {
                let old = std::fs::read_to_string(&path).unwrap();
                let new = match old.trim() {
                    "0-31" => "0",
                    "32-63" => "1",
                    _ => continue,
                };
                std::fs::write(&path, format!("{new}\n")).unwrap();
            }
        }
    }
    dir
}

/// Issue 15, defect 6: pinned memory lands where the allocating thread runs.
/// GPUs 2 and 3 sit on the second socket; timed from memory on the first,
/// their copies would cross the socket link and be flagged. topo binds its
/// thread to each GPU's CPUs while it allocates (and records the node).
#[test]
fn pinned_memory_on_the_gpus_node() {
    if std::thread::available_parallelism().map_or(0, |n| n.get()) < 2 {
        eprintln!("SKIPPED: needs two CPUs to stand for two NUMA nodes");
        return;
    }
    let tree = asus_on_two_cpus();
    let root = tree.path().join("asus");
    let args = ["probe", "--sysfs-root", root.to_str().unwrap(), "--copy-size", "4M", "--collectives", "none"];
    let env = [("FAKE_CUDA_BUS", ASUS_GPUS), ("FAKE_CUDA_GPU_NODE", "0,0,1,1"), ("FAKE_CUDA_NODE_CPUS", "0;1")];
    let output = topo(&[&args[..], &["--format", "json"]].concat(), &env);
    let (stdout, stderr) = text(&output);
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    for copy in json["probe"]["copies"].as_array().unwrap() {
        if copy.get("peer").is_some() || copy["kind"] == "device_local" {
            continue;
        }
        let gpu = copy["gpu"].as_u64().unwrap();
        assert_eq!(copy["host_node"].as_u64(), Some(gpu / 2), "{copy}");
        assert!(copy["ratio"].as_f64().unwrap() > 0.9, "{copy}");
    }
}

/// Issue 15, defect 7: one process per GPU (torchrun --nproc-per-node 3).
/// The three share their socket's host bandwidth (30 GB/s here): measured
/// together each would see a third of it and be judged as if alone. They take
/// turns by local rank after NCCL's init, so each copies at its link's speed.
#[test]
fn local_processes_take_turns_for_host_copies() {
    let args = ["probe", "--copy-size", "4M", "--collectives", "all_reduce", "--min", "1M", "--max", "1M"];
    let shared = tempfile::tempdir().unwrap();
    let env = [
        ("LOCAL_WORLD_SIZE", "3"),
        ("FAKE_CUDA_DIR", shared.path().to_str().unwrap()),
        ("FAKE_CUDA_SOCKET_GBPS", "30"),
        ("FAKE_CUDA_PINNED_HOLD_MS", "300"),
    ];
    let outputs = job(3, &[&args[..], &["--format", "json"]].concat(), &env);
    for (rank, output) in outputs.iter().enumerate() {
        let (stdout, stderr) = text(output);
        let json: serde_json::Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("rank {rank} {e}: {stderr}"));
        let h2d = &json["probe"]["copies"][0];
        assert_eq!(h2d["kind"], "host_to_device");
        let gbps = h2d["bandwidth"].as_f64().unwrap() / 1e9;
        assert!(gbps > 24.0, "rank {rank}: {gbps:.1} GB/s, shared with the others");
    }
    // With no collectives asked for, NCCL is still there to take turns through.
    let args = ["probe", "--copy-size", "4M", "--collectives", "none", "--format", "json"];
    for (rank, output) in job(3, &args, &env).iter().enumerate() {
        let (stdout, stderr) = text(output);
        let json: serde_json::Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("rank {rank} {e}: {stderr}"));
        let gbps = json["probe"]["copies"][0]["bandwidth"].as_f64().unwrap() / 1e9;
        assert!(gbps > 24.0, "rank {rank}: {gbps:.1} GB/s, shared with the others");
        assert!(json["probe"].get("collectives").is_none());
    }
}

/// Issue 15, defect 10: launching a copy costs the host microseconds; a
/// 64 KiB copy takes less on the link, so a stream fed one copy at a time
/// idles between launches and times the launches. The streams are held on
/// a host-mapped flag (cuStreamWaitValue32) until every copy is queued, as
/// nvbandwidth's blocking kernel holds them, so the link's figure comes out.
#[test]
fn small_copies_do_not_time_launches() {
    let args = ["probe", "--copy-size", "64K", "--collectives", "none", "--format", "json"];
    let env = [("FAKE_CUDA_BUS", "0000:17:00.0,0000:65:00.0"), ("FAKE_CUDA_LAUNCH_US", "20")];
    let output = topo(&args, &env);
    let (stdout, stderr) = text(&output);
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    // The stand-in's link: 5 us to set a copy up, then 26 GB/s.
    let bytes = 65536.0;
    let link = bytes / (5e-6 + bytes / 26e9);
    for copy in json["probe"]["copies"].as_array().unwrap() {
        if copy["kind"] != "host_to_device" && copy["kind"] != "device_to_host" {
            continue;
        }
        let measured = copy["bandwidth"].as_f64().unwrap();
        assert!(
            (measured / link - 1.0).abs() < 0.01,
            "{copy}: {:.2} GB/s, the link gives {:.2}",
            measured / 1e9,
            link / 1e9
        );
    }
}

/// The stand-ins themselves, held to the parts of the real CUDA/NCCL contract
/// that the probe relies on (tests/fake-gpu/check_contract.c): completion only
/// after a sync, a stream's context current, eight peers at most,
/// exclusive-process mode across processes, a held stream, reductions in the
/// element type, an init that waits for a missing peer, a buffer freed under
/// a queued copy.
#[test]
fn the_stand_ins_keep_the_real_contract() {
    let libraries = fake_libraries();
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("check_contract");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake-gpu/check_contract.c");
    let built = Command::new("cc")
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .arg(format!("-L{}", libraries.display()))
        .args(["-l:libcuda.so.1", "-l:libnccl.so.2"])
        .arg(format!("-Wl,-rpath,{}", libraries.display()))
        .status()
        .unwrap();
    assert!(built.success());
    let buses: Vec<String> = (0..10).map(|i| format!("0000:{:02x}:00.0", 0x11 + i)).collect();
    let output = Command::new(&binary)
        .env("FAKE_CUDA_BUS", buses.join(","))
        .env("FAKE_CUDA_EXCLUSIVE", "1")
        .env("FAKE_CUDA_LOCK_DIR", dir.path())
        .env("FAKE_NCCL_WAIT_S", "0.3")
        .output()
        .unwrap();
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(stdout, "ok\n");
    assert!(stderr.contains("freed while a queued copy still used it"), "{stderr}");
}
