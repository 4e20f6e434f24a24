//! What the environment asked for that NCCL did not set up: NVLS named in
//! `NCCL_ALGO` (or forced with `NCCL_NVLS_ENABLE=1`) and a communicator that
//! printed `0 nvls channels`; the same for CollNet; a network plugin named in
//! `NCCL_NET_PLUGIN` that NCCL could not load. NCCL says nothing more (an
//! INFO line at most): the user who asked expects it used.

use topo_model::nccl::{ChannelCounts, Communicator, NcclReport};
use topo_model::{Evidence, Finding};

use super::Inputs;
use super::evidence::{fact, first_line};

/// One algorithm family that can be asked for and its channel count.
struct Requestable {
    /// The class of the finding when it was not set up.
    class: &'static str,
    /// Its name in the finding's title.
    family: &'static str,
    /// Names in `NCCL_ALGO` that ask for it, lower case (NCCL docs,
    /// "NCCL_ALGO": Ring, Tree, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT).
    algo_names: &'static [&'static str],
    /// The variable that forces it on with `1` (NCCL docs: NCCL_NVLS_ENABLE,
    /// NCCL_COLLNET_ENABLE).
    enable: &'static str,
    /// Its channels in `N coll channels, N collnet channels, N nvls channels, ...`,
    /// and their word there.
    channels: fn(&ChannelCounts) -> Option<u32>,
    channel_word: &'static str,
    /// Whether NCCL would try it on this communicator at all: NVLS needs more
    /// than two GPUs in a node (transport/nvls.cc, `gpuCount <= 2`); CollNet
    /// needs several nodes (below NCCL_COLLNET_NODE_THRESHOLD NCCL says so itself).
    applies: fn(&Communicator) -> bool,
    /// What usually keeps it off, for the finding's why.
    why: &'static str,
    fix: &'static str,
}

const NVLS: Requestable = Requestable {
    class: "nvls-failure",
    family: "NVLS (NVLink SHARP)",
    algo_names: &["nvls", "nvlstree"],
    enable: "NCCL_NVLS_ENABLE",
    channels: |c| c.nvls,
    channel_word: "nvls",
    applies: |c| match (c.nranks, c.nnodes) {
        (Some(ranks), Some(nodes)) if nodes > 0 => ranks / nodes > 2,
        (Some(ranks), None) => ranks > 2,
        _ => false,
    },
    why: "NCCL_ALGO or NCCL_NVLS_ENABLE asks for NVLink SHARP, but NCCL set up no NVLS channel: the GPUs' \
              multicast support was reported absent (no NVSwitch, a driver or CUDA older than 12.1, the fabric \
              manager not running or the GPUs not in one NVLink partition, a container without the IMEX/fabric \
              channel), so the collectives run without it.",
    fix: "On NVSwitch machines: systemctl status nvidia-fabricmanager, nvidia-smi -q | grep -i -A2 fabric, and \
              the driver's CUDA version (>= 12.1); NCCL_DEBUG_SUBSYS=INIT prints `NVLS multicast support is not \
              available on dev N`. Where the hardware has no NVSwitch, drop NVLS from NCCL_ALGO.",
};

const COLLNET: Requestable = Requestable {
    class: "collnet-failure",
    family: "CollNet (SHARP)",
    algo_names: &["collnet", "collnetdirect", "collnetchain"],
    enable: "NCCL_COLLNET_ENABLE",
    channels: |c| c.collnet,
    channel_word: "collnet",
    applies: |c| c.nnodes.is_some_and(|n| n > 1),
    why: "NCCL_ALGO or NCCL_COLLNET_ENABLE asks for CollNet (SHARP in-network reduction), but NCCL set up no \
              CollNet channel: the net plugin offers no CollNet (HPC-X's SHARP plugin not loaded), or SHARP \
              resources could not be had, so reductions run on the GPUs.",
    fix: "Check the SHARP plugin loaded (`NET/Plugin: Loaded coll plugin SHARP`), sharp_am is running and \
              SHARP_COLL_* limits; the same NCCL_COLLNET_ENABLE on every rank.",
};

/// Whether an `NCCL_ALGO` value asks for one of `names`: a list
/// (`Tree,Ring,NVLS`), per-collective (`allreduce:nvls,tree;broadcast:ring`,
/// 2.24+); a list that starts with `^` excludes what it names.
fn algo_asks_for(value: &str, names: &[&str]) -> bool {
    value.split(';').any(|part| {
        let list = part.rsplit_once(':').map_or(part, |(_, l)| l).trim();
        !list.starts_with('^') && list.split(',').any(|name| names.iter().any(|n| name.trim().eq_ignore_ascii_case(n)))
    })
}

/// The settings that asked for `wanted`, as evidence.
fn requests(report: &NcclReport, wanted: &Requestable) -> Vec<Evidence> {
    report
        .env_overrides
        .iter()
        .filter(|e| {
            (e.name == "NCCL_ALGO" && algo_asks_for(&e.value, wanted.algo_names))
                || (e.name == wanted.enable && e.value.trim() == "1")
        })
        .map(|e| first_line(report, &format!("env/{}={}", e.name, e.value), format!("{}={}", e.name, e.value), ""))
        .collect()
}

pub(super) fn nvls_not_set_up(inputs: &Inputs) -> Option<Finding> {
    not_set_up(inputs.report, &NVLS)
}

pub(super) fn collnet_not_set_up(inputs: &Inputs) -> Option<Finding> {
    not_set_up(inputs.report, &COLLNET)
}

fn not_set_up(report: &NcclReport, wanted: &Requestable) -> Option<Finding> {
    let mut evidence = requests(report, wanted);
    if evidence.is_empty() {
        return None;
    }
    let without: Vec<&Communicator> = report
        .communicators
        .iter()
        .filter(|c| (wanted.applies)(c) && c.channels.as_ref().and_then(wanted.channels) == Some(0))
        .collect();
    if without.is_empty() {
        return None;
    }
    for comm in without.iter().take(4) {
        let size = comm.nranks.map_or(String::new(), |n| format!("{n}-rank "));
        let named = if comm.id == "unidentified" { String::new() } else { format!(" {}", comm.id) };
        let text = format!("{size}communicator{named}: 0 {} channels", wanted.channel_word);
        evidence.push(fact("channels", text));
    }
    let mut finding = super::messages::of_class(wanted.class, topo_model::Severity::Warning, evidence)?;
    finding.title = format!("{} was asked for but NCCL set up no channel for it", wanted.family);
    finding.why = wanted.why.to_string();
    finding.fix = wanted.fix.to_string();
    Some(finding)
}

/// NCCL_NET_PLUGIN's values that ask for no external plugin: `none` turns
/// them off (NCCL docs, "NCCL_NET_PLUGIN"), echoed as the library name NCCL
/// makes of it (`libnccl-net-%s.so`, net.cc 2.12-2.22; corpus 925).
const NO_PLUGIN: [&str; 3] = ["none", "", "libnccl-net-none.so"];

/// The report's `first_lines` keys of NCCL's echo of NCCL_NET_PLUGIN (with
/// the name after the slash) and of its fallback to the internal transports.
const ASKED: &str = "net-plugin-asked/";
const FELL_BACK: &str = "net-plugin-internal";

/// A network plugin named in NCCL_NET_PLUGIN (NCCL's echo `Plugin name set by
/// env to NAME`, or the setting's own line) and NCCL's fallback to its
/// internal transports (`No plugin found (NAME), using internal
/// implementation`, `NET/Plugin: Could not find: NAME. Using internal network
/// plugin.`): the job runs on IB verbs or TCP sockets, not the fabric's
/// plugin (Slingshot's, EFA's, GPUDirect-TCPX's) it was set up for.
pub(super) fn net_plugin_not_loaded(inputs: &Inputs) -> Option<Finding> {
    let report = inputs.report;
    if !report.first_lines.contains_key(FELL_BACK) {
        return None;
    }
    let echoed = report.first_lines.keys().find_map(|key| Some((key, key.strip_prefix(ASKED)?)));
    let set = report.env_overrides.iter().find(|e| e.name == "NCCL_NET_PLUGIN");
    let (name, asked) = match (echoed, set) {
        (Some((key, name)), _) => {
            (name.to_string(), first_line(report, key, format!("Plugin name set by env to {name}"), ""))
        }
        (None, Some(e)) => (
            e.value.clone(),
            first_line(report, &format!("env/{}={}", e.name, e.value), format!("{}={}", e.name, e.value), ""),
        ),
        (None, None) => return None,
    };
    if NO_PLUGIN.contains(&name.trim().to_ascii_lowercase().as_str()) {
        return None;
    }
    let internal: Vec<String> = report
        .network
        .plugins_by_host
        .iter()
        .filter(|(_, p)| p.as_str() == "internal")
        .map(|(h, _)| h.clone())
        .collect();
    let fallback = first_line(report, FELL_BACK, "NET/Plugin: using internal implementation".into(), "");
    let used = report.network.used.first().map_or(String::new(), |n| format!("; NCCL uses network {n}"));
    let severity = match inputs.scope {
        super::Scope::SingleNode => topo_model::Severity::Info,
        _ => topo_model::Severity::Warning,
    };
    let mut finding = super::messages::of_class("net-plugin-failure", severity, vec![asked, fallback])?;
    finding.title = format!("The network plugin the job named ({name}) was not loaded{used}");
    finding.why = format!(
        "NCCL_NET_PLUGIN names {name}, but NCCL could not open it (not in LD_LIBRARY_PATH, not installed in \
         the container, or built for another NCCL) and fell back to its internal IB or socket transport \
         without a WARN: traffic between nodes does not take the fabric's plugin the job was set up for{}.",
        if severity == topo_model::Severity::Info {
            " (this job stays on one node, where the plugin carries nothing)"
        } else {
            ""
        }
    );
    finding.fix = format!(
        "Put the directory of {name} on LD_LIBRARY_PATH in every rank's environment (module load of the \
         plugin, the container's plugin path), or give its full path in NCCL_NET_PLUGIN; NCCL_DEBUG_SUBSYS=INIT,NET \
         then prints `Loaded net plugin` or `Successfully loaded external plugin`."
    );
    Some(finding.on(internal, []))
}

#[cfg(test)]
mod tests {
    use super::algo_asks_for;

    #[test]
    fn nccl_algo_values_are_read_as_nccl_reads_them() {
        let nvls = &["nvls", "nvlstree"];
        // Corpus 1784 (NVIDIA/nccl#892): an empty entry does not hide NVLS.
        assert!(algo_asks_for("Tree,Ring,,CollnetDirect,CollnetChain,NVLS", nvls));
        assert!(algo_asks_for("allreduce:nvls,tree;broadcast:ring", nvls));
        assert!(algo_asks_for("NVLSTree", nvls));
        assert!(!algo_asks_for("^NVLS", nvls));
        assert!(!algo_asks_for("allreduce:^nvls", nvls));
        assert!(!algo_asks_for("Ring,Tree", nvls));
        assert!(!algo_asks_for("NVLSX", nvls));
    }
}
