//! The checks, in the order they run. Facts come from sysfs (PCIe links, NUMA,
//! RDMA ports, MTUs, IOMMU, ACS, host limits) and NVML (NVLink state and
//! errors, fabric, memory health, clock events).

use topo_model::{Finding, Snapshot};

use super::{gpu, host, nccl_graph, p2p, pcie};

type Check = fn(&Snapshot) -> Option<Finding>;

pub const CHECKS: &[Check] = &[
    pcie::pcie_downtrained,
    pcie::numa_unknown,
    pcie::gpu_nic_numa,
    gpu::nvlink_inactive,
    gpu::nvlink_errors,
    gpu::fabric_not_ready,
    gpu::gpu_memory_errors,
    gpu::clock_throttle,
    gpu::gpu_lost,
    p2p::p2p_not_supported,
    nccl_graph::channel_nic_not_nearest,
    host::ib_port_down,
    host::ib_port_slow,
    host::mtu_mismatch,
    pcie::acs_redirect,
    pcie::iommu_translated,
    host::gdr_not_ready,
    host::dev_shm_small,
    host::memlock_limited,
];
