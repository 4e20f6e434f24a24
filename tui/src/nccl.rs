//! NCCL: the communicators of a log (from `--nccl-log`); for the selected one,
//! its ranks, each ring as a rank sequence with every hop's transport and the
//! hardware path between the two GPUs, and the trees.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use topo_model::SmiClass;
use topo_model::nccl::{Communicator, HopIndex};

use crate::app::App;
use crate::style;

pub fn communicators(app: &App) -> Vec<&Communicator> {
    let Some(report) = &app.data.nccl else { return Vec::new() };
    report.communicators.iter().filter(|c| app.matches(&c.id)).collect()
}

pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let Some(report) = &app.data.nccl else {
        let text =
            "No NCCL report: open the UI with --nccl-log FILE... (NCCL_DEBUG=INFO output) to see rings and trees.";
        frame.render_widget(
            Paragraph::new(text).wrap(Wrap { trim: false }).block(Block::new().borders(Borders::ALL).title(" NCCL ")),
            area,
        );
        return;
    };
    let versions = report.nccl_versions.join(", ");
    let comms: Vec<Communicator> = communicators(app).into_iter().cloned().collect();
    if comms.is_empty() {
        let text = format!("NCCL {versions}: no communicator in the log (or none matches the filter).");
        frame.render_widget(Paragraph::new(text).block(Block::new().borders(Borders::ALL).title(" NCCL ")), area);
        return;
    }
    let selected = app.row().min(comms.len() - 1);
    let lines: Vec<Line<'static>> = comms
        .iter()
        .map(|c| {
            let opt = |v: Option<u32>| v.map_or("?".into(), |v| v.to_string());
            Line::raw(format!(
                "{:<20} {:>4} ranks {:>3} nodes {:>3} rings {:>3} trees",
                c.id,
                opt(c.nranks),
                opt(c.nnodes),
                c.rings.len(),
                c.trees.iter().map(|t| t.channel).collect::<std::collections::BTreeSet<_>>().len()
            ))
        })
        .collect();
    let [list_area, detail_area] = Layout::vertical([
        Constraint::Length((comms.len() as u16 + 2).min(8).min(area.height / 2)),
        Constraint::Min(3),
    ])
    .areas(area);
    let title = format!(" NCCL {versions}: {} communicator(s) ", comms.len());
    crate::list::draw(frame, app, list_area, Block::new().borders(Borders::ALL).title(title), lines, selected);

    let comm = &comms[selected];
    let mut detail = Vec::new();
    for rank in &comm.ranks {
        detail.push(Line::raw(format!(
            "rank {:<4} {} pid {} cudaDev {} bus {}",
            rank.rank,
            rank.host.as_deref().unwrap_or("?"),
            rank.pid.map_or("?".into(), |p| p.to_string()),
            rank.cuda_dev.map_or("?".into(), |d| d.to_string()),
            rank.bus_id.map_or("?".into(), |b| b.to_string())
        )));
    }
    let hops = HopIndex::new(comm);
    for ring in &comm.rings {
        let mut spans = vec![Span::styled(format!("ring {:02}: ", ring.channel), style::heading())];
        for (i, rank) in ring.order.iter().enumerate() {
            spans.push(Span::raw(rank.to_string()));
            let next = ring.order[(i + 1) % ring.order.len()];
            let label = match hops.hop(ring.channel, *rank, next) {
                Some(c) => {
                    let hardware = c.hardware.as_ref().map_or(String::new(), |h| format!(" {}", h.smi));
                    let cross = if c.cross_node == Some(true) { " ⇄node" } else { "" };
                    (
                        format!(" →[{}{hardware}{cross}] ", c.detail),
                        c.hardware.as_ref().and_then(|h| SmiClass::parse(&h.smi)),
                    )
                }
                None => (" → ".to_string(), None),
            };
            let hop_style = label.1.map_or(Default::default(), style::class);
            spans.push(Span::styled(label.0, hop_style));
        }
        if let Some(first) = ring.order.first() {
            spans.push(Span::raw(first.to_string()));
        }
        detail.push(Line::from(spans));
    }
    for tree in &comm.trees {
        let children: Vec<String> = tree.children.iter().map(u32::to_string).collect();
        detail.push(Line::raw(format!(
            "tree {:02}: rank {} parent {} children [{}]",
            tree.channel,
            tree.rank,
            tree.parent,
            children.join(" ")
        )));
    }
    let block = Block::new().borders(Borders::ALL).title(format!(" {} ", comm.id));
    frame.render_widget(Paragraph::new(detail).wrap(Wrap { trim: false }).block(block), detail_area);
}
