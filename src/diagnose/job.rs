//! Rules about what the job did: ring paths, timeouts and where each rank
//! stopped, message sizes.

use std::collections::{BTreeMap, BTreeSet};

use topo_model::nccl::{Communicator, TransportKind};
use topo_model::{Evidence, Finding, Severity};

use super::Inputs;
use super::evidence::{fact, warning_evidence, warnings_matching};

/// Host of each rank in a communicator, where the log says.
pub(super) fn rank_hosts(comm: &Communicator) -> BTreeMap<u32, &str> {
    comm.ranks.iter().filter_map(|r| Some((r.rank, r.host.as_deref()?))).collect()
}

/// Rings that leave a node more often than needed (a ring over N nodes must
/// cross N times), and same-node hops through SHM or the network where the
/// GPUs have NVLink (with `--from`).
pub(super) fn ring_suboptimal(inputs: &Inputs) -> Option<Finding> {
    let mut evidence = Vec::new();
    for comm in &inputs.report.communicators {
        let hosts = rank_hosts(comm);
        let nodes: BTreeSet<&str> = hosts.values().copied().collect();
        // Hosts guessed for the ranks (see `ranks_guessed`) count no crossings.
        if nodes.len() > 1 && !comm.ranks_guessed {
            for ring in &comm.rings {
                let known = ring.order.iter().all(|r| hosts.contains_key(r));
                let crossings = (0..ring.order.len())
                    .filter(|&i| hosts.get(&ring.order[i]) != hosts.get(&ring.order[(i + 1) % ring.order.len()]))
                    .count();
                if known && crossings > nodes.len() {
                    let text = format!(
                        "comm {} ring {:02} crosses nodes {crossings} times for {} nodes",
                        comm.id,
                        ring.channel,
                        nodes.len()
                    );
                    evidence.push(fact("rings", text));
                }
            }
        }
        for connection in &comm.connections {
            let nvlink = connection.hardware.as_ref().is_some_and(|h| h.smi.starts_with("NV"));
            let slow =
                matches!(connection.transport, TransportKind::Shm | TransportKind::NetIb | TransportKind::NetSocket);
            if nvlink && slow && connection.cross_node != Some(true) {
                let hw = connection.hardware.as_ref().map_or(String::new(), |h| h.smi.clone());
                let text = format!(
                    "comm {} channel {:02}: {} -> {} via {} although the GPUs are joined by {hw}",
                    comm.id,
                    connection.channel,
                    connection.from,
                    connection.to.map_or("?".into(), |t| t.to_string()),
                    connection.detail
                );
                evidence.push(fact("connections", text));
            }
        }
    }
    (!evidence.is_empty()).then(|| {
        Finding::new(
            "ring-suboptimal",
            Severity::Warning,
            "Rings take slower paths than the hardware offers".into(),
            evidence,
            "Every extra node crossing puts the ring's traffic on the network (tens of GB/s) instead of NVLink \
             (hundreds); a same-node hop through SHM or the NIC where NVLink exists wastes the fastest link.",
            "Check rank placement (ranks of a node contiguous: srun --distribution=block), that the GPUs can use \
             P2P (no NCCL_P2P_DISABLE / P2P_LEVEL), and that NCCL sees the real topology (NCCL_TOPO_FILE in VMs).",
        )
    })
}

/// Framework watchdog timeouts and NCCL's own, with where each rank stopped.
pub(super) fn collective_timeout(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let mut evidence: Vec<Evidence> = report
        .timeouts
        .iter()
        .map(|t| {
            let rank = t.rank.map_or("rank ?".into(), |r| format!("rank {r}"));
            let ran = match (t.ran_ms, t.timeout_ms) {
                (Some(ran), Some(limit)) => format!(" ran {ran} ms of its {limit} ms limit"),
                _ => String::new(),
            };
            let last = t.last_completed.map_or(String::new(), |c| format!("; last completed work {c}"));
            let seq = t.seq.map_or(String::new(), |s| format!(" #{s}"));
            let group = t.group_size.map_or(String::new(), |n| format!(" in a group of {n} ranks"));
            Evidence { at: format!("{}:{}", t.file, t.line), text: format!("{rank}: {}{seq}{group}{ran}{last}", t.op) }
        })
        .collect();
    evidence
        .extend(warnings_matching(report, &["Timeout", "timed out", "Timed out"]).into_iter().map(warning_evidence));
    if evidence.is_empty() {
        return None;
    }
    // Where each process stopped, from COLL lines: the one behind is the suspect.
    let mut by_comm: BTreeMap<&str, Vec<&topo_model::nccl::RankProgress>> = BTreeMap::new();
    for progress in &report.progress {
        by_comm.entry(progress.comm.as_str()).or_default().push(progress);
    }
    for (comm, processes) in by_comm {
        let Some(lowest) = processes.iter().map(|p| p.last_op_count).min() else { continue };
        let highest = processes.iter().map(|p| p.last_op_count).max().unwrap_or(lowest);
        for p in processes.iter().filter(|p| lowest < highest && p.last_op_count == lowest) {
            let who = format!("{}:{}", p.host.as_deref().unwrap_or("?"), p.pid.map_or("?".into(), |x| x.to_string()));
            let text = format!(
                "comm {comm}: {who} last issued {} opCount {:#x}, others reached {highest:#x}",
                p.last_op, p.last_op_count
            );
            evidence.push(fact("COLL lines", text));
        }
    }
    Some(Finding::new(
        super::messages::COLLECTIVE_TIMEOUT,
        Severity::Error,
        "Collectives timed out".into(),
        evidence,
        "A collective completes only when every rank joins it: one rank that stopped (crashed, stuck in compute or \
         I/O, or on a dead link) holds all the others until the watchdog kills the job.",
        "Find the rank that did not arrive (lowest last opCount or completed work, or the one with an earlier \
         error in its own log); check that node's GPUs, NICs and host logs (XIDs, link errors) before restarting.",
    ))
}

pub(super) fn small_messages(inputs: &Inputs) -> Option<Finding> {
    const SMALL: u64 = 1 << 20;
    const MIN_CALLS: u64 = 100;
    let (mut calls, mut small) = (0u64, 0u64);
    for stats in inputs.report.collectives.values() {
        calls += stats.calls;
        small += stats.size_histogram.iter().filter(|(upper, _)| *upper <= SMALL).map(|(_, n)| n).sum::<u64>();
    }
    if calls < MIN_CALLS || small * 2 <= calls {
        return None;
    }
    let evidence = inputs
        .report
        .collectives
        .iter()
        .map(|(name, stats)| {
            let small: u64 = stats.size_histogram.iter().filter(|(upper, _)| *upper <= SMALL).map(|(_, n)| n).sum();
            fact("COLL lines", format!("{name}: {} calls, {small} of 1 MiB or less", stats.calls))
        })
        .collect();
    Some(Finding::new(
        "small-messages",
        Severity::Info,
        format!("{small} of {calls} collectives move 1 MiB or less"),
        evidence,
        "Small collectives are latency-bound: each pays the launch and synchronisation cost, so the links run \
         far below their bandwidth.",
        "Bucket gradients into larger all-reduces (DDP bucket_cap_mb, FSDP/ZeRO bucket sizes), overlap \
         communication with compute, or use CUDA graphs to cut launch overhead.",
    ))
}

/// Ranks of one communicator that issued different collectives at the same
/// opCount (COLL lines): a program bug that hangs the job, not a network fault.
/// Processes are grouped by the size their COLL lines print (each process has
/// its own communicator pointer); a process whose recent opCounts do not
/// increase (2.27 prints 0 for every call) cannot be compared and is left out.
pub(super) fn collective_mismatch(inputs: &Inputs) -> Option<Finding> {
    type Who<'a> = (&'a topo_model::nccl::RankProgress, (&'a str, u64, u32));
    let mut by_call: BTreeMap<(u32, u64), Vec<Who>> = BTreeMap::new();
    for p in &inputs.report.progress {
        let Some(nranks) = p.nranks else { continue };
        let increasing = p.recent.windows(2).all(|w| w[0].op_count < w[1].op_count);
        if !increasing {
            continue;
        }
        for call in &p.recent {
            by_call.entry((nranks, call.op_count)).or_default().push((p, (&call.op, call.count, call.datatype)));
        }
    }
    let mut evidence = Vec::new();
    let (mut hosts, mut ranks) = (Vec::new(), Vec::new());
    for ((nranks, op_count), calls) in by_call {
        let mut kinds: BTreeMap<(&str, u64, u32), Vec<String>> = BTreeMap::new();
        for (p, kind) in &calls {
            let who = format!("{}:{}", p.host.as_deref().unwrap_or("?"), p.pid.map_or("?".into(), |x| x.to_string()));
            kinds.entry(*kind).or_default().push(who);
        }
        if kinds.len() < 2 {
            continue;
        }
        hosts.extend(calls.iter().filter_map(|(p, _)| p.host.clone()));
        ranks.extend(calls.iter().filter_map(|(p, _)| p.rank));
        let parts: Vec<String> = kinds
            .iter()
            .map(|((op, count, datatype), who)| {
                format!("{} {op} of {count} × {}", who.join(", "), datatype_name(*datatype))
            })
            .collect();
        evidence.push(fact(
            "COLL lines",
            format!("opCount {op_count:#x} in {nranks}-rank communicators: {}", parts.join(" vs ")),
        ));
    }
    let (out_of_step, stopped) = timeouts_out_of_step(&inputs.report.timeouts);
    evidence.extend(out_of_step);
    ranks.extend(stopped);
    let (other_sizes, sized) = timeouts_of_other_sizes(&inputs.report.timeouts);
    evidence.extend(other_sizes);
    ranks.extend(sized);
    (!evidence.is_empty()).then(|| {
        Finding::new(
            "collective-mismatch",
            Severity::Error,
            "Ranks are out of step: they issued different collectives".into(),
            evidence,
            "Every rank of a communicator must issue the same collectives in the same order with the same count and \
             datatype; here they did not, so the ranks wait for each other forever (or exchange garbage).",
            "Find the diverging code path (data-dependent control flow, an uneven last batch, a rank skipping a step, \
             parameters in a different order); PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL checks every collective.",
        )
        .on(hosts, ranks)
    })
}

/// Sequence numbers of one process group's watchdog timeouts this close
/// together are read as one group's even where the lines do not name it
/// (PyTorch before 2.2): different groups' counters seldom sit this close past
/// the first steps.
const SAME_GROUP_WINDOW: u64 = 8;
/// Below this sequence number, unnamed groups' counters may coincide.
const PAST_FIRST_STEPS: u64 = 16;

/// Watchdog timeouts whose ranks stopped in different collectives of one
/// process group (`rank 0 in _ALLGATHER_BASE #532341, ranks 1, 2 in BROADCAST
/// #532339`): every rank of a group issues the same collectives in the same
/// order, so ranks waiting in different ones are out of step. Groups are
/// those the lines name; lines that name none are compared only when their
/// sequence numbers are close and past the first steps.
fn timeouts_out_of_step(timeouts: &[topo_model::nccl::CollectiveTimeout]) -> (Vec<Evidence>, Vec<u32>) {
    let mut groups: BTreeMap<Option<&str>, Vec<&topo_model::nccl::CollectiveTimeout>> = BTreeMap::new();
    for t in timeouts.iter().filter(|t| t.rank.is_some() && t.seq.is_some()) {
        groups.entry(t.pg.as_deref()).or_default().push(t);
    }
    let (mut evidence, mut ranks) = (Vec::new(), Vec::new());
    for (pg, group) in groups {
        let seqs = group.iter().filter_map(|t| t.seq);
        let (low, high) = (seqs.clone().min().unwrap_or(0), seqs.max().unwrap_or(0));
        if pg.is_none() && (high - low > SAME_GROUP_WINDOW || low < PAST_FIRST_STEPS) {
            continue;
        }
        let mut stops: BTreeMap<(u64, &str), BTreeSet<u32>> = BTreeMap::new();
        for t in &group {
            stops.entry((t.seq.unwrap_or(0), t.op.as_str())).or_default().extend(t.rank);
        }
        if stops.len() < 2 {
            continue;
        }
        let parts: Vec<String> =
            stops.iter().map(|((seq, op), who)| format!("{} in {op} #{seq}", ranks_phrase(who))).collect();
        let group = pg.map_or("one process group".to_string(), |id| format!("process group {id}"));
        let first = group_first_line(&stops, timeouts);
        evidence.push(Evidence {
            at: first,
            text: format!("watchdog timeouts of {group} stopped in different collectives: {}", parts.join("; ")),
        });
        ranks.extend(stops.values().flatten().copied());
    }
    (evidence, ranks)
}

/// PyTorch's operations whose input has one size on every rank of the group
/// (c10d's `OpType` names as the watchdog prints them): `all_reduce`,
/// `broadcast`, `reduce`, `all_gather_into_tensor`, `reduce_scatter_tensor`.
/// List forms (`ALLGATHER`, `REDUCE_SCATTER`) may be uneven, send/receive and
/// all-to-all are per peer.
const SAME_SIZE_OPS: &[&str] = &["ALLREDUCE", "BROADCAST", "REDUCE", "_ALLGATHER_BASE", "_REDUCE_SCATTER_BASE"];

/// Whether every rank's input must have the same size: an operation of
/// [`SAME_SIZE_OPS`], or a coalesced batch whose output is the same whole
/// multiple of its input on every rank (an all-gather's; a reduce-scatter's
/// the other way), as FSDP's coalesced all-gathers are.
fn same_size(op: &str, calls: &[&topo_model::nccl::CollectiveTimeout]) -> bool {
    if SAME_SIZE_OPS.contains(&op) {
        return true;
    }
    let ratio = |t: &&topo_model::nccl::CollectiveTimeout| {
        let (i, o) = (t.numel_in?, t.numel_out?);
        match (i, o) {
            (i, o) if i > 0 && o > i && o % i == 0 => Some((o / i, true)),
            (i, o) if o > 0 && i > o && i % o == 0 => Some((i / o, false)),
            _ => None,
        }
    };
    let first = calls.first().and_then(ratio);
    op == "COALESCED" && first.is_some() && calls.iter().all(|t| ratio(t) == first)
}

/// Watchdog timeouts of one group stopped in the same collective with inputs
/// of different sizes (`NumelIn=4096` on rank 0, `NumelIn=16666624` on rank
/// 2): the ranks called different collectives that happen to share a
/// sequence number, the mismatch PyTorch's Flight Recorder analyser reports
/// as a size mismatch.
fn timeouts_of_other_sizes(timeouts: &[topo_model::nccl::CollectiveTimeout]) -> (Vec<Evidence>, Vec<u32>) {
    type Call<'a> = (Option<&'a str>, u64, &'a str);
    let mut calls: BTreeMap<Call, Vec<&topo_model::nccl::CollectiveTimeout>> = BTreeMap::new();
    for t in timeouts.iter().filter(|t| t.rank.is_some() && t.numel_in.is_some()) {
        let Some(seq) = t.seq else { continue };
        // Unnamed groups' counters coincide in the first steps.
        if t.pg.is_none() && seq < PAST_FIRST_STEPS {
            continue;
        }
        calls.entry((t.pg.as_deref(), seq, t.op.as_str())).or_default().push(t);
    }
    let (mut evidence, mut ranks) = (Vec::new(), Vec::new());
    for ((pg, seq, op), group) in calls {
        let mut sizes: BTreeMap<u64, BTreeSet<u32>> = BTreeMap::new();
        for t in &group {
            sizes.entry(t.numel_in.unwrap_or(0)).or_default().extend(t.rank);
        }
        if sizes.len() < 2 || !same_size(op, &group) {
            continue;
        }
        let parts: Vec<String> =
            sizes.iter().take(4).map(|(numel, who)| format!("{} with {numel} elements", ranks_phrase(who))).collect();
        let name = pg.map_or("one process group".to_string(), |id| format!("process group {id}"));
        let first = group.iter().min_by_key(|t| (t.file.as_str(), t.line)).map(|t| format!("{}:{}", t.file, t.line));
        evidence.push(Evidence {
            at: first.unwrap_or_else(|| "watchdog".into()),
            text: format!("{op} #{seq} of {name} timed out with inputs of different sizes: {}", parts.join("; ")),
        });
        ranks.extend(sizes.values().flatten().copied());
    }
    (evidence, ranks)
}

/// `rank 3` or `ranks 0, 2`.
fn ranks_phrase(ranks: &BTreeSet<u32>) -> String {
    let listed: Vec<String> = ranks.iter().map(u32::to_string).collect();
    let noun = if listed.len() == 1 { "rank" } else { "ranks" };
    format!("{noun} {}", listed.join(", "))
}

/// Where the first of a group's timeouts was printed.
fn group_first_line(
    stops: &BTreeMap<(u64, &str), BTreeSet<u32>>,
    timeouts: &[topo_model::nccl::CollectiveTimeout],
) -> String {
    timeouts
        .iter()
        .find(|t| stops.keys().any(|(seq, op)| t.seq == Some(*seq) && t.op == *op))
        .map_or_else(|| "watchdog".to_string(), |t| format!("{}:{}", t.file, t.line))
}

/// `ncclDataType_t` names.
fn datatype_name(datatype: u32) -> &'static str {
    match datatype {
        0 => "int8",
        1 => "uint8",
        2 => "int32",
        3 => "uint32",
        4 => "int64",
        5 => "uint64",
        6 => "float16",
        7 => "float32",
        8 => "float64",
        9 => "bfloat16",
        10 => "float8e4m3",
        11 => "float8e5m2",
        _ => "datatype ?",
    }
}

/// Two ranks of one communicator on one host and one GPU (the same PCI bus id
/// in their `Init START` lines): NCCL refuses it (`Duplicate GPU detected`;
/// 2.30's `Multiple Ranks are using the same GPU/Partition` unless
/// NCCL_MULTI_RANK_GPU_ENABLE=1), and the excerpt a user pastes often holds
/// the init lines but not that WARN. The device index is not compared: with
/// per-rank CUDA_VISIBLE_DEVICES every rank's GPU is device 0.
pub(super) fn shared_gpu(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let allowed = report.env_overrides.iter().any(|e| e.name == "NCCL_MULTI_RANK_GPU_ENABLE" && e.value.trim() == "1");
    if allowed {
        return None;
    }
    let mut evidence = Vec::new();
    let (mut hosts, mut ranks) = (BTreeSet::new(), BTreeSet::new());
    for comm in &report.communicators {
        let mut by_gpu: BTreeMap<(&str, topo_model::BusId), BTreeSet<u32>> = BTreeMap::new();
        for r in &comm.ranks {
            if let (Some(host), Some(bus)) = (r.host.as_deref(), r.bus_id) {
                by_gpu.entry((host, bus)).or_default().insert(r.rank);
            }
        }
        for ((host, bus), sharing) in by_gpu.into_iter().filter(|(_, r)| r.len() > 1) {
            let list: Vec<String> = sharing.iter().map(u32::to_string).collect();
            let text = format!("comm {}: ranks {} all on {host}'s GPU {bus}", comm.id, list.join(", "));
            evidence.push(fact("Init START lines", text));
            hosts.insert(host.to_string());
            ranks.extend(sharing);
        }
    }
    if evidence.is_empty() {
        return None;
    }
    evidence.extend(
        warnings_matching(report, &["Duplicate GPU", "Multiple Ranks are using"]).into_iter().map(warning_evidence),
    );
    Some(super::messages::of_class("duplicate-gpu", Severity::Error, evidence)?.on(hosts, ranks))
}

/// A process that began a new communicator under the unique ID of one it
/// already belonged to, for the same rank. NCCL's unique ID names one
/// communicator and the bootstrap root that started it; a second init under
/// it (a process group initialised twice, by the program and by a library
/// that initialises torch.distributed itself; a `ncclUniqueId` kept past its
/// communicator) waits at a root that is gone or meets peers that moved on
/// to a new ID: connections refused, or init hangs.
pub(super) fn reused_comm_id(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let mut evidence = Vec::new();
    let (mut hosts, mut ranks) = (BTreeSet::new(), BTreeSet::new());
    for comm in &report.communicators {
        for reuse in &comm.id_reused {
            let process = match (&reuse.host, reuse.pid) {
                (Some(host), Some(pid)) => format!("{host} pid {pid}"),
                (None, Some(pid)) => format!("pid {pid}"),
                _ => "a process".to_string(),
            };
            let text = format!(
                "{process} starts another communicator as rank {} under commId {}, which it had already joined as that rank",
                reuse.rank, comm.id
            );
            evidence.push(Evidence { at: format!("{}:{}", reuse.file, reuse.line), text });
            hosts.extend(reuse.host.clone());
            ranks.insert(reuse.rank);
        }
    }
    if evidence.is_empty() {
        return None;
    }
    let mut finding = super::messages::of_class("invalid-usage", Severity::Error, evidence)?;
    finding.title = "A communicator's unique ID was used twice (a process group initialised twice?)".to_string();
    finding.why = "NCCL's unique ID names one communicator and the bootstrap root that started it. A process that \
                   initialises again under an ID it already used waits at a root that is gone, or for peers that \
                   moved on to a new ID: connections are refused or init hangs. Usual causes: \
                   init_process_group called twice (a library such as MosaicML Streaming or Lightning initialising \
                   torch.distributed itself before the program does), or a ncclUniqueId reused after its \
                   communicator was destroyed."
        .to_string();
    finding.fix = "Initialise the process group once per process, before any library that may initialise it \
                   (check torch.distributed.is_initialized() first); create every new communicator from a fresh \
                   ncclGetUniqueId (or ncclCommSplit)."
        .to_string();
    Some(finding.on(hosts, ranks))
}

/// nccl-tests started by a launcher for several processes that each ran
/// alone: one run's device table lists the same rank for several processes
/// (every process printed its own header and was rank 0 of its own job).
/// The binary was built without MPI (`make MPI=1`), or against another MPI
/// than the launcher's, so the processes never met: each ran a 1-rank
/// communicator (bus bandwidth 0) or all of its node's GPUs alone, and the
/// figures say nothing about the network. Sequential runs of one binary do
/// not trip it: each has its own table.
pub(super) fn singleton_launch(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let mut evidence = Vec::new();
    let (mut hosts, mut ranks) = (BTreeSet::new(), BTreeSet::new());
    for run in &report.nccl_tests {
        let mut pids: BTreeMap<u32, BTreeSet<(&str, u64)>> = BTreeMap::new();
        for r in &run.ranks {
            pids.entry(r.rank).or_default().insert((r.host.as_str(), r.pid));
        }
        for (rank, processes) in pids.into_iter().filter(|(_, p)| p.len() > 1) {
            let list: Vec<String> = processes.iter().map(|(host, pid)| format!("{host} pid {pid}")).collect();
            let test = run.test.as_deref().unwrap_or("nccl-tests");
            let text = format!(
                "the device table of {test} lists rank {rank} for {} processes: {}",
                list.len(),
                list.join(", ")
            );
            evidence.push(fact("nccl-tests device table", text));
            hosts.extend(processes.iter().map(|(host, _)| host.to_string()));
            ranks.insert(rank);
        }
    }
    if evidence.is_empty() {
        return None;
    }
    let singles = report.communicators.iter().filter(|c| c.nranks == Some(1)).count();
    if singles > 1 {
        evidence.push(fact("communicators", format!("{singles} communicators of one rank each")));
    }
    let mut finding = super::messages::of_class("configuration-error", Severity::Error, evidence)?;
    finding.title = "nccl-tests ran as separate one-process jobs, not as one MPI job".to_string();
    finding.why = "Every process printed its own header and took rank 0: the launcher started the processes, but \
                   they never joined one communicator. nccl-tests does this when it was built without MPI \
                   (`make` without MPI=1), or against another MPI than the one that launched it (Open MPI 5 \
                   libraries under an Open MPI 4 mpirun, srun without a matching --mpi plugin). Each process then \
                   measures only its own GPUs (a 1-rank run reports bus bandwidth 0): nothing crossed the network."
        .to_string();
    finding.fix = "Rebuild nccl-tests with `make MPI=1 MPI_HOME=<the launcher's MPI>` (check `ldd all_reduce_perf | \
                   grep mpi` and `mpirun --version` agree); under Slurm use `srun --mpi=pmix` (or pmi2) as the \
                   MPI was built for; then the header lists every rank once."
        .to_string();
    Some(finding.on(hosts, ranks))
}

/// nccl-tests' own check failed: elements of a result differ from the values
/// it expects (`#wrong` > 0 on any size, or `Out of bounds values : N
/// FAILED`). A wrong result is the worst failure a benchmark can report and
/// prints no WARN. Old nccl-tests printed a relative error in that column,
/// well below one for a correct result; a count is at least one.
pub(super) fn wrong_results(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    let mut evidence = Vec::new();
    let mut hosts = BTreeSet::new();
    for run in &report.nccl_tests {
        let wrong = |m: Option<&topo_model::nccl::NcclTestsMeasure>| m.and_then(|m| m.wrong).filter(|w| *w >= 1.0);
        let bad: Vec<_> =
            run.rows.iter().filter(|r| wrong(Some(&r.out_of_place)).or(wrong(r.in_place.as_ref())).is_some()).collect();
        let test = run.test.as_deref().unwrap_or("nccl-tests");
        if let Some(first) = bad.first() {
            let counts: Vec<String> =
                [("out-of-place", wrong(Some(&first.out_of_place))), ("in-place", wrong(first.in_place.as_ref()))]
                    .iter()
                    .filter_map(|(how, w)| w.map(|w| format!("{w} {how}")))
                    .collect();
            let text = format!(
                "{test}: {} of {} sizes with wrong elements, the first at {} bytes ({} wrong)",
                bad.len(),
                run.rows.len(),
                first.bytes,
                counts.join(", ")
            );
            evidence.push(fact("nccl-tests results", text));
        }
        if let Some(n) = run.out_of_bounds.filter(|n| *n > 0) {
            evidence.push(fact("nccl-tests results", format!("{test}: Out of bounds values : {n} FAILED")));
        }
        if !bad.is_empty() || run.out_of_bounds.is_some_and(|n| n > 0) {
            hosts.extend(run.ranks.iter().map(|r| r.host.clone()));
        }
    }
    if evidence.is_empty() {
        return None;
    }
    Some(super::messages::of_class("wrong-results", Severity::Error, evidence)?.on(hosts, []))
}
