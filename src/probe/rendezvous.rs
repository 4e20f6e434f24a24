//! Handing rank 0's NCCL unique id to the other ranks: one TCP connection per
//! rank to the address the launcher named, a job token and a shared secret,
//! length-prefixed JSON messages of bounded size, and one deadline for
//! everything. When a rank never arrives or dies before all have, every
//! process aborts within the deadline with a message naming the missing ranks.
//!
//! Security model: rank 0 listens on every interface (a host name may resolve
//! to 127.0.1.1 on its own node and to the real address elsewhere), so any
//! process that can reach the port can knock. A hello is accepted only with the
//! job's token (job id, step id, world size: names the job, guessable) and the
//! job's secret (`TOPO_RENDEZVOUS_SECRET`, which srun, mpirun `-x` and torchrun
//! pass on to the job's processes and nobody else sees). Without a secret a
//! multi-process run is refused unless `--insecure-rendezvous` says otherwise.
//! The secret travels in the clear over the job's network, like everything in
//! torch.distributed's own store; it keeps other users on the machine out, not
//! someone who can read the job's traffic.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::launcher::Launch;

/// No message is longer than this (the NCCL unique id is 128 bytes).
pub const MAX_MESSAGE: usize = 4096;

/// Connections rank 0 reads hellos from at once; more are closed at once
/// (a flood of idle connections cannot starve the real ranks of the deadline).
pub const MAX_PENDING: usize = 64;

/// A connection has this long to say hello, however slowly it drips bytes.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(5);

/// Joiners wait this long past the deadline for rank 0's verdict, which names
/// the missing ranks (rank 0 gives up at the deadline itself).
pub const VERDICT_GRACE: Duration = Duration::from_secs(2);

/// At most this many rank ranges are named in a message about missing ranks.
const NAMED_RANGES: usize = 16;

#[derive(Debug, Serialize, Deserialize)]
enum Message {
    Hello {
        token: String,
        rank: u32,
        host: String,
        pid: u32,
        #[serde(default)]
        secret: Option<String>,
    },
    Welcome {
        id: String,
    },
    Abort {
        reason: String,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum RendezvousError {
    #[error("cannot listen on {address}: {source}")]
    Listen { address: String, source: std::io::Error },
    #[error("cannot resolve the rendezvous address {0}")]
    Resolve(String),
    #[error("rendezvous failed after {seconds:.0} s: {missing}")]
    Missing { seconds: f64, missing: String },
    #[error("rank 0 at {address} did not answer within {seconds:.0} s ({why})")]
    NoAnswer { address: String, seconds: f64, why: String },
    #[error("rank 0 aborted the rendezvous: {0}")]
    Aborted(String),
    #[error(
        "{world} processes would meet with no shared secret: any local user could claim a rank. Set TOPO_RENDEZVOUS_SECRET to the same random value in every process (e.g. `export TOPO_RENDEZVOUS_SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \\n')` before srun/mpirun -x/torchrun), or pass --insecure-rendezvous"
    )]
    NoSecret { world: u32 },
}

/// Refuses a multi-process rendezvous with no secret unless `insecure`; the
/// warning to print when it goes ahead without one.
pub fn guard(launch: &Launch, insecure: bool) -> Result<Option<String>, RendezvousError> {
    match (&launch.secret, launch.world > 1, insecure) {
        (Some(_), _, _) | (None, false, _) => Ok(None),
        (None, true, true) => Ok(Some(format!(
            "topo probe: warning: rendezvous without TOPO_RENDEZVOUS_SECRET (--insecure-rendezvous): any process that reaches port {} can claim a rank",
            launch.port
        ))),
        (None, true, false) => Err(RendezvousError::NoSecret { world: launch.world }),
    }
}

/// Where a joined rank came from.
struct Peer {
    rank: u32,
    host: String,
    stream: TcpStream,
}

fn write_message(stream: &mut TcpStream, message: &Message) -> std::io::Result<()> {
    let body = serde_json::to_vec(message)?;
    stream.write_all(&(body.len() as u32).to_be_bytes())?;
    stream.write_all(&body)
}

/// Fills `buffer` or fails once `deadline` passes, however the bytes drip in
/// (a read timeout alone restarts with every byte).
fn read_exact_by(stream: &mut TcpStream, buffer: &mut [u8], deadline: Instant) -> std::io::Result<()> {
    let mut filled = 0;
    while filled < buffer.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(ErrorKind::TimedOut, "deadline passed"));
        }
        stream.set_read_timeout(Some(left))?;
        let Some(rest) = buffer.get_mut(filled..) else { break };
        match stream.read(rest) {
            Ok(0) => return Err(std::io::Error::new(ErrorKind::UnexpectedEof, "connection closed")),
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn read_message(stream: &mut TcpStream, deadline: Instant) -> std::io::Result<Message> {
    let mut length = [0u8; 4];
    read_exact_by(stream, &mut length, deadline)?;
    let length = u32::from_be_bytes(length) as usize;
    if length > MAX_MESSAGE {
        return Err(std::io::Error::new(
            ErrorKind::InvalidData,
            format!("message of {length} bytes (limit {MAX_MESSAGE})"),
        ));
    }
    let mut body = vec![0u8; length];
    read_exact_by(stream, &mut body, deadline)?;
    serde_json::from_slice(&body).map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))
}

/// Every address the master's name resolves to, in the resolver's order.
fn addresses(launch: &Launch) -> Result<Vec<SocketAddr>, RendezvousError> {
    let text = format!("{}:{}", launch.master, launch.port);
    let found: Vec<SocketAddr> = text.to_socket_addrs().map(|a| a.collect()).unwrap_or_default();
    if found.is_empty() { Err(RendezvousError::Resolve(text)) } else { Ok(found) }
}

/// Where rank 0 listens: the master's own loopback address when the launcher
/// named one literally (a one-machine job), otherwise every interface (IPv6
/// and IPv4), since the name may resolve differently on rank 0's node.
fn listen(launch: &Launch) -> Result<TcpListener, RendezvousError> {
    let port = launch.port;
    let literal = launch.master.trim_matches(['[', ']']).parse::<IpAddr>().ok();
    let candidates: Vec<SocketAddr> = match literal {
        Some(ip) if ip.is_loopback() => vec![SocketAddr::new(ip, port)],
        _ => vec![
            SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port),
            SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port),
        ],
    };
    let mut last = None;
    for address in &candidates {
        match TcpListener::bind(address) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some((address, e)),
        }
    }
    let (address, source) =
        last.map_or_else(|| (format!("port {port}"), std::io::Error::other("no address")), |(a, e)| (a.to_string(), e));
    Err(RendezvousError::Listen { address, source })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    text.len()
        .is_multiple_of(2)
        .then(|| (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect())
        .flatten()
}

/// Whether the peer closed its end (a process that died after saying hello).
fn closed(stream: &TcpStream) -> bool {
    let mut byte = [0u8; 1];
    if stream.set_nonblocking(true).is_err() {
        return true;
    }
    let gone = match stream.peek(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != ErrorKind::WouldBlock,
    };
    let _ = stream.set_nonblocking(false);
    gone
}

/// Equal without an early exit, so the time taken does not tell how much of a
/// guess was right.
fn same_secret(given: Option<&str>, expected: Option<&str>) -> bool {
    match (given, expected) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(a), Some(b)) => {
            a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
        }
    }
}

/// Ranks named compactly: `3-7, 9, 12-40 (and 5 more ranges)`.
pub fn rank_ranges(ranks: &[u32]) -> String {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for &r in ranks {
        match ranges.last_mut() {
            Some((_, end)) if end.checked_add(1) == Some(r) => *end = r,
            _ => ranges.push((r, r)),
        }
    }
    let mut text: Vec<String> = ranges
        .iter()
        .take(NAMED_RANGES)
        .map(|(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") })
        .collect();
    if ranges.len() > NAMED_RANGES {
        text.push(format!("and {} more ranges", ranges.len() - NAMED_RANGES));
    }
    text.join(", ")
}

/// What a connection's reader thread found.
enum Knock {
    Joined(Peer),
    Refused(String),
}

/// Reads one connection's hello (by its own deadline) and says what it was.
fn read_hello(mut stream: TcpStream, from: SocketAddr, launch: &Launch, deadline: Instant) -> Knock {
    let _ = stream.set_nonblocking(false);
    let deadline = deadline.min(Instant::now() + HELLO_DEADLINE);
    match read_message(&mut stream, deadline) {
        Ok(Message::Hello { token, rank, host, secret, .. }) => {
            let host = host.chars().filter(|c| !c.is_control()).take(256).collect::<String>();
            let reason = if token != launch.token {
                let token = token.chars().filter(|c| !c.is_control()).take(256).collect::<String>();
                format!("{host} ({from}) belongs to another job (token {token:?})")
            } else if !same_secret(secret.as_deref(), launch.secret.as_deref()) {
                format!("{host} ({from}) does not know the job's secret")
            } else if rank == 0 || rank >= launch.world {
                format!("{host} ({from}) claimed rank {rank}, out of range")
            } else {
                return Knock::Joined(Peer { rank, host, stream });
            };
            let _ = write_message(&mut stream, &Message::Abort { reason: reason.clone() });
            Knock::Refused(reason)
        }
        Ok(_) => Knock::Refused(format!("{from} sent no hello")),
        Err(e) => Knock::Refused(format!("{from} sent no valid hello ({e})")),
    }
}

/// Rank 0: waits for every other rank, then sends each the `id`. Hellos are
/// read concurrently, each by its own deadline, all by the rendezvous's.
pub fn serve(launch: &Launch, id: &[u8], timeout: Duration) -> Result<(), RendezvousError> {
    let start = Instant::now();
    let deadline = start + timeout;
    let listener = listen(launch)?;
    let _ = listener.set_nonblocking(true);
    let expected = launch.world.saturating_sub(1) as usize;
    let mut peers: Vec<Peer> = Vec::new();
    let mut refused: Vec<String> = Vec::new();
    let (knocks, heard) = mpsc::channel::<Knock>();
    let mut pending = 0usize;
    while peers.len() < expected && Instant::now() < deadline {
        match listener.accept() {
            Ok((stream, from)) if pending < MAX_PENDING => {
                pending += 1;
                let knocks = knocks.clone();
                let launch = launch.clone();
                std::thread::spawn(move || {
                    let _ = knocks.send(read_hello(stream, from, &launch, deadline));
                });
            }
            Ok((stream, from)) => {
                drop(stream);
                if refused.len() < NAMED_RANGES {
                    refused.push(format!("{from} closed: {MAX_PENDING} connections already pending"));
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
        while let Ok(knock) = heard.try_recv() {
            pending = pending.saturating_sub(1);
            match knock {
                Knock::Joined(mut peer) if peers.iter().any(|p| p.rank == peer.rank) => {
                    let reason = format!("{} claimed rank {}, already taken", peer.host, peer.rank);
                    let _ = write_message(&mut peer.stream, &Message::Abort { reason: reason.clone() });
                    refused.push(reason);
                }
                Knock::Joined(peer) => peers.push(peer),
                Knock::Refused(reason) if refused.len() < NAMED_RANGES => refused.push(reason),
                Knock::Refused(_) => {}
            }
        }
    }
    let mut never: Vec<u32> = (1..launch.world).filter(|r| !peers.iter().any(|p| p.rank == *r)).collect();
    never.sort_unstable();
    let mut missing = Vec::new();
    if !never.is_empty() {
        let word = if never.len() == 1 { "rank" } else { "ranks" };
        missing.push(format!("{word} {} never connected", rank_ranges(&never)));
    }
    missing.extend(
        peers
            .iter()
            .filter(|p| closed(&p.stream))
            .take(NAMED_RANGES)
            .map(|p| format!("rank {} on {} disconnected", p.rank, p.host)),
    );
    if !missing.is_empty() {
        let mut text = missing.join("; ");
        if !refused.is_empty() {
            text.push_str(&format!(" (refused: {})", refused.join("; ")));
        }
        for peer in &mut peers {
            let _ = write_message(&mut peer.stream, &Message::Abort { reason: text.clone() });
        }
        return Err(RendezvousError::Missing { seconds: start.elapsed().as_secs_f64(), missing: text });
    }
    let welcome = Message::Welcome { id: hex(id) };
    for peer in &mut peers {
        let _ = peer.stream.set_write_timeout(Some(Duration::from_secs(5)));
        let _ = write_message(&mut peer.stream, &welcome);
    }
    Ok(())
}

/// Any other rank: connects to rank 0 (trying every address its name
/// resolves to, retrying until it listens), says who it is, and waits for the
/// id, all within one deadline however slowly rank 0 answers.
pub fn join(launch: &Launch, host: &str, timeout: Duration) -> Result<Vec<u8>, RendezvousError> {
    let start = Instant::now();
    let deadline = start + timeout;
    let targets = addresses(launch)?;
    let shown = format!("{}:{}", launch.master, launch.port);
    let no_answer =
        |why: String| RendezvousError::NoAnswer { address: shown.clone(), seconds: start.elapsed().as_secs_f64(), why };
    let mut last_error = String::from("no connection");
    let mut stream = 'connected: loop {
        for target in &targets {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(no_answer(format!("no connection to {targets:?}: {last_error}")));
            }
            match TcpStream::connect_timeout(target, left.min(Duration::from_secs(2))) {
                Ok(stream) => break 'connected stream,
                Err(e) => last_error = format!("{target}: {e}"),
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let hello = Message::Hello {
        token: launch.token.clone(),
        rank: launch.rank,
        host: host.to_string(),
        pid: std::process::id(),
        secret: launch.secret.clone(),
    };
    let _ = stream
        .set_write_timeout(Some(deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1))));
    write_message(&mut stream, &hello).map_err(|e| no_answer(e.to_string()))?;
    match read_message(&mut stream, deadline + VERDICT_GRACE) {
        Ok(Message::Welcome { id }) => unhex(&id).ok_or_else(|| no_answer("a malformed id".into())),
        Ok(Message::Abort { reason }) => {
            Err(RendezvousError::Aborted(reason.chars().filter(|c| !c.is_control()).take(4096).collect()))
        }
        Ok(Message::Hello { .. }) => Err(no_answer("an unexpected hello".into())),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Err(no_answer("timed out".into())),
        Err(e) => Err(no_answer(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_bad_input() {
        let id: Vec<u8> = (0..128).map(|i| (i * 7) as u8).collect();
        assert_eq!(unhex(&hex(&id)), Some(id));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn missing_ranks_are_named_compactly() {
        assert_eq!(rank_ranges(&[1, 2, 3, 5, 7, 8]), "1-3, 5, 7-8");
        let many: Vec<u32> = (1..1_000_000).filter(|r| r % 2 == 1).collect();
        let text = rank_ranges(&many);
        assert!(text.len() < 200 && text.ends_with("and 499984 more ranges"), "{text}");
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(Some("abc"), Some("abc")));
        assert!(!same_secret(Some("abd"), Some("abc")));
        assert!(!same_secret(Some("ab"), Some("abc")));
        assert!(!same_secret(None, Some("abc")));
        assert!(same_secret(None, None));
    }
}
