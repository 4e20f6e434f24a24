//! Many nodes' snapshots made sense of: each node reduced to named facts, nodes
//! grouped into hardware classes, and within a class the nodes that differ
//! from the majority, ranked by how much. Pure: reading the files is the
//! caller's job.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::nvml::NvmlRecording;
use crate::{NicKind, Snapshot};

/// One node, reduced to what is compared across the cluster.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeFacts {
    pub host: String,
    pub file: String,
    /// GPU model(s) and RDMA NIC kind: nodes of one class should be alike.
    pub class: String,
    /// `gpu.count`, `gpu3.nvlinks`, `gpu3.vbios`, `nic.mlx5_0`, `nic.mlx5_0.firmware`, `driver`,
    /// `finding.nvlink-inactive`, ...
    pub facts: BTreeMap<String, String>,
    /// Measured figures from a stored `topo probe` run (GB/s): compared with
    /// the class's median rather than matched exactly.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub measures: BTreeMap<String, f64>,
}

/// A node measuring below this share of its class's median is an outlier
/// (the same 10 % as the probe's straggler rule).
pub const MEASURE_SLACK: f64 = 0.9;

/// How much a difference in a fact counts when ranking outliers.
fn weight(fact: &str) -> u32 {
    match fact {
        "gpu.count" | "nic.count" | "nvswitch.count" => 10,
        f if f.starts_with("finding.") => 6,
        f if f.ends_with(".nvlinks") => 5,
        f if f.ends_with(".firmware") || f.ends_with(".vbios") => 2,
        f if f.starts_with("nic.") => 4,
        f if f.ends_with(".pcie") => 3,
        f if f.starts_with("probe.") => 4,
        "driver" | "cuda" => 2,
        _ => 1,
    }
}

impl NodeFacts {
    /// Facts from a snapshot; `findings` are the codes of the node's own
    /// hardware findings (warning or worse), which become `finding.<code>` facts.
    pub fn from_snapshot(snapshot: &Snapshot, file: &str, findings: &[String]) -> NodeFacts {
        let topology = &snapshot.topology;
        let mut facts = BTreeMap::new();
        let mut models: Vec<String> =
            topology.gpus.iter().map(|g| g.name.clone().unwrap_or_else(|| "unknown GPU".into())).collect();
        models.sort();
        models.dedup();
        facts.insert("gpu.count".to_string(), topology.gpus.len().to_string());
        facts.insert("gpu.model".to_string(), models.join(", "));
        facts.insert("nvswitch.count".to_string(), topology.nvswitches.len().to_string());
        let nvml = snapshot.nvml.as_ref();
        for (i, gpu) in topology.gpus_in_order().into_iter().enumerate() {
            let label = format!("gpu{}", gpu.index.unwrap_or(i as u32));
            let nvlinks = match nvml.and_then(|n| active_links(n, gpu.bus_id)) {
                Some(active) => active,
                None => topology.nvlinks.iter().filter(|b| b.gpu == gpu.bus_id).map(|b| b.links).sum(),
            };
            facts.insert(format!("{label}.nvlinks"), nvlinks.to_string());
            let vbios = nvml
                .and_then(|n| n.answered().find(|(_, d)| d.bus_id() == Some(gpu.bus_id)))
                .and_then(|(_, d)| d.vbios_version.ok().cloned());
            if let Some(vbios) = vbios {
                facts.insert(format!("{label}.vbios"), vbios);
            }
            if let Some(device) = topology.pci(gpu.bus_id) {
                let part = |v: Option<u8>| v.map_or("?".to_string(), |v| v.to_string());
                let (max, now) = (device.link.max, device.link.current);
                // The current generation is left out: idle GPUs lower it.
                let text = format!("max {}, trained x{}", max.label(), part(now.width));
                facts.insert(format!("{label}.pcie"), text);
            }
        }
        let rdma: Vec<&crate::Nic> = topology.nics.iter().filter(|n| n.kind != NicKind::Ethernet).collect();
        facts.insert("nic.count".to_string(), rdma.len().to_string());
        for nic in &rdma {
            let ports: Vec<String> = nic
                .ports
                .iter()
                .map(|p| {
                    let rate = p.rate_gbps.map_or(String::new(), |r| format!(" {r} Gb/s"));
                    format!("port {} {}{rate}", p.port, p.state.as_deref().unwrap_or("?"))
                })
                .collect();
            facts.insert(format!("nic.{}", nic.name), ports.join(", "));
            if let Some(firmware) = &nic.firmware {
                facts.insert(format!("nic.{}.firmware", nic.name), firmware.clone());
            }
        }
        if let Some(nvml) = nvml {
            if let Some(driver) = nvml.driver_version.ok() {
                facts.insert("driver".to_string(), driver.clone());
            }
            if let Some(cuda) = nvml.cuda_version().ok() {
                facts.insert("cuda".to_string(), cuda.clone());
            }
        }
        if let Some(kernel) = &snapshot.host.kernel {
            facts.insert("kernel".to_string(), kernel.clone());
        }
        for code in findings {
            facts.insert(format!("finding.{code}"), "present".to_string());
        }
        let kinds: Vec<String> = {
            // Ethernet-only NICs were left out of `rdma` above.
            let mut k: Vec<String> = rdma.iter().map(|n| n.kind.label().to_string()).collect();
            k.sort();
            k.dedup();
            k
        };
        let nics = if kinds.is_empty() { "no RDMA".to_string() } else { kinds.join("+") };
        NodeFacts {
            host: snapshot.host.hostname.clone().unwrap_or_else(|| file.to_string()),
            file: file.to_string(),
            class: format!("{} / {nics}", if models.is_empty() { "no GPU".into() } else { models.join(" + ") }),
            facts,
            measures: snapshot.probe.as_ref().map(measures).unwrap_or_default(),
        }
    }
}

/// The figures nodes of one class should share: the slowest GPU's host
/// copies, the slowest peer copy, and each collective's best bus bandwidth.
fn measures(report: &crate::measure::ProbeReport) -> BTreeMap<String, f64> {
    use crate::measure::CopyKind;
    let mut out = BTreeMap::new();
    for (kind, name) in [
        (CopyKind::HostToDevice, "probe.h2d_min_gbps"),
        (CopyKind::DeviceToHost, "probe.d2h_min_gbps"),
        (CopyKind::Peer, "probe.p2p_min_gbps"),
    ] {
        let slowest = report
            .copies
            .iter()
            .filter(|c| c.kind == kind && c.error.is_none())
            .map(|c| c.bandwidth.gbps())
            .reduce(f64::min);
        if let Some(value) = slowest {
            out.insert(name.to_string(), value);
        }
    }
    for result in &report.collectives {
        let best = result.rows.iter().map(|r| r.busbw.gbps()).fold(0.0, f64::max);
        out.insert(format!("probe.{}_busbw_gbps", result.collective.name()), best);
    }
    out
}

/// `node`'s measures below [`MEASURE_SLACK`] x the median of the class's
/// nodes that have the same measure.
fn slow_measures(node: &NodeFacts, nodes: &[NodeFacts]) -> Vec<Difference> {
    node.measures
        .iter()
        .filter_map(|(key, value)| {
            let all: Vec<f64> = nodes.iter().filter_map(|n| n.measures.get(key).copied()).collect();
            let median = crate::collective::median(all.iter().copied())?;
            (all.len() >= 2 && *value < median * MEASURE_SLACK).then(|| Difference {
                fact: key.clone(),
                value: Some(format!("{value:.1}")),
                majority: Some(format!("median {median:.1}")),
                majority_nodes: all.len(),
            })
        })
        .collect()
}

fn active_links(nvml: &NvmlRecording, bus: crate::BusId) -> Option<u32> {
    let (_, device) = nvml.answered().find(|(_, d)| d.bus_id() == Some(bus))?;
    (!device.nvlinks.is_empty()).then(|| device.nvlinks.iter().filter(|l| l.active.ok() == Some(&true)).count() as u32)
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterReport {
    pub nodes: usize,
    pub classes: Vec<ClassReport>,
    /// Files that could not be read or parsed, with why.
    pub unreadable: Vec<(String, String)>,
    /// Files that are not topo snapshots.
    pub foreign: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassReport {
    pub class: String,
    pub hosts: Vec<String>,
    /// Each node's snapshot file, by host.
    pub files: Vec<(String, String)>,
    /// The majority value of every fact, with how many nodes share it.
    pub typical: BTreeMap<String, (String, usize)>,
    /// Nodes that differ from the majority, most different first.
    pub outliers: Vec<Outlier>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outlier {
    pub host: String,
    pub file: String,
    pub score: u32,
    pub differences: Vec<Difference>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    pub fact: String,
    /// `None`: the node lacks the fact (a GPU or NIC missing, no such finding).
    pub value: Option<String>,
    pub majority: Option<String>,
    /// How many nodes of the class have the majority value.
    pub majority_nodes: usize,
}

const ABSENT: &str = "\u{0}absent";

/// Groups the nodes into classes and finds, in each, the nodes that differ
/// from the majority on any fact.
pub fn analyse(nodes: Vec<NodeFacts>, unreadable: Vec<(String, String)>, foreign: Vec<String>) -> ClusterReport {
    let total = nodes.len();
    let mut by_class: BTreeMap<String, Vec<NodeFacts>> = BTreeMap::new();
    for node in nodes {
        by_class.entry(node.class.clone()).or_default().push(node);
    }
    let mut classes: Vec<ClassReport> = by_class.into_iter().map(|(class, nodes)| class_report(class, nodes)).collect();
    classes.sort_by(|a, b| b.hosts.len().cmp(&a.hosts.len()).then_with(|| a.class.cmp(&b.class)));
    ClusterReport { nodes: total, classes, unreadable, foreign }
}

fn class_report(class: String, nodes: Vec<NodeFacts>) -> ClassReport {
    // Every fact any node has; a node without it counts as "absent".
    let mut counts: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for node in &nodes {
        for key in node.facts.keys() {
            counts.entry(key.as_str()).or_default();
        }
    }
    for (key, values) in counts.iter_mut() {
        for node in &nodes {
            *values.entry(node.facts.get(*key).map_or(ABSENT, String::as_str)).or_default() += 1;
        }
    }
    let majority: BTreeMap<&str, (&str, usize)> = counts
        .iter()
        .map(|(key, values)| {
            let (value, n) = values
                .iter()
                .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
                .map_or((ABSENT, 0), |(v, n)| (*v, *n));
            (*key, (value, n))
        })
        .collect();
    let present = |v: &str| (v != ABSENT).then(|| v.to_string());
    let mut outliers: Vec<Outlier> = nodes
        .iter()
        .filter_map(|node| {
            let differences: Vec<Difference> = majority
                .iter()
                .filter(|(key, (value, _))| node.facts.get(**key).map_or(ABSENT, String::as_str) != *value)
                .map(|(key, (value, n))| Difference {
                    fact: key.to_string(),
                    value: node.facts.get(*key).cloned(),
                    majority: present(value),
                    majority_nodes: *n,
                })
                .collect();
            let mut differences = differences;
            differences.extend(slow_measures(node, &nodes));
            let score = differences.iter().map(|d| weight(&d.fact)).sum();
            (!differences.is_empty()).then(|| Outlier {
                host: node.host.clone(),
                file: node.file.clone(),
                score,
                differences,
            })
        })
        .collect();
    outliers.sort_by(|a, b| b.score.cmp(&a.score).then_with(|| a.host.cmp(&b.host)));
    let typical = majority
        .iter()
        .filter(|(_, (v, _))| *v != ABSENT)
        .map(|(k, (v, n))| (k.to_string(), (v.to_string(), *n)))
        .collect();
    let mut hosts: Vec<String> = nodes.iter().map(|n| n.host.clone()).collect();
    hosts.sort();
    let mut files: Vec<(String, String)> = nodes.iter().map(|n| (n.host.clone(), n.file.clone())).collect();
    files.sort();
    ClassReport { class, hosts, files, typical, outliers }
}
