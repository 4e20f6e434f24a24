//! Reading a bundle of one machine's pasted outputs (issue 17 target: 10 files
//! under 50 ms): the six ASUS ESC8000A-E12 files plus the three other lspci /
//! ibstat samples and one more nvidia-smi text, so ten files of every kind.

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};

fn bundle_of_ten(c: &mut Criterion) {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let dir = tempfile::tempdir().unwrap();
    let files = [
        "lspci/asus-esc8000a-e12-lspci-tv.txt",
        "lspci/asus-esc8000a-e12-lspci-vvv.txt",
        "lspci/asus-esc8000a-e12-ibv_devinfo.txt",
        "lspci/asus-esc8000a-e12-acsctl.txt",
        "lspci/asus-esc8000a-e12-numactl.txt",
        "nvidia-smi-topo/asus-esc8000a-e12-rtx6000ada-x4.txt",
        "ibstat/hpc-notes-cx7-hdr-ibstat.txt",
        "ibstat/container-cx4-initializing-ibstat.txt",
        "ibstat/singularity-mlx4-qdr-ibstat.txt",
        "ibv_devinfo/heioy-books-mlx4-x2-2port.txt",
    ];
    for (i, file) in files.iter().enumerate() {
        std::fs::copy(fixtures.join(file), dir.path().join(format!("{i:02}.txt"))).unwrap();
    }
    c.bench_function("bundle/10-files", |b| b.iter(|| topo::bundle::load(dir.path()).unwrap()));
}

criterion_group!(benches, bundle_of_ten);
criterion_main!(benches);
