//! The expectations file: what a node of this kind must have. Written by hand
//! or by `topo preflight --write-expect` on a known-good node, then checked on
//! every node before it takes work.

use serde::{Deserialize, Serialize};
use topo_model::{Finding, NicKind, Severity, Snapshot};

/// Every field is optional: an absent one is not checked against a number
/// (the node's own consistency is still checked).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<GpuExpectation>,
    /// Active NVLinks on every GPU (H100 SXM: 18; H100 NVL: 12 by design).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvlinks_per_gpu: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvswitches: Option<u32>,
    /// Capability of every GPU's PCIe link, and the width it must train to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_pcie: Option<LinkExpectation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_pcie: Option<LinkExpectation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rdma: Option<RdmaExpectation>,
    /// Lowest driver and CUDA driver versions (`550.54.15`, `12.4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_min: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_min: Option<String>,
    /// Lowest NCCL version (`2.21.5`), as the live probe loads it: checked with
    /// `--probe`, or on a snapshot saved by `topo probe --save`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_min: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev_shm_min_gib: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memlock_unlimited: Option<bool>,
    /// A live figure below this share of what its path should carry fails
    /// `live-bandwidth` (default: the probe's `--threshold`, 0.75).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_threshold: Option<f64>,
    /// Lowest acceptable live figures, GB/s: every GPU's H2D and D2H copy,
    /// every P2P pair one way, and all_reduce's best bus bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_bandwidth: Option<MinBandwidth>,
    /// Finding codes that are not faults on this kind of node (`gpu-nic-numa`
    /// on a one-NIC box; `ib-port-down` for a port left unused by design).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MinBandwidth {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2d_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub d2h_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p2p_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_reduce_busbw_gbps: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuExpectation {
    pub count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkExpectation {
    pub generation: u8,
    pub width: u8,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RdmaExpectation {
    /// RDMA NICs (InfiniBand or RoCE functions).
    pub count: u32,
    /// Per active port, Gb/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
}

#[derive(Debug, thiserror::Error)]
pub enum ExpectationsError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: {message}")]
    Malformed { path: String, message: String },
    #[error("{path}: {field}: {message}")]
    Invalid { path: String, field: &'static str, message: String },
}

/// An expectations file is a few hundred bytes; anything above this is refused.
pub const MAX_EXPECTATIONS_BYTES: u64 = 1024 * 1024;

/// Brackets nested deeper than this are refused before parsing (the parser's
/// time grows with the square of the depth; a real file nests 3 deep).
pub const MAX_NESTING: usize = 64;

impl Expectations {
    pub fn load(path: &std::path::Path) -> Result<Expectations, ExpectationsError> {
        let name = path.display().to_string();
        let malformed = |message: String| ExpectationsError::Malformed { path: name.clone(), message };
        let bytes = crate::input::read_bounded(path, MAX_EXPECTATIONS_BYTES).map_err(|e| match e {
            crate::input::InputError::Io { source, .. } => ExpectationsError::Io { path: name.clone(), source },
            other => malformed(other.to_string()),
        })?;
        let text = String::from_utf8(bytes).map_err(|_| malformed("not UTF-8 text".into()))?;
        if topo_model::snapshot::flow_nesting(&text) > MAX_NESTING {
            return Err(malformed(format!("nested deeper than {MAX_NESTING} levels; refused")));
        }
        let expectations: Expectations = serde_yaml::from_str(&text).map_err(|e| malformed(e.to_string()))?;
        expectations.validate().map_err(|(field, message)| ExpectationsError::Invalid {
            path: name,
            field,
            message,
        })?;
        Ok(expectations)
    }

    /// Every field means what it says: versions are dotted numbers, the
    /// threshold a share in (0, 1], rates and sizes finite and positive. An
    /// invalid one is refused, never read as "no check".
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let versions = [("driver_min", &self.driver_min), ("cuda_min", &self.cuda_min), ("nccl_min", &self.nccl_min)];
        for (field, version) in versions {
            if let Some(v) = version
                && !is_version(v)
            {
                return Err((field, format!("{v:?} is not a version (dotted numbers, such as 550.54.15)")));
            }
        }
        if let Some(t) = self.probe_threshold
            && !(t > 0.0 && t <= 1.0)
        {
            return Err(("probe_threshold", format!("{t} is not a share in (0, 1]")));
        }
        let rates = [
            ("dev_shm_min_gib", self.dev_shm_min_gib),
            ("rdma.rate_gbps", self.rdma.as_ref().and_then(|r| r.rate_gbps)),
            ("min_bandwidth.h2d_gbps", self.min_bandwidth.as_ref().and_then(|m| m.h2d_gbps)),
            ("min_bandwidth.d2h_gbps", self.min_bandwidth.as_ref().and_then(|m| m.d2h_gbps)),
            ("min_bandwidth.p2p_gbps", self.min_bandwidth.as_ref().and_then(|m| m.p2p_gbps)),
            ("min_bandwidth.all_reduce_busbw_gbps", self.min_bandwidth.as_ref().and_then(|m| m.all_reduce_busbw_gbps)),
        ];
        for (field, rate) in rates {
            if let Some(r) = rate
                && !(r.is_finite() && r >= 0.0)
            {
                return Err((field, format!("{r} is not a finite number of at least 0")));
            }
        }
        Ok(())
    }

    /// What a known-good node has, as expectations for its siblings. Findings
    /// it already has at warning or above become allowed exceptions.
    pub fn from_node(snapshot: &Snapshot, findings: &[Finding]) -> Expectations {
        let topology = &snapshot.topology;
        let uniform = |values: Vec<Option<String>>| {
            let first = values.first().cloned().flatten();
            values.iter().all(|v| *v == first).then_some(first).flatten()
        };
        let gpus = (!topology.gpus.is_empty()).then(|| GpuExpectation {
            count: topology.gpus.len() as u32,
            model: uniform(topology.gpus.iter().map(|g| g.name.clone()).collect()),
        });
        let nvml = snapshot.nvml.as_ref();
        let nvlinks_per_gpu = nvml.and_then(|n| {
            let counts: Vec<u32> = n
                .answered()
                .map(|(_, d)| d.nvlinks.iter().filter(|l| l.active.ok() == Some(&true)).count() as u32)
                .collect();
            counts.iter().min().copied().filter(|min| *min > 0)
        });
        let link_of = |buses: Vec<topo_model::BusId>| {
            let links: Vec<LinkExpectation> = buses
                .iter()
                .filter_map(|b| topology.pci(*b))
                .filter_map(|d| Some(LinkExpectation { generation: d.link.max.generation?, width: d.link.max.width? }))
                .collect();
            links.first().copied().filter(|first| links.iter().all(|l| l == first))
        };
        let rdma_nics: Vec<&topo_model::Nic> =
            topology.nics.iter().filter(|n| matches!(n.kind, NicKind::Infiniband | NicKind::Roce)).collect();
        let rates: Vec<f64> =
            rdma_nics.iter().flat_map(|n| &n.ports).filter(|p| p.is_active()).filter_map(|p| p.rate_gbps).collect();
        let mtus: Vec<u32> = rdma_nics
            .iter()
            .flat_map(|n| &n.netdevs)
            .filter_map(|d| topology.net_interfaces.iter().find(|i| &i.name == d)?.mtu)
            .collect();
        let mut allow: Vec<String> =
            findings.iter().filter(|f| f.severity >= Severity::Warning).map(|f| f.code.clone()).collect();
        allow.dedup();
        Expectations {
            gpus,
            nvlinks_per_gpu,
            nvswitches: (!topology.nvswitches.is_empty()).then_some(topology.nvswitches.len() as u32),
            gpu_pcie: link_of(topology.gpus.iter().map(|g| g.bus_id).collect()),
            nic_pcie: link_of(rdma_nics.iter().filter_map(|n| n.bus_id).collect()),
            rdma: (!rdma_nics.is_empty()).then(|| RdmaExpectation {
                count: rdma_nics.len() as u32,
                rate_gbps: rates.iter().copied().reduce(f64::min),
                mtu: mtus.iter().copied().min(),
            }),
            driver_min: nvml.and_then(|n| n.driver_version.ok().cloned()),
            cuda_min: nvml.and_then(|n| n.cuda_version().ok().cloned()),
            // What the node has (to a tenth of a GiB, below), capped at 16 GiB:
            // siblings need enough, not the same RAM.
            dev_shm_min_gib: snapshot
                .host
                .dev_shm_bytes
                .map(|b| ((b as f64 / (1u64 << 30) as f64 * 10.0).floor() / 10.0).min(16.0)),
            memlock_unlimited: snapshot.host.memlock.as_deref().map(|m| m == "unlimited"),
            nccl_min: snapshot.probe.as_ref().and_then(|p| p.nccl_version.clone()),
            probe_threshold: None,
            min_bandwidth: None,
            allow,
        }
    }
}

/// Whether `text` is a version as the checks compare them: dotted numbers
/// (`550.54.15`, `12.4`, `2.21.5`), an NCCL suffix such as `+cuda12.4` allowed.
pub fn is_version(text: &str) -> bool {
    let numbers = text.split('+').next().unwrap_or_default();
    !numbers.is_empty() && numbers.split('.').all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Compares dotted versions numerically (`550.54.15` < `550.120.1`).
pub fn version_at_least(found: &str, minimum: &str) -> bool {
    let parts = |v: &str| v.split('.').map(|p| p.parse::<u64>().unwrap_or(0)).collect::<Vec<_>>();
    parts(found) >= parts(minimum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numerically() {
        assert!(version_at_least("550.120.1", "550.54.15"));
        assert!(!version_at_least("535.183.01", "550.54.15"));
        assert!(version_at_least("12.4", "12.4") && !version_at_least("12.2", "12.4"));
    }

    #[test]
    fn versions_are_dotted_numbers() {
        assert!(is_version("550.54.15") && is_version("12.4") && is_version("2.21.5+cuda12.4"));
        assert!(!is_version("banana") && !is_version("") && !is_version("v13") && !is_version("12..4"));
    }
}
