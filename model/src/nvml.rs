//! What NVML said about a node, recorded raw.
//!
//! Every NVML call the probe makes is kept here with its answer (a value, "not
//! supported", or the error), so a snapshot replays on a machine without a GPU
//! exactly what the driver said, and tests run on recordings. Derived facts
//! (NVLink bundles, NVSwitch nodes, GPU names in the topology) are computed from
//! a recording by [`NvmlRecording::apply`]; the PCIe tree stays sysfs's, joined
//! on the bus ID.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::topology::{Gpu, NvLinkBundle, NvLinkRemote, NvSwitch, Topology};
use crate::{BusId, CpuSet};

/// One NVML answer. Written as the value itself, `null` for "not supported" and
/// `{error: text}` for an error, so YAML and JSON snapshots read the same.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Answer<T> {
    Ok(T),
    /// `NVML_ERROR_NOT_SUPPORTED`, or a call this driver does not have: shown as `n/a`.
    #[default]
    NotSupported,
    /// Any other error, as NVML described it (`GPU is lost`, `Insufficient permissions`).
    Error(String),
}

impl<T> Answer<T> {
    pub fn ok(&self) -> Option<&T> {
        match self {
            Answer::Ok(value) => Some(value),
            _ => None,
        }
    }

    pub fn map<U>(&self, f: impl FnOnce(&T) -> U) -> Answer<U> {
        match self {
            Answer::Ok(value) => Answer::Ok(f(value)),
            Answer::NotSupported => Answer::NotSupported,
            Answer::Error(e) => Answer::Error(e.clone()),
        }
    }

    /// The value through `show`, `n/a`, or `error (…)`.
    pub fn show(&self, show: impl FnOnce(&T) -> String) -> String {
        match self {
            Answer::Ok(value) => show(value),
            Answer::NotSupported => "n/a".to_string(),
            Answer::Error(e) => format!("error ({e})"),
        }
    }
}

impl<T: Serialize> Serialize for Answer<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Answer::Ok(value) => value.serialize(serializer),
            Answer::NotSupported => serializer.serialize_none(),
            Answer::Error(error) => AnswerError { error: error.clone() }.serialize(serializer),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Answer<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // One pass, no buffering (an untagged enum would buffer every value: a
        // cluster of snapshots holds thousands of answers each).
        deserializer.deserialize_any(AnswerVisitor(std::marker::PhantomData))
    }
}

/// The written form of an error answer.
#[derive(Serialize)]
struct AnswerError {
    error: String,
}

struct AnswerVisitor<T>(std::marker::PhantomData<T>);

macro_rules! forward_scalar {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method<E: serde::de::Error>(self, value: $ty) -> Result<Self::Value, E> {
            T::deserialize(serde::de::IntoDeserializer::<E>::into_deserializer(value)).map(Answer::Ok)
        }
    )*};
}

impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for AnswerVisitor<T> {
    type Value = Answer<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an NVML answer: a value, null (not supported) or {error: text}")
    }

    forward_scalar!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_f64: f64, visit_string: String);

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Self::Value, E> {
        self.visit_string(value.to_string())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Answer::NotSupported)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Answer::NotSupported)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Answer::deserialize(deserializer)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        T::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(Answer::Ok)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let Some(first) = map.next_key::<String>()? else {
            return T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Answer::Ok);
        };
        if first == "error" {
            let error: String = map.next_value()?;
            while map.next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?.is_some() {}
            return Ok(Answer::Error(error));
        }
        let rest = FirstKeyThen { first: Some(first), rest: map };
        T::deserialize(serde::de::value::MapAccessDeserializer::new(rest)).map(Answer::Ok)
    }
}

/// A map whose first key was already read (to tell `{error: ..}` from a value).
struct FirstKeyThen<A> {
    first: Option<String>,
    rest: A,
}

impl<'de, A: serde::de::MapAccess<'de>> serde::de::MapAccess<'de> for FirstKeyThen<A> {
    type Error = A::Error;

    fn next_key_seed<K: serde::de::DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        match self.first.take() {
            Some(key) => seed.deserialize(serde::de::IntoDeserializer::<A::Error>::into_deserializer(key)).map(Some),
            None => self.rest.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: serde::de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.rest.next_value_seed(seed)
    }
}

/// Everything NVML answered on one node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NvmlRecording {
    pub driver_version: Answer<String>,
    pub nvml_version: Answer<String>,
    /// As NVML encodes it: `12040` is CUDA 12.4.
    pub cuda_driver_version: Answer<i32>,
    pub device_count: Answer<u32>,
    /// One entry per index below NVML's device count, reachable or not.
    #[serde(default)]
    pub devices: Vec<NvmlDevice>,
    /// Every ordered pair of reachable GPUs.
    #[serde(default)]
    pub pairs: Vec<NvmlPair>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NvmlDevice {
    pub index: u32,
    /// Why NVML gave no handle for this index (a GPU fallen off the bus, no
    /// permission); nothing else was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreachable: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<Box<DeviceAnswers>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceAnswers {
    pub name: Answer<String>,
    pub uuid: Answer<String>,
    pub serial: Answer<String>,
    /// NVML's own spelling (`00000000:17:00.0`); [`DeviceAnswers::bus_id`] normalises it.
    pub pci_bus_id: Answer<String>,
    pub architecture: Answer<String>,
    /// Absent in recordings made before it was asked.
    #[serde(default)]
    pub vbios_version: Answer<String>,
    /// `9.0`.
    pub compute_capability: Answer<String>,
    pub memory_total_bytes: Answer<u64>,
    pub pcie: PcieAnswers,
    pub numa_node: Answer<u32>,
    /// NVML's ideal CPU affinity, as a CPU list (`0-47,96-143`).
    pub cpu_affinity: Answer<String>,
    pub persistence_mode: Answer<bool>,
    pub mig_mode: Answer<Pending<bool>>,
    pub ecc: EccAnswers,
    pub retired_pages: RetiredPages,
    pub remapped_rows: Answer<RemappedRows>,
    /// `nvmlClocksEventReasons` bit mask (throttle reasons).
    pub clock_event_reasons: Answer<u64>,
    pub power_usage_mw: Answer<u32>,
    pub power_limit_mw: Answer<u32>,
    /// NVSwitch / multi-node NVLink fabric registration (Hopper and later).
    pub fabric: Answer<Fabric>,
    /// Grace-Hopper / Grace-Blackwell chip-to-chip link enabled.
    pub c2c_enabled: Answer<bool>,
    #[serde(default)]
    pub nvlinks: Vec<NvmlLink>,
}

impl DeviceAnswers {
    pub fn bus_id(&self) -> Option<BusId> {
        self.pci_bus_id.ok()?.parse().ok()
    }
}

/// A mode with its pending value (takes effect after a reset).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending<T> {
    pub current: T,
    pub pending: T,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PcieAnswers {
    pub gen_current: Answer<u32>,
    pub gen_max: Answer<u32>,
    pub width_current: Answer<u32>,
    pub width_max: Answer<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EccAnswers {
    pub mode: Answer<Pending<bool>>,
    pub volatile_corrected: Answer<u64>,
    pub volatile_uncorrected: Answer<u64>,
    pub aggregate_corrected: Answer<u64>,
    pub aggregate_uncorrected: Answer<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RetiredPages {
    pub single_bit: Answer<u32>,
    pub double_bit: Answer<u32>,
    pub pending: Answer<bool>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemappedRows {
    pub corrected: u32,
    pub uncorrected: u32,
    pub pending: bool,
    pub failed: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fabric {
    /// `not-supported`, `not-started`, `in-progress`, `completed`.
    pub state: String,
    /// NVML's verdict on the registration (`Success` or an error text).
    pub status: String,
    pub clique_id: u32,
    pub cluster_uuid: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NvmlLink {
    pub link: u32,
    pub active: Answer<bool>,
    pub version: Answer<u32>,
    pub remote_bus_id: Answer<String>,
    /// `gpu`, `switch`, `ibmnpu` (the CPU) or `unknown`.
    pub remote_type: Answer<String>,
    pub capabilities: LinkCapabilities,
    pub errors: LinkErrors,
    /// The link's speed as `nvidia-smi nvlink -s` prints it (GB/s per
    /// direction); only pasted output carries it (NVML gives the version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_gbps: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkCapabilities {
    pub p2p: Answer<bool>,
    pub sysmem: Answer<bool>,
    pub p2p_atomics: Answer<bool>,
    pub sysmem_atomics: Answer<bool>,
    pub sli_bridge: Answer<bool>,
    pub valid: Answer<bool>,
}

impl LinkCapabilities {
    /// The capabilities the link has, by name.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (&self.p2p, "p2p"),
            (&self.sysmem, "sysmem"),
            (&self.p2p_atomics, "p2p-atomics"),
            (&self.sysmem_atomics, "sysmem-atomics"),
            (&self.sli_bridge, "sli"),
            (&self.valid, "valid"),
        ]
        .into_iter()
        .filter(|(answer, _)| answer.ok() == Some(&true))
        .map(|(_, name)| name)
        .collect()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinkErrors {
    pub replay: Answer<u64>,
    pub recovery: Answer<u64>,
    pub crc_flit: Answer<u64>,
    pub crc_data: Answer<u64>,
}

impl LinkErrors {
    /// The sum of the counters that answered.
    pub fn total(&self) -> u64 {
        [&self.replay, &self.recovery, &self.crc_flit, &self.crc_data].iter().filter_map(|a| a.ok()).sum()
    }
}

/// NVML's answers about GPU `a` and GPU `b` (device indices).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NvmlPair {
    pub a: u32,
    pub b: u32,
    /// `internal`, `single`, `multiple`, `hostbridge`, `node`, `system`.
    pub common_ancestor: Answer<String>,
    pub p2p: P2pAnswers,
}

/// `nvmlDeviceGetP2PStatus` per capability: `ok`, `chipset-not-supported`,
/// `gpu-not-supported`, `topology-not-supported`, `disabled-by-regkey`,
/// `not-supported`, `unknown`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct P2pAnswers {
    pub read: Answer<String>,
    pub write: Answer<String>,
    pub atomics: Answer<String>,
    pub nvlink: Answer<String>,
    pub prop: Answer<String>,
}

/// nvidia-smi's words for NVML's common-ancestor levels.
pub fn ancestor_in_smi_words(level: &str) -> &'static str {
    match level {
        "internal" => "X",
        "single" => "PIX",
        "multiple" => "PXB",
        "hostbridge" => "PHB",
        "node" => "NODE",
        "system" => "SYS",
        _ => "?",
    }
}

/// Names of the set bits of an `nvmlClocksEventReasons` mask (NVML's
/// `nvmlClocksEventReason*` constants), and whether any is a hardware reason
/// (thermal, power brake, slowdown) rather than idle or an application setting.
pub fn clock_event_reasons(mask: u64) -> (Vec<&'static str>, bool) {
    const REASONS: [(u64, &str, bool); 9] = [
        (0x1, "gpu-idle", false),
        (0x2, "applications-clocks-setting", false),
        (0x4, "sw-power-cap", false),
        (0x8, "hw-slowdown", true),
        (0x10, "sync-boost", false),
        (0x20, "sw-thermal-slowdown", true),
        (0x40, "hw-thermal-slowdown", true),
        (0x80, "hw-power-brake-slowdown", true),
        (0x100, "display-clock-setting", false),
    ];
    let names = REASONS.iter().filter(|(bit, ..)| mask & bit != 0).map(|(_, name, _)| *name).collect();
    let hardware = REASONS.iter().any(|(bit, _, hw)| *hw && mask & bit != 0);
    (names, hardware)
}

impl NvmlRecording {
    /// The reachable devices with their answers.
    pub fn answered(&self) -> impl Iterator<Item = (u32, &DeviceAnswers)> {
        self.devices.iter().filter_map(|d| Some((d.index, d.answers.as_deref()?)))
    }

    pub fn pair(&self, a: u32, b: u32) -> Option<&NvmlPair> {
        self.pairs.iter().find(|p| p.a == a && p.b == b)
    }

    /// `12.4` from NVML's `12040`.
    pub fn cuda_version(&self) -> Answer<String> {
        self.cuda_driver_version.map(|v| format!("{}.{}", v / 1000, (v % 1000) / 10))
    }

    /// Puts what NVML knows into the topology sysfs built: GPU index, name and
    /// compute capability; NVLink bundles and NVSwitch nodes (sysfs cannot see
    /// NVLink). Returns notices for GPUs NVML lists that sysfs did not find.
    pub fn apply(&self, topology: &mut Topology) -> Vec<String> {
        let mut notices = Vec::new();
        let gpu_buses: BTreeMap<BusId, u32> =
            self.answered().filter_map(|(index, d)| Some((d.bus_id()?, index))).collect();
        for (index, device) in self.answered() {
            let Some(bus_id) = device.bus_id() else { continue };
            let position = match topology.gpus.iter().position(|g| g.bus_id == bus_id) {
                Some(i) => i,
                None => {
                    if topology.pci(bus_id).is_none() && !topology.pci_devices.is_empty() {
                        notices.push(format!("NVML lists GPU {index} at {bus_id}, which sysfs does not show"));
                    }
                    topology.gpus.push(Gpu { bus_id, ..Gpu::default() });
                    topology.gpus.len() - 1
                }
            };
            let gpu = &mut topology.gpus[position];
            gpu.index = Some(index);
            if let Some(name) = device.name.ok() {
                gpu.name = Some(name.clone());
            }
            if let Some(sm) = device.compute_capability.ok().and_then(|cc| compute_capability_as_sm(cc)) {
                gpu.sm = Some(sm);
            }
        }
        for device in &self.devices {
            if let Some(reason) = &device.unreachable {
                notices
                    .push(format!("GPU {}: NVML cannot reach it ({reason}); the other GPUs were probed", device.index));
            }
        }
        topology.gpus.sort_by_key(|g| (g.index.is_none(), g.index, g.bus_id));

        let mut bundles: BTreeMap<(BusId, NvLinkRemote), u32> = BTreeMap::new();
        for (_, device) in self.answered() {
            let Some(gpu) = device.bus_id() else { continue };
            for link in device.nvlinks.iter().filter(|l| l.active.ok() == Some(&true)) {
                let remote_bus = link.remote_bus_id.ok().and_then(|b| b.parse::<BusId>().ok());
                let remote = match (link.remote_type.ok().map(String::as_str), remote_bus) {
                    (Some("ibmnpu"), _) => NvLinkRemote::Cpu,
                    (Some("gpu"), Some(bus)) => NvLinkRemote::Gpu(bus),
                    (Some("switch"), Some(bus)) => NvLinkRemote::NvSwitch(bus),
                    // The type unanswered: a bus ID that is one of the GPUs is a GPU;
                    // otherwise the far end can only be a switch.
                    (_, Some(bus)) if gpu_buses.contains_key(&bus) => NvLinkRemote::Gpu(bus),
                    (_, Some(bus)) => NvLinkRemote::NvSwitch(bus),
                    (_, None) => continue,
                };
                *bundles.entry((gpu, remote)).or_default() += 1;
            }
        }
        if !bundles.is_empty() || self.answered().any(|(_, d)| !d.nvlinks.is_empty()) {
            topology.nvlinks.clear();
        }
        for ((gpu, remote), links) in bundles {
            if let NvLinkRemote::NvSwitch(bus) = remote
                && !topology.nvswitches.iter().any(|s| s.bus_id == bus)
            {
                let visible = topology.pci(bus).is_some();
                topology.nvswitches.push(NvSwitch { bus_id: bus, visible });
            }
            topology.nvlinks.push(NvLinkBundle { gpu, remote, links });
        }
        topology.nvswitches.sort_by_key(|s| s.bus_id);
        notices
    }
}

/// `9.0` → 90, NCCL's `sm=` form.
fn compute_capability_as_sm(text: &str) -> Option<u32> {
    let (major, minor) = text.split_once('.')?;
    Some(major.parse::<u32>().ok()? * 10 + minor.parse::<u32>().ok()?)
}

/// A CPU list from NVML's affinity words (bit `i` of word `w` is CPU `64·w + i`).
pub fn cpu_list_from_words(words: &[u64]) -> String {
    let cpus = words
        .iter()
        .enumerate()
        .flat_map(|(w, word)| (0..64u32).filter(move |bit| word >> bit & 1 == 1).map(move |bit| w as u32 * 64 + bit))
        .collect();
    CpuSet::new(cpus).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_back_from_yaml() {
        let answers: Vec<Answer<u32>> = serde_yaml::from_str("- 5\n- null\n- {error: GPU is lost}\n- 7\n").unwrap();
        assert_eq!(answers, [Answer::Ok(5), Answer::NotSupported, Answer::Error("GPU is lost".into()), Answer::Ok(7)]);
        let json = serde_json::to_string(&answers).unwrap();
        assert_eq!(json, r#"[5,null,{"error":"GPU is lost"},7]"#);
        assert_eq!(serde_yaml::from_str::<Vec<Answer<u32>>>(&json).unwrap(), answers);
        let rows: Answer<RemappedRows> = serde_yaml::from_str("{error: x}").unwrap();
        assert_eq!(rows, Answer::Error("x".into()));
        assert_eq!(
            answers.iter().map(|a| a.show(u32::to_string)).collect::<Vec<_>>(),
            ["5", "n/a", "error (GPU is lost)", "7"]
        );
    }

    #[test]
    fn clock_reasons_and_affinity() {
        assert_eq!(clock_event_reasons(0x1), (vec!["gpu-idle"], false));
        assert_eq!(clock_event_reasons(0x44), (vec!["sw-power-cap", "hw-thermal-slowdown"], true));
        assert_eq!(cpu_list_from_words(&[0xffff_ffff_ffff, 0]), "0-47");
        assert_eq!(cpu_list_from_words(&[0, 0xf]), "64-67");
        assert_eq!(compute_capability_as_sm("9.0"), Some(90));
    }
}
