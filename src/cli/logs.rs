//! `topo nccl` and `topo diagnose`: reading NCCL logs, and the findings.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use topo_model::Snapshot;

use super::ReportFormat;
use crate::output;
use crate::sources::{self, Origin};
use crate::views;

#[derive(Args)]
pub(super) struct NcclArgs {
    /// Log files (plain or .gz), directories of NCCL_DEBUG_FILE outputs, or `-` for stdin.
    /// A snapshot or NCCL topology file among them is taken as `--from`.
    #[arg(required = true, value_name = "LOG")]
    pub(super) inputs: Vec<PathBuf>,
    /// A snapshot or NCCL topology XML of the machine the ranks ran on: every
    /// same-host hop gets the hardware path between its two GPUs.
    #[arg(long, value_name = "FILE")]
    pub(super) from: Option<PathBuf>,
    /// The JSON is documented in docs/nccl-report.md.
    #[arg(long, value_enum, default_value = "plain")]
    pub(super) format: ReportFormat,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum FailOn {
    Info,
    Warning,
    Error,
    Never,
}

#[derive(Args)]
pub(super) struct DiagnoseArgs {
    /// NCCL_DEBUG=INFO logs (files, .gz, directories, `-` for stdin), as for `topo nccl`;
    /// none when `--from` names a snapshot that holds a report (`snapshot --nccl-log`).
    #[arg(value_name = "LOG")]
    pub(super) inputs: Vec<PathBuf>,
    /// A snapshot or NCCL topology XML of the node the job ran on. Without it, on a
    /// GPU node that appears in the log, this machine is probed.
    #[arg(long, value_name = "FILE")]
    pub(super) from: Option<PathBuf>,
    /// Judge the log alone: do not probe this machine.
    #[arg(long, conflicts_with = "from")]
    pub(super) log_only: bool,
    /// The JSON (the findings) is documented in docs/diagnose.md.
    #[arg(long, value_enum, default_value = "plain")]
    pub(super) format: ReportFormat,
    /// Exit 1 when a finding is at least this severe.
    #[arg(long, value_enum, default_value = "never")]
    pub(super) fail_on: FailOn,
}

pub(super) fn nccl(args: NcclArgs) -> anyhow::Result<ExitCode> {
    // A snapshot or topology file given among the logs describes the machine, as `--from` does;
    // each input is opened and read once (a pipe or FIFO is told from its first bytes).
    let given = args.from.as_deref().map(|path| sources::load(Origin::File(path))).transpose()?;
    let sources::LogInputs { mut report, machine: found } = sources::read_logs(&args.inputs, given.is_none());
    let machine = match given {
        Some(machine) => Some(machine),
        None => found.transpose()?,
    };
    if let Some(snapshot) = &machine {
        let annotated = report.annotate(&snapshot.topology, snapshot.host.hostname.as_deref());
        if annotated == 0 {
            output::warn("no connection joins two GPUs of the given machine (ranks need bus IDs from init lines)");
        }
    }
    let failed: Vec<&topo_model::nccl::InputSummary> = report.inputs.iter().filter(|i| i.error.is_some()).collect();
    for input in &failed {
        output::error(input.error.as_deref().unwrap_or_default());
    }
    let text = match args.format {
        ReportFormat::Plain => views::nccl::render(&report),
        ReportFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        ReportFormat::Yaml => topo_model::snapshot::to_yaml_string(&report),
    };
    output::print(&text)?;
    Ok(if failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

pub(super) fn diagnose(args: DiagnoseArgs) -> anyhow::Result<ExitCode> {
    let mut machine = args.from.as_deref().map(|path| sources::load(Origin::File(path))).transpose()?;
    let mut report = match (args.inputs.is_empty(), machine.as_ref().and_then(|m| m.nccl.clone())) {
        (false, _) => sources::nccl_report(&args.inputs),
        (true, Some(report)) => report,
        (true, None) => {
            anyhow::bail!("no log given, and no --from snapshot holding an NCCL report (topo snapshot --nccl-log)")
        }
    };
    if machine.is_none() && !args.log_only {
        machine = this_gpu_node_in(&report);
    }
    if let Some(snapshot) = &machine {
        report.annotate(&snapshot.topology, snapshot.host.hostname.as_deref());
    }
    let failed: Vec<&str> = report.inputs.iter().filter_map(|i| i.error.as_deref()).collect();
    for error in &failed {
        output::error(error);
    }
    let findings = crate::diagnose::diagnose(&report, machine.as_ref());
    let text = match args.format {
        ReportFormat::Plain => views::findings::render(&findings),
        ReportFormat::Json => serde_json::to_string_pretty(&findings)? + "\n",
        ReportFormat::Yaml => topo_model::snapshot::to_yaml_string(&findings),
    };
    output::print(&text)?;
    let threshold = match args.fail_on {
        FailOn::Info => Some(topo_model::Severity::Info),
        FailOn::Warning => Some(topo_model::Severity::Warning),
        FailOn::Error => Some(topo_model::Severity::Error),
        FailOn::Never => None,
    };
    Ok(if !failed.is_empty() {
        ExitCode::from(2)
    } else if threshold.is_some_and(|t| findings.iter().any(|f| f.severity >= t)) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// This machine, when it is a GPU node (NVML answers) and the log is from it
/// (its hostname among the log's hosts, or a log that names none).
pub(super) fn this_gpu_node_in(report: &topo_model::nccl::NcclReport) -> Option<Snapshot> {
    let snapshot = sources::load(Origin::Sysfs { root: Path::new("/"), nvml: true }).ok()?;
    let has_gpus = snapshot.nvml.as_ref().is_some_and(|n| n.answered().next().is_some());
    let host = snapshot.host.hostname.as_deref()?;
    let in_log = report.hosts.is_empty() || report.hosts.iter().any(|h| h == host || h.split('.').next() == Some(host));
    (has_gpus && in_log).then_some(snapshot)
}
