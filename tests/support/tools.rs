//! The real outside tools some tests check topo's output with (promtool,
//! chromium). `.ci/run` installs them; elsewhere a missing one skips the test
//! with a loud message, but under `CI=true` it fails the test: a check that
//! quietly did not run is no check.
// Each test file uses some of these.
#![allow(dead_code)]

use std::path::PathBuf;

/// The tool's path, or `None` (after saying so on stderr) when it is absent
/// outside CI. Panics when it is absent under CI.
pub fn require(tool: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(tool))
        .find(|path| path.is_file());
    if found.is_none() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(!ci, "{tool} is not installed but CI=true: .ci/run installs it (apt-get install {package})");
        // Straight to stderr, past the test harness's capture: a passing test's
        // eprintln! is never shown, and this must be seen.
        let message = format!(
            "\n!!!!!!!! SKIPPED: {tool} not found (apt-get install {package}); this check did NOT run !!!!!!!!\n\n"
        );
        let _ = std::io::Write::write_all(&mut std::io::stderr(), message.as_bytes());
    }
    found
}

/// Runs `promtool check metrics` on `text`: it parses the exposition and
/// lints names, units, HELP and TYPE. Fails the test on any complaint.
pub fn promtool_accepts(text: &str) {
    let Some(promtool) = require("promtool", "prometheus") else { return };
    let mut child = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && said.trim().is_empty(), "promtool check metrics:\n{said}\non:\n{text}");
}

/// Runs `command` to completion, killing it after `seconds`: a browser that
/// hangs (no display, a sandbox prompt) fails the test instead of stalling CI.
pub fn output_within(command: &mut std::process::Command, seconds: u64) -> std::process::Output {
    use std::io::Read;
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Drain both pipes on threads so a chatty child never blocks on a full pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let err = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.read_to_end(&mut bytes);
        bytes
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{command:?} did not finish within {seconds} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    std::process::Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() }
}
