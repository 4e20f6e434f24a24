//! `topo show` (plain view, formats, the terminal UI, a cluster directory) and
//! `topo snapshot`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use topo_model::Snapshot;

use super::{OriginArgs, report_notices};
use crate::output;
use crate::sources;
use crate::views;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum ShowFormat {
    /// The matrix like `nvidia-smi topo -m`, plus devices, NUMA nodes and the PCI tree.
    Plain,
    Json,
    Yaml,
    /// Graphviz: `topo show --format dot | dot -Tsvg > topo.svg`.
    Dot,
    /// NCCL topology XML, usable as NCCL_TOPO_FILE.
    NcclXml,
}

#[derive(Args)]
pub(super) struct ShowArgs {
    #[command(flatten)]
    pub(super) origin: OriginArgs,
    /// Print the plain text view instead of opening the terminal UI (the UI opens
    /// only when stdout is a terminal).
    #[arg(long)]
    pub(super) plain: bool,
    #[arg(long, value_enum, default_value = "plain")]
    pub(super) format: ShowFormat,
    /// NCCL_DEBUG=INFO logs for the UI's NCCL, Bandwidth and Findings screens.
    #[arg(long, value_name = "LOG", num_args = 1..)]
    pub(super) nccl_log: Vec<PathBuf>,
    /// PyTorch Flight Recorder dumps (files or a directory) for the Job screen.
    #[arg(long, value_name = "DUMPS", num_args = 1..)]
    pub(super) fr: Vec<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum SnapshotFormat {
    Yaml,
    Json,
}

#[derive(Args)]
pub(super) struct SnapshotArgs {
    #[command(flatten)]
    pub(super) origin: OriginArgs,
    /// Write to FILE instead of stdout. `%h` becomes the host name and `%j` the
    /// launcher's job id (Slurm, PBS, LSF, Flux, torchrun), so one path serves a
    /// whole job: `srun topo snapshot -o /shared/topo/%j/%h.json`.
    #[arg(short, long, value_name = "FILE")]
    pub(super) output: Option<PathBuf>,
    /// Defaults to JSON when FILE ends in `.json`, else YAML.
    #[arg(long, value_enum)]
    pub(super) format: Option<SnapshotFormat>,
    /// NCCL_DEBUG=INFO logs of a job on this node: parsed, annotated with the
    /// hardware paths and kept in the snapshot.
    #[arg(long, value_name = "LOG", num_args = 1..)]
    pub(super) nccl_log: Vec<PathBuf>,
}

pub(super) fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    let interactive = args.format == ShowFormat::Plain && !args.plain && std::io::stdout().is_terminal();
    if interactive && args.origin.from.is_none() && args.origin.example.is_none() {
        eprintln!("topo: probing this machine (sysfs, NVML)...");
    }
    if let Some(dir) = args.origin.from.as_deref().filter(|p| p.is_dir() && !crate::bundle::is_bundle(p)) {
        return show_cluster(dir, &args, interactive);
    }
    let mut snapshot = args.origin.load()?;
    report_notices(&snapshot, args.origin.replays());
    // Logs are read before anything is drawn: one that cannot be read is an
    // error now (exit 2), not a message after the UI closes.
    if !args.nccl_log.is_empty() {
        let Some(report) = read_logs(&args.nccl_log, &snapshot) else { return Ok(ExitCode::from(2)) };
        snapshot.nccl = Some(report);
    }
    if interactive {
        return show_ui(snapshot, &[], &args.fr, None);
    }
    if !args.fr.is_empty() {
        output::notice(
            "--fr feeds the UI's Job screen; for text or JSON use `topo nccl DUMPS` or `topo diagnose DUMPS`",
        );
    }
    let text = match args.format {
        ShowFormat::Plain => {
            let mut text = views::plain::render(&snapshot, output::colour_stdout());
            if let Some(report) = snapshot.nccl.as_ref().filter(|_| !args.nccl_log.is_empty()) {
                text.push('\n');
                text.push_str(&views::nccl::render(report));
            }
            text
        }
        ShowFormat::Json => views::document::json(&snapshot),
        ShowFormat::Yaml => views::document::yaml(&snapshot),
        ShowFormat::Dot => views::dot::render(&snapshot.topology),
        ShowFormat::NcclXml => topo_parsers::nccl_xml::to_xml(&snapshot.topology),
    };
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `show --from DIR`: a directory of node snapshots. The UI opens on the
/// cluster screen (on the first outlier's node); otherwise the cluster report.
pub(super) fn show_cluster(dir: &Path, args: &ShowArgs, interactive: bool) -> anyhow::Result<ExitCode> {
    let report = crate::cluster::load(&[dir.to_path_buf()])?;
    if !interactive {
        let text = match args.format {
            ShowFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
            ShowFormat::Yaml => topo_model::snapshot::to_yaml_string(&report),
            _ => crate::cluster::render(&report),
        };
        output::print(&text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let open: topo_tui::OpenNode = Box::new(|file: &str| {
        let snapshot = Snapshot::load(Path::new(file)).ok()?;
        let findings = crate::checks::hardware(&snapshot);
        Some((snapshot, findings))
    });
    let first = report.classes.first().and_then(|c| {
        c.outliers.first().map(|o| o.file.clone()).or_else(|| c.files.first().map(|(_, file)| file.clone()))
    });
    let Some((snapshot, _)) = first.as_deref().and_then(&open) else {
        anyhow::bail!("{}: no readable snapshot", dir.display());
    };
    show_ui(snapshot, &args.nccl_log, &args.fr, Some(topo_tui::ClusterView { report, open }))
}

/// The logs' report, annotated with the machine; `None` (errors said on
/// stderr) when an input could not be read or none held NCCL output.
pub(super) fn read_logs(logs: &[PathBuf], snapshot: &Snapshot) -> Option<topo_model::nccl::NcclReport> {
    let mut report = sources::nccl_report(logs);
    let failed: Vec<&str> = report.inputs.iter().filter_map(|i| i.error.as_deref()).collect();
    for error in &failed {
        eprintln!("topo: error: {error}");
    }
    if !failed.is_empty() || super::logs::no_nccl_output(&report) {
        return None;
    }
    report.annotate(&snapshot.topology, snapshot.host.hostname.as_deref());
    Some(report)
}

/// Opens the terminal UI on `snapshot`, with the findings for it (and for the
/// logs, when given) computed first: the UI only draws.
pub(super) fn show_ui(
    snapshot: Snapshot,
    logs: &[PathBuf],
    dumps: &[PathBuf],
    cluster: Option<topo_tui::ClusterView>,
) -> anyhow::Result<ExitCode> {
    // Logs given now win over a report the snapshot carries.
    let nccl = match logs.is_empty() {
        true => snapshot.nccl.clone(),
        false => match read_logs(logs, &snapshot) {
            Some(report) => Some(report),
            None => return Ok(ExitCode::from(2)),
        },
    };
    let mut findings = match &nccl {
        Some(report) => crate::diagnose::diagnose(report, Some(&snapshot)),
        None => crate::checks::hardware(&snapshot),
    };
    let dumps = crate::job_inputs::split(dumps).dumps;
    let job = (!dumps.is_empty()).then(|| {
        let job = crate::job_inputs::job_report(&dumps, nccl.as_ref().unwrap_or(&Default::default()));
        let mut hang = crate::diagnose::hang::findings(&job);
        hang.append(&mut findings);
        hang.sort_by_key(|f| std::cmp::Reverse(f.severity));
        findings = hang;
        job
    });
    let mut app = topo_tui::App::new(topo_tui::UiData { snapshot, nccl, findings, cluster });
    app.job = job;
    topo_tui::terminal::run(&mut app).context("terminal UI")?;
    Ok(ExitCode::SUCCESS)
}

pub(super) fn snapshot(args: SnapshotArgs) -> anyhow::Result<ExitCode> {
    let mut snapshot = args.origin.load()?;
    report_notices(&snapshot, args.origin.replays());
    if !args.nccl_log.is_empty() {
        let Some(report) = read_logs(&args.nccl_log, &snapshot) else { return Ok(ExitCode::from(2)) };
        snapshot.nccl = Some(report);
    }
    match &args.output {
        Some(pattern) => write_snapshot(&snapshot, pattern, args.format)?,
        None => output::print(&snapshot_text(&snapshot, args.format.unwrap_or(SnapshotFormat::Yaml)))?,
    }
    Ok(ExitCode::SUCCESS)
}

fn snapshot_text(snapshot: &Snapshot, format: SnapshotFormat) -> String {
    match format {
        SnapshotFormat::Yaml => snapshot.to_yaml(),
        SnapshotFormat::Json => snapshot.to_json() + "\n",
    }
}

/// Writes `snapshot` to `pattern` (`%h`, `%j` expanded), JSON when asked or
/// when the name ends in `.json`, else YAML. Only the pattern form creates
/// missing directories (`/shared/topo/%j/%h.json`: the job's directory); a
/// plain path whose directory is missing is an error. The file is written
/// beside its final name and renamed into place, so a reader sees the old
/// file or the new one, never half of one.
pub(super) fn write_snapshot(
    snapshot: &Snapshot,
    pattern: &Path,
    format: Option<SnapshotFormat>,
) -> anyhow::Result<()> {
    let json_by_name = pattern.extension().is_some_and(|e| e == "json");
    let format = format.unwrap_or(if json_by_name { SnapshotFormat::Json } else { SnapshotFormat::Yaml });
    let path = expand_output(pattern, snapshot.host.hostname.as_deref());
    let is_pattern = pattern.to_string_lossy().contains('%');
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if is_pattern {
        std::fs::create_dir_all(parent).with_context(|| format!("{}: cannot create", parent.display()))?;
    } else if !parent.is_dir() {
        anyhow::bail!("{}: no such directory (only a %j/%h pattern creates directories)", parent.display());
    }
    write_atomically(&path, snapshot_text(snapshot, format).as_bytes())
}

/// Writes `bytes` to a temporary file in `path`'s directory, then renames it
/// onto `path`.
pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.with_context(|| format!("{}: cannot write", path.display()))
}

/// The job id the launcher gave this process, for `%j`.
pub(super) const JOB_ID_VARIABLES: [&str; 6] =
    ["SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID", "TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid"];

/// `%h` -> host name, `%j` -> job id (`nojob` outside a launcher), `%%` -> `%`.
pub fn expand_output(pattern: &Path, hostname: Option<&str>) -> PathBuf {
    let text = pattern.to_string_lossy();
    if !text.contains('%') {
        return pattern.to_path_buf();
    }
    let host = hostname.map(|h| h.split('.').next().unwrap_or(h).to_string()).unwrap_or_else(|| "unknown-host".into());
    let job = JOB_ID_VARIABLES
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|j| !j.is_empty()))
        .unwrap_or_else(|| "nojob".into());
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, chars.clone().next()) {
            ('%', Some('h')) => out.push_str(&host),
            ('%', Some('j')) => out.push_str(&job),
            ('%', Some('%')) => out.push('%'),
            _ => {
                out.push(c);
                continue;
            }
        }
        chars.next();
    }
    PathBuf::from(out)
}
