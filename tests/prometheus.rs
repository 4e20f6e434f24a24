//! `--format prometheus` of `topo preflight`, `topo cluster` and (from the
//! probe results a snapshot recorded on the stand-in libraries) `topo probe`,
//! each checked by Prometheus' own parser and linter: `promtool check
//! metrics` (Debian's `prometheus` package). The live `topo probe --format
//! prometheus` run is in tests/probe_live.rs, beside the stand-in libraries.

#[path = "support/tools.rs"]
mod tools;

use std::path::Path;
use std::process::Command;

use topo_model::Snapshot;

const STANDIN_PROBE: &str = "tests/fixtures/snapshots/asus-esc8000a-e12-standin-probe.yaml";
const PORT_DOWN: &str = "tests/fixtures/snapshots/handmade-gx3d-h100x8-mlx5_7-port-down.yaml";

fn topo(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_topo")).args(args).current_dir(env!("CARGO_MANIFEST_DIR")).output().unwrap()
}

/// The `topo_info` line names the machine that ran `topo cluster`: not reproducible.
fn without_local_host(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with("topo_info{command=\"cluster\"") { "topo_info{command=\"cluster\",host=...} 1" } else { l }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn preflight_of_a_node_with_a_port_down() {
    let output = topo(&["preflight", "--from", PORT_DOWN, "--format", "prometheus"]);
    assert_eq!(output.status.code(), Some(1), "the gate's exit code is kept");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("topo_preflight_passed 0\n"), "{text}");
    assert!(text.contains("topo_preflight_check_ok{check=\"rdma\"} 0\n"), "{text}");
    assert!(text.contains("topo_preflight_check_ok{check=\"nvlink\"} 1\n"), "{text}");
    assert!(text.contains("topo_preflight_check_status{check=\"acs\",status=\"skip\"} 1\n"), "{text}");
    tools::promtool_accepts(&text);
    insta::assert_snapshot!("preflight-port-down", text);
}

#[test]
fn preflight_of_a_passing_example() {
    let output = topo(&["preflight", "--example", "rtx6000ada-4gpu-pcie", "--format", "prometheus"]);
    let text = String::from_utf8(output.stdout).unwrap();
    let passed = output.status.code() == Some(0);
    assert!(text.contains(&format!("topo_preflight_passed {}\n", u8::from(passed))), "{text}");
    tools::promtool_accepts(&text);
}

#[test]
fn probe_results_from_the_recorded_run() {
    let snapshot = Snapshot::load(Path::new(env!("CARGO_MANIFEST_DIR")).join(STANDIN_PROBE).as_path()).unwrap();
    let report = snapshot.probe.as_ref().unwrap();
    let findings = topo::probe::findings::probe_findings(&snapshot);
    let text = topo::views::prometheus::probe(report, "coyote2", &findings);
    // GPU 3's host link runs at a third of its speed (the stand-in's fault): 8.9 of 27.1 GB/s.
    let h2d = text
        .lines()
        .find(|l| l.starts_with("topo_probe_bandwidth_bytes_per_second{kind=\"h2d\",src=\"host\",dst=\"3\""))
        .unwrap();
    assert!(h2d.contains("path=\"PCIe Gen4 x16\"} 89"), "{h2d}");
    assert!(text.contains("topo_probe_passed 0\n"), "{text}");
    assert!(text.contains("topo_probe_expected_bandwidth_bytes_per_second{kind=\"h2d\",src=\"host\",dst=\"0\""));
    assert!(text.contains("topo_probe_collective_best_busbw_bytes_per_second{collective=\"all_reduce\""));
    tools::promtool_accepts(&text);
    insta::assert_snapshot!("probe-standin", text);
}

#[test]
fn cluster_with_a_hostile_host_name() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["asus-esc8000a-e12.yaml", "asus-esc8000a-e12-standin-probe.yaml", "ibm-gx3d-h100x8-nvml.yaml"] {
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshots").join(name),
            dir.path().join(name),
        )
        .unwrap();
    }
    // A third ASUS node whose host name tries to end its label and add a sample.
    let mut hostile = Snapshot::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(PORT_DOWN)).unwrap();
    hostile.host.hostname = Some("evil\"} 1\ntopo_cluster_nodes 999\n#\\".into());
    std::fs::write(dir.path().join("hostile.yaml"), hostile.to_yaml()).unwrap();
    let output = topo(&["cluster", dir.path().to_str().unwrap(), "--format", "prometheus"]);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("topo_cluster_nodes 4\n"), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("topo_cluster_nodes 999")), "{text}");
    assert!(text.contains("evil\\\"} 1\\ntopo_cluster_nodes 999\\n#\\\\"), "{text}");
    tools::promtool_accepts(&text);
    insta::assert_snapshot!("cluster-hostile-host", without_local_host(&text));
}

/// A node probed before its gate (`topo probe --save`, or `preflight --probe`):
/// the preflight file carries the figures too, each family once.
#[test]
fn preflight_of_a_probed_node_carries_the_figures() {
    let output = topo(&["preflight", "--from", STANDIN_PROBE, "--format", "prometheus"]);
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("topo_preflight_check_ok{check=\"live-bandwidth\"} 0\n"), "{text}");
    assert!(text.contains("topo_probe_bandwidth_bytes_per_second{kind=\"h2d\",src=\"host\",dst=\"3\""), "{text}");
    assert_eq!(text.matches("# TYPE topo_info gauge").count(), 1);
    tools::promtool_accepts(&text);
}
