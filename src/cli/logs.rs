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
    /// The job hung (what no log line can say): where its lines stop, in NCCL's
    /// init or after it, becomes a finding with the usual causes of such a hang.
    #[arg(long)]
    pub(super) hung: bool,
}

pub(super) fn nccl(args: NcclArgs) -> anyhow::Result<ExitCode> {
    // Flight Recorder dumps, RAS and Inspector output are told apart by content;
    // a snapshot or topology file among the logs describes the machine, as
    // `--from` does; each input is opened and read once (a pipe or FIFO is told
    // from its first bytes).
    let crate::job_inputs::JobInputs { dumps, ras, inspector, rest: inputs } = crate::job_inputs::split(&args.inputs);
    let given = args.from.as_deref().map(|path| sources::load(Origin::File(path))).transpose()?;
    let sources::LogInputs { mut report, machine: found } = sources::read_logs(&inputs, given.is_none());
    let machine = match given {
        Some(machine) => Some(machine),
        None => found.transpose()?,
    };
    let any_logs = !report.inputs.is_empty();
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
    if !report.inputs.is_empty() && no_nccl_output(&report) {
        return Ok(ExitCode::from(2));
    }
    let ras: Vec<topo_model::ras::RasStatus> = crate::job_inputs::ras_reports(&ras)
        .into_iter()
        .filter_map(|r| r.map_err(|e| eprintln!("topo: error: {e}")).ok())
        .collect();
    let (inspector, inspector_errors) = crate::job_inputs::inspector_records(&inspector);
    for error in &inspector_errors {
        eprintln!("topo: error: {error}");
    }
    let text = if dumps.is_empty() && ras.is_empty() && inspector.is_empty() {
        match args.format {
            ReportFormat::Plain => views::nccl::render(&report),
            ReportFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
            ReportFormat::Yaml => topo_model::snapshot::to_yaml_string(&report),
        }
    } else {
        // Flight Recorder dumps given: the log report (if any log) and the job (docs/job-report.md).
        let job = crate::job_inputs::job_report(&dumps, &report);
        let both = serde_json::json!({ "nccl": any_logs.then_some(&report), "job": &job, "ras": &ras, "inspector": &inspector });
        let job_text = if dumps.is_empty() { String::new() } else { views::job::render(&job) }
            + &views::job::render_ras(&ras)
            + &views::job::render_inspector(&inspector);
        match args.format {
            ReportFormat::Plain if !any_logs => job_text,
            ReportFormat::Plain => views::nccl::render(&report) + "\n" + &job_text,
            ReportFormat::Json => serde_json::to_string_pretty(&both)? + "\n",
            ReportFormat::Yaml => topo_model::snapshot::to_yaml_string(&both),
        }
    };
    output::print(&text)?;
    Ok(if failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

pub(super) fn diagnose(args: DiagnoseArgs) -> anyhow::Result<ExitCode> {
    let mut machine = args.from.as_deref().map(|path| sources::load(Origin::File(path))).transpose()?;
    let crate::job_inputs::JobInputs { dumps, ras, inspector, rest: logs } = crate::job_inputs::split(&args.inputs);
    let mut report = match (logs.is_empty(), machine.as_ref().and_then(|m| m.nccl.clone())) {
        (false, _) => sources::nccl_report(&logs),
        (true, Some(report)) => report,
        // A bundle of pasted outputs is judged on its own: its hardware facts need no log.
        (true, None)
            if !dumps.is_empty()
                || !ras.is_empty()
                || !inspector.is_empty()
                || args.from.as_deref().is_some_and(crate::bundle::is_bundle) =>
        {
            topo_model::nccl::NcclReport::default()
        }
        (true, None) => {
            anyhow::bail!("no log given, and no --from snapshot holding an NCCL report (topo snapshot --nccl-log)")
        }
    };
    let given = machine.is_some();
    if machine.is_none() && !args.log_only {
        machine = this_gpu_node_in(&report);
    }
    if let Some(snapshot) = &machine {
        report.annotate(&snapshot.topology, snapshot.host.hostname.as_deref());
        if given {
            warn_if_not_in_log(snapshot, &report);
        }
    }
    let mut failed: Vec<String> = report.inputs.iter().filter_map(|i| i.error.clone()).collect();
    let ras: Vec<topo_model::ras::RasStatus> =
        crate::job_inputs::ras_reports(&ras).into_iter().filter_map(|r| r.map_err(|e| failed.push(e)).ok()).collect();
    let (inspector, mut inspector_errors) = crate::job_inputs::inspector_records(&inspector);
    failed.append(&mut inspector_errors);
    for error in &failed {
        output::error(error);
    }
    if !logs.is_empty() && no_nccl_output(&report) {
        return Ok(ExitCode::from(2));
    }
    let mut findings = crate::diagnose::diagnose_job(&report, machine.as_ref(), args.hung);
    if !args.hung && crate::diagnose::hung::stops_in_init(&report, &findings) {
        output::notice(
            "note: NCCL's init did not finish in these lines (no `Init COMPLETE`, nothing failed); \
             if the job hung, `topo diagnose --hung` says where it stopped and what usually causes it",
        );
    }
    if !dumps.is_empty() || !ras.is_empty() || !inspector.is_empty() {
        // Flight Recorder and RAS findings lead within each severity: they name the stuck rank.
        let mut hang = Vec::new();
        if !dumps.is_empty() {
            hang = crate::diagnose::hang::findings(&crate::job_inputs::job_report(&dumps, &report));
        }
        for status in &ras {
            hang.extend(crate::diagnose::hang::ras_findings(status, &report));
        }
        hang.extend(crate::diagnose::hang::inspector_findings(&inspector, &report));
        hang.extend(crate::diagnose::hang::inspector_link_findings(&inspector, &report));
        hang.append(&mut findings);
        hang.sort_by_key(|f| std::cmp::Reverse(f.severity));
        findings = hang;
    }
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

/// A `--from` node that is not among the hosts the log names: its hardware
/// findings are its own, not the job's, and no hop of the log is annotated.
fn warn_if_not_in_log(snapshot: &Snapshot, report: &topo_model::nccl::NcclReport) {
    let Some(host) = snapshot.host.hostname.as_deref() else { return };
    let short = host.split('.').next().unwrap_or(host);
    if report.hosts.is_empty() || report.hosts.iter().any(|h| h == host || h == short) {
        return;
    }
    let mut named = report.hosts.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if report.hosts.len() > 5 {
        named.push_str(&format!(" and {} more", report.hosts.len() - 5));
    }
    crate::output::warn(&format!(
        "the given node ({host}) is not among the log's hosts ({named}): its hardware findings are its own, and no \
         hop of the log is judged against it"
    ));
}

/// Says on stderr which readable inputs held no NCCL output at all, and
/// whether that was every input: then there is nothing to judge, and a
/// `--fail-on` gate must not pass on the wrong file (exit 2).
pub(super) fn no_nccl_output(report: &topo_model::nccl::NcclReport) -> bool {
    let readable: Vec<&topo_model::nccl::InputSummary> = report.inputs.iter().filter(|i| i.error.is_none()).collect();
    for input in readable.iter().filter(|i| i.nccl_lines == 0) {
        crate::output::warn(&format!(
            "{}: nothing in it was NCCL output ({} lines; no NCCL INFO/WARN line and no NCCL error from a framework)",
            input.name, input.lines
        ));
    }
    let none = !readable.is_empty() && readable.iter().all(|i| i.nccl_lines == 0);
    if none {
        eprintln!("topo: error: no NCCL output in the input: is this the job's log (NCCL_DEBUG=INFO or WARN)?");
    }
    none
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
