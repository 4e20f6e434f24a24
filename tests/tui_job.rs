//! The Job screen drawn into ratatui's `TestBackend`: the real 8x H100 snapshot,
//! a real 4-node NCCL log's rank table and the real Flight Recorder dumps of the
//! sleeping-rank job (tests/fixtures/flight-recorder/sleep).

use std::path::PathBuf;

use topo::sources::{self, Origin};
use topo_tui::ratatui::Terminal;
use topo_tui::ratatui::backend::TestBackend;
use topo_tui::ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use topo_tui::{App, Screen, UiData};

const H100: &str = "tests/fixtures/snapshots/ibm-gx3d-h100x8-nvml.yaml";
const LOG: &str = "tests/fixtures/nccl-logs/043-nccl2234-4node-8rank-collnet-sharp-hang-full.log";

fn app(case: &str) -> App {
    let snapshot = sources::load(Origin::File(std::path::Path::new(H100))).unwrap();
    let report = sources::nccl_report(&[PathBuf::from(LOG)]);
    let dumps = topo::job_inputs::split(&[PathBuf::from(format!("tests/fixtures/flight-recorder/{case}"))]).dumps;
    let job = topo::job_inputs::job_report(&dumps, &report);
    let findings = topo::diagnose::hang::findings(&job);
    let mut app = App::new(UiData { snapshot, nccl: Some(report), findings, cluster: None });
    app.job = Some(job);
    app
}

fn render(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| topo_tui::ui::draw(frame, app)).unwrap();
    terminal.backend().to_string()
}

fn key(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
}

#[test]
fn job_screen_is_the_last_tab_and_marks_the_stuck_rank() {
    let mut app = app("sleep");
    assert_eq!(app.screens().last(), Some(&Screen::Job));
    key(&mut app, KeyCode::Char('8'));
    assert_eq!(app.screen, Screen::Job);
    let text = render(&mut app, 120, 20);
    let stuck = text.lines().find(|l| l.contains("STUCK")).unwrap();
    assert!(stuck.contains("gpu36") && stuck.contains(" 2 ") && stuck.contains("#5 all_gather"), "{stuck}");
    assert_eq!(text.lines().filter(|l| l.contains("#6 all_reduce") && l.contains("waiting")).count(), 3, "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn job_screen_filter_and_mismatch_detail() {
    let mut app = app("skip");
    key(&mut app, KeyCode::Char('8'));
    key(&mut app, KeyCode::Char('/'));
    for c in "MISMATCH".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    let text = render(&mut app, 120, 20);
    assert!(text.contains("#6: rank 1 called barrier where others called all_reduce"), "{text}");
    assert_eq!(text.matches("MISMATCH").count(), 2, "{text}"); // the row and the filter hint
}

#[test]
fn no_job_screen_without_dumps() {
    let snapshot = sources::load(Origin::File(std::path::Path::new(H100))).unwrap();
    let app = App::new(UiData { snapshot, nccl: None, findings: Vec::new(), cluster: None });
    assert!(!app.screens().contains(&Screen::Job));
}
