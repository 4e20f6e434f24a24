//! `topo preflight`, `topo probe` and `topo cluster`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};

use super::{OriginArgs, report_notices};
use crate::output;

/// `topo probe` and `topo cluster`: the report formats plus Prometheus.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum NodeFormat {
    Plain,
    Json,
    Yaml,
    /// Prometheus text exposition for node_exporter's textfile collector (docs/prometheus.md).
    Prometheus,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum PreflightFormat {
    Plain,
    Json,
    Yaml,
    /// JUnit XML, one test case per check, for CI systems.
    Junit,
    /// Prometheus text exposition for node_exporter's textfile collector (docs/prometheus.md).
    Prometheus,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum ProbeLevel {
    None,
    Quick,
    Full,
}

#[derive(Args)]
pub(super) struct PreflightArgs {
    #[command(flatten)]
    pub(super) origin: OriginArgs,
    /// Expectations (YAML) the node must meet; see docs/preflight.md.
    #[arg(long, value_name = "FILE")]
    pub(super) expect: Option<PathBuf>,
    /// Write this node's facts as expectations for its siblings, then check against them.
    #[arg(long, value_name = "FILE", conflicts_with = "expect")]
    pub(super) write_expect: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "plain")]
    pub(super) format: PreflightFormat,
    /// Live checks on this machine's GPUs: `quick` (copies, all_reduce at
    /// large sizes) or `full` (every collective swept, ring walk); see `topo probe`.
    #[arg(long, value_enum, default_value = "none")]
    pub(super) probe: ProbeLevel,
    /// Largest message (and copy) for --probe; lower it on small GPUs.
    #[arg(long, value_name = "SIZE", default_value = "1G")]
    pub(super) probe_max: String,
}

pub(super) fn preflight(args: PreflightArgs) -> anyhow::Result<ExitCode> {
    let snapshot = match args.probe {
        ProbeLevel::None => args.origin.load()?,
        level => {
            if args.origin.from.is_some() || args.origin.example.is_some() {
                anyhow::bail!("--probe measures this machine's GPUs; it cannot be combined with --from or --example");
            }
            #[derive(clap::Parser)]
            struct Probe {
                #[command(flatten)]
                args: ProbeArgs,
            }
            let mut flags =
                vec!["probe".into(), "--sysfs-root".into(), args.origin.sysfs_root.clone().into_os_string()];
            if level == ProbeLevel::Full {
                flags.push("--full".into());
            }
            let max = size_arg("--probe-max", &args.probe_max)?;
            let copy = max.min(256 << 20).to_string();
            flags.extend(["--max".into(), args.probe_max.clone().into(), "--copy-size".into(), copy.into()]);
            let probe = <Probe as clap::Parser>::parse_from(flags);
            super::node::live_probe(&probe.args, None)?.snapshot
        }
    };
    report_notices(&snapshot, args.origin.replays());
    let expectations = match (&args.expect, &args.write_expect) {
        (Some(path), _) => crate::preflight::expect::Expectations::load(path)?,
        (None, Some(path)) => {
            let findings = crate::checks::hardware(&snapshot);
            let written = crate::preflight::expect::Expectations::from_node(&snapshot, &findings);
            let text = topo_model::snapshot::to_yaml_string(&written);
            std::fs::write(path, text).with_context(|| format!("{}: cannot write", path.display()))?;
            written
        }
        (None, None) => Default::default(),
    };
    let report = crate::preflight::run(&snapshot, &expectations);
    let text = match args.format {
        PreflightFormat::Plain => crate::preflight::render::plain(&report),
        PreflightFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        PreflightFormat::Yaml => format!("# {}\n{}", report.verdict, topo_model::snapshot::to_yaml_string(&report)),
        PreflightFormat::Junit => crate::preflight::render::junit(&report),
        PreflightFormat::Prometheus => {
            let mut text = crate::views::prometheus::preflight(&report);
            if let Some(probe) = &snapshot.probe {
                let findings = crate::probe::findings::probe_findings(&snapshot);
                text.push_str(&crate::views::prometheus::probe_metrics(probe, &findings));
            }
            text
        }
    };
    output::print(&text)?;
    Ok(if report.passed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[derive(Args)]
pub(super) struct ProbeArgs {
    /// Every collective, swept from --min to --max, and the ring walk.
    #[arg(long)]
    pub(super) full: bool,
    /// Collectives to run (all_reduce, all_gather, reduce_scatter, broadcast,
    /// reduce, all_to_all, sendrecv, or `all`); `none` skips NCCL.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub(super) collectives: Vec<String>,
    /// Smallest message (8, 64K, 1M, 4G; nccl-tests' convention).
    #[arg(long, value_name = "SIZE")]
    pub(super) min: Option<String>,
    /// Largest message.
    #[arg(long, value_name = "SIZE")]
    pub(super) max: Option<String>,
    /// Timed iterations per size (default 10 quick, 20 full).
    #[arg(long, value_name = "N")]
    pub(super) iters: Option<u32>,
    /// Untimed iterations first (default 2 quick, 5 full).
    #[arg(long, value_name = "N")]
    pub(super) warmup: Option<u32>,
    /// Bytes per copy measurement.
    #[arg(long, value_name = "SIZE", default_value = "256M")]
    pub(super) copy_size: String,
    /// Skip the copy measurements.
    #[arg(long)]
    pub(super) no_copies: bool,
    /// Time each hop of the ring in rank order alone (on in --full).
    #[arg(long)]
    pub(super) ring_walk: bool,
    /// Pair the job's nodes (one process each), measure every pair, and
    /// re-pair failed pairs with nodes that passed, so a bad node is named.
    #[arg(long, conflicts_with_all = ["full", "ring_walk", "ring_from"])]
    pub(super) pairwise: bool,
    /// Walk the ring NCCL chose, read from a job's NCCL_DEBUG=INFO log.
    #[arg(long, value_name = "LOG")]
    pub(super) ring_from: Option<PathBuf>,
    /// A figure below this share of what its path should carry is a finding.
    #[arg(long, value_name = "RATIO", default_value = "0.75")]
    pub(super) threshold: f64,
    /// The JSON is documented in docs/probe.md.
    #[arg(long, value_enum, default_value = "plain")]
    pub(super) format: NodeFormat,
    /// Also write this node's snapshot with the results (YAML, or JSON for
    /// `.json`), for `topo show --from`, `topo preflight --from` and `topo cluster`.
    #[arg(long, value_name = "FILE")]
    pub(super) save: Option<PathBuf>,
    /// Where this machine's sysfs is mounted (a container's `/host/sys/..`):
    /// the topology every figure is held against.
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub(super) sysfs_root: PathBuf,
    /// Only meet the other ranks through the launcher's environment (torchrun,
    /// Slurm, Open MPI, PMI) and exchange an id, as before a collective.
    #[arg(long)]
    pub(super) check_rendezvous: bool,
    /// Rank 0's address when the launcher does not give MASTER_ADDR.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub(super) master: Option<String>,
    /// Meet the other ranks with no shared secret (TOPO_RENDEZVOUS_SECRET):
    /// any process that reaches rank 0's port could claim a rank.
    #[arg(long)]
    pub(super) insecure_rendezvous: bool,
    /// Every rank gives up after this many seconds, naming the missing ranks.
    #[arg(long, value_name = "SECONDS", default_value = "60")]
    pub(super) timeout: u64,
    /// libnccl.so.2 (or its directory) when it is not found on its own.
    /// (Or the TOPO_NCCL_LIBRARY environment variable.)
    #[arg(long, value_name = "PATH")]
    pub(super) nccl_lib: Option<PathBuf>,
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

fn size_arg(flag: &str, text: &str) -> anyhow::Result<u64> {
    crate::probe::collective_size(text).with_context(|| format!("{flag} {text:?}: not a size (8, 64K, 1M, 4G)"))
}

/// The plan from the flags, checked before anything is loaded.
fn probe_plan(args: &ProbeArgs, nccl_library: Option<PathBuf>) -> anyhow::Result<crate::probe::run::Plan> {
    use topo_model::collective::{Collective, sweep};
    use topo_probes::live::{collectives::CollectivePlan, copies::CopyPlan};
    let (default_list, default_min, default_max) = crate::probe::run::default_collectives(args.full);
    let list: Vec<Collective> = match args.collectives.as_slice() {
        [] => default_list,
        [one] if one == "all" => Collective::ALL.to_vec(),
        [one] if one == "none" => Vec::new(),
        names => names
            .iter()
            .map(|n| Collective::from_name(n).with_context(|| format!("--collectives: unknown collective {n:?}")))
            .collect::<anyhow::Result<_>>()?,
    };
    let min_flag = args.min.as_deref().map(|t| size_arg("--min", t)).transpose()?;
    let max_flag = args.max.as_deref().map(|t| size_arg("--max", t)).transpose()?;
    // A bound given alone pulls the other default along rather than failing.
    let (min, max) = match (min_flag, max_flag) {
        (Some(min), Some(max)) => (min, max),
        (Some(min), None) => (min, default_max.max(min)),
        (None, Some(max)) => (default_min.min(max), max),
        (None, None) => (default_min, default_max),
    };
    if min > max {
        anyhow::bail!("--min {min} is larger than --max {max}");
    }
    if !(0.0..=1.0).contains(&args.threshold) {
        anyhow::bail!("--threshold {} is not between 0 and 1", args.threshold);
    }
    let copy_bytes = size_arg("--copy-size", &args.copy_size)?;
    let (warmup, iterations) = if args.full { (5, 20) } else { (2, 10) };
    let (warmup, iterations) = (args.warmup.unwrap_or(warmup), args.iters.unwrap_or(iterations).max(1));
    let ring = match &args.ring_from {
        Some(log) => Some(crate::probe::run::ring_from_log(log)?),
        None if args.ring_walk || args.full => Some(Vec::new()),
        None => None,
    };
    Ok(crate::probe::run::Plan {
        copies: (!args.no_copies).then_some(CopyPlan {
            bytes: usize::try_from(copy_bytes).context("--copy-size too large")?,
            warmup,
            iterations,
        }),
        collectives: CollectivePlan { collectives: list, sizes: sweep(min, max), warmup, iterations },
        ring,
        ring_bytes: max.min(256 << 20),
        pairwise: args.pairwise,
        threshold: args.threshold,
        timeout: std::time::Duration::from_secs(args.timeout),
        nccl_library,
    })
}

/// A live run, its node snapshot (the report attached) and its findings.
pub(super) struct LiveRun {
    pub(super) snapshot: topo_model::Snapshot,
    pub(super) findings: Vec<topo_model::Finding>,
    pub(super) host: String,
}

/// Checks the libraries, runs the plan on this node's GPUs and holds every
/// figure against this node's topology.
pub(super) fn live_probe(args: &ProbeArgs, launch: Option<crate::probe::launcher::Launch>) -> anyhow::Result<LiveRun> {
    use crate::probe::{launcher, libraries};
    // The flags first: a mistyped size or threshold is said as such, on a
    // machine without a GPU too, before any library is looked for.
    let mut plan = probe_plan(args, None)?;
    if !topo_probes::live::cuda::driver_present() {
        let looked = match libraries::cuda_driver() {
            libraries::Found::Missing { looked } => looked,
            libraries::Found::At(path) => vec![path],
        };
        anyhow::bail!(libraries::describe_missing(
            "libcuda.so.1 (the NVIDIA driver)",
            &looked,
            "install the NVIDIA driver, or add the directory holding libcuda.so.1 to LD_LIBRARY_PATH"
        ));
    }
    let wants_nccl = args.collectives.first().is_none_or(|c| c != "none")
        || args.ring_walk
        || args.ring_from.is_some()
        || args.pairwise;
    let env: std::collections::HashMap<String, String> = std::env::vars().collect();
    // One GPU per process only inside a launched job; alone (and in preflight) every GPU.
    let local_rank = launch.as_ref().and_then(|_| launcher::local_rank(&env));
    // Processes sharing a node take turns for host copies through NCCL, when there is one.
    let turns = local_rank.is_some() && !args.no_copies;
    let explicit = args.nccl_lib.clone().or_else(|| std::env::var_os("TOPO_NCCL_LIBRARY").map(PathBuf::from));
    let nccl_library = match (wants_nccl || turns).then(|| libraries::nccl(explicit.as_deref())) {
        Some(libraries::Found::At(path)) => Some(path),
        Some(libraries::Found::Missing { looked }) if wants_nccl => anyhow::bail!(libraries::describe_missing(
            "libnccl.so.2",
            &looked,
            "pip install nvidia-nccl-cu12, point --nccl-lib / TOPO_NCCL_LIBRARY at it, or pass --collectives none"
        )),
        _ => None,
    };
    plan.nccl_library = nccl_library;
    // The topology first: it says where each GPU's pinned host memory belongs.
    let nvml = args.sysfs_root == std::path::Path::new("/");
    let mut snapshot = crate::sources::load(crate::sources::Origin::Sysfs { root: &args.sysfs_root, nvml })?;
    let homes = crate::probe::expect::host_homes(&snapshot.topology);
    let place = crate::probe::run::Place { launch, local_rank, host: hostname(), homes };
    let mut report = crate::probe::run::run(&plan, &place)?;
    crate::probe::expect::annotate(&mut report, &snapshot.topology);
    snapshot.probe = Some(report);
    let findings = crate::probe::findings::probe_findings(&snapshot);
    Ok(LiveRun { snapshot, findings, host: place.host })
}

pub(super) fn probe(args: ProbeArgs) -> anyhow::Result<ExitCode> {
    let env: std::collections::HashMap<String, String> = std::env::vars().collect();
    let launch = crate::probe::launcher::detect(&env, args.master.as_deref())?;
    if let Some(launch) = &launch
        && let Some(warning) = crate::probe::rendezvous::guard(launch, args.insecure_rendezvous)?
    {
        eprintln!("{warning}");
    }
    if args.check_rendezvous {
        let Some(launch) = launch else {
            anyhow::bail!(
                "no launcher found (RANK/WORLD_SIZE, SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/SIZE or PMI_RANK/SIZE): run under torchrun, srun or mpirun"
            );
        };
        let timeout = std::time::Duration::from_secs(args.timeout);
        let line =
            crate::probe::check_rendezvous(&launch, crate::probe::launcher::local_rank(&env), &hostname(), timeout)?;
        output::print(&(line + "\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let run = live_probe(&args, launch)?;
    let Some(report) = &run.snapshot.probe else { anyhow::bail!("the probe produced no report") };
    let findings = &run.findings;
    let text = match args.format {
        NodeFormat::Plain => crate::probe::render::plain(report, &run.host, findings),
        NodeFormat::Json => {
            serde_json::to_string_pretty(&serde_json::json!({ "probe": report, "findings": findings }))? + "\n"
        }
        NodeFormat::Yaml => {
            topo_model::snapshot::to_yaml_string(&serde_json::json!({ "probe": report, "findings": findings }))
        }
        NodeFormat::Prometheus => crate::views::prometheus::probe(report, &run.host, findings),
    };
    output::print(&text)?;
    if let Some(path) = &args.save {
        super::show::write_snapshot(&run.snapshot, path, None)?;
    }
    let failed = findings.iter().any(|f| f.severity == topo_model::Severity::Error);
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

#[derive(Args)]
pub(super) struct ClusterArgs {
    /// Directories of snapshots (and one level of subdirectories), or files.
    #[arg(required = true, value_name = "DIR")]
    pub(super) inputs: Vec<PathBuf>,
    /// The JSON is documented in docs/cluster.md.
    #[arg(long, value_enum, default_value = "plain")]
    pub(super) format: NodeFormat,
}

pub(super) fn cluster(args: ClusterArgs) -> anyhow::Result<ExitCode> {
    let report = crate::cluster::load(&args.inputs)?;
    let text = match args.format {
        NodeFormat::Plain => crate::cluster::render(&report),
        NodeFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        NodeFormat::Yaml => topo_model::snapshot::to_yaml_string(&report),
        NodeFormat::Prometheus => crate::views::prometheus::cluster(&report, &hostname()),
    };
    output::print(&text)?;
    // What could be read is reported; a named input that is not there still fails the run.
    let missing = args.inputs.iter().any(|p| p.as_os_str() != crate::input::STDIN && std::fs::metadata(p).is_err());
    Ok(if report.nodes == 0 || missing { ExitCode::from(2) } else { ExitCode::SUCCESS })
}
