//! nvbandwidth's figures as measured copies, stored the way `topo probe`
//! stores its own (`Snapshot::probe`), so each is held against what its path
//! should carry and the probe findings (slow host link, slow pair) fire on
//! them. Only the tests that measure one copy at a time are compared: the
//! bidirectional and all-at-once tests report one direction under contention,
//! which no single path's figure describes.

use topo_model::measure::{CopyKind, CopyResult, Expectation, ProbeReport, ProbeSettings, ProbedGpu};
use topo_model::{Bandwidth, Topology};
use topo_parsers::nvbandwidth::{NvbandwidthRun, Status, Testcase};

/// nvbandwidth test names (prefix, CE and SM alike) -> the copy they measure.
const COMPARED: &[(&str, CopyKind)] = &[
    ("host_to_device_memcpy", CopyKind::HostToDevice),
    ("device_to_host_memcpy", CopyKind::DeviceToHost),
    ("device_to_device_memcpy_read", CopyKind::Peer),
    ("device_to_device_memcpy_write", CopyKind::Peer),
    ("device_local_copy", CopyKind::DeviceLocal),
];

/// The copy a test case measures: by name, or (an excerpt without its name)
/// by the one-way arrows of its matrix title.
fn kind(test: &Testcase) -> Option<CopyKind> {
    if !test.name.is_empty() {
        return COMPARED.iter().find(|(prefix, _)| test.name.starts_with(prefix)).map(|(_, k)| *k);
    }
    let d = &test.description;
    if d.contains("<->") || !test.is_bandwidth() {
        None
    } else if d.contains("CPU(row) ->") {
        Some(CopyKind::HostToDevice)
    } else if d.contains("CPU(row) <-") {
        Some(CopyKind::DeviceToHost)
    } else if d.contains("GPU(row) ->") || d.contains("GPU(row) <-") {
        Some(CopyKind::Peer)
    } else {
        None
    }
}

fn copy(kind: CopyKind, gpu: u32, peer: Option<u32>, gbps: f64) -> CopyResult {
    CopyResult {
        kind,
        gpu,
        peer,
        bytes: 0,
        seconds: 0.0,
        bandwidth: Bandwidth(gbps * 1e9),
        expectation: Expectation::default(),
        error: None,
        // nvbandwidth binds to the GPU's CPUs, but its output does not say which node.
        host_node: None,
    }
}

/// The copies of one run, with each GPU's bus ID where nvbandwidth printed it
/// (else the topology's GPU of that index: CUDA's order, which is PCI order
/// on machines of one GPU model). Returns the report and the tests not compared.
pub(super) fn report(run: &NvbandwidthRun, topology: &Topology, source: &str) -> (ProbeReport, Vec<String>) {
    let mut report = ProbeReport {
        world: 1,
        launcher: Some(format!("nvbandwidth {} ({source})", run.version.as_deref().unwrap_or("version not printed"))),
        cuda_driver: run.driver_version.as_ref().map(|d| format!("driver {d}")),
        settings: ProbeSettings { warmup: 0, iterations: 0, copy_bytes: 0, ..ProbeSettings::default() },
        ..ProbeReport::default()
    };
    let mut ordinals = std::collections::BTreeSet::new();
    let mut skipped = Vec::new();
    for test in &run.testcases {
        let Some(kind) = kind(test).filter(|_| test.status == Status::Passed) else {
            if test.status == Status::Passed {
                skipped.push(if test.name.is_empty() { test.description.clone() } else { test.name.clone() });
            }
            continue;
        };
        // `GPU(row) <- GPU(column)`: the column is the source.
        let column_is_source = test.description.contains("GPU(row) <-");
        for (r, row) in test.matrix.iter().enumerate() {
            for (c, cell) in row.iter().enumerate() {
                let Some(gbps) = cell.filter(|v| *v > 0.0) else { continue };
                let (r, c) = (r as u32, c as u32);
                let result = match kind {
                    CopyKind::Peer if r == c => continue,
                    CopyKind::Peer if column_is_source => copy(kind, c, Some(r), gbps),
                    CopyKind::Peer => copy(kind, r, Some(c), gbps),
                    CopyKind::DeviceLocal => copy(kind, c.max(r), None, gbps),
                    _ => copy(kind, c, None, gbps),
                };
                ordinals.insert(result.gpu);
                ordinals.extend(result.peer);
                report.copies.push(result);
            }
        }
    }
    for ordinal in ordinals {
        let printed = run.devices.iter().find(|d| d.ordinal == ordinal);
        // Unnumbered GPUs (lspci) are numbered in bus order, as CUDA_DEVICE_ORDER=PCI_BUS_ID does.
        let by_index = topology.gpus.iter().find(|g| g.index == Some(ordinal)).map(|g| g.bus_id).or_else(|| {
            topology.gpus.iter().all(|g| g.index.is_none()).then_some(())?;
            topology.gpus.get(ordinal as usize).map(|g| g.bus_id)
        });
        let bus = printed.and_then(|d| d.bus_id).or(by_index);
        report.gpus.push(ProbedGpu {
            ordinal,
            bus_id: bus.map(|b| b.to_string()).unwrap_or_default(),
            name: printed.map(|d| d.name.clone()).unwrap_or_default(),
            nccl_rank: None,
            error: None,
            mig: None,
        });
    }
    crate::probe::expect::annotate(&mut report, topology);
    (report, skipped)
}
