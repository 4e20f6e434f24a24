//! PCI bus addresses in the one canonical form every crate uses: `0000:17:00.0`.
//!
//! Sources spell the same address many ways: sysfs `0000:17:00.0`, NVML
//! `00000000:17:00.0`, lspci `17:00.0`, NCCL's integer form `17000` / `0x17000`,
//! and VMs use 32-bit domains (`0001:00:00.0`, `12345678:00:00.0`). Everything is
//! normalised here so the bus ID can serve as the join key between sources.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A PCI function address (domain, bus, device, function).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BusId {
    pub domain: u32,
    pub bus: u8,
    /// Five bits on real hardware; up to `0xff` so NCCL's placeholder parses.
    pub device: u8,
    pub function: u8,
}

/// Why a bus ID string could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a PCI bus ID: {0:?}")]
pub struct BadBusId(pub String);

impl BusId {
    /// NCCL writes `fffffff:ff:ff.0` as an NVLink target when NVML cannot name the
    /// remote end (NVSwitches hidden from a VM).
    pub const NCCL_INVISIBLE: BusId = BusId { domain: 0x0fff_ffff, bus: 0xff, device: 0xff, function: 0 };

    /// Whether this is a made-up address rather than a real PCI function:
    /// NCCL's invisible-NVSwitch placeholder, or the `ffff:ff:..` fake switches of
    /// hand-written topology files.
    pub fn is_synthetic(&self) -> bool {
        *self == Self::NCCL_INVISIBLE || (self.domain == 0xffff && self.bus == 0xff)
    }

    /// Parses NCCL's integer form (`0x17000`, `17000`): hex digits of
    /// domain, bus (2), device (2) and function (1) run together.
    pub fn from_nccl_int(text: &str) -> Result<BusId, BadBusId> {
        let digits = text.trim().trim_start_matches("0x");
        let value = u64::from_str_radix(digits, 16).map_err(|_| BadBusId(text.to_string()))?;
        let domain = u32::try_from(value >> 20).map_err(|_| BadBusId(text.to_string()))?;
        Ok(BusId {
            domain,
            bus: ((value >> 12) & 0xff) as u8,
            device: ((value >> 4) & 0xff) as u8,
            function: (value & 0xf) as u8,
        })
    }
}

impl FromStr for BusId {
    type Err = BadBusId;

    /// Accepts `DDDD:BB:DD.F` with any domain width up to 32 bits, and `BB:DD.F`
    /// (domain 0). Case-insensitive.
    fn from_str(text: &str) -> Result<BusId, BadBusId> {
        let bad = || BadBusId(text.to_string());
        let trimmed = text.trim();
        let (head, function) = trimmed.rsplit_once('.').ok_or_else(bad)?;
        let mut parts = head.rsplitn(3, ':');
        let device = parts.next().ok_or_else(bad)?;
        let bus = parts.next().ok_or_else(bad)?;
        let domain = parts.next().unwrap_or("0");
        let hex8 = |s: &str| -> Result<u8, BadBusId> {
            if s.is_empty() || s.len() > 2 {
                return Err(bad());
            }
            u8::from_str_radix(s, 16).map_err(|_| bad())
        };
        if domain.is_empty() || domain.len() > 8 || function.len() != 1 {
            return Err(bad());
        }
        let function = hex8(function)?;
        if function > 7 {
            return Err(bad());
        }
        Ok(BusId {
            domain: u32::from_str_radix(domain, 16).map_err(|_| bad())?,
            bus: hex8(bus)?,
            device: hex8(device)?,
            function,
        })
    }
}

impl fmt::Display for BusId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Self::NCCL_INVISIBLE {
            // Keep NCCL's own spelling so an exported file says what NCCL says.
            return f.write_str("fffffff:ff:ff.0");
        }
        write!(f, "{:04x}:{:02x}:{:02x}.{:x}", self.domain, self.bus, self.device, self.function)
    }
}

impl Serialize for BusId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for BusId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_normalises_to_one_form() {
        for text in ["0000:17:00.0", "00000000:17:00.0", "17:00.0", "0000:17:00.0\n", "0000:17:00.0 "] {
            assert_eq!(text.parse::<BusId>().unwrap().to_string(), "0000:17:00.0", "{text:?}");
        }
        assert_eq!(BusId::from_nccl_int("0x17000").unwrap().to_string(), "0000:17:00.0");
        assert_eq!(BusId::from_nccl_int("17000").unwrap().to_string(), "0000:17:00.0");
        assert_eq!(BusId::from_nccl_int("1a1c0").unwrap().to_string(), "0000:1a:1c.0");
    }

    #[test]
    fn wide_domains_and_placeholders() {
        let vm: BusId = "12345678:00:02.1".parse().unwrap();
        assert_eq!(vm.to_string(), "12345678:00:02.1");
        let hidden: BusId = "fffffff:ff:ff.0".parse().unwrap();
        assert_eq!(hidden, BusId::NCCL_INVISIBLE);
        assert!(hidden.is_synthetic());
        assert_eq!(hidden.to_string(), "fffffff:ff:ff.0");
        assert!("ffff:ff:01.0".parse::<BusId>().unwrap().is_synthetic());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for text in
            ["", ".", "0000:17:00", "zz:00.0", "0000:17:00.9", "0000:117:00.0", "123456789:00:00.0", ":.0", "0000::.0"]
        {
            assert!(text.parse::<BusId>().is_err(), "{text:?}");
        }
        assert!(BusId::from_nccl_int("xyz").is_err());
    }
}
