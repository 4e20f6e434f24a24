//! The NVML calls `nvml-wrapper` does not wrap, or wraps wrongly, made through
//! its `nvml-wrapper-sys` bindings. This is the only `unsafe` code in `topo`'s
//! probes; each call passes a device handle the wrapper gave us and pointers to
//! locals that live across the call.
//!
//! - `nvmlDeviceGetNvLinkRemoteDeviceType`: the wrapper's `remote_device_type`
//!   always returns `Unknown` (it reads back a temporary it never passed).
//! - `nvmlDeviceGetGpuFabricInfoV` / `nvmlDeviceGetGpuFabricInfo`, `nvmlDeviceGetRemappedRows`,
//!   `nvmlDeviceGetC2cModeInfoV`, `nvmlDeviceGetCurrentClocksEventReasons`: not wrapped.

use std::mem::size_of;

use nvml_wrapper::error::{NvmlError, nvml_sym, nvml_try};
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings as sys;
use topo_model::nvml::{Fabric, RemappedRows};

/// `NVML_STRUCT_VERSION(name, version)` from `nvml.h`.
fn struct_version<T>(version: u32) -> u32 {
    size_of::<T>() as u32 | (version << 24)
}

/// `gpu`, `switch`, `ibmnpu` or `unknown`.
pub fn nvlink_remote_type(nvml: &Nvml, device: &Device, link: u32) -> Result<String, NvmlError> {
    let call = nvml_sym(nvml.lib().nvmlDeviceGetNvLinkRemoteDeviceType.as_ref())?;
    let mut kind: sys::nvmlIntNvLinkDeviceType_t = sys::nvmlIntNvLinkDeviceType_enum_NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
    // SAFETY: a live handle from this `Nvml`, and `kind` outlives the call.
    nvml_try(unsafe { call(device.handle(), link, &mut kind) })?;
    Ok(match kind {
        sys::nvmlIntNvLinkDeviceType_enum_NVML_NVLINK_DEVICE_TYPE_GPU => "gpu",
        sys::nvmlIntNvLinkDeviceType_enum_NVML_NVLINK_DEVICE_TYPE_IBMNPU => "ibmnpu",
        sys::nvmlIntNvLinkDeviceType_enum_NVML_NVLINK_DEVICE_TYPE_SWITCH => "switch",
        _ => "unknown",
    }
    .to_string())
}

pub fn remapped_rows(nvml: &Nvml, device: &Device) -> Result<RemappedRows, NvmlError> {
    let call = nvml_sym(nvml.lib().nvmlDeviceGetRemappedRows.as_ref())?;
    let (mut corrected, mut uncorrected, mut pending, mut failed) = (0, 0, 0, 0);
    // SAFETY: as above; four `c_uint` out-parameters.
    nvml_try(unsafe { call(device.handle(), &mut corrected, &mut uncorrected, &mut pending, &mut failed) })?;
    Ok(RemappedRows { corrected, uncorrected, pending: pending != 0, failed: failed != 0 })
}

/// The newer name of the throttle reasons; falls back to the older call on
/// drivers that lack it.
pub fn clock_event_reasons(nvml: &Nvml, device: &Device) -> Result<u64, NvmlError> {
    let lib = nvml.lib();
    let call = match nvml_sym(lib.nvmlDeviceGetCurrentClocksEventReasons.as_ref()) {
        Ok(call) => call,
        Err(_) => nvml_sym(lib.nvmlDeviceGetCurrentClocksThrottleReasons.as_ref())?,
    };
    let mut reasons = 0;
    // SAFETY: as above; one `c_ulonglong` out-parameter.
    nvml_try(unsafe { call(device.handle(), &mut reasons) })?;
    Ok(reasons)
}

pub fn c2c_enabled(nvml: &Nvml, device: &Device) -> Result<bool, NvmlError> {
    let call = nvml_sym(nvml.lib().nvmlDeviceGetC2cModeInfoV.as_ref())?;
    let mut info = sys::nvmlC2cModeInfo_v1_t { isC2cEnabled: 0 };
    // SAFETY: as above; the struct has no version field to set.
    nvml_try(unsafe { call(device.handle(), &mut info) })?;
    Ok(info.isC2cEnabled != 0)
}

/// Fabric registration: `nvmlDeviceGetGpuFabricInfoV` at struct version 3, then
/// 2 (the layouts share their prefix), then the older unversioned call.
pub fn fabric(nvml: &Nvml, device: &Device) -> Result<Fabric, NvmlError> {
    let lib = nvml.lib();
    if let Ok(call) = nvml_sym(lib.nvmlDeviceGetGpuFabricInfoV.as_ref()) {
        let layouts =
            [struct_version::<sys::nvmlGpuFabricInfo_v3_t>(3), struct_version::<sys::nvmlGpuFabricInfo_v2_t>(2)];
        let mut code = sys::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
        for version in layouts {
            let mut info = sys::nvmlGpuFabricInfo_v3_t {
                version,
                clusterUuid: [0; 16],
                status: 0,
                cliqueId: 0,
                state: 0,
                healthMask: 0,
                healthSummary: 0,
            };
            // SAFETY: as above; `info` has the larger (v3) layout, so a v2 answer fits.
            code = unsafe { call(device.handle(), &mut info) };
            if code == sys::nvmlReturn_enum_NVML_SUCCESS {
                return Ok(fabric_from(info.state, info.status, info.cliqueId, &info.clusterUuid));
            }
            if code != sys::nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH {
                break;
            }
        }
        return nvml_try(code).map(|()| Fabric::default());
    }
    let call = nvml_sym(lib.nvmlDeviceGetGpuFabricInfo.as_ref())?;
    let mut info = sys::nvmlGpuFabricInfo_t { clusterUuid: [0; 16], status: 0, cliqueId: 0, state: 0 };
    // SAFETY: as above.
    nvml_try(unsafe { call(device.handle(), &mut info) })?;
    Ok(fabric_from(info.state, info.status, info.cliqueId, &info.clusterUuid))
}

fn fabric_from(state: sys::nvmlGpuFabricState_t, status: sys::nvmlReturn_t, clique_id: u32, uuid: &[u8; 16]) -> Fabric {
    let state = match u32::from(state) {
        sys::NVML_GPU_FABRIC_STATE_NOT_SUPPORTED => "not-supported",
        sys::NVML_GPU_FABRIC_STATE_NOT_STARTED => "not-started",
        sys::NVML_GPU_FABRIC_STATE_IN_PROGRESS => "in-progress",
        sys::NVML_GPU_FABRIC_STATE_COMPLETED => "completed",
        _ => "unknown",
    };
    let status = match nvml_try(status) {
        Ok(()) => "Success".to_string(),
        Err(e) => e.to_string(),
    };
    let hex: String = uuid.iter().map(|b| format!("{b:02x}")).collect();
    let cluster_uuid = match hex.as_str() {
        "00000000000000000000000000000000" => String::new(),
        _ => format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..]),
    };
    Fabric { state: state.to_string(), status, clique_id, cluster_uuid }
}
