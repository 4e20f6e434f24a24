//! Reading a bundle of one machine's pasted outputs (issue 17 target: 10 files
//! under 50 ms): the ASUS ESC8000A-E12's lspci -tv / -vvv, ibv_devinfo and
//! nvidia-smi topo -m, plus one file of every format read since: nvidia-smi -q
//! -x and -q text, nvlink -e, topo -p2p, nvbandwidth and an NCCL graph dump
//! (from other machines: their contradictions are part of the work measured).

use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};

fn bundle_of_ten(c: &mut Criterion) {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let dir = tempfile::tempdir().unwrap();
    let files = [
        "lspci/asus-esc8000a-e12-lspci-tv.txt",
        "lspci/asus-esc8000a-e12-lspci-vvv.txt",
        "lspci/asus-esc8000a-e12-ibv_devinfo.txt",
        "nvidia-smi-topo/asus-esc8000a-e12-rtx6000ada-x4.txt",
        "nvidia-smi-q/telegraf-a100-sxm4-v12.xml",
        "nvidia-smi-q/princeton-della-h100-nvidia-smi-a.txt",
        "nvidia-smi-nvlink/brev-a100-sxm4-40gb-x8-nvlink-e.txt",
        "nvidia-smi-p2p/aikitoria-13-5gpu-p2p-p.txt",
        "nvbandwidth/handmade-asus-h2d-ce-gpu3-slow.txt",
        "nccl-graph/azure-ncv4-a100x4-graph.xml",
    ];
    for (i, file) in files.iter().enumerate() {
        std::fs::copy(fixtures.join(file), dir.path().join(format!("{i:02}.txt"))).unwrap();
    }
    c.bench_function("bundle/10-files", |b| b.iter(|| topo::bundle::load(dir.path()).unwrap()));
}

criterion_group!(benches, bundle_of_ten);
criterion_main!(benches);
