//! `topo report`: the one-file HTML report (docs/report.md).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{OriginArgs, report_notices};

#[derive(Args)]
pub(super) struct ReportArgs {
    #[command(flatten)]
    pub(super) origin: OriginArgs,
    /// NCCL_DEBUG=INFO logs of a job on this machine: rings and findings.
    #[arg(long, value_name = "LOG", num_args = 1..)]
    pub(super) nccl_log: Vec<PathBuf>,
    /// Write the HTML to FILE (written beside it and renamed into place);
    /// without it, to stdout.
    #[arg(short, long, value_name = "FILE")]
    pub(super) output: Option<PathBuf>,
}

pub(super) fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    if let Some(dir) = args.origin.from.as_deref().filter(|p| p.is_dir() && !crate::bundle::is_bundle(p)) {
        anyhow::bail!(
            "{}: a directory of snapshots is a cluster; the report describes one machine (pass one snapshot, or `topo cluster`)",
            dir.display()
        );
    }
    let mut snapshot = args.origin.load()?;
    report_notices(&snapshot, args.origin.replays());
    if !args.nccl_log.is_empty() {
        let Some(report) = super::show::read_logs(&args.nccl_log, &snapshot) else { return Ok(ExitCode::from(2)) };
        snapshot.nccl = Some(report);
    }
    // The findings as the UI shows them: the log's (with the hardware's) or the hardware's alone.
    let findings = match &snapshot.nccl {
        Some(report) => crate::diagnose::diagnose(report, Some(&snapshot)),
        None => crate::checks::hardware(&snapshot),
    };
    let html = crate::views::html::render(&snapshot, &findings);
    match &args.output {
        Some(path) => {
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
            if !parent.is_dir() {
                anyhow::bail!("{}: no such directory", parent.display());
            }
            super::show::write_atomically(path, html.as_bytes())?;
        }
        None => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(html.as_bytes())?;
            stdout.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
