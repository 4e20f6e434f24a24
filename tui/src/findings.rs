//! Findings: severity, code and title; Enter shows the evidence, why it matters
//! and the fix.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use topo_model::Finding;

use crate::app::App;
use crate::style;

pub fn visible(app: &App) -> Vec<&Finding> {
    app.data.findings.iter().filter(|f| app.matches(&format!("{} {} {}", f.severity, f.code, f.title))).collect()
}

pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let shown: Vec<Finding> = visible(app).into_iter().cloned().collect();
    if shown.is_empty() {
        let text = if app.data.findings.is_empty() {
            "No findings: the hardware checks found nothing (load a log with --nccl-log to check it too)."
        } else {
            "No finding matches the filter."
        };
        frame.render_widget(Paragraph::new(text).block(Block::new().borders(Borders::ALL).title(" Findings ")), area);
        return;
    }
    let selected = app.row().min(shown.len() - 1);
    let lines: Vec<Line<'static>> = shown
        .iter()
        .map(|f| {
            Line::from(vec![
                Span::styled(format!("{:<8}", f.severity.to_string()), style::severity(f.severity)),
                Span::raw(format!("{:<22} {}", f.code, f.title)),
            ])
        })
        .collect();
    let [list_area, detail_area] = Layout::vertical([
        Constraint::Length((shown.len() as u16 + 2).min(area.height / 2).max(3)),
        Constraint::Min(3),
    ])
    .areas(area);
    let title = format!(" Findings: {} (Enter for details) ", shown.len());
    crate::list::draw(frame, app, list_area, Block::new().borders(Borders::ALL).title(title), lines, selected);

    let finding = &shown[selected];
    let mut detail = vec![Line::styled(finding.title.clone(), style::heading())];
    for e in &finding.evidence {
        detail.push(Line::raw(format!("evidence  {}: {}", e.at, e.text)));
    }
    if let (Some(expected), Some(actual)) = (&finding.expected, &finding.actual) {
        detail.push(Line::raw(format!("expected  {expected}; actual {actual}")));
    }
    detail.push(Line::raw(format!("why       {}", finding.why)));
    detail.push(Line::raw(format!("fix       {}", finding.fix)));
    if let Some(suspects) = &finding.suspects {
        detail.push(Line::raw(format!("suspects  the lines do not say which cause; {}", suspects.basis)));
        for (i, s) in suspects.list.iter().enumerate() {
            detail.push(Line::raw(format!("  {}. {}: {} (check: {})", i + 1, s.code, s.title, s.check)));
        }
    }
    let block = Block::new().borders(Borders::ALL).title(format!(" {} ", finding.code));
    frame.render_widget(Paragraph::new(detail).wrap(Wrap { trim: false }).block(block), detail_area);
}
