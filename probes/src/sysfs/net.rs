//! RDMA devices (`/sys/class/infiniband`) and network interfaces (`/sys/class/net`).

use std::path::Path;

use topo_model::matrix::natural_key;
use topo_model::{BusId, NetInterface, Nic, NicKind, NicPort, Topology};

use super::Tree;
use super::files::{Warnings, read_optional, read_parsed};

/// The PCI function a `device` symlink leads to: the last bus ID in its target
/// (virtio and similar put a child device below the PCI function).
fn pci_function_of(device_link: &Path) -> Option<BusId> {
    let target = std::fs::canonicalize(device_link).ok()?;
    target.components().rev().find_map(|c| c.as_os_str().to_string_lossy().parse::<BusId>().ok())
}

fn sorted_entries(dir: &Path) -> Vec<std::fs::DirEntry> {
    let mut entries: Vec<_> = std::fs::read_dir(dir).map(|e| e.flatten().collect()).unwrap_or_default();
    entries.sort_by_key(|e| natural_key(&e.file_name().to_string_lossy()));
    entries
}

/// The word after the number in `4: ACTIVE`, `5: LinkUp`.
fn state_word(text: &str) -> Option<String> {
    let word = text.split_once(':').map_or(text, |(_, w)| w).trim();
    (!word.is_empty()).then(|| word.to_string())
}

/// The Gb/s figure at the start of `100 Gb/sec (4X EDR)`.
fn parse_rate(text: &str) -> Option<f64> {
    let mut words = text.split_whitespace();
    let value: f64 = words.next()?.parse().ok()?;
    words.next().is_some_and(|unit| unit.starts_with("Gb/s")).then_some(value)
}

pub(crate) fn read_rdma(tree: &Tree, topology: &mut Topology, warnings: &mut Warnings) {
    for entry in sorted_entries(&tree.sys("class/infiniband")) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let dir = entry.path();
        let bus_id = pci_function_of(&dir.join("device"));
        let mut ports = Vec::new();
        for port_entry in sorted_entries(&dir.join("ports")) {
            let Ok(port) = port_entry.file_name().to_string_lossy().parse::<u32>() else { continue };
            let port_dir = port_entry.path();
            ports.push(NicPort {
                port,
                state: read_parsed(&port_dir.join("state"), true, warnings, state_word),
                phys_state: read_parsed(&port_dir.join("phys_state"), false, warnings, state_word),
                rate_gbps: read_parsed(&port_dir.join("rate"), false, warnings, parse_rate),
                link_layer: read_optional(&port_dir.join("link_layer"), warnings),
            });
        }
        let vendor = bus_id.and_then(|b| topology.pci(b)).and_then(|d| d.vendor);
        let kind = match (vendor, ports.first().and_then(|p| p.link_layer.as_deref())) {
            (Some(0x1d0f), _) => NicKind::Efa,
            (_, Some("InfiniBand")) => NicKind::Infiniband,
            (_, Some("Ethernet")) => NicKind::Roce,
            _ => NicKind::Unknown,
        };
        let netdevs = sorted_entries(&dir.join("device/net"))
            .iter()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        topology.nics.push(Nic {
            name,
            bus_id,
            kind,
            ports,
            node_guid: read_optional(&dir.join("node_guid"), warnings),
            firmware: read_optional(&dir.join("fw_ver"), warnings),
            netdevs,
            ..Nic::default()
        });
    }
}

pub(crate) fn read_net_interfaces(tree: &Tree, topology: &mut Topology, warnings: &mut Warnings) {
    for entry in sorted_entries(&tree.sys("class/net")) {
        let dir = entry.path();
        topology.net_interfaces.push(NetInterface {
            name: entry.file_name().to_string_lossy().into_owned(),
            bus_id: pci_function_of(&dir.join("device")),
            mtu: read_parsed(&dir.join("mtu"), false, warnings, |t| t.parse().ok()),
            // `-1` (and EINVAL) mean the link is down or the speed unknown.
            speed_mbps: read_optional(&dir.join("speed"), warnings).and_then(|t| t.parse::<u64>().ok()),
            operstate: read_optional(&dir.join("operstate"), warnings),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_attributes() {
        assert_eq!(parse_rate("40 Gb/sec (4X QDR)"), Some(40.0));
        assert_eq!(parse_rate("2.5 Gb/sec (1X SDR)"), Some(2.5));
        assert_eq!(parse_rate("fast"), None);
        assert_eq!(state_word("4: ACTIVE"), Some("ACTIVE".to_string()));
        assert_eq!(state_word("5: LinkUp"), Some("LinkUp".to_string()));
    }
}
