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
        let _ = writeln!(out, "  {:<6} {:<5} {:<36} {:<10} {}", "rank", "gpu", "last entered", "completed", "");
        for (host, members) in by_host {
            let _ = writeln!(out, " {host}");
            for m in members {
                let entered = m
                    .last_entered
                    .as_ref()
                    .map_or("-".to_string(), |e| format!("#{} {} {:?} {}", e.seq, e.op, e.input_sizes, e.state));
                let _ = writeln!(
                    out,
                    "  {:<6} {:<5} {:<36} {:<10} {}",
                    m.rank,
                    m.cuda_dev.map_or("-".into(), |d| d.to_string()),
                    entered,
                    m.last_completed.map_or("-".into(), |c| format!("#{c}")),
                    group.mark(m.rank)
                );
            }
        }
    }
    out
}
