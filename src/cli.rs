//! Command-line interface: argument definitions and dispatch.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use topo_model::{Snapshot, Source};

use crate::output;
use crate::sources::{self, Origin};
use crate::views;

#[derive(Parser)]
#[command(name = "topo", version, about = "GPU cluster topology inspector and NCCL diagnostics", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show how the GPUs, NICs, PCIe switches and NUMA nodes are wired.
    Show(ShowArgs),
    /// Record this machine (or a capture, file or example) as a replayable snapshot.
    Snapshot(SnapshotArgs),
    /// Read NCCL_DEBUG=INFO logs: communicators, rings, trees and the transport of every hop.
    Nccl(NcclArgs),
    /// Find what makes an NCCL job slow or broken: log facts, checked against the node's hardware.
    Diagnose(DiagnoseArgs),
    /// Pass/fail this node before it takes a training job (exit 0 pass, 1 fail, 2 could not run).
    Preflight(PreflightArgs),
    /// Make sense of many nodes' snapshots: hardware classes and the nodes that differ.
    Cluster(ClusterArgs),
    /// Live probes on the GPUs (this build: the multi-node rendezvous check and the library search).
    Probe(ProbeArgs),
    /// List the bundled example machines.
    Examples,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PreflightFormat {
    Plain,
    Json,
    Yaml,
    /// JUnit XML, one test case per check, for CI systems.
    Junit,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProbeLevel {
    None,
    Quick,
    Full,
}

#[derive(Args)]
struct PreflightArgs {
    #[command(flatten)]
    origin: OriginArgs,
    /// Expectations (YAML) the node must meet; see docs/preflight.md.
    #[arg(long, value_name = "FILE")]
    expect: Option<PathBuf>,
    /// Write this node's facts as expectations for its siblings, then check against them.
    #[arg(long, value_name = "FILE", conflicts_with = "expect")]
    write_expect: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "plain")]
    format: PreflightFormat,
    /// Live bandwidth checks (they arrive with `topo probe`).
    #[arg(long, value_enum, default_value = "none")]
    probe: ProbeLevel,
}

#[derive(Args)]
struct ProbeArgs {
    /// Only meet the other ranks through the launcher's environment (torchrun,
    /// Slurm, Open MPI, PMI) and exchange an id, as before a collective.
    #[arg(long)]
    check_rendezvous: bool,
    /// Rank 0's address when the launcher does not give MASTER_ADDR.
    #[arg(long, value_name = "HOST[:PORT]")]
    master: Option<String>,
    /// Every rank gives up after this many seconds, naming the missing ranks.
    #[arg(long, value_name = "SECONDS", default_value = "60")]
    timeout: u64,
    /// libnccl.so.2 (or its directory) when it is not found on its own.
    /// (Or the TOPO_NCCL_LIBRARY environment variable.)
    #[arg(long, value_name = "PATH")]
    nccl_lib: Option<PathBuf>,
}

#[derive(Args)]
struct ClusterArgs {
    /// Directories of snapshots (and one level of subdirectories), or files.
    #[arg(required = true, value_name = "DIR")]
    inputs: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "plain")]
    format: ReportFormat,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FailOn {
    Info,
    Warning,
    Error,
    Never,
}

#[derive(Args)]
struct DiagnoseArgs {
    /// NCCL_DEBUG=INFO logs (files, .gz, directories, `-` for stdin), as for `topo nccl`;
    /// none when `--from` names a snapshot that holds a report (`snapshot --nccl-log`).
    #[arg(value_name = "LOG")]
    inputs: Vec<PathBuf>,
    /// A snapshot or NCCL topology XML of the node the job ran on. Without it, on a
    /// GPU node that appears in the log, this machine is probed.
    #[arg(long, value_name = "FILE")]
    from: Option<PathBuf>,
    /// Judge the log alone: do not probe this machine.
    #[arg(long, conflicts_with = "from")]
    log_only: bool,
    #[arg(long, value_enum, default_value = "plain")]
    format: ReportFormat,
    /// Exit 1 when a finding is at least this severe.
    #[arg(long, value_enum, default_value = "never")]
    fail_on: FailOn,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ReportFormat {
    Plain,
    /// The documented interface: docs/nccl-report.md.
    Json,
    Yaml,
}

#[derive(Args)]
struct NcclArgs {
    /// Log files (plain or .gz), directories of NCCL_DEBUG_FILE outputs, or `-` for stdin.
    /// A snapshot or NCCL topology file among them is taken as `--from`.
    #[arg(required = true, value_name = "LOG")]
    inputs: Vec<PathBuf>,
    /// A snapshot or NCCL topology XML of the machine the ranks ran on: every
    /// same-host hop gets the hardware path between its two GPUs.
    #[arg(long, value_name = "FILE")]
    from: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "plain")]
    format: ReportFormat,
}

/// Where the machine description comes from. With none of these, this machine is probed.
#[derive(Args)]
struct OriginArgs {
    /// Read sysfs and procfs under DIR instead of `/` (a captured tree).
    #[arg(long, value_name = "DIR", default_value = "/", conflicts_with_all = ["from", "example"])]
    sysfs_root: PathBuf,
    /// Read an NCCL topology XML file (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE), pasted
    /// `nvidia-smi topo -m` text, or a topo snapshot (YAML or JSON).
    #[arg(long, value_name = "FILE", conflicts_with = "example")]
    from: Option<PathBuf>,
    /// Use a bundled real machine (see `topo examples`).
    #[arg(long, value_name = "NAME")]
    example: Option<String>,
    /// Do not ask the NVIDIA driver (NVML); the view then comes from sysfs alone.
    #[arg(long)]
    no_nvml: bool,
}

impl OriginArgs {
    fn load(&self) -> anyhow::Result<Snapshot> {
        let origin = match (&self.from, &self.example) {
            (Some(path), _) => Origin::File(path),
            (None, Some(name)) => Origin::Example(name),
            (None, None) => {
                Origin::Sysfs { root: &self.sysfs_root, nvml: !self.no_nvml && self.sysfs_root == Path::new("/") }
            }
        };
        sources::load(origin)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ShowFormat {
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
struct ShowArgs {
    #[command(flatten)]
    origin: OriginArgs,
    /// Print the plain text view instead of opening the terminal UI (the UI opens
    /// only when stdout is a terminal).
    #[arg(long)]
    plain: bool,
    #[arg(long, value_enum, default_value = "plain")]
    format: ShowFormat,
    /// NCCL_DEBUG=INFO logs for the UI's NCCL, Bandwidth and Findings screens.
    #[arg(long, value_name = "LOG", num_args = 1..)]
    nccl_log: Vec<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SnapshotFormat {
    Yaml,
    Json,
}

#[derive(Args)]
struct SnapshotArgs {
    #[command(flatten)]
    origin: OriginArgs,
    /// Write to FILE instead of stdout. `%h` becomes the host name and `%j` the
    /// launcher's job id (Slurm, PBS, LSF, Flux, torchrun), so one path serves a
    /// whole job: `srun topo snapshot -o /shared/topo/%j/%h.json`.
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Defaults to JSON when FILE ends in `.json`, else YAML.
    #[arg(long, value_enum)]
    format: Option<SnapshotFormat>,
    /// NCCL_DEBUG=INFO logs of a job on this node: parsed, annotated with the
    /// hardware paths and kept in the snapshot.
    #[arg(long, value_name = "LOG", num_args = 1..)]
    nccl_log: Vec<PathBuf>,
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Show(args) => show(args),
        Command::Snapshot(args) => snapshot(args),
        Command::Nccl(args) => nccl(args),
        Command::Diagnose(args) => diagnose(args),
        Command::Preflight(args) => preflight(args),
        Command::Cluster(args) => cluster(args),
        Command::Probe(args) => probe(args),
        Command::Examples => {
            let mut text = String::new();
            for example in crate::examples::EXAMPLES {
                text.push_str(&format!("{:<22} {}\n", example.name, example.description));
            }
            output::print(&text)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Warnings and notices the run raised, on stderr; replaying a snapshot raises
/// the same ones.
fn report_notices(snapshot: &Snapshot) {
    for warning in &snapshot.notices {
        output::warn(warning);
    }
    let nvml_missing = snapshot.notices.iter().any(|n| n.starts_with(sources::NO_NVML_NOTICE));
    if snapshot.topology.gpus.is_empty() && matches!(snapshot.source, Source::Sysfs { .. }) && !nvml_missing {
        output::notice("no NVIDIA GPU found; showing the CPU, NUMA, PCI and network view");
    }
}

fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    let interactive = args.format == ShowFormat::Plain && !args.plain && std::io::stdout().is_terminal();
    if interactive && args.origin.from.is_none() && args.origin.example.is_none() {
        eprintln!("topo: probing this machine (sysfs, NVML)...");
    }
    if let Some(dir) = args.origin.from.as_deref().filter(|p| p.is_dir()) {
        return show_cluster(dir, &args, interactive);
    }
    let snapshot = args.origin.load()?;
    report_notices(&snapshot);
    if interactive {
        return show_ui(snapshot, &args.nccl_log, None);
    }
    let text = match args.format {
        ShowFormat::Plain => views::plain::render(&snapshot, output::colour_stdout()),
        ShowFormat::Json => views::document::json(&snapshot),
        ShowFormat::Yaml => views::document::yaml(&snapshot),
        ShowFormat::Dot => views::dot::render(&snapshot.topology),
        ShowFormat::NcclXml => topo_parsers::nccl_xml::to_xml(&snapshot.topology),
    };
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

fn snapshot(args: SnapshotArgs) -> anyhow::Result<ExitCode> {
    let mut snapshot = args.origin.load()?;
    report_notices(&snapshot);
    if !args.nccl_log.is_empty() {
        let mut report = sources::nccl_report(&args.nccl_log);
        for error in report.inputs.iter().filter_map(|i| i.error.as_deref()) {
            eprintln!("topo: error: {error}");
        }
        report.annotate(&snapshot.topology, snapshot.host.hostname.as_deref());
        snapshot.nccl = Some(report);
    }
    let json_by_name = args.output.as_ref().is_some_and(|p| p.extension().is_some_and(|e| e == "json"));
    let format = args.format.unwrap_or(if json_by_name { SnapshotFormat::Json } else { SnapshotFormat::Yaml });
    let text = match format {
        SnapshotFormat::Yaml => snapshot.to_yaml(),
        SnapshotFormat::Json => snapshot.to_json() + "\n",
    };
    match &args.output {
        Some(pattern) => {
            let path = expand_output(pattern, snapshot.host.hostname.as_deref());
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).with_context(|| format!("{}: cannot create", parent.display()))?;
            }
            std::fs::write(&path, text).with_context(|| format!("{}: cannot write", path.display()))?
        }
        None => output::print(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn nccl(args: NcclArgs) -> anyhow::Result<ExitCode> {
    // A snapshot or topology file given among the logs describes the machine, as `--from` does.
    let (machines, logs): (Vec<PathBuf>, Vec<PathBuf>) =
        args.inputs.iter().cloned().partition(|p| args.from.is_none() && sources::is_machine_description(p));
    let from = args.from.clone().or_else(|| machines.first().cloned());
    let machine = from.as_deref().map(|path| sources::load(Origin::File(path))).transpose()?;
    let mut report = sources::nccl_report(&logs);
    if let Some(snapshot) = &machine {
        let annotated = report.annotate(&snapshot.topology, snapshot.host.hostname.as_deref());
        if annotated == 0 {
            output::warn("no connection joins two GPUs of the given machine (ranks need bus IDs from init lines)");
        }
    }
    let failed: Vec<&topo_model::nccl::InputSummary> = report.inputs.iter().filter(|i| i.error.is_some()).collect();
    for input in &failed {
        eprintln!("topo: error: {}", input.error.as_deref().unwrap_or_default());
    }
    let text = match args.format {
        ReportFormat::Plain => views::nccl::render(&report),
        ReportFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        ReportFormat::Yaml => topo_model::snapshot::to_yaml_string(&report),
    };
    output::print(&text)?;
    Ok(if failed.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

fn diagnose(args: DiagnoseArgs) -> anyhow::Result<ExitCode> {
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
        eprintln!("topo: error: {error}");
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

fn preflight(args: PreflightArgs) -> anyhow::Result<ExitCode> {
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

/// This machine, when it is a GPU node (NVML answers) and the log is from it
/// (its hostname among the log's hosts, or a log that names none).
fn this_gpu_node_in(report: &topo_model::nccl::NcclReport) -> Option<Snapshot> {
    let snapshot = sources::load(Origin::Sysfs { root: Path::new("/"), nvml: true }).ok()?;
    let has_gpus = snapshot.nvml.as_ref().is_some_and(|n| n.answered().next().is_some());
    let host = snapshot.host.hostname.as_deref()?;
    let in_log = report.hosts.is_empty() || report.hosts.iter().any(|h| h == host || h.split('.').next() == Some(host));
    (has_gpus && in_log).then_some(snapshot)
}

/// `show --from DIR`: a directory of node snapshots. The UI opens on the
/// cluster screen (on the first outlier's node); otherwise the cluster report.
fn show_cluster(dir: &Path, args: &ShowArgs, interactive: bool) -> anyhow::Result<ExitCode> {
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
    show_ui(snapshot, &args.nccl_log, Some(topo_tui::ClusterView { report, open }))
}

/// Opens the terminal UI on `snapshot`, with the findings for it (and for the
/// logs, when given) computed first: the UI only draws.
fn show_ui(snapshot: Snapshot, logs: &[PathBuf], cluster: Option<topo_tui::ClusterView>) -> anyhow::Result<ExitCode> {
    // Logs given now win over a report the snapshot carries.
    let nccl = match logs.is_empty() {
        true => snapshot.nccl.clone(),
        false => {
            let mut report = sources::nccl_report(logs);
            report.annotate(&snapshot.topology, snapshot.host.hostname.as_deref());
            Some(report)
        }
    };
    if let Some(report) = &nccl {
        for input in report.inputs.iter().filter_map(|i| i.error.as_deref()) {
            eprintln!("topo: error: {input}");
        }
    }
    let findings = match &nccl {
        Some(report) => crate::diagnose::diagnose(report, Some(&snapshot)),
        None => crate::checks::hardware(&snapshot),
    };
    let mut app = topo_tui::App::new(topo_tui::UiData { snapshot, nccl, findings, cluster });
    topo_tui::terminal::run(&mut app).context("terminal UI")?;
    Ok(ExitCode::SUCCESS)
}

/// The job id the launcher gave this process, for `%j`.
const JOB_ID_VARIABLES: [&str; 6] =
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

fn cluster(args: ClusterArgs) -> anyhow::Result<ExitCode> {
    let report = crate::cluster::load(&args.inputs)?;
    let text = match args.format {
        ReportFormat::Plain => crate::cluster::render(&report),
        ReportFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
        ReportFormat::Yaml => topo_model::snapshot::to_yaml_string(&report),
    };
    output::print(&text)?;
    Ok(if report.nodes == 0 { ExitCode::from(2) } else { ExitCode::SUCCESS })
}

fn probe(args: ProbeArgs) -> anyhow::Result<ExitCode> {
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
