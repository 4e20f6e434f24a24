//! One frame: the tab bar, the current screen, the key hints, and the help
//! overlay or the filter prompt on top.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use crate::app::{App, Screen};
use crate::style;

/// Below this the screens cannot be laid out; a message is drawn instead.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 12;

/// Draws the screen, then shows every control character that text from the
/// input put in a cell as its visible picture (ESC as ␛): a snapshot's host
/// name or a log line can never move the cursor, retitle or clear the terminal.
pub fn draw(frame: &mut Frame, app: &mut App) {
    draw_screen(frame, app);
    for cell in frame.buffer_mut().content.iter_mut() {
        if cell.symbol().chars().any(char::is_control) {
            let shown: String = cell.symbol().chars().map(control_picture).collect();
            cell.set_symbol(&shown);
        }
    }
}

/// A control character's picture from the Control Pictures block (U+2400).
pub fn control_picture(c: char) -> char {
    match c as u32 {
        code @ 0..0x20 => char::from_u32(0x2400 + code).unwrap_or('?'),
        0x7f => '\u{2421}',
        code if c.is_control() => {
            let _ = code;
            '\u{fffd}'
        }
        _ => c,
    }
}

fn draw_screen(frame: &mut Frame, app: &mut App) {
    let area = frame.area();
    app.hits = Default::default();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let text = format!(
            "terminal too small: {}x{}, topo needs {MIN_WIDTH}x{MIN_HEIGHT} (q quits)",
            area.width, area.height
        );
        // Wrapped: the message is longer than the narrow terminals it is for.
        frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
        return;
    }
    let [tabs, body, footer] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1), Constraint::Length(1)]).areas(area);
    draw_tabs(frame, app, tabs);
    match app.screen {
        Screen::Cluster => crate::cluster::draw(frame, app, body),
        Screen::Overview => crate::overview::draw(frame, app, body),
        Screen::Matrix => crate::matrix::draw(frame, app, body),
        Screen::Pcie => crate::pcie::draw(frame, app, body),
        Screen::NvLink => crate::nvlink::draw(frame, app, body),
        Screen::Nccl => crate::nccl::draw(frame, app, body),
        Screen::Bandwidth => crate::bandwidth::draw(frame, app, body),
        Screen::Findings => crate::findings::draw(frame, app, body),
        Screen::Job => crate::job::draw(frame, app, body),
    }
    let hint = if app.editing_filter {
        Line::from(vec![
            Span::styled("filter: ", style::heading()),
            Span::raw(format!("{}▏ (Enter apply, Esc clear)", app.filter)),
        ])
    } else if !app.filter.is_empty() {
        Line::raw(format!("filter \"{}\" (Esc clears) · ? help · q quit", app.filter))
    } else {
        Line::styled("Tab/digits screens · arrows move · Enter details · / filter · ? help · q quit", style::dim())
    };
    frame.render_widget(Paragraph::new(hint), footer);
    if app.help {
        draw_help(frame, area);
    }
}

fn draw_tabs(frame: &mut Frame, app: &mut App, area: Rect) {
    let host = app.data.snapshot.host.hostname.clone().unwrap_or_else(|| "topo".into());
    let mut spans = vec![Span::styled(format!(" {host} "), style::heading())];
    let mut x = area.x + host.chars().count() as u16 + 2;
    for (i, screen) in app.screens().iter().enumerate() {
        let label = format!(" {} {} ", i + 1, screen.title());
        let width = label.chars().count() as u16;
        let tab_style = if *screen == app.screen { style::selected() } else { Default::default() };
        if x + width <= area.x + area.width {
            app.hits.tabs.push((Rect { x, y: area.y, width, height: 1 }, *screen));
        }
        spans.push(Span::styled(label, tab_style));
        spans.push(Span::raw("│"));
        x += width + 1;
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

const HELP: &[(&str, &str)] = &[
    ("q, Ctrl-c", "quit"),
    ("?", "this help (any key closes it)"),
    ("Tab, Shift-Tab", "next / previous screen"),
    ("1 .. 8", "the screens in tab order (Cluster first when there is one)"),
    ("arrows, h j k l", "move; PgUp/PgDn, g/G jump"),
    ("Enter", "details (path, finding); fold a PCIe subtree; open a cluster node"),
    ("Space", "fold a PCIe subtree"),
    ("Esc", "back: close details, clear the filter"),
    ("/", "filter the rows of list screens"),
    ("mouse", "click a tab, a matrix cell or a row; wheel scrolls"),
];

/// The help box: as wide as its longest line or the terminal, each line
/// wrapped under its description when narrower (never cut off at 80 columns).
fn draw_help(frame: &mut Frame, area: Rect) {
    const KEYS: usize = 18;
    let longest = HELP.iter().map(|(_, what)| KEYS + 1 + what.chars().count()).max().unwrap_or(0) as u16;
    let width = (longest + 2).min(area.width);
    let room = usize::from(width.saturating_sub(2)).saturating_sub(KEYS + 1).max(10);
    let mut lines: Vec<Line> = Vec::new();
    for (keys, what) in HELP {
        let mut row = String::new();
        let mut first = true;
        for word in what.split(' ') {
            if !row.is_empty() && row.chars().count() + 1 + word.chars().count() > room {
                let lead = if first { *keys } else { "" };
                lines.push(Line::raw(format!("{lead:<KEYS$} {row}")));
                row.clear();
                first = false;
            }
            if !row.is_empty() {
                row.push(' ');
            }
            row.push_str(word);
        }
        let lead = if first { *keys } else { "" };
        lines.push(Line::raw(format!("{lead:<KEYS$} {row}")));
    }
    let height = (lines.len() as u16 + 2).min(area.height);
    let [row] = Layout::vertical([Constraint::Length(height)]).flex(Flex::Center).areas(area);
    let [popup] = Layout::horizontal([Constraint::Length(width)]).flex(Flex::Center).areas(row);
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(lines).block(Block::new().borders(Borders::ALL).title(" keys ")), popup);
}
