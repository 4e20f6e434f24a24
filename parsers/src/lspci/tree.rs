//! `lspci -t` / `lspci -tv` / `lspci -tvnn`: the PCI tree as ASCII art.
//!
//! Each device is a `DD.F` token drawn after a `-`; a bridge's token is followed
//! by `-[BB]` or `-[BB-SS]` (its secondary bus, then the subordinate one) and its
//! first child on the same line; further children sit on later lines in the
//! same column. A root bus starts with `[DDDD:BB]`. With `-v` the rest of the
//! line after two spaces is the device's name.

use topo_model::BusId;

use super::LspciError;

/// One function as the tree draws it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeDevice {
    pub bus_id: BusId,
    /// The bridge above it; `None` on a root bus.
    pub parent: Option<BusId>,
    /// `pci0000:00`, the root bus it descends from (sysfs's name for it).
    pub host_bridge: String,
    /// Secondary bus when the function is a bridge.
    pub secondary_bus: Option<u8>,
    /// Vendor and device name (`-tv`); empty for plain `-t`.
    pub description: String,
}

/// Where the children drawn at one column belong.
#[derive(Debug, Clone)]
struct Context {
    column: usize,
    domain: u32,
    bus: u8,
    parent: Option<BusId>,
    host_bridge: String,
}

/// Whether `text` looks like `lspci -t` output (a `[DDDD:BB]` root bus followed
/// by a device token).
pub fn looks_like_tree(text: &str) -> bool {
    text.lines().any(|line| {
        line.split("-[").skip(1).any(|after| {
            after.split_once("]-").is_some_and(|(inside, rest)| {
                root_bus(inside).is_some() && rest.trim_start_matches(['-', '+']).get(2..3) == Some(".")
            })
        })
    })
}

/// `0000:00` -> (domain, bus).
fn root_bus(text: &str) -> Option<(u32, u8)> {
    let (domain, bus) = text.split_once(':')?;
    if domain.is_empty() || domain.len() > 8 || bus.len() != 2 {
        return None;
    }
    Some((u32::from_str_radix(domain, 16).ok()?, u8::from_str_radix(bus, 16).ok()?))
}

/// `21` or `61-73` -> the secondary bus.
fn bus_range(text: &str) -> Option<u8> {
    let first = text.split('-').next()?;
    if first.len() != 2 || text.len() > 5 {
        return None;
    }
    u8::from_str_radix(first, 16).ok()
}

/// `1c.7` at `at`: device and function.
fn device_token(bytes: &[u8], at: usize) -> Option<(u8, u8)> {
    let token = bytes.get(at..at + 4)?;
    let hex = |b: u8| (b as char).to_digit(16);
    let (d1, d2) = (hex(token[0])?, hex(token[1])?);
    if token[2] != b'.' || !(b'0'..=b'7').contains(&token[3]) {
        return None;
    }
    // Must end there: end of line, a space (name follows) or a `-` (tree goes on).
    match bytes.get(at + 4) {
        None | Some(b' ' | b'-' | b'\t' | b'\r') => Some(((d1 * 16 + d2) as u8, token[3] - b'0')),
        _ => None,
    }
}

/// Reads the whole tree. Lines that draw nothing (blank, prompts) are skipped;
/// a device whose column matches no open bridge is an error, since guessing its
/// parent would give a wrong topology.
pub fn parse_tree(text: &str) -> Result<Vec<TreeDevice>, LspciError> {
    let mut devices: Vec<TreeDevice> = Vec::new();
    let mut contexts: Vec<Context> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let bytes = line.as_bytes();
        let mut pending_root: Option<(u32, u8)> = None;
        let mut previous: Option<usize> = None;
        let mut at = 0;
        while at < bytes.len() {
            match bytes[at] {
                b'[' if at > 0 && bytes[at - 1] == b'-' => {
                    let Some(close) = line[at..].find(']').map(|c| at + c) else { break };
                    let inside = &line[at + 1..close];
                    if let Some(root) = root_bus(inside) {
                        pending_root = Some(root);
                    } else if let (Some(bus), Some(index)) = (bus_range(inside), previous)
                        && let Some(device) = devices.get_mut(index)
                    {
                        device.secondary_bus = Some(bus);
                    }
                    at = close + 1;
                }
                b'-' if device_token(bytes, at + 1).is_some() => {
                    let column = at + 1;
                    let Some((device, function)) = device_token(bytes, column) else { break };
                    let context = if let Some((domain, bus)) = pending_root.take() {
                        Context { column, domain, bus, parent: None, host_bridge: format!("pci{domain:04x}:{bus:02x}") }
                    } else if let Some(index) = previous {
                        let Some(bridge) = devices.get(index) else { break };
                        let Some(bus) = bridge.secondary_bus else {
                            return Err(LspciError::Tree {
                                line: number + 1,
                                message: format!("{} has a child but no bus number", bridge.bus_id),
                            });
                        };
                        Context {
                            column,
                            domain: bridge.bus_id.domain,
                            bus,
                            parent: Some(bridge.bus_id),
                            host_bridge: bridge.host_bridge.clone(),
                        }
                    } else {
                        contexts.iter().find(|c| c.column == column).cloned().ok_or_else(|| LspciError::Tree {
                            line: number + 1,
                            message: format!("device at column {column} hangs under no bridge drawn above it"),
                        })?
                    };
                    contexts.retain(|c| c.column < column);
                    contexts.push(context.clone());
                    let bus_id = BusId { domain: context.domain, bus: context.bus, device, function };
                    let rest = line.get(column + 4..).unwrap_or("");
                    let description = if rest.starts_with(' ') || rest.starts_with('\t') {
                        rest.trim().to_string()
                    } else {
                        String::new()
                    };
                    devices.push(TreeDevice {
                        bus_id,
                        parent: context.parent,
                        host_bridge: context.host_bridge,
                        secondary_bus: None,
                        description: description.clone(),
                    });
                    previous = Some(devices.len() - 1);
                    if !description.is_empty() {
                        break;
                    }
                    at = column + 4;
                }
                _ => at += 1,
            }
        }
    }
    if devices.is_empty() {
        return Err(LspciError::NoDevices);
    }
    Ok(devices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_under_nothing_is_an_error() {
        assert!(matches!(parse_tree("     +-03.0\n"), Err(LspciError::Tree { .. })));
        assert!(matches!(parse_tree("hello\n"), Err(LspciError::NoDevices)));
    }
}
