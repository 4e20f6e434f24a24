//! Handing rank 0's NCCL unique id to the other ranks: one TCP connection per
//! rank to the address the launcher named, a job token, length-prefixed JSON
//! messages of bounded size, and one deadline for everything. When a rank
//! never arrives or dies before all have, every process aborts within the
//! deadline with a message naming the missing ranks.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::launcher::Launch;

/// No message is longer than this (the NCCL unique id is 128 bytes).
pub const MAX_MESSAGE: usize = 4096;

#[derive(Debug, Serialize, Deserialize)]
enum Message {
    Hello { token: String, rank: u32, host: String, pid: u32 },
    Welcome { id: String },
    Abort { reason: String },
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

fn read_message(stream: &mut TcpStream) -> std::io::Result<Message> {
    let mut length = [0u8; 4];
    stream.read_exact(&mut length)?;
    let length = u32::from_be_bytes(length) as usize;
    if length > MAX_MESSAGE {
        return Err(std::io::Error::new(
            ErrorKind::InvalidData,
            format!("message of {length} bytes (limit {MAX_MESSAGE})"),
        ));
    }
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body)?;
    serde_json::from_slice(&body).map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))
}

fn address(launch: &Launch) -> Result<SocketAddr, RendezvousError> {
    let text = format!("{}:{}", launch.master, launch.port);
    text.to_socket_addrs().ok().and_then(|mut a| a.next()).ok_or(RendezvousError::Resolve(text))
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

/// Rank 0: waits for every other rank, then sends each the `id`.
pub fn serve(launch: &Launch, id: &[u8], timeout: Duration) -> Result<(), RendezvousError> {
    let start = Instant::now();
    let deadline = start + timeout;
    let bind = address(launch)?;
    let listener =
        TcpListener::bind(bind).map_err(|source| RendezvousError::Listen { address: bind.to_string(), source })?;
    let _ = listener.set_nonblocking(true);
    let mut peers: Vec<Peer> = Vec::new();
    let mut refused = Vec::new();
    while peers.len() + 1 < launch.world as usize && Instant::now() < deadline {
        match listener.accept() {
            Ok((mut stream, from)) => {
                let _ = stream.set_nonblocking(false);
                let wait = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
                let _ = stream.set_read_timeout(Some(wait.min(Duration::from_secs(5))));
                match read_message(&mut stream) {
                    Ok(Message::Hello { token, rank, host, .. })
                        if token == launch.token
                            && rank > 0
                            && rank < launch.world
                            && !peers.iter().any(|p| p.rank == rank) =>
                    {
                        peers.push(Peer { rank, host, stream });
                    }
                    Ok(Message::Hello { token, rank, host, .. }) => {
                        let reason = if token != launch.token {
                            format!("{host} ({from}) belongs to another job (token {token:?})")
                        } else {
                            format!("{host} ({from}) claimed rank {rank}, taken or out of range")
                        };
                        let _ = write_message(&mut stream, &Message::Abort { reason: reason.clone() });
                        refused.push(reason);
                    }
                    Ok(_) | Err(_) => refused.push(format!("{from} sent no valid hello")),
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
    let mut missing: Vec<String> = (1..launch.world)
        .filter(|r| !peers.iter().any(|p| p.rank == *r))
        .map(|r| format!("rank {r} never connected"))
        .collect();
    let dead: Vec<String> = peers
        .iter()
        .filter(|p| closed(&p.stream))
        .map(|p| format!("rank {} on {} disconnected", p.rank, p.host))
        .collect();
    missing.extend(dead);
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
        let _ = write_message(&mut peer.stream, &welcome);
    }
    Ok(())
}

/// Any other rank: connects to rank 0 (retrying until it listens), says who
/// it is, and waits for the id.
pub fn join(launch: &Launch, host: &str, timeout: Duration) -> Result<Vec<u8>, RendezvousError> {
    let start = Instant::now();
    let deadline = start + timeout;
    let target = address(launch)?;
    let no_answer = |why: String| RendezvousError::NoAnswer {
        address: target.to_string(),
        seconds: start.elapsed().as_secs_f64(),
        why,
    };
    let mut stream = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(no_answer("no connection".into()));
        }
        match TcpStream::connect_timeout(&target, left.min(Duration::from_secs(2))) {
            Ok(stream) => break stream,
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    let hello = Message::Hello {
        token: launch.token.clone(),
        rank: launch.rank,
        host: host.to_string(),
        pid: std::process::id(),
    };
    write_message(&mut stream, &hello).map_err(|e| no_answer(e.to_string()))?;
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    let _ = stream.set_read_timeout(Some(left));
    match read_message(&mut stream) {
        Ok(Message::Welcome { id }) => unhex(&id).ok_or_else(|| no_answer("a malformed id".into())),
        Ok(Message::Abort { reason }) => Err(RendezvousError::Aborted(reason)),
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
}
