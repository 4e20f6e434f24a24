//! A job its user says hung (`topo diagnose --hung`), whose log shows no
//! failure: where the log stops, and the causes of such hangs that public
//! threads established, ordered for the job.
//!
//! A hang prints nothing: NCCL waits for its peers at the rendezvous and for
//! every connection without a time limit, and a collective that never
//! completes leaves the GPU spinning. So the log of a hung job simply stops,
//! and the same lines are what an excerpt cut short looks like: only the user
//! knows which it is. Without `--hung`, `diagnose` says nothing of it beyond a
//! note that init did not finish; with it, the hang is the finding, placed by
//! how far the lines got:
//! - in init (no `Init COMPLETE`): before the ranks had met (no ring, tree or
//!   connection printed: the rendezvous between hosts), or while NCCL
//!   connected its rings and trees (the data path);
//! - after init (a rank printed `Init COMPLETE`, or collectives ran): in the
//!   collectives, first or later.
//!
//! NCCL before 2.4 prints no `Init COMPLETE`: its lines are placed in init,
//! saying that they cannot tell.

use topo_model::nccl::{NcclReport, TransportKind};
use topo_model::{Finding, Severity};
use topo_parsers::nccl_log::catalogue::Scope;

use super::evidence::fact;

/// The finding of a job that hung in NCCL's init.
pub(super) const IN_INIT: &str = "hung-in-init";
/// The finding of a job that hung after NCCL's init.
pub(super) const AFTER_INIT: &str = "hung-after-init";

/// How far init got, as far as the lines show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// NCCL started (any of its lines) but no line shows the ranks had met.
    Rendezvous,
    /// The ranks had met: NCCL printed its graph (rings, trees, channels).
    Graph,
    /// NCCL was connecting the hops of its rings and trees.
    Connecting,
    /// NCCL was setting NVLS (NVLink SHARP multicast) up: it does so after
    /// its rings and trees (connected there, or from 2.22 with cuMem at the
    /// first collective), as init's last large step (init.cc 2.17-2.30).
    Nvls,
}

impl Stage {
    fn words(self) -> &'static str {
        match self {
            Stage::Rendezvous => {
                "NCCL had started, but no line shows the ranks had met (no ring, tree or connection printed)"
            }
            Stage::Graph => "the ranks had met and NCCL had printed its rings and trees, but no connection was set up",
            Stage::Connecting => "NCCL was connecting the hops of its rings and trees",
            Stage::Nvls => {
                "NCCL was setting up NVLS (NVLink SHARP multicast) buffers, the last large step of its init: the ranks had met and set their rings and trees up"
            }
        }
    }

    /// The suspects' view of it: whether the ranks had met, and whether
    /// NVLS is where they wait.
    fn scope(self) -> Vec<Scope> {
        match self {
            Stage::Rendezvous => vec![],
            Stage::Graph | Stage::Connecting => vec![Scope::Connecting],
            Stage::Nvls => vec![Scope::Nvls, Scope::Connecting],
        }
    }
}

/// Whether the lines show NCCL's init under way: the network, bootstrap or a
/// communicator. A version line alone is what frameworks print too.
fn init_began(report: &NcclReport) -> bool {
    let net = &report.network;
    !report.communicators.is_empty()
        || !net.used.is_empty()
        || !net.bootstrap.is_empty()
        || !net.devices.is_empty()
        || !net.socket_interfaces.is_empty()
        || net.ib_not_found
}

/// Whether anything in the log shows init over: a rank's `Init COMPLETE`,
/// collectives, user buffers registered for them, nccl-tests results, a
/// watchdog's timeout or progress.
fn init_over(report: &NcclReport) -> bool {
    report.init_complete > 0
        || report.buffer_registrations > 0
        || report.communicators.iter().any(|c| !c.init_complete.is_empty())
        || !report.collectives.is_empty()
        || !report.timeouts.is_empty()
        || !report.progress.is_empty()
        || report.nccl_tests.iter().any(|run| !run.rows.is_empty())
}

/// NCCL before 2.4 prints no `Init COMPLETE`: its logs cannot say whether
/// init finished.
fn prints_init_complete(report: &NcclReport) -> bool {
    report.nccl_versions.iter().all(|v| {
        let mut parts = v.split(|c: char| !c.is_ascii_digit()).filter_map(|p| p.parse::<u32>().ok());
        matches!((parts.next(), parts.next()), (Some(major), Some(minor)) if major > 2 || (major == 2 && minor >= 4))
    })
}

fn stage(report: &NcclReport) -> Stage {
    let comms = &report.communicators;
    if report.nvls_setup > 0 {
        Stage::Nvls
    } else if comms.iter().any(|c| !c.connections.is_empty()) || !report.via.is_empty() {
        Stage::Connecting
    } else if comms.iter().any(|c| !c.rings.is_empty() || !c.trees.is_empty() || c.channels.is_some()) {
        Stage::Graph
    } else {
        Stage::Rendezvous
    }
}

/// A failure the log shows explains itself: its finding says why the job stopped.
fn failed(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.severity == Severity::Error)
}

/// Whether the log's NCCL init began and never finished, with nothing failed:
/// a hang in init or an excerpt cut short (the note without `--hung`).
pub fn stops_in_init(report: &NcclReport, findings: &[Finding]) -> bool {
    init_began(report) && !init_over(report) && prints_init_complete(report) && !failed(findings)
}

/// The ranks the log's communicators name, sorted.
fn ranks_seen(report: &NcclReport) -> Vec<u32> {
    let mut ranks: Vec<u32> = report.communicators.iter().flat_map(|c| c.ranks.iter().map(|r| r.rank)).collect();
    ranks.sort_unstable();
    ranks.dedup();
    ranks
}

/// The finding of a hung job, and what of it orders the suspects; `None` when
/// a failure in the log explains the stop, or the log shows no NCCL init.
pub(super) fn finding(report: &NcclReport, findings: &[Finding]) -> Option<(Finding, Vec<Scope>)> {
    // Its user says it hung: any NCCL line shows NCCL had started.
    if failed(findings) || !(init_began(report) || report.nccl_lines > 0) {
        return None;
    }
    let ranks = ranks_seen(report);
    let seen = match report.communicators.iter().filter_map(|c| c.nranks).max() {
        Some(n) if !ranks.is_empty() => format!(" ({} of {n} ranks seen)", ranks.len()),
        _ => String::new(),
    };
    let (code, mut evidence, shown) = if !init_over(report) {
        let stage = stage(report);
        let unknown = if prints_init_complete(report) {
            ""
        } else {
            " (NCCL before 2.4 prints no `Init COMPLETE`: whether init finished is not in these lines)"
        };
        let text =
            format!("no `Init COMPLETE` in {} NCCL line(s){seen}{unknown}: {}", report.nccl_lines, stage.words());
        (IN_INIT, vec![fact("report", text)], stage.scope().into_iter().chain(rdma(report)).collect())
    } else {
        let ops: u64 = report.collectives.values().map(|c| c.calls).sum();
        let after = if ops > 0 {
            format!("{ops} collective call(s) logged (COLL lines) before the log stops")
        } else {
            "no collective logged after it (NCCL_DEBUG_SUBSYS=COLL prints each call)".to_string()
        };
        let past = match report.init_complete.max(complete(report)) {
            0 if report.buffer_registrations > 0 => format!(
                "{} user-buffer registration line(s) (NCCL_REG) show the communicator in use{seen}",
                report.buffer_registrations
            ),
            ranks => format!("{ranks} rank(s) printed `Init COMPLETE`{seen}"),
        };
        let text = format!("{past}; {after}");
        // A rank had issued more than one collective before it stopped: the
        // data path had carried work, and the ranks diverged.
        let progressed = report.progress.iter().any(|rank| rank.calls > 1);
        let shown = if progressed { vec![Scope::AfterProgress] } else { rdma(report).into_iter().collect() };
        (AFTER_INIT, vec![fact("report", text)], shown)
    };
    if let Some(used) = report.network.used.first() {
        evidence.push(fact("report", format!("Using network {used}")));
    }
    let finding = super::messages::of_class(code, Severity::Error, evidence)?;
    Some((finding.on(report.hosts.iter().cloned(), ranks), shown))
}

/// The network the job used, when it is an RDMA one: whose data path (GID,
/// GPUDirect) can hang a connection.
fn rdma(report: &NcclReport) -> Option<Scope> {
    // The network's name as its hops would print it (`NET/IBext_v8`, `NET/AWS Libfabric`).
    let rdma = |name: &str| {
        matches!(
            topo_parsers::nccl_log::transport_kind(&format!("NET/{name}")),
            TransportKind::NetIb | TransportKind::NetOfi
        )
    };
    report.network.used.iter().any(|name| rdma(name)).then_some(Scope::Rdma)
}

/// Ranks that printed `Init COMPLETE`, counted per communicator.
fn complete(report: &NcclReport) -> u64 {
    report.communicators.iter().map(|c| c.init_complete.len() as u64).sum()
}
