//! The job table: for every process group, each rank's last entered and last
//! completed collective, grouped by host, with the ranks the others wait for
//! marked `STUCK` and odd calls `MISMATCH`.

use std::collections::BTreeMap;
use std::fmt::Write;

use topo_model::flight_recorder::{JobReport, RankState};

pub fn render(job: &JobReport) -> String {
    let mut out = String::new();
    let read = job.dumps.iter().filter(|d| d.error.is_none()).count();
    let _ = writeln!(out, "Flight Recorder: {read} dump(s) read, {} group(s)", job.groups.len());
    for dump in job.dumps.iter().filter(|d| d.error.is_some()) {
        let _ = writeln!(out, "  unreadable: {}: {}", dump.file, dump.error.as_deref().unwrap_or_default());
    }
    for group in &job.groups {
        let _ = writeln!(
            out,
            "\nprocess group {} {} ({} ranks), frontier #{}",
            group.name,
            if group.desc.is_empty() { String::new() } else { format!("({})", group.desc) },
            group.ranks.len(),
            group.frontier.map_or("-".into(), |f| f.to_string())
        );
        let mut by_host: BTreeMap<&str, Vec<&RankState>> = BTreeMap::new();
        for m in &group.members {
            by_host.entry(m.host.as_deref().unwrap_or("host ?")).or_default().push(m);
        }
        let _ = writeln!(out, "  {:<6} {:<5} {:<36} completed", "rank", "gpu", "last entered");
        for (host, members) in by_host {
            let _ = writeln!(out, " {host}");
            for m in members {
                let entered = m
                    .last_entered
                    .as_ref()
                    .map_or("-".to_string(), |e| format!("#{} {} {:?} {}", e.seq, e.op, e.input_sizes, e.state));
                let row = format!(
                    "  {:<6} {:<5} {:<36} {:<10} {}",
                    m.rank,
                    m.cuda_dev.map_or("-".into(), |d| d.to_string()),
                    entered,
                    m.last_completed.map_or("-".into(), |c| format!("#{c}")),
                    group.mark(m.rank)
                );
                let _ = writeln!(out, "{}", row.trim_end());
            }
        }
    }
    out
}

/// One paragraph per RAS status output: the job, dead and unreachable
/// processes, missing ranks, mismatched counts.
pub fn render_ras(statuses: &[topo_model::ras::RasStatus]) -> String {
    let mut out = String::new();
    for s in statuses {
        let n = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
        let _ = writeln!(
            out,
            "\nNCCL RAS {} ({}, NCCL {}): {} nodes, {} processes, {} GPUs, {} communicator row(s)",
            s.file,
            s.format,
            s.nccl_version.as_deref().unwrap_or("?"),
            n(s.nodes),
            n(s.processes),
            n(s.gpus),
            s.communicators.len()
        );
        for c in &s.communicators {
            let _ = writeln!(out, "  {:<20} {:>6} ranks/comm  {:<9} {}", c.id, n(c.ranks), c.status, c.errors);
        }
        for p in &s.dead {
            let _ = writeln!(out, "  DEAD         process {} on {} (GPU {:?})", p.pid, p.host, p.gpus);
        }
        for p in &s.unresponsive {
            let _ = writeln!(out, "  UNREACHABLE  process {} on {} (GPU {:?})", p.pid, p.host, p.gpus);
        }
        for r in &s.missing_ranks {
            let _ = writeln!(out, "  MISSING      {} rank {}", r.comm, r.rank);
        }
        for m in &s.mismatches {
            let groups: Vec<String> = m.groups.iter().map(|g| format!("{} ranks at {}", g.count, g.value)).collect();
            let _ = writeln!(out, "  MISMATCH     {} {}: {}", m.comm, m.what, groups.join(", "));
        }
    }
    out
}

/// NCCL Inspector records: per communicator, the ranks and collectives
/// recorded, and the rank the others wait for when one stands out.
pub fn render_inspector(records: &[topo_model::inspector::InspectorRecord]) -> String {
    let mut out = String::new();
    let mut comms: BTreeMap<&str, (std::collections::BTreeSet<u32>, usize, u32)> = BTreeMap::new();
    for r in records {
        let entry = comms.entry(r.comm.as_str()).or_default();
        entry.0.insert(r.rank);
        entry.1 += 1;
        entry.2 = r.n_ranks;
    }
    for (comm, (ranks, count, n_ranks)) in comms {
        let _ =
            writeln!(out, "\nNCCL Inspector comm {comm}: {count} record(s) from {} of {n_ranks} ranks", ranks.len());
    }
    for s in topo_parsers::inspector::stragglers(records) {
        let _ = writeln!(
            out,
            "  rank {} ({}) arrives last in {} of {} collectives (median {:.1}x shorter kernels than the others)",
            s.rank,
            s.host.as_deref().unwrap_or("?"),
            s.last_to_arrive,
            s.compared,
            s.median_ratio
        );
    }
    out
}
