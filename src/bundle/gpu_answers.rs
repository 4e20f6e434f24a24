//! Pasted GPU state (`nvidia-smi -q`, `nvidia-smi nvlink -s`/`-e`, `nvidia-smi
//! topo -p2p`) recorded as the snapshot's NVML answers, so the checks that
//! read live NVML (downtrained PCIe, ECC, remapped rows, clock events, fabric,
//! inactive NVLinks, P2P) read these the same way. GPUs join the topology by
//! bus ID; nvlink and P2P listings, which print no bus ID, join by UUID or by
//! index.

use std::collections::BTreeSet;

use topo_model::nvml::{Answer, DeviceAnswers, LinkErrors, NvmlDevice, NvmlLink, NvmlPair, NvmlRecording, P2pAnswers};
use topo_model::{BusId, PcieLinkSpec, SmiClass, Topology};
use topo_parsers::nvidia_smi_q::Query;
use topo_parsers::nvlink::{COUNTERS, Counter, NvlinkGpu};
use topo_parsers::p2p_matrix::P2pMatrix;

/// Everything pasted about the GPUs themselves, by file.
#[derive(Default)]
pub(super) struct Pasted {
    pub queries: Vec<(String, Query)>,
    pub nvlinks: Vec<(String, Vec<NvlinkGpu>)>,
    pub p2p: Vec<(String, P2pMatrix)>,
}

impl Pasted {
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty() && self.nvlinks.is_empty() && self.p2p.is_empty()
    }
}

/// Which P2P capability a matrix shows, from the file name (`p2p-w.txt`,
/// `topo_p2p_n`): nvidia-smi does not print it. Read when the name says nothing.
fn capability(name: &str) -> &'static str {
    let lower = name.to_ascii_lowercase();
    let after = lower.split("p2p").nth(1).unwrap_or("");
    let letter = after.trim_start_matches(|c: char| !c.is_ascii_alphanumeric()).chars().next();
    match letter {
        Some('w') => "write",
        Some('n') => "nvlink",
        Some('a') => "atomics",
        Some('p') => "prop",
        _ => "read",
    }
}

fn set_p2p(p2p: &mut P2pAnswers, capability: &str, word: &str) {
    let answer = Answer::Ok(word.to_string());
    match capability {
        "write" => p2p.write = answer,
        "nvlink" => p2p.nvlink = answer,
        "atomics" => p2p.atomics = answer,
        "prop" => p2p.prop = answer,
        _ => p2p.read = answer,
    }
}

fn nvml_links(gpu: &NvlinkGpu) -> Vec<NvmlLink> {
    gpu.links
        .iter()
        .map(|(&link, state)| {
            let mut errors = LinkErrors::default();
            for (printed, count) in &state.errors {
                let Some((_, counter)) = COUNTERS.iter().find(|(name, _)| name == printed) else { continue };
                let slot = match counter {
                    Counter::Replay => &mut errors.replay,
                    Counter::Recovery => &mut errors.recovery,
                    Counter::CrcFlit => &mut errors.crc_flit,
                    Counter::CrcData => &mut errors.crc_data,
                };
                *slot = Answer::Ok(*count);
            }
            NvmlLink {
                link,
                active: state.active.map_or(Answer::NotSupported, Answer::Ok),
                speed_gbps: state.speed_gbps,
                errors,
                ..NvmlLink::default()
            }
        })
        .collect()
}

/// Merges link lists: a link printed by `-s` and by `-e` is one link.
fn merge_links(into: &mut Vec<NvmlLink>, from: Vec<NvmlLink>) {
    for link in from {
        match into.iter_mut().find(|l| l.link == link.link) {
            Some(existing) => {
                if link.active.ok().is_some() {
                    existing.active = link.active;
                    existing.speed_gbps = link.speed_gbps;
                }
                if link.errors.total() > 0 || link.errors.replay.ok().is_some() {
                    existing.errors = link.errors;
                }
            }
            None => into.push(link),
        }
    }
    into.sort_by_key(|l| l.link);
}

/// The recording the files add up to, with notices of what each contributed.
pub(super) fn recording(pasted: &Pasted, notices: &mut Vec<String>) -> NvmlRecording {
    let mut recording = NvmlRecording::default();
    for (name, query) in &pasted.queries {
        let r = &query.recording;
        if recording.devices.is_empty() {
            recording.driver_version = r.driver_version.clone();
            recording.cuda_driver_version = r.cuda_driver_version.clone();
        }
        for device in &r.devices {
            let bus = device.answers.as_ref().and_then(|a| a.bus_id());
            let known = recording.devices.iter().any(|d| d.answers.as_ref().and_then(|a| a.bus_id()) == bus);
            if !known {
                let index = recording.devices.len() as u32;
                recording.devices.push(NvmlDevice { index, ..device.clone() });
            }
        }
        let listed = r.devices.len();
        let of = query
            .attached_gpus
            .filter(|a| *a as usize != listed)
            .map(|a| format!(" of {a} attached"))
            .unwrap_or_default();
        let form =
            if query.form == topo_parsers::nvidia_smi_q::Form::Xml { "nvidia-smi -q -x" } else { "nvidia-smi -q" };
        notices.push(format!(
            "bundle: {name}: {form} (driver {}, {listed} GPU{}{of}: name, bus ID, PCIe, ECC, remapped rows, clock events, fabric where printed)",
            r.driver_version.show(String::clone),
            if listed == 1 { "" } else { "s" }
        ));
        notices.extend(query.warnings.iter().map(|w| format!("{name}: {w}")));
    }
    for (name, gpus) in &pasted.nvlinks {
        let mut joined = 0;
        for gpu in gpus {
            let by_uuid = |d: &NvmlDevice| {
                gpu.uuid.is_some() && d.answers.as_ref().and_then(|a| a.uuid.ok()) == gpu.uuid.as_ref()
            };
            let at = match recording.devices.iter().position(by_uuid) {
                Some(i) => i,
                // By index where the GPU there has no other UUID (`-q -d ECC` prints none).
                None => match recording.devices.iter().position(|d| {
                    d.index == gpu.index
                        && d.answers.as_ref().is_none_or(|a| a.uuid.ok().is_none() || gpu.uuid.is_none())
                }) {
                    Some(i) => i,
                    _ => {
                        let answers = DeviceAnswers {
                            name: Answer::Ok(gpu.name.clone()),
                            uuid: gpu.uuid.clone().map_or(Answer::NotSupported, Answer::Ok),
                            ..DeviceAnswers::default()
                        };
                        recording.devices.push(NvmlDevice {
                            index: gpu.index,
                            unreachable: None,
                            answers: Some(Box::new(answers)),
                        });
                        recording.devices.len() - 1
                    }
                },
            };
            joined += 1;
            if let Some(answers) = recording.devices.get_mut(at).and_then(|d| d.answers.as_mut()) {
                merge_links(&mut answers.nvlinks, nvml_links(gpu));
            }
        }
        let links: usize = gpus.iter().map(|g| g.links.len()).sum();
        let inactive: usize = gpus.iter().flat_map(|g| g.links.values()).filter(|l| l.active == Some(false)).count();
        let counters = gpus.iter().flat_map(|g| g.links.values()).any(|l| !l.errors.is_empty());
        let what = if counters { "error counters" } else { "link speeds" };
        notices.push(format!(
            "bundle: {name}: nvidia-smi nvlink ({joined} GPUs, {links} links, {inactive} inactive: {what})"
        ));
    }
    for (name, matrix) in &pasted.p2p {
        let capability = capability(name);
        for (i, row) in matrix.cells.iter().enumerate() {
            for (j, cell) in row.iter().enumerate() {
                let (Some(word), Some(&a), Some(&b)) = (cell, matrix.gpus.get(i), matrix.gpus.get(j)) else { continue };
                let pair = match recording.pairs.iter_mut().position(|p| p.a == a && p.b == b) {
                    Some(k) => &mut recording.pairs[k],
                    None => {
                        recording.pairs.push(NvmlPair { a, b, ..NvmlPair::default() });
                        let last = recording.pairs.len() - 1;
                        &mut recording.pairs[last]
                    }
                };
                set_p2p(&mut pair.p2p, capability, word);
            }
        }
        let refused = matrix.cells.iter().flatten().flatten().filter(|w| **w != "ok").count();
        notices.push(format!(
            "bundle: {name}: nvidia-smi topo -p2p ({} GPUs, {capability}; {refused} ordered pairs not OK)",
            matrix.gpus.len()
        ));
    }
    recording.device_count = Answer::Ok(recording.devices.len() as u32);
    recording
}

/// Puts the recording's GPU facts into the topology: GPU index and name (by
/// bus ID), and the PCIe link `nvidia-smi -q` printed where lspci showed the
/// GPU but not its link. NVLinks stay the topology's: a pasted nvlink listing names no far ends.
pub(super) fn apply(recording: &NvmlRecording, topology: &mut Topology, notices: &mut Vec<String>) {
    let mut without_links = recording.clone();
    for device in &mut without_links.devices {
        if let Some(answers) = device.answers.as_mut() {
            answers.nvlinks.clear();
        }
    }
    // Devices with no bus ID (from an nvlink listing alone) cannot be placed.
    without_links.devices.retain(|d| d.answers.as_ref().is_some_and(|a| a.bus_id().is_some()));
    if without_links.devices.is_empty() {
        return;
    }
    notices.extend(without_links.apply(topology));
    for (_, d) in recording.answered() {
        let Some(bus) = d.bus_id() else { continue };
        let small = |a: &Answer<u32>| a.ok().and_then(|v| u8::try_from(*v).ok());
        let spec = |generation: &Answer<u32>, width: &Answer<u32>| PcieLinkSpec::new(small(generation), small(width));
        let (current, max) =
            (spec(&d.pcie.gen_current, &d.pcie.width_current), spec(&d.pcie.gen_max, &d.pcie.width_max));
        // A GPU lspci showed without its link (`lspci -t` alone) takes nvidia-smi's;
        // a GPU no PCI tree shows stays out of it (its matrix cells stay unknown),
        // and the PCIe check reads its link from the recording.
        if let Some(device) = topology.pci_devices.iter_mut().find(|p| p.bus_id == bus)
            && !device.link.current.is_known()
            && !device.link.max.is_known()
        {
            device.link = topo_model::PcieLink { current, max };
        }
    }
}

/// Where the pasted GPU facts disagree with the rest: GPUs `nvidia-smi -q`
/// lists at bus IDs lspci does not show (and the reverse), and NVLinks that
/// `nvidia-smi nvlink -s` shows inactive where `nvidia-smi topo -m` counts them.
pub(super) fn contradictions(
    pasted: &Pasted,
    lspci_gpus: Option<&BTreeSet<BusId>>,
    smi: Option<(&str, &topo_parsers::nvidia_smi::SmiMatrix)>,
) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(lspci) = lspci_gpus {
        for (name, query) in &pasted.queries {
            let listed: BTreeSet<BusId> = query.recording.answered().filter_map(|(_, d)| d.bus_id()).collect();
            for bus in listed.difference(lspci) {
                found.push(format!("contradiction: {name} lists a GPU at {bus}, lspci shows no GPU there"));
            }
            let complete = query.attached_gpus.is_none_or(|a| a as usize == listed.len());
            if complete {
                for bus in lspci.difference(&listed) {
                    found.push(format!("contradiction: lspci shows a GPU at {bus}, {name} does not list it"));
                }
            }
        }
    }
    if let Some((smi_name, matrix)) = smi {
        for (name, gpus) in &pasted.nvlinks {
            for gpu in gpus {
                let inactive = gpu.links.values().filter(|l| l.active == Some(false)).count();
                let active = gpu.links.values().filter(|l| l.active == Some(true)).count() as u32;
                let label = format!("GPU{}", gpu.index);
                let Some(row) = matrix.labels.iter().position(|l| *l == label).and_then(|i| matrix.cells.get(i)) else {
                    continue;
                };
                let most = row.iter().filter_map(|c| if let SmiClass::Nv(n) = c { Some(*n) } else { None }).max();
                if let Some(most) = most.filter(|m| inactive > 0 && active < *m) {
                    found.push(format!(
                        "contradiction: {label}: {smi_name} says NV{most}, {name} shows {active} active and {inactive} inactive links"
                    ));
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_from_the_file_name() {
        assert_eq!(capability("club-3090-p2p-rw.txt"), "read");
        assert_eq!(capability("topo_p2p_w.txt"), "write");
        assert_eq!(capability("aikitoria-13-5gpu-p2p-p.txt"), "prop");
        assert_eq!(capability("matrix.txt"), "read");
    }
}
