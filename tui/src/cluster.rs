//! Cluster: the nodes of a directory of snapshots, grouped by hardware class,
//! outliers first with what differs; Enter opens a node on the other screens.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders};

use crate::app::App;
use crate::style;

pub struct Row {
    pub text: String,
    /// The node's snapshot file (`None` for class headings).
    pub file: Option<String>,
    pub outlier: bool,
}

pub fn rows(app: &App) -> Vec<Row> {
    let Some(cluster) = &app.data.cluster else { return Vec::new() };
    let mut rows = Vec::new();
    for class in &cluster.report.classes {
        let typical = |fact: &str| class.typical.get(fact).map_or("?", |(v, _)| v.as_str());
        rows.push(Row {
            text: format!(
                "{}: {} nodes, typically {} GPUs, {} RDMA NICs, driver {}; {} outliers",
                class.class,
                class.hosts.len(),
                typical("gpu.count"),
                typical("nic.count"),
                typical("driver"),
                class.outliers.len()
            ),
            file: None,
            outlier: false,
        });
        let mut listed = std::collections::BTreeSet::new();
        for outlier in &class.outliers {
            let differences: Vec<String> = outlier
                .differences
                .iter()
                .map(|d| format!("{} {}", d.fact, d.value.as_deref().unwrap_or("absent")))
                .collect();
            let text = format!("  {:<20} score {:<3} {}", outlier.host, outlier.score, differences.join("; "));
            listed.insert(outlier.host.as_str());
            if app.matches(&text) {
                rows.push(Row { text, file: Some(outlier.file.clone()), outlier: true });
            }
        }
        let files: std::collections::BTreeMap<&str, &str> =
            class.files.iter().map(|(h, f)| (h.as_str(), f.as_str())).collect();
        for host in class.hosts.iter().filter(|h| !listed.contains(h.as_str())) {
            let text = format!("  {host:<20} like the majority");
            if app.matches(&text) {
                rows.push(Row { text, file: files.get(host.as_str()).map(|f| f.to_string()), outlier: false });
            }
        }
    }
    rows
}

pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let rows = rows(app);
    let (nodes, unreadable) = app.data.cluster.as_ref().map_or((0, 0), |c| (c.report.nodes, c.report.unreadable.len()));
    let lines: Vec<Line<'static>> = rows
        .iter()
        .map(|r| match (&r.file, r.outlier) {
            (None, _) => Line::styled(r.text.clone(), style::heading()),
            (Some(_), true) => Line::styled(r.text.clone(), style::bad()),
            (Some(_), false) => Line::raw(r.text.clone()),
        })
        .collect();
    let title = format!(" Cluster: {nodes} nodes, {unreadable} unreadable files (Enter opens a node) ");
    let selected = app.row().min(lines.len().saturating_sub(1));
    crate::list::draw(frame, app, area, Block::new().borders(Borders::ALL).title(title), lines, selected);
}
