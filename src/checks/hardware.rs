//! The checks. Facts come from sysfs (PCIe links, NUMA, RDMA ports, MTUs) and
//! NVML (NVLink state and errors, fabric, memory health, clock events).

use std::collections::BTreeMap;

use topo_model::nvml::{DeviceAnswers, clock_event_reasons};
use topo_model::{BusId, Evidence, Finding, NicKind, Severity, Snapshot};

use super::endpoints;

type Check = fn(&Snapshot) -> Option<Finding>;

pub const CHECKS: &[Check] = &[
    pcie_downtrained,
    numa_unknown,
    gpu_nic_numa,
    nvlink_inactive,
    nvlink_errors,
    fabric_not_ready,
    gpu_memory_errors,
    clock_throttle,
    gpu_lost,
    ib_port_down,
    ib_port_slow,
    mtu_mismatch,
    acs_redirect,
    iommu_translated,
    gdr_not_ready,
    dev_shm_small,
    memlock_limited,
];

/// `/dev/shm` below this is reported: Docker's 64 MiB default is the classic case.
pub const MIN_DEV_SHM_BYTES: u64 = 1 << 30;

fn evidence(at: impl Into<String>, text: String) -> Evidence {
    Evidence { at: at.into(), text }
}

fn gpu_label(snapshot: &Snapshot, bus_id: BusId) -> String {
    match snapshot.topology.gpu(bus_id).and_then(|g| g.index) {
        Some(i) => format!("GPU{i} {bus_id}"),
        None => format!("GPU {bus_id}"),
    }
}

/// NVML's answers per GPU index.
fn nvml_gpus(snapshot: &Snapshot) -> Vec<(u32, &DeviceAnswers)> {
    snapshot.nvml.as_ref().map(|n| n.answered().collect()).unwrap_or_default()
}

/// Every PCIe hop from a GPU or NIC up to its root port, below its capability.
/// A GPU running below its top generation is often idle (GPUs drop their link
/// speed to save power); fewer lanes is never an idle state.
fn pcie_downtrained(snapshot: &Snapshot) -> Option<Finding> {
    let topology = &snapshot.topology;
    let mut seen = std::collections::BTreeSet::new();
    let (mut lanes, mut speed, mut gpu_speed) = (Vec::new(), Vec::new(), Vec::new());
    for endpoint in endpoints(topology) {
        for device in topology.ancestors(endpoint) {
            if !seen.insert(device.bus_id) || !device.link.is_downtrained() {
                continue;
            }
            let (now, max) = (device.link.current, device.link.max);
            let text = format!(
                "Gen{} x{} now, Gen{} x{} capable",
                now.generation.map_or("?".into(), |g| g.to_string()),
                now.width.map_or("?".into(), |w| w.to_string()),
                max.generation.map_or("?".into(), |g| g.to_string()),
                max.width.map_or("?".into(), |w| w.to_string())
            );
            let narrower = matches!((now.width, max.width), (Some(n), Some(m)) if n < m);
            let is_gpu = topology.gpu(device.bus_id).is_some();
            let label = if is_gpu { gpu_label(snapshot, device.bus_id) } else { device.bus_id.to_string() };
            let item = (evidence(format!("sysfs {label}"), text), (link_bandwidth(now, max), link_bandwidth(max, max)));
            match (narrower, is_gpu) {
                (true, _) => lanes.push(item),
                (false, true) => gpu_speed.push(item),
                (false, false) => speed.push(item),
            }
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
fn link_bandwidth(now: topo_model::PcieLinkSpec, max: topo_model::PcieLinkSpec) -> Option<f64> {
    let generation = now.generation.or(max.generation)?;
    let width = now.width.or(max.width)?;
    Some(topo_model::bandwidth::pcie_lane_bandwidth(generation)?.gbps() * f64::from(width))
}

fn numa_unknown(snapshot: &Snapshot) -> Option<Finding> {
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
fn gpu_nic_numa(snapshot: &Snapshot) -> Option<Finding> {
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
            items.push(evidence(format!("sysfs {}", gpu_label(snapshot, gpu.bus_id)), text));
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

/// Active NVLinks per GPU, below what other GPUs of the same model have.
/// (A SKU whose design uses fewer links, like H100 NVL's 12 of 18, has all
/// its GPUs at the same count and so is not flagged.)
fn nvlink_inactive(snapshot: &Snapshot) -> Option<Finding> {
    let gpus = nvml_gpus(snapshot);
    let active = |d: &DeviceAnswers| d.nvlinks.iter().filter(|l| l.active.ok() == Some(&true)).count();
    let mut best: BTreeMap<String, usize> = BTreeMap::new();
    for (_, d) in &gpus {
        let model = d.name.ok().cloned().unwrap_or_default();
        let entry = best.entry(model).or_default();
        *entry = (*entry).max(active(d));
    }
    let items: Vec<Evidence> = gpus
        .iter()
        .filter_map(|(index, d)| {
            let expected = best.get(d.name.ok().map_or("", String::as_str)).copied().unwrap_or(0);
            let down: Vec<String> =
                d.nvlinks.iter().filter(|l| l.active.ok() != Some(&true)).map(|l| l.link.to_string()).collect();
            (active(d) < expected).then(|| {
                let text = format!(
                    "{} of {} NVLinks active (others of this model: {expected}); inactive: {}",
                    active(d),
                    d.nvlinks.len(),
                    down.join(" ")
                );
                evidence(format!("NVML GPU{index}"), text)
            })
        })
        .collect();
    let per_link =
        snapshot.topology.gpus.iter().find_map(|g| g.sm).and_then(topo_model::bandwidth::nvlink_per_link_bandwidth);
    let fewest = gpus.iter().map(|(_, d)| active(d)).min().unwrap_or(0);
    let most = best.values().copied().max().unwrap_or(0);
    (!items.is_empty()).then(|| {
        let mut found = Finding::new(
            "nvlink-inactive",
            Severity::Error,
            "GPUs with fewer active NVLinks than their siblings".into(),
            items,
            "Each missing NVLink removes its share of the GPU's NVLink bandwidth (about 25 GB/s per direction per \
             H100 link), and NCCL may build fewer or slower rings.",
            "Check `nvidia-smi nvlink -s` and the fabric manager log; reset the GPU or drain the node for a \
             baseboard/NVSwitch check.",
        );
        if let Some(link) = per_link {
            let gbps = |links: usize| link.gbps() * links as f64;
            found.expected = Some(format!("{most} links, {:.0} GB/s per direction", gbps(most)));
            found.actual = Some(format!("{fewest} links on the worst GPU, {:.0} GB/s", gbps(fewest)));
        }
        found
    })
}

/// NVLink error counters above this many are reported.
const NVLINK_ERROR_THRESHOLD: u64 = 0;

fn nvlink_errors(snapshot: &Snapshot) -> Option<Finding> {
    let mut items = Vec::new();
    for (index, d) in nvml_gpus(snapshot) {
        for link in d.nvlinks.iter().filter(|l| l.errors.total() > NVLINK_ERROR_THRESHOLD) {
            let e = &link.errors;
            let count = |a: &topo_model::nvml::Answer<u64>| a.show(u64::to_string);
            let text = format!(
                "link {}: replay {}, recovery {}, CRC flit {}, CRC data {}",
                link.link,
                count(&e.replay),
                count(&e.recovery),
                count(&e.crc_flit),
                count(&e.crc_data)
            );
            items.push(evidence(format!("NVML GPU{index}"), text));
        }
    }
    (!items.is_empty()).then(|| {
        Finding::new(
            "nvlink-errors",
            Severity::Warning,
            "NVLinks with error counts".into(),
            items,
            "Replays and recoveries retransmit or retrain the link: bandwidth drops while they happen, and rising \
             counts precede link failures.",
            "Watch whether the counters grow under load (`nvidia-smi nvlink -e`); a link that keeps counting needs \
             a hardware check.",
        )
    })
}

fn fabric_not_ready(snapshot: &Snapshot) -> Option<Finding> {
    let items: Vec<Evidence> = nvml_gpus(snapshot)
        .into_iter()
        .filter_map(|(index, d)| {
            let fabric = d.fabric.ok()?;
            let ready = fabric.state == "completed" && fabric.status == "Success";
            (fabric.state != "not-supported" && !ready)
                .then(|| evidence(format!("NVML GPU{index}"), format!("fabric {} ({})", fabric.state, fabric.status)))
        })
        .collect();
    (!items.is_empty()).then(|| {
        Finding::new(
            "fabric-not-ready",
            Severity::Error,
            "NVSwitch fabric registration not complete".into(),
            items,
            "Until the fabric manager has registered a GPU, it has no NVLink path through the NVSwitches: CUDA and \
             NCCL fall back to PCIe or fail.",
            "Check that nvidia-fabricmanager is running and its version matches the driver \
             (`systemctl status nvidia-fabricmanager`, its log); then restart it or reset the GPUs.",
        )
    })
}

fn gpu_memory_errors(snapshot: &Snapshot) -> Option<Finding> {
    let mut items = Vec::new();
    let mut severity = Severity::Warning;
    for (index, d) in nvml_gpus(snapshot) {
        let at = format!("NVML GPU{index}");
        if let Some(rows) = d.remapped_rows.ok() {
            if rows.failed {
                severity = Severity::Error;
                items.push(evidence(&at, "row remapping failed".into()));
            }
            if rows.pending {
                items.push(evidence(&at, "row remapping pending (takes effect at the next GPU reset)".into()));
            }
        }
        if d.retired_pages.pending.ok() == Some(&true) {
            items.push(evidence(&at, "page retirement pending (takes effect at the next GPU reset)".into()));
        }
        if let Some(n) = d.ecc.volatile_uncorrected.ok().filter(|n| **n > 0) {
            severity = Severity::Error;
            items.push(evidence(&at, format!("{n} uncorrected ECC errors since the last reset")));
        }
    }
    (!items.is_empty()).then(|| {
        Finding::new(
            "gpu-memory-errors",
            severity,
            "GPU memory errors or repairs pending".into(),
            items,
            "Uncorrected errors kill the job (XID 48/94/95); a pending remap or retirement leaves the bad memory \
             in use until the GPU is reset.",
            "Drain the node and reset the GPUs (`nvidia-smi -r`) to apply pending remaps; a failed remap or \
             repeated uncorrected errors mean an RMA.",
        )
    })
}

fn clock_throttle(snapshot: &Snapshot) -> Option<Finding> {
    let items: Vec<Evidence> = nvml_gpus(snapshot)
        .into_iter()
        .filter_map(|(index, d)| {
            let (names, hardware) = clock_event_reasons(*d.clock_event_reasons.ok()?);
            hardware.then(|| evidence(format!("NVML GPU{index}"), format!("clock events: {}", names.join(", "))))
        })
        .collect();
    (!items.is_empty()).then(|| {
        Finding::new(
            "clock-throttle-hw",
            Severity::Warning,
            "GPUs slowed down for hardware reasons".into(),
            items,
            "Thermal or power-brake slowdown lowers the GPU clocks: that rank computes slower and every collective \
             waits for it.",
            "Check cooling and power (`nvidia-smi -q -d PERFORMANCE,TEMPERATURE,POWER`), fans, inlet temperature \
             and the PSU / power-brake signal.",
        )
    })
}

fn gpu_lost(snapshot: &Snapshot) -> Option<Finding> {
    let items: Vec<Evidence> = snapshot
        .nvml
        .iter()
        .flat_map(|n| n.devices.iter())
        .filter_map(|d| Some(evidence(format!("NVML GPU{}", d.index), d.unreachable.clone()?)))
        .collect();
    (!items.is_empty()).then(|| {
        Finding::new(
            "gpu-lost",
            Severity::Error,
            "GPUs the driver cannot reach".into(),
            items,
            "A GPU that has fallen off the bus cannot run work; any job using it fails.",
            "Look for XID 79 in the kernel log; drain the node, then reset or power-cycle it.",
        )
    })
}

fn rdma_ports(snapshot: &Snapshot) -> impl Iterator<Item = (&topo_model::Nic, &topo_model::NicPort)> {
    snapshot
        .topology
        .nics
        .iter()
        .filter(|n| n.kind != NicKind::Ethernet)
        .flat_map(|n| n.ports.iter().map(move |p| (n, p)))
}

fn ib_port_down(snapshot: &Snapshot) -> Option<Finding> {
    let items: Vec<Evidence> = rdma_ports(snapshot)
        .filter(|(_, p)| p.state.is_some() && !p.is_active())
        .map(|(n, p)| {
            let state = format!("{} / {}", p.state.as_deref().unwrap_or("?"), p.phys_state.as_deref().unwrap_or("?"));
            evidence(format!("sysfs {}/ports/{}", n.name, p.port), format!("state {state}"))
        })
        .collect();
    (!items.is_empty()).then(|| {
        Finding::new(
            "ib-port-down",
            Severity::Error,
            "RDMA ports not active".into(),
            items,
            "A rail with its port down carries nothing: NCCL leaves that NIC out or the job fails to connect.",
            "Check the cable and switch port (`ibstat`, `mlxlink`), the subnet manager for InfiniBand, the link \
             configuration for RoCE. A port unused by design belongs in the expectations file.",
        )
    })
}

/// Active ports below the fastest active port of the same kind.
fn ib_port_slow(snapshot: &Snapshot) -> Option<Finding> {
    let active: Vec<(&topo_model::Nic, &topo_model::NicPort, f64)> =
        rdma_ports(snapshot).filter(|(_, p)| p.is_active()).filter_map(|(n, p)| Some((n, p, p.rate_gbps?))).collect();
    let best = active.iter().map(|(.., r)| *r).fold(0.0, f64::max);
    let items: Vec<Evidence> = active
        .iter()
        .filter(|(.., rate)| *rate < best)
        .map(|(n, p, rate)| {
            evidence(format!("sysfs {}/ports/{}", n.name, p.port), format!("{rate} Gb/s, others {best} Gb/s"))
        })
        .collect();
    (!items.is_empty()).then(|| {
        Finding::new(
            "ib-port-slow",
            Severity::Warning,
            "RDMA ports running below the others' rate".into(),
            items,
            "NCCL spreads traffic evenly over the rails, so the slowest port sets the pace for all of them.",
            "Check the cable and the negotiated speed/width (`ibstat`, `mlxlink -d <dev> -m`); reseat or replace.",
        )
    })
}

/// Interfaces of the RDMA NICs with differing MTUs.
fn mtu_mismatch(snapshot: &Snapshot) -> Option<Finding> {
    let topology = &snapshot.topology;
    let mtus: Vec<(&str, u32)> = topology
        .nics
        .iter()
        .filter(|n| n.kind != NicKind::Ethernet)
        .flat_map(|n| n.netdevs.iter())
        .filter_map(|name| {
            let interface = topology.net_interfaces.iter().find(|i| &i.name == name)?;
            Some((name.as_str(), interface.mtu?))
        })
        .collect();
    let mut distinct: Vec<u32> = mtus.iter().map(|(_, m)| *m).collect();
    distinct.sort_unstable();
    distinct.dedup();
    (distinct.len() > 1).then(|| {
        let items = mtus.iter().map(|(name, mtu)| evidence(format!("sysfs net/{name}/mtu"), mtu.to_string())).collect();
        Finding::new(
            "mtu-mismatch",
            Severity::Warning,
            format!(
                "RDMA interfaces with different MTUs: {}",
                distinct.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            ),
            items,
            "RoCE traffic uses the smaller path MTU; a mismatch across rails or hosts splits messages into more \
             packets on some paths and can stall connections.",
            "Set one MTU on every RDMA interface and switch port (typically 9000 for RoCE, 4096 IB MTU).",
        )
    })
}

/// The bridges on the PCIe paths of GPUs and RDMA NICs.
fn path_bridges(snapshot: &Snapshot) -> Vec<&topo_model::PciDevice> {
    let topology = &snapshot.topology;
    let mut seen = std::collections::BTreeSet::new();
    endpoints(topology)
        .flat_map(|e| topology.ancestors(e))
        .filter(|d| d.bridge.is_some() && seen.insert(d.bus_id))
        .collect()
}

fn acs_redirect(snapshot: &Snapshot) -> Option<Finding> {
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

fn iommu_translated(snapshot: &Snapshot) -> Option<Finding> {
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

fn has_rdma(snapshot: &Snapshot) -> bool {
    snapshot.topology.nics.iter().any(|n| matches!(n.kind, NicKind::Infiniband | NicKind::Roce))
}

/// GPUDirect RDMA needs a peer-memory module (or DMA-BUF, which the probe cannot
/// see from sysfs): only judged on a live probe of a node with GPUs, an RDMA NIC
/// and the `nvidia` module loaded, where the module list is known.
fn gdr_not_ready(snapshot: &Snapshot) -> Option<Finding> {
    let modules = &snapshot.host.modules;
    let judged = modules.iter().any(|m| m == "nvidia") && has_rdma(snapshot) && !snapshot.topology.gpus.is_empty();
    let peer_memory = modules.iter().any(|m| m == "nvidia_peermem" || m == "nv_peer_mem");
    (judged && !peer_memory).then(|| {
        Finding::new(
            "gdr-not-ready",
            Severity::Warning,
            "No GPUDirect RDMA peer-memory module loaded".into(),
            vec![evidence("sysfs module/", format!("loaded: {}", modules.join(", ")))],
            "Without nvidia_peermem (or DMA-BUF support), NCCL stages every network transfer through host memory: \
             a large cut in inter-node bandwidth.",
            "`modprobe nvidia_peermem` (and load it at boot), or use a driver and kernel with DMA-BUF \
             (open kernel modules, kernel >= 5.12) and check NCCL's log for `GDRDMA`.",
        )
    })
}

fn dev_shm_small(snapshot: &Snapshot) -> Option<Finding> {
    let size = snapshot.host.dev_shm_bytes?;
    (size < MIN_DEV_SHM_BYTES && !snapshot.topology.gpus.is_empty()).then(|| {
        Finding::new(
            "dev-shm-small",
            Severity::Warning,
            format!("/dev/shm is {} MiB", size >> 20),
            vec![evidence("proc/mounts", format!("/dev/shm tmpfs of {size} bytes"))],
            "NCCL's shared-memory transport and proxies allocate segments in /dev/shm; a small one fails setup \
             with `No space left on device` once several GPUs share the node.",
            "Give the job a larger /dev/shm: docker --shm-size=16g or --ipc=host; Kubernetes: an emptyDir with \
             medium: Memory at /dev/shm.",
        )
    })
}

fn memlock_limited(snapshot: &Snapshot) -> Option<Finding> {
    let limit = snapshot.host.memlock.as_deref()?;
    (limit != "unlimited" && has_rdma(snapshot)).then(|| {
        Finding::new(
            "memlock-limited",
            Severity::Warning,
            format!("Locked-memory limit is {limit} bytes on a node with RDMA NICs"),
            vec![evidence("proc/self/limits", format!("Max locked memory {limit}"))],
            "RDMA registers (pins) communication buffers; a small memlock limit makes registration fail or forces \
             NCCL to fall back.",
            "Set `ulimit -l unlimited` for the job (limits.conf memlock, Slurm PropagateResourceLimits, \
             docker --ulimit memlock=-1).",
        )
    })
}
