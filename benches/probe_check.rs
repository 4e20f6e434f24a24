//! The probe's data check: every element a collective wrote is compared with
//! its exactly known value. Quick mode checks ~2 GiB per GPU (all_reduce at
//! 64 MiB .. 1 GiB), so for 8 GPUs to finish under 60 s (issue 6) the check
//! must run at several GB/s on one core. Measured against the definition
//! (`collective::expected`, one division-heavy call per element), the
//! reference it is tested equal to.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use topo_model::collective::{Collective, expected, wrong_elements};

fn data_check(c: &mut Criterion) {
    // 64 MiB of f32 output, as one rank of an 8-rank job holds it.
    let (ranks, rank) = (8u32, 3u32);
    let len = 16 << 20;
    let mut group = c.benchmark_group("probe/data-check-64MiB");
    group.throughput(Throughput::Bytes((len * 4) as u64));
    group.sample_size(10);
    for collective in [Collective::AllReduce, Collective::AllToAll] {
        let block = (len / ranks as usize) as u64;
        let output: Vec<f32> =
            (0..len as u64).map(|i| expected(collective, rank, i, ranks, block).unwrap_or(0.0) as f32).collect();
        group.bench_function(format!("{}/periodic", collective.name()), |b| {
            b.iter(|| assert_eq!(wrong_elements(collective, rank, ranks, block, 0, &output), 0))
        });
        group.bench_function(format!("{}/definition", collective.name()), |b| {
            b.iter(|| {
                let wrong = output
                    .iter()
                    .enumerate()
                    .filter(|(i, v)| expected(collective, rank, *i as u64, ranks, block) != Some(f64::from(**v)))
                    .count();
                assert_eq!(wrong, 0)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, data_check);
criterion_main!(benches);
