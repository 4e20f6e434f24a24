//! Paths between two devices: the class in nvidia-smi's and NCCL's words, the
//! hops, the bottleneck and the bandwidth the path should carry.
//!
//! PCIe classes follow NVML's definition (the levels behind `nvidia-smi topo -m`):
//! PIX = at most one switch between the two devices, PXB = several switches but not
//! the host bridge, PHB = through one host bridge, NODE = between host bridges of
//! one NUMA node, SYS = across the inter-socket link. A switch is counted once
//! however many of its ports the path touches; a root port counts as a switch of
//! its own (two functions below one root port are PIX, as nvidia-smi prints).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::bandwidth::{Bandwidth, inter_socket_bandwidth, nvlink_per_link_bandwidth};
use crate::bus_id::BusId;
use crate::pcie::{PcieLink, PcieLinkSpec};
use crate::topology::{BridgeRole, NvLinkRemote, PciDevice, Topology};

/// A connection class in `nvidia-smi topo -m` vocabulary; serialised as the
/// matrix cell (`NV18`, `PIX`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SmiClass {
    Same,
    /// A bonded set of this many NVLinks.
    Nv(u32),
    Pix,
    Pxb,
    Phb,
    Node,
    Sys,
    /// The sources do not place one of the devices.
    Unknown,
}

impl Serialize for SmiClass {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SmiClass {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text == "?" {
            return Ok(SmiClass::Unknown);
        }
        SmiClass::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("not a matrix cell: {text:?}")))
    }
}

impl SmiClass {
    /// Parses a matrix cell (`X`, `NV18`, `PIX`, ...).
    pub fn parse(cell: &str) -> Option<SmiClass> {
        Some(match cell.trim() {
            "X" => SmiClass::Same,
            "PIX" => SmiClass::Pix,
            "PXB" => SmiClass::Pxb,
            "PHB" => SmiClass::Phb,
            "NODE" => SmiClass::Node,
            "SYS" => SmiClass::Sys,
            other => SmiClass::Nv(other.strip_prefix("NV")?.parse().ok()?),
        })
    }
}

impl fmt::Display for SmiClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SmiClass::Same => f.write_str("X"),
            SmiClass::Nv(n) => write!(f, "NV{n}"),
            SmiClass::Pix => f.write_str("PIX"),
            SmiClass::Pxb => f.write_str("PXB"),
            SmiClass::Phb => f.write_str("PHB"),
            SmiClass::Node => f.write_str("NODE"),
            SmiClass::Sys => f.write_str("SYS"),
            SmiClass::Unknown => f.write_str("?"),
        }
    }
}

/// A path type in NCCL's vocabulary (`src/include/graph.h`), best first. Persist
/// the name, never the number: NCCL renumbered them in 2.26 and 2.27.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum NcclClass {
    Loc,
    Nvl,
    Nvb,
    C2c,
    Pix,
    Pxb,
    Pxn,
    Phb,
    Sys,
    Net,
    Dis,
}

impl fmt::Display for NcclClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            NcclClass::Loc => "LOC",
            NcclClass::Nvl => "NVL",
            NcclClass::Nvb => "NVB",
            NcclClass::C2c => "C2C",
            NcclClass::Pix => "PIX",
            NcclClass::Pxb => "PXB",
            NcclClass::Pxn => "PXN",
            NcclClass::Phb => "PHB",
            NcclClass::Sys => "SYS",
            NcclClass::Net => "NET",
            NcclClass::Dis => "DIS",
        };
        f.write_str(name)
    }
}

/// Two devices' upstream chains, where they meet (`chain_a[i]` is
/// `chain_b[j]`), and the class that gives.
struct Route<'a> {
    chain_a: Vec<&'a PciDevice>,
    chain_b: Vec<&'a PciDevice>,
    common: Option<(usize, usize)>,
    class: SmiClass,
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hop {
    pub from: String,
    pub to: String,
    pub kind: HopKind,
    /// What this hop should carry per direction; `None` when it is not a limit
    /// (inside a switch or a root complex) or the source does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<Bandwidth>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum HopKind {
    /// A PCIe link; `link` holds the effective (both ends) current and max spec.
    Pcie {
        link: PcieLink,
    },
    /// Between ports of one switch, or from a root port into its root complex.
    Internal,
    NvLink {
        links: u32,
    },
    /// Between two host bridges of one NUMA node.
    HostBridges,
    /// Across the CPU-to-CPU link.
    InterSocket,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Path {
    pub smi: SmiClass,
    pub nccl: NcclClass,
    pub hops: Vec<Hop>,
    /// Index into `hops` of the slowest hop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<usize>,
    /// Per-direction bandwidth the path should carry: its bottleneck.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Bandwidth>,
}

impl Path {
    fn new(smi: SmiClass, nccl: NcclClass, hops: Vec<Hop>) -> Path {
        let bottleneck = hops
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.bandwidth.map(|b| (i, b)))
            .min_by(|a, b| a.1.0.total_cmp(&b.1.0))
            .map(|(i, _)| i);
        let expected = bottleneck.and_then(|i| hops.get(i)).and_then(|h| h.bandwidth);
        Path { smi, nccl, hops, bottleneck, expected }
    }
}

fn smi_to_nccl(class: SmiClass) -> NcclClass {
    match class {
        SmiClass::Same => NcclClass::Loc,
        SmiClass::Nv(_) => NcclClass::Nvl,
        SmiClass::Pix => NcclClass::Pix,
        SmiClass::Pxb => NcclClass::Pxb,
        // NCCL models one CPU node per NUMA domain: NODE is PHB to it.
        SmiClass::Phb | SmiClass::Node => NcclClass::Phb,
        SmiClass::Sys => NcclClass::Sys,
        SmiClass::Unknown => NcclClass::Dis,
    }
}

impl Topology {
    /// The path between two devices named by bus ID (GPUs, NICs or any PCI
    /// function). NVLink is preferred over PCIe, as both NVML and NCCL do.
    pub fn path(&self, a: BusId, b: BusId) -> Path {
        if a == b {
            return Path::new(SmiClass::Same, NcclClass::Loc, Vec::new());
        }
        if let Some(path) = self.nvlink_path(a, b) {
            return path;
        }
        let pcie = self.pcie_path(a, b);
        if let Some(path) = self.nvlink_bridge_path(a, b).or_else(|| self.pxn_path(a, b, &pcie)) {
            return path;
        }
        pcie
    }

    /// NVLinks joining two GPUs: directly, or through NVSwitches both reach.
    /// Returns the bonded link count as nvidia-smi counts it.
    pub fn nvlinks_between(&self, a: BusId, b: BusId) -> u32 {
        let direct = |from: BusId, to: BusId| -> u32 {
            self.nvlinks_of(from).filter(|l| l.remote == NvLinkRemote::Gpu(to)).map(|l| l.links).sum()
        };
        let direct_links = direct(a, b).max(direct(b, a));
        if direct_links > 0 {
            return direct_links;
        }
        let switches_of = |gpu: BusId| -> Vec<(BusId, u32)> {
            self.nvlinks_of(gpu)
                .filter_map(|l| match l.remote {
                    NvLinkRemote::NvSwitch(s) => Some((s, l.links)),
                    _ => None,
                })
                .collect()
        };
        let (from_a, from_b) = (switches_of(a), switches_of(b));
        let shared = |mine: &[(BusId, u32)], theirs: &[(BusId, u32)]| -> u32 {
            mine.iter().filter(|(s, _)| theirs.iter().any(|(t, _)| t == s)).map(|(_, n)| n).sum()
        };
        shared(&from_a, &from_b).min(shared(&from_b, &from_a))
    }

    fn nvlink_hop_bandwidth(&self, gpu: BusId, links: u32) -> Option<Bandwidth> {
        let per_link = nvlink_per_link_bandwidth(self.gpu(gpu)?.sm?)?;
        Some(Bandwidth(per_link.0 * f64::from(links)))
    }

    fn nvlink_path(&self, a: BusId, b: BusId) -> Option<Path> {
        let links = self.nvlinks_between(a, b);
        if links == 0 {
            return None;
        }
        let hop = Hop {
            from: a.to_string(),
            to: b.to_string(),
            kind: HopKind::NvLink { links },
            bandwidth: self.nvlink_hop_bandwidth(a, links),
        };
        Some(Path::new(SmiClass::Nv(links), NcclClass::Nvl, vec![hop]))
    }

    /// NCCL's NVB: two GPUs without NVLink between them that both have NVLink to a
    /// third GPU (DGX-1's hybrid cube mesh). nvidia-smi shows the PCIe class.
    fn nvlink_bridge_path(&self, a: BusId, b: BusId) -> Option<Path> {
        if self.gpu(a).is_none() || self.gpu(b).is_none() {
            return None;
        }
        let (via, first, second) = self
            .gpus
            .iter()
            .filter(|g| g.bus_id != a && g.bus_id != b)
            .filter_map(|g| {
                let first = self.nvlinks_between(a, g.bus_id);
                let second = self.nvlinks_between(g.bus_id, b);
                (first > 0 && second > 0).then_some((g.bus_id, first, second))
            })
            .max_by_key(|(_, first, second)| (*first).min(*second))?;
        let hops = vec![
            Hop {
                from: a.to_string(),
                to: via.to_string(),
                kind: HopKind::NvLink { links: first },
                bandwidth: self.nvlink_hop_bandwidth(a, first),
            },
            Hop {
                from: via.to_string(),
                to: b.to_string(),
                kind: HopKind::NvLink { links: second },
                bandwidth: self.nvlink_hop_bandwidth(via, second),
            },
        ];
        let smi = self.pcie_route(a, b).class;
        Some(Path::new(smi, NcclClass::Nvb, hops))
    }

    /// NCCL's PXN: a GPU reaches a NIC through an NVLink peer that sits on the
    /// NIC's PCIe switch, instead of crossing the CPU itself.
    fn pxn_path(&self, gpu: BusId, nic: BusId, own: &Path) -> Option<Path> {
        if self.gpu(gpu).is_none() || self.gpu(nic).is_some() || own.nccl <= NcclClass::Pxb {
            return None;
        }
        let (peer, links, peer_path) = self
            .gpus
            .iter()
            .filter(|g| g.bus_id != gpu)
            .filter_map(|g| {
                let class = smi_to_nccl(self.pcie_route(g.bus_id, nic).class);
                if class > NcclClass::Pxb {
                    return None;
                }
                let links = self.nvlinks_between(gpu, g.bus_id);
                (links > 0).then(|| (g.bus_id, links, self.pcie_path(g.bus_id, nic)))
            })
            .min_by_key(|(_, _, path)| path.nccl)?;
        let mut hops = vec![Hop {
            from: gpu.to_string(),
            to: peer.to_string(),
            kind: HopKind::NvLink { links },
            bandwidth: self.nvlink_hop_bandwidth(gpu, links),
        }];
        hops.extend(peer_path.hops);
        Some(Path::new(own.smi, NcclClass::Pxn, hops))
    }

    /// The class nvidia-smi prints for two devices, without building the hops.
    pub fn smi_class(&self, a: BusId, b: BusId) -> SmiClass {
        if a == b {
            return SmiClass::Same;
        }
        match self.nvlinks_between(a, b) {
            0 => self.pcie_route(a, b).class,
            links => SmiClass::Nv(links),
        }
    }

    /// Where two devices' upstream chains meet, and the PCIe class that gives.
    fn pcie_route(&self, a: BusId, b: BusId) -> Route<'_> {
        let chain_a = self.ancestors(a);
        let chain_b = self.ancestors(b);
        if chain_a.is_empty() || chain_b.is_empty() {
            return Route { chain_a, chain_b, common: None, class: SmiClass::Unknown };
        }
        let common = chain_a
            .iter()
            .enumerate()
            .find_map(|(i, d)| chain_b.iter().position(|e| e.bus_id == d.bus_id).map(|j| (i, j)));
        let class = match common {
            Some((i, _)) if chain_a[i].bridge == Some(BridgeRole::HostBridge) => SmiClass::Phb,
            Some((i, j)) => {
                let bridges = chain_a[1..=i].iter().chain(chain_b[1..=j].iter());
                let mut switches: Vec<BusId> = bridges.map(|d| self.switch_of(d)).collect();
                switches.sort();
                switches.dedup();
                if switches.len() <= 1 { SmiClass::Pix } else { SmiClass::Pxb }
            }
            None => match (self.numa_of(a), self.numa_of(b)) {
                (Some(x), Some(y)) if x != y => SmiClass::Sys,
                _ => match (self.host_bridge_of(a), self.host_bridge_of(b)) {
                    (Some(x), Some(y)) if x != y => SmiClass::Node,
                    _ => SmiClass::Phb,
                },
            },
        };
        Route { chain_a, chain_b, common, class }
    }

    /// The PCIe-only path (what `nvidia-smi topo -mp` shows).
    pub fn pcie_path(&self, a: BusId, b: BusId) -> Path {
        if a == b {
            return Path::new(SmiClass::Same, NcclClass::Loc, Vec::new());
        }
        let route = self.pcie_route(a, b);
        let (chain_a, chain_b) = (&route.chain_a, &route.chain_b);
        if route.class == SmiClass::Unknown {
            return Path::new(SmiClass::Unknown, NcclClass::Dis, Vec::new());
        }
        let (up, down) = match route.common {
            Some((i, j)) => (&chain_a[..i], &chain_b[..j]),
            None => (&chain_a[..], &chain_b[..]),
        };
        let mut hops = self.hops_up(up);
        match route.class {
            SmiClass::Sys => {
                let (x, y) = (self.numa_of(a).unwrap_or(-1), self.numa_of(b).unwrap_or(-1));
                hops.push(Hop {
                    from: format!("NUMA {x}"),
                    to: format!("NUMA {y}"),
                    kind: HopKind::InterSocket,
                    bandwidth: inter_socket_bandwidth(
                        self.cpu.vendor.as_deref(),
                        self.cpu.arch.as_deref(),
                        self.cpu.family,
                        self.cpu.model,
                    ),
                });
            }
            SmiClass::Node => hops.push(Hop {
                from: self.host_bridge_of(a).unwrap_or("?").to_string(),
                to: self.host_bridge_of(b).unwrap_or("?").to_string(),
                kind: HopKind::HostBridges,
                bandwidth: None,
            }),
            _ => {}
        }
        let mut back = self.hops_up(down);
        back.reverse();
        back.iter_mut().for_each(|h| std::mem::swap(&mut h.from, &mut h.to));
        hops.extend(back);
        Path::new(route.class, smi_to_nccl(route.class), hops)
    }

    /// The switch a bridge belongs to: a downstream port is part of its parent
    /// upstream port's switch; every other bridge stands for itself.
    fn switch_of(&self, bridge: &PciDevice) -> BusId {
        match (bridge.bridge, bridge.parent) {
            (Some(BridgeRole::SwitchDownstream), Some(parent)) => parent,
            _ => bridge.bus_id,
        }
    }

    /// Hops from each device in `chain` to the next one up (or to the root
    /// complex for the topmost).
    fn hops_up(&self, chain: &[&PciDevice]) -> Vec<Hop> {
        chain
            .iter()
            .map(|device| {
                let parent = device.parent.and_then(|p| self.pci(p));
                let to = match (parent, self.host_bridge_of(device.bus_id)) {
                    (Some(p), _) => p.bus_id.to_string(),
                    (None, Some(host)) => host.to_string(),
                    (None, None) => "CPU".to_string(),
                };
                let internal = matches!(
                    device.bridge,
                    Some(BridgeRole::SwitchDownstream | BridgeRole::RootPort | BridgeRole::HostBridge)
                );
                let (kind, bandwidth) = if internal {
                    (HopKind::Internal, None)
                } else {
                    let link = effective_link(device, parent);
                    (HopKind::Pcie { link }, link.max.bandwidth())
                };
                Hop { from: device.bus_id.to_string(), to, kind, bandwidth }
            })
            .collect()
    }
}

/// The link between a device and its parent as both ends allow. A root port or
/// switch downstream port reports the link below it, so it is the other end of the
/// device's own link; an upstream port or whole switch reports its uplink, which is
/// a different link.
fn effective_link(device: &PciDevice, parent: Option<&PciDevice>) -> PcieLink {
    match parent {
        Some(p) if matches!(p.bridge, Some(BridgeRole::RootPort | BridgeRole::SwitchDownstream)) => {
            PcieLink { current: device.link.current.min(&p.link.current), max: pick_known(device.link.max, p.link.max) }
        }
        _ => device.link,
    }
}

fn pick_known(device: PcieLinkSpec, port: PcieLinkSpec) -> PcieLinkSpec {
    if port.is_known() { device.min(&port) } else { device }
}

#[cfg(test)]
mod tests {
    //! Hand-made topologies for path types no real fixture here shows
    //! (DGX-1's NVB mesh, PXN through an NVLink peer).
    use super::*;
    use crate::topology::{Gpu, Nic, NicKind, NumaNode, NvLinkBundle, PciDevice};

    fn bus(text: &str) -> BusId {
        text.parse().unwrap()
    }

    fn device(id: &str, parent: Option<&str>, numa: i32, bridge: Option<BridgeRole>) -> PciDevice {
        PciDevice {
            parent: parent.map(bus),
            numa_node: Some(numa),
            bridge,
            link: PcieLink { current: PcieLinkSpec::new(Some(4), Some(16)), max: PcieLinkSpec::new(Some(4), Some(16)) },
            ..PciDevice::new(bus(id))
        }
    }

    /// GPU A (socket 0) and GPU B (socket 1, behind a switch with the NIC);
    /// A-B and B-C have NVLink, A-C does not.
    fn mesh() -> Topology {
        let mut t = Topology::default();
        t.cpu.vendor = Some("GenuineIntel".into());
        t.cpu.model = Some(85);
        t.numa_nodes = vec![NumaNode { id: 0, ..NumaNode::default() }, NumaNode { id: 1, ..NumaNode::default() }];
        t.pci_devices = vec![
            device("0000:10:00.0", None, 0, None),
            device("0000:80:00.0", None, 1, Some(BridgeRole::Switch)),
            device("0000:81:00.0", Some("0000:80:00.0"), 1, None),
            device("0000:82:00.0", Some("0000:80:00.0"), 1, None),
            device("0000:90:00.0", None, 1, None),
        ];
        for (id, sm) in [("0000:10:00.0", 70), ("0000:81:00.0", 70), ("0000:90:00.0", 70)] {
            t.gpus.push(Gpu { bus_id: bus(id), sm: Some(sm), ..Gpu::default() });
        }
        t.nics.push(Nic {
            name: "mlx5_0".into(),
            bus_id: Some(bus("0000:82:00.0")),
            kind: NicKind::Infiniband,
            ..Nic::default()
        });
        let link = |a: &str, b: &str, links| NvLinkBundle { gpu: bus(a), remote: NvLinkRemote::Gpu(bus(b)), links };
        t.nvlinks = vec![link("0000:10:00.0", "0000:81:00.0", 2), link("0000:81:00.0", "0000:90:00.0", 1)];
        t
    }

    #[test]
    fn nvlink_through_a_peer_is_nvb_and_smi_shows_pcie() {
        let t = mesh();
        let path = t.path(bus("0000:10:00.0"), bus("0000:90:00.0"));
        assert_eq!((path.nccl, path.smi), (NcclClass::Nvb, SmiClass::Sys));
        assert_eq!(path.hops.len(), 2);
        // V100: the one-link hop (25 GB/s) is the bottleneck.
        assert_eq!(path.expected.unwrap().gbps(), 25.0);
        assert_eq!(path.bottleneck, Some(1));
        assert_eq!(t.path(bus("0000:10:00.0"), bus("0000:81:00.0")).smi, SmiClass::Nv(2));
    }

    #[test]
    fn a_far_nic_reached_through_an_nvlink_peer_is_pxn() {
        let t = mesh();
        let path = t.path(bus("0000:10:00.0"), bus("0000:82:00.0"));
        assert_eq!((path.nccl, path.smi), (NcclClass::Pxn, SmiClass::Sys));
        assert!(matches!(path.hops[0].kind, HopKind::NvLink { links: 2 }));
        // Its own PCIe path crosses sockets at Skylake's figure of 10 GB/s.
        let own = t.pcie_path(bus("0000:10:00.0"), bus("0000:82:00.0"));
        assert_eq!(own.expected.unwrap().gbps(), 10.0);
        assert_eq!(t.path(bus("0000:81:00.0"), bus("0000:82:00.0")).nccl, NcclClass::Pix);
    }

    #[test]
    fn unknown_devices_and_cycles_do_not_hang_or_panic() {
        let mut t = mesh();
        assert_eq!(t.path(bus("0000:10:00.0"), bus("0000:ff:00.0")).smi, SmiClass::Unknown);
        // A corrupt source could make a device its own grandparent.
        t.pci_devices[1].parent = Some(bus("0000:81:00.0"));
        assert_eq!(t.ancestors(bus("0000:82:00.0")).len(), 3);
        let _ = t.path(bus("0000:82:00.0"), bus("0000:81:00.0"));
    }
}
