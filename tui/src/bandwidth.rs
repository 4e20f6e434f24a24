//! Bandwidth: measured results against what the links should carry: the
//! collectives of a `topo probe` run stored in the snapshot, and nccl-tests
//! runs found in the `--nccl-log` input; busbw against message size per run,
//! with the expected line when known (the slowest path of the ring).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph, Wrap};
use topo_model::nccl::NcclTestsRun;

use crate::app::App;

/// One run on the chart: its name, (log2 bytes, busbw) points and the expected busbw.
type Series = (String, Vec<(f64, f64)>, Option<f64>);

const COLOURS: [Color; 6] = [Color::Green, Color::Cyan, Color::Yellow, Color::Magenta, Color::Blue, Color::Red];

/// The bandwidth the run's ring should reach: the slowest path between
/// consecutive ranks' GPUs, when every rank's GPU is in the snapshot.
pub fn expected_busbw(app: &App, run: &NcclTestsRun) -> Option<f64> {
    let topology = &app.data.snapshot.topology;
    let gpus: Option<Vec<topo_model::BusId>> =
        run.ranks.iter().map(|r| r.bus_id.filter(|b| topology.gpu(*b).is_some())).collect();
    let gpus = gpus?;
    if gpus.len() < 2 {
        return None;
    }
    (0..gpus.len())
        .map(|i| topology.path(gpus[i], gpus[(i + 1) % gpus.len()]).expected.map(|b| b.gbps()))
        .try_fold(f64::INFINITY, |low, bw| bw.map(|bw| low.min(bw)))
}

pub fn draw(frame: &mut Frame, app: &mut App, area: Rect) {
    let all_runs: Vec<NcclTestsRun> = app.data.nccl.iter().flat_map(|r| r.nccl_tests.iter().cloned()).collect();
    let runs: Vec<NcclTestsRun> = all_runs.iter().filter(|r| !r.rows.is_empty()).cloned().collect();
    let probe_series: Vec<Series> = app
        .data
        .snapshot
        .probe
        .iter()
        .flat_map(|p| p.collectives.iter())
        .map(|c| {
            let points = c.rows.iter().filter(|r| r.bytes > 0).map(|r| ((r.bytes as f64).log2(), r.busbw.gbps()));
            (format!("topo probe {}", c.collective.name()), points.collect(), c.expectation.expected.map(|e| e.gbps()))
        })
        .collect();
    if runs.is_empty() && !all_runs.is_empty() && probe_series.is_empty() {
        // Only the closing `Avg bus bandwidth` lines made it into the log.
        let lines: Vec<Line> = all_runs
            .iter()
            .map(|r| {
                let avg = r.avg_bus_bandwidth.map_or("?".into(), |a| format!("{a:.2}"));
                let name = r.test.clone().unwrap_or_else(|| "nccl-tests run".into());
                Line::raw(format!("{name}: avg busbw {avg} GB/s (the log holds no size table to chart)"))
            })
            .collect();
        frame.render_widget(Paragraph::new(lines).block(Block::new().borders(Borders::ALL).title(" Bandwidth ")), area);
        return;
    }
    if runs.is_empty() && probe_series.is_empty() {
        let text = "No bandwidth measurements in this snapshot or log. `topo probe --save FILE` results and \
                    nccl-tests output in an --nccl-log input (all_reduce_perf and friends) are charted here: busbw \
                    against message size, with the bandwidth the detected links should carry.";
        frame.render_widget(
            Paragraph::new(text)
                .wrap(Wrap { trim: false })
                .block(Block::new().borders(Borders::ALL).title(" Bandwidth ")),
            area,
        );
        return;
    }
    let series: Vec<Series> = runs
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let name = run.test.clone().unwrap_or_else(|| format!("run {}", i + 1));
            let points = run
                .rows
                .iter()
                .filter(|r| r.bytes > 0)
                .map(|r| ((r.bytes as f64).log2(), r.out_of_place.busbw))
                .collect();
            (name, points, expected_busbw(app, run))
        })
        .chain(probe_series)
        .collect();
    let all = series.iter().flat_map(|(_, p, _)| p.iter());
    let (mut x_min, mut x_max, mut y_max) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for (x, y) in all {
        x_min = x_min.min(*x);
        x_max = x_max.max(*x);
        y_max = y_max.max(*y);
    }
    let expected_lines: Vec<(String, Vec<(f64, f64)>)> = series
        .iter()
        .filter_map(|(name, _, expected)| {
            expected.map(|e| (format!("{name} expected {e:.0} GB/s"), vec![(x_min, e), (x_max, e)]))
        })
        .collect();
    for (_, line) in &expected_lines {
        y_max = y_max.max(line[0].1);
    }
    let mut datasets: Vec<Dataset> = series
        .iter()
        .enumerate()
        .map(|(i, (name, points, _))| {
            Dataset::default()
                .name(format!("{name} busbw"))
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::new().fg(COLOURS[i % COLOURS.len()]))
                .data(points)
        })
        .collect();
    for (name, line) in &expected_lines {
        datasets.push(
            Dataset::default()
                .name(name.clone())
                .marker(Marker::Dot)
                .graph_type(GraphType::Line)
                .style(Style::new().fg(Color::DarkGray))
                .data(line),
        );
    }
    let size = |log2: f64| {
        let bytes = 2f64.powf(log2);
        match bytes {
            b if b >= (1u64 << 30) as f64 => format!("{:.0}G", b / (1u64 << 30) as f64),
            b if b >= (1u64 << 20) as f64 => format!("{:.0}M", b / (1u64 << 20) as f64),
            b if b >= 1024.0 => format!("{:.0}K", b / 1024.0),
            b => format!("{b:.0}"),
        }
    };
    let y_top = (y_max * 1.1).max(1.0);
    let chart = Chart::new(datasets)
        .block(Block::new().borders(Borders::ALL).title(" busbw (GB/s) by message size "))
        .x_axis(Axis::default().bounds([x_min, x_max.max(x_min + 1.0)]).labels([
            size(x_min),
            size((x_min + x_max) / 2.0),
            size(x_max),
        ]))
        .y_axis(Axis::default().bounds([0.0, y_top]).labels([
            "0".to_string(),
            format!("{:.0}", y_top / 2.0),
            format!("{y_top:.0}"),
        ]));
    let summary: Vec<Line> = runs
        .iter()
        .zip(&series)
        .map(|(run, (name, _, expected))| {
            let avg = run.avg_bus_bandwidth.map_or("?".into(), |a| format!("{a:.2}"));
            let peak = run.rows.iter().map(|r| r.out_of_place.busbw).fold(0.0, f64::max);
            let ratio = expected
                .map_or(String::new(), |e| format!("; peak {:.0}% of the expected {e:.1} GB/s", 100.0 * peak / e));
            Line::raw(format!("{name}: {} ranks, avg busbw {avg} GB/s, peak {peak:.2} GB/s{ratio}", run.ranks.len()))
        })
        .chain(series.iter().skip(runs.len()).map(|(name, points, expected)| {
            let peak = points.iter().map(|(_, busbw)| *busbw).fold(0.0, f64::max);
            let ratio =
                expected.map_or(String::new(), |e| format!("; {:.0}% of the expected {e:.1} GB/s", 100.0 * peak / e));
            Line::raw(format!("{name}: peak busbw {peak:.2} GB/s over {} sizes{ratio}", points.len()))
        }))
        .collect();
    let [chart_area, summary_area] =
        Layout::vertical([Constraint::Min(6), Constraint::Length(summary.len() as u16 + 2)]).areas(area);
    frame.render_widget(chart, chart_area);
    frame
        .render_widget(Paragraph::new(summary).block(Block::new().borders(Borders::ALL).title(" Runs ")), summary_area);
}
