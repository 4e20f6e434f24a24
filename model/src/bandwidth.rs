//! Bandwidth a link should carry, per direction, from documented per-generation
//! figures. Internally bytes per second; printed as GB/s (10^9).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Bytes per second, one direction.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Bandwidth(pub f64);

impl Bandwidth {
    pub fn from_gbps(gigabytes_per_second: f64) -> Bandwidth {
        Bandwidth(gigabytes_per_second * 1e9)
    }

    /// GB/s (10^9 bytes per second).
    pub fn gbps(self) -> f64 {
        self.0 / 1e9
    }

    pub fn min(self, other: Bandwidth) -> Bandwidth {
        if other.0 < self.0 { other } else { self }
    }
}

impl fmt::Display for Bandwidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gbps = self.gbps();
        if gbps >= 100.0 { write!(f, "{gbps:.0} GB/s") } else { write!(f, "{gbps:.1} GB/s") }
    }
}

/// Raw PCIe data rate per lane, one direction, after line encoding.
///
/// Source: PCI-SIG base specifications. Gen1/2 use 8b/10b (2.5 and 5 GT/s x 0.8),
/// Gen3-5 use 128b/130b (8, 16, 32 GT/s), Gen6 uses PAM4 with FLIT mode (64 GT/s,
/// 242 payload bytes per 256-byte FLIT). Packet overheads are not included, so a
/// DMA engine reaches roughly 80-90% of these figures.
pub fn pcie_lane_bandwidth(generation: u8) -> Option<Bandwidth> {
    let bytes_per_second = match generation {
        1 => 2.5e9 * 0.8 / 8.0,
        2 => 5.0e9 * 0.8 / 8.0,
        3 => 8.0e9 * 128.0 / 130.0 / 8.0,
        4 => 16.0e9 * 128.0 / 130.0 / 8.0,
        5 => 32.0e9 * 128.0 / 130.0 / 8.0,
        6 => 64.0e9 * 242.0 / 256.0 / 8.0,
        _ => return None,
    };
    Some(Bandwidth(bytes_per_second))
}

/// PCIe generation for a transfer rate in GT/s.
pub fn pcie_generation_for_rate(gigatransfers: f64) -> Option<u8> {
    const RATES: [(f64, u8); 6] = [(2.5, 1), (5.0, 2), (8.0, 3), (16.0, 4), (32.0, 5), (64.0, 6)];
    RATES.iter().find(|(rate, _)| (rate - gigatransfers).abs() < 0.01).map(|(_, generation)| *generation)
}

/// Transfer rate in GT/s of a PCIe generation.
pub fn pcie_rate_for_generation(generation: u8) -> Option<f64> {
    match generation {
        1 => Some(2.5),
        2 => Some(5.0),
        3 => Some(8.0),
        4 => Some(16.0),
        5 => Some(32.0),
        6 => Some(64.0),
        _ => None,
    }
}

/// NVLink generation used by GPUs of a compute capability (x10, as NCCL's `sm=`).
pub fn nvlink_version_for_sm(sm: u32) -> Option<u8> {
    match sm {
        60 => Some(1),
        70 => Some(2),
        80 | 86 => Some(3),
        90 => Some(4),
        100 | 103 => Some(5),
        _ => None,
    }
}

/// Signalling bandwidth of one NVLink, one direction, for a GPU of compute
/// capability `sm` (x10).
///
/// Source: NVIDIA's P100/V100/A100/H100/B200 product briefs (per-GPU totals of
/// 160/300/600/900/1800 GB/s bidirectional over 4/6/12/18/18 links), i.e. 20, 25,
/// 25, 25 and 50 GB/s per link per direction; GA102 bridges (RTX 3090 / A6000,
/// sm 86) carry 112.5 GB/s bidirectional over 4 links = 14.06 GB/s per link.
/// NCCL's own model (`SM80_NVLINK_BW` = 20.0, `SM90_NVLINK_BW` = 20.6, ...) is about
/// 80% of these: effective rather than signalling rates.
pub fn nvlink_per_link_bandwidth(sm: u32) -> Option<Bandwidth> {
    let gbps = match sm {
        60 => 20.0,
        70 | 80 | 90 => 25.0,
        86 => 112.5 / 2.0 / 4.0,
        100 | 103 => 50.0,
        _ => return None,
    };
    Some(Bandwidth::from_gbps(gbps))
}

/// Bandwidth NCCL assumes for the link between two CPU sockets, per direction.
///
/// Source: NCCL `src/graph/topo.h` (v2.26+): `ERP_QPI_BW` 40 (Intel model >= 0xCF,
/// Emerald Rapids), `SRP_QPI_BW` 22 (>= 0x8F, Sapphire Rapids), `SKL_QPI_BW` 10
/// (>= 0x55, Skylake), `BDW_QPI_BW` 6 (older Intel), `P9_BW` 32, `ARM_BW` 6. AMD:
/// NCCL's dev branch (commit 2f1c174c, from NVIDIA/nccl PR 2036, 2026) replaced
/// the flat `AMD_BW` 16 by one per generation, from the CPUID family: Zen 1/2
/// (family 0x17) 16, Zen 3/4 (0x19) 24, Zen 5 (0x1A) 32, the last validated by
/// cross-socket GPU peer copies on dual EPYC 9575F at 32.18 GB/s. Older NCCL
/// wrote AMD families as 0xF + (extended family << 4): 143, 175, 191.
/// These are NCCL's effective figures, not link specs.
pub fn inter_socket_bandwidth(
    vendor: Option<&str>,
    arch: Option<&str>,
    family: Option<u32>,
    model: Option<u32>,
) -> Option<Bandwidth> {
    let gbps = match (vendor, arch) {
        (Some("GenuineIntel"), _) => match model? {
            m if m >= 0xCF => 40.0,
            m if m >= 0x8F => 22.0,
            m if m >= 0x55 => 10.0,
            _ => 6.0,
        },
        (Some("AuthenticAMD"), _) => match family.map(cpuid_family) {
            Some(f) if f >= 0x1A => 32.0,
            Some(0x19) => 24.0,
            _ => 16.0,
        },
        (_, Some("ppc64") | Some("ppc64le")) => 32.0,
        (_, Some("arm64") | Some("aarch64")) => 6.0,
        _ => return None,
    };
    Some(Bandwidth::from_gbps(gbps))
}

/// The CPUID family, from NCCL's XML `familyid` as either NCCL wrote it:
/// the family proper (0x19), or, before the fix, 0xF + (extended family << 4)
/// (175 for 0x19).
fn cpuid_family(written: u32) -> u32 {
    match written {
        f if f > 0xF && (f - 0xF) % 16 == 0 && f >= 0x8F => 0xF + ((f - 0xF) >> 4),
        f => f,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inter_socket_bandwidth_follows_the_cpu_generation() {
        let gbps = |vendor, family, model| inter_socket_bandwidth(Some(vendor), None, family, model).map(|b| b.gbps());
        // AMD by CPUID family, in both ways NCCL has written it.
        assert_eq!(gbps("AuthenticAMD", Some(0x17), None), Some(16.0));
        assert_eq!(gbps("AuthenticAMD", Some(143), None), Some(16.0));
        assert_eq!(gbps("AuthenticAMD", Some(0x19), None), Some(24.0));
        assert_eq!(gbps("AuthenticAMD", Some(175), None), Some(24.0));
        assert_eq!(gbps("AuthenticAMD", Some(0x1A), None), Some(32.0));
        assert_eq!(gbps("AuthenticAMD", Some(191), None), Some(32.0));
        assert_eq!(gbps("AuthenticAMD", None, None), Some(16.0));
        // Intel by model.
        assert_eq!(gbps("GenuineIntel", Some(6), Some(0x55)), Some(10.0));
        assert_eq!(gbps("GenuineIntel", Some(6), Some(0x8F)), Some(22.0));
        assert_eq!(gbps("GenuineIntel", Some(6), None), None);
    }

    #[test]
    fn x16_figures_match_the_published_ones() {
        let x16 = |g| pcie_lane_bandwidth(g).unwrap().gbps() * 16.0;
        assert!((x16(3) - 15.75).abs() < 0.01);
        assert!((x16(4) - 31.5).abs() < 0.01);
        assert!((x16(5) - 63.0).abs() < 0.1);
        assert!((x16(6) - 121.0).abs() < 0.01);
        assert_eq!(pcie_generation_for_rate(16.0), Some(4));
        assert_eq!(pcie_generation_for_rate(3.0), None);
    }

    #[test]
    fn nvlink_totals_match_product_briefs() {
        let total = |sm, links: f64| nvlink_per_link_bandwidth(sm).unwrap().gbps() * links * 2.0;
        assert_eq!(total(80, 12.0), 600.0);
        assert_eq!(total(90, 18.0), 900.0);
        assert_eq!(total(100, 18.0), 1800.0);
        assert_eq!(nvlink_version_for_sm(89), None);
    }
}
