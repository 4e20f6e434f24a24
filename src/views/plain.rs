//! The plain text view: the `nvidia-smi topo -m` matrix (GPUs and NICs, CPU and
//! NUMA affinity, legend), then devices, downtrained links, NUMA nodes, network
//! interfaces and the PCI tree.

use std::fmt::Write;

use topo_model::{Endpoint, PciDevice, SmiClass, Snapshot, Source, Topology};

use super::device_kind;

const LEGEND: &str = "Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
";

pub fn render(snapshot: &Snapshot, colour: bool) -> String {
    let topology = &snapshot.topology;
    let mut out = String::new();
    header(&mut out, snapshot);
    let endpoints = matrix(&mut out, topology, colour);
    if let Some(recording) = &snapshot.nvml {
        super::gpus::render(&mut out, recording, topology);
    }
    devices(&mut out, topology, &endpoints);
    downtrained(&mut out, topology);
    numa(&mut out, topology);
    interfaces(&mut out, topology);
    pci_tree(&mut out, topology, !endpoints.is_empty());
    if let Some(report) = &snapshot.probe {
        match report.launcher.as_deref().filter(|l| l.starts_with("nvbandwidth")) {
            // Pasted nvbandwidth figures (a bundle), held against the same paths.
            Some(run) => {
                let _ = writeln!(out, "\nMeasured by {run}\n");
            }
            None => {
                let driver = report.cuda_driver.as_deref().unwrap_or("?");
                let nccl = report.nccl_version.as_deref().unwrap_or("not used");
                let _ = writeln!(out, "\nLive probe (topo probe; CUDA driver {driver}, NCCL {nccl})\n");
            }
        }
        crate::probe::render::tables(&mut out, report);
    }
    if let Some(report) = snapshot.nccl.as_ref().filter(|r| !r.graph_dumps.is_empty()) {
        super::graph_dump::render(&mut out, &report.graph_dumps);
    }
    out
}

fn header(out: &mut String, snapshot: &Snapshot) {
    let source = match &snapshot.source {
        Source::Sysfs { root } => format!("sysfs under {root}"),
        Source::NcclXml { path } => format!("NCCL topology file {path}"),
        Source::Example { name } => format!("bundled example {name}"),
        Source::NvidiaSmiText { path } => format!("nvidia-smi topo -m text {path} (bus IDs synthetic)"),
        Source::Lspci { path } => format!("lspci text {path} (PCIe only: no NVLink)"),
        Source::Bundle { path } => format!("pasted outputs in {path}"),
    };
    let host = snapshot.host.hostname.as_deref().unwrap_or("(unnamed host)");
    let _ = writeln!(out, "{host}: {source}");
    let cpu = &snapshot.topology.cpu;
    let mut facts = Vec::new();
    facts.extend(cpu.describe());
    facts.extend(cpu.sockets.map(|s| format!("{s} socket{}", if s == 1 { "" } else { "s" })));
    facts.extend(cpu.logical_cpus.map(|c| format!("{c} logical CPUs")));
    facts.push(format!(
        "{} NUMA node{}",
        snapshot.topology.numa_nodes.len(),
        if snapshot.topology.numa_nodes.len() == 1 { "" } else { "s" }
    ));
    let _ = writeln!(out, "CPU: {}", facts.join(", "));
    out.push('\n');
}

fn paint(text: &str, class: SmiClass, colour: bool) -> String {
    if !colour {
        return text.to_string();
    }
    let code = match class {
        SmiClass::Nv(_) => "32",
        SmiClass::Pix | SmiClass::Pxb => "36",
        SmiClass::Phb | SmiClass::Node => "33",
        SmiClass::Sys => "31",
        SmiClass::Same | SmiClass::Unknown => return text.to_string(),
    };
    format!("\x1b[{code}m{text}\x1b[0m")
}

/// Writes the matrix and returns its endpoints.
fn matrix(out: &mut String, topology: &Topology, colour: bool) -> Vec<Endpoint> {
    let matrix = topology.matrix();
    if matrix.endpoints.is_empty() {
        out.push_str("No NVIDIA GPU or RDMA NIC found: no connection matrix.\n\n");
        return matrix.endpoints;
    }
    let width = matrix.endpoints.iter().map(|e| e.label.len()).max().unwrap_or(4).max(6) + 2;
    let _ = write!(out, "{:width$}", "");
    for endpoint in &matrix.endpoints {
        let _ = write!(out, "{:width$}", endpoint.label);
    }
    // The CPU column is as wide as its longest list plus two: columns never run together.
    let affinities: Vec<Option<(String, String)>> = matrix
        .endpoints
        .iter()
        .map(|row| {
            (row.kind == topo_model::EndpointKind::Gpu).then(|| {
                let numa = topology.numa_of(row.bus_id);
                let cpus = topology
                    .ancestors(row.bus_id)
                    .iter()
                    .find_map(|d| d.local_cpus.clone())
                    .or_else(|| numa.and_then(|n| topology.numa_node(n)).map(|n| n.cpus.clone()))
                    .filter(|c| !c.is_empty())
                    .map_or("N/A".to_string(), |c| c.to_string());
                (cpus, numa.map_or("N/A".to_string(), |n| n.to_string()))
            })
        })
        .collect();
    let cpu_width = affinities.iter().flatten().map(|(cpus, _)| cpus.len() + 2).max().unwrap_or(0).max(16);
    let _ = writeln!(out, "{:cpu_width$}NUMA Affinity", "CPU Affinity");
    for (i, row) in matrix.endpoints.iter().enumerate() {
        let _ = write!(out, "{:width$}", row.label);
        for cell in matrix.cells.get(i).into_iter().flatten() {
            let text = if *cell == SmiClass::Same { " X".to_string() } else { cell.to_string() };
            let padded = format!("{text:width$}");
            out.push_str(&paint(&padded, *cell, colour));
        }
        if let Some(Some((cpus, numa))) = affinities.get(i) {
            let _ = write!(out, "{cpus:<cpu_width$}{numa}");
        }
        out.truncate(out.trim_end_matches(' ').len());
        out.push('\n');
    }
    out.push('\n');
    out.push_str(LEGEND);
    let nics: Vec<_> = matrix.endpoints.iter().filter(|e| e.kind == topo_model::EndpointKind::Nic).collect();
    if !nics.is_empty() {
        out.push_str("\nNIC Legend:\n\n");
        for nic in nics {
            let _ = writeln!(out, "  {}: {}", nic.label, nic.name.as_deref().unwrap_or("?"));
        }
    }
    out.push('\n');
    matrix.endpoints
}

fn devices(out: &mut String, topology: &Topology, matrix_endpoints: &[Endpoint]) {
    if !topology.gpus.is_empty() {
        out.push_str("GPUs:\n");
        for (gpu, endpoint) in topology.gpus_in_order().into_iter().zip(matrix_endpoints) {
            let device = topology.pci(gpu.bus_id);
            let name = gpu.name.as_deref().unwrap_or("NVIDIA GPU");
            let sm = gpu.sm.map(|s| format!("  sm {s}")).unwrap_or_default();
            let numa = topology.numa_of(gpu.bus_id).map_or("?".to_string(), |n| n.to_string());
            let link = device.map(link_text).unwrap_or_default();
            let nvlinks = topology.nvlink_count(gpu.bus_id);
            let version = gpu.sm.and_then(topo_model::bandwidth::nvlink_version_for_sm);
            let nvlink = match (nvlinks, version) {
                (0, _) => String::new(),
                (n, Some(v)) => format!("  NVLink x{n} (NVLink{v})"),
                (n, None) => format!("  NVLink x{n}"),
            };
            let _ =
                writeln!(out, "  {:<6} {}  {name}{sm}  NUMA {numa}  PCIe {link}{nvlink}", endpoint.label, gpu.bus_id);
        }
        if !topology.nvswitches.is_empty() {
            let hidden = topology.nvswitches.iter().filter(|s| !s.visible).count();
            let _ = writeln!(
                out,
                "  NVSwitches: {}{}",
                topology.nvswitches.len(),
                if hidden > 0 { format!(" ({hidden} known only as NVLink targets)") } else { String::new() }
            );
        }
        out.push('\n');
    }
    if !topology.nics.is_empty() {
        out.push_str("NICs:\n");
        for nic in &topology.nics {
            let label = matrix_endpoints
                .iter()
                .find(|e| e.name.as_deref() == Some(nic.name.as_str()) && Some(e.bus_id) == nic.bus_id)
                .map_or("-", |e| e.label.as_str());
            let location = nic.bus_id.map_or("(socket, no PCI location)".to_string(), |b| b.to_string());
            let ports: Vec<String> = nic
                .ports
                .iter()
                .map(|p| {
                    let facts: Vec<String> =
                        [p.state.clone(), p.rate_gbps.map(|r| format!("{r} Gb/s")), p.link_layer.clone()]
                            .into_iter()
                            .flatten()
                            .collect();
                    format!("port {}: {}", p.port, if facts.is_empty() { "?".to_string() } else { facts.join(" ") })
                })
                .collect();
            let netdevs =
                if nic.netdevs.is_empty() { String::new() } else { format!("  ({})", nic.netdevs.join(", ")) };
            let _ = writeln!(
                out,
                "  {label:<6} {:<12} {location}  {}  {}{netdevs}",
                nic.name,
                nic.kind.label(),
                ports.join("; ")
            );
        }
        out.push('\n');
    }
}

fn link_text(device: &PciDevice) -> String {
    let link = device.link;
    if link.is_downtrained() {
        format!("{} (max {}, downtrained)", link.current.label(), link.max.label())
    } else if link.max.is_known() {
        link.max.label()
    } else if link.current.is_known() {
        link.current.label()
    } else {
        "unknown".to_string()
    }
}

fn downtrained(out: &mut String, topology: &Topology) {
    let links: Vec<&PciDevice> = topology.pci_devices.iter().filter(|d| d.link.is_downtrained()).collect();
    if links.is_empty() {
        return;
    }
    out.push_str("PCIe links below their capability:\n");
    for device in links {
        let what = topology.gpu(device.bus_id).map_or(device_kind(device).to_string(), |g| {
            format!("GPU{} (idle GPUs lower their link speed; re-check under load)", g.index.unwrap_or(0))
        });
        let _ = writeln!(
            out,
            "  {}  {} now, {} capable  {what}",
            device.bus_id,
            device.link.current.label(),
            device.link.max.label()
        );
    }
    out.push('\n');
}

fn numa(out: &mut String, topology: &Topology) {
    if topology.numa_nodes.is_empty() {
        return;
    }
    out.push_str("NUMA nodes:\n");
    for node in &topology.numa_nodes {
        let cpus = if node.cpus.is_empty() { "(no CPUs)".to_string() } else { node.cpus.to_string() };
        let memory = node.memory_kib.map_or(String::new(), |k| format!("  {:.1} GiB", k as f64 / 1024.0 / 1024.0));
        let distances = if node.distances.is_empty() {
            String::new()
        } else {
            format!("  distances {}", node.distances.iter().map(u32::to_string).collect::<Vec<_>>().join(" "))
        };
        let _ = writeln!(out, "  node {:<3} CPUs {cpus}{memory}{distances}", node.id);
    }
    out.push('\n');
}

fn interfaces(out: &mut String, topology: &Topology) {
    if topology.net_interfaces.is_empty() {
        return;
    }
    out.push_str("Network interfaces:\n");
    for interface in &topology.net_interfaces {
        let location = interface.bus_id.map_or("virtual".to_string(), |b| b.to_string());
        let mtu = interface.mtu.map_or("?".to_string(), |m| m.to_string());
        let speed = interface.speed_mbps.map_or("speed ?".to_string(), |s| format!("{s} Mb/s"));
        let state = interface.operstate.as_deref().unwrap_or("?");
        let _ = writeln!(out, "  {:<16} {location:<14} mtu {mtu:<6} {speed:<12} {state}", interface.name);
    }
    out.push('\n');
}

pub(crate) fn pci_tree(out: &mut String, topology: &Topology, has_endpoints: bool) {
    let relevant = topology.relevant_devices();
    let shown: Vec<&PciDevice> =
        topology.pci_devices.iter().filter(|d| !has_endpoints || relevant.contains(&d.bus_id)).collect();
    if shown.is_empty() {
        return;
    }
    out.push_str(if has_endpoints { "PCI tree (paths to GPUs and NICs):\n" } else { "PCI tree:\n" });
    let mut roots: Vec<Option<&str>> =
        shown.iter().filter(|d| d.parent.is_none()).map(|d| d.host_bridge.as_deref()).collect();
    roots.dedup();
    for root in roots {
        let _ = writeln!(out, "  {}", root.unwrap_or("(root complex)"));
        for device in shown.iter().filter(|d| d.parent.is_none() && d.host_bridge.as_deref() == root) {
            tree_node(out, topology, &shown, device, 2);
        }
    }
}

fn tree_node(out: &mut String, topology: &Topology, shown: &[&PciDevice], device: &PciDevice, depth: usize) {
    let ids = match (device.vendor, device.device) {
        (Some(v), Some(d)) => format!("  {v:04x}:{d:04x}"),
        _ => String::new(),
    };
    let mut role = String::new();
    if let Some(gpu) = topology.gpu(device.bus_id) {
        role = format!("  GPU{}", gpu.index.unwrap_or(0));
    }
    let nics: Vec<&str> =
        topology.nics.iter().filter(|n| n.bus_id == Some(device.bus_id)).map(|n| n.name.as_str()).collect();
    if !nics.is_empty() {
        role = format!("  {}", nics.join(", "));
    }
    let link = if device.link.max.is_known() || device.link.current.is_known() {
        format!("  {}", link_text(device))
    } else {
        String::new()
    };
    let _ =
        writeln!(out, "{:indent$}{}  {}{ids}{link}{role}", "", device.bus_id, device_kind(device), indent = depth * 2);
    for child in shown.iter().filter(|d| d.parent == Some(device.bus_id)) {
        tree_node(out, topology, shown, child, depth + 1);
    }
}
