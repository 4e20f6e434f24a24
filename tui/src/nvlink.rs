//! NVLink: every link of every GPU with its state, version, far end and error
//! counters (from NVML), and the NVSwitches; from a topology file without NVML,
//! the NVLink bundles it lists.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders};
use topo_model::BusId;
use topo_model::nvml::Answer;

use crate::app::App;
use crate::style;

/// One row: its text and whether it shows a problem.
pub struct Row {
    pub text: String,
    pub bad: bool,
}

pub fn rows(app: &App) -> Vec<Row> {
    let snapshot = &app.data.snapshot;
    let topology = &snapshot.topology;
    let mut rows = Vec::new();
    let switches: Vec<String> = topology.nvswitches.iter().map(|s| s.bus_id.to_string()).collect();
    if !switches.is_empty() {
        rows.push(Row { text: format!("NVSwitches: {}", switches.join("  ")), bad: false });
    }
    match &snapshot.nvml {
        Some(nvml) => {
            let gpu_at = |bus: BusId| nvml.answered().find(|(_, d)| d.bus_id() == Some(bus)).map(|(i, _)| i);
            for (index, device) in nvml.answered() {
                for link in &device.nvlinks {
                    let active = link.active.ok() == Some(&true);
                    let remote_bus = link.remote_bus_id.ok().and_then(|b| b.parse::<BusId>().ok());
                    let remote = match (link.remote_type.ok().map(String::as_str), remote_bus) {
                        (Some("ibmnpu"), _) => "CPU".to_string(),
                        (_, Some(bus)) => match gpu_at(bus) {
                            Some(peer) => format!("GPU{peer} {bus}"),
                            None => format!("NVSwitch {bus}"),
                        },
                        _ => "-".into(),
                    };
                    let count = |a: &Answer<u64>| a.show(u64::to_string);
                    let e = &link.errors;
                    let text = format!(
                        "GPU{index:<3} link {:<3} {:<9} v{:<2} {remote:<26} replay {:>6} recovery {:>4} crc {:>6}/{:<6}",
                        link.link,
                        if active { "active" } else { "inactive" },
                        link.version.show(u32::to_string),
                        count(&e.replay),
                        count(&e.recovery),
                        count(&e.crc_flit),
                        count(&e.crc_data)
                    );
                    rows.push(Row { text, bad: e.total() > 0 });
                }
            }
        }
        None => {
            for bundle in &topology.nvlinks {
                let remote = match bundle.remote {
                    topo_model::NvLinkRemote::Gpu(bus) => format!("GPU {bus}"),
                    topo_model::NvLinkRemote::NvSwitch(bus) => format!("NVSwitch {bus}"),
                    topo_model::NvLinkRemote::Cpu => "CPU".into(),
                };
                rows.push(Row { text: format!("GPU {}  {} links to {remote}", bundle.gpu, bundle.links), bad: false });
            }
        }
    }
    rows.retain(|r| app.matches(&r.text));
    rows
}

pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let rows = rows(app);
    let source = if app.data.snapshot.nvml.is_some() { "NVML" } else { "topology file; no per-link state" };
    let title = format!(" NVLink ({source}): {} rows ", rows.len());
    let mut lines: Vec<Line<'static>> = rows
        .iter()
        .map(|r| if r.bad { Line::styled(r.text.clone(), style::bad()) } else { Line::raw(r.text.clone()) })
        .collect();
    if lines.is_empty() {
        lines.push(Line::raw("No NVLink in this snapshot (PCIe-only GPUs, or no NVIDIA driver answers)."));
    }
    let selected = app.row().min(lines.len().saturating_sub(1));
    crate::list::draw(frame, app, area, Block::new().borders(Borders::ALL).title(title), lines, selected);
}
