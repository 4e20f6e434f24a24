//! End-to-end tests of the `topo` binary.

use std::path::PathBuf;

use assert_cmd::Command;
use predicates::prelude::*;

fn topo() -> Command {
    let mut command = Command::cargo_bin("topo").unwrap();
    command.env_remove("NO_COLOR");
    command
}

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(path)
}

fn stdout_of(args: &[&str]) -> String {
    let output = topo().args(args).output().unwrap();
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn version_and_help_on_every_subcommand() {
    topo().arg("--version").assert().success().stdout(predicate::str::starts_with("topo 0.1.0"));
    for sub in ["show", "snapshot", "examples"] {
        topo().args([sub, "--help"]).assert().success().stdout(predicate::str::contains("Usage: topo"));
    }
    topo().arg("frobnicate").assert().code(2);
}

#[test]
fn plain_view_of_the_h100_example() {
    insta::assert_snapshot!("show_h100_plain", stdout_of(&["show", "--example", "h100-sxm-8gpu", "--plain"]));
}

#[test]
fn plain_view_of_a_pcie_only_box() {
    insta::assert_snapshot!("show_rtxa6000_plain", stdout_of(&["show", "--example", "rtx-a6000-4gpu-pcie"]));
}

#[test]
fn dot_view_draws_numa_clusters_and_nvlink_counts() {
    let dot = stdout_of(&["show", "--example", "h100-sxm-8gpu", "--format", "dot"]);
    assert!(dot.starts_with("graph topo {"));
    assert!(dot.contains("subgraph cluster_numa0") && dot.contains("subgraph cluster_numa1"));
    assert_eq!(dot.matches("label=\"NV5\"").count(), 16, "two 5-link bundles per GPU");
    insta::assert_snapshot!(
        "show_asus_dot",
        stdout_of(&["show", "--example", "rtx6000ada-4gpu-pcie", "--format", "dot"])
    );
}

#[test]
fn dot_marks_downtrained_links_in_red() {
    let dot = stdout_of(&["show", "--example", "rtx6000ada-4gpu-pcie", "--format", "dot"]);
    let red: Vec<&str> = dot.lines().filter(|l| l.contains("color=\"red\"")).collect();
    assert_eq!(red.len(), 4, "the four idle GPUs at Gen1: {red:#?}");
    assert!(red.iter().all(|l| l.contains("Gen1 x16 (max Gen4 x16)")));
}

#[test]
fn json_and_yaml_carry_the_matrix_and_paths() {
    let json: serde_json::Value =
        serde_json::from_str(&stdout_of(&["show", "--example", "h100-sxm-8gpu", "--format", "json"])).unwrap();
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["matrix"]["endpoints"].as_array().unwrap().len(), 16);
    assert_eq!(json["matrix"]["cells"][0][1], "NV18");
    assert_eq!(json["matrix"]["cells"][0][15], "PIX", "GPU0 shares a bridge with mlx5_7 (NIC7)");
    let first = &json["paths"][0];
    assert_eq!(
        (first["from"].as_str(), first["to"].as_str(), first["nccl"].as_str()),
        (Some("GPU0"), Some("GPU1"), Some("NVL"))
    );
    assert_eq!(first["expected_gbps"], 450.0);
    let yaml = stdout_of(&["show", "--example", "h100-sxm-8gpu", "--format", "yaml"]);
    assert!(yaml.contains("schema_version: 1") && yaml.contains("paths:"));
}

#[test]
fn nccl_xml_output_reimports_to_the_same_topology() {
    let source = fixture("nccl-topo/alibaba-a100-sxm80g-x8-cx6bond.xml");
    let xml = stdout_of(&["show", "--from", source.to_str().unwrap(), "--format", "nccl-xml"]);
    let again = topo_parsers::nccl_xml::import(&xml, "export").unwrap().topology;
    let original = topo_parsers::nccl_xml::import_file(&source).unwrap().topology;
    assert_eq!(again, original);
}

#[test]
fn replaying_a_snapshot_gives_exactly_the_live_output() {
    let dir = tempfile::tempdir().unwrap();
    let root = fixture("sysfs/asus-esc8000a-e12");
    let root = root.to_str().unwrap();
    for name in ["node.yaml", "node.json"] {
        let file = dir.path().join(name);
        topo().args(["snapshot", "--sysfs-root", root, "-o", file.to_str().unwrap()]).assert().success();
        for format in ["plain", "json", "dot", "nccl-xml"] {
            let live = topo().args(["show", "--sysfs-root", root, "--format", format]).output().unwrap();
            let replay = topo().args(["show", "--from", file.to_str().unwrap(), "--format", format]).output().unwrap();
            assert_eq!(
                String::from_utf8_lossy(&live.stdout),
                String::from_utf8_lossy(&replay.stdout),
                "{name} {format}"
            );
            assert_eq!(live.stderr, replay.stderr, "{name} {format}");
        }
    }
    let json = std::fs::read_to_string(dir.path().join("node.json")).unwrap();
    assert!(json.trim_start().starts_with('{'));
}

#[test]
fn the_bundled_asus_snapshot_is_what_its_sysfs_tree_gives_today() {
    let root = fixture("sysfs/asus-esc8000a-e12");
    let fresh = stdout_of(&["snapshot", "--sysfs-root", root.to_str().unwrap()]);
    let bundled = std::fs::read_to_string(fixture("snapshots/asus-esc8000a-e12.yaml")).unwrap();
    let strip = |s: &str| s.lines().filter(|l| !l.contains("root:")).collect::<Vec<_>>().join("\n");
    assert_eq!(
        strip(&fresh),
        strip(&bundled),
        "regenerate with: topo snapshot --sysfs-root tests/fixtures/sysfs/asus-esc8000a-e12 -o tests/fixtures/snapshots/asus-esc8000a-e12.yaml"
    );
}

#[test]
fn a_newer_snapshot_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("future.yaml");
    std::fs::write(&file, "schema_version: 99\nsource: {kind: sysfs, root: /}\ntopology: {}\nrenamed_field: 1\n")
        .unwrap();
    topo().args(["show", "--from", file.to_str().unwrap()]).assert().code(2).stdout("").stderr(
        predicate::str::contains("future.yaml: snapshot schema version 99 is newer than this topo understands (1)"),
    );
}

#[test]
fn bad_files_are_one_line_errors_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("broken.yaml", b"schema_version: 1\nsource: [unclosed\n".to_vec(), "broken.yaml: "),
        (
            "wrong.yaml",
            b"schema_version: 1\nsource: {kind: sysfs, root: /}\ntopology: {numa_nodes: [{id: x}]}\n".to_vec(),
            "line 3",
        ),
        (
            "cut.xml",
            b"<system version=\"1\">\n  <cpu numaid=\"0\">\n    <pci busid=\"0000:01:00.0\">\n  </cpu>\n".to_vec(),
            "cut.xml:4:",
        ),
        ("binary.yaml", vec![0xff, 0xfe, 0x00, 0x12, 0x80], "not UTF-8"),
        ("empty.yaml", Vec::new(), "not a topo snapshot"),
    ];
    for (name, content, expected) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, content).unwrap();
        let output = topo().args(["show", "--from", file.to_str().unwrap()]).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(stderr.contains(name) && stderr.contains(expected), "{name}: {stderr}");
    }
    topo()
        .args(["show", "--from", "/nonexistent/node.yaml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("/nonexistent/node.yaml"));
    topo()
        .args(["show", "--sysfs-root", "/nonexistent/root"])
        .assert()
        .code(2)
        .stderr("topo: error: /nonexistent/root: sysfs root does not exist or is not a directory\n");
}

#[test]
fn garbage_sysfs_files_become_unknown_fields_with_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let status =
        std::process::Command::new("cp").arg("-a").arg(fixture("sysfs/dell-rtxa6000x4")).arg(&root).status().unwrap();
    assert!(status.success());
    let gpu = std::fs::canonicalize(root.join("sys/bus/pci/devices/0000:3b:00.0")).unwrap();
    std::fs::write(gpu.join("max_link_speed"), [0xff, 0x00, 0x80]).unwrap(); // not UTF-8
    std::fs::write(gpu.join("numa_node"), "banana\n").unwrap(); // garbage
    std::fs::remove_file(gpu.join("current_link_width")).unwrap(); // missing
    let port = gpu.parent().unwrap();
    std::fs::remove_file(port.join("class")).unwrap();
    std::fs::create_dir(port.join("class")).unwrap(); // unreadable as a file
    let output = topo().args(["show", "--sysfs-root", root.to_str().unwrap()]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    for (file, problem) in [
        ("0000:3b:00.0/max_link_speed", "not UTF-8"),
        ("0000:3b:00.0/numa_node", "unreadable value \"banana\""),
        ("0000:3b:00.0/current_link_width", "missing"),
        ("0000:3a:1f.0/class", "unreadable (Is a directory"),
    ] {
        assert!(stderr.contains(&format!("{file}: {problem}")), "{file}: {stderr}");
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("GPU2"), "the other GPUs are still shown:\n{stdout}");
}

#[test]
fn no_colour_when_piped_or_with_no_color() {
    let plain = stdout_of(&["show", "--example", "h100-sxm-8gpu"]);
    assert!(!plain.contains('\x1b'));
    let output = topo().env("NO_COLOR", "1").args(["show", "--example", "h100-sxm-8gpu"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&output.stdout).contains('\x1b'));
}

#[test]
fn piping_into_head_ends_quietly() {
    let binary = assert_cmd::cargo::cargo_bin("topo");
    let script =
        format!("set -o pipefail; '{}' show --example h100-sxm-8gpu --format yaml | head -n 1", binary.display());
    let output = std::process::Command::new("bash").arg("-c").arg(script).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "schema_version: 1\n");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
}

#[test]
fn this_machine_shows_something_real_without_a_gpu() {
    let output = topo().args(["show", "--plain"]).output().unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("NUMA nodes:") && stdout.contains("node 0"), "{stdout}");
    assert!(stdout.contains("CPU: "), "{stdout}");
}

#[test]
fn examples_are_listed() {
    let list = stdout_of(&["examples"]);
    for name in ["h100-sxm-8gpu", "a100-sxm-8gpu", "b200-8gpu-vm", "rtx-a6000-4gpu-pcie", "rtx6000ada-4gpu-pcie"] {
        assert!(list.contains(name), "{name}");
        stdout_of(&["show", "--example", name]);
    }
    topo().args(["show", "--example", "nope"]).assert().code(2).stderr(predicate::str::contains("h100-sxm-8gpu"));
}

#[test]
fn pasted_nvidia_smi_text_renders_the_same_cells() {
    let source = fixture("nvidia-smi-topo/asus-esc8000a-e12-rtx6000ada-x4.txt");
    let shown = stdout_of(&["show", "--from", source.to_str().unwrap()]);
    let original = std::fs::read_to_string(&source).unwrap();
    let cells = |text: &str, skip: usize| -> Vec<Vec<String>> {
        text.lines()
            .skip(skip)
            .take(8)
            .map(|l| l.split_whitespace().skip(1).take(8).map(str::to_string).collect())
            .collect()
    };
    assert_eq!(cells(&shown, 4), cells(&original, 1));
    assert!(shown.contains("NIC3: mlx5_3"));
    assert!(shown.contains("bus IDs synthetic"));
}

/// `%h` and `%j` in `snapshot -o`: one command line for every node of a job.
#[test]
fn snapshot_output_names_host_and_job() {
    let dir = tempfile::tempdir().unwrap();
    let pattern = dir.path().join("%j/%h-100%%.json");
    let root = fixture("sysfs/asus-esc8000a-e12");
    topo()
        .args(["snapshot", "--sysfs-root", root.to_str().unwrap(), "-o", pattern.to_str().unwrap()])
        .env("SLURM_JOB_ID", "4242")
        .assert()
        .success();
    let written = dir.path().join("4242/coyote2-100%.json");
    let snapshot = topo_model::Snapshot::load(&written).unwrap();
    assert_eq!(snapshot.host.hostname.as_deref(), Some("coyote2"));
    topo()
        .args(["snapshot", "--sysfs-root", root.to_str().unwrap(), "-o", pattern.to_str().unwrap()])
        .env_remove("SLURM_JOB_ID")
        .env_remove("PBS_JOBID")
        .env_remove("LSB_JOBID")
        .env_remove("FLUX_JOB_ID")
        .env_remove("TORCHELASTIC_RUN_ID")
        .env_remove("OMPI_MCA_ess_base_jobid")
        .assert()
        .success();
    assert!(dir.path().join("nojob/coyote2-100%.json").is_file());
}
