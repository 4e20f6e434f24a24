//! The PCI tree (`/sys/bus/pci/devices`): devices, their bridges and links.

use std::path::{Component, Path, PathBuf};

use topo_model::pcie::{parse_link_speed, parse_link_width};
use topo_model::{BridgeRole, BusId, CpuSet, Gpu, NvSwitch, PciDevice, PcieLink, PcieLinkSpec, Topology};

use super::Tree;
use super::files::{Warnings, link_name, parse_hex_u16, parse_hex_u32, read_optional, read_parsed};
use topo_model::topology::pci_class;

/// Where a PCI function sits: its physical directory, the root complex above it
/// and the chain of bus IDs from the top down to itself.
struct Placement {
    dir: PathBuf,
    host_bridge: Option<String>,
    chain: Vec<BusId>,
}

pub(crate) fn read_pci(tree: &Tree, topology: &mut Topology, warnings: &mut Warnings) {
    let listing = tree.sys("bus/pci/devices");
    let Ok(entries) = std::fs::read_dir(&listing) else {
        return;
    };
    let mut placements: Vec<Placement> = entries.flatten().filter_map(|e| place(&e.path())).collect();
    // Bridges a trimmed capture does not list still appear in their children's
    // paths: add them so every parent link resolves.
    let mut known: std::collections::HashSet<BusId> =
        placements.iter().filter_map(|p| p.chain.last().copied()).collect();
    let mut extra = Vec::new();
    for placement in &placements {
        for depth in 1..placement.chain.len() {
            let bus_id = placement.chain[depth - 1];
            if known.insert(bus_id) {
                let steps_up = placement.chain.len() - depth;
                let dir = placement.dir.ancestors().nth(steps_up).map(Path::to_path_buf);
                if let Some(dir) = dir {
                    extra.push(Placement {
                        dir,
                        host_bridge: placement.host_bridge.clone(),
                        chain: placement.chain[..depth].to_vec(),
                    });
                }
            }
        }
    }
    placements.extend(extra);
    placements.sort_by(|a, b| (a.chain.len(), a.chain.last()).cmp(&(b.chain.len(), b.chain.last())));
    placements.dedup_by(|a, b| a.chain.last() == b.chain.last());

    for placement in &placements {
        let Some(&bus_id) = placement.chain.last() else { continue };
        let parent = placement.chain.len().checked_sub(2).and_then(|i| placement.chain.get(i)).copied();
        let device = read_device(&placement.dir, bus_id, parent, placement.host_bridge.clone(), topology, warnings);
        topology.pci_devices.push(device);
    }

    let mut index = 0;
    for device in &topology.pci_devices {
        if device.is_nvidia_gpu() {
            topology.gpus.push(Gpu {
                // Without the driver, the PCI bus order is the order NVML uses.
                index: Some(index),
                bus_id: device.bus_id,
                name: device.device.and_then(topo_model::topology::nvidia_product_name).map(str::to_string),
                ..Gpu::default()
            });
            index += 1;
        } else if device.is_nvswitch() {
            topology.nvswitches.push(NvSwitch { bus_id: device.bus_id, visible: true });
        }
    }
}

/// Resolves a `/sys/bus/pci/devices/<bdf>` entry into its physical place. The
/// link's own text (`../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0`)
/// names the whole chain, so one `readlink` does what `realpath` would do with
/// a dozen system calls.
fn place(entry: &Path) -> Option<Placement> {
    let dir = match std::fs::read_link(entry) {
        Ok(target) => entry.parent().map_or_else(|| target.clone(), |listing| normalise(&listing.join(&target))),
        Err(_) => entry.to_path_buf(),
    };
    let mut host_bridge = None;
    let mut chain = Vec::new();
    for component in dir.components() {
        let Component::Normal(name) = component else { continue };
        let name = name.to_string_lossy();
        if name.starts_with("pci") && name.contains(':') {
            // A new root complex: what came before it is platform plumbing.
            host_bridge = Some(name.into_owned());
            chain.clear();
        } else if let Ok(bus_id) = name.parse::<BusId>() {
            chain.push(bus_id);
        }
    }
    if chain.is_empty() {
        // Not a symlink into /sys/devices: all we know is the name.
        let name = entry.file_name()?.to_string_lossy().parse().ok()?;
        chain.push(name);
    }
    Some(Placement { dir, host_bridge, chain })
}

/// Folds `..` and `.` out of a path without touching the file system (sysfs
/// links point into `/sys/devices`, which holds no further symlinks on the way).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn read_device(
    dir: &Path,
    bus_id: BusId,
    parent: Option<BusId>,
    host_bridge: Option<String>,
    topology: &Topology,
    warnings: &mut Warnings,
) -> PciDevice {
    let class = read_parsed(&dir.join("class"), true, warnings, parse_hex_u32);
    let vendor = read_parsed(&dir.join("vendor"), true, warnings, parse_hex_u16);
    let parent_role = parent.and_then(|p| topology.pci(p)).and_then(|p| p.bridge);
    let bridge = class.and_then(|c| bridge_role(c, parent, parent_role));
    // GPUs are always PCIe devices, so their link files should exist; other
    // functions (virtio, conventional PCI, extra functions) may lack them.
    let matters = vendor == Some(topo_model::topology::NVIDIA_VENDOR) && class.is_some_and(pci_class::is_display);
    let speed = |name: &str, warnings: &mut Warnings| {
        read_parsed(&dir.join(name), matters, warnings, |t| parse_link_speed(t).ok()).flatten()
    };
    let width = |name: &str, warnings: &mut Warnings| {
        read_parsed(&dir.join(name), matters, warnings, |t| parse_link_width(t).ok()).flatten()
    };
    let link = PcieLink {
        current: PcieLinkSpec::new(speed("current_link_speed", warnings), width("current_link_width", warnings)),
        max: PcieLinkSpec::new(speed("max_link_speed", warnings), width("max_link_width", warnings)),
    };
    let numa_node = read_parsed(&dir.join("numa_node"), false, warnings, |t| t.parse::<i32>().ok()).filter(|n| *n >= 0);
    let local_cpus = read_parsed(&dir.join("local_cpulist"), false, warnings, |t| CpuSet::parse_list(t).ok())
        .or_else(|| read_parsed(&dir.join("local_cpus"), false, warnings, |t| CpuSet::parse_mask(t).ok()));
    PciDevice {
        bus_id,
        parent,
        host_bridge,
        bridge,
        class,
        vendor,
        device: read_parsed(&dir.join("device"), true, warnings, parse_hex_u16),
        subsystem_vendor: read_parsed(&dir.join("subsystem_vendor"), false, warnings, parse_hex_u16),
        subsystem_device: read_parsed(&dir.join("subsystem_device"), false, warnings, parse_hex_u16),
        numa_node,
        local_cpus,
        link,
        driver: link_name(&dir.join("driver")),
        iommu: read_optional(&dir.join("iommu_group/type"), warnings),
        acs_redirect: bridge.filter(|r| *r != BridgeRole::HostBridge).and_then(|_| acs_redirect(&dir.join("config"))),
    }
}

/// Reads a bridge's ACS control register from its config space. Without root
/// the kernel returns only the first 64 bytes, so the extended capabilities
/// (from offset 0x100) are missing and the answer is `None`: not checked.
fn acs_redirect(config: &Path) -> Option<bool> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(config).ok()?.take(4096).read_to_end(&mut bytes).ok()?;
    acs_redirect_in(&bytes)
}

/// Walks the PCIe extended capability list for ACS (id 0x000d): `Some(true)`
/// when P2P request or completion redirect (control bits 2, 3) is on.
fn acs_redirect_in(config: &[u8]) -> Option<bool> {
    const ACS: u16 = 0x000d;
    let dword = |at: usize| Some(u32::from_le_bytes(config.get(at..at + 4)?.try_into().ok()?));
    let mut offset = 0x100;
    // A well-formed list is short; the bound stops a looping one.
    for _ in 0..64 {
        let header = dword(offset)?;
        if header == 0 || header == u32::MAX {
            return Some(false);
        }
        if header as u16 == ACS {
            let control = u16::from_le_bytes(config.get(offset + 6..offset + 8)?.try_into().ok()?);
            return Some(control & 0b1100 != 0);
        }
        offset = (header >> 20) as usize & 0xffc;
        if offset < 0x100 {
            return Some(false);
        }
    }
    None
}

/// Infers a bridge's role from its position: sysfs paths alternate root port,
/// switch upstream port, switch downstream port, upstream port of a nested
/// switch, and so on.
fn bridge_role(class: u32, parent: Option<BusId>, parent_role: Option<BridgeRole>) -> Option<BridgeRole> {
    if pci_class::base(class) == pci_class::HOST_BRIDGE {
        return Some(BridgeRole::HostBridge);
    }
    if !pci_class::is_pci_bridge(class) {
        return None;
    }
    Some(match (parent, parent_role) {
        (None, _) => BridgeRole::RootPort,
        (Some(_), Some(BridgeRole::SwitchUpstream)) => BridgeRole::SwitchDownstream,
        _ => BridgeRole::SwitchUpstream,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 4 KiB config space with AER at 0x100 pointing to ACS at 0x148.
    fn config(acs_control: u16) -> Vec<u8> {
        let mut bytes = vec![0u8; 4096];
        bytes[0x100..0x104].copy_from_slice(&(0x0001u32 | 1 << 16 | 0x148 << 20).to_le_bytes());
        bytes[0x148..0x14c].copy_from_slice(&(0x000du32 | 1 << 16).to_le_bytes());
        bytes[0x14e..0x150].copy_from_slice(&acs_control.to_le_bytes());
        bytes
    }

    #[test]
    fn acs_redirect_from_config_space() {
        assert_eq!(acs_redirect_in(&config(0b0000_0001)), Some(false)); // source validation only
        assert_eq!(acs_redirect_in(&config(0b0001_1101)), Some(true)); // request + completion redirect
        assert_eq!(acs_redirect_in(&config(0b0000_1000)), Some(true));
        // What a non-root read returns: 64 bytes, no extended space.
        assert_eq!(acs_redirect_in(&config(0b1100)[..64]), None);
        // No capabilities, and a list that loops on itself.
        assert_eq!(acs_redirect_in(&vec![0u8; 4096]), Some(false));
        let mut looping = vec![0u8; 4096];
        looping[0x100..0x104].copy_from_slice(&(0x0001u32 | 0x100 << 20).to_le_bytes());
        assert_eq!(acs_redirect_in(&looping), None);
    }
}
