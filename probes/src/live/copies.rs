//! Copy bandwidth, the way nvbandwidth's copy-engine cases measure it: pinned
//! host memory to and from each GPU (each way and both at once), a copy
//! inside each GPU, and every GPU pair one way and both ways with peer access
//! on. A pair the driver refuses peer access is reported as refused, never
//! timed through host memory and mistaken for a slow link.

use topo_model::Bandwidth;
use topo_model::measure::{CopyKind, CopyResult, Expectation};

use super::LiveError;
use super::affinity::{self, HostHome};
use super::cuda::{Copy, DeviceBuffer, Gpu, PinnedBuffer, Stream, time_copies};

#[derive(Debug, Clone, Copy)]
pub struct CopyPlan {
    pub bytes: usize,
    pub warmup: u32,
    pub iterations: u32,
}

/// How many measurements `measure` makes for `gpus` GPUs (for a progress bar).
pub fn count(gpus: usize) -> usize {
    4 * gpus + gpus * gpus.saturating_sub(1) * 3 / 2
}

/// What one GPU holds for the run: two streams (for both-way copies), two
/// device buffers and two pinned host buffers.
struct Station<'g> {
    gpu: &'g Gpu,
    streams: [Stream; 2],
    device: [DeviceBuffer; 2],
}

impl<'g> Station<'g> {
    fn new(gpu: &'g Gpu, bytes: usize) -> Result<Station<'g>, LiveError> {
        Ok(Station { gpu, streams: [gpu.stream()?, gpu.stream()?], device: [gpu.alloc(bytes)?, gpu.alloc(bytes)?] })
    }
}

fn result(kind: CopyKind, gpu: u32, peer: Option<u32>, bytes: usize, seconds: Result<f64, LiveError>) -> CopyResult {
    let moved = if kind.both_directions() { 2 * bytes } else { bytes } as f64;
    let (seconds, bandwidth, error) = match seconds {
        Ok(s) if s > 0.0 => (s, Bandwidth(moved / s), None),
        Ok(s) => (s, Bandwidth(0.0), Some("the timed copies took no time: events did not bracket them".into())),
        Err(e) => (0.0, Bandwidth(0.0), Some(e.to_string())),
    };
    CopyResult {
        kind,
        gpu,
        peer,
        bytes: bytes as u64,
        seconds,
        bandwidth,
        expectation: Expectation::default(),
        host_node: None,
        error,
    }
}

fn failed(kind: CopyKind, gpu: u32, peer: Option<u32>, bytes: usize, error: String) -> CopyResult {
    CopyResult {
        kind,
        gpu,
        peer,
        bytes: bytes as u64,
        seconds: 0.0,
        bandwidth: Bandwidth(0.0),
        expectation: Expectation::default(),
        host_node: None,
        error: Some(error),
    }
}

/// Host copies of one GPU: H2D, D2H, both at once, and D2D. The pinned
/// buffers are allocated with this thread bound to `home`'s CPUs, so they lie
/// on the GPU's NUMA node and the copies do not cross the socket link.
fn host_copies(
    station: &Station,
    plan: &CopyPlan,
    home: Option<&HostHome>,
    progress: &mut dyn FnMut(String),
) -> Vec<CopyResult> {
    let (gpu, bytes) = (station.gpu.ordinal, plan.bytes);
    let kinds = [CopyKind::HostToDevice, CopyKind::DeviceToHost, CopyKind::Bidirectional, CopyKind::DeviceLocal];
    let allocate =
        || PinnedBuffer::new(station.gpu, bytes).and_then(|a| Ok((a, PinnedBuffer::new(station.gpu, bytes)?)));
    let (pinned, node) = match home {
        Some(home) => match affinity::on_cpus(&home.cpus, allocate) {
            (pinned, true) => (pinned, Some(home.node)),
            (pinned, false) => {
                progress(format!("GPU {gpu}: none of its CPUs is ours; pinned memory where the kernel puts it"));
                (pinned, None)
            }
        },
        None => (allocate(), None),
    };
    let (upload, mut download) = match pinned {
        Ok(pair) => pair,
        Err(e) => {
            progress(format!("GPU {gpu}: pinned host memory"));
            return kinds.into_iter().map(|k| failed(k, gpu, None, bytes, e.to_string())).collect();
        }
    };
    let [a, b] = &station.device;
    let [s0, s1] = &station.streams;
    let mut out = Vec::new();
    progress(format!("GPU {gpu}: H2D"));
    let h2d = time_copies(vec![(Copy::HostToDevice { from: &upload, to: a }, s0)], plan.warmup, plan.iterations);
    out.push(result(CopyKind::HostToDevice, gpu, None, bytes, h2d));
    progress(format!("GPU {gpu}: D2H"));
    let d2h = time_copies(vec![(Copy::DeviceToHost { from: a, to: &mut download }, s0)], plan.warmup, plan.iterations);
    out.push(result(CopyKind::DeviceToHost, gpu, None, bytes, d2h));
    progress(format!("GPU {gpu}: H2D+D2H"));
    let both = time_copies(
        vec![
            (Copy::HostToDevice { from: &upload, to: a }, s0),
            (Copy::DeviceToHost { from: b, to: &mut download }, s1),
        ],
        plan.warmup,
        plan.iterations,
    );
    out.push(result(CopyKind::Bidirectional, gpu, None, bytes, both));
    progress(format!("GPU {gpu}: D2D"));
    let local = time_copies(vec![(Copy::DeviceToDevice { from: a, to: b }, s0)], plan.warmup, plan.iterations);
    out.push(result(CopyKind::DeviceLocal, gpu, None, bytes, local));
    for copy in out.iter_mut().filter(|c| c.kind != CopyKind::DeviceLocal) {
        copy.host_node = node;
    }
    out
}

/// Whether `a` and `b` may copy directly, both ways; turns peer access on if so.
fn peer_access(a: &Gpu, b: &Gpu) -> Result<(), String> {
    let can = |x: &Gpu, y: &Gpu| x.can_access(y).map_err(|e| e.to_string());
    match (can(a, b)?, can(b, a)?) {
        (true, true) => {}
        (false, _) => {
            return Err(format!(
                "peer access refused by the driver (GPU {} cannot access GPU {})",
                a.ordinal, b.ordinal
            ));
        }
        (_, false) => {
            return Err(format!(
                "peer access refused by the driver (GPU {} cannot access GPU {})",
                b.ordinal, a.ordinal
            ));
        }
    }
    a.enable_peer_access(b).and_then(|_| b.enable_peer_access(a)).map_err(|e| e.to_string())
}

/// Every pair: `i -> j` for each ordered pair, then both ways for each unordered pair.
fn peer_copies(stations: &[Station], plan: &CopyPlan, progress: &mut dyn FnMut(String)) -> Vec<CopyResult> {
    let bytes = plan.bytes;
    let mut out = Vec::new();
    for (i, a) in stations.iter().enumerate() {
        for b in &stations[i + 1..] {
            let (x, y) = (a.gpu.ordinal, b.gpu.ordinal);
            if let Err(refused) = peer_access(a.gpu, b.gpu) {
                progress(format!("GPU {x} <-> GPU {y}: peer access refused"));
                progress(String::new());
                progress(String::new());
                out.push(failed(CopyKind::Peer, x, Some(y), bytes, refused.clone()));
                out.push(failed(CopyKind::Peer, y, Some(x), bytes, refused.clone()));
                out.push(failed(CopyKind::PeerBothWays, x, Some(y), bytes, refused));
                continue;
            }
            let one_way = |from: &Station, to: &Station| {
                time_copies(
                    vec![(Copy::Peer { from: &from.device[0], to: &to.device[1] }, &from.streams[0])],
                    plan.warmup,
                    plan.iterations,
                )
            };
            progress(format!("GPU {x} -> GPU {y}"));
            out.push(result(CopyKind::Peer, x, Some(y), bytes, one_way(a, b)));
            progress(format!("GPU {y} -> GPU {x}"));
            out.push(result(CopyKind::Peer, y, Some(x), bytes, one_way(b, a)));
            progress(format!("GPU {x} <-> GPU {y}"));
            let both = time_copies(
                vec![
                    (Copy::Peer { from: &a.device[0], to: &b.device[1] }, &a.streams[0]),
                    (Copy::Peer { from: &b.device[0], to: &a.device[1] }, &b.streams[0]),
                ],
                plan.warmup,
                plan.iterations,
            );
            out.push(result(CopyKind::PeerBothWays, x, Some(y), bytes, both));
            // Give the access back: past eight peers the driver refuses more.
            if let Err(e) = a.gpu.disable_peer_access(b.gpu).and_then(|_| b.gpu.disable_peer_access(a.gpu)) {
                progress(format!("GPU {x} <-> GPU {y}: {e}"));
            }
        }
    }
    out
}

/// All copy measurements for `gpus`. A GPU whose buffers cannot be set up
/// gets its failure on each of its rows; the others still run. `home` says
/// where each GPU's host memory belongs (by bus ID), when the topology knows.
pub fn measure(
    gpus: &[Gpu],
    plan: &CopyPlan,
    home: &dyn Fn(&str) -> Option<HostHome>,
    progress: &mut dyn FnMut(String),
) -> Vec<CopyResult> {
    let mut out = Vec::new();
    let mut stations = Vec::new();
    for gpu in gpus {
        match Station::new(gpu, plan.bytes) {
            Ok(station) => {
                out.extend(host_copies(&station, plan, home(&gpu.bus_id).as_ref(), progress));
                stations.push(station);
            }
            Err(e) => {
                for kind in
                    [CopyKind::HostToDevice, CopyKind::DeviceToHost, CopyKind::Bidirectional, CopyKind::DeviceLocal]
                {
                    progress(format!("GPU {}: setup failed", gpu.ordinal));
                    out.push(failed(kind, gpu.ordinal, None, plan.bytes, e.to_string()));
                }
            }
        }
    }
    out.extend(peer_copies(&stations, plan, progress));
    out
}
