//! PCIe link state: generation and width, as capable (`max_*`) and as trained now
//! (`current_*`).

use serde::{Deserialize, Serialize};

use crate::bandwidth::{Bandwidth, pcie_generation_for_rate, pcie_lane_bandwidth, pcie_rate_for_generation};

/// One side of a PCIe link: generation and lane count, each unknown when the
/// source does not say (VMs report width 0, conventional PCI has no speed file).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PcieLinkSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u8>,
}

impl PcieLinkSpec {
    pub fn new(generation: Option<u8>, width: Option<u8>) -> PcieLinkSpec {
        PcieLinkSpec { generation, width }
    }

    pub fn is_known(&self) -> bool {
        self.generation.is_some() || self.width.is_some()
    }

    /// Per-direction data bandwidth, when both generation and width are known.
    pub fn bandwidth(&self) -> Option<Bandwidth> {
        let lane = pcie_lane_bandwidth(self.generation?)?;
        Some(Bandwidth(lane.0 * f64::from(self.width?)))
    }

    /// The slower of two link ends, field by field: a link trains to what both
    /// ends support, which is what NCCL takes too.
    pub fn min(&self, other: &PcieLinkSpec) -> PcieLinkSpec {
        let pick = |a: Option<u8>, b: Option<u8>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        PcieLinkSpec { generation: pick(self.generation, other.generation), width: pick(self.width, other.width) }
    }

    /// `Gen4 x16`, with `?` for unknown parts.
    pub fn label(&self) -> String {
        let generation = self.generation.map_or("Gen?".to_string(), |g| format!("Gen{g}"));
        let width = self.width.map_or("x?".to_string(), |w| format!("x{w}"));
        format!("{generation} {width}")
    }

    /// The kernel's (>= 5.7) spelling of the speed, as NCCL writes `link_speed`.
    pub fn speed_text(&self) -> String {
        match self.generation.and_then(pcie_rate_for_generation) {
            Some(rate) => format!("{rate:.1} GT/s PCIe"),
            None => String::new(),
        }
    }
}

/// A device's link to its upstream port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PcieLink {
    #[serde(default)]
    pub current: PcieLinkSpec,
    #[serde(default)]
    pub max: PcieLinkSpec,
}

impl PcieLink {
    /// Trained below what it is capable of (generation or width). Idle GPUs drop
    /// their link speed to save power, so for a GPU this is a hint to re-check under
    /// load, not proof of a fault.
    pub fn is_downtrained(&self) -> bool {
        let below = |now: Option<u8>, cap: Option<u8>| matches!((now, cap), (Some(n), Some(c)) if n < c);
        below(self.current.generation, self.max.generation) || below(self.current.width, self.max.width)
    }
}

/// Why a link speed string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a PCIe link speed: {0:?}")]
pub struct BadLinkSpeed(pub String);

/// Reads a link speed as sysfs and NCCL write it: `16.0 GT/s PCIe` (kernel >= 5.7),
/// `16 GT/s` (older), `Unknown`, empty, and the malformed `32 GT/s PCIe/s` seen in a
/// published AWS file. `Ok(None)` means the source says it does not know.
pub fn parse_link_speed(text: &str) -> Result<Option<u8>, BadLinkSpeed> {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed.starts_with("Unknown") {
        return Ok(None);
    }
    let bad = || BadLinkSpeed(text.to_string());
    let mut words = trimmed.split_whitespace();
    let rate: f64 = words.next().ok_or_else(bad)?.parse().map_err(|_| bad())?;
    if !words.next().is_some_and(|unit| unit.starts_with("GT/s")) {
        return Err(bad());
    }
    pcie_generation_for_rate(rate).map(Some).ok_or_else(bad)
}

/// Reads a link width: decimal lanes; `0` (VMs) and `255` (unknown, some kernels)
/// mean the source does not know.
pub fn parse_link_width(text: &str) -> Result<Option<u8>, BadLinkSpeed> {
    let trimmed = text.trim().trim_start_matches('x');
    if trimmed.is_empty() {
        return Ok(None);
    }
    match trimmed.parse::<u16>() {
        Ok(0) | Ok(255) => Ok(None),
        Ok(width) if width <= 32 => Ok(Some(width as u8)),
        _ => Err(BadLinkSpeed(text.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_speed_dialect() {
        assert_eq!(parse_link_speed("16.0 GT/s PCIe\n"), Ok(Some(4)));
        assert_eq!(parse_link_speed("16 GT/s"), Ok(Some(4)));
        assert_eq!(parse_link_speed("2.5 GT/s"), Ok(Some(1)));
        assert_eq!(parse_link_speed("64.0 GT/s PCIe"), Ok(Some(6)));
        assert_eq!(parse_link_speed("32 GT/s PCIe/s"), Ok(Some(5)));
        assert_eq!(parse_link_speed("Unknown"), Ok(None));
        assert_eq!(parse_link_speed("Unknown speed"), Ok(None));
        assert_eq!(parse_link_speed(""), Ok(None));
        assert!(parse_link_speed("fast").is_err());
        assert!(parse_link_speed("3 GT/s").is_err());
        assert!(parse_link_speed("16.0 MB/s").is_err());
    }

    #[test]
    fn widths() {
        assert_eq!(parse_link_width("16\n"), Ok(Some(16)));
        assert_eq!(parse_link_width("0"), Ok(None));
        assert_eq!(parse_link_width("x8"), Ok(Some(8)));
        assert!(parse_link_width("-1").is_err());
    }

    #[test]
    fn downtraining_and_bandwidth() {
        let link =
            PcieLink { current: PcieLinkSpec::new(Some(1), Some(16)), max: PcieLinkSpec::new(Some(4), Some(16)) };
        assert!(link.is_downtrained());
        assert!((link.max.bandwidth().unwrap().gbps() - 31.5).abs() < 0.01);
        let unknown =
            PcieLink { current: PcieLinkSpec::new(None, Some(16)), max: PcieLinkSpec::new(Some(4), Some(16)) };
        assert!(!unknown.is_downtrained());
        assert_eq!(
            PcieLinkSpec::new(Some(4), None).min(&PcieLinkSpec::new(Some(5), Some(8))),
            PcieLinkSpec::new(Some(4), Some(8))
        );
        assert_eq!(PcieLinkSpec::new(Some(4), Some(16)).speed_text(), "16.0 GT/s PCIe");
    }
}
