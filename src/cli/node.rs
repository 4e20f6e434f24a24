//! `topo preflight`, `topo probe` and `topo cluster`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};

use super::{OriginArgs, ReportFormat, report_notices};
use crate::output;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum PreflightFormat {
    Plain,
    Json,
    Yaml,
    /// JUnit XML, one test case per check, for CI systems.
    Junit,
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
    /// Live bandwidth checks (they arrive with `topo probe`).
    #[arg(long, value_enum, default_value = "none")]
    pub(super) probe: ProbeLevel,
}

pub(super) fn preflight(args: PreflightArgs) -> anyhow::Result<ExitCode> {
    if args.probe != ProbeLevel::None {
        anyhow::bail!(
            "--probe quick|full needs the live probes of `topo probe`, which this build does not have yet; use --probe none"
        );
    }
    let snapshot = args.origin.load()?;
    report_notices(&snapshot);
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
    };
    output::print(&text)?;
    Ok(if report.passed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

#[derive(Args)]
pub(super) struct ProbeArgs {
    /// Only meet the other ranks through the launcher's environment (torchrun,
    /// Slurm, Open MPI, PMI) and exchange an id, as before a collective.
    #[arg(long)]
    pub(super) check_rendezvous: bool,
    /// Rank 0's address when the launcher does not give MASTER_ADDR.
    #[arg(long, value_name = "HOST[:PORT]")]
    pub(super) master: Option<String>,
    /// Every rank gives up after this many seconds, naming the missing ranks.
    #[arg(long, value_name = "SECONDS", default_value = "60")]
    pub(super) timeout: u64,
    /// libnccl.so.2 (or its directory) when it is not found on its own.
    /// (Or the TOPO_NCCL_LIBRARY environment variable.)
    #[arg(long, value_name = "PATH")]
    pub(super) nccl_lib: Option<PathBuf>,
}

pub(super) fn probe(args: ProbeArgs) -> anyhow::Result<ExitCode> {
    use crate::probe::{launcher, libraries};
    let timeout = std::time::Duration::from_secs(args.timeout);
    if args.check_rendezvous {
        let env: std::collections::HashMap<String, String> = std::env::vars().collect();
        let Some(launch) = launcher::detect(&env, args.master.as_deref())? else {
            anyhow::bail!(
                "no launcher found (RANK/WORLD_SIZE, SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/SIZE or PMI_RANK/SIZE): run under torchrun, srun or mpirun"
            );
        };
        let host =
            std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
        let line = crate::probe::check_rendezvous(&launch, &host, timeout)?;
        output::print(&(line + "\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    if let libraries::Found::Missing { looked } = libraries::cuda_driver() {
        anyhow::bail!(libraries::describe_missing(
            "libcuda.so.1 (the NVIDIA driver)",
            &looked,
            "install the driver, or add its directory to LD_LIBRARY_PATH"
        ));
    }
    let nccl_lib = args.nccl_lib.clone().or_else(|| std::env::var_os("TOPO_NCCL_LIBRARY").map(PathBuf::from));
    if let libraries::Found::Missing { looked } = libraries::nccl(nccl_lib.as_deref()) {
        anyhow::bail!(libraries::describe_missing(
            "libnccl.so.2",
            &looked,
            "pip install nvidia-nccl-cu12, or point --nccl-lib / TOPO_NCCL_LIBRARY at it"
        ));
    }
    anyhow::bail!(
        "the live measurements (copies, collectives) are not in this build yet; `topo probe --check-rendezvous` checks the multi-node path"
    )
}

#[derive(Args)]
pub(super) struct ClusterArgs {
    /// Directories of snapshots (and one level of subdirectories), or files.
    #[arg(required = true, value_name = "DIR")]
    pub(super) inputs: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "plain")]
    pub(super) format: ReportFormat,
}

pub(super) fn cluster(args: ClusterArgs) -> anyhow::Result<ExitCode> {
    let report = crate::cluster::load(&args.inputs)?;
    let text = match args.format {
        ReportFormat::Plain => crate::cluster::render(&report),
        ReportFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        ReportFormat::Yaml => topo_model::snapshot::to_yaml_string(&report),
    };
    output::print(&text)?;
    Ok(if report.nodes == 0 { ExitCode::from(2) } else { ExitCode::SUCCESS })
}
