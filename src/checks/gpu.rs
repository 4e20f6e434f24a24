//! GPU health from NVML: NVLinks, the NVSwitch fabric, memory errors, clock
//! slowdowns and GPUs the driver cannot reach.

use std::collections::BTreeMap;

use topo_model::nvml::{Answer, DeviceAnswers, clock_event_reasons};
use topo_model::{Evidence, Finding, Severity, Snapshot};

use super::facts::{evidence, nvml_gpus};

/// Active NVLinks per GPU, below what other GPUs of the same model have.
/// (A SKU whose design uses fewer links, like H100 NVL's 12 of 18, has all
/// its GPUs at the same count and so is not flagged.)
pub(super) fn nvlink_inactive(snapshot: &Snapshot) -> Option<Finding> {
    // GPUs whose link states are all unanswered (a pasted `nvidia-smi nvlink -e`
    // lists links with counters, not states) say nothing about inactive links.
    let gpus: Vec<_> = nvml_gpus(snapshot)
        .into_iter()
        .filter(|(_, d)| d.nvlinks.is_empty() || d.nvlinks.iter().any(|l| !matches!(l.active, Answer::NotSupported)))
        .collect();
    let active = |d: &DeviceAnswers| d.nvlinks.iter().filter(|l| l.active.ok() == Some(&true)).count();
    let mut best: BTreeMap<String, usize> = BTreeMap::new();
    for (_, d) in &gpus {
        let model = d.name.ok().cloned().unwrap_or_default();
        let entry = best.entry(model).or_default();
        *entry = (*entry).max(active(d));
    }
    let items: Vec<Evidence> = gpus
        .iter()
        .filter_map(|(index, d)| {
            let expected = best.get(d.name.ok().map_or("", String::as_str)).copied().unwrap_or(0);
            let down: Vec<String> =
                d.nvlinks.iter().filter(|l| l.active.ok() != Some(&true)).map(|l| l.link.to_string()).collect();
            (active(d) < expected).then(|| {
                let text = format!(
                    "{} of {} NVLinks active (others of this model: {expected}); inactive: {}",
                    active(d),
                    d.nvlinks.len(),
                    down.join(" ")
                );
                evidence(format!("NVML GPU{index}"), text)
            })
        })
        .collect();
    let per_link =
        snapshot.topology.gpus.iter().find_map(|g| g.sm).and_then(topo_model::bandwidth::nvlink_per_link_bandwidth);
    let fewest = gpus.iter().map(|(_, d)| active(d)).min().unwrap_or(0);
    let most = best.values().copied().max().unwrap_or(0);
    (!items.is_empty()).then(|| {
        let mut found = Finding::new(
            "nvlink-inactive",
            Severity::Error,
            "GPUs with fewer active NVLinks than their siblings".into(),
            items,
            "Each missing NVLink removes its share of the GPU's NVLink bandwidth (about 25 GB/s per direction per \
             H100 link), and NCCL may build fewer or slower rings.",
            "Check `nvidia-smi nvlink -s` and the fabric manager log; reset the GPU or drain the node for a \
             baseboard/NVSwitch check.",
        );
        if let Some(link) = per_link {
            let gbps = |links: usize| link.gbps() * links as f64;
            found.expected = Some(format!("{most} links, {:.0} GB/s per direction", gbps(most)));
            found.actual = Some(format!("{fewest} links on the worst GPU, {:.0} GB/s", gbps(fewest)));
        }
        found
    })
}

/// NVLink error counters above this many are reported.
pub(super) const NVLINK_ERROR_THRESHOLD: u64 = 0;

pub(super) fn nvlink_errors(snapshot: &Snapshot) -> Option<Finding> {
    let mut items = Vec::new();
    for (index, d) in nvml_gpus(snapshot) {
        for link in d.nvlinks.iter().filter(|l| l.errors.total() > NVLINK_ERROR_THRESHOLD) {
            let e = &link.errors;
            let count = |a: &topo_model::nvml::Answer<u64>| a.show(u64::to_string);
            let text = format!(
                "link {}: replay {}, recovery {}, CRC flit {}, CRC data {}",
                link.link,
                count(&e.replay),
                count(&e.recovery),
                count(&e.crc_flit),
                count(&e.crc_data)
            );
            items.push(evidence(format!("NVML GPU{index}"), text));
        }
    }
    (!items.is_empty()).then(|| {
        Finding::new(
            "nvlink-errors",
            Severity::Warning,
            "NVLinks with error counts".into(),
            items,
            "Replays and recoveries retransmit or retrain the link: bandwidth drops while they happen, and rising \
             counts precede link failures.",
            "Watch whether the counters grow under load (`nvidia-smi nvlink -e`); a link that keeps counting needs \
             a hardware check.",
        )
    })
}

pub(super) fn fabric_not_ready(snapshot: &Snapshot) -> Option<Finding> {
    let items: Vec<Evidence> = nvml_gpus(snapshot)
        .into_iter()
        .filter_map(|(index, d)| {
            let fabric = d.fabric.ok()?;
            let ready = fabric.state == "completed" && fabric.status == "Success";
            (fabric.state != "not-supported" && !ready)
                .then(|| evidence(format!("NVML GPU{index}"), format!("fabric {} ({})", fabric.state, fabric.status)))
        })
        .collect();
    (!items.is_empty()).then(|| {
        Finding::new(
            "fabric-not-ready",
            Severity::Error,
            "NVSwitch fabric registration not complete".into(),
            items,
            "Until the fabric manager has registered a GPU, it has no NVLink path through the NVSwitches: CUDA and \
             NCCL fall back to PCIe or fail.",
            "Check that nvidia-fabricmanager is running and its version matches the driver \
             (`systemctl status nvidia-fabricmanager`, its log); then restart it or reset the GPUs.",
        )
    })
}

pub(super) fn gpu_memory_errors(snapshot: &Snapshot) -> Option<Finding> {
    let mut items = Vec::new();
    let mut severity = Severity::Warning;
    for (index, d) in nvml_gpus(snapshot) {
        let at = format!("NVML GPU{index}");
        if let Some(rows) = d.remapped_rows.ok() {
            if rows.failed {
                severity = Severity::Error;
                items.push(evidence(&at, "row remapping failed".into()));
            }
            if rows.pending {
                items.push(evidence(&at, "row remapping pending (takes effect at the next GPU reset)".into()));
            }
        }
        if d.retired_pages.pending.ok() == Some(&true) {
            items.push(evidence(&at, "page retirement pending (takes effect at the next GPU reset)".into()));
        }
        if let Some(n) = d.ecc.volatile_uncorrected.ok().filter(|n| **n > 0) {
            severity = Severity::Error;
            items.push(evidence(&at, format!("{n} uncorrected ECC errors since the last reset")));
        }
    }
    (!items.is_empty()).then(|| {
        Finding::new(
            "gpu-memory-errors",
            severity,
            "GPU memory errors or repairs pending".into(),
            items,
            "Uncorrected errors kill the job (XID 48/94/95); a pending remap or retirement leaves the bad memory \
             in use until the GPU is reset.",
            "Drain the node and reset the GPUs (`nvidia-smi -r`) to apply pending remaps; a failed remap or \
             repeated uncorrected errors mean an RMA.",
        )
    })
}

pub(super) fn clock_throttle(snapshot: &Snapshot) -> Option<Finding> {
    let items: Vec<Evidence> = nvml_gpus(snapshot)
        .into_iter()
        .filter_map(|(index, d)| {
            let (names, hardware) = clock_event_reasons(*d.clock_event_reasons.ok()?);
            hardware.then(|| evidence(format!("NVML GPU{index}"), format!("clock events: {}", names.join(", "))))
        })
        .collect();
    (!items.is_empty()).then(|| {
        Finding::new(
            "clock-throttle-hw",
            Severity::Warning,
            "GPUs slowed down for hardware reasons".into(),
            items,
            "Thermal or power-brake slowdown lowers the GPU clocks: that rank computes slower and every collective \
             waits for it.",
            "Check cooling and power (`nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER`), fans, inlet temperature \
             and the PSU / power-brake signal.",
        )
    })
}

pub(super) fn gpu_lost(snapshot: &Snapshot) -> Option<Finding> {
    let items: Vec<Evidence> = snapshot
        .nvml
        .iter()
        .flat_map(|n| n.devices.iter())
        .filter_map(|d| Some(evidence(format!("NVML GPU{}", d.index), d.unreachable.clone()?)))
        .collect();
    (!items.is_empty()).then(|| {
        Finding::new(
            "gpu-lost",
            Severity::Error,
            "GPUs the driver cannot reach".into(),
            items,
            "A GPU that has fallen off the bus cannot run work; any job using it fails.",
            "Look for XID 79 in the kernel log; drain the node, then reset or power-cycle it.",
        )
    })
}
