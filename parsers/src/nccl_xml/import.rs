//! NCCL topology XML to [`Topology`].

use std::path::Path;

use roxmltree::{Document, Node};
use topo_model::pcie::{parse_link_speed, parse_link_width};
use topo_model::topology::pci_class;
use topo_model::{
    BridgeRole, BusId, CpuSet, Gpu, Nic, NicKind, NicPort, NumaNode, NvLinkBundle, NvLinkRemote, NvSwitch, PciDevice,
    PcieLink, PcieLinkSpec, Topology,
};

/// Files above this are refused before parsing; the largest real dump is a few
/// hundred kilobytes.
pub const MAX_XML_BYTES: u64 = 64 * 1024 * 1024;

/// A topology plus the warnings raised while reading it (fields that could not
/// be read and were left unknown).
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub topology: Topology,
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum XmlError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: {size} bytes or more: larger than any NCCL topology file ({MAX_XML_BYTES} bytes at most)")]
    TooLarge { path: String, size: u64 },
    #[error("{path}:{line}:{column}: malformed XML: {message}")]
    Malformed { path: String, line: u32, column: u32, message: String },
    #[error("{path}: {what}; refused (the limit is documented in docs/hostile-input.md)")]
    OverLimit { path: String, what: String },
    #[error("{path}:{line}: not an NCCL topology file: the root element is <{found}>, expected <system>")]
    NotNcclTopology { path: String, line: u32, found: String },
}

/// Reads an NCCL topology XML file.
pub fn import_file(path: &Path) -> Result<Imported, XmlError> {
    let name = path.display().to_string();
    let io = |source| XmlError::Io { path: name.clone(), source };
    // Read with a limit, not by the size the file reports (0 for /dev/zero, FIFOs).
    let Some(bytes) = topo_model::bounded::read_capped(path, MAX_XML_BYTES).map_err(io)? else {
        return Err(XmlError::TooLarge { path: name, size: MAX_XML_BYTES + 1 });
    };
    let text = String::from_utf8_lossy(&bytes);
    import(&text, &name)
}

/// The most attributes one element may carry: a real `<pci>` or `<net>` has
/// about a dozen. The XML parser checks each new attribute against the ones
/// before it, so 500 k attributes took minutes.
pub const MAX_ATTRIBUTES: usize = 64;

/// The most GPUs one topology may hold: one operating system image (an HGX
/// board has 8, the largest single-image systems 256). Every view compares
/// GPU pairs, so the work grows with the square of this.
pub const MAX_GPUS: usize = 256;

/// The most elements in one file; the largest real dump has a few hundred.
pub const MAX_ELEMENTS: usize = 100_000;

/// A linear scan before parsing: refuses crafted shapes whose parsing or
/// rendering grows faster than the file (see the limits above).
fn check_shape(text: &str, name: &str) -> Result<(), XmlError> {
    let over = |what: String| Err(XmlError::OverLimit { path: name.to_string(), what });
    let bytes = text.as_bytes();
    let (mut elements, mut gpus) = (0usize, 0usize);
    let mut i = 0;
    while let Some(offset) = memchr::memchr(b'<', &bytes[i..]) {
        let start = i + offset + 1;
        if !bytes.get(start).is_some_and(|b| b.is_ascii_alphabetic()) {
            // A comment, declaration or closing tag: no attributes to count.
            i = start;
            continue;
        }
        {
            elements += 1;
            if bytes[start..].starts_with(b"gpu") && bytes.get(start + 3).is_some_and(|b| !b.is_ascii_alphanumeric()) {
                gpus += 1;
            }
        }
        // Attributes of this tag: `=` outside quoted values, up to its `>`.
        let (mut attributes, mut quote, mut j) = (0usize, None, start);
        while let Some(&b) = bytes.get(j) {
            match (quote, b) {
                (None, b'>') => break,
                (None, b'"' | b'\'') => quote = Some(b),
                (None, b'=') => attributes += 1,
                (Some(q), _) if b == q => quote = None,
                _ => {}
            }
            j += 1;
        }
        if attributes > MAX_ATTRIBUTES {
            return over(format!("an element with more than {MAX_ATTRIBUTES} attributes"));
        }
        i = j.max(start);
        if i >= bytes.len() {
            break;
        }
    }
    if elements > MAX_ELEMENTS {
        return over(format!("{elements} elements, more than {MAX_ELEMENTS}"));
    }
    if gpus > MAX_GPUS {
        return over(format!("{gpus} GPUs, more than {MAX_GPUS} in one topology"));
    }
    Ok(())
}

/// Parses NCCL topology XML text; `name` is used in messages.
pub fn import(text: &str, name: &str) -> Result<Imported, XmlError> {
    check_shape(text, name)?;
    let document = Document::parse(text).map_err(|e| {
        let position = e.pos();
        XmlError::Malformed { path: name.to_string(), line: position.row, column: position.col, message: e.to_string() }
    })?;
    let root = document.root_element();
    if root.tag_name().name() != "system" {
        return Err(XmlError::NotNcclTopology {
            path: name.to_string(),
            line: document.text_pos_at(root.range().start).row,
            found: root.tag_name().name().to_string(),
        });
    }
    let mut reader = Reader { name, document: &document, topology: Topology::default(), warnings: Vec::new() };
    for cpu in root.children().filter(|n| n.has_tag_name("cpu")) {
        reader.cpu(cpu);
    }
    reader.finish();
    Ok(Imported { topology: reader.topology, warnings: reader.warnings })
}

struct Reader<'a, 'input> {
    name: &'a str,
    document: &'a Document<'input>,
    topology: Topology,
    warnings: Vec<String>,
}

impl Reader<'_, '_> {
    fn warn(&mut self, node: Node, message: String) {
        let line = self.document.text_pos_at(node.range().start).row;
        self.warnings.push(format!("{}:{line}: {message}", self.name));
    }

    /// An attribute parsed by `parse`; a value that does not parse is a warning
    /// and reads as unknown.
    fn attr<T>(&mut self, node: Node, key: &str, parse: impl Fn(&str) -> Option<T>) -> Option<T> {
        let text = node.attribute(key)?;
        let value = parse(text);
        if value.is_none() {
            self.warn(node, format!("<{}> {key}=\"{text}\" is not readable; taken as unknown", node.tag_name().name()));
        }
        value
    }

    fn cpu(&mut self, cpu: Node) {
        let id = self.attr(cpu, "numaid", |s| s.trim().parse::<i32>().ok()).unwrap_or(-1);
        let cpus = self.attr(cpu, "affinity", |s| CpuSet::parse_mask(s).ok()).unwrap_or_default();
        if self.topology.cpu.vendor.is_none() {
            self.topology.cpu.arch = cpu.attribute("arch").map(str::to_string);
            self.topology.cpu.vendor = cpu.attribute("vendor").map(str::to_string);
            self.topology.cpu.family = self.attr(cpu, "familyid", |s| s.trim().parse().ok());
            self.topology.cpu.model = self.attr(cpu, "modelid", |s| s.trim().parse().ok());
        }
        if self.topology.numa_nodes.iter().any(|n| n.id == id && id >= 0) {
            self.warn(cpu, format!("NUMA node {id} is listed twice; its CPUs are merged"));
        }
        // `numaid="-1"` with no CPUs names no NUMA node: only a place to hang devices.
        match self.topology.numa_nodes.iter_mut().find(|n| n.id == id) {
            Some(node) => node.cpus = CpuSet::new([node.cpus.cpus(), cpus.cpus()].concat()),
            None if id < 0 && cpus.is_empty() => {}
            None => self.topology.numa_nodes.push(NumaNode { id, cpus, ..NumaNode::default() }),
        }
        let numa = (id >= 0).then_some(id);
        for child in cpu.children().filter(Node::is_element) {
            match child.tag_name().name() {
                "pci" => self.pci(child, None, numa),
                "nic" => {
                    self.nic(child, None, None);
                }
                _ => {}
            }
        }
    }

    fn pci(&mut self, node: Node, parent: Option<BusId>, numa: Option<i32>) {
        let Some(bus_id) = self.attr(node, "busid", |s| s.parse::<BusId>().ok()) else {
            self.warn(node, "<pci> without a readable busid; skipped with everything below it".to_string());
            return;
        };
        if self.topology.pci(bus_id).is_some() {
            self.warn(node, format!("PCI device {bus_id} is listed twice; the second is skipped"));
            return;
        }
        let hex16 = |s: &str| u16::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok();
        let class = self.attr(node, "class", |s| u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok());
        let speed = self.attr(node, "link_speed", |s| parse_link_speed(s).ok()).flatten();
        let width = self.attr(node, "link_width", |s| parse_link_width(s).ok()).flatten();
        // A `<pci>` of unknown class is a switch if anything was read below it
        // (decided after its children, since unreadable ones are skipped).
        let bridge = match class {
            Some(c) if pci_class::base(c) == pci_class::HOST_BRIDGE => Some(BridgeRole::HostBridge),
            Some(c) if pci_class::is_pci_bridge(c) => Some(BridgeRole::Switch),
            _ => None,
        };
        let device = PciDevice {
            bus_id,
            parent,
            bridge,
            class,
            vendor: self.attr(node, "vendor", hex16),
            device: self.attr(node, "device", hex16),
            subsystem_vendor: self.attr(node, "subsystem_vendor", hex16),
            subsystem_device: self.attr(node, "subsystem_device", hex16),
            numa_node: numa,
            // NCCL records one speed per link: the capability of both ends
            // (or NVML's current figure); current state is not in the file.
            link: PcieLink { current: PcieLinkSpec::default(), max: PcieLinkSpec::new(speed, width) },
            ..PciDevice::default()
        };
        let is_gpu = class.is_some_and(pci_class::is_display) && device.vendor.is_none_or(|v| v == 0x10de);
        let is_nic = class.is_some_and(pci_class::is_network);
        let vendor = device.vendor;
        self.topology.pci_devices.push(device);
        if device_is_nvswitch(class, vendor) {
            self.topology.nvswitches.push(NvSwitch { bus_id, visible: true });
        }

        let devices_before_children = self.topology.pci_devices.len();
        let mut saw_gpu = false;
        let mut saw_nic = false;
        for child in node.children().filter(Node::is_element) {
            match child.tag_name().name() {
                "pci" => self.pci(child, Some(bus_id), numa),
                "gpu" => {
                    saw_gpu = true;
                    self.gpu(child, bus_id);
                }
                "nic" => saw_nic |= self.nic(child, Some(bus_id), class) > 0,
                _ => {}
            }
        }
        if class.is_none()
            && self.topology.pci_devices.len() > devices_before_children
            && let Some(device) = self.topology.pci_devices.iter_mut().find(|d| d.bus_id == bus_id)
        {
            device.bridge = Some(BridgeRole::Switch);
        }
        // Skeleton files list GPUs and NICs by class alone; NCCL fills in the rest.
        if is_gpu && !saw_gpu {
            let name = self.product_name(bus_id);
            self.topology.gpus.push(Gpu { bus_id, name, ..Gpu::default() });
        }
        if is_nic && !saw_nic {
            self.topology.nics.push(Nic {
                name: bus_id.to_string(),
                bus_id: Some(bus_id),
                kind: nic_kind(class, vendor, 0),
                ..Nic::default()
            });
        }
    }

    fn gpu(&mut self, node: Node, bus_id: BusId) {
        if self.topology.gpu(bus_id).is_some() {
            self.warn(node, format!("a second <gpu> for PCI device {bus_id}; skipped"));
            return;
        }
        let gpu = Gpu {
            index: self.attr(node, "dev", |s| s.trim().parse().ok()),
            bus_id,
            name: self.product_name(bus_id),
            sm: self.attr(node, "sm", |s| s.trim().parse().ok()),
            nccl_rank: self.attr(node, "rank", |s| s.trim().parse().ok()),
            gdr: self.attr(node, "gdr", parse_flag),
        };
        self.topology.gpus.push(gpu);
        for link in node.children().filter(|c| c.has_tag_name("nvlink")) {
            self.nvlink(link, bus_id);
        }
    }

    fn nvlink(&mut self, node: Node, gpu: BusId) {
        let target = self.attr(node, "target", |s| s.parse::<BusId>().ok());
        let links = self.attr(node, "count", |s| s.trim().parse::<u32>().ok()).unwrap_or(1);
        let tclass = self.attr(node, "tclass", |s| u32::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok());
        let remote = match (target, tclass) {
            (_, Some(0x068001)) => NvLinkRemote::Cpu,
            (Some(t), Some(c)) if pci_class::is_display(c) => {
                if t == gpu {
                    self.warn(node, format!("NVLink of GPU {gpu} names the GPU itself as its peer; ignored"));
                    return;
                }
                NvLinkRemote::Gpu(t)
            }
            (Some(t), _) => NvLinkRemote::NvSwitch(t),
            (None, _) => {
                self.warn(node, format!("NVLink of GPU {gpu} has no readable target; ignored"));
                return;
            }
        };
        if let NvLinkRemote::NvSwitch(switch) = remote
            && !self.topology.nvswitches.iter().any(|s| s.bus_id == switch)
        {
            self.topology.nvswitches.push(NvSwitch { bus_id: switch, visible: false });
        }
        self.topology.nvlinks.push(NvLinkBundle { gpu, remote, links });
    }

    /// Reads the `<net>`s of a `<nic>`; returns how many NICs it added.
    fn nic(&mut self, node: Node, bus_id: Option<BusId>, class: Option<u32>) -> usize {
        let before = self.topology.nics.len();
        let vendor = bus_id.and_then(|b| self.topology.pci(b)).and_then(|d| d.vendor);
        for net in node.children().filter(|c| c.has_tag_name("net")) {
            let Some(name) = net.attribute("name").map(str::to_string) else {
                self.warn(net, "<net> without a name; skipped".to_string());
                continue;
            };
            // Socket NIC lists are repeated under every <cpu> in some dumps.
            if self.topology.nics.iter().any(|n| n.name == name && n.bus_id == bus_id) {
                continue;
            }
            let port = self.attr(net, "port", |s| s.trim().parse::<u32>().ok()).unwrap_or(0);
            let speed_mbps = self.attr(net, "speed", |s| s.trim().parse::<f64>().ok());
            let nic = Nic {
                name,
                bus_id,
                kind: if bus_id.is_none() { NicKind::Ethernet } else { nic_kind(class, vendor, port) },
                ports: vec![NicPort { port, rate_gbps: speed_mbps.map(|s| s / 1000.0), ..NicPort::default() }],
                node_guid: net.attribute("guid").map(str::to_string),
                gdr: self.attr(net, "gdr", parse_flag),
                nccl_dev: self.attr(net, "dev", |s| s.trim().parse().ok()),
                nccl_maxconn: self.attr(net, "maxconn", |s| s.trim().parse().ok()),
                ..Nic::default()
            };
            self.topology.nics.push(nic);
        }
        self.topology.nics.len() - before
    }

    /// The product name for an NVIDIA device ID the file gives.
    fn product_name(&self, bus_id: BusId) -> Option<String> {
        let device = self.topology.pci(bus_id)?;
        if device.vendor != Some(topo_model::topology::NVIDIA_VENDOR) {
            return None;
        }
        topo_model::topology::nvidia_product_name(device.device?).map(str::to_string)
    }

    /// Marks NVSwitches that exist as PCI devices as visible, and puts the lists
    /// in canonical order.
    fn finish(&mut self) {
        let known: Vec<BusId> = self.topology.pci_devices.iter().map(|d| d.bus_id).collect();
        for switch in &mut self.topology.nvswitches {
            switch.visible |= known.contains(&switch.bus_id);
        }
        self.topology.canonicalize();
    }
}

fn parse_flag(text: &str) -> Option<bool> {
    match text.trim() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

fn device_is_nvswitch(class: Option<u32>, vendor: Option<u16>) -> bool {
    vendor == Some(topo_model::topology::NVIDIA_VENDOR)
        && class.is_some_and(|c| pci_class::base(c) == pci_class::OTHER_BRIDGE)
}

/// What kind of network device a PCI NIC is, from what the file says.
fn nic_kind(class: Option<u32>, vendor: Option<u16>, port: u32) -> NicKind {
    match (class.map(pci_class::base), vendor) {
        (Some(0x0207), _) => NicKind::Infiniband,
        (_, Some(0x1d0f)) => NicKind::Efa,
        (_, Some(0x15b3)) => NicKind::Roce,
        _ if port > 0 => NicKind::Unknown,
        _ => NicKind::Ethernet,
    }
}

#[cfg(test)]
mod shape_limits {
    use super::*;

    /// Hand-made shapes that took minutes before (issue 18): refused at once,
    /// while every real dump under tests/fixtures/nccl-topo still reads.
    #[test]
    fn crafted_shapes_are_refused_and_real_files_pass() {
        let attributes: String = (0..500_000).map(|i| format!(" a{i}=\"1\"")).collect();
        let text = format!("<system version=\"1\"><cpu{attributes}/></system>");
        let started = std::time::Instant::now();
        assert!(matches!(import(&text, "x"), Err(XmlError::OverLimit { .. })));
        let gpus: String = (0..4000)
            .map(|i| {
                format!(
                    "<pci busid=\"0000:{:02x}:{:02x}.0\"><gpu dev=\"{i}\" sm=\"90\" rank=\"{i}\"/></pci>",
                    i / 32,
                    i % 32
                )
            })
            .collect();
        let text = format!("<system version=\"1\"><cpu numaid=\"0\">{gpus}</cpu></system>");
        let error = import(&text, "x").unwrap_err().to_string();
        assert!(error.contains("4000 GPUs, more than 256"), "{error}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/nccl-topo");
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            check_shape(&text, "real").unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
}

#[cfg(test)]
mod fuzz_regressions {
    use super::*;

    /// Inputs the `nccl_xml` fuzz target found (fuzz/regressions/nccl_xml/):
    /// whatever imports survives export and re-import unchanged. The first was
    /// an NVLink to a "GPU" whose PCI entry is a host bridge: exported with the
    /// bridge's class, it came back as an NVSwitch.
    #[test]
    fn fuzz_found_inputs_round_trip() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/regressions/nccl_xml");
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            if let Ok(first) = import(&text, "fuzz") {
                let second = import(&crate::nccl_xml::to_xml(&first.topology), "export").unwrap();
                assert_eq!(first.topology, second.topology, "{}", path.display());
            }
        }
    }
}
