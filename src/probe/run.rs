//! `topo probe`'s live run: open the GPUs, measure copies, meet the other
//! ranks, run the collectives and the ring walk, all under a watchdog so a
//! lost peer ends every process with a message instead of a hang.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Context;
use topo_model::Snapshot;
use topo_model::collective::Collective;
use topo_model::measure::{ProbeReport, ProbeSettings, ProbedGpu};
use topo_probes::live::affinity::HostHome;
use topo_probes::live::collectives::{self, CollectivePlan, Rank};
use topo_probes::live::copies::{self, CopyPlan};
use topo_probes::live::cuda::{self, Gpu};
use topo_probes::live::nccl::{Nccl, UniqueId};

use super::launcher::{Launch, LocalRank};
use super::rendezvous;

/// Everything one run needs, decided before any GPU is touched.
pub struct Plan {
    pub copies: Option<CopyPlan>,
    pub collectives: CollectivePlan,
    /// Ring walk: `Some(ring)` of NCCL ranks, `Some(empty)` for rank order.
    pub ring: Option<Vec<u32>>,
    pub ring_bytes: u64,
    /// `--pairwise`: only the node-pair test, one GPU per process.
    pub pairwise: bool,
    pub threshold: f64,
    pub timeout: Duration,
    pub nccl_library: Option<PathBuf>,
}

/// This process's part of the job.
pub struct Place {
    pub launch: Option<Launch>,
    /// One process per GPU (torchrun `--nproc-per-node` > 1, several Slurm
    /// tasks per node): the local rank, which picks the GPU.
    pub local_rank: Option<LocalRank>,
    pub host: String,
    /// Where each GPU's host memory belongs (bus ID, node and CPUs), from
    /// this node's topology; empty when it does not say.
    pub homes: Vec<(String, HostHome)>,
}

/// Ends the process with exit code 2 and `what` if dropped later than `timeout`
/// after `arm`: NCCL blocks forever on a peer that never arrives.
pub struct Watchdog {
    /// Dropping it wakes the watching thread, which then ends quietly.
    _done: mpsc::Sender<()>,
}

impl Watchdog {
    pub fn arm(timeout: Duration, what: String) -> Watchdog {
        let (done, wait) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(timeout) {
                eprintln!("topo probe: {what} did not finish within {} s; giving up", timeout.as_secs());
                std::process::exit(2);
            }
        });
        Watchdog { _done: done }
    }
}

/// How long making a `world`-rank communicator may take: the run's timeout
/// plus 50 ms a rank, since NCCL's init exchanges every rank's addresses and
/// topology through its bootstrap ring (minutes at thousands of ranks).
pub fn init_timeout(timeout: Duration, world: u32) -> Duration {
    timeout + Duration::from_millis(50) * world
}

/// Progress: a bar on a terminal (stderr), nothing otherwise.
pub struct Progress(indicatif::ProgressBar);

impl Progress {
    pub fn new(total: u64) -> Progress {
        let bar = indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}") {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress(bar)
    }

    /// For work whose length is not known ahead (the pairwise rounds).
    pub fn spinner() -> Progress {
        let bar = indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template("{elapsed:>4} {spinner} round {pos}: {msg}") {
            bar.set_style(style);
        }
        Progress(bar)
    }

    pub fn step(&self, what: String) {
        self.0.inc(1);
        if !what.is_empty() {
            self.0.set_message(what);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}

/// Opens this process's GPUs. One that cannot be opened (held by another
/// process in exclusive-process mode, an uncorrectable ECC error) is a row of
/// its own with the driver's answer; the others are measured. None at all is
/// an error.
fn open_gpus(place: &Place) -> anyhow::Result<(Vec<Gpu>, Vec<ProbedGpu>)> {
    let count = Gpu::count()?;
    if count == 0 {
        anyhow::bail!("the CUDA driver sees no GPU (check CUDA_VISIBLE_DEVICES and `nvidia-smi`)");
    }
    let mut opened = Vec::new();
    let mut failed = Vec::new();
    for ordinal in gpus_to_open(place.local_rank, count)? {
        match Gpu::open(ordinal) {
            Ok(gpu) => opened.push(gpu),
            Err(error) => {
                let (name, bus_id) = Gpu::describe(ordinal).unwrap_or_default();
                failed.push(ProbedGpu {
                    ordinal,
                    bus_id,
                    mig: mig_instance(ordinal, &name),
                    name,
                    error: Some(error.to_string()),
                    ..ProbedGpu::default()
                });
            }
        }
    }
    if opened.is_empty() {
        let why: Vec<String> =
            failed.iter().map(|g| format!("GPU {}: {}", g.ordinal, g.error.as_deref().unwrap_or(""))).collect();
        anyhow::bail!("no GPU could be opened ({})", why.join("; "));
    }
    Ok((opened, failed))
}

/// The MIG instance behind CUDA ordinal `ordinal`: the entry of
/// CUDA_VISIBLE_DEVICES that names it (`MIG-<uuid>`, or the older
/// `MIG-GPU-<uuid>/<gi>/<ci>`; CUDA numbers the visible devices in the order
/// listed), else the profile in the name CUDA gives a MIG device
/// (`NVIDIA A100-SXM4-40GB MIG 1g.5gb` -> `MIG 1g.5gb`).
pub fn mig_instance(ordinal: u32, name: &str) -> Option<String> {
    let visible = std::env::var("CUDA_VISIBLE_DEVICES").unwrap_or_default();
    visible_mig(&visible, ordinal).or_else(|| mig_in_name(name))
}

fn mig_in_name(name: &str) -> Option<String> {
    let at = name.find(" MIG ")?;
    Some(name[at + 1..].trim().to_string())
}

fn visible_mig(visible: &str, ordinal: u32) -> Option<String> {
    let entry = visible.split(',').map(str::trim).filter(|e| !e.is_empty()).nth(ordinal as usize)?;
    entry.starts_with("MIG-").then(|| entry.to_string())
}

/// Which CUDA ordinals this process drives: all of them alone; its local
/// rank's with one process per GPU; the only visible one when the launcher
/// binds one GPU to each task (`--gpus-per-task 1`, `--gpu-bind`, a per-rank
/// `CUDA_VISIBLE_DEVICES`), whatever the local rank.
pub fn gpus_to_open(local: Option<LocalRank>, count: u32) -> anyhow::Result<Vec<u32>> {
    Ok(match local {
        None => (0..count).collect(),
        Some(_) if count == 1 => vec![0],
        Some(local) if local.rank < count => vec![local.rank],
        Some(local) => anyhow::bail!(
            "local rank {} of {} has no GPU: the driver sees {count} (one GPU per process, or one visible GPU per task)",
            local.rank,
            local.size
        ),
    })
}

/// The NCCL id every rank must share: made by global rank 0, handed over the
/// launcher-named rendezvous (bounded message, job token, timeout).
fn share_id(nccl: &Nccl, place: &Place, timeout: Duration) -> anyhow::Result<UniqueId> {
    let Some(launch) = place.launch.as_ref().filter(|l| l.world > 1) else { return Ok(nccl.unique_id()?) };
    if launch.rank == 0 {
        let id = nccl.unique_id()?;
        rendezvous::serve(launch, &id.0, timeout)?;
        Ok(id)
    } else {
        let bytes = rendezvous::join(launch, &place.host, timeout)?;
        let id: [u8; 128] = bytes
            .try_into()
            .map_err(|b: Vec<u8>| anyhow::anyhow!("rank 0 sent a {}-byte id; an NCCL id is 128 bytes", b.len()))?;
        Ok(UniqueId(id))
    }
}

/// NCCL ranks of this process's GPUs, and the communicator's size. One process
/// per node numbers its GPUs after the nodes before it (every node is assumed
/// to bring as many GPUs; NCCL reports a mismatch as a failed init).
fn rank_layout(place: &Place, local_gpus: u32) -> (u32, u32) {
    match (&place.launch, place.local_rank) {
        (Some(launch), Some(_)) => (launch.rank, launch.world),
        (Some(launch), None) => (launch.rank * local_gpus, launch.world * local_gpus),
        (None, _) => (0, local_gpus),
    }
}

fn progress_total(plan: &Plan, gpus: usize) -> u64 {
    let copies = if plan.copies.is_some() { copies::count(gpus) } else { 0 };
    let steps = plan.collectives.collectives.len() * plan.collectives.sizes.len();
    (copies + steps + plan.ring.as_ref().map_or(0, |_| gpus.max(2))) as u64
}

/// The report before any measurement: who ran, on what, with which settings.
fn report_head(plan: &Plan, place: &Place, cuda_driver: String) -> ProbeReport {
    let (copy_bytes, sizes) = match plan.pairwise {
        true => (0, vec![plan.ring_bytes]),
        false => (plan.copies.map_or(0, |c| c.bytes as u64), plan.collectives.sizes.clone()),
    };
    ProbeReport {
        rank: place.launch.as_ref().map_or(0, |l| l.rank),
        world: place.launch.as_ref().map_or(1, |l| l.world),
        launcher: place.launch.as_ref().map(|l| l.source.to_string()),
        cuda_driver: Some(cuda_driver),
        settings: ProbeSettings {
            warmup: plan.collectives.warmup,
            iterations: plan.collectives.iterations,
            copy_bytes,
            sizes,
            threshold: plan.threshold,
        },
        ..ProbeReport::default()
    }
}

fn probed(gpu: &Gpu, nccl_rank: Option<u32>) -> ProbedGpu {
    ProbedGpu {
        ordinal: gpu.ordinal,
        bus_id: gpu.bus_id.clone(),
        name: gpu.name.clone(),
        nccl_rank,
        mig: mig_instance(gpu.ordinal, &gpu.name),
        error: None,
    }
}

/// Opens the NCCL the plan found and records which, its version and the
/// settings it will obey.
fn open_nccl(plan: &Plan, report: &mut ProbeReport) -> anyhow::Result<Nccl> {
    let library = plan.nccl_library.as_ref().context("NCCL was not found")?;
    let nccl = Nccl::open(library)?;
    report.nccl_version = Some(nccl.version()?);
    report.nccl_library = Some(library.display().to_string());
    report.nccl_env = nccl_environment();
    Ok(nccl)
}

/// `--pairwise`: this process is one node of the test; one GPU (its local
/// rank's, or the first) takes part.
fn run_pairwise(plan: &Plan, place: &Place, mut report: ProbeReport) -> anyhow::Result<ProbeReport> {
    let Some(launch) = place.launch.as_ref().filter(|l| l.world >= 2) else {
        anyhow::bail!(
            "--pairwise needs two or more processes started by a launcher, one per node: srun -N 8 --ntasks-per-node=1 topo probe --pairwise"
        );
    };
    let gpu = Gpu::open(gpus_to_open(place.local_rank, Gpu::count()?)?.first().copied().unwrap_or(0))?;
    report.gpus = vec![probed(&gpu, Some(launch.rank))];
    let nccl = open_nccl(plan, &mut report)?;
    let id = share_id(&nccl, place, plan.timeout)?;
    let comm = {
        let _watchdog = Watchdog::arm(
            init_timeout(plan.timeout, launch.world),
            format!("making the {}-rank NCCL communicator", launch.world),
        );
        nccl.init_ranks(&id, launch.world, &[(launch.rank, &gpu)])?.pop().context("NCCL made no communicator")?
    };
    let _watchdog = Watchdog::arm(plan.timeout.max(Duration::from_secs(600)), "the pairwise rounds".to_string());
    let node = topo_probes::live::pairwise::Node::new(&nccl, &gpu, comm, plan.ring_bytes)?;
    let hosts = node.hosts(&place.host)?;
    let progress = Progress::spinner();
    let pairwise = super::pairwise::run(node.size(), plan.threshold, plan.ring_bytes, hosts, |pairs| {
        progress.step(format!("{} pair(s)", pairs.len()));
        node.round(pairs, &plan.collectives)
    })?;
    report.pairwise = Some(pairwise);
    Ok(report)
}

/// Runs the plan on this machine's GPUs and returns the raw report (no
/// expectations yet).
pub fn run(plan: &Plan, place: &Place) -> anyhow::Result<ProbeReport> {
    let cuda_driver = cuda::init()?;
    if plan.pairwise {
        return run_pairwise(plan, place, report_head(plan, place, cuda_driver));
    }
    let (gpus, unopened) = open_gpus(place)?;
    let progress = Progress::new(progress_total(plan, gpus.len()));
    let mut step = |what: String| progress.step(what);
    let mut report = report_head(plan, place, cuda_driver);
    report.gpus = gpus.iter().map(|g| probed(g, None)).chain(unopened).collect();
    report.gpus.sort_by_key(|g| g.ordinal);
    let home = |bus: &str| place.homes.iter().find(|(b, _)| b == bus).map(|(_, h)| h.clone());
    let collective_work = !plan.collectives.collectives.is_empty() || plan.ring.is_some();
    // One process per GPU: the processes of a node share its host links, so
    // they take turns through NCCL after its init (below); alone, measure now.
    let shared_node = plan.copies.is_some() && place.local_rank.is_some_and(|l| l.size > 1);
    let take_turns = shared_node && plan.nccl_library.is_some();
    if shared_node && !take_turns {
        eprintln!(
            "topo probe: no NCCL to take turns through: this node's processes measure host copies at once, sharing its host links"
        );
    }
    let uses_nccl = collective_work || take_turns;
    if let Some(copy_plan) = plan.copies.as_ref().filter(|_| !take_turns) {
        report.copies = copies::measure(&gpus, copy_plan, &home, &mut step);
    }
    if !uses_nccl {
        return Ok(report);
    }
    let nccl = open_nccl(plan, &mut report)?;
    let (first, world) = rank_layout(place, gpus.len() as u32);
    let ranks = {
        // The rendezvous has its own timeout, which names the missing ranks.
        let id = share_id(&nccl, place, plan.timeout)?;
        let _watchdog = Watchdog::arm(
            init_timeout(plan.timeout, world),
            format!("making the {world}-rank NCCL communicator (a rank may have died after the rendezvous)"),
        );
        let members: Vec<(u32, &Gpu)> = gpus.iter().enumerate().map(|(i, g)| (first + i as u32, g)).collect();
        nccl.init_ranks(&id, world, &members)?
    };
    // Armed before the communicators are handed on, so it outlives them: on
    // any error below they are torn down (aborted when broken) while it still
    // watches, and a teardown that hangs still ends the process.
    let _watchdog = Watchdog::arm(plan.timeout.max(Duration::from_secs(600)), "the collectives".to_string());
    for (gpu, comm) in gpus.iter().zip(&ranks) {
        if let Some(row) = report.gpus.iter_mut().find(|g| g.ordinal == gpu.ordinal) {
            row.nccl_rank = Some(comm.rank);
        }
    }
    // Taking turns alone needs only the small gathers' buffers.
    let max_bytes = match collective_work {
        true => plan.collectives.sizes.iter().copied().chain([plan.ring_bytes]).max().unwrap_or(0),
        false => 4096,
    };
    let max_bytes = usize::try_from(max_bytes).context("message size too large for this machine")?;
    let ranks: Vec<Rank> = gpus
        .iter()
        .zip(ranks)
        .map(|(gpu, comm)| {
            let rank = gpu.stream().and_then(|stream| Rank::new(gpu, stream, comm, max_bytes));
            rank.with_context(|| {
                format!(
                    "GPU {}: two {} buffers for the collectives (lower --max on a GPU with less free memory)",
                    gpu.ordinal,
                    topo_model::units::size_label(max_bytes as u64)
                )
            })
        })
        .collect::<anyhow::Result<_>>()?;
    {
        if let (Some(copy_plan), Some(local)) = (plan.copies.as_ref().filter(|_| take_turns), place.local_rank) {
            report.copies =
                copies_in_turns(&nccl, &ranks, local, &mut || copies::measure(&gpus, copy_plan, &home, &mut step))?;
        }
        report.ranks = share_copy_figures(&nccl, &ranks, &report, &place.host)?;
        report.collectives = collectives::run(&nccl, &ranks, &plan.collectives, &mut step)?;
        share_rank_times(&nccl, &ranks, &mut report.collectives)?;
        if let Some(ring) = &plan.ring {
            let ring = if ring.is_empty() { (0..world).collect() } else { ring.clone() };
            if let Some(bad) = ring.iter().find(|r| **r >= world) {
                anyhow::bail!("the ring names rank {bad}, but the communicator has {world} ranks");
            }
            report.ring_walk =
                collectives::ring_walk(&nccl, &ranks, &ring, plan.ring_bytes, &plan.collectives, &mut step)?;
        }
    }
    Ok(report)
}

/// Host copies with one process per GPU: the processes of a node share its
/// host bridges and memory, so measured at once each would see a share and be
/// judged as if alone. They take turns by local rank: in turn `t` the process
/// of local rank `t` measures while the others wait; a gather through NCCL (it
/// completes only when every rank has joined) ends each turn. Every process
/// of the job takes as many turns as the largest node has local ranks, so all
/// call the gathers alike.
fn copies_in_turns(
    nccl: &Nccl,
    ranks: &[Rank],
    local: LocalRank,
    measure: &mut dyn FnMut() -> Vec<topo_model::measure::CopyResult>,
) -> anyhow::Result<Vec<topo_model::measure::CopyResult>> {
    let sizes = collectives::gather(nccl, ranks, &vec![vec![local.size as f32]; ranks.len()])?;
    // Bounded: no node holds more GPUs, whatever a launcher variable says.
    const MOST_LOCAL_RANKS: f32 = 1024.0;
    let turns = sizes.iter().filter_map(|v| v.first()).fold(local.size as f32, |a, b| a.max(*b));
    let turns = turns.min(MOST_LOCAL_RANKS) as u32;
    let mut out = Vec::new();
    for turn in 0..turns {
        if turn == local.rank {
            out = measure();
        }
        collectives::gather(nccl, ranks, &vec![vec![turn as f32]; ranks.len()])?;
    }
    Ok(out)
}

/// The `NCCL_*` variables this run inherits: NCCL obeys them here as in the
/// job, so a figure measured under `NCCL_P2P_DISABLE=1` says so.
fn nccl_environment() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars().filter(|(k, _)| k.starts_with("NCCL_")).collect();
    env.sort();
    env
}

/// Every rank's host and host-copy figures, through NCCL, so the slowest GPU
/// of the whole job is compared with the others (NaN stands for "not measured").
fn share_copy_figures(
    nccl: &Nccl,
    ranks: &[Rank],
    report: &ProbeReport,
    host: &str,
) -> anyhow::Result<Vec<topo_model::measure::RankFigures>> {
    use topo_model::measure::{CopyKind, RankFigures};
    let hosts = collectives::gather_hosts(nccl, ranks, host)?;
    let figure = |ordinal: u32, kind: CopyKind| {
        report
            .copies
            .iter()
            .find(|c| c.gpu == ordinal && c.kind == kind && c.error.is_none())
            .map_or(f32::NAN, |c| c.bandwidth.0 as f32)
    };
    let mine: Vec<Vec<f32>> = ranks
        .iter()
        .map(|r| vec![figure(r.gpu.ordinal, CopyKind::HostToDevice), figure(r.gpu.ordinal, CopyKind::DeviceToHost)])
        .collect();
    let all = collectives::gather(nccl, ranks, &mine)?;
    let known = |v: Option<&f32>| v.filter(|v| v.is_finite()).map(|v| topo_model::Bandwidth(f64::from(*v)));
    Ok(all
        .iter()
        .enumerate()
        .map(|(rank, v)| RankFigures {
            rank: rank as u32,
            host: hosts.get(rank).cloned().unwrap_or_default(),
            h2d: known(v.first()),
            d2h: known(v.get(1)),
        })
        .collect())
}

/// Replaces each row's per-rank times (this process's ranks) with every
/// rank's, gathered through NCCL in one call.
fn share_rank_times(
    nccl: &Nccl,
    ranks: &[Rank],
    results: &mut [topo_model::measure::CollectiveResult],
) -> anyhow::Result<()> {
    let rows = || results.iter().flat_map(|c| c.rows.iter());
    if rows().next().is_none() {
        return Ok(());
    }
    let mine: Vec<Vec<f32>> = ranks
        .iter()
        .map(|r| {
            rows()
                .map(|row| row.per_rank.iter().find(|(k, _)| *k == r.comm.rank).map_or(f32::NAN, |(_, s)| *s as f32))
                .collect()
        })
        .collect();
    let all = collectives::gather(nccl, ranks, &mine)?;
    let settled: Vec<(Collective, u32)> =
        results.iter().flat_map(|c| c.rows.iter().map(move |_| (c.collective, c.ranks))).collect();
    for (index, row) in results.iter_mut().flat_map(|c| c.rows.iter_mut()).enumerate() {
        row.per_rank = all
            .iter()
            .enumerate()
            .filter_map(|(rank, times)| {
                times.get(index).filter(|t| t.is_finite()).map(|t| (rank as u32, f64::from(*t)))
            })
            .collect();
        if let Some((collective, ranks)) = settled.get(index) {
            row.settle(*collective, *ranks);
        }
    }
    Ok(())
}

/// The ring NCCL chose, from a parsed log: channel 0's order of the
/// communicator with `world` ranks.
pub fn ring_from_log(path: &std::path::Path) -> anyhow::Result<Vec<u32>> {
    let report = crate::sources::nccl_report(&[path.to_path_buf()]);
    if let Some(error) = report.inputs.iter().find_map(|i| i.error.clone()) {
        anyhow::bail!("{}: {error}", path.display());
    }
    report
        .communicators
        .iter()
        .filter_map(|c| c.rings.iter().min_by_key(|r| r.channel))
        .find(|r| r.order.len() > 1)
        .map(|r| r.order.clone())
        .with_context(|| {
            format!(
                "{}: no ring in this log (NCCL_DEBUG=INFO prints them as `Channel 00/..: 0 1 2 ...`)",
                path.display()
            )
        })
}

/// The NVML P2P read status of two CUDA ordinals, found through their bus IDs.
pub fn nvml_p2p_status(snapshot: &Snapshot, report: &ProbeReport, a: u32, b: u32) -> Option<String> {
    let nvml = snapshot.nvml.as_ref()?;
    let bus =
        |ordinal: u32| report.gpus.iter().find(|g| g.ordinal == ordinal)?.bus_id.parse::<topo_model::BusId>().ok();
    let index = |ordinal: u32| {
        let wanted = bus(ordinal)?;
        nvml.answered().find(|(_, d)| d.bus_id() == Some(wanted)).map(|(i, _)| i)
    };
    let pair = nvml.pair(index(a)?, index(b)?)?;
    pair.p2p.read.ok().cloned()
}

/// The default collective plan: `quick` is all_reduce at three large sizes;
/// `full` sweeps every collective from 8 B to 1 GiB.
pub fn default_collectives(full: bool) -> (Vec<Collective>, u64, u64) {
    if full { (Collective::ALL.to_vec(), 8, 1 << 30) } else { (vec![Collective::AllReduce], 64 << 20, 1 << 30) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Defect 3: with per-task GPU binding each task sees one GPU, ordinal 0,
    /// whatever its local rank.
    #[test]
    fn one_visible_gpu_per_task_is_this_ranks() {
        let local = |rank, size| Some(LocalRank { rank, size });
        assert_eq!(gpus_to_open(None, 4).unwrap(), [0, 1, 2, 3]);
        assert_eq!(gpus_to_open(local(3, 8), 8).unwrap(), [3]);
        assert_eq!(gpus_to_open(local(3, 8), 1).unwrap(), [0]);
        assert!(gpus_to_open(local(5, 8), 4).is_err());
    }

    #[test]
    fn mig_instances_are_read_from_the_visible_devices() {
        let uuid = "MIG-1c2d3e4f-0000-1111-2222-333344445555";
        assert_eq!(visible_mig(uuid, 0).as_deref(), Some(uuid));
        assert_eq!(visible_mig(&format!("GPU-aa,{uuid}"), 1).as_deref(), Some(uuid));
        assert_eq!(visible_mig("0,1", 1), None);
        assert_eq!(visible_mig(uuid, 1), None);
        assert_eq!(mig_in_name("NVIDIA A100-SXM4-40GB MIG 1g.5gb").as_deref(), Some("MIG 1g.5gb"));
        assert_eq!(mig_in_name("NVIDIA H100 80GB HBM3"), None);
    }

    #[test]
    fn init_timeout_grows_with_the_world() {
        let base = Duration::from_secs(60);
        assert_eq!(init_timeout(base, 2), Duration::from_millis(60_100));
        assert_eq!(init_timeout(base, 4096), Duration::from_millis(60_000 + 204_800));
    }
}
