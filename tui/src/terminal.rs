//! The terminal: raw mode, alternate screen and mouse capture on entry, and
//! always restored on the way out (normal exit, error, panic or Ctrl-c, which
//! arrives as a key in raw mode).

use std::io;
use std::time::Duration;

use ratatui::crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event, KeyEventKind};
use ratatui::crossterm::execute;

use crate::app::App;

/// Runs the UI until the user quits.
pub fn run(app: &mut App) -> io::Result<()> {
    let mut terminal = ratatui::try_init()?;
    // ratatui's hook restores raw mode and the screen; ours releases the mouse first.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = execute!(io::stdout(), DisableMouseCapture);
        hook(info);
    }));
    let result = execute!(io::stdout(), EnableMouseCapture).and_then(|()| event_loop(&mut terminal, app));
    let _ = execute!(io::stdout(), DisableMouseCapture);
    ratatui::restore();
    result
}

fn event_loop(terminal: &mut ratatui::DefaultTerminal, app: &mut App) -> io::Result<()> {
    terminal.draw(|frame| crate::ui::draw(frame, app))?;
    while !app.quit {
        // Poll so that a resize redraws promptly even with no input.
        if !event::poll(Duration::from_millis(250))? {
            continue;
        }
        match event::read()? {
            Event::Key(key) if key.kind == KeyEventKind::Press => app.on_key(key),
            Event::Mouse(mouse) => app.on_mouse(mouse),
            Event::Resize(..) => {}
            _ => continue,
        }
        terminal.draw(|frame| crate::ui::draw(frame, app))?;
    }
    Ok(())
}
