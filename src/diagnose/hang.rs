//! Findings from Flight Recorder dumps: a collective the job hangs in and the
//! ranks that never entered it (named first), calls that differ between ranks
//! (a program bug, not the network), ranks that left no dump, and ranks that
//! enter collectives late. Each names ranks, host, GPU, process group,
//! collective and sequence id, with the dump file and entry as evidence.

use topo_model::flight_recorder::{CollectiveRecord, GroupState, JobReport, RankState};
use topo_model::inspector::InspectorRecord;
use topo_model::nccl::NcclReport;
use topo_model::ras::{RasGroup, RasMismatch, RasRankRef, RasStatus};
use topo_model::{Evidence, Finding, Severity};

/// Every finding the dumps support, most telling first within each code.
pub fn findings(job: &JobReport) -> Vec<Finding> {
    let mut out = Vec::new();
    for group in &job.groups {
        out.extend(collective_hang(group));
        out.extend(collective_mismatch(group));
        out.extend(rank_missing(group));
        out.extend(straggler_rank(group));
    }
    out.extend(unreadable_dumps(job));
    out
}

fn member(group: &GroupState, rank: u32) -> Option<&RankState> {
    group.members.iter().find(|m| m.rank == rank)
}

/// `rank 2 (host node3, GPU 1, pid 4242)` with what is known.
fn who(group: &GroupState, rank: u32) -> String {
    let Some(m) = member(group, rank) else { return format!("rank {rank}") };
    let mut parts = Vec::new();
    parts.push(format!("host {}", m.host.as_deref().unwrap_or("?")));
    if let Some(dev) = m.cuda_dev {
        parts.push(format!("GPU {dev}"));
    }
    if let Some(bus) = &m.bus_id {
        parts.push(bus.clone());
    }
    if let Some(pid) = m.pid {
        parts.push(format!("pid {pid}"));
    }
    format!("rank {rank} ({})", parts.join(", "))
}

fn group_label(group: &GroupState) -> String {
    if group.desc.is_empty() {
        format!("process group {}", group.name)
    } else {
        format!("process group {} ({})", group.name, group.desc)
    }
}

fn call(record: &CollectiveRecord) -> String {
    let dtype =
        if record.input_dtypes.is_empty() { String::new() } else { format!(" {}", record.input_dtypes.join(",")) };
    format!("{} #{} {:?}{dtype}", record.profiling_name, record.seq, record.input_sizes)
}

fn entry_evidence(m: &RankState, text: String) -> Evidence {
    let at = match (&m.file, &m.last_entered) {
        (Some(file), Some(e)) => format!("{file}: entries[{}]", e.entry),
        (Some(file), None) => file.clone(),
        _ => format!("rank {}", m.rank),
    };
    Evidence { at, text }
}

/// What to run on the ranks named: the host to check and the process to dump.
fn next_steps(group: &GroupState, ranks: &[u32]) -> String {
    let steps: Vec<String> = ranks
        .iter()
        .filter_map(|r| member(group, *r))
        .map(|m| {
            let host = m.host.as_deref().unwrap_or("<its host: give the job's NCCL log to know>");
            let pid = m.pid.map_or(format!("<pid of rank {}>", m.rank), |p| p.to_string());
            format!("rank {}: on {host}, `py-spy dump --pid {pid}`", m.rank)
        })
        .collect();
    steps.join("; ")
}

fn hosts_of(group: &GroupState, ranks: &[u32]) -> Vec<String> {
    ranks.iter().filter_map(|r| member(group, *r)?.host.clone()).collect()
}

fn collective_hang(group: &GroupState) -> Option<Finding> {
    let v = &group.verdict;
    if v.behind.is_empty() || v.waiting.is_empty() {
        return None;
    }
    let waiting_in = v.waiting.first().and_then(|r| member(group, *r)?.last_entered.as_ref())?;
    let mut evidence = Vec::new();
    for &rank in &v.behind {
        let Some(m) = member(group, rank) else { continue };
        let last = m.last_entered.as_ref().map_or("no collective at all".to_string(), call);
        evidence.push(entry_evidence(
            m,
            format!("{} never entered #{}: its last entry is {last}", who(group, rank), waiting_in.seq),
        ));
    }
    let waiting: Vec<String> = v.waiting.iter().map(|r| r.to_string()).collect();
    if let Some(m) = v.waiting.first().and_then(|r| member(group, *r)) {
        evidence.push(entry_evidence(
            m,
            format!("ranks {} entered {} and wait in it (not completed)", waiting.join(", "), call(waiting_in)),
        ));
    }
    let stuck = v.behind.first().copied()?;
    let ranks: Vec<u32> = v.behind.iter().chain(&v.waiting).copied().collect();
    let mut finding = Finding::new(
        "collective-hang",
        Severity::Error,
        format!(
            "{}: {} for {} in {} #{}",
            group_label(group),
            if v.waiting.len() == 1 {
                format!("rank {} waits", waiting.join(""))
            } else {
                format!("{} ranks wait", v.waiting.len())
            },
            v.behind.iter().map(|r| format!("rank {r}")).collect::<Vec<_>>().join(", "),
            waiting_in.op,
            waiting_in.seq
        ),
        evidence,
        "A collective completes only when every rank of the group enters it. The ranks named first never \
         called it: they are stuck (in compute, I/O, a host problem or a dead GPU) or slow, and every other \
         rank waits for them until the watchdog kills the job. The network is not the first suspect.",
        &format!(
            "Inspect the rank that did not arrive first: {}. Check that host's GPUs and kernel log (XIDs) and \
             drain it if it is at fault; the waiting ranks need no action.",
            next_steps(group, &v.behind)
        ),
    );
    // The stuck rank first: `on` sorts, so the verdict's order is kept in the title and evidence,
    // and `ranks` lists the stuck one first by construction below.
    finding = finding.on(hosts_of(group, &v.behind), ranks);
    finding.ranks.retain(|r| *r != stuck);
    finding.ranks.insert(0, stuck);
    Some(finding)
}

fn collective_mismatch(group: &GroupState) -> Option<Finding> {
    let mismatches = &group.verdict.mismatches;
    let first = mismatches.first()?;
    let evidence = mismatches
        .iter()
        .flat_map(|m| {
            m.odd.iter().filter_map(move |r| {
                let member = member(group, *r)?;
                let entry =
                    member.last_entered.as_ref().filter(|e| e.seq == m.seq).map(|e| format!(": entries[{}]", e.entry));
                Some(Evidence {
                    at: format!(
                        "{}{}",
                        member.file.clone().unwrap_or_else(|| format!("rank {r}")),
                        entry.unwrap_or_default()
                    ),
                    text: format!(
                        "#{}: {} called {} where the other ranks called {} ({} differs)",
                        m.seq,
                        who(group, *r),
                        m.actual,
                        m.expected,
                        m.kind
                    ),
                })
            })
        })
        .collect();
    let odd: Vec<u32> = mismatches.iter().flat_map(|m| m.odd.iter().copied()).collect();
    let mut finding = Finding::new(
        "collective-mismatch",
        Severity::Error,
        format!(
            "{}: rank {} called a different collective at #{} ({} differs)",
            group_label(group),
            first.odd.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
            first.seq,
            first.kind
        ),
        evidence,
        "Ranks of one process group must call the same collectives in the same order with matching types, \
         sizes and dtypes. A difference is a bug in the program (a rank-dependent branch, a skipped call, \
         uneven data), not a network or hardware fault: the job hangs or fails however healthy the nodes are.",
        &format!(
            "Fix the program path that makes these ranks call something else at this point (compare their stacks: {}). \
             TORCH_DISTRIBUTED_DEBUG=DETAIL checks collectives for consistency at run time.",
            next_steps(group, &first.odd)
        ),
    );
    let mut ranks = odd.clone();
    ranks.dedup();
    finding = finding.on(hosts_of(group, &odd), ranks.clone());
    finding.ranks = ranks;
    Some(finding)
}

fn rank_missing(group: &GroupState) -> Option<Finding> {
    let missing = &group.verdict.no_dump;
    if missing.is_empty() {
        return None;
    }
    let evidence = missing
        .iter()
        .map(|r| Evidence {
            at: "dumps".into(),
            text: format!(
                "{} of {} has no dump among {} given",
                who(group, *r),
                group_label(group),
                group.members.len() - missing.len()
            ),
        })
        .collect();
    Some(
        Finding::new(
            "rank-missing",
            Severity::Error,
            format!("{}: no Flight Recorder dump from rank {}", group_label(group), missing.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")),
            evidence,
            "Every live rank writes its dump when the watchdog fires (or on request); a rank with none most \
             likely died (crash, OOM kill, lost node) before it could, or its dump went to another host's disk.",
            &format!(
                "Check whether these processes still run and why they ended (dmesg for OOM kills and XIDs, the \
                 scheduler's job log): {}. If the dump went elsewhere, collect it from that host (TORCH_FR_DUMP_TEMP_FILE).",
                next_steps(group, missing)
            ),
        )
        .on(hosts_of(group, missing), missing.iter().copied()),
    )
}

fn straggler_rank(group: &GroupState) -> Option<Finding> {
    let stragglers = &group.verdict.stragglers;
    if stragglers.is_empty() {
        return None;
    }
    let evidence = stragglers
        .iter()
        .map(|s| Evidence {
            at: member(group, s.rank).and_then(|m| m.file.clone()).unwrap_or_default(),
            text: format!(
                "{} entered {} of the last {} collectives last, a median {:.0} ms after the first rank (time_created_ns)",
                who(group, s.rank),
                s.late,
                s.compared,
                s.median_ms
            ),
        })
        .collect();
    let ranks: Vec<u32> = stragglers.iter().map(|s| s.rank).collect();
    Some(
        Finding::new(
            "straggler-rank",
            Severity::Warning,
            format!(
                "{}: rank {} enters collectives late",
                group_label(group),
                ranks.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            ),
            evidence,
            "Every collective runs at the pace of the last rank to arrive: a rank that is late most of the time \
             (slower GPU, throttling, a busy host, uneven data) slows the whole job. Times come from each host's \
             clock: across hosts, check that the clocks agree before trusting the figure.",
            &format!("Profile these ranks' steps: {}.", next_steps(group, &ranks)),
        )
        .on(hosts_of(group, &ranks), ranks.iter().copied()),
    )
}

fn unreadable_dumps(job: &JobReport) -> Option<Finding> {
    let bad: Vec<Evidence> =
        job.dumps.iter().filter_map(|d| Some(Evidence { at: d.file.clone(), text: d.error.clone()? })).collect();
    (!bad.is_empty()).then(|| {
        Finding::new(
            "dump-unreadable",
            Severity::Warning,
            format!("{} Flight Recorder dump(s) could not be read", bad.len()),
            bad,
            "A rank whose dump cannot be read cannot be placed: the verdicts above treat it as having no dump.",
            "Check the files are whole (a process killed while writing leaves a truncated dump) and named <prefix><rank>.",
        )
    })
}

/// Where the NCCL log puts a process or a communicator's rank: (host, rank, GPU, bus ID).
struct LogPlace {
    host: Option<String>,
    rank: Option<u32>,
    cuda_dev: Option<u32>,
    bus_id: Option<String>,
}

fn place_from_log(log: &NcclReport, hash: Option<&str>, rank: Option<u32>, pid: Option<u64>) -> Option<LogPlace> {
    let bare = |h: &str| h.trim_start_matches("0x").trim_start_matches('0').to_ascii_lowercase();
    let comm = hash.and_then(|h| log.communicators.iter().find(|c| bare(&c.id) == bare(h)));
    let by_rank = comm.and_then(|c| c.ranks.iter().find(|r| Some(r.rank) == rank));
    let by_pid = || log.communicators.iter().flat_map(|c| &c.ranks).find(|r| pid.is_some() && r.pid == pid);
    let info = by_rank.or_else(by_pid)?;
    Some(LogPlace {
        host: info.host.clone(),
        rank: Some(info.rank),
        cuda_dev: info.cuda_dev,
        bus_id: info.bus_id.map(|b| b.to_string()),
    })
}

fn ras_who(log: &NcclReport, r: &RasRankRef) -> (String, Option<String>) {
    let place = place_from_log(log, r.hash.as_deref(), Some(r.rank), r.pid);
    let host = place.as_ref().and_then(|p| p.host.clone());
    let mut parts = vec![format!("node {}", r.host.as_deref().unwrap_or("?"))];
    if let Some(h) = &host {
        parts.push(format!("host {h} in the log"));
    }
    if let Some(g) = r.gpu.or(place.as_ref().and_then(|p| p.cuda_dev)) {
        parts.push(format!("GPU {g}"));
    }
    if let Some(b) = place.as_ref().and_then(|p| p.bus_id.clone()) {
        parts.push(b);
    }
    if let Some(pid) = r.pid {
        parts.push(format!("pid {pid}"));
    }
    (format!("rank {} of {} ({})", r.rank, r.comm, parts.join(", ")), host.or_else(|| r.host.clone()))
}

/// Findings from one NCCL RAS status output, joined with the log's rank tables.
pub fn ras_findings(status: &RasStatus, log: &NcclReport) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(ras_missing(status, log));
    for m in &status.mismatches {
        out.extend(ras_count_mismatch(status, m, log));
    }
    out
}

fn ras_missing(status: &RasStatus, log: &NcclReport) -> Option<Finding> {
    let mut evidence = Vec::new();
    let mut hosts = Vec::new();
    let mut ranks = Vec::new();
    let mut steps = Vec::new();
    for (label, processes) in [("considered dead", &status.dead), ("did not answer", &status.unresponsive)] {
        for p in processes {
            let place = place_from_log(log, None, None, Some(p.pid));
            let host = place.as_ref().and_then(|x| x.host.clone()).unwrap_or_else(|| p.host.clone());
            let rank = place.as_ref().and_then(|x| x.rank);
            ranks.extend(rank);
            hosts.push(host.clone());
            let rank_text = rank.map_or(String::new(), |r| format!(", rank {r} in the log"));
            evidence.push(Evidence {
                at: status.file.clone(),
                text: format!("process {} on node {} (GPU {:?}{rank_text}) {label}", p.pid, p.host, p.gpus),
            });
            steps.push(format!("On {host}: is pid {} alive (`ps -p {}`; dmesg for OOM kills and XIDs)?", p.pid, p.pid));
        }
    }
    for r in &status.missing_ranks {
        let (who, host) = ras_who(log, r);
        ranks.push(r.rank);
        hosts.extend(host);
        let flags = if r.flags.is_empty() { String::new() } else { format!(" ({})", r.flags.join(", ")) };
        evidence.push(Evidence {
            at: status.file.clone(),
            text: format!("{who} is missing from the communicator's data{flags}"),
        });
        if let Some(pid) = r.pid {
            steps.push(format!("rank {}: `py-spy dump --pid {pid}` on its node.", r.rank));
        }
    }
    if evidence.is_empty() {
        return None;
    }
    let dead = !status.dead.is_empty();
    let mut ordered = ranks.clone();
    ordered.dedup();
    let mut finding = Finding::new(
        "rank-missing",
        Severity::Error,
        format!(
            "NCCL RAS: {} ({} rank(s) missing from communicator data)",
            if dead {
                format!("{} process(es) considered dead", status.dead.len())
            } else {
                "processes unreachable".to_string()
            },
            status.missing_ranks.len()
        ),
        evidence,
        "RAS reaches every process of the job over its own network. A process it cannot reach is stopped, \
         hung hard or gone with its node (dead: unreachable for 60 s); every communicator it belongs to \
         stalls at its next collective.",
        &format!(
            "{} Drain the node if the process died with it, else restart the job from its last checkpoint.",
            if steps.is_empty() { "Check the processes named.".to_string() } else { steps.join("; ") }
        ),
    )
    .on(hosts, ranks);
    finding.ranks = ordered;
    Some(finding)
}

/// `N ranks have launched up to operation K`: the ranks behind are the
/// suspects. RAS lists only small outlier groups; with the communicator's size
/// (its table row or the log) the unlisted group is the complement.
fn ras_count_mismatch(status: &RasStatus, m: &RasMismatch, log: &NcclReport) -> Option<Finding> {
    if !m.what.contains("operation counts") || m.groups.len() < 2 {
        return None;
    }
    let op_count = |g: &RasGroup| g.value.parse::<u64>().ok();
    let behind = m.groups.iter().min_by_key(|g| op_count(g).unwrap_or(u64::MAX))?;
    let ahead: Vec<&RasGroup> = m.groups.iter().filter(|g| !std::ptr::eq(*g, behind)).collect();
    let group_no = m.comm.trim_start_matches('#').split('-').next().unwrap_or_default();
    let size = status
        .communicators
        .iter()
        .find(|c| c.id == format!("#{group_no}") || c.hash.as_deref() == m.hash.as_deref())
        .and_then(|c| c.ranks);
    let listed: Vec<u32> = ahead.iter().flat_map(|g| g.ranks.iter().map(|r| r.rank)).collect();
    let behind_ranks: Vec<u32> = if !behind.ranks.is_empty() {
        behind.ranks.iter().map(|r| r.rank).collect()
    } else {
        match size {
            Some(n) if ahead.iter().all(|g| g.ranks.len() as u64 == g.count) => {
                (0..u32::try_from(n).unwrap_or(0)).filter(|r| !listed.contains(r)).collect()
            }
            _ => Vec::new(),
        }
    };
    let mut evidence: Vec<Evidence> = m
        .groups
        .iter()
        .map(|g| {
            let listed = if g.ranks.is_empty() {
                String::new()
            } else {
                format!(": {}", g.ranks.iter().map(|r| ras_who(log, r).0).collect::<Vec<_>>().join("; "))
            };
            Evidence {
                at: status.file.clone(),
                text: format!("{} {} ranks have launched up to operation {}{listed}", m.comm, g.count, g.value),
            }
        })
        .collect();
    if behind.ranks.is_empty() && !behind_ranks.is_empty() {
        evidence.push(Evidence {
            at: status.file.clone(),
            text: format!("RAS does not list the {} ranks behind; the communicator has {} ranks, so they are the ranks not listed", behind.count, size.unwrap_or(0)),
        });
    }
    let hosts: Vec<String> = behind
        .ranks
        .iter()
        .filter_map(|r| ras_who(log, r).1)
        .chain(behind_ranks.iter().filter_map(|r| place_from_log(log, m.hash.as_deref(), Some(*r), None)?.host))
        .collect();
    let names = if behind_ranks.is_empty() {
        format!("{} unlisted ranks", behind.count)
    } else {
        format!("rank {}", compress(&behind_ranks))
    };
    let mut finding = Finding::new(
        "collective-hang",
        Severity::Warning,
        format!(
            "NCCL RAS: {names} of {} {} behind at {} {}",
            m.comm,
            if behind.count == 1 { "is" } else { "are" },
            m.what.trim_end_matches(" counts"),
            behind.value
        ),
        evidence,
        "The ranks of a communicator launch the same collectives: ranks whose count stays behind have not \
         called the next one, and the ranks ahead wait for them in it. RAS queries can outpace small \
         collectives, so one differing snapshot may be transient; the same counts on repeated queries mean \
         the communicator is stuck and the ranks behind are where to look.",
        "Query RAS again (`ncclras`, or `ncclras -v` to list every rank of both groups). If the counts do not \
         move, `py-spy dump` the processes of the ranks behind (pids in the log's rank table or `ncclras -v`) \
         to see where they stopped; the ranks ahead need no action.",
    )
    .on(hosts, behind_ranks.iter().copied());
    finding.ranks = behind_ranks;
    Some(finding)
}

/// `0-11, 14-31`.
fn compress(ranks: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while let Some(&start) = ranks.get(i) {
        let mut end = start;
        while ranks.get(i + 1) == Some(&(end + 1)) {
            end += 1;
            i += 1;
        }
        parts.push(if end == start { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    parts.join(", ")
}

/// `straggler-rank` from NCCL Inspector records: a rank whose kernels are
/// consistently much shorter than the others' arrived last; the others waited.
pub fn inspector_findings(records: &[InspectorRecord], log: &NcclReport) -> Vec<Finding> {
    topo_parsers::inspector::stragglers(records)
        .into_iter()
        .map(|s| {
            let place = place_from_log(log, Some(&s.comm), Some(s.rank), s.pid);
            let host = place.as_ref().and_then(|p| p.host.clone()).or_else(|| s.host.clone());
            let gpu = place.as_ref().and_then(|p| p.cuda_dev).map_or(String::new(), |g| format!(", GPU {g}"));
            let pid = s.pid.map_or("<its pid>".to_string(), |p| p.to_string());
            let at = records
                .iter()
                .find(|r| r.comm == s.comm && r.rank == s.rank && r.sn == s.example.1)
                .map_or(String::new(), |r| format!("{}:{}", r.file, r.line));
            let (coll, sn, mine, slow_rank, slow) = &s.example;
            let evidence = vec![
                Evidence {
                    at: "inspector".into(),
                    text: format!(
                        "comm {}: rank {} (host {}{gpu}, pid {pid}) had the shortest kernels, a median {:.1}x shorter than the other ranks', in {} of {} collectives every rank recorded",
                        s.comm,
                        s.rank,
                        host.as_deref().unwrap_or("?"),
                        s.median_ratio,
                        s.last_to_arrive,
                        s.compared
                    ),
                },
                Evidence { at, text: format!("{coll} #{sn}: rank {} {mine} µs, rank {slow_rank} {slow} µs", s.rank) },
            ];
            Finding::new(
                "straggler-rank",
                Severity::Warning,
                format!("comm {}: rank {} arrives last at most collectives; the other ranks wait for it", s.comm, s.rank),
                evidence,
                "A collective's kernels run until every rank has joined, so the rank that arrives last finishes \
                 fastest and the others' time includes the wait for it. One rank that is consistently last \
                 (slower GPU, throttling, a busy host, more work) sets the pace of the whole communicator.",
                &format!(
                    "Profile rank {} on {} (`py-spy dump --pid {pid}`, nsys): look for extra work or a slow GPU \
                     (clocks, throttling, XIDs) before suspecting the network.",
                    s.rank,
                    host.as_deref().unwrap_or("its host")
                ),
            )
            .on(host, [s.rank])
        })
        .collect()
}

/// Messages below this are latency-bound: their busbw says nothing about the links.
const LINK_BOUND_BYTES: u64 = 32 << 20;
/// Below this share of what the ring's slowest hop should carry, busbw is low.
const LOW_BUSBW_SHARE: f64 = 0.5;

/// Inspector's busbw for large collectives against what the ring's links
/// should carry: the slowest same-node hop's expected bandwidth of the log's
/// communicator of the same size (hops annotated from `--from` or the log's own
/// topology dump). Only where every hop of a ring has an expectation; a ring
/// that leaves the node is not judged (the NIC's share is not known here).
pub fn inspector_link_findings(records: &[InspectorRecord], log: &NcclReport) -> Vec<Finding> {
    let mut by_comm: std::collections::BTreeMap<(&str, u32), Vec<&InspectorRecord>> = Default::default();
    for record in records.iter().filter(|r| r.msg_size_bytes >= LINK_BOUND_BYTES && r.busbw_gbs.is_finite()) {
        by_comm.entry((record.comm.as_str(), record.n_ranks)).or_default().push(record);
    }
    let mut out = Vec::new();
    for ((comm, n_ranks), list) in by_comm {
        let Some(expected) = ring_bottleneck(log, n_ranks) else { continue };
        let mut busbw: Vec<f64> = list.iter().map(|r| r.busbw_gbs).collect();
        busbw.sort_by(f64::total_cmp);
        let median = busbw[busbw.len() / 2];
        if median >= expected * LOW_BUSBW_SHARE {
            continue;
        }
        let Some(slowest) = list.iter().min_by(|a, b| a.busbw_gbs.total_cmp(&b.busbw_gbs)) else { continue };
        let evidence = vec![
            Evidence {
                at: "inspector".into(),
                text: format!(
                    "comm {comm}: median busbw {median:.1} GB/s over {} collectives of {} MiB or more; the ring's \
                     slowest hop should carry {expected:.1} GB/s",
                    list.len(),
                    LINK_BOUND_BYTES >> 20
                ),
            },
            Evidence {
                at: format!("{}:{}", slowest.file, slowest.line),
                text: format!("{} #{}: rank {} {:.1} GB/s", slowest.coll, slowest.sn, slowest.rank, slowest.busbw_gbs),
            },
        ];
        let mut finding = Finding::new(
            "busbw-below-links",
            Severity::Warning,
            format!("comm {comm}: collectives move {median:.1} GB/s where the ring's links carry {expected:.1} GB/s"),
            evidence,
            "For large messages a ring's bus bandwidth approaches the bandwidth of its slowest hop; far below it, \
             something else limits the collective: fewer channels, a hop through slower hardware than the ring \
             shows, clocks or contention on the GPUs or host.",
            "Compare with nccl-tests on the same GPUs (all_reduce_perf -b 64M -e 1G), check the channel count and \
             protocol NCCL chose (NCCL_DEBUG_SUBSYS=INIT,TUNING), and run `topo probe` on the node.",
        );
        finding.expected = Some(format!("{expected:.1} GB/s busbw"));
        finding.actual = Some(format!("{median:.1} GB/s median"));
        out.push(finding.on(list.iter().filter_map(|r| r.host.clone()), list.iter().map(|r| r.rank)));
    }
    out
}

/// The expected bandwidth of the slowest hop of the log's rings, in the
/// communicator of `n_ranks` ranks, when every ring hop has one.
fn ring_bottleneck(log: &NcclReport, n_ranks: u32) -> Option<f64> {
    let comm = log.communicators.iter().find(|c| c.nranks == Some(n_ranks) && !c.rings.is_empty())?;
    let mut slowest: Option<f64> = None;
    let hops = topo_model::nccl::HopIndex::new(comm);
    for ring in &comm.rings {
        for (i, &from) in ring.order.iter().enumerate() {
            let to = ring.order[(i + 1) % ring.order.len()];
            let hop = hops.hop(ring.channel, from, to)?;
            if hop.cross_node == Some(true) {
                return None;
            }
            let gbps = hop.hardware.as_ref()?.expected_gbps?;
            slowest = Some(slowest.map_or(gbps, |s: f64| s.min(gbps)));
        }
    }
    slowest
}
