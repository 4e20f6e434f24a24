//! `topo-tui`: the terminal UI. It draws a [`UiData`] (a snapshot, an optional
//! NCCL report and the findings computed before it opened) and never probes
//! hardware itself. State and key handling live in [`app`], drawing in one
//! module per screen, the terminal in [`terminal`].

pub mod app;
mod bandwidth;
mod cluster;
mod findings;
mod job;
mod list;
mod matrix;
mod nccl;
mod nvlink;
mod overview;
mod pcie;
mod style;
pub mod terminal;
pub mod ui;

pub use app::{App, ClusterView, OpenNode, Screen, UiData};

/// The ratatui this crate draws with, for tests and embedders (TestBackend, key events).
pub use ratatui;
