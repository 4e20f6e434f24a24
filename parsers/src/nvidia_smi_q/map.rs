//! Which printed field answers which NVML question. One row per question,
//! with every name nvidia-smi has used for it in each form (first found wins):
//! the XML element paths of `nvsmi_device_v10.dtd` to `v13`, and the text
//! labels of drivers 450 to 580. A newcomer adds a name to a row.

use topo_model::nvml::{
    Answer, DeviceAnswers, EccAnswers, Fabric, NvmlDevice, NvmlRecording, PcieAnswers, Pending, RemappedRows,
    RetiredPages,
};

use super::{Flattened, Form, GpuFields, echo};

/// Where a question's answer is printed, per form.
struct Printed {
    what: &'static str,
    xml: &'static [&'static str],
    text: &'static [&'static str],
}

macro_rules! printed {
    ($name:ident, $what:literal, [$($xml:literal),*], [$($text:literal),*]) => {
        const $name: Printed = Printed { what: $what, xml: &[$($xml),*], text: &[$($text),*] };
    };
}

printed!(NAME, "product name", ["product_name"], ["Product Name"]);
printed!(UUID, "UUID", ["uuid"], ["GPU UUID"]);
printed!(SERIAL, "serial", ["serial"], ["Serial Number"]);
printed!(BUS_ID, "bus ID", ["pci/pci_bus_id"], ["PCI/Bus Id"]);
printed!(ARCH, "architecture", ["product_architecture"], ["Product Architecture"]);
printed!(VBIOS, "VBIOS version", ["vbios_version"], ["VBIOS Version"]);
printed!(MEMORY, "memory total", ["fb_memory_usage/total"], ["FB Memory Usage/Total"]);
printed!(
    GEN_NOW,
    "PCIe generation",
    ["pci/pci_gpu_link_info/pcie_gen/current_link_gen"],
    ["PCI/GPU Link Info/PCIe Generation/Current"]
);
printed!(
    GEN_MAX,
    "PCIe max generation",
    ["pci/pci_gpu_link_info/pcie_gen/max_link_gen"],
    ["PCI/GPU Link Info/PCIe Generation/Max"]
);
printed!(
    WIDTH_NOW,
    "PCIe width",
    ["pci/pci_gpu_link_info/link_widths/current_link_width"],
    ["PCI/GPU Link Info/Link Width/Current"]
);
printed!(
    WIDTH_MAX,
    "PCIe max width",
    ["pci/pci_gpu_link_info/link_widths/max_link_width"],
    ["PCI/GPU Link Info/Link Width/Max"]
);
printed!(PERSISTENCE, "persistence mode", ["persistence_mode"], ["Persistence Mode"]);
printed!(MIG_NOW, "MIG mode", ["mig_mode/current_mig"], ["MIG Mode/Current"]);
printed!(MIG_PENDING, "pending MIG mode", ["mig_mode/pending_mig"], ["MIG Mode/Pending"]);
printed!(ECC_NOW, "ECC mode", ["ecc_mode/current_ecc"], ["ECC Mode/Current", "Ecc Mode/Current"]);
printed!(ECC_PENDING, "pending ECC mode", ["ecc_mode/pending_ecc"], ["ECC Mode/Pending", "Ecc Mode/Pending"]);
printed!(
    RETIRED_SBE,
    "retired pages (single bit)",
    ["retired_pages/multiple_single_bit_retirement/retired_count"],
    ["Retired Pages/Single Bit ECC"]
);
printed!(
    RETIRED_DBE,
    "retired pages (double bit)",
    ["retired_pages/double_bit_retirement/retired_count"],
    ["Retired Pages/Double Bit ECC"]
);
printed!(
    RETIRED_PENDING,
    "page retirement pending",
    ["retired_pages/pending_retirement"],
    ["Retired Pages/Pending Page Retirement", "Retired Pages/Pending"]
);
printed!(
    REMAP_CORR,
    "remapped rows (correctable)",
    ["remapped_rows/remapped_row_corr"],
    ["Remapped Rows/Correctable Error"]
);
printed!(
    REMAP_UNC,
    "remapped rows (uncorrectable)",
    ["remapped_rows/remapped_row_unc"],
    ["Remapped Rows/Uncorrectable Error"]
);
printed!(REMAP_PENDING, "row remapping pending", ["remapped_rows/remapped_row_pending"], ["Remapped Rows/Pending"]);
printed!(
    REMAP_FAILED,
    "row remapping failure",
    ["remapped_rows/remapped_row_failure"],
    ["Remapped Rows/Remapping Failure Occurred"]
);
printed!(
    POWER_DRAW,
    "power draw",
    ["gpu_power_readings/power_draw", "power_readings/power_draw"],
    ["GPU Power Readings/Power Draw", "Power Readings/Power Draw"]
);
printed!(
    POWER_LIMIT,
    "power limit",
    ["gpu_power_readings/current_power_limit", "power_readings/power_limit"],
    ["GPU Power Readings/Current Power Limit", "Power Readings/Power Limit"]
);
printed!(FABRIC_STATE, "fabric state", ["fabric/state"], ["Fabric/State"]);
printed!(FABRIC_STATUS, "fabric status", ["fabric/status"], ["Fabric/Status"]);
printed!(FABRIC_CLIQUE, "fabric clique", ["fabric/cliqueId", "fabric/clique_id"], ["Fabric/CliqueId"]);
printed!(FABRIC_CLUSTER, "fabric cluster", ["fabric/clusterUuid", "fabric/cluster_uuid"], ["Fabric/ClusterUUID"]);
printed!(C2C, "C2C mode", ["gpu_c2c_mode", "c2c_mode"], ["GPU C2C Mode"]);

/// The clock-event (throttle) reasons, NVML's bit for each, and their names:
/// the XML leaf after `clocks_event_reason_` / `clocks_throttle_reason_`, and
/// the text label (`nvmlClocksEventReason*` in nvml.h).
const REASONS: &[(u64, &str, &str)] = &[
    (0x1, "gpu_idle", "Idle"),
    (0x2, "applications_clocks_setting", "Applications Clocks Setting"),
    (0x4, "sw_power_cap", "SW Power Cap"),
    (0x8, "hw_slowdown", "HW Slowdown"),
    (0x10, "sync_boost", "Sync Boost"),
    (0x20, "sw_thermal_slowdown", "SW Thermal Slowdown"),
    (0x40, "hw_thermal_slowdown", "HW Thermal Slowdown"),
    (0x80, "hw_power_brake_slowdown", "HW Power Brake Slowdown"),
    (0x100, "display_clocks_setting", "Display Clock Setting"),
];

/// Sections that list the reasons, per form and driver generation.
const REASON_SECTIONS: &[&str] =
    &["clocks_event_reasons", "clocks_throttle_reasons", "Clocks Event Reasons", "Clocks Throttle Reasons"];

/// What nvidia-smi prints where NVML said "not supported" or gave nothing.
fn not_answered(value: &str) -> bool {
    let v = value.trim().trim_matches(|c| c == '[' || c == ']');
    v.is_empty()
        || ["N/A", "Not Supported", "Not Available", "Unknown Error", "Requested functionality has been deprecated"]
            .iter()
            .any(|w| v.eq_ignore_ascii_case(w))
}

/// Reads one GPU's answers, collecting warnings for values not understood.
struct Reader<'a> {
    gpu: &'a GpuFields,
    form: Form,
    index: u32,
    warnings: &'a mut Vec<String>,
}

impl Reader<'_> {
    fn raw(&self, printed: &Printed) -> Option<&str> {
        let paths = if self.form == Form::Xml { printed.xml } else { printed.text };
        paths.iter().find_map(|p| self.gpu.get(p))
    }

    /// The value through `read`; `NotSupported` when not printed or N/A, an
    /// error answer (and a warning) when printed but not understood.
    fn answer<T>(&mut self, printed: &Printed, read: impl Fn(&str) -> Option<T>) -> Answer<T> {
        match self.raw(printed) {
            None => Answer::NotSupported,
            Some(v) if not_answered(v) => Answer::NotSupported,
            Some(v) => match read(v) {
                Some(value) => Answer::Ok(value),
                None => {
                    let text = format!("GPU {}: {} `{}` not understood", self.index, printed.what, echo(v));
                    self.warnings.push(text.clone());
                    Answer::Error(text)
                }
            },
        }
    }

    fn string(&mut self, printed: &Printed) -> Answer<String> {
        self.answer(printed, |v| Some(v.to_string()))
    }

    /// A number with an optional unit word after it (`16x`, `81920 MiB`).
    fn number<T: std::str::FromStr>(&mut self, printed: &Printed) -> Answer<T> {
        self.answer(printed, |v| leading_number(v).parse().ok())
    }

    fn flag(&mut self, printed: &Printed) -> Answer<bool> {
        self.answer(printed, flag)
    }
}

fn leading_number(v: &str) -> &str {
    let v = v.trim();
    let end = v.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-')).unwrap_or(v.len());
    &v[..end]
}

fn flag(v: &str) -> Option<bool> {
    match v.trim() {
        "Enabled" | "Yes" | "Active" | "On" | "True" => Some(true),
        "Disabled" | "No" | "Not Active" | "Off" | "False" => Some(false),
        _ => None,
    }
}

/// `72.02 W` -> milliwatts.
fn milliwatts(v: &str) -> Option<u32> {
    let watts: f64 = leading_number(v).parse().ok()?;
    (watts.is_finite() && (0.0..4.0e6).contains(&watts)).then(|| (watts * 1000.0).round() as u32)
}

/// `81920 MiB` -> bytes.
fn mib_to_bytes(v: &str) -> Option<u64> {
    leading_number(v).parse::<u64>().ok()?.checked_mul(1 << 20)
}

/// `Completed` -> NVML's `completed` (the words `nvmlGpuFabricState_t` names).
fn fabric_state(v: &str) -> Option<String> {
    let word = v.trim().to_ascii_lowercase().replace(' ', "-");
    ["not-supported", "not-started", "in-progress", "completed"].contains(&word.as_str()).then_some(word)
}

/// NVML's volatile/aggregate corrected and uncorrected totals, summed from
/// whatever counters this driver prints (`single_bit/total` on old drivers,
/// `SRAM`/`DRAM Correctable` on Ampere and later).
fn ecc_counts(reader: &mut Reader, scope: &str) -> (Answer<u64>, Answer<u64>) {
    // Paths compare without case: `ecc_errors/volatile` and `ECC Errors/Volatile`.
    let prefix = if reader.form == Form::Xml { format!("ecc_errors/{scope}") } else { format!("ECC Errors/{scope}") };
    let (mut corrected, mut uncorrected): (Option<u64>, Option<u64>) = (None, None);
    let mut bad = None;
    for (key, value) in reader.gpu.under(&prefix) {
        let key = key.to_ascii_lowercase();
        let uncorrectable = key.contains("uncorrectable") || key == "double_bit/total";
        let correctable = !uncorrectable && (key.contains("correctable") || key == "single_bit/total");
        if !(correctable || uncorrectable) || not_answered(value) {
            continue;
        }
        let Ok(n) = leading_number(value).parse::<u64>() else {
            bad = Some(value.to_string());
            continue;
        };
        let total = if uncorrectable { &mut uncorrected } else { &mut corrected };
        *total = Some(total.unwrap_or(0).saturating_add(n));
    }
    if let Some(value) = bad {
        reader.warnings.push(format!("GPU {}: ECC {scope} count `{}` not understood", reader.index, echo(&value)));
    }
    let answer = |n: Option<u64>| n.map_or(Answer::NotSupported, Answer::Ok);
    (answer(corrected), answer(uncorrected))
}

fn clock_reasons(reader: &Reader) -> Answer<u64> {
    let mut mask = None;
    for section in REASON_SECTIONS {
        for (key, value) in reader.gpu.under(section) {
            let name = key.trim_start_matches("clocks_event_reason_").trim_start_matches("clocks_throttle_reason_");
            let Some((bit, ..)) = REASONS.iter().find(|(_, xml, text)| *xml == name || *text == name) else {
                continue;
            };
            match flag(value) {
                Some(active) => {
                    let m: &mut u64 = mask.get_or_insert(0);
                    if active {
                        *m |= bit;
                    }
                }
                None => continue,
            }
        }
    }
    mask.map_or(Answer::NotSupported, Answer::Ok)
}

fn pending<T: Copy>(current: &Answer<T>, pending: &Answer<T>) -> Answer<Pending<T>> {
    match (current, pending) {
        (Answer::Ok(c), Answer::Ok(p)) => Answer::Ok(Pending { current: *c, pending: *p }),
        (Answer::Ok(c), _) => Answer::Ok(Pending { current: *c, pending: *c }),
        (Answer::Error(e), _) | (_, Answer::Error(e)) => Answer::Error(e.clone()),
        _ => Answer::NotSupported,
    }
}

fn device(gpu: &GpuFields, form: Form, index: u32, warnings: &mut Vec<String>) -> DeviceAnswers {
    let mut r = Reader { gpu, form, index, warnings };
    let pci_bus_id = match r.string(&BUS_ID) {
        Answer::NotSupported => gpu.header_bus_id.clone().map_or(Answer::NotSupported, Answer::Ok),
        other => other,
    };
    let mig = pending(&r.flag(&MIG_NOW), &r.flag(&MIG_PENDING));
    let ecc_mode = pending(&r.flag(&ECC_NOW), &r.flag(&ECC_PENDING));
    let (volatile_corrected, volatile_uncorrected) = ecc_counts(&mut r, "volatile");
    let (aggregate_corrected, aggregate_uncorrected) = ecc_counts(&mut r, "aggregate");
    let remap = [r.number::<u32>(&REMAP_CORR), r.number::<u32>(&REMAP_UNC)];
    let remap_flags = [r.flag(&REMAP_PENDING), r.flag(&REMAP_FAILED)];
    let remapped_rows = match (&remap[0], &remap[1], &remap_flags[0], &remap_flags[1]) {
        (Answer::Ok(c), Answer::Ok(u), pending, failed) => Answer::Ok(RemappedRows {
            corrected: *c,
            uncorrected: *u,
            pending: pending.ok() == Some(&true),
            failed: failed.ok() == Some(&true),
        }),
        _ => Answer::NotSupported,
    };
    let state = r.answer(&FABRIC_STATE, fabric_state);
    let fabric = match state {
        Answer::Ok(state) => Answer::Ok(Fabric {
            state,
            status: r.raw(&FABRIC_STATUS).unwrap_or("").to_string(),
            clique_id: r.raw(&FABRIC_CLIQUE).and_then(|c| c.parse().ok()).unwrap_or(0),
            cluster_uuid: r.raw(&FABRIC_CLUSTER).filter(|c| !not_answered(c)).unwrap_or("").to_string(),
        }),
        Answer::NotSupported => Answer::NotSupported,
        Answer::Error(e) => Answer::Error(e),
    };
    DeviceAnswers {
        name: r.string(&NAME),
        uuid: r.string(&UUID),
        serial: r.string(&SERIAL),
        pci_bus_id,
        architecture: r.string(&ARCH),
        vbios_version: r.string(&VBIOS),
        compute_capability: Answer::NotSupported,
        memory_total_bytes: r.answer(&MEMORY, mib_to_bytes),
        pcie: PcieAnswers {
            gen_current: r.number(&GEN_NOW),
            gen_max: r.number(&GEN_MAX),
            width_current: r.number(&WIDTH_NOW),
            width_max: r.number(&WIDTH_MAX),
        },
        numa_node: Answer::NotSupported,
        cpu_affinity: Answer::NotSupported,
        persistence_mode: r.flag(&PERSISTENCE),
        mig_mode: mig,
        ecc: EccAnswers {
            mode: ecc_mode,
            volatile_corrected,
            volatile_uncorrected,
            aggregate_corrected,
            aggregate_uncorrected,
        },
        retired_pages: RetiredPages {
            single_bit: r.number(&RETIRED_SBE),
            double_bit: r.number(&RETIRED_DBE),
            pending: r.flag(&RETIRED_PENDING),
        },
        remapped_rows,
        clock_event_reasons: clock_reasons(&r),
        power_usage_mw: r.answer(&POWER_DRAW, milliwatts),
        power_limit_mw: r.answer(&POWER_LIMIT, milliwatts),
        fabric,
        c2c_enabled: r.flag(&C2C),
        nvlinks: Vec::new(),
    }
}

/// `12.2` -> NVML's `12020`.
fn cuda_as_nvml(version: &str) -> Option<i32> {
    let (major, minor) = version.trim().split_once('.')?;
    let (major, minor): (i32, i32) = (major.parse().ok()?, minor.parse().ok()?);
    (0..1000).contains(&major).then_some(())?;
    (0..100).contains(&minor).then(|| major * 1000 + minor * 10)
}

pub(super) fn recording(flat: &Flattened, form: Form, warnings: &mut Vec<String>) -> NvmlRecording {
    let devices = flat
        .gpus
        .iter()
        .enumerate()
        .map(|(i, gpu)| {
            let index = i as u32;
            NvmlDevice { index, unreachable: None, answers: Some(Box::new(device(gpu, form, index, warnings))) }
        })
        .collect();
    let string = |v: &Option<String>| match v {
        Some(v) if !not_answered(v) => Answer::Ok(v.clone()),
        _ => Answer::NotSupported,
    };
    NvmlRecording {
        driver_version: string(&flat.driver_version),
        nvml_version: Answer::NotSupported,
        cuda_driver_version: flat
            .cuda_version
            .as_deref()
            .and_then(cuda_as_nvml)
            .map_or(Answer::NotSupported, Answer::Ok),
        device_count: Answer::Ok(flat.gpus.len() as u32),
        devices,
        pairs: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_units() {
        assert_eq!(cuda_as_nvml("12.2"), Some(12020));
        assert_eq!(cuda_as_nvml("99999999999.1"), None);
        assert_eq!(milliwatts("72.02 W"), Some(72020));
        assert_eq!(milliwatts("99999999999 W"), None);
        assert_eq!(mib_to_bytes("81920 MiB"), Some(81920 << 20));
        assert_eq!(mib_to_bytes("99999999999999999999 MiB"), None);
        assert_eq!(fabric_state("In Progress").as_deref(), Some("in-progress"));
        assert!(not_answered("[N/A]"));
    }
}
