//! Discovery + render on fixture sysfs trees, and render alone on the largest
//! example. Target (issue 2): discovery + render under 5 ms on the largest tree.
//!
//! `benches/compare-lstopo.sh` times the live `topo show --plain` against
//! `lstopo-no-graphics` on this machine.

use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::{Criterion, criterion_group, criterion_main};
use topo::sources::{self, Origin};
use topo::views;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// hwloc's largest capture (137 PCI devices, 7,045 files), unpacked once.
fn unpack_hwloc(into: &Path) -> PathBuf {
    let tarball = fixtures().join("hwloc/32em64t-2n8c+dax+nvme+mic+dimms/32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2");
    let status = Command::new("tar").arg("xjf").arg(tarball).arg("-C").arg(into).status().expect("tar");
    assert!(status.success());
    into.join("32em64t-2n8c+1mic")
}

fn discovery_and_render(c: &mut Criterion) {
    let scratch = tempfile::tempdir().unwrap();
    let trees = [
        ("hwloc-32em64t-137-pci", unpack_hwloc(scratch.path())),
        ("asus-esc8000a-e12", fixtures().join("sysfs/asus-esc8000a-e12")),
        ("ibm-gx3d-h100x8", fixtures().join("sysfs/ibm-gx3d-h100x8")),
    ];
    let mut group = c.benchmark_group("discover+render");
    for (name, root) in &trees {
        group.bench_function(*name, |b| {
            b.iter(|| {
                let snapshot = sources::load(Origin::Sysfs { root, nvml: false }).unwrap();
                views::plain::render(&snapshot, false)
            })
        });
    }
    group.finish();

    let example = sources::load(Origin::Example("h100-sxm-8gpu")).unwrap();
    c.bench_function("render/h100-sxm-8gpu", |b| b.iter(|| views::plain::render(&example, false)));
}

criterion_group!(benches, discovery_and_render);
criterion_main!(benches);
