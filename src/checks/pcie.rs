//! PCIe and placement: downtrained links on GPU/NIC paths, NUMA nodes,
//! GPU-to-NIC locality, ACS redirect and IOMMU translation.

use topo_model::{BusId, Evidence, Finding, NicKind, Severity, Snapshot};

use super::endpoints;
use super::facts::{evidence, gpu_label, nvml_gpus, path_bridges};

/// Every PCIe hop from a GPU or NIC up to its root port, below its capability.
/// A GPU running below its top generation is often idle (GPUs drop their link
/// speed to save power); fewer lanes is never an idle state.
pub(super) fn pcie_downtrained(snapshot: &Snapshot) -> Option<Finding> {
    let topology = &snapshot.topology;
    let mut seen = std::collections::BTreeSet::new();
    let (mut lanes, mut speed, mut gpu_speed) = (Vec::new(), Vec::new(), Vec::new());
    for endpoint in endpoints(topology) {
        for device in topology.ancestors(endpoint) {
            if !seen.insert(device.bus_id) || !device.link.is_downtrained() {
                continue;
            }
            let (now, max) = (device.link.current, device.link.max);
            let text = format!("{} now, {} capable", now.label(), max.label());
            let narrower = matches!((now.width, max.width), (Some(n), Some(m)) if n < m);
            let is_gpu = topology.gpu(device.bus_id).is_some();
            let label = if is_gpu { gpu_label(snapshot, device.bus_id) } else { device.bus_id.to_string() };
            let item = (
                evidence(format!("{} {label}", snapshot.source.tree_label()), text),
                (link_bandwidth(now, max), link_bandwidth(max, max)),
            );
            match (narrower, is_gpu) {
                (true, _) => lanes.push(item),
                (false, true) => gpu_speed.push(item),
                (false, false) => speed.push(item),
            }
        }
    }
    // GPUs no PCI tree shows (a pasted `nvidia-smi -q` alone): the link NVML reports.
    for (index, d) in nvml_gpus(snapshot) {
        let Some(bus) = d.bus_id().filter(|b| topology.pci(*b).is_none()) else { continue };
        let small = |a: &topo_model::nvml::Answer<u32>| a.ok().and_then(|v| u8::try_from(*v).ok());
        let link = topo_model::PcieLink {
            current: topo_model::PcieLinkSpec::new(small(&d.pcie.gen_current), small(&d.pcie.width_current)),
            max: topo_model::PcieLinkSpec::new(small(&d.pcie.gen_max), small(&d.pcie.width_max)),
        };
        if !link.is_downtrained() {
            continue;
        }
        let (now, max) = (link.current, link.max);
        let text = format!("{} now, {} capable", now.label(), max.label());
        let item =
            (evidence(format!("NVML GPU{index} {bus}"), text), (link_bandwidth(now, max), link_bandwidth(max, max)));
        match matches!((now.width, max.width), (Some(n), Some(m)) if n < m) {
            true => lanes.push(item),
            false => gpu_speed.push(item),
        }
    }
    let (severity, title, mut items) = match (lanes.is_empty(), speed.is_empty()) {
        (false, _) => (Severity::Error, "PCIe links trained to fewer lanes than they have", lanes),
        (true, false) => (Severity::Warning, "PCIe links below their top speed on the GPU/NIC paths", speed),
        (true, true) if !gpu_speed.is_empty() => (
            Severity::Info,
            "GPU PCIe links below top speed (normal while the GPUs are idle)",
            std::mem::take(&mut gpu_speed),
        ),
        _ => return None,
    };
    items.extend(gpu_speed);
    let (actual, expected) = items[0].1;
    let mut found = Finding::new(
        "pcie-downtrained",
        severity,
        title.into(),
        items.into_iter().map(|(e, _)| e).collect(),
        "A link at a lower generation or width carries proportionally less: Gen4 x8 is a quarter of Gen5 x16. \
         Idle GPUs lower their generation on their own; bridges, NICs and lane counts do not.",
        "Re-check GPU links under load (`nvidia-smi -q -d PCIE` during a copy). For a narrow or slow bridge or \
         NIC: reseat the card or riser, check BIOS slot settings (bifurcation, Gen speed), swap the cable.",
    );
    if let (Some(actual), Some(expected)) = (actual, expected) {
        found.expected = Some(format!("{expected:.1} GB/s per direction on the first link listed"));
        found.actual = Some(format!("{actual:.1} GB/s"));
    }
    Some(found)
}

/// Per-direction GB/s of a link trained to `now`, filling an unknown
/// generation or width from `max` (sysfs often knows only one of them).
pub(super) fn link_bandwidth(now: topo_model::PcieLinkSpec, max: topo_model::PcieLinkSpec) -> Option<f64> {
    let generation = now.generation.or(max.generation)?;
    let width = now.width.or(max.width)?;
    Some(topo_model::bandwidth::pcie_lane_bandwidth(generation)?.gbps() * f64::from(width))
}

pub(super) fn numa_unknown(snapshot: &Snapshot) -> Option<Finding> {
    let topology = &snapshot.topology;
    if topology.numa_nodes.len() < 2 {
        return None;
    }
    let items: Vec<Evidence> = topology
        .gpus
        .iter()
        .map(|g| (gpu_label(snapshot, g.bus_id), g.bus_id))
        .chain(topology.nics.iter().filter_map(|n| Some((n.name.clone(), n.bus_id?))))
        .filter(|(_, bus)| topology.pci(*bus).is_some_and(|d| d.numa_node.is_none()))
        .map(|(label, bus)| evidence(format!("sysfs {bus}/numa_node"), format!("{label}: -1 (unknown)")))
        .collect();
    (!items.is_empty()).then(|| {
        Finding::new(
            "numa-unknown",
            Severity::Warning,
            "Devices with no NUMA node on a multi-socket machine".into(),
            items,
            "With numa_node = -1, NCCL and the CUDA runtime cannot pin proxy threads and buffers next to the device: \
             traffic may cross the inter-socket link.",
            "Enable ACPI SRAT/NUMA reporting in the BIOS (or the VM's NUMA topology); check that the kernel \
             boots with NUMA on.",
        )
    })
}

/// Each GPU's nearest RDMA NIC (by PCIe path) should sit on the GPU's NUMA node.
pub(super) fn gpu_nic_numa(snapshot: &Snapshot) -> Option<Finding> {
    let topology = &snapshot.topology;
    let nics: Vec<(String, BusId)> = topology
        .nics
        .iter()
        .filter(|n| matches!(n.kind, NicKind::Infiniband | NicKind::Roce | NicKind::Efa))
        .filter_map(|n| Some((n.name.clone(), n.bus_id?)))
        .collect();
    if nics.is_empty() || topology.numa_nodes.len() < 2 {
        return None;
    }
    let mut items = Vec::new();
    for gpu in &topology.gpus {
        let Some((name, nic)) = nics.iter().min_by_key(|(_, nic)| topology.pcie_path(gpu.bus_id, *nic).nccl) else {
            continue;
        };
        let (gpu_node, nic_node) = (topology.numa_of(gpu.bus_id), topology.numa_of(*nic));
        if let (Some(a), Some(b)) = (gpu_node, nic_node)
            && a != b
        {
            let text = format!("nearest NIC {name} ({nic}) is on NUMA node {b}, the GPU on {a}");
            items.push(evidence(format!("{} {}", snapshot.source.tree_label(), gpu_label(snapshot, gpu.bus_id)), text));
        }
    }
    (!items.is_empty()).then(|| {
        Finding::new(
            "gpu-nic-numa",
            Severity::Warning,
            "GPUs whose nearest RDMA NIC is on another NUMA node".into(),
            items,
            "GPUDirect RDMA between a GPU and a NIC on different sockets crosses the inter-socket link, which \
             carries less than the NIC's line rate and is shared by everything else.",
            "Move the NIC or GPU to slots on the same socket, or on a fixed machine point each rank at a NIC of its \
             socket (NCCL_IB_HCA per rank, NCCL's topology file).",
        )
    })
}

pub(super) fn acs_redirect(snapshot: &Snapshot) -> Option<Finding> {
    let items: Vec<Evidence> = path_bridges(snapshot)
        .into_iter()
        .filter(|d| d.acs_redirect == Some(true))
        .map(|d| evidence(format!("config space {}", d.bus_id), "ACS P2P redirect enabled".into()))
        .collect();
    (!items.is_empty()).then(|| {
        Finding::new(
            "acs-redirect",
            Severity::Warning,
            "PCIe bridges send peer-to-peer traffic up to the root complex (ACS)".into(),
            items,
            "With ACS redirect on, GPU-to-GPU and GPU-to-NIC transfers under one switch detour through the CPU's \
             root complex: lower bandwidth and, for GPUDirect RDMA, often a hang or errors.",
            "Disable ACS on the switches on bare metal (BIOS option, or `setpci` at boot as NVIDIA's GPUDirect \
             guide shows); in VMs it is needed for passthrough and P2P stays off.",
        )
    })
}

pub(super) fn iommu_translated(snapshot: &Snapshot) -> Option<Finding> {
    let topology = &snapshot.topology;
    let items: Vec<Evidence> = endpoints(topology)
        .filter_map(|bus| topology.pci(bus))
        .filter(|d| d.iommu.as_deref().is_some_and(|t| t.starts_with("DMA")))
        .map(|d| evidence(format!("sysfs {}/iommu_group/type", d.bus_id), d.iommu.clone().unwrap_or_default()))
        .collect();
    (!items.is_empty()).then(|| {
        Finding::new(
            "iommu-translated",
            Severity::Warning,
            "The IOMMU translates DMA for GPUs or NICs".into(),
            items,
            "Translated DMA puts every GPU and NIC transfer through IOMMU page walks; peer-to-peer and GPUDirect \
             RDMA may be blocked or slowed.",
            "Boot with `iommu=pt` (with `intel_iommu=on` or `amd_iommu=on` if it is needed for something else) so \
             devices get passthrough (identity) groups.",
        )
    })
}
