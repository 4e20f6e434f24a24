//! `nvidia-smi nvlink -s` (per-link speed, `Link 0: 26.562 GB/s` or
//! `Link 0: <inactive>`) and `nvidia-smi nvlink -e` (per-link error counters,
//! `Link 0: Replay Errors: 0`), as pasted: one `GPU N: NAME (UUID: GPU-...)`
//! header per GPU, tab- or space-indented link lines, and whatever the paster
//! put between (`=== GPU 1 ===`, `[...]`, `...`), which is skipped.

use std::collections::BTreeMap;

/// Pasted output above this is refused (18 links x 8 counters x 64 GPUs is under 1 MiB).
pub const MAX_NVLINK_BYTES: usize = 16 << 20;
/// GPUs and links per GPU kept: beyond any NVLink generation.
pub const MAX_GPUS: usize = 1024;
pub const MAX_LINKS: u32 = 64;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NvlinkError {
    #[error("{size} bytes is larger than any nvidia-smi nvlink output ({MAX_NVLINK_BYTES} bytes at most)")]
    TooLarge { size: usize },
    #[error("no `GPU N: ... Link N: ...` lines of nvidia-smi nvlink")]
    NoLinks,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct NvlinkGpu {
    pub index: u32,
    pub name: String,
    /// `GPU-...`, how the header names it: the key that joins it to `nvidia-smi -q`.
    pub uuid: Option<String>,
    pub links: BTreeMap<u32, NvlinkState>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct NvlinkState {
    /// `-s`: `Some(true)` with a speed, `Some(false)` for `<inactive>`.
    pub active: Option<bool>,
    pub speed_gbps: Option<f64>,
    /// `-e`: counter name (as printed, `Replay Errors`) -> count.
    pub errors: BTreeMap<String, u64>,
}

/// Whether `text` holds `nvidia-smi nvlink -s` or `-e` output.
pub fn looks_like_nvlink(text: &str) -> bool {
    let mut header = false;
    for line in text.lines().take(4096) {
        if gpu_header(line).is_some() {
            header = true;
        } else if header && link_line(line).is_some() {
            return true;
        }
    }
    false
}

/// `GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)` -> (0, name, uuid).
fn gpu_header(line: &str) -> Option<(u32, &str, Option<&str>)> {
    let rest = line.trim_start().strip_prefix("GPU ")?;
    let (index, rest) = rest.split_once(':')?;
    let index = index.trim().parse().ok()?;
    let rest = rest.trim();
    match rest.rsplit_once("(UUID:") {
        Some((name, uuid)) => Some((index, name.trim(), Some(uuid.trim().trim_end_matches(')').trim()))),
        None => Some((index, rest, None)),
    }
}

/// `Link 3: 26.562 GB/s` -> (3, `26.562 GB/s`).
fn link_line(line: &str) -> Option<(u32, &str)> {
    let rest = line.trim().strip_prefix("Link ")?;
    let (number, value) = rest.split_once(':')?;
    Some((number.trim().parse().ok()?, value.trim()))
}

/// Reads `-s` and/or `-e` output (both may be in one paste).
pub fn parse(text: &str) -> Result<Vec<NvlinkGpu>, NvlinkError> {
    if text.len() > MAX_NVLINK_BYTES {
        return Err(NvlinkError::TooLarge { size: text.len() });
    }
    let mut gpus: Vec<NvlinkGpu> = Vec::new();
    let mut current: Option<usize> = None;
    for line in text.lines() {
        if let Some((index, name, uuid)) = gpu_header(line) {
            // The same GPU again (its `-e` block after its `-s` block) continues its entry.
            current = match gpus.iter().position(|g| g.index == index && g.uuid.as_deref() == uuid) {
                Some(i) => Some(i),
                None if gpus.len() < MAX_GPUS => {
                    let gpu = NvlinkGpu {
                        index,
                        name: name.to_string(),
                        uuid: uuid.map(str::to_string),
                        ..Default::default()
                    };
                    gpus.push(gpu);
                    Some(gpus.len() - 1)
                }
                None => None,
            };
            continue;
        }
        let (Some(at), Some((link, value))) = (current, link_line(line)) else { continue };
        let Some(gpu) = gpus.get_mut(at).filter(|_| link < MAX_LINKS) else { continue };
        let state = gpu.links.entry(link).or_default();
        if value.eq_ignore_ascii_case("<inactive>") {
            state.active = Some(false);
        } else if let Some(speed) = value.strip_suffix("GB/s") {
            if let Ok(gbps) = speed.trim().parse::<f64>()
                && gbps.is_finite()
                && gbps >= 0.0
            {
                state.active = Some(gbps > 0.0);
                state.speed_gbps = Some(gbps);
            }
        } else if let Some((counter, count)) = value.rsplit_once(':')
            && let Ok(count) = count.trim().parse::<u64>()
        {
            state.errors.insert(counter.trim().to_string(), count);
        }
    }
    gpus.retain(|g| !g.links.is_empty());
    if gpus.is_empty() {
        return Err(NvlinkError::NoLinks);
    }
    Ok(gpus)
}

/// Counter names as `nvidia-smi nvlink -e` prints them, and the NVML counter
/// each is (`nvmlNvLinkErrorCounter_t`): drivers before 550 print one `CRC
/// Errors` (the flit CRC counter); later ones split flit and data.
pub const COUNTERS: &[(&str, Counter)] = &[
    ("Replay Errors", Counter::Replay),
    ("Recovery Errors", Counter::Recovery),
    ("CRC Errors", Counter::CrcFlit),
    ("CRC Flit Errors", Counter::CrcFlit),
    ("CRC Data Errors", Counter::CrcData),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    Replay,
    Recovery,
    CrcFlit,
    CrcData,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inactive_speed_and_counters() {
        let text = "GPU 0: NVIDIA B200 (UUID: GPU-x)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n\t Link 0: Replay Errors: 7\n";
        let gpus = parse(text).unwrap();
        assert_eq!(gpus[0].links[&0].speed_gbps, Some(26.562));
        assert_eq!(gpus[0].links[&1].active, Some(false));
        assert_eq!(gpus[0].links[&0].errors["Replay Errors"], 7);
        assert_eq!(parse("GPU 0: x\n Link 99999999999: 1 GB/s"), Err(NvlinkError::NoLinks));
    }
}
