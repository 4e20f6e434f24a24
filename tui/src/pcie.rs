//! The PCIe tree: root complexes, then switches and devices, collapsible, with
//! each link's current and maximum generation and width, downtrained hops marked.

use std::collections::BTreeMap;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders};
use topo_model::{BridgeRole, BusId, PciDevice, PcieLinkSpec, Topology};

use crate::app::App;
use crate::style;

/// One row of the tree, precomputed when the UI opens.
#[derive(Debug, Clone)]
pub struct TreeRow {
    pub bus_id: BusId,
    /// `None` for a root-complex heading.
    pub device: bool,
    pub depth: usize,
    pub text: String,
    pub link: String,
    pub downtrained: bool,
    pub has_children: bool,
    /// Bus IDs of the rows above it in the tree, for collapsing.
    pub ancestors: Vec<BusId>,
}

fn describe(topology: &Topology, device: &PciDevice) -> String {
    if let Some(gpu) = topology.gpu(device.bus_id) {
        let index = gpu.index.map_or(String::new(), |i| format!("GPU{i} "));
        return format!("{index}{}", gpu.name.as_deref().unwrap_or("GPU"));
    }
    if let Some(nic) = topology.nics.iter().find(|n| n.bus_id == Some(device.bus_id)) {
        return format!("NIC {}", nic.name);
    }
    if device.is_nvswitch() {
        return "NVSwitch".into();
    }
    let role = match device.bridge {
        Some(BridgeRole::HostBridge) => "host bridge",
        Some(BridgeRole::RootPort) => "root port",
        Some(BridgeRole::SwitchUpstream) => "switch upstream port",
        Some(BridgeRole::SwitchDownstream) => "switch downstream port",
        Some(BridgeRole::Switch) => "PCIe switch",
        None => return format!("{:04x}:{:04x}", device.vendor.unwrap_or(0), device.device.unwrap_or(0)),
    };
    role.to_string()
}

/// The rows of the tree: GPUs, NICs, NVSwitches and the bridges above them
/// (every device when the machine has none of those).
pub fn rows(topology: &Topology) -> Vec<TreeRow> {
    let relevant = topology.relevant_devices();
    let shown: Vec<&PciDevice> =
        topology.pci_devices.iter().filter(|d| relevant.is_empty() || relevant.contains(&d.bus_id)).collect();
    let mut children: BTreeMap<Option<BusId>, Vec<&PciDevice>> = BTreeMap::new();
    for device in &shown {
        let parent = device.parent.filter(|p| shown.iter().any(|d| d.bus_id == *p));
        children.entry(parent).or_default().push(device);
    }
    let mut by_complex: BTreeMap<String, Vec<&PciDevice>> = BTreeMap::new();
    for root in children.get(&None).map(Vec::as_slice).unwrap_or_default() {
        by_complex.entry(root.host_bridge.clone().unwrap_or_else(|| "(no host bridge)".into())).or_default().push(root);
    }
    let mut out = Vec::new();
    for (complex, roots) in by_complex {
        let numa = roots.iter().find_map(|d| topology.numa_of(d.bus_id));
        let text = match numa {
            Some(node) => format!("{complex}  (NUMA node {node})"),
            None => complex,
        };
        out.push(TreeRow {
            bus_id: BusId::default(),
            device: false,
            depth: 0,
            text,
            link: String::new(),
            downtrained: false,
            has_children: false,
            ancestors: Vec::new(),
        });
        for root in roots {
            push(topology, &children, root, 1, &mut Vec::new(), &mut out);
        }
    }
    out
}

fn push(
    topology: &Topology,
    children: &BTreeMap<Option<BusId>, Vec<&PciDevice>>,
    device: &PciDevice,
    depth: usize,
    ancestors: &mut Vec<BusId>,
    out: &mut Vec<TreeRow>,
) {
    let below = children.get(&Some(device.bus_id)).map(Vec::as_slice).unwrap_or_default();
    let link = &device.link;
    let link_text = if link.current == PcieLinkSpec::default() && link.max == PcieLinkSpec::default() {
        String::new()
    } else {
        format!("{} (max {})", link.current.label(), link.max.label())
    };
    out.push(TreeRow {
        bus_id: device.bus_id,
        device: true,
        depth,
        text: format!("{}  {}", device.bus_id, describe(topology, device)),
        link: link_text,
        downtrained: link.is_downtrained(),
        has_children: !below.is_empty(),
        ancestors: ancestors.clone(),
    });
    ancestors.push(device.bus_id);
    for child in below {
        push(topology, children, child, depth + 1, ancestors, out);
    }
    ancestors.pop();
}

/// Indices of the rows shown: not under a collapsed device, and matching the filter.
pub fn visible(app: &App) -> Vec<usize> {
    app.tree
        .iter()
        .enumerate()
        .filter(|(_, row)| !row.ancestors.iter().any(|a| app.collapsed.contains(a)))
        .filter(|(_, row)| app.matches(&row.text))
        .map(|(i, _)| i)
        .collect()
}

pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let shown = visible(app);
    let lines: Vec<Line<'static>> = shown
        .iter()
        .map(|i| {
            let row = &app.tree[*i];
            let marker = match (row.has_children, app.collapsed.contains(&row.bus_id)) {
                (true, true) => "▸ ",
                (true, false) => "▾ ",
                (false, _) if row.device => "  ",
                _ => "",
            };
            let indent = "  ".repeat(row.depth.saturating_sub(1));
            let name = format!("{indent}{marker}{}", row.text);
            let mut spans =
                vec![Span::styled(name.clone(), if row.device { Default::default() } else { style::heading() })];
            if !row.link.is_empty() {
                let pad = 64usize.saturating_sub(name.chars().count()).max(2);
                spans.push(Span::raw(" ".repeat(pad)));
                spans.push(Span::styled(
                    row.link.clone(),
                    if row.downtrained { style::bad() } else { Default::default() },
                ));
                if row.downtrained {
                    spans.push(Span::styled("  downtrained", style::bad()));
                }
            }
            Line::from(spans)
        })
        .collect();
    let title = format!(" PCIe tree: {} rows (Enter/Space fold, / filter) ", shown.len());
    let selected = app.row().min(shown.len().saturating_sub(1));
    crate::list::draw(frame, app, area, Block::new().borders(Borders::ALL).title(title), lines, selected);
}
