//! NCCL collectives over this process's GPUs (one NCCL rank each), swept over
//! message sizes as nccl-tests does, each size timed with CUDA events after a
//! warm-up and then checked element by element against the exactly known
//! result; and the ring walk, which times each hop of a ring alone.

use topo_model::Bandwidth;
use topo_model::collective::{self, Collective};
use topo_model::measure::{CollectiveResult, CollectiveRow, Expectation, HopResult};
use topo_model::units::size_label;

use super::LiveError;
use super::cuda::{DeviceBuffer, Gpu, Stream, time_each_stream};
use super::nccl::{Comm, Nccl, Op};

const FLOAT: usize = std::mem::size_of::<f32>();
/// Output is read back and checked this many bytes at a time.
const CHECK_CHUNK: usize = 16 << 20;

/// One local NCCL rank: its GPU, stream, communicator and buffers.
pub struct Rank<'a> {
    pub gpu: &'a Gpu,
    pub stream: Stream,
    pub comm: Comm<'a>,
    send: DeviceBuffer,
    recv: DeviceBuffer,
}

impl<'a> Rank<'a> {
    /// Buffers for messages up to `max_bytes`; the send buffer is filled once
    /// with the check's input pattern (any prefix of it is a valid input).
    pub fn new(gpu: &'a Gpu, stream: Stream, comm: Comm<'a>, max_bytes: usize) -> Result<Rank<'a>, LiveError> {
        let elements = max_bytes.div_ceil(FLOAT).max(1);
        let send = gpu.alloc(elements * FLOAT)?;
        let recv = gpu.alloc(elements * FLOAT)?;
        // The pattern repeats every 3 elements, so one chunk (a multiple of 3
        // elements) is written at every offset.
        let chunk_elements = (CHECK_CHUNK / FLOAT / 3 * 3).min(elements.div_ceil(3) * 3);
        let chunk: Vec<u8> =
            (0..chunk_elements).flat_map(|i| (collective::input(comm.rank, i as u64) as f32).to_ne_bytes()).collect();
        let mut offset = 0;
        while offset < send.bytes {
            let n = chunk.len().min(send.bytes - offset);
            send.write(offset, &chunk[..n], &stream)?;
            offset += n;
        }
        Ok(Rank { gpu, stream, comm, send, recv })
    }

    pub fn send_ptr(&self) -> u64 {
        self.send.ptr()
    }

    pub fn recv_ptr(&self) -> u64 {
        self.recv.ptr()
    }
}

/// How a message of `bytes` splits for `collective` over `ranks` ranks, in
/// nccl-tests' convention: `bytes` is the larger of the two buffers, rounded
/// down to a whole number of elements per rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Elements in the larger buffer.
    pub total: usize,
    /// Elements per rank's block (all_gather, reduce_scatter, all_to_all).
    pub block: usize,
}

pub fn shape(collective: Collective, bytes: u64, ranks: u32) -> Option<Shape> {
    let ranks = ranks.max(1) as usize;
    let elements = usize::try_from(bytes).ok()? / FLOAT;
    let per_rank = matches!(collective, Collective::AllGather | Collective::ReduceScatter | Collective::AllToAll);
    let block = if per_rank { elements / ranks } else { elements };
    let total = if per_rank { block * ranks } else { elements };
    (block > 0).then_some(Shape { total, block })
}

/// What rank `rank` of `world` enqueues for one operation.
fn ops(collective: Collective, shape: Shape, rank: u32, world: u32, send: u64, recv: u64) -> Vec<Op> {
    let Shape { total, block } = shape;
    let at = |base: u64, elements: usize| base + (elements * FLOAT) as u64;
    match collective {
        Collective::AllReduce => vec![Op::AllReduce { send, recv, count: total }],
        Collective::AllGather => vec![Op::AllGather { send, recv, count: block }],
        Collective::ReduceScatter => vec![Op::ReduceScatter { send, recv, count: block }],
        Collective::Broadcast => vec![Op::Broadcast { send, recv, count: total, root: 0 }],
        Collective::Reduce => vec![Op::Reduce { send, recv, count: total, root: 0 }],
        Collective::AllToAll => (0..world)
            .flat_map(|peer| {
                let offset = peer as usize * block;
                [
                    Op::Send { send: at(send, offset), count: block, peer },
                    Op::Recv { recv: at(recv, offset), count: block, peer },
                ]
            })
            .collect(),
        Collective::SendRecv => vec![
            Op::Send { send, count: total, peer: (rank + 1) % world },
            Op::Recv { recv, count: total, peer: (rank + world - 1) % world },
        ],
    }
}

/// Elements of rank's output that are wrong after `collective` of `shape`.
fn check(rank: &Rank, collective: Collective, shape: Shape) -> Result<u64, LiveError> {
    let (r, world) = (rank.comm.rank, rank.comm.world);
    let output_elements = match collective {
        Collective::ReduceScatter => shape.block,
        Collective::Reduce if r != 0 => return Ok(0),
        _ => shape.total,
    };
    let mut wrong = 0;
    let mut values = vec![0f32; (CHECK_CHUNK / FLOAT).min(output_elements)];
    let mut done = 0;
    while done < output_elements {
        let n = values.len().min(output_elements - done);
        rank.recv.read(done * FLOAT, &mut values[..n], &rank.stream)?;
        wrong += collective::wrong_elements(collective, r, world, shape.block as u64, done as u64, &values[..n]);
        done += n;
    }
    Ok(wrong)
}

#[derive(Debug, Clone)]
pub struct CollectivePlan {
    pub collectives: Vec<Collective>,
    pub sizes: Vec<u64>,
    pub warmup: u32,
    pub iterations: u32,
}

/// Runs every collective of `plan` at every size over `ranks` (this process's
/// share of the communicator). Every process of the job must call this with
/// the same plan, in step. `progress` hears of each (collective, size).
pub fn run(
    nccl: &super::nccl::Nccl,
    ranks: &[Rank],
    plan: &CollectivePlan,
    progress: &mut dyn FnMut(String),
) -> Result<Vec<CollectiveResult>, LiveError> {
    let Some(world) = ranks.first().map(|r| r.comm.world) else { return Ok(Vec::new()) };
    let streams: Vec<&Stream> = ranks.iter().map(|r| &r.stream).collect();
    let mut results = Vec::new();
    for &collective in &plan.collectives {
        let mut rows = Vec::new();
        for &bytes in &plan.sizes {
            progress(format!("{} {}", collective.name(), size_label(bytes)));
            let Some(shape) = shape(collective, bytes, world) else { continue };
            if shape.total * FLOAT > ranks.iter().map(|r| r.recv.bytes).min().unwrap_or(0) {
                return Err(LiveError::Usage(format!("{} bytes is larger than the buffers", bytes)));
            }
            for rank in ranks {
                rank.recv.fill(0xff, &rank.stream)?;
            }
            let enqueue_all = |_: u32| {
                nccl.group(|| {
                    for rank in ranks {
                        rank.gpu.bind()?;
                        let (send, recv) = (rank.send.ptr(), rank.recv.ptr());
                        for op in ops(collective, shape, rank.comm.rank, world, send, recv) {
                            rank.comm.enqueue(op, &rank.stream)?;
                        }
                    }
                    Ok(())
                })
            };
            untimed_first(&streams, plan.warmup, enqueue_all)?;
            let per_rank = time_each_stream(&streams, plan.iterations, enqueue_all)?;
            let mut wrong = 0;
            for rank in ranks {
                wrong += check(rank, collective, shape)?;
            }
            let mut row = CollectiveRow {
                bytes: (shape.total * FLOAT) as u64,
                seconds: 0.0,
                slowest: 0.0,
                algbw: Bandwidth(0.0),
                busbw: Bandwidth(0.0),
                wrong,
                per_rank: ranks.iter().map(|r| r.comm.rank).zip(per_rank).collect(),
            };
            // This process's ranks for now; the caller settles the row again
            // once every process's times are gathered.
            row.settle(collective, world);
            rows.push(row);
        }
        results.push(CollectiveResult { collective, ranks: world, rows, expectation: Expectation::default() });
    }
    Ok(results)
}

/// The warm-up, and always at least one untimed operation, then a wait for
/// the streams: a collective completes only when every rank has joined it, so
/// after this every process starts its timed loop together and no rank's
/// first timed operation includes its wait for the last one to arrive (which
/// `--warmup 0` would otherwise put in the figures).
pub fn untimed_first(
    streams: &[&Stream],
    warmup: u32,
    mut enqueue: impl FnMut(u32) -> Result<(), LiveError>,
) -> Result<(), LiveError> {
    for iteration in 0..warmup.max(1) {
        enqueue(iteration)?;
    }
    for stream in streams {
        stream.synchronize()?;
    }
    Ok(())
}

/// Every rank's `values` (the same count on every rank), gathered through one
/// NCCL all_gather over the communicator, in NCCL rank order; `values[i]`
/// belongs to `ranks[i]`. How the processes of a job share their figures.
pub fn gather(nccl: &Nccl, ranks: &[Rank], values: &[Vec<f32>]) -> Result<Vec<Vec<f32>>, LiveError> {
    let (Some(first), Some(n)) = (ranks.first(), values.first().map(Vec::len)) else { return Ok(Vec::new()) };
    if values.len() != ranks.len() || values.iter().any(|v| v.len() != n) || n == 0 {
        return Err(LiveError::Usage("every rank gathers the same number of values".into()));
    }
    let world = first.comm.world as usize;
    let mut buffers = Vec::new();
    for (rank, mine) in ranks.iter().zip(values) {
        let (send, recv) = (rank.gpu.alloc(n * FLOAT)?, rank.gpu.alloc(n * FLOAT * world)?);
        let bytes: Vec<u8> = mine.iter().flat_map(|v| v.to_ne_bytes()).collect();
        send.write(0, &bytes, &rank.stream)?;
        buffers.push((send, recv));
    }
    nccl.group(|| {
        for (rank, (send, recv)) in ranks.iter().zip(&buffers) {
            rank.gpu.bind()?;
            rank.comm.enqueue(Op::AllGather { send: send.ptr(), recv: recv.ptr(), count: n }, &rank.stream)?;
        }
        Ok(())
    })?;
    let mut all = vec![0f32; n * world];
    if let Some((_, recv)) = buffers.first() {
        recv.read(0, &mut all, &first.stream)?;
    }
    Ok(all.chunks(n).map(<[f32]>::to_vec).collect())
}

/// Host names of every rank (64 bytes each, carried as floats by all_gather,
/// which copies bits and never computes on them).
pub fn gather_hosts(nccl: &Nccl, ranks: &[Rank], host: &str) -> Result<Vec<String>, LiveError> {
    let mut name = [0u8; 64];
    for (slot, byte) in name.iter_mut().zip(host.bytes().take(63)) {
        *slot = byte;
    }
    let mine: Vec<f32> = name.chunks(4).map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]])).collect();
    let all = gather(nccl, ranks, &vec![mine; ranks.len()])?;
    Ok(all
        .iter()
        .map(|v| {
            let bytes: Vec<u8> = v.iter().flat_map(|f| f.to_ne_bytes()).take_while(|b| *b != 0).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .collect())
}

/// Times each hop `from -> to` of `ring` (NCCL ranks, in ring order) alone
/// with one send and one recv of `bytes`. This process takes part in the hops
/// that touch its ranks and reports those whose receiver it holds.
pub fn ring_walk(
    nccl: &super::nccl::Nccl,
    ranks: &[Rank],
    ring: &[u32],
    bytes: u64,
    plan: &CollectivePlan,
    progress: &mut dyn FnMut(String),
) -> Result<Vec<HopResult>, LiveError> {
    let count = (usize::try_from(bytes).unwrap_or(usize::MAX) / FLOAT)
        .min(ranks.iter().map(|r| r.recv.bytes / FLOAT).min().unwrap_or(0));
    let mut hops = Vec::new();
    if ring.len() < 2 || count == 0 {
        return Ok(hops);
    }
    let local = |rank: u32| ranks.iter().find(|r| r.comm.rank == rank);
    for (i, &from) in ring.iter().enumerate() {
        let to = ring[(i + 1) % ring.len()];
        let (sender, receiver) = (local(from), local(to));
        if sender.is_none() && receiver.is_none() {
            continue;
        }
        progress(format!("hop {from} -> {to}"));
        let enqueue = |_: u32| {
            nccl.group(|| {
                if let Some(s) = sender {
                    s.gpu.bind()?;
                    s.comm.enqueue(Op::Send { send: s.send.ptr(), count, peer: to }, &s.stream)?;
                }
                if let Some(r) = receiver {
                    r.gpu.bind()?;
                    r.comm.enqueue(Op::Recv { recv: r.recv.ptr(), count, peer: from }, &r.stream)?;
                }
                Ok(())
            })
        };
        let streams: Vec<&Stream> = [receiver, sender].into_iter().flatten().map(|r| &r.stream).collect();
        untimed_first(&streams, plan.warmup, enqueue)?;
        let seconds = time_each_stream(&streams, plan.iterations, enqueue)?;
        if receiver.is_some() {
            let seconds = seconds.first().copied().unwrap_or(0.0);
            let moved = (count * FLOAT) as u64;
            let bandwidth = if seconds > 0.0 { Bandwidth(moved as f64 / seconds) } else { Bandwidth(0.0) };
            hops.push(HopResult { from, to, bytes: moved, seconds, bandwidth, expectation: Expectation::default() });
        }
    }
    Ok(hops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_follow_nccl_tests() {
        // all_gather of 1 MiB over 8 ranks: 32768 elements per rank, 262144 in all.
        assert_eq!(shape(Collective::AllGather, 1 << 20, 8), Some(Shape { total: 262_144, block: 32_768 }));
        // 100 bytes over 8 ranks: 25 elements round down to 24.
        assert_eq!(shape(Collective::ReduceScatter, 100, 8), Some(Shape { total: 24, block: 3 }));
        assert_eq!(shape(Collective::AllReduce, 100, 8), Some(Shape { total: 25, block: 25 }));
        // Fewer elements than ranks: nothing to move.
        assert_eq!(shape(Collective::AllToAll, 16, 8), None);
        assert_eq!(shape(Collective::AllReduce, 2, 1), None);
    }

    #[test]
    fn each_rank_enqueues_what_nccl_tests_does() {
        let s = Shape { total: 8, block: 2 };
        // all_to_all: a send and a recv per peer, block-sized, at the peer's offset.
        let a2a = ops(Collective::AllToAll, s, 1, 4, 1000, 2000);
        assert_eq!(a2a.len(), 8);
        assert!(matches!(a2a[6], Op::Send { send: 1024, count: 2, peer: 3 }), "{a2a:?}");
        assert!(matches!(a2a[7], Op::Recv { recv: 2024, count: 2, peer: 3 }), "{a2a:?}");
        // sendrecv: to the next rank, from the previous, wrapping.
        let sr = ops(Collective::SendRecv, s, 0, 4, 1000, 2000);
        assert!(matches!(sr[..], [Op::Send { peer: 1, count: 8, .. }, Op::Recv { peer: 3, count: 8, .. }]), "{sr:?}");
        // all_gather and reduce_scatter count per rank; all_reduce the whole buffer.
        assert!(matches!(ops(Collective::AllGather, s, 0, 4, 0, 0)[..], [Op::AllGather { count: 2, .. }]));
        assert!(matches!(ops(Collective::ReduceScatter, s, 0, 4, 0, 0)[..], [Op::ReduceScatter { count: 2, .. }]));
        assert!(matches!(ops(Collective::AllReduce, s, 0, 4, 0, 0)[..], [Op::AllReduce { count: 8, .. }]));
    }
}
