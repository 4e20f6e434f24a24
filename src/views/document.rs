//! JSON and YAML: the snapshot plus the derived matrix and paths, for scripts.

use serde::Serialize;
use topo_model::{Matrix, NcclClass, SmiClass, Snapshot};

#[derive(Serialize)]
struct ShowDocument<'a> {
    #[serde(flatten)]
    snapshot: &'a Snapshot,
    matrix: Matrix,
    paths: Vec<PathSummary>,
}

/// One pair of matrix endpoints.
#[derive(Serialize)]
struct PathSummary {
    from: String,
    to: String,
    smi: SmiClass,
    nccl: NcclClass,
    /// GB/s per direction the path should carry.
    #[serde(skip_serializing_if = "Option::is_none")]
    expected_gbps: Option<f64>,
    /// The hop that limits it, as `from -> to`.
    #[serde(skip_serializing_if = "Option::is_none")]
    bottleneck: Option<String>,
}

fn document(snapshot: &Snapshot) -> ShowDocument<'_> {
    let topology = &snapshot.topology;
    let matrix = topology.matrix();
    let mut paths = Vec::new();
    for (i, a) in matrix.endpoints.iter().enumerate() {
        for b in matrix.endpoints.iter().skip(i + 1) {
            let path = topology.path(a.bus_id, b.bus_id);
            paths.push(PathSummary {
                from: a.label.clone(),
                to: b.label.clone(),
                smi: matrix.cells[i][matrix.endpoints.iter().position(|e| e.label == b.label).unwrap_or(i)],
                nccl: path.nccl,
                expected_gbps: path.expected.map(|b| (b.gbps() * 100.0).round() / 100.0),
                bottleneck: path.bottleneck.and_then(|h| path.hops.get(h)).map(|h| format!("{} -> {}", h.from, h.to)),
            });
        }
    }
    ShowDocument { snapshot, matrix, paths }
}

pub fn json(snapshot: &Snapshot) -> String {
    serde_json::to_string_pretty(&document(snapshot)).unwrap_or_default() + "\n"
}

pub fn yaml(snapshot: &Snapshot) -> String {
    topo_model::snapshot::to_yaml_string(&document(snapshot))
}
