//! `topo probe --check-rendezvous` under the real launchers, installed by
//! `.ci/run`: Open MPI's `mpirun`, torchrun (from PyTorch's wheel) and a
//! one-machine Slurm. Each checks that every rank and local rank is what the
//! launcher meant, that the rendezvous completes with one id, and that a peer
//! killed before it arrives ends every process within the timeout, named.
//!
//! A launcher that is not installed skips the test with a printed reason,
//! except under CI (`CI` set), where a missing launcher fails it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TOPO: &str = env!("CARGO_BIN_EXE_topo");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The launcher's path, or `None` (skip) outside CI; under CI a missing
/// launcher is a failure.
fn launcher(name: &str, candidates: &[&str]) -> Option<PathBuf> {
    let found = candidates.iter().map(PathBuf::from).find(|p| p.is_file()).or_else(|| {
        let out = Command::new("sh").args(["-c", &format!("command -v {name}")]).output().ok()?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (!path.is_empty()).then(|| PathBuf::from(path))
    });
    if found.is_none() {
        assert!(std::env::var_os("CI").is_none(), "{name} is not installed, and CI needs it (.ci/run installs it)");
        eprintln!("SKIPPED: {name} is not installed (.ci/run installs it; CI fails without it)");
    }
    found
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs `command` to its end or kills it after `limit`: exit code (None when
/// killed), stdout, stderr, time taken.
fn run_bounded(mut command: Command, limit: Duration) -> (Option<i32>, String, String, Duration) {
    let start = Instant::now();
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut killed = false;
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            killed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let code = if killed { None } else { out.status.code() };
    (code, String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into(), start.elapsed())
}

/// The rendezvous lines: (rank, world, launcher, local rank text, id).
fn lines(stdout: &str) -> Vec<(u32, u32, String, String, String)> {
    stdout
        .lines()
        .filter(|l| l.contains(": rendezvous with rank 0"))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let inside = l.split_once('(').and_then(|(_, r)| r.split_once(')')).map(|(i, _)| i).unwrap_or("");
            let (source, local) = inside.split_once(", ").unwrap_or((inside, ""));
            (
                words[1].parse().unwrap(),
                words[3].parse().unwrap(),
                source.to_string(),
                local.to_string(),
                l.rsplit("id ").next().unwrap().trim().to_string(),
            )
        })
        .collect()
}

/// Every rank 0..world once, from `source`, with one id.
fn assert_met(stdout: &str, stderr: &str, world: u32, source: &str) -> Vec<(u32, String)> {
    let found = lines(stdout);
    let ranks: BTreeSet<u32> = found.iter().map(|l| l.0).collect();
    assert_eq!(ranks, (0..world).collect(), "{stdout}\n{stderr}");
    assert!(found.iter().all(|l| l.1 == world && l.2 == source), "{stdout}");
    let ids: BTreeSet<&str> = found.iter().map(|l| l.4.as_str()).collect();
    assert_eq!(ids.len(), 1, "{stdout}");
    let mut locals: Vec<(u32, String)> = found.into_iter().map(|l| (l.0, l.3)).collect();
    locals.sort();
    locals
}

/// A script each rank runs: `topo probe --check-rendezvous`, except the rank
/// named by `$rank_var` = `victim`, which kills itself first. (A file, since
/// torchrun reads `$$` in its arguments as an escaped `$`.)
fn victim_script(rank_var: &str, victim: u32, timeout: u32, extra: &str) -> String {
    let path = std::env::temp_dir().join(format!("topo-launcher-victim-{}-{rank_var}.sh", std::process::id()));
    let text = format!(
        "if [ \"${rank_var}\" = \"{victim}\" ]; then kill -9 $$; fi\nexec \"{TOPO}\" probe --check-rendezvous --timeout {timeout} {extra}\n"
    );
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn mpirun(path: &Path, processes: u32) -> Command {
    let mut command = Command::new(path);
    if is_root() {
        command.arg("--allow-run-as-root");
    }
    command.args(["--oversubscribe", "-n", &processes.to_string(), "-x", "TOPO_RENDEZVOUS_SECRET"]);
    command.env("TOPO_RENDEZVOUS_SECRET", "launcher-test-secret");
    command
}

#[test]
fn open_mpi_three_processes() {
    let Some(path) = launcher("mpirun", &[]) else { return };
    let master = format!("127.0.0.1:{}", free_port());
    let mut command = mpirun(&path, 3);
    command.args([TOPO, "probe", "--check-rendezvous", "--timeout", "30", "--master", &master]);
    let (code, out, err, _) = run_bounded(command, Duration::from_secs(60));
    assert_eq!(code, Some(0), "{out}\n{err}");
    let locals = assert_met(&out, &err, 3, "Open MPI");
    for (rank, local) in locals {
        assert_eq!(local, format!("local rank {rank} of 3"));
    }
}

#[test]
fn open_mpi_killed_peer_ends_every_process() {
    let Some(path) = launcher("mpirun", &[]) else { return };
    let master = format!("127.0.0.1:{}", free_port());
    let mut command = mpirun(&path, 3);
    command.args(["sh", &victim_script("OMPI_COMM_WORLD_RANK", 2, 5, &format!("--master {master}"))]);
    let (code, out, err, took) = run_bounded(command, Duration::from_secs(40));
    assert!(took < Duration::from_secs(15), "took {took:?}\n{out}\n{err}");
    assert!(code.is_some_and(|c| c != 0), "{code:?}\n{out}\n{err}");
    let all = format!("{out}{err}");
    assert!(all.contains("rank 2 never connected") || all.contains("rank 2 "), "{all}");
}

fn torchrun_path() -> Option<PathBuf> {
    launcher("torchrun", &["/opt/torch-venv/bin/torchrun", "target/torch-venv/bin/torchrun"])
}

fn torchrun(path: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(path);
    command.args(args).env("TOPO_RENDEZVOUS_SECRET", "launcher-test-secret").env("OMP_NUM_THREADS", "1");
    command
}

/// `--nproc-per-node 2`: torchrun's agent serves its TCPStore on MASTER_PORT
/// (defect 1: topo must not take that port).
#[test]
fn torchrun_two_processes_on_one_node() {
    let Some(path) = torchrun_path() else { return };
    let endpoint = format!("127.0.0.1:{}", free_port());
    let command = torchrun(
        &path,
        &[
            "--nnodes",
            "1",
            "--nproc-per-node",
            "2",
            "--rdzv-backend",
            "c10d",
            "--rdzv-endpoint",
            &endpoint,
            "--local-addr",
            "127.0.0.1",
            "--no-python",
            TOPO,
            "probe",
            "--check-rendezvous",
            "--timeout",
            "30",
        ],
    );
    let (code, out, err, _) = run_bounded(command, Duration::from_secs(90));
    assert_eq!(code, Some(0), "{out}\n{err}");
    for (rank, local) in assert_met(&out, &err, 2, "torchrun") {
        assert_eq!(local, format!("local rank {rank} of 2"));
    }
}

/// Two torchrun agents (`--nnodes 2`) meeting through a c10d rendezvous on
/// 127.0.0.1: one process each, so each drives all of its node's GPUs.
#[test]
fn torchrun_two_agents_c10d() {
    let Some(path) = torchrun_path() else { return };
    let endpoint = format!("127.0.0.1:{}", free_port());
    let agent = || {
        torchrun(
            &path,
            &[
                "--nnodes",
                "2",
                "--nproc-per-node",
                "1",
                "--rdzv-backend",
                "c10d",
                "--rdzv-endpoint",
                &endpoint,
                "--rdzv-id",
                "topo-launcher-test",
                "--local-addr",
                "127.0.0.1",
                "--no-python",
                TOPO,
                "probe",
                "--check-rendezvous",
                "--timeout",
                "30",
            ],
        )
    };
    let second = std::thread::spawn({
        let command = agent();
        move || run_bounded(command, Duration::from_secs(120))
    });
    let (code, out, err, _) = run_bounded(agent(), Duration::from_secs(120));
    let (code2, out2, err2, _) = second.join().unwrap();
    assert_eq!((code, code2), (Some(0), Some(0)), "{out}\n{err}\n{out2}\n{err2}");
    for (_, local) in assert_met(&format!("{out}{out2}"), &format!("{err}{err2}"), 2, "torchrun") {
        assert_eq!(local, "one process on this node");
    }
}

#[test]
fn torchrun_killed_peer_ends_every_process() {
    let Some(path) = torchrun_path() else { return };
    let endpoint = format!("127.0.0.1:{}", free_port());
    let script = victim_script("RANK", 1, 5, "");
    let command = torchrun(
        &path,
        &[
            "--nnodes",
            "1",
            "--nproc-per-node",
            "3",
            "--rdzv-backend",
            "c10d",
            "--rdzv-endpoint",
            &endpoint,
            "--local-addr",
            "127.0.0.1",
            "--no-python",
            "sh",
            &script,
        ],
    );
    let (code, out, err, took) = run_bounded(command, Duration::from_secs(60));
    assert!(took < Duration::from_secs(25), "took {took:?}\n{out}\n{err}");
    assert!(code.is_some_and(|c| c != 0), "{code:?}\n{out}\n{err}");
    let all = format!("{out}{err}");
    assert!(all.contains("rank 1 never connected") || all.contains("local_rank: 1"), "{all}");
}
