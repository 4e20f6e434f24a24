//! The topology graph of one machine: NUMA nodes, the PCI tree, GPUs, NICs,
//! NVSwitches and NVLink bundles. Every source (sysfs, NVML, NCCL XML, snapshots)
//! fills in this one structure; views and analyses read only this.

use serde::{Deserialize, Serialize};

use crate::bus_id::BusId;
use crate::cpuset::CpuSet;
use crate::pcie::PcieLink;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    #[serde(default)]
    pub cpu: CpuInfo,
    #[serde(default)]
    pub numa_nodes: Vec<NumaNode>,
    /// Every PCI function the source reported, parents before children.
    #[serde(default)]
    pub pci_devices: Vec<PciDevice>,
    #[serde(default)]
    pub gpus: Vec<Gpu>,
    /// RDMA-capable network devices (what `nvidia-smi topo -m` lists as NICs and
    /// NCCL's IB/RoCE/EFA transports use), plus PCI NICs a topology file names.
    #[serde(default)]
    pub nics: Vec<Nic>,
    #[serde(default)]
    pub nvswitches: Vec<NvSwitch>,
    #[serde(default)]
    pub nvlinks: Vec<NvLinkBundle>,
    /// Kernel network interfaces (`/sys/class/net`), virtual ones included.
    #[serde(default)]
    pub net_interfaces: Vec<NetInterface>,
    /// Bus ID -> position in `pci_devices`, built on first use; paths look up
    /// devices many times per matrix cell.
    #[serde(skip)]
    pci_index: PciIndex,
}

/// A lookup cache that can never give a wrong answer: a hit is checked against
/// the list, and a stale index (the list grew or changed) is rebuilt.
#[derive(Debug, Default)]
struct PciIndex(std::sync::Mutex<std::collections::HashMap<BusId, usize>>);

impl PciIndex {
    fn lookup<'a>(&self, devices: &'a [PciDevice], bus_id: BusId) -> Option<&'a PciDevice> {
        let Ok(mut index) = self.0.lock() else {
            return devices.iter().find(|d| d.bus_id == bus_id);
        };
        let hit = |index: &std::collections::HashMap<BusId, usize>| {
            index.get(&bus_id).and_then(|i| devices.get(*i)).filter(|d| d.bus_id == bus_id)
        };
        if index.len() == devices.len()
            && let Some(device) = hit(&index)
        {
            return Some(device);
        }
        if index.len() != devices.len() || devices.iter().any(|d| d.bus_id == bus_id) {
            *index = devices.iter().enumerate().map(|(i, d)| (d.bus_id, i)).collect();
        }
        hit(&index)
    }
}

impl Clone for PciIndex {
    fn clone(&self) -> Self {
        PciIndex::default()
    }
}

/// The index is a cache: it never makes two topologies differ.
impl PartialEq for PciIndex {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// `GenuineIntel`, `AuthenticAMD`, ... as in `/proc/cpuinfo` and NCCL's XML.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sockets: Option<u32>,
    /// Logical CPUs present (online or not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_cpus: Option<u32>,
}

impl CpuInfo {
    /// A human name: the kernel's model name when known, else the generation
    /// that NCCL's vendor/family/model numbers stand for.
    pub fn describe(&self) -> Option<String> {
        if let Some(name) = &self.model_name {
            return Some(name.clone());
        }
        let generation = match (self.vendor.as_deref()?, self.family, self.model) {
            ("GenuineIntel", Some(6), Some(85)) => Some("Intel Xeon Skylake/Cascade Lake"),
            ("GenuineIntel", Some(6), Some(106)) => Some("Intel Xeon Ice Lake"),
            ("GenuineIntel", Some(6), Some(143)) => Some("Intel Xeon Sapphire Rapids"),
            ("GenuineIntel", Some(6), Some(207)) => Some("Intel Xeon Emerald Rapids"),
            ("GenuineIntel", Some(6), Some(173)) => Some("Intel Xeon Granite Rapids"),
            // Older NCCL wrote AMD families as 0xF + (extended family << 4).
            ("AuthenticAMD", Some(23 | 143), _) => Some("AMD EPYC Zen/Zen 2"),
            ("AuthenticAMD", Some(25 | 175), _) => Some("AMD EPYC Zen 3/Zen 4"),
            ("AuthenticAMD", Some(26), _) => Some("AMD EPYC Zen 5"),
            _ => None,
        };
        Some(generation.map_or_else(|| self.vendor.clone().unwrap_or_default(), str::to_string))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NumaNode {
    /// The kernel's node number; may be sparse, and `-1` in topology files that
    /// do not know it.
    pub id: i32,
    #[serde(default)]
    pub cpus: CpuSet,
    /// One entry per node of `Topology::numa_nodes`, in that order (sysfs
    /// `distance`); empty when unknown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub distances: Vec<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_kib: Option<u64>,
}

/// What a bridge is in the PCIe hierarchy. Sysfs shows every port; NCCL's XML
/// shows one node per switch (it folds each downstream port into its switch and
/// leaves root ports out), so paths count switches, not ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BridgeRole {
    /// A PCI function of class host bridge (`0x0600xx`) listed as a device (VMs).
    HostBridge,
    RootPort,
    SwitchUpstream,
    /// Same switch as its parent upstream port.
    SwitchDownstream,
    /// A whole switch, as a topology file describes it.
    Switch,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PciDevice {
    pub bus_id: BusId,
    /// Upstream bridge; `None` when the device sits on a host bridge (root complex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<BusId>,
    /// The root complex (`pci0000:00`) the device descends from, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_bridge: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bridge: Option<BridgeRole>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subsystem_vendor: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subsystem_device: Option<u16>,
    /// `None` when unknown or `-1` (no affinity reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_node: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_cpus: Option<CpuSet>,
    #[serde(default)]
    pub link: PcieLink,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// The IOMMU group's mode (`DMA`, `DMA-FQ`: addresses translated;
    /// `identity`: passthrough), when the kernel has an IOMMU on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iommu: Option<String>,
    /// Bridges: whether ACS redirects peer-to-peer requests or completions up to
    /// the root complex. Needs the extended config space, which only root can
    /// read: `None` means not checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acs_redirect: Option<bool>,
}

/// PCI class codes that matter here (24-bit: class, subclass, prog-if).
pub mod pci_class {
    pub const HOST_BRIDGE: u32 = 0x0600;
    pub const PCI_BRIDGE: u32 = 0x0604;
    pub const OTHER_BRIDGE: u32 = 0x0680;

    /// The 16-bit class + subclass part.
    pub fn base(class: u32) -> u32 {
        class >> 8
    }
    pub fn is_display(class: u32) -> bool {
        class >> 16 == 0x03
    }
    pub fn is_network(class: u32) -> bool {
        class >> 16 == 0x02
    }
    pub fn is_pci_bridge(class: u32) -> bool {
        base(class) == PCI_BRIDGE
    }
}

pub const NVIDIA_VENDOR: u16 = 0x10de;

/// Marketing names of the NVIDIA parts in our fixtures (pci.ids), used until
/// NVML supplies the real name.
pub fn nvidia_product_name(device: u16) -> Option<&'static str> {
    Some(match device {
        0x15f9 => "Tesla P100-SXM2-16GB",
        0x1db1 => "Tesla V100-SXM2-16GB",
        0x1db5 => "Tesla V100-SXM2-32GB",
        0x1db8 => "Tesla V100-SXM3-32GB",
        0x20b0 => "A100-SXM4-40GB",
        0x20b2 => "A100-SXM4-80GB",
        0x20b5 => "A100 80GB PCIe",
        0x20f1 => "A100-PCIE-40GB",
        0x20f3 => "A800-SXM4-80GB",
        0x2204 => "GeForce RTX 3090",
        0x2230 => "RTX A6000",
        0x2322 => "H800 PCIe",
        0x2324 => "H800",
        0x2330 => "H100 SXM5 80GB",
        0x2331 => "H100 PCIe",
        0x2335 => "H200",
        0x2342 => "GH200 120GB",
        0x2345 => "GH200 480GB",
        0x2684 => "GeForce RTX 4090",
        0x26b1 => "RTX 6000 Ada Generation",
        0x2901 => "B200",
        _ => return None,
    })
}

impl PciDevice {
    pub fn new(bus_id: BusId) -> PciDevice {
        PciDevice { bus_id, ..PciDevice::default() }
    }

    pub fn is_bridge(&self) -> bool {
        self.bridge.is_some()
    }

    pub fn is_nvidia_gpu(&self) -> bool {
        self.vendor == Some(NVIDIA_VENDOR) && self.class.is_some_and(pci_class::is_display)
    }

    /// NVSwitches appear as NVIDIA functions of class "other bridge" (`0x068000`).
    pub fn is_nvswitch(&self) -> bool {
        self.vendor == Some(NVIDIA_VENDOR) && self.class.is_some_and(|c| pci_class::base(c) == pci_class::OTHER_BRIDGE)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    /// Device index (NVML / CUDA order); `None` when the source does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    pub bus_id: BusId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Compute capability x10 (`90` = 9.0), as NCCL's `sm=`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm: Option<u32>,
    /// NCCL rank recorded in a topology dump (may differ from the index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_rank: Option<u32>,
    /// GPUDirect RDMA support as NCCL recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gdr: Option<bool>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NicKind {
    Infiniband,
    Roce,
    Efa,
    Ethernet,
    #[default]
    Unknown,
}

impl NicKind {
    /// The word for it in reports: `InfiniBand`, `RoCE`, `EFA`, `Ethernet`, `RDMA`.
    pub fn label(self) -> &'static str {
        match self {
            NicKind::Infiniband => "InfiniBand",
            NicKind::Roce => "RoCE",
            NicKind::Efa => "EFA",
            NicKind::Ethernet => "Ethernet",
            NicKind::Unknown => "RDMA",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Nic {
    /// RDMA device name (`mlx5_0`, `rdmap16s27`), or the bus ID for a PCI NIC a
    /// topology file lists without naming it.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_id: Option<BusId>,
    #[serde(default)]
    pub kind: NicKind,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<NicPort>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_guid: Option<String>,
    /// Firmware version (`fw_ver` of the RDMA device, `28.39.1002`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<String>,
    /// Kernel network interfaces on the same PCI function (`ib0`, `ens1f0np0`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub netdevs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gdr: Option<bool>,
    /// NCCL's net device index and connection limit, kept for XML round trips.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_dev: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl_maxconn: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NicPort {
    pub port: u32,
    /// `ACTIVE`, `DOWN`, ... (the word after the number in sysfs `state`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// `LinkUp`, `Polling`, `Disabled`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phys_state: Option<String>,
    /// Signalling rate in Gb/s (bits), as `rate` reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_gbps: Option<f64>,
    /// `InfiniBand` or `Ethernet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_layer: Option<String>,
}

impl NicPort {
    pub fn is_active(&self) -> bool {
        self.state.as_deref() == Some("ACTIVE")
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetInterface {
    pub name: String,
    /// `None` for virtual interfaces (loopback, bridges, veth, tunnels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bus_id: Option<BusId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Mb/s; `None` when down or unknown (sysfs `-1` or a read error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operstate: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NvSwitch {
    pub bus_id: BusId,
    /// False for a switch known only as an NVLink target (VMs hide NVSwitches;
    /// NCCL then writes the placeholder `fffffff:ff:ff.0`).
    pub visible: bool,
}

/// What the far end of an NVLink bundle is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type", content = "bus_id")]
pub enum NvLinkRemote {
    Gpu(BusId),
    NvSwitch(BusId),
    /// NVLink to the CPU (POWER9, Grace C2C).
    Cpu,
}

/// Several NVLinks from one GPU to the same remote device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NvLinkBundle {
    pub gpu: BusId,
    pub remote: NvLinkRemote,
    pub links: u32,
}

impl Topology {
    pub fn pci(&self, bus_id: BusId) -> Option<&PciDevice> {
        self.pci_index.lookup(&self.pci_devices, bus_id)
    }

    pub fn gpu(&self, bus_id: BusId) -> Option<&Gpu> {
        self.gpus.iter().find(|g| g.bus_id == bus_id)
    }

    pub fn numa_node(&self, id: i32) -> Option<&NumaNode> {
        self.numa_nodes.iter().find(|n| n.id == id)
    }

    /// GPUs in display order: by index where every GPU has one, else by bus ID
    /// (the order NVML and `CUDA_DEVICE_ORDER=PCI_BUS_ID` use).
    pub fn gpus_in_order(&self) -> Vec<&Gpu> {
        let mut gpus: Vec<&Gpu> = self.gpus.iter().collect();
        if gpus.iter().all(|g| g.index.is_some()) {
            gpus.sort_by_key(|g| (g.index, g.bus_id));
        } else {
            gpus.sort_by_key(|g| g.bus_id);
        }
        gpus
    }

    /// Upstream chain of a device: itself first, then each parent to the top.
    /// Stops on a cycle or a dangling parent, which a corrupt source could produce.
    pub fn ancestors(&self, bus_id: BusId) -> Vec<&PciDevice> {
        let mut chain: Vec<&PciDevice> = Vec::new();
        let mut next = self.pci(bus_id);
        while let Some(device) = next {
            if chain.iter().any(|d| d.bus_id == device.bus_id) {
                break;
            }
            chain.push(device);
            next = device.parent.and_then(|p| self.pci(p));
        }
        chain
    }

    /// The NUMA node a device belongs to: its own `numa_node`, else the first
    /// ancestor's, else the node whose CPUs match its `local_cpus`, else the only
    /// node of a single-node machine.
    pub fn numa_of(&self, bus_id: BusId) -> Option<i32> {
        let chain = self.ancestors(bus_id);
        if let Some(node) = chain.iter().find_map(|d| d.numa_node) {
            return Some(node);
        }
        let by_cpus = chain.iter().find_map(|d| d.local_cpus.as_ref()).and_then(|cpus| {
            let matching: Vec<&NumaNode> =
                self.numa_nodes.iter().filter(|n| !n.cpus.is_empty() && cpus.is_subset_of(&n.cpus)).collect();
            (matching.len() == 1).then(|| matching[0].id)
        });
        if by_cpus.is_some() {
            return by_cpus;
        }
        match self.numa_nodes.as_slice() {
            [only] => Some(only.id),
            _ => None,
        }
    }

    /// The root complex a device hangs off, when known.
    pub fn host_bridge_of(&self, bus_id: BusId) -> Option<&str> {
        self.ancestors(bus_id).iter().find_map(|d| d.host_bridge.as_deref())
    }

    /// NVLink bundles leaving a GPU.
    pub fn nvlinks_of(&self, gpu: BusId) -> impl Iterator<Item = &NvLinkBundle> {
        self.nvlinks.iter().filter(move |l| l.gpu == gpu)
    }

    /// Total NVLinks of a GPU (`NV18` on an H100 SXM).
    pub fn nvlink_count(&self, gpu: BusId) -> u32 {
        self.nvlinks_of(gpu).map(|l| l.links).sum()
    }

    /// The NIC named `name`.
    pub fn nic(&self, name: &str) -> Option<&Nic> {
        self.nics.iter().find(|n| n.name == name)
    }

    /// PCI devices that matter to GPU communication: GPUs, NICs, NVSwitches,
    /// devices of unknown class that a topology file chose to list, and every
    /// bridge above any of those.
    pub fn relevant_devices(&self) -> std::collections::HashSet<BusId> {
        let mut relevant = std::collections::HashSet::new();
        let wanted = self.pci_devices.iter().filter(|d| {
            self.gpu(d.bus_id).is_some()
                || self.nics.iter().any(|n| n.bus_id == Some(d.bus_id))
                || self.nvswitches.iter().any(|s| s.bus_id == d.bus_id)
                || (d.class.is_none() && d.bridge.is_none())
        });
        for device in wanted {
            relevant.extend(self.ancestors(device.bus_id).iter().map(|a| a.bus_id));
        }
        relevant
    }

    /// Puts every list in one canonical order, so two sources describing the same
    /// machine compare equal and a round trip through any format is exact: the
    /// PCI tree depth first (roots by NUMA node, then bus ID; children by bus
    /// ID), GPUs and NVSwitches by bus ID, NICs by bus ID then name (socket NICs
    /// first), interfaces by name. NVLink bundles keep their per-GPU order.
    pub fn canonicalize(&mut self) {
        let numa_rank = |d: &PciDevice| {
            let numa = d.numa_node.unwrap_or(-1);
            self.numa_nodes.iter().position(|n| n.id == numa).unwrap_or(usize::MAX)
        };
        let known: std::collections::HashSet<BusId> = self.pci_devices.iter().map(|d| d.bus_id).collect();
        let is_root = |d: &PciDevice| d.parent.is_none_or(|p| !known.contains(&p) || p == d.bus_id);
        let mut roots: Vec<&PciDevice> = self.pci_devices.iter().filter(|d| is_root(d)).collect();
        roots.sort_by_key(|d| (numa_rank(d), d.bus_id));
        let mut ordered: Vec<PciDevice> = Vec::with_capacity(self.pci_devices.len());
        let mut placed = std::collections::HashSet::new();
        let mut stack: Vec<&PciDevice> = roots.into_iter().rev().collect();
        while let Some(device) = stack.pop() {
            if !placed.insert(device.bus_id) {
                continue;
            }
            ordered.push(device.clone());
            let mut children: Vec<&PciDevice> = self
                .pci_devices
                .iter()
                .filter(|d| d.parent == Some(device.bus_id) && d.bus_id != device.bus_id)
                .collect();
            children.sort_by_key(|d| std::cmp::Reverse(d.bus_id));
            stack.extend(children);
        }
        // Devices only reachable through a parent cycle (corrupt input) go last.
        let mut rest: Vec<PciDevice> =
            self.pci_devices.iter().filter(|d| !placed.contains(&d.bus_id)).cloned().collect();
        rest.sort_by_key(|d| d.bus_id);
        ordered.extend(rest);
        self.pci_devices = ordered;
        self.gpus.sort_by_key(|g| g.bus_id);
        self.nvswitches.sort_by_key(|s| s.bus_id);
        self.nics.sort_by(|a, b| {
            (a.bus_id, crate::matrix::natural_key(&a.name)).cmp(&(b.bus_id, crate::matrix::natural_key(&b.name)))
        });
        self.nvlinks.sort_by_key(|l| l.gpu);
        self.net_interfaces.sort_by_key(|i| crate::matrix::natural_key(&i.name));
    }

    /// NUMA distance between two nodes, when the source gave the matrix.
    pub fn numa_distance(&self, from: i32, to: i32) -> Option<u32> {
        let column = self.numa_nodes.iter().position(|n| n.id == to)?;
        self.numa_node(from)?.distances.get(column).copied()
    }
}
