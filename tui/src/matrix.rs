//! The GPU/NIC matrix in nvidia-smi's words, coloured by class, with the path
//! under the cursor hop by hop: its bottleneck and the bandwidth it should carry.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use topo_model::{HopKind, SmiClass};

use crate::app::{App, MatrixGeometry};
use crate::style;

const CELL: u16 = 7;
const LABEL: u16 = 8;

pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let n = app.matrix.endpoints.len();
    if n == 0 {
        let text = "No GPU or RDMA NIC in this snapshot: no matrix.";
        frame.render_widget(Paragraph::new(text).block(Block::new().borders(Borders::ALL).title(" Matrix ")), area);
        return;
    }
    let detail_height = if app.details { area.height / 2 } else { 9.min(area.height / 3) };
    let [grid_area, path_area] = Layout::vertical([Constraint::Min(4), Constraint::Length(detail_height)]).areas(area);
    let block = Block::new().borders(Borders::ALL).title(" Matrix (arrows move, Enter enlarges the path) ");
    let inner = block.inner(grid_area);
    frame.render_widget(block, grid_area);

    let rows = usize::from(inner.height.saturating_sub(1)).max(1);
    let cols = usize::from(inner.width.saturating_sub(LABEL) / CELL).max(1);
    let (row, col) = app.cell;
    let first_row = row.saturating_sub(rows - 1);
    let first_col = col.saturating_sub(cols - 1);
    let mut lines = Vec::with_capacity(rows + 1);
    let mut header = vec![Span::raw(" ".repeat(usize::from(LABEL)))];
    for j in (first_col..n).take(cols) {
        let style = if j == col { style::heading() } else { Default::default() };
        header
            .push(Span::styled(format!("{:<width$}", app.matrix.endpoints[j].label, width = usize::from(CELL)), style));
    }
    lines.push(Line::from(header));
    for i in (first_row..n).take(rows) {
        let label_style = if i == row { style::heading() } else { Default::default() };
        let mut spans = vec![Span::styled(
            format!("{:<width$}", app.matrix.endpoints[i].label, width = usize::from(LABEL)),
            label_style,
        )];
        for j in (first_col..n).take(cols) {
            let class = app.matrix.cells[i][j];
            let text = format!("{:<width$}", class.to_string(), width = usize::from(CELL));
            let mut cell_style = style::class(class);
            if (i, j) == (row, col) {
                cell_style = cell_style.patch(style::selected());
            }
            spans.push(Span::styled(text, cell_style));
        }
        lines.push(Line::from(spans));
    }
    frame.render_widget(Paragraph::new(lines), inner);
    let cells = Rect {
        x: inner.x + LABEL,
        y: inner.y + 1,
        width: inner.width.saturating_sub(LABEL),
        height: inner.height.saturating_sub(1),
    };
    app.hits.matrix = Some(MatrixGeometry { area: cells, cell_width: CELL, first_row, first_col });

    draw_path(frame, app, path_area);
}

fn draw_path(frame: &mut Frame, app: &App, area: Rect) {
    let (row, col) = app.cell;
    let (Some(a), Some(b)) = (app.matrix.endpoints.get(row), app.matrix.endpoints.get(col)) else { return };
    let path = app.data.snapshot.topology.path(a.bus_id, b.bus_id);
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("{} ({}) -> {} ({}): ", a.label, a.bus_id, b.label, b.bus_id), style::heading()),
        Span::styled(path.smi.to_string(), style::class(path.smi)),
        Span::raw(format!("  NCCL {}", format!("{:?}", path.nccl).to_uppercase())),
        Span::raw(match path.expected {
            Some(bw) => format!("  expected {bw} per direction"),
            None => String::new(),
        }),
    ])];
    if path.smi == SmiClass::Same {
        lines.push(Line::raw("the same device"));
    }
    for (index, hop) in path.hops.iter().enumerate() {
        let kind = match hop.kind {
            HopKind::Pcie { link } => format!("PCIe {}", link.current.label()),
            HopKind::Internal => "inside switch / root complex".into(),
            HopKind::NvLink { links } => format!("NVLink x{links}"),
            HopKind::HostBridges => "between host bridges".into(),
            HopKind::InterSocket => "inter-socket link".into(),
        };
        let bandwidth = hop.bandwidth.map_or(String::new(), |bw| format!("  {bw}"));
        let bottleneck = if path.bottleneck == Some(index) { "  <- bottleneck" } else { "" };
        let line = format!("  {} -> {}  {kind}{bandwidth}{bottleneck}", hop.from, hop.to);
        lines.push(if bottleneck.is_empty() { Line::raw(line) } else { Line::styled(line, style::heading()) });
    }
    let block = Block::new().borders(Borders::ALL).title(" Path ");
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).block(block), area);
}
