//! The terminal UI drawn into ratatui's `TestBackend`: every screen on the
//! recorded 8x H100 NVSwitch node (with a real 4-node NCCL log holding
//! nccl-tests output), the 4x RTX 6000 Ada PCIe box (with a real 2-GPU log),
//! and a one-GPU node, at 80x24 and 200x60; a tiny terminal; and the keys and
//! mouse clicks users of htop and nvtop expect.

use topo::sources::{self, Origin};
use topo_tui::ratatui::Terminal;
use topo_tui::ratatui::backend::TestBackend;
use topo_tui::ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use topo_tui::{App, Screen, UiData};

/// Paths relative to the crate root (the tests' working directory), so the
/// evidence text in snapshots is the same in any clone.
fn app(snapshot: &str, logs: &[&str], keep_gpus: Option<usize>) -> App {
    let mut snapshot = sources::load(Origin::File(std::path::Path::new(snapshot))).unwrap();
    if let Some(n) = keep_gpus {
        snapshot.topology.gpus.truncate(n);
    }
    let nccl = (!logs.is_empty()).then(|| {
        let paths: Vec<std::path::PathBuf> = logs.iter().map(Into::into).collect();
        let mut report = sources::nccl_report(&paths);
        report.annotate(&snapshot.topology, snapshot.host.hostname.as_deref());
        report
    });
    let findings = match &nccl {
        Some(report) => topo::diagnose::diagnose(report, Some(&snapshot)),
        None => topo::checks::hardware(&snapshot),
    };
    App::new(UiData { snapshot, nccl, findings, cluster: None })
}

const H100: &str = "tests/fixtures/snapshots/ibm-gx3d-h100x8-nvml.yaml";
const ASUS: &str = "tests/fixtures/snapshots/asus-esc8000a-e12.yaml";
const LOG_4NODE: &str =
    "tests/fixtures/nccl-logs/044-nccl2234-4node-8rank-sharp-no-resource-collnet-fallback-ib-pxn-full.log";
const LOG_2GPU: &str = "tests/fixtures/nccl-logs/001-nccl2277-1node-2gpu-a100-nvlink-graph-alloc-full.log";

fn render(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| topo_tui::ui::draw(frame, app)).unwrap();
    terminal.backend().to_string()
}

fn key(app: &mut App, code: KeyCode) {
    app.on_key(KeyEvent::new(code, KeyModifiers::NONE));
}

#[test]
fn every_screen_on_three_machines_at_two_sizes() {
    let machines: [(&str, App); 3] = [
        ("h100-nvswitch", app(H100, &[LOG_4NODE], None)),
        ("rtx6000ada-pcie", app(ASUS, &[LOG_2GPU], None)),
        // Labelled hand-made: the ASUS box's real PCIe tree with only its first GPU kept.
        ("one-gpu", app(ASUS, &[], Some(1))),
    ];
    for (name, mut app) in machines {
        for (i, screen) in Screen::ALL.iter().enumerate() {
            key(&mut app, KeyCode::Char(char::from(b'1' + i as u8)));
            assert_eq!(app.screen, *screen);
            for (width, height) in [(80, 24), (200, 60)] {
                let text = render(&mut app, width, height);
                insta::assert_snapshot!(format!("{name}-{}-{width}x{height}", screen.title().to_lowercase()), text);
            }
        }
    }
}

#[test]
fn tiny_terminal_gets_a_message() {
    let mut app = app(H100, &[], None);
    let text = render(&mut app, 30, 6);
    assert!(text.contains("terminal too small: 30x6"), "{text}");
    // Every screen, and growing back.
    for i in 0..7 {
        key(&mut app, KeyCode::Char(char::from(b'1' + i)));
        assert!(render(&mut app, 59, 40).contains("terminal too small"));
    }
    let fits = render(&mut app, 60, 12);
    assert!(fits.contains("1 Overview") && !fits.contains("too small"), "{fits}");
}

#[test]
fn keys_switch_move_filter_fold_and_quit() {
    let mut app = app(H100, &[LOG_4NODE], None);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.screen, Screen::Matrix);
    key(&mut app, KeyCode::BackTab);
    key(&mut app, KeyCode::BackTab);
    assert_eq!(app.screen, Screen::Findings);
    // Matrix: move with arrows and hjkl; the path follows the cursor.
    key(&mut app, KeyCode::Char('2'));
    key(&mut app, KeyCode::Right);
    key(&mut app, KeyCode::Char('l'));
    key(&mut app, KeyCode::Char('j'));
    assert_eq!(app.cell, (1, 3), "the cursor starts on the first pair, (0, 1)");
    assert!(render(&mut app, 120, 40).contains("GPU1 (0000:ae:00.0) -> GPU3 (0000:c2:00.0): NV18"));
    // PCIe: fold the first root port, then filter.
    key(&mut app, KeyCode::Char('3'));
    let before = render(&mut app, 120, 100).lines().filter(|l| l.contains("0000:")).count();
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Enter);
    let after = render(&mut app, 120, 100).lines().filter(|l| l.contains("0000:")).count();
    assert_eq!(
        before - after,
        5,
        "the folded root port hides the switch's upstream and two downstream ports, a GPU and a NIC"
    );
    key(&mut app, KeyCode::Char('/'));
    for c in "mlx5_3".chars() {
        key(&mut app, KeyCode::Char(c));
    }
    key(&mut app, KeyCode::Enter);
    let filtered = render(&mut app, 120, 40);
    assert!(filtered.contains("NIC mlx5_3") && !filtered.contains("NIC mlx5_2"), "{filtered}");
    key(&mut app, KeyCode::Esc);
    assert!(app.filter.is_empty());
    // Help overlay, then any key closes it.
    key(&mut app, KeyCode::Char('?'));
    assert!(render(&mut app, 120, 40).contains("this help (any key closes it)"));
    key(&mut app, KeyCode::Char('x'));
    assert!(!app.help && !app.quit);
    key(&mut app, KeyCode::Char('q'));
    assert!(app.quit);
    let mut other = self::app(H100, &[], None);
    other.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert!(other.quit);
}

#[test]
fn mouse_clicks_tabs_cells_and_rows() {
    let mut app = app(H100, &[LOG_4NODE], None);
    let click = |app: &mut App, column: u16, row: u16| {
        app.on_mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column,
            row,
            modifiers: KeyModifiers::NONE,
        })
    };
    let text = render(&mut app, 120, 40);
    let first_line = text.lines().next().unwrap();
    // TestBackend's text starts each line with a quote.
    let column = first_line.find("2 Matrix").unwrap() as u16 - 1;
    click(&mut app, column, 0);
    assert_eq!(app.screen, Screen::Matrix);
    render(&mut app, 120, 40);
    // Grid starts inside the border: label column 8, cells 7 wide, header row.
    click(&mut app, 1 + 8 + 7 * 3 + 2, 1 + 1 + 1 + 5);
    assert_eq!(app.cell, (5, 3));
    key(&mut app, KeyCode::Char('7'));
    render(&mut app, 120, 40);
    click(&mut app, 5, 3);
    assert_eq!(app.row(), 1);
}

/// A snapshot carrying `topo probe` results (measured on the stand-in GPU
/// libraries over the ASUS box's real sysfs tree): the Bandwidth screen charts
/// the probe's collectives against their expected ring bandwidth.
#[test]
fn bandwidth_screen_charts_probe_results() {
    let mut app = app("tests/fixtures/snapshots/asus-esc8000a-e12-standin-probe.yaml", &[], None);
    let position = Screen::ALL.iter().position(|s| *s == Screen::Bandwidth).unwrap();
    key(&mut app, KeyCode::Char(char::from(b'1' + position as u8)));
    let text = render(&mut app, 120, 30);
    assert!(
        text.contains("topo probe all_reduce: peak busbw 19.38 GB/s over 7 sizes; 141% of the expected 13.8 GB/s"),
        "{text}"
    );
    assert!(text.contains("topo probe all_gather: peak busbw"), "{text}");
    insta::assert_snapshot!("standin-probe-bandwidth-120x30", text);
}

/// The help overlay at 80x24 and the "too small" message at 40x10 are shown
/// whole (both were cut off at these sizes), and a host name carrying an
/// escape sequence never puts ESC or BEL in a cell.
#[test]
fn help_and_too_small_fit_common_sizes_and_no_control_reaches_a_cell() {
    let mut app = app(ASUS, &[], None);
    key(&mut app, KeyCode::Char('?'));
    let help = render(&mut app, 80, 24);
    for (_, what) in [("Enter", "open a cluster node"), ("1 .. 8", "(Cluster first when there is one)")] {
        let last_word = what.split(' ').next_back().unwrap();
        assert!(help.contains(last_word), "{what}: {help}");
    }
    assert!(help.contains("open a") && help.contains("cluster node"), "{help}");
    key(&mut app, KeyCode::Char('x'));
    let small = render(&mut app, 40, 10);
    assert!(small.contains("60x12") && small.contains("quits"), "{small}");

    let mut evil = sources::load(Origin::File(std::path::Path::new(ASUS))).unwrap();
    evil.host.hostname = Some("coyote2\u{1b}]0;owned\u{7}\u{1b}[2J".into());
    let findings = topo::checks::hardware(&evil);
    let mut app = App::new(UiData { snapshot: evil, nccl: None, findings, cluster: None });
    let screen = render(&mut app, 120, 40);
    assert!(!screen.contains('\u{1b}') && !screen.contains('\u{7}'));
    // ratatui drops control characters from text it lays out; what reaches a cell another way
    // is drawn as its picture (ui::draw).
    assert!(screen.contains("coyote2"), "{screen}");
}
