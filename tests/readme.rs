//! The README's example output cannot drift: every ```` ```console ```` block
//! whose first line is `$ topo ...` is run and its stdout compared with the
//! lines shown (in the style of `trycmd`).
//!
//! The convention (also stated in the README, above its first such block):
//! - only ```` ```console ```` blocks starting with `$ topo ` are run; other
//!   blocks (```` ``` ````, ```` ```sh ````) are not;
//! - the lines after the command are its stdout; a line `...` stands for any
//!   number of lines (none included); trailing blanks do not count; the exit
//!   code is not compared;
//! - file names in the command are resolved through an HTML comment on the line
//!   just above the block: `<!-- readme-test: 052.log=tests/fixtures/nccl-logs/052-...log -->`
//!   (each name linked into an empty directory the command runs in).

use std::path::PathBuf;

use assert_cmd::Command;

struct Example {
    line: usize,
    args: Vec<String>,
    files: Vec<(String, PathBuf)>,
    expected: Vec<String>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn examples(readme: &str) -> Vec<Example> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let opens = lines[i].trim_end() == "```console";
        let command = lines.get(i + 1).and_then(|l| l.strip_prefix("$ topo "));
        let (true, Some(command)) = (opens, command) else {
            i += 1;
            continue;
        };
        let files = i
            .checked_sub(1)
            .and_then(|above| lines[above].trim().strip_prefix("<!-- readme-test:"))
            .and_then(|rest| rest.strip_suffix("-->"))
            .map(|list| {
                list.split_whitespace()
                    .filter_map(|pair| pair.split_once('='))
                    .map(|(name, path)| (name.to_string(), root().join(path)))
                    .collect()
            })
            .unwrap_or_default();
        let end = (i + 2..lines.len()).find(|&j| lines[j].trim_end() == "```").expect("an unclosed block");
        out.push(Example {
            line: i + 1,
            args: command.split_whitespace().map(str::to_string).collect(),
            files,
            expected: lines[i + 2..end].iter().map(|l| l.trim_end().to_string()).collect(),
        });
        i = end + 1;
    }
    out
}

/// Whether `actual` matches `expected`, where an expected `...` line matches
/// any run of lines.
fn matches(expected: &[String], actual: &[&str]) -> bool {
    // reach[j]: the first i expected lines can match the first j actual lines.
    let mut reach = vec![false; actual.len() + 1];
    reach[0] = true;
    for line in expected {
        let mut next = vec![false; actual.len() + 1];
        for j in 0..=actual.len() {
            if line == "..." {
                next[j] = reach[j] || (j > 0 && next[j - 1]);
            } else if j > 0 {
                next[j] = reach[j - 1] && actual[j - 1].trim_end() == line;
            }
        }
        reach = next;
    }
    reach[actual.len()]
}

fn run(example: &Example) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    for (name, target) in &example.files {
        assert!(target.exists(), "README line {}: {} does not exist", example.line, target.display());
        std::os::unix::fs::symlink(target, dir.path().join(name)).unwrap();
    }
    let output = Command::cargo_bin("topo")
        .unwrap()
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .args(&example.args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut actual: Vec<&str> = stdout.lines().collect();
    while actual.last().is_some_and(|l| l.trim().is_empty()) {
        actual.pop();
    }
    let mut expected = example.expected.clone();
    while expected.last().is_some_and(|l| l.trim().is_empty()) {
        expected.pop();
    }
    if matches(&expected, &actual) {
        return Ok(());
    }
    Err(format!(
        "README line {}: `topo {}` printed\n{}\n--- stderr ---\n{}\n--- the README shows ---\n{}",
        example.line,
        example.args.join(" "),
        stdout,
        String::from_utf8_lossy(&output.stderr),
        expected.join("\n")
    ))
}

#[test]
fn readme_examples_print_what_the_readme_shows() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let examples = examples(&readme);
    assert!(examples.len() >= 4, "found {} ```console blocks", examples.len());
    let failures: Vec<String> = examples.iter().filter_map(|e| run(e).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_matcher_takes_ellipses_as_any_lines() {
    let expected: Vec<String> = ["a", "...", "d"].map(String::from).to_vec();
    assert!(matches(&expected, &["a", "b", "c", "d"]));
    assert!(matches(&expected, &["a", "d"]));
    assert!(!matches(&expected, &["a", "b", "c"]));
    assert!(!matches(&expected, &["x", "d"]));
}
