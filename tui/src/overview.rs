//! Overview: the host and its versions, every GPU and NIC in a line, and how
//! many findings of each severity.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use topo_model::{NicKind, Severity};

use crate::app::App;
use crate::style;

pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let snapshot = &app.data.snapshot;
    let topology = &snapshot.topology;
    let nvml = snapshot.nvml.as_ref();
    let mut lines = Vec::new();
    let host = snapshot.host.hostname.as_deref().unwrap_or("(unnamed host)");
    let kernel = snapshot.host.kernel.as_deref().map_or(String::new(), |k| format!("  kernel {k}"));
    lines.push(Line::from(vec![Span::styled(host.to_string(), style::heading()), Span::raw(kernel)]));
    let cpu = topology.cpu.describe().unwrap_or_else(|| "CPU unknown".into());
    lines.push(Line::raw(format!("{cpu}, {} NUMA node(s)", topology.numa_nodes.len())));
    let answer = |a: Option<String>| a.unwrap_or_else(|| "n/a".into());
    let nccl = app.data.nccl.as_ref().map(|r| r.nccl_versions.join(", ")).filter(|v| !v.is_empty());
    lines.push(Line::raw(format!(
        "driver {}  CUDA {}  NCCL {}",
        answer(nvml.and_then(|n| n.driver_version.ok().cloned())),
        answer(nvml.and_then(|n| n.cuda_version().ok().cloned())),
        answer(nccl)
    )));
    let count = |s| app.data.findings.iter().filter(|f| f.severity == s).count();
    lines.push(Line::from(vec![
        Span::raw("findings: "),
        Span::styled(format!("{} error", count(Severity::Error)), style::severity(Severity::Error)),
        Span::raw(", "),
        Span::styled(format!("{} warning", count(Severity::Warning)), style::severity(Severity::Warning)),
        Span::raw(", "),
        Span::styled(format!("{} info", count(Severity::Info)), style::severity(Severity::Info)),
    ]));

    // The name column gives way first on a narrow terminal.
    let name_width = usize::from(area.width).saturating_sub(64).clamp(10, 28);
    let mut gpus = vec![Line::styled(
        format!(
            "{:<6} {:<name_width$} {:<13} {:<4} {:<20} {:<6} {}",
            "GPU", "name", "bus ID", "NUMA", "PCIe now (max)", "NVLink", "health"
        ),
        style::heading(),
    )];
    for gpu in topology.gpus_in_order() {
        let answers = nvml.and_then(|n| n.answered().find(|(_, d)| d.bus_id() == Some(gpu.bus_id)).map(|(_, d)| d));
        let pci = topology.pci(gpu.bus_id);
        let link = pci.map_or("?".into(), |d| format!("{} ({})", d.link.current.label(), d.link.max.label()));
        let nvlinks = answers.map_or_else(
            || topology.nvlinks.iter().filter(|b| b.gpu == gpu.bus_id).map(|b| b.links).sum::<u32>().to_string(),
            |d| format!("{}/{}", d.nvlinks.iter().filter(|l| l.active.ok() == Some(&true)).count(), d.nvlinks.len()),
        );
        let label = gpu.index.map_or("GPU".into(), |i| format!("GPU{i}"));
        let health = health(app, gpu.bus_id, gpu.index);
        let numa = topology.numa_of(gpu.bus_id).map_or("?".into(), |n| n.to_string());
        let name: String = gpu.name.clone().unwrap_or_default().chars().take(name_width).collect();
        let style = if health == "ok" { Default::default() } else { style::bad() };
        gpus.push(Line::from(vec![
            Span::raw(format!(
                "{label:<6} {name:<name_width$} {:<13} {numa:<4} {link:<20} {nvlinks:<6} ",
                gpu.bus_id.to_string()
            )),
            Span::styled(health, style),
        ]));
    }
    for device in nvml.iter().flat_map(|n| n.devices.iter()).filter(|d| d.unreachable.is_some()) {
        gpus.push(Line::styled(
            format!("GPU{:<3} unreachable: {}", device.index, device.unreachable.as_deref().unwrap_or_default()),
            style::bad(),
        ));
    }
    let mut nics =
        vec![Line::styled(format!("{:<12} {:<10} {:<14} {}", "NIC", "kind", "bus ID", "ports"), style::heading())];
    let mut ordered: Vec<&topo_model::Nic> = topology.nics.iter().collect();
    ordered.sort_by_key(|n| topo_model::matrix::natural_key(&n.name));
    for nic in ordered {
        let kind = match nic.kind {
            NicKind::Infiniband => "IB",
            NicKind::Roce => "RoCE",
            NicKind::Efa => "EFA",
            NicKind::Ethernet => "Ethernet",
            NicKind::Unknown => "RDMA",
        };
        let ports: Vec<String> = nic
            .ports
            .iter()
            .map(|p| {
                format!(
                    "{}:{} {}",
                    p.port,
                    p.state.as_deref().unwrap_or("?"),
                    p.rate_gbps.map_or(String::new(), |r| format!("{r} Gb/s"))
                )
            })
            .collect();
        let bus = nic.bus_id.map_or("-".into(), |b| b.to_string());
        let down = nic.ports.iter().any(|p| p.state.is_some() && !p.is_active());
        let line = format!("{:<12} {kind:<10} {bus:<14} {}", nic.name, ports.join("  "));
        nics.push(if down { Line::styled(line, style::bad()) } else { Line::raw(line) });
    }
    let [top, middle, bottom] = Layout::vertical([
        Constraint::Length(lines.len() as u16 + 2),
        Constraint::Length((gpus.len() as u16 + 2).min(area.height / 2)),
        Constraint::Min(3),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(lines).block(Block::new().borders(Borders::ALL).title(" Node ")), top);
    frame.render_widget(Paragraph::new(gpus).block(Block::new().borders(Borders::ALL).title(" GPUs ")), middle);
    frame.render_widget(Paragraph::new(nics).block(Block::new().borders(Borders::ALL).title(" NICs ")), bottom);
}

/// `ok`, or the worst thing the findings say about this GPU.
fn health(app: &App, bus: topo_model::BusId, index: Option<u32>) -> String {
    let bus = bus.to_string();
    let label = index.map(|i| format!("GPU{i}"));
    // Evidence names a GPU by bus ID or as a word `GPU3` (not inside `GPU31`).
    let mine = |text: &str| {
        text.contains(&bus) || label.as_deref().is_some_and(|l| text.split([' ', ':']).any(|word| word == l))
    };
    let mut codes: Vec<&str> = app
        .data
        .findings
        .iter()
        .filter(|f| f.severity >= Severity::Warning && f.evidence.iter().any(|e| mine(&e.at) || mine(&e.text)))
        .map(|f| f.code.as_str())
        .collect();
    codes.dedup();
    if codes.is_empty() { "ok".into() } else { codes.join(", ") }
}
