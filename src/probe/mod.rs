//! `topo probe`'s orchestration: who this process is in the job (from the
//! launcher), meeting the other ranks (rendezvous), and finding the GPU
//! libraries before anything loads them; then the live run (`run`), what
//! each figure should have been (`expect`) and the table (`render`).

pub mod calibration;
pub mod expect;
pub mod findings;
pub mod launcher;
pub mod libraries;
pub mod pairwise;
pub mod render;
pub mod rendezvous;
pub mod run;

/// A message size from the command line: `8`, `64K`, `1M`, `4G`.
pub fn collective_size(text: &str) -> Option<u64> {
    topo_model::collective::parse_size(text)
}

use std::time::{Duration, Instant};

use launcher::Launch;

/// 16 random bytes from the kernel, standing in for the NCCL unique id when
/// only the rendezvous is checked.
fn random_id() -> Vec<u8> {
    use std::io::Read;
    let mut id = vec![0u8; 16];
    if let Ok(mut random) = std::fs::File::open("/dev/urandom") {
        let _ = random.read_exact(&mut id);
    }
    id
}

/// `topo probe --check-rendezvous`: every rank meets rank 0 and receives the
/// same id, as they will before an NCCL communicator is made. Returns the line
/// to print.
pub fn check_rendezvous(
    launch: &Launch,
    local: Option<launcher::LocalRank>,
    host: &str,
    timeout: Duration,
) -> Result<String, rendezvous::RendezvousError> {
    let start = Instant::now();
    let id = if launch.rank == 0 {
        let id = random_id();
        rendezvous::serve(launch, &id, timeout)?;
        id
    } else {
        rendezvous::join(launch, host, timeout)?
    };
    let id_text: String = id.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let local = local
        .map_or_else(|| "one process on this node".to_string(), |l| format!("local rank {} of {}", l.rank, l.size));
    Ok(format!(
        "rank {} of {} ({}, {local}) on {host}: rendezvous with rank 0 at {}:{} in {} ms, id {id_text}",
        launch.rank,
        launch.world,
        launch.source,
        launch.master,
        launch.port,
        start.elapsed().as_millis()
    ))
}
