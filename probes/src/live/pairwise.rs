//! One node's part in `topo probe --pairwise`: every process is one rank of a
//! world communicator; per round, ranks split into two-rank communicators
//! along the given pairs, time a both-ways send/recv and an all_reduce with
//! their partner, and share every pair's figures through an all_gather, so
//! every process decides the next round alike. Only NCCL moves data.

use topo_model::Bandwidth;
use topo_model::collective::Collective;
use topo_model::measure::PairResult;

use super::LiveError;
use super::collectives::{self, CollectivePlan, Rank};
use super::cuda::{Gpu, Stream, time_each_stream};
use super::nccl::{Comm, Nccl, Op};

/// Floats each rank contributes to a round's all_gather.
const FIGURES: usize = 5;

pub struct Node<'a> {
    nccl: &'a Nccl,
    gpu: &'a Gpu,
    world: Rank<'a>,
    bytes: u64,
}

impl<'a> Node<'a> {
    pub fn new(nccl: &'a Nccl, gpu: &'a Gpu, comm: Comm<'a>, bytes: u64) -> Result<Node<'a>, LiveError> {
        let max = usize::try_from(bytes).map_err(|_| LiveError::Usage(format!("{bytes} bytes is too large")))?;
        let world = Rank::new(gpu, gpu.stream()?, comm, max)?;
        Ok(Node { nccl, gpu, world, bytes })
    }

    pub fn rank(&self) -> u32 {
        self.world.comm.rank
    }

    pub fn size(&self) -> u32 {
        self.world.comm.world
    }

    /// Every rank's `values` (the same length everywhere), in rank order.
    pub fn gather(&self, values: &[f32]) -> Result<Vec<Vec<f32>>, LiveError> {
        collectives::gather(self.nccl, std::slice::from_ref(&self.world), &[values.to_vec()])
    }

    /// Host names of every rank.
    pub fn hosts(&self, host: &str) -> Result<Vec<String>, LiveError> {
        collectives::gather_hosts(self.nccl, std::slice::from_ref(&self.world), host)
    }

    /// One round: this rank's pair (if any) measures; every pair's figures
    /// come back to every rank. `passed` is left false for the caller to judge.
    pub fn round(&self, pairs: &[(u32, u32)], plan: &CollectivePlan) -> Result<Vec<PairResult>, LiveError> {
        let me = self.rank();
        let mine = pairs.iter().position(|(a, b)| *a == me || *b == me);
        let pair_comm = self.world.comm.split(mine.map(|i| i as u32), me)?;
        let mut figures = [f32::NAN; FIGURES];
        if let (Some(index), Some(comm)) = (mine, pair_comm) {
            let (a, b) = pairs[index];
            let partner = if a == me { b } else { a };
            let sendrecv = self.exchange(partner, plan)?;
            let pair_plan = CollectivePlan {
                collectives: vec![Collective::AllReduce],
                sizes: vec![self.bytes],
                warmup: plan.warmup,
                iterations: plan.iterations,
            };
            let rank = Rank::new(self.gpu, self.gpu.stream()?, comm, self.bytes as usize)?;
            let result = collectives::run(self.nccl, std::slice::from_ref(&rank), &pair_plan, &mut |_| {})?;
            let row = result.first().and_then(|r| r.rows.first());
            figures = [
                a as f32,
                b as f32,
                sendrecv.gbps() as f32,
                row.map_or(0.0, |r| r.busbw.gbps() as f32),
                row.map_or(0.0, |r| r.wrong as f32),
            ];
        }
        let all = self.gather(&figures)?;
        let mut results: Vec<PairResult> = Vec::new();
        for &(a, b) in pairs {
            // Both members report; the lower figures (the pair's worst view) count.
            let reports: Vec<&Vec<f32>> = [a, b].iter().filter_map(|r| all.get(*r as usize)).collect();
            let low = |i: usize| reports.iter().map(|v| v[i]).fold(f32::INFINITY, f32::min);
            let wrong = reports.iter().map(|v| v[4]).fold(0.0, f32::max);
            results.push(PairResult {
                a,
                b,
                sendrecv: Bandwidth::from_gbps(f64::from(low(2))),
                all_reduce_busbw: Bandwidth::from_gbps(f64::from(low(3))),
                wrong: wrong as u64,
                passed: false,
            });
        }
        Ok(results)
    }

    /// Per-direction bandwidth of sending to and receiving from `partner` at once.
    fn exchange(&self, partner: u32, plan: &CollectivePlan) -> Result<Bandwidth, LiveError> {
        let count = self.bytes as usize / 4;
        let rank = &self.world;
        let enqueue = |_: u32| {
            self.nccl.group(|| {
                self.gpu.bind()?;
                rank.comm.enqueue(Op::Send { send: rank.send_ptr(), count, peer: partner }, &rank.stream)?;
                rank.comm.enqueue(Op::Recv { recv: rank.recv_ptr(), count, peer: partner }, &rank.stream)
            })
        };
        let streams: [&Stream; 1] = [&rank.stream];
        collectives::untimed_first(&streams, plan.warmup, enqueue)?;
        let seconds = time_each_stream(&streams, plan.iterations, enqueue)?.first().copied().unwrap_or(0.0);
        Ok(if seconds > 0.0 { Bandwidth((count * 4) as f64 / seconds) } else { Bandwidth(0.0) })
    }
}
