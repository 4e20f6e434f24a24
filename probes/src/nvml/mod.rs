//! The NVML probe: GPUs, NVLinks, P2P status and health as the driver reports
//! them, recorded raw into a [`NvmlRecording`] so snapshots replay without a GPU.
//!
//! `nvml-wrapper` loads `libnvidia-ml.so.1` at run time: on a machine with no
//! NVIDIA driver the probe says so once and the sysfs view goes on.

mod raw;
mod record;

use std::ffi::OsStr;

use nvml_wrapper::Nvml;
use nvml_wrapper::error::NvmlError;
use topo_model::NvmlRecording;

/// Where the NVML library is looked for when `TOPO_NVML_LIBRARY` does not say.
pub const DEFAULT_LIBRARY: &str = "libnvidia-ml.so.1";

/// Why there is no recording.
#[derive(Debug, thiserror::Error)]
pub enum NvmlUnavailable {
    #[error("no NVIDIA driver: {reason}")]
    NoLibrary { reason: String },
    #[error("NVIDIA driver library found, but the kernel driver is not loaded")]
    DriverNotLoaded,
    #[error("NVML refused access (insufficient permissions)")]
    NoPermission,
    #[error("NVML did not start: {0}")]
    Other(String),
}

/// Records this machine's NVML answers. `library` overrides where
/// `libnvidia-ml.so.1` is loaded from (a path or a name for `dlopen`).
pub fn probe(library: Option<&OsStr>) -> Result<NvmlRecording, NvmlUnavailable> {
    let nvml = match library {
        Some(path) => Nvml::builder().lib_path(path).init(),
        None => Nvml::init(),
    };
    let nvml = nvml.map_err(|e| match e {
        NvmlError::LibloadingError(reason) => NvmlUnavailable::NoLibrary { reason: reason.to_string() },
        NvmlError::DriverNotLoaded => NvmlUnavailable::DriverNotLoaded,
        NvmlError::NoPermission => NvmlUnavailable::NoPermission,
        other => NvmlUnavailable::Other(other.to_string()),
    })?;
    Ok(record::record(&nvml))
}
