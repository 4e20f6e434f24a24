//! `lspci` text as users paste it: the tree (`lspci -tv`) and the detail
//! (`lspci -vvv`, any mix of `-nn`, `-D`, `-k`), of the whole machine or of a
//! few devices (`-s`). [`to_topology`] rebuilds the same [`Topology`] the sysfs
//! probe builds: the PCI tree with root complexes, bridges and their roles,
//! GPUs, RDMA NICs and NVSwitches, link capability and status, ACS control and
//! NUMA nodes where lspci printed them.
//!
//! lspci names devices; it does not print class codes or ids unless `-nn` was
//! given. Where only a name is known, the tables in [`names`] map it to the
//! vendor id and class, and the detail record (when pasted) wins over them.

mod names;
mod tree;
mod verbose;

use std::collections::{BTreeMap, BTreeSet};

use topo_model::topology::pci_class;
use topo_model::{BridgeRole, BusId, Gpu, Nic, NicKind, NumaNode, NvSwitch, PciDevice, Topology};

pub use tree::{TreeDevice, looks_like_tree, parse_tree};
pub use verbose::{PortType, VerboseDevice, looks_like_verbose, parse_verbose};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LspciError {
    #[error("lspci -t line {line}: {message}")]
    Tree { line: usize, message: String },
    #[error("no PCI devices found in the lspci text")]
    NoDevices,
}

/// What [`to_topology`] built, and what in the input it could not use.
#[derive(Debug, Clone, Default)]
pub struct LspciImport {
    pub topology: Topology,
    pub warnings: Vec<String>,
}

/// One function, merged from the tree and the detail record.
struct Function<'a> {
    bus_id: BusId,
    parent: Option<BusId>,
    host_bridge: Option<String>,
    secondary_bus: Option<u8>,
    description: &'a str,
    detail: Option<&'a VerboseDevice>,
}

/// Builds the topology from a tree and detail records (either may be empty).
/// Without a tree, parents come from the bridges' `Bus: secondary=` lines of
/// the detail, so a full `lspci -vvv` alone is enough.
pub fn to_topology(tree: &[TreeDevice], detail: &[VerboseDevice]) -> LspciImport {
    let mut warnings = Vec::new();
    let by_id: BTreeMap<BusId, &VerboseDevice> = detail.iter().map(|d| (d.bus_id, d)).collect();
    let mut functions: Vec<Function> = if tree.is_empty() {
        functions_from_detail(detail)
    } else {
        tree.iter()
            .map(|t| Function {
                bus_id: t.bus_id,
                parent: t.parent,
                host_bridge: Some(t.host_bridge.clone()),
                secondary_bus: t.secondary_bus,
                description: &t.description,
                detail: by_id.get(&t.bus_id).copied(),
            })
            .collect()
    };
    if !tree.is_empty() {
        let drawn: BTreeSet<BusId> = tree.iter().map(|t| t.bus_id).collect();
        for missing in detail.iter().filter(|d| !drawn.contains(&d.bus_id)) {
            warnings.push(format!("{}: in lspci -v but not in the lspci -t tree; left out", missing.bus_id));
        }
    }
    let host_numa = numa_of_root_complexes(&functions, &mut warnings);

    let mut topology = Topology::default();
    let mut roles: BTreeMap<BusId, BridgeRole> = BTreeMap::new();
    for function in functions.iter_mut() {
        let device = pci_device(function, &host_numa, &roles);
        if let Some(role) = device.bridge {
            roles.insert(device.bus_id, role);
        }
        add_endpoint(&mut topology, &device, function);
        topology.pci_devices.push(device);
    }
    let mut nodes: Vec<i32> = topology.pci_devices.iter().filter_map(|d| d.numa_node).filter(|n| *n >= 0).collect();
    nodes.sort_unstable();
    nodes.dedup();
    topology.numa_nodes = nodes.into_iter().map(|id| NumaNode { id, ..NumaNode::default() }).collect();
    topology.canonicalize();
    if let Some(notice) = unknown_sockets_notice(&topology) {
        warnings.push(notice);
    }
    LspciImport { topology, warnings }
}

/// `lspci -t` does not say which root complexes share a CPU socket: between
/// GPUs and NICs on different root complexes the matrix can then only say
/// NODE, which is SYS where they sit on different sockets. Said once, so the
/// NODE cells are not taken as fact.
fn unknown_sockets_notice(topology: &Topology) -> Option<String> {
    let endpoints = topology.gpus.iter().map(|g| g.bus_id).chain(topology.nics.iter().filter_map(|n| n.bus_id));
    let unplaced: BTreeSet<&str> = endpoints
        .filter(|bus| topology.numa_of(*bus).is_none())
        .filter_map(|bus| topology.host_bridge_of(bus))
        .collect();
    (unplaced.len() > 1).then(|| {
        format!(
            "no NUMA node printed for GPUs/NICs on {} root complexes: NODE between them may be SYS \
             (add `lspci -vvv` output, which prints `NUMA node:`)",
            unplaced.len()
        )
    })
}

/// Parents from bus numbers: a function on bus B hangs under the bridge whose
/// secondary bus is B; functions on no bridge's bus are on a root bus.
fn functions_from_detail(detail: &[VerboseDevice]) -> Vec<Function<'_>> {
    let bridges: BTreeMap<(u32, u8), BusId> =
        detail.iter().filter_map(|d| d.secondary_bus.map(|b| ((d.bus_id.domain, b), d.bus_id))).collect();
    detail
        .iter()
        .map(|d| Function {
            bus_id: d.bus_id,
            parent: bridges.get(&(d.bus_id.domain, d.bus_id.bus)).copied().filter(|p| *p != d.bus_id),
            host_bridge: None,
            secondary_bus: d.secondary_bus,
            description: &d.description,
            detail: Some(d),
        })
        .collect()
}

/// A root complex belongs to one NUMA node: the node lspci -v printed for any
/// device under it. Devices lspci -v did not show take it from there.
fn numa_of_root_complexes(functions: &[Function], warnings: &mut Vec<String>) -> BTreeMap<String, i32> {
    let mut seen: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
    for function in functions {
        if let (Some(host), Some(node)) = (&function.host_bridge, function.detail.and_then(|d| d.numa_node))
            && node >= 0
        {
            seen.entry(host.clone()).or_default().insert(node);
        }
    }
    let mut result = BTreeMap::new();
    for (host, nodes) in seen {
        match nodes.iter().collect::<Vec<_>>().as_slice() {
            [only] => {
                result.insert(host, **only);
            }
            many => warnings.push(format!("{host}: devices under this root complex report NUMA nodes {many:?}")),
        }
    }
    result
}

fn pci_device(
    function: &Function,
    host_numa: &BTreeMap<String, i32>,
    roles: &BTreeMap<BusId, BridgeRole>,
) -> PciDevice {
    let detail = function.detail;
    let description = detail.map_or(function.description, |d| d.description.as_str());
    let named = names::vendor_by_name(description);
    let vendor = detail.and_then(|d| d.vendor).or(named);
    let device_id = detail.and_then(|d| d.device).or_else(|| names::device_id_in_name(description));
    let is_bridge = function.secondary_bus.is_some();
    let class = detail
        .and_then(|d| d.class_code.map(|c| u32::from(c) << 8).or_else(|| names::class_by_name(&d.class_name)))
        .or_else(|| is_bridge.then_some(pci_class::PCI_BRIDGE << 8))
        .or_else(|| names::class_by_description(vendor, device_id, description));
    let parent_role = function.parent.and_then(|p| roles.get(&p).copied());
    let bridge = match (class, detail.and_then(|d| d.port_type)) {
        (Some(c), _) if pci_class::base(c) == pci_class::HOST_BRIDGE => Some(BridgeRole::HostBridge),
        (Some(c), Some(port)) if pci_class::is_pci_bridge(c) => Some(match port {
            PortType::RootPort => BridgeRole::RootPort,
            PortType::Downstream => BridgeRole::SwitchDownstream,
            _ => BridgeRole::SwitchUpstream,
        }),
        // The same rule as sysfs: ports alternate root, upstream, downstream.
        (Some(c), None) if pci_class::is_pci_bridge(c) => Some(match (function.parent, parent_role) {
            (None, _) => BridgeRole::RootPort,
            (Some(_), Some(BridgeRole::SwitchUpstream)) => BridgeRole::SwitchDownstream,
            _ => BridgeRole::SwitchUpstream,
        }),
        _ => None,
    };
    let numa_node = detail
        .and_then(|d| d.numa_node)
        .filter(|n| *n >= 0)
        .or_else(|| function.host_bridge.as_ref().and_then(|h| host_numa.get(h).copied()));
    let mut device = PciDevice::new(function.bus_id);
    device.parent = function.parent;
    device.host_bridge = function.host_bridge.clone();
    device.bridge = bridge;
    device.class = class;
    device.vendor = vendor;
    device.device = device_id;
    device.numa_node = numa_node;
    if let Some(d) = detail {
        device.link.max = d.link_max;
        device.link.current = d.link_current;
        device.acs_redirect = d.acs_redirect;
        device.driver = d.driver.clone();
    }
    device
}

/// GPUs, RDMA NICs and NVSwitches among the functions.
fn add_endpoint(topology: &mut Topology, device: &PciDevice, function: &Function) {
    let description = function.detail.map_or(function.description, |d| d.description.as_str());
    if device.is_nvidia_gpu() {
        topology.gpus.push(Gpu {
            bus_id: device.bus_id,
            name: names::product_name(description)
                .or_else(|| device.device.and_then(topo_model::topology::nvidia_product_name).map(str::to_string)),
            ..Gpu::default()
        });
    } else if device.is_nvswitch() {
        topology.nvswitches.push(NvSwitch { bus_id: device.bus_id, visible: true });
    } else if let Some(class) = device.class
        && (pci_class::is_network(class) || class >> 8 == 0x0c06)
        && names::is_rdma_capable(device.vendor, description)
    {
        let kind = if class >> 8 == 0x0207 || class >> 8 == 0x0c06 { NicKind::Infiniband } else { NicKind::Unknown };
        topology.nics.push(Nic {
            name: device.bus_id.to_string(),
            bus_id: Some(device.bus_id),
            kind,
            ..Nic::default()
        });
    }
}

/// Renames the NICs lspci found (named by bus ID) to the RDMA device names
/// another source gives in the kernel's order. mlx5 devices are numbered in
/// PCI probe order, which is bus order, so the n-th name goes to the n-th NIC;
/// a count that differs is reported, not guessed.
pub fn name_nics_in_bus_order(topology: &mut Topology, names: &[String]) -> Result<(), String> {
    let mut nics: Vec<&mut Nic> = topology.nics.iter_mut().filter(|n| n.bus_id.is_some()).collect();
    if nics.len() != names.len() {
        return Err(format!("lspci shows {} RDMA functions but {} RDMA devices were named", nics.len(), names.len()));
    }
    nics.sort_by_key(|n| n.bus_id);
    let mut ordered: Vec<&String> = names.iter().collect();
    ordered.sort_by_key(|n| topo_model::matrix::natural_key(n));
    for (nic, name) in nics.into_iter().zip(ordered) {
        nic.name = name.clone();
    }
    Ok(())
}

/// Joins RDMA devices read from `ibstat` / `ibv_devinfo` (which print no PCI
/// address) to the NICs lspci found: named in bus order as
/// [`name_nics_in_bus_order`] does, then each takes the device's ports,
/// firmware, node GUID and kind (InfiniBand, or RoCE for an Ethernet link layer).
pub fn attach_rdma_devices(topology: &mut Topology, devices: &[Nic]) -> Result<(), String> {
    let names: Vec<String> = devices.iter().map(|d| d.name.clone()).collect();
    name_nics_in_bus_order(topology, &names)?;
    for nic in topology.nics.iter_mut() {
        if let Some(device) = devices.iter().find(|d| d.name == nic.name) {
            nic.ports = device.ports.clone();
            nic.firmware = device.firmware.clone().or(nic.firmware.take());
            nic.node_guid = device.node_guid.clone().or(nic.node_guid.take());
            if device.kind != NicKind::Unknown {
                nic.kind = device.kind;
            }
        }
    }
    Ok(())
}

/// Reads pasted text holding a tree, detail records, or both (one after the
/// other, as `lspci -tv; lspci -vvv` would print them).
pub fn import(text: &str) -> Result<LspciImport, LspciError> {
    let tree = if looks_like_tree(text) { parse_tree(text)? } else { Vec::new() };
    let detail = parse_verbose(text);
    if tree.is_empty() && detail.is_empty() {
        return Err(LspciError::NoDevices);
    }
    Ok(to_topology(&tree, &detail))
}
