//! A scrolling list of lines with one selected row: used by every list screen,
//! so scrolling and mouse hits work the same everywhere.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph};

use crate::app::App;
use crate::style;

/// Draws `lines` in `area` (inside `block`) with row `selected` highlighted and
/// kept in view; records the rows' area for mouse clicks.
pub fn draw(frame: &mut Frame, app: &mut App, area: Rect, block: Block, lines: Vec<Line<'static>>, selected: usize) {
    let inner = block.inner(area);
    let height = usize::from(inner.height).max(1);
    let first = selected.saturating_sub(height - 1);
    let visible: Vec<Line> = lines
        .into_iter()
        .enumerate()
        .skip(first)
        .take(height)
        .map(|(i, line)| if i == selected { line.style(style::selected()) } else { line })
        .collect();
    frame.render_widget(Paragraph::new(visible).block(block), area);
    app.hits.list = Some((inner, first));
}
