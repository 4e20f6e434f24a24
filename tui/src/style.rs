//! Colours: path classes as nvidia-smi users read them (NVLink best, then PCIe
//! switch, host bridge, NUMA node, across sockets), severities, selection.

use ratatui::style::{Color, Modifier, Style};
use topo_model::{Severity, SmiClass};

pub fn class(class: SmiClass) -> Style {
    let colour = match class {
        SmiClass::Same => Color::DarkGray,
        SmiClass::Nv(_) => Color::Green,
        SmiClass::Pix => Color::Cyan,
        SmiClass::Pxb => Color::Blue,
        SmiClass::Phb => Color::Yellow,
        SmiClass::Node => Color::Magenta,
        SmiClass::Sys => Color::Red,
        _ => Color::Gray,
    };
    Style::new().fg(colour)
}

pub fn severity(severity: Severity) -> Style {
    match severity {
        Severity::Error => Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
        Severity::Warning => Style::new().fg(Color::Yellow),
        Severity::Info => Style::new().fg(Color::Cyan),
    }
}

pub fn selected() -> Style {
    Style::new().add_modifier(Modifier::REVERSED)
}

pub fn heading() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

pub fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

pub fn bad() -> Style {
    Style::new().fg(Color::Red)
}
