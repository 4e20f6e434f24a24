//! `topo preflight --probe none` on a replayed 8-GPU snapshot (the recorded
//! H100 node with its NVML answers): load + checks + render, and the checks
//! alone. Target (issue 5): under 50 ms.

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use topo::preflight::{self, expect::Expectations};
use topo::sources::{self, Origin};

fn preflight_on_a_replayed_node(c: &mut Criterion) {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let snapshot_path = fixtures.join("snapshots/ibm-gx3d-h100x8-nvml.yaml");
    let expectations = Expectations::load(&fixtures.join("preflight/h100-node.yaml")).unwrap();
    c.bench_function("preflight/load+check+render/h100-nvml", |b| {
        b.iter(|| {
            let snapshot = sources::load(Origin::File(&snapshot_path)).unwrap();
            preflight::render::plain(&preflight::run(&snapshot, &expectations))
        })
    });
    let snapshot = sources::load(Origin::File(&snapshot_path)).unwrap();
    c.bench_function("preflight/check+render/h100-nvml", |b| {
        b.iter(|| preflight::render::plain(&preflight::run(&snapshot, &expectations)))
    });
}

criterion_group!(benches, preflight_on_a_replayed_node);
criterion_main!(benches);
