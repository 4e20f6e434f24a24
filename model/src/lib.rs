//! `topo-model`: the vocabulary every `topo` crate speaks.
//!
//! A [`Topology`] is the graph of one machine (NUMA nodes, PCI tree, GPUs, NICs,
//! NVSwitches, NVLink bundles); [`Topology::path`] answers how two devices are
//! connected, in nvidia-smi's and NCCL's words, with the bandwidth the path should
//! carry; a [`Snapshot`] is the serialisable record of a node.

pub mod bandwidth;
pub mod bounded;
pub mod bus_id;
pub mod cluster;
pub mod collective;
pub mod cpuset;
pub mod finding;
pub mod flight_recorder;
pub mod inspector;
pub mod matrix;
pub mod measure;
pub mod nccl;
pub mod nccl_graph;
pub mod nvml;
pub mod path;
pub mod pcie;
pub mod ras;
pub mod snapshot;
pub mod topology;
pub mod units;

pub use bandwidth::Bandwidth;
pub use bus_id::BusId;
pub use cpuset::CpuSet;
pub use finding::{Evidence, Finding, Severity};
pub use matrix::{Endpoint, EndpointKind, Matrix};
pub use nvml::NvmlRecording;
pub use path::{Hop, HopKind, NcclClass, Path, SmiClass};
pub use pcie::{PcieLink, PcieLinkSpec};
pub use snapshot::{HostInfo, Snapshot, SnapshotError, Source};
pub use topology::{
    BridgeRole, CpuInfo, Gpu, NetInterface, Nic, NicKind, NicPort, NumaNode, NvLinkBundle, NvLinkRemote, NvSwitch,
    PciDevice, Topology,
};
