//! What log collectors put before each line (a timestamp, a task number, a
//! host, a pod, colours) changes nothing `topo` reads: every real log of the
//! corpus, wrapped as each collector writes it, gives the same findings and
//! the same facts as the log itself. The wrappers are the collectors' own
//! formats: `kubectl logs --timestamps` (RFC 3339 with nanoseconds), Python's
//! logging, `srun -l`, `mpirun --tag-output`, pdsh, docker compose, journald,
//! `kubectl logs --prefix`, Ray's actor tag, a terminal's colours (as bytes,
//! drawn by a Windows console, or with the ESC lost in a paste), CRLF, a
//! log viewer's time of day, the quote markers of a reply in an issue thread,
//! and the container runtimes' own formats (containerd's CRI lines, docker's
//! json-file records).

use std::collections::BTreeSet;
use std::path::PathBuf;

use topo_model::nccl::NcclReport;

type Wrap = fn(usize, &str) -> String;

const WRAPPERS: &[(&str, Wrap)] = &[
    ("kubectl --timestamps", |n, l| format!("2024-05-01T12:00:{:02}.123456789Z {l}", n % 60)),
    ("python logging", |n, l| format!("2024-05-01 12:00:{:02},123 | {l}", n % 60)),
    ("srun -l", |_, l| format!("  3: {l}")),
    ("mpirun --tag-output", |_, l| format!("[1,3]<stdout>:{l}")),
    ("pdsh", |_, l| format!("node-7: {l}")),
    ("docker compose", |_, l| format!("trainer-1  | {l}")),
    ("journald", |n, l| format!("Nov 24 12:00:{:02} node-7 python[4242]: {l}", n % 60)),
    ("kubectl --prefix", |_, l| format!("[pod/train-0/pytorch] {l}")),
    ("ray", |_, l| format!("(RayWorkerWrapper pid=4242) {l}")),
    ("colours", |_, l| format!("\x1b[36m{l}\x1b[0m")),
    // The same colours as pastes leave them: drawn by a Windows console, or with the ESC lost.
    ("colours, drawn", |_, l| format!("\u{2190}[36m(RayWorkerWrapper pid=4242)\u{2190}[0m {l}")),
    ("colours, ESC lost", |_, l| format!("[34m{l}[0m")),
    ("crlf", |_, l| format!("{l}\r")),
    ("log viewer's clock", |n, l| format!("12:00:{:02}.123 {l}", n % 60)),
    ("a reply's quote", |_, l| format!("> > {l}")),
    ("containerd (CRI)", |n, l| format!("2024-05-01T12:00:{:02}.123456789Z stderr F {l}", n % 60)),
    ("docker json-file", |n, l| {
        let line = serde_json::to_string(&format!("{l}\n")).unwrap();
        format!(r#"{{"log":{line},"stream":"stderr","time":"2024-05-01T12:00:{:02}.1Z"}}"#, n % 60)
    }),
];

fn report(name: &str, text: &[u8]) -> NcclReport {
    let mut parser = topo_parsers::nccl_log::LogParser::new();
    parser.start_input(name);
    topo_parsers::nccl_log::feed(std::io::Cursor::new(text), &mut parser).unwrap();
    parser.finish()
}

/// What a reader of the report sees: the finding codes, and the facts the
/// corpus's truth checks.
fn seen(report: &NcclReport) -> (BTreeSet<String>, Vec<String>, Vec<String>, usize, usize, usize) {
    let codes = topo::diagnose::diagnose(report, None).into_iter().map(|f| f.code).collect();
    let rings = report.communicators.iter().map(|c| c.rings.len()).sum();
    (
        codes,
        report.nccl_versions.clone(),
        report.hosts.clone(),
        report.communicators.len(),
        rings,
        report.warnings.len(),
    )
}

#[test]
fn every_real_log_reads_the_same_under_every_collectors_wrapper() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nccl-logs");
    let mut logs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    assert!(logs.len() > 900);
    let mut differ = Vec::new();
    let mut read = 0;
    for path in &logs {
        let bytes = std::fs::read(path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        // A RAS status is another input, read whole (not line by line).
        if topo_parsers::ras::looks_like_ras(&text) {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let plain = seen(&report(&name, &bytes));
        for (wrapper, wrap) in WRAPPERS {
            let wrapped: String = text.lines().enumerate().map(|(n, l)| wrap(n, l) + "\n").collect();
            let got = seen(&report(&name, wrapped.as_bytes()));
            if got != plain {
                differ.push(format!("{name} under {wrapper}: {:?} vs {:?}", got.0, plain.0));
            }
        }
        read += 1;
    }
    assert!(read > 900);
    assert!(differ.is_empty(), "{} of {} reads differ:\n{}", differ.len(), read * WRAPPERS.len(), differ.join("\n"));
}
