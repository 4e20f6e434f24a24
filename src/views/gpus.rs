//! The NVML part of the plain view: per-GPU facts and health, every NVLink with
//! its far end and error counters, the P2P status matrix and NVML's own
//! topology levels (checked against the PCIe tree sysfs gave).

use std::fmt::Write;

use topo_model::nvml::{Answer, DeviceAnswers, NvmlLink, NvmlRecording, ancestor_in_smi_words, clock_event_reasons};
use topo_model::{BusId, SmiClass, Topology};

/// `driver 550.54.15, NVML 12.550.54.15, CUDA 12.4`.
pub fn versions(recording: &NvmlRecording) -> String {
    format!(
        "driver {}, NVML {}, CUDA {}",
        recording.driver_version.show(String::clone),
        recording.nvml_version.show(String::clone),
        recording.cuda_version().show(String::clone)
    )
}

pub fn render(out: &mut String, recording: &NvmlRecording, topology: &Topology) {
    let _ = writeln!(out, "GPUs (NVML: {})", versions(recording));
    if recording.devices.is_empty() {
        out.push_str("  the driver reports no GPU\n\n");
        return;
    }
    for device in &recording.devices {
        match (&device.unreachable, &device.answers) {
            (None, Some(answers)) => gpu(out, device.index, answers),
            (reason, _) => {
                let reason = reason.as_deref().unwrap_or("no answer recorded");
                let _ = writeln!(out, "GPU{:<3} unreachable: {reason}", device.index);
            }
        }
    }
    out.push('\n');
    nvlinks(out, recording);
    p2p(out, recording);
    ancestors(out, recording, topology);
}

fn gpu(out: &mut String, index: u32, d: &DeviceAnswers) {
    let text = |a: &Answer<String>| a.show(String::clone);
    let _ = writeln!(
        out,
        "GPU{index:<3} {}  {}  {}  serial {}  VBIOS {}",
        text(&d.name),
        d.bus_id().map_or_else(|| text(&d.pci_bus_id), |b| b.to_string()),
        text(&d.uuid),
        text(&d.serial),
        text(&d.vbios_version)
    );
    let indent = "       ";
    let memory = d.memory_total_bytes.show(|b| format!("{:.1} GiB", *b as f64 / (1u64 << 30) as f64));
    let _ = writeln!(
        out,
        "{indent}{}, compute {}, {memory}; PCIe {}; GPU NUMA ID {}, CPU affinity {}",
        text(&d.architecture),
        text(&d.compute_capability),
        pcie(d),
        d.numa_node.show(u32::to_string),
        text(&d.cpu_affinity)
    );
    let on_off = |b: &bool| if *b { "on" } else { "off" }.to_string();
    let mode = |a: &Answer<topo_model::nvml::Pending<bool>>| {
        a.show(|m| {
            if m.current == m.pending {
                on_off(&m.current)
            } else {
                format!("{} (pending {})", on_off(&m.current), on_off(&m.pending))
            }
        })
    };
    let count = |a: &Answer<u64>| a.show(u64::to_string);
    let _ = writeln!(
        out,
        "{indent}persistence {}; MIG {}; ECC {}: volatile {} corrected, {} uncorrected; aggregate {} corrected, {} uncorrected",
        d.persistence_mode.show(on_off),
        mode(&d.mig_mode),
        mode(&d.ecc.mode),
        count(&d.ecc.volatile_corrected),
        count(&d.ecc.volatile_uncorrected),
        count(&d.ecc.aggregate_corrected),
        count(&d.ecc.aggregate_uncorrected)
    );
    let pending = |b: &bool| if *b { "pending" } else { "none pending" }.to_string();
    let _ = writeln!(
        out,
        "{indent}retired pages: {} single-bit, {} double-bit, {}; remapped rows: {}",
        d.retired_pages.single_bit.show(u32::to_string),
        d.retired_pages.double_bit.show(u32::to_string),
        d.retired_pages.pending.show(pending),
        d.remapped_rows.show(|r| format!(
            "{} corrected, {} uncorrected, {}, {}",
            r.corrected,
            r.uncorrected,
            pending(&r.pending),
            if r.failed { "REMAPPING FAILED" } else { "no failure" }
        ))
    );
    let clocks = d.clock_event_reasons.show(|mask| {
        let (names, hardware) = clock_event_reasons(*mask);
        match (names.is_empty(), hardware) {
            (true, _) => "none".to_string(),
            (false, true) => format!("{} (hardware)", names.join(", ")),
            (false, false) => names.join(", "),
        }
    });
    let watts = |a: &Answer<u32>| a.show(|mw| format!("{:.0} W", f64::from(*mw) / 1000.0));
    let fabric = d.fabric.show(|f| {
        let mut text = f.state.clone();
        if f.state != "not-supported" {
            let _ = write!(text, " ({}, clique {}", f.status, f.clique_id);
            if !f.cluster_uuid.is_empty() {
                let _ = write!(text, ", cluster {}", f.cluster_uuid);
            }
            text.push(')');
        }
        text
    });
    let _ = writeln!(
        out,
        "{indent}clock events: {clocks}; power {} of {}; fabric {fabric}; C2C {}",
        watts(&d.power_usage_mw),
        watts(&d.power_limit_mw),
        d.c2c_enabled.show(on_off)
    );
    if !d.nvlinks.is_empty() {
        let active: Vec<&NvmlLink> = d.nvlinks.iter().filter(|l| l.active.ok() == Some(&true)).collect();
        let mut versions: Vec<u32> = active.iter().filter_map(|l| l.version.ok().copied()).collect();
        versions.dedup();
        let errors: u64 = d.nvlinks.iter().map(|l| l.errors.total()).sum();
        let versions = versions.iter().map(|v| format!("v{v}")).collect::<Vec<_>>().join("/");
        let _ = writeln!(
            out,
            "{indent}NVLink: {} of {} active{}; error counters total {errors}",
            active.len(),
            d.nvlinks.len(),
            if versions.is_empty() { String::new() } else { format!(" ({versions})") }
        );
    }
}

/// `Gen5 x16 (max Gen5 x16)`, with a note when the link runs below its maximum.
fn pcie(d: &DeviceAnswers) -> String {
    let p = &d.pcie;
    let link = |generation: &Answer<u32>, width: &Answer<u32>| match (generation.ok(), width.ok()) {
        (None, None) => "n/a".to_string(),
        (g, w) => format!(
            "Gen{} x{}",
            g.map_or_else(|| "?".to_string(), u32::to_string),
            w.map_or_else(|| "?".to_string(), u32::to_string)
        ),
    };
    let mut text = format!("{} (max {})", link(&p.gen_current, &p.width_current), link(&p.gen_max, &p.width_max));
    let below =
        |current: &Answer<u32>, max: &Answer<u32>| matches!((current.ok(), max.ok()), (Some(c), Some(m)) if c < m);
    if below(&p.width_current, &p.width_max) {
        text.push_str(" NARROWER THAN MAX");
    } else if below(&p.gen_current, &p.gen_max) {
        text.push_str(" below max gen (normal while idle)");
    }
    text
}

fn nvlinks(out: &mut String, recording: &NvmlRecording) {
    if recording.answered().all(|(_, d)| d.nvlinks.is_empty()) {
        return;
    }
    let gpu_at = |bus: BusId| recording.answered().find(|(_, d)| d.bus_id() == Some(bus)).map(|(i, _)| i);
    let _ = writeln!(
        out,
        "NVLinks (NVML)\n{:<7}{:<6}{:<10}{:<5}{:<28}{:<44}{:>8}{:>10}{:>10}{:>10}",
        "GPU", "Link", "State", "Ver", "Remote", "Capabilities", "Replay", "Recovery", "CRC flit", "CRC data"
    );
    for (index, device) in recording.answered() {
        for link in &device.nvlinks {
            let bus = link.remote_bus_id.ok().and_then(|b| b.parse::<BusId>().ok());
            let peer = bus.and_then(gpu_at);
            let remote = match (link.remote_type.ok().map(String::as_str), bus) {
                (Some("ibmnpu"), _) => "CPU".to_string(),
                (_, Some(bus)) if peer.is_some() => format!("GPU{} {bus}", peer.unwrap_or_default()),
                (Some("switch"), Some(bus)) => format!("NVSwitch {bus}"),
                (_, Some(bus)) => format!("{} {bus}", link.remote_type.show(String::clone)),
                (_, None) => link.remote_bus_id.show(String::clone),
            };
            let state = link.active.show(|a| if *a { "active" } else { "inactive" }.to_string());
            let count = |a: &Answer<u64>| a.show(u64::to_string);
            let _ = writeln!(
                out,
                "{:<7}{:<6}{:<10}{:<5}{:<28}{:<44}{:>8}{:>10}{:>10}{:>10}",
                format!("GPU{index}"),
                link.link,
                state,
                link.version.show(u32::to_string),
                remote,
                link.capabilities.names().join(" "),
                count(&link.errors.replay),
                count(&link.errors.recovery),
                count(&link.errors.crc_flit),
                count(&link.errors.crc_data)
            );
        }
    }
    out.push('\n');
}

/// NVML's P2P status words, shortened as `nvidia-smi topo -p2p` does.
fn p2p_code(answer: &Answer<String>) -> &'static str {
    match answer {
        Answer::Ok(status) => match status.as_str() {
            "ok" => "OK",
            "chipset-not-supported" => "CNS",
            "gpu-not-supported" => "GNS",
            "topology-not-supported" => "TNS",
            "disabled-by-regkey" => "DR",
            "not-supported" => "NS",
            _ => "U",
        },
        Answer::NotSupported => "n/a",
        Answer::Error(_) => "ERR",
    }
}

fn gpu_indices(recording: &NvmlRecording) -> Vec<u32> {
    recording.answered().map(|(i, _)| i).collect()
}

fn p2p(out: &mut String, recording: &NvmlRecording) {
    let gpus = gpu_indices(recording);
    if gpus.len() < 2 || recording.pairs.is_empty() {
        return;
    }
    let cell = |a: u32, b: u32| match recording.pair(a, b) {
        _ if a == b => "X".to_string(),
        Some(pair) => {
            let p = &pair.p2p;
            [&p.read, &p.write, &p.atomics, &p.nvlink].map(p2p_code).join("/")
        }
        None => "-".to_string(),
    };
    let width = gpus.iter().flat_map(|a| gpus.iter().map(move |b| (*a, *b))).map(|(a, b)| cell(a, b).len()).max();
    let width = width.unwrap_or(4).max(5) + 2;
    out.push_str("P2P status (NVML; read/write/atomics/nvlink per cell)\n");
    let header: Vec<String> = gpus.iter().map(|b| format!("GPU{b}")).collect();
    row(out, "", &header, width);
    for a in &gpus {
        let cells: Vec<String> = gpus.iter().map(|b| cell(*a, *b)).collect();
        row(out, &format!("GPU{a}"), &cells, width);
    }
    out.push_str(
        "  OK = supported, CNS = chipset not supported, GNS = GPU not supported, TNS = topology not supported,\n  \
         DR = disabled by regkey, NS = not supported, U = unknown, n/a = not answered, ERR = error\n\n",
    );
}

/// NVML's common-ancestor level per pair in nvidia-smi's words, and where it
/// disagrees with the PCIe path sysfs gave.
fn ancestors(out: &mut String, recording: &NvmlRecording, topology: &Topology) {
    let gpus: Vec<(u32, Option<BusId>)> = recording.answered().map(|(i, d)| (i, d.bus_id())).collect();
    if gpus.len() < 2 {
        return;
    }
    let level = |a: u32, b: u32| {
        recording.pair(a, b).map_or("-", |p| match &p.common_ancestor {
            Answer::Ok(level) => ancestor_in_smi_words(level),
            Answer::NotSupported => "n/a",
            Answer::Error(_) => "ERR",
        })
    };
    out.push_str("PCIe common ancestor (NVML)\n");
    let header: Vec<String> = gpus.iter().map(|(b, _)| format!("GPU{b}")).collect();
    row(out, "", &header, 7);
    let mut disagreements = Vec::new();
    for (a, bus_a) in &gpus {
        let mut cells = Vec::new();
        for (b, bus_b) in &gpus {
            let nvml = if a == b { "X" } else { level(*a, *b) };
            cells.push(nvml.to_string());
            if let (Some(x), Some(y)) = (bus_a, bus_b)
                && a < b
                && topology.pci(*x).is_some()
                && topology.pci(*y).is_some()
            {
                let sysfs = topology.pcie_path(*x, *y).smi;
                if sysfs != SmiClass::Unknown && SmiClass::parse(nvml).is_some_and(|n| n != sysfs) {
                    disagreements.push(format!("GPU{a}-GPU{b}: NVML {nvml}, sysfs {sysfs}"));
                }
            }
        }
        row(out, &format!("GPU{a}"), &cells, 7);
    }
    if !disagreements.is_empty() {
        let _ = writeln!(out, "  NVML and the sysfs PCIe tree disagree: {}", disagreements.join("; "));
    }
    out.push('\n');
}

/// One matrix row: a label column of 7, then cells of `width`, no trailing blanks.
fn row(out: &mut String, label: &str, cells: &[String], width: usize) {
    let mut line = format!("{label:<7}");
    for cell in cells {
        let _ = write!(line, "{cell:<width$}");
    }
    out.push_str(line.trim_end());
    out.push('\n');
}
