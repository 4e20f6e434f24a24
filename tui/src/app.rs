//! The UI's state and what each key does to it. No drawing and no terminal
//! here, so every interaction is testable as plain data.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use topo_model::nccl::NcclReport;
use topo_model::{Finding, Matrix, Snapshot};

use crate::pcie::TreeRow;

/// What the UI shows: a snapshot, and what was computed from it before the UI
/// opened (the UI never probes or parses).
pub struct UiData {
    pub snapshot: Snapshot,
    /// An NCCL report from `--nccl-log` (annotated with the hardware paths).
    pub nccl: Option<NcclReport>,
    /// `topo diagnose` findings for this node (and the log, when given).
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Overview,
    Matrix,
    Pcie,
    NvLink,
    Nccl,
    Bandwidth,
    Findings,
}

impl Screen {
    pub const ALL: [Screen; 7] = [
        Screen::Overview,
        Screen::Matrix,
        Screen::Pcie,
        Screen::NvLink,
        Screen::Nccl,
        Screen::Bandwidth,
        Screen::Findings,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Screen::Overview => "Overview",
            Screen::Matrix => "Matrix",
            Screen::Pcie => "PCIe",
            Screen::NvLink => "NVLink",
            Screen::Nccl => "NCCL",
            Screen::Bandwidth => "Bandwidth",
            Screen::Findings => "Findings",
        }
    }

    fn index(self) -> usize {
        Screen::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }
}

/// Where things were drawn last frame, for mouse clicks.
#[derive(Debug, Default, Clone)]
pub struct HitAreas {
    pub tabs: Vec<(Rect, Screen)>,
    /// The matrix grid: top-left of cell (0, 0), cell width and the visible
    /// first row and column.
    pub matrix: Option<MatrixGeometry>,
    /// A list's rows: its area and the index of its first visible row.
    pub list: Option<(Rect, usize)>,
}

#[derive(Debug, Clone, Copy)]
pub struct MatrixGeometry {
    pub area: Rect,
    pub cell_width: u16,
    pub first_row: usize,
    pub first_col: usize,
}

pub struct App {
    pub data: UiData,
    /// Derived once: the GPU/NIC matrix and the PCIe tree rows.
    pub matrix: Matrix,
    pub tree: Vec<TreeRow>,
    pub screen: Screen,
    pub help: bool,
    /// Enter: the details of the selected item, until Esc.
    pub details: bool,
    /// `/` typed: the filter being edited; applied to list screens.
    pub filter: String,
    pub editing_filter: bool,
    pub cell: (usize, usize),
    /// Selected row per list screen (PCIe, NVLink, NCCL, Findings).
    pub rows: [usize; 7],
    pub collapsed: std::collections::BTreeSet<topo_model::BusId>,
    pub quit: bool,
    pub hits: HitAreas,
}

impl App {
    pub fn new(data: UiData) -> App {
        let matrix = data.snapshot.topology.matrix();
        let tree = crate::pcie::rows(&data.snapshot.topology);
        // Start on the first pair rather than a device and itself.
        let cell = if matrix.endpoints.len() > 1 { (0, 1) } else { (0, 0) };
        App {
            data,
            matrix,
            tree,
            screen: Screen::Overview,
            help: false,
            details: false,
            filter: String::new(),
            editing_filter: false,
            cell,
            rows: [0; 7],
            collapsed: Default::default(),
            quit: false,
            hits: HitAreas::default(),
        }
    }

    pub fn row(&self) -> usize {
        self.rows[self.screen.index()]
    }

    fn row_mut(&mut self) -> &mut usize {
        &mut self.rows[self.screen.index()]
    }

    /// Rows the current list screen shows (after the filter), for moving the selection.
    fn list_len(&self) -> usize {
        match self.screen {
            Screen::Pcie => crate::pcie::visible(self).len(),
            Screen::NvLink => crate::nvlink::rows(self).len(),
            Screen::Nccl => crate::nccl::communicators(self).len(),
            Screen::Findings => crate::findings::visible(self).len(),
            _ => 0,
        }
    }

    pub fn on_key(&mut self, key: KeyEvent) {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.quit = true;
            return;
        }
        if self.editing_filter {
            match key.code {
                KeyCode::Enter => self.editing_filter = false,
                KeyCode::Esc => {
                    self.editing_filter = false;
                    self.filter.clear();
                }
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                KeyCode::Char(c) => self.filter.push(c),
                _ => {}
            }
            *self.row_mut() = 0;
            return;
        }
        if self.help {
            // Any key closes the help; `q` still quits.
            self.help = false;
            if key.code == KeyCode::Char('q') {
                self.quit = true;
            }
            return;
        }
        match key.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('?') => self.help = true,
            KeyCode::Tab => self.switch((self.screen.index() + 1) % Screen::ALL.len()),
            KeyCode::BackTab => self.switch((self.screen.index() + Screen::ALL.len() - 1) % Screen::ALL.len()),
            KeyCode::Char(c @ '1'..='7') => self.switch(c as usize - '1' as usize),
            KeyCode::Char('/') => {
                self.editing_filter = true;
                self.filter.clear();
            }
            KeyCode::Esc => {
                if self.details {
                    self.details = false;
                } else {
                    self.filter.clear();
                }
            }
            KeyCode::Enter => self.enter(),
            KeyCode::Char(' ') if self.screen == Screen::Pcie => self.toggle_selected(),
            KeyCode::Up | KeyCode::Char('k') => self.step(0, -1),
            KeyCode::Down | KeyCode::Char('j') => self.step(0, 1),
            KeyCode::Left | KeyCode::Char('h') => self.step(-1, 0),
            KeyCode::Right | KeyCode::Char('l') => self.step(1, 0),
            KeyCode::PageUp => self.step(0, -10),
            KeyCode::PageDown => self.step(0, 10),
            KeyCode::Home | KeyCode::Char('g') => self.step(0, isize::MIN / 2),
            KeyCode::End | KeyCode::Char('G') => self.step(0, isize::MAX / 2),
            _ => {}
        }
    }

    pub fn on_mouse(&mut self, mouse: MouseEvent) {
        match mouse.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                let (x, y) = (mouse.column, mouse.row);
                let inside = |r: &Rect| x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height;
                if let Some((_, screen)) = self.hits.tabs.iter().find(|(r, _)| inside(r)) {
                    self.switch(screen.index());
                    return;
                }
                if self.screen == Screen::Matrix
                    && let Some(g) = self.hits.matrix
                    && inside(&g.area)
                {
                    let col = g.first_col + usize::from((x - g.area.x) / g.cell_width.max(1));
                    let row = g.first_row + usize::from(y - g.area.y);
                    let n = self.matrix.endpoints.len();
                    if row < n && col < n {
                        self.cell = (row, col);
                    }
                    return;
                }
                if let Some((area, first)) = self.hits.list
                    && inside(&area)
                {
                    let row = first + usize::from(y - area.y);
                    if row < self.list_len() {
                        *self.row_mut() = row;
                    }
                }
            }
            MouseEventKind::ScrollDown => self.step(0, 3),
            MouseEventKind::ScrollUp => self.step(0, -3),
            _ => {}
        }
    }

    fn switch(&mut self, index: usize) {
        self.screen = Screen::ALL[index.min(Screen::ALL.len() - 1)];
        self.details = false;
        self.filter.clear();
    }

    fn enter(&mut self) {
        match self.screen {
            Screen::Pcie => self.toggle_selected(),
            Screen::Matrix | Screen::Findings | Screen::Nccl | Screen::NvLink => self.details = !self.details,
            _ => {}
        }
    }

    fn toggle_selected(&mut self) {
        let visible = crate::pcie::visible(self);
        if let Some(row) = visible.get(self.row()).map(|i| &self.tree[*i])
            && row.has_children
            && !self.collapsed.remove(&row.bus_id)
        {
            self.collapsed.insert(row.bus_id);
        }
    }

    fn step(&mut self, dx: isize, dy: isize) {
        let clamp = |value: usize, delta: isize, len: usize| -> usize {
            if len == 0 {
                return 0;
            }
            (value as isize).saturating_add(delta).clamp(0, len as isize - 1) as usize
        };
        if self.screen == Screen::Matrix {
            let n = self.matrix.endpoints.len();
            self.cell = (clamp(self.cell.0, dy, n), clamp(self.cell.1, dx, n));
            return;
        }
        let len = self.list_len();
        let row = clamp(self.row(), dy, len);
        *self.row_mut() = row;
    }

    /// Whether `text` passes the current filter (case-insensitive substring).
    pub fn matches(&self, text: &str) -> bool {
        self.filter.is_empty() || text.to_lowercase().contains(&self.filter.to_lowercase())
    }
}
