//! [`Topology`] to NCCL topology XML, in the shape `NCCL_TOPO_FILE` accepts.

use std::fmt::Write;

use topo_model::{BridgeRole, BusId, Nic, NvLinkRemote, PciDevice, Topology};

/// Writes the topology as NCCL topology XML. Root ports and switch downstream
/// ports are folded away as NCCL does. From sysfs, only devices NCCL cares about
/// (GPUs, NICs, NVSwitches) and the bridges above them are written; everything a
/// topology file listed is written back.
pub fn to_xml(topology: &Topology) -> String {
    // A device with no known root complex came from a topology file, which lists
    // only what NCCL uses: keep all of it. From sysfs, keep what matters to GPUs.
    let relevant = topology.relevant_devices();
    let exported: Vec<&PciDevice> = topology
        .pci_devices
        .iter()
        .filter(|d| !matches!(d.bridge, Some(BridgeRole::RootPort | BridgeRole::SwitchDownstream)))
        .filter(|d| relevant.contains(&d.bus_id) || d.host_bridge.is_none())
        .collect();
    let mut out = String::from("<system version=\"1\">\n");
    // Each top-level device goes under the `<cpu>` of its own NUMA node; devices
    // with none known go under a `numaid="-1"` one.
    let home = |d: &PciDevice| d.numa_node.filter(|n| topology.numa_node(*n).is_some()).unwrap_or(-1);
    let mut numa_ids: Vec<i32> = topology.numa_nodes.iter().map(|n| n.id).collect();
    let homeless = exported.iter().any(|d| export_parent(topology, &exported, d).is_none() && home(d) == -1);
    let cpu_known = topology.cpu != topo_model::CpuInfo::default();
    if !numa_ids.contains(&-1) && (homeless || (numa_ids.is_empty() && (!topology.nics.is_empty() || cpu_known))) {
        numa_ids.push(-1);
    }
    for (position, numa) in numa_ids.iter().enumerate() {
        let mut attributes = vec![("numaid", numa.to_string())];
        if let Some(node) = topology.numa_node(*numa).filter(|n| !n.cpus.is_empty()) {
            attributes.push(("affinity", node.cpus.to_mask()));
        }
        let cpu = &topology.cpu;
        attributes.extend(cpu.arch.clone().map(|v| ("arch", v)));
        attributes.extend(cpu.vendor.clone().map(|v| ("vendor", v)));
        attributes.extend(cpu.family.map(|v| ("familyid", v.to_string())));
        attributes.extend(cpu.model.map(|v| ("modelid", v.to_string())));
        open(&mut out, 1, "cpu", &attributes, false);
        for device in exported.iter().filter(|d| export_parent(topology, &exported, d).is_none()) {
            if home(device) == *numa {
                write_pci(&mut out, topology, &exported, device, 2);
            }
        }
        // Socket NICs have no PCI location; NCCL lists them under the CPU.
        let socket_nics: Vec<&Nic> = topology.nics.iter().filter(|n| n.bus_id.is_none()).collect();
        if position == 0 && !socket_nics.is_empty() {
            write_nic(&mut out, &socket_nics, 2);
        }
        close(&mut out, 1, "cpu");
    }
    out.push_str("</system>\n");
    out
}

/// The nearest exported ancestor.
fn export_parent(topology: &Topology, exported: &[&PciDevice], device: &PciDevice) -> Option<BusId> {
    topology
        .ancestors(device.bus_id)
        .into_iter()
        .skip(1)
        .find(|a| exported.iter().any(|e| e.bus_id == a.bus_id))
        .map(|a| a.bus_id)
}

fn write_pci(out: &mut String, topology: &Topology, exported: &[&PciDevice], device: &PciDevice, depth: usize) {
    let mut attributes = vec![("busid", device.bus_id.to_string())];
    let hex4 = |v: u16| format!("0x{v:04x}");
    attributes.extend(device.class.map(|c| ("class", format!("0x{c:06x}"))));
    attributes.extend(device.vendor.map(|v| ("vendor", hex4(v))));
    attributes.extend(device.device.map(|v| ("device", hex4(v))));
    attributes.extend(device.subsystem_vendor.map(|v| ("subsystem_vendor", hex4(v))));
    attributes.extend(device.subsystem_device.map(|v| ("subsystem_device", hex4(v))));
    let link = if device.link.max.is_known() { device.link.max } else { device.link.current };
    attributes.push(("link_speed", link.speed_text()));
    attributes.push(("link_width", link.width.unwrap_or(0).to_string()));

    let children: Vec<&&PciDevice> =
        exported.iter().filter(|d| export_parent(topology, exported, d) == Some(device.bus_id)).collect();
    // A GPU with no facts of its own is written as a bare `<pci>` of display
    // class (a skeleton file's form) only when that is how it will read back.
    let implied_by_class = device.class.is_some_and(topo_model::topology::pci_class::is_display)
        && device.vendor.is_none_or(|v| v == topo_model::topology::NVIDIA_VENDOR);
    let gpu = topology.gpu(device.bus_id).filter(|g| {
        g.index.is_some()
            || g.sm.is_some()
            || g.nccl_rank.is_some()
            || g.gdr.is_some()
            || topology.nvlink_count(g.bus_id) > 0
            || !implied_by_class
    });
    // A NIC named by its bus ID is one a skeleton file listed by class alone.
    let nics: Vec<&Nic> = topology
        .nics
        .iter()
        .filter(|n| n.bus_id == Some(device.bus_id) && n.name != device.bus_id.to_string())
        .collect();
    let empty = children.is_empty() && gpu.is_none() && nics.is_empty();
    open(out, depth, "pci", &attributes, empty);
    if empty {
        return;
    }
    if let Some(gpu) = gpu {
        let mut gpu_attributes = Vec::new();
        gpu_attributes.extend(gpu.index.map(|v| ("dev", v.to_string())));
        gpu_attributes.extend(gpu.sm.map(|v| ("sm", v.to_string())));
        gpu_attributes.extend(gpu.nccl_rank.map(|v| ("rank", v.to_string())));
        gpu_attributes.extend(gpu.gdr.map(|v| ("gdr", u8::from(v).to_string())));
        let links: Vec<_> = topology.nvlinks_of(gpu.bus_id).collect();
        open(out, depth + 1, "gpu", &gpu_attributes, links.is_empty());
        for link in &links {
            let (target, tclass) = match link.remote {
                NvLinkRemote::NvSwitch(s) => (s.to_string(), "0x068000".to_string()),
                NvLinkRemote::Gpu(g) => {
                    // The peer's own class when it is a display class (what the importer reads as a
                    // GPU peer); a peer whose PCI entry says otherwise still goes out as a GPU.
                    let class = topology
                        .pci(g)
                        .and_then(|d| d.class)
                        .filter(|c| topo_model::topology::pci_class::is_display(*c))
                        .unwrap_or(0x030200);
                    (g.to_string(), format!("0x{class:06x}"))
                }
                NvLinkRemote::Cpu => (gpu.bus_id.to_string(), "0x068001".to_string()),
            };
            let attributes = [("target", target), ("count", link.links.to_string()), ("tclass", tclass)];
            open(out, depth + 2, "nvlink", &attributes, true);
        }
        if !links.is_empty() {
            close(out, depth + 1, "gpu");
        }
    }
    if !nics.is_empty() {
        write_nic(out, &nics, depth + 1);
    }
    for child in children {
        write_pci(out, topology, exported, child, depth + 1);
    }
    close(out, depth, "pci");
}

fn write_nic(out: &mut String, nics: &[&Nic], depth: usize) {
    open(out, depth, "nic", &[], false);
    for nic in nics {
        let port = nic.ports.first();
        let mut attributes = vec![("name", nic.name.clone())];
        attributes.extend(nic.nccl_dev.map(|v| ("dev", v.to_string())));
        attributes.extend(port.and_then(|p| p.rate_gbps).map(|r| ("speed", format!("{}", (r * 1000.0).round()))));
        attributes.push(("port", port.map_or(0, |p| p.port).to_string()));
        attributes.push(("latency", "0.000000".to_string()));
        attributes.extend(nic.node_guid.clone().map(|g| ("guid", g)));
        attributes.extend(nic.nccl_maxconn.map(|v| ("maxconn", v.to_string())));
        attributes.extend(nic.gdr.map(|v| ("gdr", u8::from(v).to_string())));
        open(out, depth + 1, "net", &attributes, true);
    }
    close(out, depth, "nic");
}

fn open(out: &mut String, depth: usize, tag: &str, attributes: &[(&str, String)], empty: bool) {
    let _ = write!(out, "{:width$}<{tag}", "", width = depth * 2);
    for (key, value) in attributes {
        let _ = write!(out, " {key}=\"{}\"", escape(value));
    }
    out.push_str(if empty { "/>\n" } else { ">\n" });
}

fn close(out: &mut String, depth: usize, tag: &str) {
    let _ = writeln!(out, "{:width$}</{tag}>", "", width = depth * 2);
}

fn escape(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            c => escaped.push(c),
        }
    }
    escaped
}
