//! `ibstat` (infiniband-diags) and `ibv_devinfo` (rdma-core) text: per RDMA
//! device its firmware, node GUID and ports (state, physical state, rate,
//! link layer), as the [`Nic`] records the sysfs probe fills from
//! `/sys/class/infiniband`. Neither tool prints the PCI address, so the
//! devices join the PCI tree by name (`lspci::name_nics_in_bus_order`).
//!
//! Port states are stored in sysfs's words (`ACTIVE`, `DOWN`, `INIT`,
//! `ARMED`), whichever tool said them: ibstat writes `Active`/`Down`/
//! `Initializing`, ibv_devinfo `PORT_ACTIVE (4)`.

use topo_model::{Nic, NicKind, NicPort};

/// Tool words for port states -> sysfs's word.
const PORT_STATES: &[(&str, &str)] = &[
    ("Active", "ACTIVE"),
    ("PORT_ACTIVE", "ACTIVE"),
    ("Down", "DOWN"),
    ("PORT_DOWN", "DOWN"),
    ("Initializing", "INIT"),
    ("PORT_INIT", "INIT"),
    ("Armed", "ARMED"),
    ("PORT_ARMED", "ARMED"),
    ("PORT_ACTIVE_DEFER", "ACTIVE_DEFER"),
];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IbError {
    #[error("no RDMA device found (neither `CA '...'` of ibstat nor `hca_id:` of ibv_devinfo)")]
    NoDevices,
}

/// Whether `text` holds ibstat output.
pub fn looks_like_ibstat(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with("CA '")) && text.contains("Port ")
}

/// Whether `text` holds ibv_devinfo output.
pub fn looks_like_ibv_devinfo(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with("hca_id:"))
}

/// `key: value` of a trimmed line (ibstat and ibv_devinfo both align with
/// spaces or tabs after the colon).
fn field(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.trim().split_once(':')?;
    Some((key.trim(), value.trim()))
}

fn state_word(text: &str) -> Option<String> {
    let word = text.split_whitespace().next()?;
    PORT_STATES.iter().find(|(tool, _)| *tool == word).map(|(_, sysfs)| sysfs.to_string())
}

fn kind_of(ports: &[NicPort]) -> NicKind {
    match ports.iter().find_map(|p| p.link_layer.as_deref()) {
        Some("InfiniBand") => NicKind::Infiniband,
        Some("Ethernet") => NicKind::Roce,
        _ => NicKind::Unknown,
    }
}

/// Reads ibstat output: `CA 'mlx5_0'` blocks with `Port N:` sub-blocks.
pub fn parse_ibstat(text: &str) -> Result<Vec<Nic>, IbError> {
    let mut nics: Vec<Nic> = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(name) = trimmed.strip_prefix("CA '").and_then(|r| r.strip_suffix('\'')) {
            nics.push(Nic { name: name.to_string(), ..Nic::default() });
            continue;
        }
        let Some(nic) = nics.last_mut() else { continue };
        if let Some(number) = trimmed.strip_prefix("Port ").and_then(|r| r.strip_suffix(':'))
            && let Ok(port) = number.trim().parse()
        {
            nic.ports.push(NicPort { port, ..NicPort::default() });
            continue;
        }
        let Some((key, value)) = field(trimmed) else { continue };
        match (key, nic.ports.last_mut()) {
            ("Firmware version", _) if !value.is_empty() => nic.firmware = Some(value.to_string()),
            ("Node GUID", _) => nic.node_guid = Some(value.trim_start_matches("0x").to_string()),
            ("State", Some(port)) => port.state = state_word(value),
            ("Physical state", Some(port)) => port.phys_state = Some(value.to_string()),
            // `Rate: 200` (Gb/s); some versions add ` Gb/sec (4X HDR)`.
            ("Rate", Some(port)) => {
                port.rate_gbps = value.split_whitespace().next().and_then(|r| r.parse().ok());
            }
            ("Link layer", Some(port)) => port.link_layer = Some(value.to_string()),
            _ => {}
        }
    }
    finish(nics)
}

/// Reads ibv_devinfo output (plain or `-v`): `hca_id:` blocks with `port:`
/// sub-blocks.
pub fn parse_ibv_devinfo(text: &str) -> Result<Vec<Nic>, IbError> {
    let mut nics: Vec<Nic> = Vec::new();
    for line in text.lines() {
        let Some((key, value)) = field(line) else { continue };
        if key == "hca_id" {
            nics.push(Nic { name: value.to_string(), ..Nic::default() });
            continue;
        }
        let Some(nic) = nics.last_mut() else { continue };
        match (key, nic.ports.last_mut()) {
            ("port", _) => {
                if let Ok(port) = value.parse() {
                    nic.ports.push(NicPort { port, ..NicPort::default() });
                }
            }
            ("fw_ver", _) => nic.firmware = Some(value.to_string()),
            ("node_guid", _) => nic.node_guid = Some(value.replace(':', "")),
            ("state", Some(port)) => port.state = state_word(value),
            ("link_layer", Some(port)) => port.link_layer = Some(value.to_string()),
            // `-v` only: `phys_state: LINK_UP (5)`, rate from width x speed.
            ("phys_state", Some(port)) => {
                port.phys_state = value.split_whitespace().next().map(|s| s.replace("LINK_UP", "LinkUp"))
            }
            _ => {}
        }
    }
    finish(nics)
}

fn finish(mut nics: Vec<Nic>) -> Result<Vec<Nic>, IbError> {
    if nics.is_empty() {
        return Err(IbError::NoDevices);
    }
    for nic in &mut nics {
        nic.kind = kind_of(&nic.ports);
    }
    Ok(nics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_in_sysfs_words() {
        assert_eq!(state_word("PORT_ACTIVE (4)").as_deref(), Some("ACTIVE"));
        assert_eq!(state_word("Initializing").as_deref(), Some("INIT"));
        assert_eq!(state_word("Sleeping"), None);
        assert_eq!(parse_ibstat("hello"), Err(IbError::NoDevices));
    }
}
