//! `topo probe --check-rendezvous` under the real launchers, installed by
//! `.ci/run`: Open MPI's `mpirun`, torchrun (from PyTorch's wheel) and a
//! one-machine Slurm. Each checks that every rank and local rank is what the
//! launcher meant, that the rendezvous completes with one id, and that a peer
//! killed before it arrives ends every process within the timeout, named.
//!
//! A launcher that is not installed skips the test with a printed reason,
//! except under CI (`CI` set), where a missing launcher fails it.

#[path = "support/ports.rs"]
mod ports;
use ports::free_port;
#[path = "support/stand_in_gpu.rs"]
mod stand_in_gpu;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TOPO: &str = env!("CARGO_BIN_EXE_topo");

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
/// torchrun reads `$$` in its arguments as an escaped `$`; removed when the
/// returned path is dropped.)
fn victim_script(rank_var: &str, victim: u32, timeout: u32, extra: &str) -> tempfile::TempPath {
    let text = format!(
        "if [ \"${rank_var}\" = \"{victim}\" ]; then kill -9 $$; fi\nexec \"{TOPO}\" probe --check-rendezvous --timeout {timeout} {extra}\n"
    );
    let mut file = tempfile::Builder::new().prefix("topo-launcher-victim-").suffix(".sh").tempfile().unwrap();
    std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
    file.into_temp_path()
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
    let script = victim_script("OMPI_COMM_WORLD_RANK", 2, 5, &format!("--master {master}"));
    command.arg("sh").arg(&script);
    // Bounds leave room for a loaded 2-core CI machine: what is checked is
    // that the job ends by itself, well before the harness would kill it.
    let (code, out, err, took) = run_bounded(command, Duration::from_secs(120));
    assert!(took < Duration::from_secs(60), "took {took:?}\n{out}\n{err}");
    assert!(code.is_some_and(|c| c != 0), "{code:?}\n{out}\n{err}");
    // mpirun ends the whole job itself when a process dies, usually before
    // topo's timeout: then mpirun's own report names the rank (or, racing,
    // only says the job was aborted); otherwise topo's rank 0 names it.
    let all = format!("{out}{err}");
    assert!(
        all.contains("rank 2 never connected")
            || all.contains("process rank 2")
            || all.contains("the job has been aborted"),
        "{all}"
    );
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
    let script = script.to_str().unwrap();
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
            script,
        ],
    );
    let (code, out, err, took) = run_bounded(command, Duration::from_secs(180));
    assert!(took < Duration::from_secs(90), "took {took:?}\n{out}\n{err}");
    assert!(code.is_some_and(|c| c != 0), "{code:?}\n{out}\n{err}");
    let all = format!("{out}{err}");
    assert!(all.contains("rank 1 never connected") || all.contains("local_rank: 1"), "{all}");
}

/// A one-machine Slurm of its own (munged, slurmctld, slurmd) in a temporary
/// directory, on free ports, addressed by 127.0.0.1; stopped when dropped,
/// and its directory removed after.
struct Slurm {
    dir: tempfile::TempDir,
    conf: PathBuf,
}

impl Slurm {
    fn start() -> Option<Slurm> {
        let slurmctld = launcher("slurmctld", &["/usr/sbin/slurmctld"])?;
        let slurmd = launcher("slurmd", &["/usr/sbin/slurmd"])?;
        let munged = launcher("munged", &["/usr/sbin/munged"])?;
        if !is_root() {
            assert!(std::env::var_os("CI").is_none(), "a one-machine Slurm needs root (slurmd), and CI runs as root");
            eprintln!("SKIPPED: a one-machine Slurm needs root (slurmd runs tasks as their user)");
            return None;
        }
        let temp = tempfile::Builder::new().prefix("topo-slurm-").tempdir().unwrap();
        let dir = temp.path().to_path_buf();
        for sub in ["state", "spool"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let mut key = vec![0u8; 128];
        {
            use std::io::Read;
            std::fs::File::open("/dev/urandom").unwrap().read_exact(&mut key).unwrap();
        }
        std::fs::write(dir.join("munge.key"), key).unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.join("munge.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let d = dir.display();
        let status = Command::new(munged)
            .args([
                &format!("--key-file={d}/munge.key"),
                &format!("--socket={d}/munge.sock"),
                &format!("--pid-file={d}/munged.pid"),
                &format!("--log-file={d}/munged.log"),
                &format!("--seed-file={d}/munge.seed"),
                "--force",
            ])
            .status()
            .unwrap();
        assert!(status.success(), "munged did not start");
        let host = Command::new("hostname").arg("-s").output().unwrap();
        let host = String::from_utf8_lossy(&host.stdout).trim().to_string();
        let (ctld_port, slurmd_port) = (free_port(), free_port());
        let conf = dir.join("slurm.conf");
        std::fs::write(
            &conf,
            format!(
                "ClusterName=topotest\nSlurmctldHost={host}(127.0.0.1)\nSlurmUser=root\nSlurmdUser=root\n\
                 SlurmctldPort={ctld_port}\nSlurmdPort={slurmd_port}\nCommunicationParameters=NoInAddrAny\n\
                 AuthType=auth/munge\nAuthInfo=socket={d}/munge.sock\nCredType=cred/munge\n\
                 StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
                 SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
                 SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
                 ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nMpiDefault=none\n\
                 SchedulerType=sched/builtin\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n\
                 JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n\
                 ReturnToService=2\nSlurmdParameters=config_overrides\n\
                 NodeName={host} NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN\n\
                 PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n"
            ),
        )
        .unwrap();
        let slurm = Slurm { dir: temp, conf: conf.clone() };
        assert!(Command::new(slurmctld).arg("-f").arg(&conf).status().unwrap().success(), "slurmctld");
        assert!(Command::new(slurmd).arg("-f").arg(&conf).args(["-N", &host]).status().unwrap().success(), "slurmd");
        let start = Instant::now();
        loop {
            let info = slurm.command("sinfo").args(["-h", "-o", "%t"]).output().unwrap();
            if String::from_utf8_lossy(&info.stdout).trim() == "idle" {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "Slurm did not come up: {info:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
        Some(slurm)
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env("SLURM_CONF", &self.conf).env("TOPO_RENDEZVOUS_SECRET", "launcher-test-secret");
        for name in ["SLURM_JOB_ID", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_ID"] {
            command.env_remove(name);
        }
        command
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        for daemon in ["slurmd", "slurmctld", "munged"] {
            if let Ok(pid) = std::fs::read_to_string(self.dir.path().join(format!("{daemon}.pid"))) {
                let _ = Command::new("kill").arg(pid.trim()).status();
            }
        }
    }
}

/// `srun -N1 -n3` (ranks, local ranks from the step's layout, one id), a
/// killed task named by the others, and `sbatch` running topo directly in
/// the batch script: one process, not rank 0 of 3 waiting for peers.
#[test]
fn slurm_srun_and_sbatch() {
    let Some(slurm) = Slurm::start() else { return };
    let master = format!("127.0.0.1:{}", free_port());
    let mut srun = slurm.command("srun");
    srun.args(["-N1", "-n3", TOPO, "probe", "--check-rendezvous", "--timeout", "30", "--master", &master]);
    let (code, out, err, _) = run_bounded(srun, Duration::from_secs(90));
    assert_eq!(code, Some(0), "{out}\n{err}");
    for (rank, local) in assert_met(&out, &err, 3, "Slurm") {
        assert_eq!(local, format!("local rank {rank} of 3"));
    }

    let master = format!("127.0.0.1:{}", free_port());
    let mut srun = slurm.command("srun");
    let script = victim_script("SLURM_PROCID", 2, 5, &format!("--master {master}"));
    srun.args(["-N1", "-n3", "sh"]).arg(&script);
    let (code, out, err, took) = run_bounded(srun, Duration::from_secs(120));
    assert!(took < Duration::from_secs(60), "took {took:?}\n{out}\n{err}");
    assert!(code.is_some_and(|c| c != 0), "{code:?}\n{out}\n{err}");
    assert!(err.contains("rank 2 never connected"), "{out}\n{err}");

    let script = slurm.dir.path().join("batch.sh");
    let output = slurm.dir.path().join("batch.out");
    std::fs::write(
        &script,
        format!("#!/bin/sh\n\"{TOPO}\" probe --check-rendezvous --timeout 20 2>&1\necho \"exit=$?\"\n"),
    )
    .unwrap();
    let mut sbatch = slurm.command("sbatch");
    sbatch.args(["-n3", "-o"]).arg(&output).arg(&script);
    let (code, out, err, _) = run_bounded(sbatch, Duration::from_secs(30));
    assert_eq!(code, Some(0), "{out}\n{err}");
    let start = Instant::now();
    let text = loop {
        let text = std::fs::read_to_string(&output).unwrap_or_default();
        if text.contains("exit=") {
            break text;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "the batch job did not finish: {text}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(start.elapsed() < Duration::from_secs(15), "the batch script waited: {text}");
    assert!(text.contains("no launcher found") && text.contains("exit=2"), "{text}");

    // One GPU per task: Slurm's local ranks take turns for the host copies.
    let mut srun = slurm.command("srun");
    srun.args(["-N1", "-n3"]);
    assert_local_ranks_take_turns(srun, "SLURM_PROCID", false);
}

/// Issue 15, defect 7, under a real launcher: three processes on one node,
/// one GPU each (the stand-in GPU, its socket's host bandwidth 30 GB/s shared
/// by the processes holding pinned memory). The launcher's local ranks make
/// them take turns for the host copies after NCCL's init, so each copies at
/// its link's 26 GB/s (measured at once, each sees 9.9). `command` is the
/// launcher's, to which the probe is added; `rank_var` names the task's rank.
fn assert_local_ranks_take_turns(mut command: Command, rank_var: &str, forward: bool) {
    let dir = tempfile::tempdir().unwrap();
    stand_in_gpu::build_into(dir.path());
    let (cuda_dir, nccl_dir) = (dir.path().join("cuda"), dir.path().join("nccl"));
    std::fs::create_dir_all(&cuda_dir).unwrap();
    std::fs::create_dir_all(&nccl_dir).unwrap();
    let master = format!("127.0.0.1:{}", free_port());
    let vars = [
        ("LD_LIBRARY_PATH", dir.path().to_str().unwrap()),
        ("FAKE_CUDA_BUS", "0000:17:00.0"),
        ("FAKE_CUDA_DIR", cuda_dir.to_str().unwrap()),
        ("FAKE_CUDA_SOCKET_GBPS", "30"),
        ("FAKE_CUDA_PINNED_HOLD_MS", "300"),
        ("FAKE_NCCL_DIR", nccl_dir.to_str().unwrap()),
    ];
    for (k, v) in vars {
        if forward {
            command.args(["-x", k]);
        }
        command.env(k, v);
    }
    let probe = format!(
        "exec {TOPO} probe --copy-size 4M --collectives all_reduce --min 1M --max 1M --timeout 30 --master {master} --format json > {}/out.${rank_var}.json",
        dir.path().display()
    );
    command.args(["sh", "-c", &probe]);
    let (code, out, err, _) = run_bounded(command, Duration::from_secs(120));
    assert_eq!(code, Some(0), "{out}\n{err}");
    for rank in 0..3 {
        let text = std::fs::read_to_string(dir.path().join(format!("out.{rank}.json"))).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("rank {rank}: {e}: {text}"));
        let h2d = &json["probe"]["copies"][0];
        assert_eq!(h2d["kind"], "host_to_device");
        let gbps = h2d["bandwidth"].as_f64().unwrap() / 1e9;
        assert!(gbps > 24.0, "rank {rank}: {gbps:.1} GB/s, shared with the others");
    }
}

#[test]
fn open_mpi_local_ranks_take_turns_for_host_copies() {
    let Some(path) = launcher("mpirun", &[]) else { return };
    assert_local_ranks_take_turns(mpirun(&path, 3), "OMPI_COMM_WORLD_RANK", true);
}
