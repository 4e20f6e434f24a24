//! Asking NVML everything `topo` shows, one call at a time, and writing each
//! answer down as it came ([`Answer`]): a field one GPU does not support, or a
//! GPU that has fallen off the bus, costs that field or that GPU, not the run.

use nvml_wrapper::enum_wrappers::device::{
    EccCounter, MemoryError, P2pCapabilitiesIndex, RetirementCause, TopologyLevel,
};
use nvml_wrapper::enum_wrappers::nv_link::{Capability, ErrorCounter};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};
use topo_model::nvml::{
    Answer, DeviceAnswers, EccAnswers, LinkCapabilities, LinkErrors, NvmlDevice, NvmlLink, NvmlPair, NvmlRecording,
    P2pAnswers, PcieAnswers, Pending, RetiredPages, cpu_list_from_words,
};

use super::raw;

/// NVML's `NVML_NVLINK_MAX_LINKS`: links are asked for until one answers
/// "invalid argument" or "not supported", or this many.
const MAX_NVLINKS: u32 = 18;

/// Enough affinity words for 4,096 CPUs.
const AFFINITY_WORDS: usize = 64;

fn answer<T>(result: Result<T, NvmlError>) -> Answer<T> {
    match result {
        Ok(value) => Answer::Ok(value),
        // A call this driver does not have is, to the user, not supported.
        Err(NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_)) => Answer::NotSupported,
        Err(e) => Answer::Error(e.to_string()),
    }
}

pub fn record(nvml: &Nvml) -> NvmlRecording {
    let device_count = answer(nvml.device_count());
    let mut devices = Vec::new();
    let mut handles = Vec::new();
    for index in 0..device_count.ok().copied().unwrap_or(0) {
        match nvml.device_by_index(index) {
            Ok(device) => {
                devices.push(NvmlDevice {
                    index,
                    unreachable: None,
                    answers: Some(Box::new(device_answers(nvml, &device))),
                });
                handles.push((index, device));
            }
            Err(e) => devices.push(NvmlDevice { index, unreachable: Some(e.to_string()), answers: None }),
        }
    }
    let mut pairs = Vec::new();
    for (a, first) in &handles {
        for (b, second) in handles.iter().filter(|(b, _)| b != a) {
            pairs.push(NvmlPair {
                a: *a,
                b: *b,
                // The wrapper takes the second device by value: ask for its handle again.
                common_ancestor: answer(
                    nvml.device_by_index(*b).and_then(|other| first.topology_common_ancestor(other)).map(level_name),
                ),
                p2p: P2pAnswers {
                    read: p2p(first, second, P2pCapabilitiesIndex::Read),
                    write: p2p(first, second, P2pCapabilitiesIndex::Write),
                    atomics: p2p(first, second, P2pCapabilitiesIndex::Atomics),
                    nvlink: p2p(first, second, P2pCapabilitiesIndex::NvLink),
                    prop: p2p(first, second, P2pCapabilitiesIndex::Prop),
                },
            });
        }
    }
    NvmlRecording {
        driver_version: answer(nvml.sys_driver_version()),
        nvml_version: answer(nvml.sys_nvml_version()),
        cuda_driver_version: answer(nvml.sys_cuda_driver_version()),
        device_count,
        devices,
        pairs,
    }
}

fn device_answers(nvml: &Nvml, device: &Device) -> DeviceAnswers {
    let ecc_count = |error, counter| answer(device.total_ecc_errors(error, counter));
    DeviceAnswers {
        name: answer(device.name()),
        uuid: answer(device.uuid()),
        serial: answer(device.serial()),
        pci_bus_id: answer(device.pci_info().map(|p| p.bus_id)),
        architecture: answer(device.architecture().map(|a| a.to_string())),
        vbios_version: answer(device.vbios_version()),
        compute_capability: answer(device.cuda_compute_capability().map(|c| format!("{}.{}", c.major, c.minor))),
        memory_total_bytes: answer(device.memory_info().map(|m| m.total)),
        pcie: PcieAnswers {
            gen_current: answer(device.current_pcie_link_gen()),
            gen_max: answer(device.max_pcie_link_gen()),
            width_current: answer(device.current_pcie_link_width()),
            width_max: answer(device.max_pcie_link_width()),
        },
        numa_node: answer(device.numa_node_id()),
        cpu_affinity: answer(device.cpu_affinity(AFFINITY_WORDS).map(|words| cpu_list_from_words(&words))),
        persistence_mode: answer(device.is_in_persistent_mode()),
        mig_mode: answer(device.mig_mode().map(|m| Pending { current: m.current != 0, pending: m.pending != 0 })),
        ecc: EccAnswers {
            mode: answer(
                device.is_ecc_enabled().map(|e| Pending { current: e.currently_enabled, pending: e.pending_enabled }),
            ),
            volatile_corrected: ecc_count(MemoryError::Corrected, EccCounter::Volatile),
            volatile_uncorrected: ecc_count(MemoryError::Uncorrected, EccCounter::Volatile),
            aggregate_corrected: ecc_count(MemoryError::Corrected, EccCounter::Aggregate),
            aggregate_uncorrected: ecc_count(MemoryError::Uncorrected, EccCounter::Aggregate),
        },
        retired_pages: RetiredPages {
            single_bit: answer(
                device.retired_pages(RetirementCause::MultipleSingleBitEccErrors).map(|p| p.len() as u32),
            ),
            double_bit: answer(device.retired_pages(RetirementCause::DoubleBitEccError).map(|p| p.len() as u32)),
            pending: answer(device.are_pages_pending_retired()),
        },
        remapped_rows: answer(raw::remapped_rows(nvml, device)),
        clock_event_reasons: answer(raw::clock_event_reasons(nvml, device)),
        power_usage_mw: answer(device.power_usage()),
        power_limit_mw: answer(device.enforced_power_limit()),
        fabric: answer(raw::fabric(nvml, device)),
        c2c_enabled: answer(raw::c2c_enabled(nvml, device)),
        nvlinks: nvlinks(nvml, device),
    }
}

fn nvlinks(nvml: &Nvml, device: &Device) -> Vec<NvmlLink> {
    let mut links = Vec::new();
    for index in 0..MAX_NVLINKS {
        let link = device.link_wrapper_for(index);
        let active = match link.is_active() {
            // Past the GPU's last link, or a GPU without NVLink.
            Err(NvmlError::InvalidArg | NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_)) => break,
            other => answer(other),
        };
        let capability = |cap| answer(link.has_capability(cap));
        let errors = |counter| answer(link.error_counter(counter));
        links.push(NvmlLink {
            link: index,
            active,
            version: answer(link.version()),
            remote_bus_id: answer(link.remote_pci_info().map(|p| p.bus_id)),
            remote_type: answer(raw::nvlink_remote_type(nvml, device, index)),
            capabilities: LinkCapabilities {
                p2p: capability(Capability::P2p),
                sysmem: capability(Capability::SysMemAccess),
                p2p_atomics: capability(Capability::P2pAtomics),
                sysmem_atomics: capability(Capability::SysMemAtomics),
                sli_bridge: capability(Capability::SliBridge),
                valid: capability(Capability::ValidLink),
            },
            errors: LinkErrors {
                replay: errors(ErrorCounter::DlReplay),
                recovery: errors(ErrorCounter::DlRecovery),
                crc_flit: errors(ErrorCounter::DlCrcFlit),
                crc_data: errors(ErrorCounter::DlCrcData),
            },
            speed_gbps: None,
        });
    }
    links
}

fn p2p(first: &Device, second: &Device, capability: P2pCapabilitiesIndex) -> Answer<String> {
    use nvml_wrapper::enum_wrappers::device::P2pStatus;
    answer(first.p2p_status(second, capability).map(|status| {
        match status {
            P2pStatus::Ok => "ok",
            P2pStatus::ChipsetNotSupported => "chipset-not-supported",
            P2pStatus::GpuNotSupported => "gpu-not-supported",
            P2pStatus::IohTopologyNotSupported => "topology-not-supported",
            P2pStatus::DisabledByRegkey => "disabled-by-regkey",
            P2pStatus::NotSupported => "not-supported",
            P2pStatus::Unknown => "unknown",
        }
        .to_string()
    }))
}

fn level_name(level: TopologyLevel) -> String {
    match level {
        TopologyLevel::Internal => "internal",
        TopologyLevel::Single => "single",
        TopologyLevel::Multiple => "multiple",
        TopologyLevel::HostBridge => "hostbridge",
        TopologyLevel::Node => "node",
        TopologyLevel::System => "system",
    }
    .to_string()
}
