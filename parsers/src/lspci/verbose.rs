//! `lspci -v`/`-vv`/`-vvv` (with or without `-nn`, `-D`, `-k`): one record per
//! function, a header line at column 0 and indented detail lines. Only what
//! the topology needs is kept: class, names and ids, NUMA node, link capability
//! and status, the PCIe port type, the bridge's bus numbers, ACS control and
//! the driver. Anything else between records (shell prompts, other commands'
//! output) is skipped.

use topo_model::BusId;
use topo_model::PcieLinkSpec;
use topo_model::bandwidth::pcie_generation_for_rate;

/// The PCIe port type from the `Express` capability line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortType {
    RootPort,
    Upstream,
    Downstream,
    Endpoint,
    /// PCI/PCI-X to PCIe bridges, root complex endpoints, event collectors.
    Other,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct VerboseDevice {
    pub bus_id: BusId,
    /// `VGA compatible controller`, `Ethernet controller`, ...
    pub class_name: String,
    /// 16-bit class code from `-nn` (`[0300]`).
    pub class_code: Option<u16>,
    /// `NVIDIA Corporation AD102GL [RTX 6000 Ada Generation]`, without ids and revision.
    pub description: String,
    /// From `-nn`: `[10de:26b1]`.
    pub vendor: Option<u16>,
    pub device: Option<u16>,
    pub numa_node: Option<i32>,
    pub link_max: PcieLinkSpec,
    pub link_current: PcieLinkSpec,
    pub port_type: Option<PortType>,
    pub secondary_bus: Option<u8>,
    /// ACS control: `ReqRedir+` or `CmpltRedir+`.
    pub acs_redirect: Option<bool>,
    pub driver: Option<String>,
}

/// `01:00.0` or `0000:01:00.0` at the start of `line`, then a space.
fn header_bus_id(line: &str) -> Option<(BusId, &str)> {
    let (address, rest) = line.split_once(' ')?;
    if !address.contains('.') || !address.contains(':') {
        return None;
    }
    address.parse::<BusId>().ok().map(|id| (id, rest))
}

/// Whether `text` has at least one `lspci -v` record (a header line followed
/// by an indented detail line).
pub fn looks_like_verbose(text: &str) -> bool {
    let mut lines = text.lines().take(400).peekable();
    while let Some(line) = lines.next() {
        if header_bus_id(line).is_some_and(|(_, rest)| rest.contains(':'))
            && lines.peek().is_some_and(|next| next.starts_with('\t') || next.starts_with("  "))
        {
            return true;
        }
    }
    false
}

/// A trailing `[hhhh]` or `[hhhh:hhhh]` group.
fn trailing_ids(text: &str) -> Option<(&str, &str)> {
    let trimmed = text.trim_end();
    let open = trimmed.rfind('[')?;
    let inside = trimmed.get(open + 1..trimmed.len().checked_sub(1)?)?;
    trimmed.ends_with(']').then_some((trimmed[..open].trim_end(), inside))
}

fn hex16(text: &str) -> Option<u16> {
    (text.len() == 4).then(|| u16::from_str_radix(text, 16).ok()).flatten()
}

fn parse_header(bus_id: BusId, rest: &str) -> VerboseDevice {
    let (class_part, mut description) = rest.split_once(": ").unwrap_or((rest, ""));
    let (class_name, class_code) = match trailing_ids(class_part) {
        Some((name, code)) if hex16(code).is_some() => (name, hex16(code)),
        _ => (class_part, None),
    };
    // Drop ` (rev a1)` and ` (prog-if 00 [VGA controller])` tails.
    for tail in [" (prog-if", " (rev"] {
        if let Some(at) = description.find(tail) {
            description = &description[..at];
        }
    }
    let (mut vendor, mut device) = (None, None);
    if let Some((name, ids)) = trailing_ids(description)
        && let Some((v, d)) = ids.split_once(':')
        && let (Some(v), Some(d)) = (hex16(v), hex16(d))
    {
        (vendor, device) = (Some(v), Some(d));
        description = name;
    }
    VerboseDevice {
        bus_id,
        class_name: class_name.trim().to_string(),
        class_code,
        description: description.trim().to_string(),
        vendor,
        device,
        ..VerboseDevice::default()
    }
}

/// `Speed 16GT/s` (also `Speed 2.5GT/s (downgraded)`, `Speed unknown`) and
/// `Width x16` in a LnkCap/LnkSta line.
fn link_spec(text: &str) -> PcieLinkSpec {
    let generation = text
        .split("Speed ")
        .nth(1)
        .and_then(|s| s.split("GT/s").next())
        .and_then(|rate| rate.trim().parse::<f64>().ok())
        .and_then(pcie_generation_for_rate);
    let width = text
        .split("Width x")
        .nth(1)
        .map(|s| s.chars().take_while(char::is_ascii_digit).collect::<String>())
        .and_then(|w| w.parse::<u8>().ok());
    PcieLinkSpec::new(generation, width)
}

fn port_type(text: &str) -> PortType {
    const TYPES: [(&str, PortType); 5] = [
        ("Root Port", PortType::RootPort),
        ("Upstream Port", PortType::Upstream),
        ("Downstream Port", PortType::Downstream),
        ("Legacy Endpoint", PortType::Endpoint),
        ("Endpoint", PortType::Endpoint),
    ];
    TYPES.iter().find(|(word, _)| text.contains(word)).map_or(PortType::Other, |(_, t)| *t)
}

fn apply_detail(device: &mut VerboseDevice, line: &str) {
    let line = line.trim();
    if let Some(node) = line.strip_prefix("NUMA node:") {
        device.numa_node = node.trim().parse().ok();
    } else if let Some(cap) = line.strip_prefix("LnkCap:") {
        device.link_max = link_spec(cap);
    } else if let Some(status) = line.strip_prefix("LnkSta:") {
        device.link_current = link_spec(status);
    } else if let Some(acs) = line.strip_prefix("ACSCtl:") {
        device.acs_redirect = Some(acs.contains("ReqRedir+") || acs.contains("CmpltRedir+"));
    } else if let Some(driver) = line.strip_prefix("Kernel driver in use:") {
        device.driver = Some(driver.trim().to_string());
    } else if let Some(bus) = line.strip_prefix("Bus: ") {
        device.secondary_bus = bus
            .split(", ")
            .find_map(|f| f.strip_prefix("secondary="))
            .and_then(|b| u8::from_str_radix(b.trim(), 16).ok());
    } else if line.starts_with("Capabilities:")
        && let Some(express) = line.split("] ").nth(1).and_then(|c| c.strip_prefix("Express"))
    {
        device.port_type = Some(port_type(express));
    }
}

/// Every record in the text, in order.
pub fn parse_verbose(text: &str) -> Vec<VerboseDevice> {
    let mut devices: Vec<VerboseDevice> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        let indented = line.starts_with('\t') || line.starts_with(' ');
        if !indented {
            open = false;
            if let Some((bus_id, rest)) = header_bus_id(line)
                && rest.contains(':')
            {
                devices.push(parse_header(bus_id, rest));
                open = true;
            }
            continue;
        }
        if open && let Some(device) = devices.last_mut() {
            apply_detail(device, line);
        }
    }
    devices
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_with_ids_and_revision() {
        let text = "0000:41:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)\n\tNUMA node: 1\n\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n\t\tLnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)\n";
        let device = &parse_verbose(text)[0];
        assert_eq!(device.class_code, Some(0x0302));
        assert_eq!((device.vendor, device.device), (Some(0x10de), Some(0x2330)));
        assert_eq!(device.description, "NVIDIA Corporation GH100 [H100 SXM5 80GB]");
        assert_eq!(device.numa_node, Some(1));
        assert_eq!(device.link_max, PcieLinkSpec::new(Some(5), Some(16)));
        assert_eq!(device.link_current, PcieLinkSpec::new(Some(5), Some(16)));
    }
}
