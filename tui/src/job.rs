//! The Job screen (`topo show --fr DUMPS`): every rank of every process group
//! from the Flight Recorder dumps, grouped by host, with its last entered and
//! last completed collective; the ranks the others wait for in red.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use topo_model::flight_recorder::{GroupState, RankState};

use crate::app::App;
use crate::style;

/// One row: a group's rank, in host order.
pub struct JobRow<'a> {
    pub group: &'a GroupState,
    pub member: &'a RankState,
}

pub fn rows(app: &App) -> Vec<JobRow<'_>> {
    let Some(job) = &app.job else { return Vec::new() };
    let mut out = Vec::new();
    for group in &job.groups {
        let mut members: Vec<&RankState> = group.members.iter().collect();
        members.sort_by(|a, b| a.host.cmp(&b.host).then(a.rank.cmp(&b.rank)));
        for member in members {
            let text = format!(
                "{} {} {} {}",
                group.name,
                member.host.as_deref().unwrap_or(""),
                member.rank,
                group.mark(member.rank)
            );
            if app.matches(&text) {
                out.push(JobRow { group, member });
            }
        }
    }
    out
}

fn mark_style(mark: &str) -> Style {
    match mark {
        "STUCK" | "NO DUMP" | "MISMATCH" => style::bad(),
        "waiting" | "late" => style::dim(),
        _ => Style::new(),
    }
}

pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let shown = rows(app);
    if shown.is_empty() {
        let text = if app.job.is_none() {
            "No Flight Recorder dumps (give them with --fr)."
        } else {
            "No rank matches the filter."
        };
        frame.render_widget(Paragraph::new(text).block(Block::new().borders(Borders::ALL).title(" Job ")), area);
        return;
    }
    let selected = app.row().min(shown.len() - 1);
    let lines: Vec<Line<'static>> = shown
        .iter()
        .map(|row| {
            let m = row.member;
            let mark = row.group.mark(m.rank);
            Line::from(vec![
                Span::raw(format!(
                    "{:<6} {:<14} {:>6} {:>4}  {:<36} {:>9}  ",
                    row.group.name,
                    m.host.as_deref().unwrap_or("?"),
                    m.rank,
                    m.cuda_dev.map_or("-".into(), |d| d.to_string()),
                    m.entered_text(),
                    m.last_completed.map_or("-".into(), |c| format!("#{c}")),
                )),
                Span::styled(mark.to_string(), mark_style(mark)),
            ])
        })
        .collect();
    let [list_area, detail_area] = Layout::vertical([Constraint::Min(3), Constraint::Length(6)]).areas(area);
    let row = &shown[selected];
    let v = &row.group.verdict;
    let list = |ranks: &[u32]| {
        if ranks.is_empty() {
            "none".to_string()
        } else {
            ranks.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        }
    };
    let mut detail = vec![Line::styled(
        format!(
            "process group {} {} · frontier #{}",
            row.group.name,
            row.group.desc,
            row.group.frontier.map_or("-".into(), |f| f.to_string())
        ),
        style::heading(),
    )];
    detail.push(Line::raw(format!(
        "behind (stuck or slow): {} · waiting: {} · no dump: {}",
        list(&v.behind),
        list(&v.waiting),
        list(&v.no_dump)
    )));
    for m in v.mismatches.iter().take(2) {
        detail.push(Line::styled(
            format!("#{}: rank {} called {} where others called {}", m.seq, list(&m.odd), m.actual, m.expected),
            style::bad(),
        ));
    }
    let block = Block::new().borders(Borders::ALL).title(format!(" rank {} ", row.member.rank));
    drop(shown);
    let title = " Job: group  host  rank  gpu  last entered  completed ";
    crate::list::draw(frame, app, list_area, Block::new().borders(Borders::ALL).title(title), lines, selected);

    frame.render_widget(Paragraph::new(detail).wrap(Wrap { trim: false }).block(block), detail_area);
}
