//! Command-line interface: argument definitions and dispatch.

mod logs;
mod node;
mod report;
mod show;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use topo_model::{Snapshot, Source};

use crate::output;
use crate::sources::{self, Origin};

use logs::{DiagnoseArgs, NcclArgs};
use node::{ClusterArgs, PreflightArgs, ProbeArgs};
use report::ReportArgs;
pub use show::expand_output;
use show::{ShowArgs, SnapshotArgs};

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
    /// Measure this node's GPUs live: copies, P2P, NCCL collectives, the multi-node rendezvous (docs/probe.md).
    Probe(ProbeArgs),
    /// Write one self-contained HTML file: summary, matrix, picture, PCIe tree, rings, findings (docs/report.md).
    Report(ReportArgs),
    /// List the bundled example machines.
    Examples,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum ReportFormat {
    Plain,
    /// The documented interface (the file is named in `--format`'s help).
    Json,
    Yaml,
}

/// Where the machine description comes from. With none of these, this machine is probed.
#[derive(Args)]
pub(super) struct OriginArgs {
    /// Read sysfs and procfs under DIR instead of `/` (a captured tree).
    #[arg(long, value_name = "DIR", default_value = "/", conflicts_with_all = ["from", "example"])]
    pub(super) sysfs_root: PathBuf,
    /// Read an NCCL topology XML file (NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE), pasted
    /// `nvidia-smi topo -m` text, pasted `lspci -tv` and/or `lspci -vvv` text, or a
    /// topo snapshot (YAML or JSON).
    #[arg(long, value_name = "FILE", conflicts_with = "example")]
    pub(super) from: Option<PathBuf>,
    /// Use a bundled real machine (see `topo examples`).
    #[arg(long, value_name = "NAME")]
    pub(super) example: Option<String>,
    /// Do not ask the NVIDIA driver (NVML); the view then comes from sysfs alone.
    #[arg(long)]
    pub(super) no_nvml: bool,
}

impl OriginArgs {
    /// Whether the machine comes from a file or example rather than a probe now.
    pub(super) fn replays(&self) -> bool {
        self.from.is_some() || self.example.is_some()
    }

    pub(super) fn load(&self) -> anyhow::Result<Snapshot> {
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

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Show(args) => show::show(args),
        Command::Snapshot(args) => show::snapshot(args),
        Command::Nccl(args) => logs::nccl(args),
        Command::Diagnose(args) => logs::diagnose(args),
        Command::Preflight(args) => node::preflight(args),
        Command::Cluster(args) => node::cluster(args),
        Command::Probe(args) => node::probe(args),
        Command::Report(args) => report::report(args),
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

/// Warnings and notices the run raised, on stderr. Replaying a snapshot that
/// was recorded on a machine (`replayed`, source sysfs) shows its warnings as
/// recorded then, not as if this machine raised them now.
pub(super) fn report_notices(snapshot: &Snapshot, replayed: bool) {
    let recorded = replayed && matches!(snapshot.source, Source::Sysfs { .. });
    for warning in &snapshot.notices {
        match recorded {
            true => output::warn(&format!("recorded in the snapshot: {warning}")),
            false => output::warn(warning),
        }
    }
    let nvml_missing = snapshot.notices.iter().any(|n| n.starts_with(sources::NO_NVML_NOTICE));
    if snapshot.topology.gpus.is_empty() && matches!(snapshot.source, Source::Sysfs { .. }) && !nvml_missing {
        output::notice("no NVIDIA GPU found; showing the CPU, NUMA, PCI and network view");
    }
}
