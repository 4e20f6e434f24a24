//! The UI's state and what each key does to it. No drawing and no terminal
//! here, so every interaction is testable as plain data.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use topo_model::cluster::ClusterReport;
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
    /// With a directory of snapshots: the cluster, and how to open one node's
    /// file (its snapshot and findings) when the user drills into it.
    pub cluster: Option<ClusterView>,
}

/// Loads one node's snapshot file and its findings (provided by the caller: the
/// UI does not compute findings itself).
pub type OpenNode = Box<dyn Fn(&str) -> Option<(Snapshot, Vec<Finding>)>>;

pub struct ClusterView {
    pub report: ClusterReport,
    pub open: OpenNode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Cluster,
    Overview,
    Matrix,
    Pcie,
    NvLink,
    Nccl,
    Bandwidth,
    Findings,
    /// Flight Recorder dumps (`--fr`): where each rank of each process group stands.
    Job,
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
            Screen::Cluster => "Cluster",
            Screen::Overview => "Overview",
            Screen::Matrix => "Matrix",
            Screen::Pcie => "PCIe",
            Screen::NvLink => "NVLink",
            Screen::Nccl => "NCCL",
            Screen::Bandwidth => "Bandwidth",
            Screen::Findings => "Findings",
            Screen::Job => "Job",
        }
    }

    /// Slot in the per-screen selection table.
    fn slot(self) -> usize {
        match self {
            Screen::Cluster => 7,
            Screen::Job => 8,
            other => Screen::ALL.iter().position(|s| *s == other).unwrap_or(0),
        }
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
    /// Selected row per list screen (PCIe, NVLink, NCCL, Findings, Cluster).
    pub rows: [usize; 9],
    pub collapsed: std::collections::BTreeSet<topo_model::BusId>,
    pub quit: bool,
    pub hits: HitAreas,
    /// The job from Flight Recorder dumps (set after `new`): adds the Job screen.
    pub job: Option<topo_model::flight_recorder::JobReport>,
}

impl App {
    pub fn new(data: UiData) -> App {
        let matrix = data.snapshot.topology.matrix();
        let tree = crate::pcie::rows(&data.snapshot.topology);
        // Start on the first pair rather than a device and itself.
        let cell = if matrix.endpoints.len() > 1 { (0, 1) } else { (0, 0) };
        let screen = if data.cluster.is_some() { Screen::Cluster } else { Screen::Overview };
        App {
            data,
            matrix,
            tree,
            screen,
            help: false,
            details: false,
            filter: String::new(),
            editing_filter: false,
            cell,
            rows: [0; 9],
            collapsed: Default::default(),
            quit: false,
            hits: HitAreas::default(),
            job: None,
        }
    }

    pub fn row(&self) -> usize {
        self.rows[self.screen.slot()]
    }

    fn row_mut(&mut self) -> &mut usize {
        &mut self.rows[self.screen.slot()]
    }

    /// The screens on the tab bar: the cluster first when there is one.
    pub fn screens(&self) -> Vec<Screen> {
        let mut screens = Vec::with_capacity(8);
        if self.data.cluster.is_some() {
            screens.push(Screen::Cluster);
        }
        screens.extend(Screen::ALL);
        if self.job.is_some() {
            screens.push(Screen::Job);
        }
        screens
    }

    fn position(&self) -> usize {
        self.screens().iter().position(|s| *s == self.screen).unwrap_or(0)
    }

    /// Rows the current list screen shows (after the filter), for moving the selection.
    fn list_len(&self) -> usize {
        match self.screen {
            Screen::Pcie => crate::pcie::visible(self).len(),
            Screen::NvLink => crate::nvlink::rows(self).len(),
            Screen::Nccl => crate::nccl::communicators(self).len(),
            Screen::Findings => crate::findings::visible(self).len(),
            Screen::Cluster => crate::cluster::rows(self).len(),
            Screen::Job => crate::job::rows(self).len(),
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
            KeyCode::Tab => self.switch((self.position() + 1) % self.screens().len()),
            KeyCode::BackTab => self.switch((self.position() + self.screens().len() - 1) % self.screens().len()),
            KeyCode::Char(c @ '1'..='8') => self.switch(c as usize - '1' as usize),
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
                    self.screen = *screen;
                    self.details = false;
                    self.filter.clear();
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

    /// To the screen at `index` on the tab bar (ignored past its end).
    fn switch(&mut self, index: usize) {
        if let Some(screen) = self.screens().get(index) {
            self.screen = *screen;
            self.details = false;
            self.filter.clear();
        }
    }

    /// Drills into a node of the cluster: its snapshot and findings replace the
    /// shown ones, and the Overview opens on it.
    fn open_node(&mut self) {
        let Some(file) = crate::cluster::rows(self).get(self.row()).and_then(|r| r.file.clone()) else { return };
        let Some((snapshot, findings)) = self.data.cluster.as_ref().and_then(|c| (c.open)(&file)) else { return };
        self.matrix = snapshot.topology.matrix();
        self.tree = crate::pcie::rows(&snapshot.topology);
        self.cell = if self.matrix.endpoints.len() > 1 { (0, 1) } else { (0, 0) };
        self.collapsed.clear();
        self.rows[..7].fill(0);
        self.data.snapshot = snapshot;
        self.data.findings = findings;
        self.screen = Screen::Overview;
    }

    fn enter(&mut self) {
        match self.screen {
            Screen::Pcie => self.toggle_selected(),
            Screen::Matrix | Screen::Findings | Screen::Nccl | Screen::NvLink => self.details = !self.details,
            Screen::Cluster => self.open_node(),
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
