//! NCCL's topology dump in the log (NCCL_DEBUG_SUBSYS=GRAPH, every rank): the
//! path lines `GPU/0-4e000 :GPU/0-4e000 (0/5000.0/LOC) GPU/0-4f000 (1/240.0/NVL)
//! CPU/0-0 (1/24.0/PHB) NET/0-0 (3/24.0/PXB)` (2.22+; before that `GPU/4E000`
//! without the system id). They tell a node's GPU groups and NCCL's path type
//! between every pair when no topology file is at hand.

use topo_model::BusId;
use topo_model::nccl::LoggedPath;

/// The node a path line starts from, and its paths to GPUs and NICs.
pub fn paths(message: &str) -> Option<(&str, Vec<LoggedPath>)> {
    let (from, rest) = message.split_once(" :")?;
    let from = from.trim();
    if !from.starts_with("GPU/") || from.contains(' ') {
        return None;
    }
    let from_bus = bus_of(from);
    let mut out = Vec::new();
    let mut tokens = rest.split_whitespace();
    while let (Some(to), Some(spec)) = (tokens.next(), tokens.next()) {
        let inner = spec.strip_prefix('(')?.strip_suffix(')')?;
        let mut fields = inner.split('/');
        let (_hops, bw, kind) = (fields.next()?, fields.next()?, fields.next()?);
        let bw: f64 = bw.parse().ok().filter(|b: &f64| b.is_finite())?;
        if to == from || !(to.starts_with("GPU/") || to.starts_with("NET/")) {
            continue;
        }
        out.push(LoggedPath {
            host: None,
            from: from.to_string(),
            to: to.to_string(),
            from_bus,
            to_bus: bus_of(to),
            path_type: kind.to_string(),
            bw,
        });
    }
    Some((from, out))
}

/// `GPU/0-4e000` or `GPU/4E000` -> `0000:4e:00.0`; NET ids are not bus IDs.
fn bus_of(node: &str) -> Option<BusId> {
    let id = node.strip_prefix("GPU/")?;
    let local = id.rsplit('-').next()?;
    BusId::from_nccl_int(&local.to_ascii_lowercase()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_eras_of_path_lines() {
        let (from, paths) =
            paths("GPU/0-4e000 :GPU/0-4e000 (0/5000.0/LOC) GPU/0-4f000 (1/240.0/NVL) CPU/0-0 (1/24.0/PHB) NET/0-0 (3/24.0/PXB) ")
                .unwrap();
        assert_eq!(from, "GPU/0-4e000");
        let kinds: Vec<(&str, &str)> = paths.iter().map(|p| (p.to.as_str(), p.path_type.as_str())).collect();
        assert_eq!(kinds, [("GPU/0-4f000", "NVL"), ("NET/0-0", "PXB")]);
        assert_eq!(paths[0].to_bus.map(|b| b.to_string()).as_deref(), Some("0000:4f:00.0"));
        let (_, old) = paths_of("GPU/17000 :GPU/17000 (0/5000.000000/LOC) GPU/65000 (2/20.000000/SYS) ");
        assert_eq!(old[0].path_type, "SYS");
        assert!(super::paths("GPU/0 : not a path line").is_none());
        assert!(super::paths("Channel 00 : 0 1").is_none());
    }

    fn paths_of(line: &str) -> (&str, Vec<LoggedPath>) {
        super::paths(line).unwrap()
    }
}
