//! The topology as a picture, drawn here as inline SVG (no graphviz on the
//! reader's machine, nothing fetched when the file is opened): CPUs / NUMA
//! nodes on top, the PCIe tree below them (root ports, switches), GPUs and NICs
//! as its leaves, NVSwitches a row below. PCIe edges are grey (red when a link
//! trained below its capability), NVLink edges green and thicker with more
//! links, the inter-socket link a dashed red line: the colours of the matrix's
//! path classes, so the picture and the matrix read alike.
//!
//! Layout is a layered tree: each leaf takes the next column, a parent sits
//! over the middle of its children, each depth is one row. Deterministic and
//! linear in the devices; no crossing minimisation beyond the PCI order.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;

use topo_model::{BusId, NvLinkRemote, PciDevice, Topology};

use super::escape::text;
use super::{NVLINK, SOCKET};

const BOX_W: f64 = 120.0;
const BOX_H: f64 = 50.0;
const GAP: f64 = 14.0;
const ROW: f64 = 86.0;
const MARGIN: f64 = 16.0;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Cpu,
    Bridge,
    Gpu,
    Nic,
    NvSwitch,
    Other,
}

struct Node {
    kind: Kind,
    lines: Vec<String>,
    tooltip: String,
    children: Vec<usize>,
    /// The PCIe link to the parent is below its capability.
    downtrained: bool,
    x: f64,
    y: f64,
}

impl Node {
    fn new(kind: Kind, lines: Vec<String>, tooltip: String) -> Node {
        Node { kind, lines, tooltip, children: Vec::new(), downtrained: false, x: 0.0, y: 0.0 }
    }
}

/// At most `n` characters, with `…` when cut: box labels must fit their box.
fn fit(label: &str, n: usize) -> String {
    match label.char_indices().nth(n) {
        Some((at, _)) => format!("{}…", &label[..at]),
        None => label.to_string(),
    }
}

fn link_label(device: &PciDevice) -> String {
    let link = device.link;
    if link.is_downtrained() {
        format!("{} of {}", link.current.label(), link.max.label())
    } else if link.max.is_known() {
        link.max.label()
    } else {
        String::new()
    }
}

fn device_node(topology: &Topology, device: &PciDevice) -> Node {
    let bus = device.bus_id;
    let link = link_label(device);
    let (kind, mut lines) = if let Some(gpu) = topology.gpu(bus) {
        let index = gpu.index.map_or("GPU".to_string(), |i| format!("GPU{i}"));
        let name = gpu.name.as_deref().unwrap_or("NVIDIA GPU").trim_start_matches("NVIDIA ");
        (Kind::Gpu, vec![index, fit(name, 20)])
    } else if device.is_nvswitch() {
        (Kind::NvSwitch, vec!["NVSwitch".to_string(), bus.to_string()])
    } else if topology.nics.iter().any(|n| n.bus_id == Some(bus)) {
        let names: Vec<&str> =
            topology.nics.iter().filter(|n| n.bus_id == Some(bus)).map(|n| n.name.as_str()).collect();
        (Kind::Nic, vec![fit(&names.join(", "), 18), bus.to_string()])
    } else if device.is_bridge() {
        (Kind::Bridge, vec![super::super::device_kind(device).to_string(), bus.to_string()])
    } else {
        (Kind::Other, vec![super::super::device_kind(device).to_string(), bus.to_string()])
    };
    if !link.is_empty() {
        lines.push(fit(&link, 21));
    }
    let tooltip = format!("{bus} {} {link}", super::super::device_kind(device)).trim_end().to_string();
    let mut node = Node::new(kind, lines, tooltip);
    node.downtrained = device.link.is_downtrained();
    node
}

/// The tree: CPU roots, PCI devices under them, then GPUs and NICs the PCI
/// tree does not place, and NVSwitches known only as NVLink targets.
struct Picture {
    nodes: Vec<Node>,
    roots: Vec<usize>,
    by_bus: HashMap<BusId, usize>,
    /// NVSwitches on their own row (not in the PCI tree).
    switches: Vec<usize>,
    /// The CPU root of each NUMA node id.
    cpu_of_numa: HashMap<i32, usize>,
}

fn build(topology: &Topology) -> Picture {
    let mut picture = Picture {
        nodes: Vec::new(),
        roots: Vec::new(),
        by_bus: HashMap::new(),
        switches: Vec::new(),
        cpu_of_numa: HashMap::new(),
    };
    for numa in &topology.numa_nodes {
        let cpus = if numa.cpus.is_empty() { "no CPUs".to_string() } else { format!("CPUs {}", numa.cpus) };
        let lines = vec![format!("CPU / NUMA {}", numa.id), fit(&cpus, 19)];
        picture.cpu_of_numa.insert(numa.id, picture.nodes.len());
        picture.roots.push(picture.nodes.len());
        picture.nodes.push(Node::new(Kind::Cpu, lines, format!("NUMA node {} {cpus}", numa.id)));
    }
    if picture.roots.is_empty() {
        picture.roots.push(0);
        let name = topology.cpu.describe().unwrap_or_else(|| "CPU".to_string());
        picture.nodes.push(Node::new(Kind::Cpu, vec!["CPU".to_string(), fit(&name, 19)], name));
    }
    let has_endpoints = !topology.gpus.is_empty() || topology.nics.iter().any(|n| n.bus_id.is_some());
    if !has_endpoints {
        return picture;
    }
    // The paths to GPUs, NICs and NVSwitches. Unlike the text tree, devices of
    // unknown class (`lspci -tv` alone) are left out: a hundred blank boxes
    // would hide the wiring the picture is for.
    let mut drawn = std::collections::HashSet::new();
    let endpoints = topology.pci_devices.iter().filter(|d| {
        topology.gpu(d.bus_id).is_some()
            || topology.nics.iter().any(|n| n.bus_id == Some(d.bus_id))
            || topology.nvswitches.iter().any(|s| s.bus_id == d.bus_id)
    });
    for device in endpoints {
        drawn.extend(topology.ancestors(device.bus_id).iter().map(|a| a.bus_id));
    }
    let shown: Vec<&PciDevice> = topology.pci_devices.iter().filter(|d| drawn.contains(&d.bus_id)).collect();
    for device in &shown {
        picture.by_bus.insert(device.bus_id, picture.nodes.len());
        picture.nodes.push(device_node(topology, device));
    }
    let root_of = |picture: &Picture, bus: BusId| {
        topology.numa_of(bus).and_then(|n| picture.cpu_of_numa.get(&n).copied()).unwrap_or(picture.roots[0])
    };
    for device in &shown {
        let index = picture.by_bus[&device.bus_id];
        let parent = device
            .parent
            .and_then(|p| picture.by_bus.get(&p).copied())
            .unwrap_or_else(|| root_of(&picture, device.bus_id));
        picture.nodes[parent].children.push(index);
    }
    // GPUs and NICs the PCI tree does not hold (an nvidia-smi paste) hang off their CPU.
    let loose_gpus = topology.gpus_in_order().into_iter().map(|g| g.bus_id);
    let loose_nics = topology.nics.iter().filter_map(|n| n.bus_id);
    for bus in loose_gpus.chain(loose_nics).collect::<Vec<_>>() {
        if picture.by_bus.contains_key(&bus) {
            continue;
        }
        let device = PciDevice::new(bus);
        let index = picture.nodes.len();
        picture.by_bus.insert(bus, index);
        picture.nodes.push(device_node(topology, &device));
        let root = root_of(&picture, bus);
        picture.nodes[root].children.push(index);
    }
    for switch in &topology.nvswitches {
        if picture.by_bus.contains_key(&switch.bus_id) {
            continue;
        }
        let second = if switch.visible { switch.bus_id.to_string() } else { "hidden from host".to_string() };
        let index = picture.nodes.len();
        picture.by_bus.insert(switch.bus_id, index);
        picture.switches.push(index);
        picture.nodes.push(Node::new(
            Kind::NvSwitch,
            vec!["NVSwitch".to_string(), second],
            format!("NVSwitch {}", switch.bus_id),
        ));
    }
    picture
}

/// Places the subtree at `index`: leaves take the next column, parents
/// centre over their children. Returns the deepest row used.
fn place(nodes: &mut [Node], index: usize, depth: usize, next_column: &mut usize) -> usize {
    nodes[index].y = MARGIN + depth as f64 * ROW;
    let children = nodes[index].children.clone();
    if children.is_empty() {
        nodes[index].x = MARGIN + *next_column as f64 * (BOX_W + GAP);
        *next_column += 1;
        return depth;
    }
    let deepest = children.iter().map(|&c| place(nodes, c, depth + 1, next_column)).max().unwrap_or(depth);
    let (first, last) = (nodes[children[0]].x, nodes[children[children.len() - 1]].x);
    nodes[index].x = (first + last) / 2.0;
    deepest
}

fn style(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Cpu => ("#e0e0e0", "#424242"),
        Kind::Bridge => ("#fafafa", "#9e9e9e"),
        Kind::Gpu => ("#c8e6c9", NVLINK),
        Kind::Nic => ("#bbdefb", "#1e88e5"),
        Kind::NvSwitch => ("#e1d5f0", "#6a4c93"),
        Kind::Other => ("#fafafa", "#9e9e9e"),
    }
}

/// The picture as one `<svg>` element sized to its content.
pub fn render(topology: &Topology) -> String {
    let mut picture = build(topology);
    let mut next_column = 0;
    let mut deepest = 0;
    for &root in &picture.roots.clone() {
        deepest = deepest.max(place(&mut picture.nodes, root, 0, &mut next_column));
    }
    // GPUs and NICs on one bottom row, whatever their depth in the PCI tree:
    // the arcs between GPUs then run under one line of boxes, not through them.
    let leaf_y = MARGIN + deepest as f64 * ROW;
    for node in picture.nodes.iter_mut().filter(|n| matches!(n.kind, Kind::Gpu | Kind::Nic) && n.children.is_empty()) {
        node.y = leaf_y;
    }
    // Room under the GPUs for NVLink arcs between them, then the NVSwitch row.
    let gpu_pairs = topology.nvlinks.iter().any(|l| matches!(l.remote, NvLinkRemote::Gpu(_)));
    // Switches sit further down than a tree row: eight GPUs times four
    // switches of near-horizontal lines would be one green smear.
    let switch_gap = if picture.switches.is_empty() { 0.0 } else { 60.0 };
    let switch_y = MARGIN + (deepest + 1) as f64 * ROW + if gpu_pairs { ROW } else { 0.0 } + switch_gap;
    let columns = next_column.max(picture.switches.len()).max(1);
    let width = 2.0 * MARGIN + columns as f64 * (BOX_W + GAP) - GAP;
    for (i, &index) in picture.switches.clone().iter().enumerate() {
        // Spread the switches under the whole width.
        let span = width - 2.0 * MARGIN - BOX_W;
        let step = if picture.switches.len() > 1 { span / (picture.switches.len() - 1) as f64 } else { 0.0 };
        picture.nodes[index].x = MARGIN + if picture.switches.len() > 1 { i as f64 * step } else { span / 2.0 };
        picture.nodes[index].y = switch_y;
    }
    let bottom = if picture.switches.is_empty() { switch_y - ROW + BOX_H } else { switch_y + BOX_H };
    let height = bottom + MARGIN;

    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"topology\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" role=\"img\" aria-label=\"topology picture\" font-family=\"sans-serif\" font-size=\"11\">"
    );
    let nodes = &picture.nodes;
    // PCIe edges first, so boxes sit on top of them.
    for parent in nodes {
        for &child in &parent.children {
            let c = &nodes[child];
            let (colour, width) = if c.downtrained { (SOCKET, 2.5) } else { ("#9e9e9e", 1.5) };
            let _ = writeln!(
                out,
                "<line class=\"pcie\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{colour}\" stroke-width=\"{width}\"/>",
                parent.x + BOX_W / 2.0,
                parent.y + BOX_H,
                c.x + BOX_W / 2.0,
                c.y
            );
        }
    }
    // The inter-socket link between neighbouring CPU roots.
    for pair in picture.roots.windows(2) {
        let (a, b) = (&nodes[pair[0]], &nodes[pair[1]]);
        if a.kind != Kind::Cpu || b.kind != Kind::Cpu {
            continue;
        }
        let y = a.y + BOX_H / 2.0;
        let _ = writeln!(
            out,
            "<line class=\"socket\" x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{SOCKET}\" stroke-width=\"3\" stroke-dasharray=\"8 5\"><title>inter-socket link (SYS)</title></line>",
            a.x + BOX_W,
            b.x
        );
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{SOCKET}\">inter-socket (SYS)</text>",
            (a.x + BOX_W + b.x) / 2.0,
            y - 6.0
        );
    }
    nvlinks(&mut out, topology, &picture);
    for node in nodes {
        let (fill, stroke) = style(node.kind);
        let _ = writeln!(
            out,
            "<g class=\"node\"><title>{}</title><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{BOX_W}\" height=\"{BOX_H}\" rx=\"6\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"1.5\"/>",
            text(&node.tooltip),
            node.x,
            node.y
        );
        for (i, line) in node.lines.iter().enumerate() {
            // The name in bold; the facts under it a size smaller, to fit the box.
            let weight = if i == 0 { " font-weight=\"bold\"" } else { " font-size=\"10\"" };
            let colour = if i == 2 && node.downtrained { SOCKET } else { "#212121" };
            let _ = writeln!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{colour}\"{weight}>{}</text>",
                node.x + BOX_W / 2.0,
                node.y + 14.0 + i as f64 * 14.0,
                text(line)
            );
        }
        out.push_str("</g>\n");
    }
    out.push_str("</svg>\n");
    out
}

/// NVLink bundles: GPU to GPU as an arc under the two, GPU to NVSwitch as a
/// straight line down, GPU to CPU (C2C) up to its CPU box.
fn nvlinks(out: &mut String, topology: &Topology, picture: &Picture) {
    let nodes = &picture.nodes;
    let mut drawn = BTreeSet::new();
    for link in &topology.nvlinks {
        let Some(&from) = picture.by_bus.get(&link.gpu) else { continue };
        let a = &nodes[from];
        let width = 2.0 + f64::from(link.links.min(18)) / 6.0;
        let label = format!("NV{}", link.links);
        match link.remote {
            NvLinkRemote::Gpu(other) => {
                let Some(&to) = picture.by_bus.get(&other) else { continue };
                if !drawn.insert((from.min(to), from.max(to))) {
                    continue;
                }
                let b = &nodes[to];
                let (x1, x2, y) = (a.x + BOX_W / 2.0, b.x + BOX_W / 2.0, a.y.max(b.y) + BOX_H);
                let sag = 18.0 + ((x2 - x1).abs() / (BOX_W + GAP)).min(4.0) * 12.0;
                let _ = writeln!(
                    out,
                    "<path class=\"nvlink\" d=\"M {x1:.1} {:.1} Q {:.1} {:.1} {x2:.1} {:.1}\" fill=\"none\" stroke=\"{NVLINK}\" stroke-width=\"{width:.1}\"><title>{label}</title></path>",
                    a.y + BOX_H,
                    (x1 + x2) / 2.0,
                    y + 2.0 * sag,
                    b.y + BOX_H
                );
                let _ = writeln!(
                    out,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{NVLINK}\">{label}</text>",
                    (x1 + x2) / 2.0,
                    y + sag + 12.0
                );
            }
            NvLinkRemote::NvSwitch(switch) => {
                let Some(&to) = picture.by_bus.get(&switch) else { continue };
                let b = &nodes[to];
                let _ = writeln!(
                    out,
                    "<line class=\"nvlink\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{NVLINK}\" stroke-width=\"{width:.1}\" stroke-opacity=\"0.75\"><title>GPU {} to NVSwitch {switch}: {label}</title></line>",
                    a.x + BOX_W / 2.0,
                    a.y + BOX_H,
                    b.x + BOX_W / 2.0,
                    b.y,
                    link.gpu
                );
            }
            NvLinkRemote::Cpu => {
                let Some(&cpu) = topology.numa_of(link.gpu).and_then(|n| picture.cpu_of_numa.get(&n)) else {
                    continue;
                };
                let b = &nodes[cpu];
                let _ = writeln!(
                    out,
                    "<line class=\"nvlink\" x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{NVLINK}\" stroke-width=\"{width:.1}\" stroke-dasharray=\"4 3\"><title>NVLink C2C to the CPU: {label}</title></line>",
                    a.x + BOX_W / 2.0 + 8.0,
                    a.y,
                    b.x + BOX_W / 2.0 + 8.0,
                    b.y + BOX_H
                );
            }
        }
    }
}
