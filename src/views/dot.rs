//! Graphviz DOT: NUMA nodes as clusters, switches, GPUs, NICs, NVSwitches;
//! PCIe edges labelled with generation and width (downtrained ones in red),
//! NVLink edges with their link count.

use std::fmt::Write;

use topo_model::{BusId, NvLinkRemote, PciDevice, Topology};

use super::device_kind;

fn node_id(bus_id: BusId) -> String {
    format!("\"{bus_id}\"")
}

pub fn render(topology: &Topology) -> String {
    let mut out = String::from("graph topo {\n");
    out.push_str("  graph [rankdir=TB, fontname=\"Helvetica\", compound=true];\n");
    out.push_str("  node [shape=box, style=\"rounded,filled\", fillcolor=\"#f4f4f4\", fontname=\"Helvetica\"];\n");
    out.push_str("  edge [fontname=\"Helvetica\", fontsize=10];\n");
    let has_endpoints = !topology.gpus.is_empty() || topology.nics.iter().any(|n| n.bus_id.is_some());
    let relevant = topology.relevant_devices();
    let shown: Vec<&PciDevice> =
        topology.pci_devices.iter().filter(|d| !has_endpoints || relevant.contains(&d.bus_id)).collect();

    let mut numa_ids: Vec<Option<i32>> = topology.numa_nodes.iter().map(|n| Some(n.id)).collect();
    numa_ids.push(None);
    for numa in &numa_ids {
        let members: Vec<&&PciDevice> = shown.iter().filter(|d| topology.numa_of(d.bus_id) == *numa).collect();
        let Some(numa) = numa else {
            for device in members {
                write_device(&mut out, topology, device, "  ");
            }
            continue;
        };
        let cpus = topology.numa_node(*numa).map(|n| n.cpus.to_string()).unwrap_or_default();
        let _ = writeln!(out, "  subgraph cluster_numa{} {{", numa.unsigned_abs());
        let _ = writeln!(out, "    label=\"NUMA {numa}\\nCPUs {cpus}\"; style=\"rounded\"; color=\"#888888\";");
        let _ = writeln!(out, "    \"cpu{numa}\" [label=\"CPU / NUMA {numa}\", shape=box3d, fillcolor=\"#dddddd\"];");
        for device in members {
            write_device(&mut out, topology, device, "    ");
        }
        out.push_str("  }\n");
    }
    if topology.numa_nodes.len() > 1 {
        for pair in topology.numa_nodes.windows(2) {
            let _ = writeln!(
                out,
                "  \"cpu{}\" -- \"cpu{}\" [label=\"inter-socket\", style=dashed];",
                pair[0].id, pair[1].id
            );
        }
    }

    for device in &shown {
        let label = device.link.max.label();
        let (color, label) = if device.link.is_downtrained() {
            ("red", format!("{} (max {label})", device.link.current.label()))
        } else if device.link.max.is_known() {
            ("#555555", label)
        } else {
            ("#555555", String::new())
        };
        let upstream = match (device.parent, topology.numa_of(device.bus_id)) {
            (Some(parent), _) => node_id(parent),
            (None, Some(numa)) if topology.numa_node(numa).is_some() => format!("\"cpu{numa}\""),
            _ => continue,
        };
        let _ = writeln!(
            out,
            "  {upstream} -- {} [label=\"{label}\", color=\"{color}\", fontcolor=\"{color}\"];",
            node_id(device.bus_id)
        );
    }

    for switch in topology.nvswitches.iter().filter(|s| topology.pci(s.bus_id).is_none()) {
        let name = if switch.visible {
            format!("NVSwitch\\n{}", switch.bus_id)
        } else {
            "NVSwitch\\n(hidden from this host)".to_string()
        };
        let _ = writeln!(out, "  {} [label=\"{name}\", fillcolor=\"#d9c7ee\"];", node_id(switch.bus_id));
    }
    for link in &topology.nvlinks {
        let remote = match link.remote {
            NvLinkRemote::Gpu(b) | NvLinkRemote::NvSwitch(b) => node_id(b),
            NvLinkRemote::Cpu => match topology.numa_of(link.gpu) {
                Some(numa) => format!("\"cpu{numa}\""),
                None => continue,
            },
        };
        let _ = writeln!(
            out,
            "  {} -- {remote} [label=\"NV{}\", color=\"#2e8b57\", fontcolor=\"#2e8b57\", penwidth=2];",
            node_id(link.gpu),
            link.links
        );
    }
    out.push_str("}\n");
    out
}

fn write_device(out: &mut String, topology: &Topology, device: &PciDevice, indent: &str) {
    let bus = device.bus_id;
    let (label, fill) = if let Some(gpu) = topology.gpu(bus) {
        let index = gpu.index.map(|i| format!("GPU{i}")).unwrap_or_else(|| "GPU".to_string());
        let name = gpu.name.clone().unwrap_or_default();
        (format!("{index}\\n{name}\\n{bus}"), "#c8e6c9")
    } else if topology.nics.iter().any(|n| n.bus_id == Some(bus)) {
        let names: Vec<&str> =
            topology.nics.iter().filter(|n| n.bus_id == Some(bus)).map(|n| n.name.as_str()).collect();
        (format!("{}\\n{bus}", names.join(", ")), "#bbdefb")
    } else if device.is_nvswitch() {
        (format!("NVSwitch\\n{bus}"), "#d9c7ee")
    } else {
        (format!("{}\\n{bus}", device_kind(device)), "#f4f4f4")
    };
    let _ = writeln!(out, "{indent}{} [label=\"{label}\", fillcolor=\"{fill}\"];", node_id(bus));
}
