//! The multi-node rendezvous, with several local processes over loopback (the
//! real binary, `topo probe --check-rendezvous`, under torchrun's variables):
//! all ranks meet; a rank that never arrives, or one that dies after saying
//! hello, makes every process exit 2 within the timeout naming it; strays from
//! another job and oversized messages are refused without disturbing the job.

#[path = "support/ports.rs"]
mod ports;
use ports::free_port;
use std::io::Write;
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn rank(rank: u32, world: u32, port: u16, timeout: u32) -> Child {
    Command::new(env!("CARGO_BIN_EXE_topo"))
        .args(["probe", "--check-rendezvous", "--timeout", &timeout.to_string()])
        .env("RANK", rank.to_string())
        .env("WORLD_SIZE", world.to_string())
        .env("MASTER_ADDR", "127.0.0.1")
        .env("TOPO_PORT", port.to_string())
        .env("TOPO_JOB_TOKEN", "test-job")
        .env("TOPO_RENDEZVOUS_SECRET", "s3cret")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Exit code, stdout and stderr of each child, in order.
fn finish(children: Vec<Child>) -> Vec<(i32, String, String)> {
    children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).into(),
                String::from_utf8_lossy(&out.stderr).into(),
            )
        })
        .collect()
}

/// A raw frame as a peer sends it: 4-byte length, then JSON.
fn send_raw(port: u16, body: &[u8], length: u32) -> TcpStream {
    let start = Instant::now();
    let mut stream = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => break s,
            Err(_) if start.elapsed() < Duration::from_secs(5) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("{e}"),
        }
    };
    stream.write_all(&length.to_be_bytes()).unwrap();
    stream.write_all(body).unwrap();
    stream
}

fn hello(token: &str, rank: u32) -> Vec<u8> {
    format!(r#"{{"Hello":{{"token":"{token}","rank":{rank},"host":"test-peer","pid":1,"secret":"s3cret"}}}}"#)
        .into_bytes()
}

#[test]
fn four_ranks_meet_and_share_one_id() {
    let port = free_port();
    let results = finish((0..4).map(|r| rank(r, 4, port, 20)).collect());
    let ids: Vec<&str> = results
        .iter()
        .map(|(code, out, err)| {
            assert_eq!(*code, 0, "{out}{err}");
            out.rsplit("id ").next().unwrap().trim()
        })
        .collect();
    assert!(ids.iter().all(|id| *id == ids[0] && id.len() == 16), "{ids:?}");
}

#[test]
fn a_rank_that_never_arrives_is_named_by_everyone() {
    let port = free_port();
    let start = Instant::now();
    let results = finish((0..3).map(|r| rank(r, 4, port, 3)).collect());
    assert!(start.elapsed() < Duration::from_secs(6), "took {:?}", start.elapsed());
    for (code, out, err) in &results {
        assert_eq!(*code, 2, "{out}{err}");
        assert!(err.contains("rank 3 never connected"), "{err}");
    }
}

#[test]
fn a_rank_that_dies_after_hello_is_named_by_everyone() {
    let port = free_port();
    let children: Vec<Child> = (0..2).map(|r| rank(r, 3, port, 10)).collect();
    // Rank 2 says hello and dies (its socket closes).
    drop(send_raw(port, &hello("topo/test-job/3", 2), hello("topo/test-job/3", 2).len() as u32));
    let results = finish(children);
    for (code, out, err) in &results {
        assert_eq!(*code, 2, "{out}{err}");
        assert!(err.contains("rank 2 on test-peer disconnected"), "{err}");
    }
}

#[test]
fn strays_and_oversized_messages_are_refused() {
    use std::io::Read;
    let port = free_port();
    let rank0 = rank(0, 2, port, 10);
    // Before the real rank 1 arrives: a process of another job, and a frame
    // claiming a megabyte.
    let mut stray = send_raw(port, &hello("topo/other-job/2", 1), hello("topo/other-job/2", 1).len() as u32);
    let mut reply = Vec::new();
    stray.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = stray.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.contains("Abort") && reply.contains("belongs to another job"), "{reply}");
    let _huge = send_raw(port, b"{}", 1_000_000);
    let rank1 = rank(1, 2, port, 10);
    for (code, out, err) in finish(vec![rank0, rank1]) {
        assert_eq!(code, 0, "{out}{err}");
    }
}

/// Issue 18 item 9: idle connections do not use up rank 0's attention; the
/// real rank still joins at once.
#[test]
fn idle_connections_do_not_hide_a_rank_that_joined() {
    let port = free_port();
    let rank0 = rank(0, 2, port, 10);
    let idle: Vec<TcpStream> = (0..3).map(|_| send_raw(port, b"", 0).try_clone().unwrap()).collect();
    let idle_unframed: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    let start = Instant::now();
    let rank1 = rank(1, 2, port, 10);
    for (code, out, err) in finish(vec![rank0, rank1]) {
        assert_eq!(code, 0, "{out}{err}");
    }
    assert!(start.elapsed() < Duration::from_secs(5), "took {:?}", start.elapsed());
    drop((idle, idle_unframed));
}

/// Issue 18 item 9: a peer that drips a byte now and then cannot hold rank 0
/// past its deadline.
#[test]
fn a_dripping_client_cannot_hold_rank_0() {
    let port = free_port();
    let start = Instant::now();
    let rank0 = rank(0, 2, port, 3);
    let dripper = std::thread::spawn(move || {
        let mut stream = send_raw(port, b"", 4000);
        for _ in 0..40 {
            if stream.write_all(b" ").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    });
    let results = finish(vec![rank0]);
    assert!(start.elapsed() < Duration::from_secs(6), "took {:?}", start.elapsed());
    assert_eq!(results[0].0, 2, "{results:?}");
    assert!(results[0].2.contains("rank 1 never connected"), "{results:?}");
    let _ = dripper.join();
}

/// Issue 18 item 9: a fake rank 0 that drips bytes cannot hold a joiner past
/// its deadline.
#[test]
fn a_dripping_rank_0_cannot_hold_a_joiner() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dripper = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let _ = stream.write_all(&100u32.to_be_bytes());
        for _ in 0..40 {
            if stream.write_all(b" ").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    });
    let start = Instant::now();
    let results = finish(vec![rank(1, 2, port, 3)]);
    assert!(start.elapsed() < Duration::from_secs(7), "took {:?}", start.elapsed());
    assert_eq!(results[0].0, 2, "{results:?}");
    assert!(results[0].2.contains("did not answer within"), "{results:?}");
    let _ = dripper.join();
}

/// Issue 18 item 10: a process that knows the job's token but not its secret
/// is refused; without a secret at all topo refuses to meet unless told.
#[test]
fn the_secret_guards_the_rendezvous() {
    use std::io::Read;
    let port = free_port();
    let rank0 = rank(0, 2, port, 10);
    let guess = br#"{"Hello":{"token":"topo/test-job/2","rank":1,"host":"intruder","pid":1}}"#;
    let mut intruder = send_raw(port, guess, guess.len() as u32);
    intruder.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut reply = Vec::new();
    let _ = intruder.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.contains("does not know the job's secret"), "{reply}");
    let rank1 = rank(1, 2, port, 10);
    for (code, out, err) in finish(vec![rank0, rank1]) {
        assert_eq!(code, 0, "{out}{err}");
    }

    let no_secret = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_topo"))
            .args(["probe", "--check-rendezvous", "--timeout", "5"])
            .args(extra)
            .env("RANK", "0")
            .env("WORLD_SIZE", "1")
            .env("MASTER_ADDR", "127.0.0.1")
            .env("TOPO_PORT", free_port().to_string())
            .env_remove("TOPO_RENDEZVOUS_SECRET")
            .env("WORLD_SIZE", "2")
            .output()
            .unwrap()
    };
    let refused = no_secret(&[]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("TOPO_RENDEZVOUS_SECRET"));
    let port = free_port();
    let insecure = |r: u32| {
        Command::new(env!("CARGO_BIN_EXE_topo"))
            .args(["probe", "--check-rendezvous", "--timeout", "10", "--insecure-rendezvous"])
            .env("RANK", r.to_string())
            .env("WORLD_SIZE", "2")
            .env("MASTER_ADDR", "127.0.0.1")
            .env("TOPO_PORT", port.to_string())
            .env_remove("TOPO_RENDEZVOUS_SECRET")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    for (code, out, err) in finish(vec![insecure(0), insecure(1)]) {
        assert_eq!(code, 0, "{out}{err}");
        if out.contains("rank 0") {
            assert!(err.contains("warning: rendezvous without TOPO_RENDEZVOUS_SECRET"), "{err}");
        }
    }
}

/// Issue 18 item 5: a world size no job has is refused with a short message.
#[test]
fn absurd_world_sizes_are_refused() {
    for world in ["100000000", "4294967295", "1000000"] {
        let out = Command::new(env!("CARGO_BIN_EXE_topo"))
            .args(["probe", "--check-rendezvous", "--timeout", "2"])
            .env("RANK", "0")
            .env("WORLD_SIZE", world)
            .env("MASTER_ADDR", "127.0.0.1")
            .env("TOPO_PORT", free_port().to_string())
            .env("TOPO_RENDEZVOUS_SECRET", "s3cret")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{world}: {stderr}");
        assert!(stderr.contains("takes at most 65536") && stderr.len() < 500, "{world}: {stderr}");
    }
}

/// No launcher variables, or no GPU libraries: a clear message and exit 2,
/// never cudarc's panic.
#[test]
fn no_launcher_and_no_libraries_are_clear_errors() {
    let bare = Command::new(env!("CARGO_BIN_EXE_topo"))
        .args(["probe", "--check-rendezvous"])
        .env_remove("RANK")
        .env_remove("SLURM_PROCID")
        .env_remove("OMPI_COMM_WORLD_RANK")
        .env_remove("PMI_RANK")
        .output()
        .unwrap();
    assert_eq!(bare.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bare.stderr).contains("no launcher found"));
    // This machine has no NVIDIA driver: the search is reported, not a panic.
    let probe = Command::new(env!("CARGO_BIN_EXE_topo")).arg("probe").env("LD_LIBRARY_PATH", "").output().unwrap();
    let stderr = String::from_utf8_lossy(&probe.stderr);
    assert_eq!(probe.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    if std::path::Path::new("/usr/lib/x86_64-linux-gnu/libcuda.so.1").exists() {
        return; // a GPU machine: covered by the hardware run, not here
    }
    assert!(stderr.contains("libcuda.so.1 (the NVIDIA driver) not found (looked in"), "{stderr}");
}
