//! The GPU/NIC connection matrix of `nvidia-smi topo -m`, computed from a topology.

use serde::Serialize;

use crate::bus_id::BusId;
use crate::path::SmiClass;
use crate::topology::Topology;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EndpointKind {
    Gpu,
    Nic,
}

/// A row (and column) of the matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Endpoint {
    /// `GPU0`, `NIC3`.
    pub label: String,
    pub kind: EndpointKind,
    pub bus_id: BusId,
    /// The NIC's device name or the GPU's model, when known.
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Matrix {
    pub endpoints: Vec<Endpoint>,
    /// `cells[i][j]`: the class between endpoint `i` and `j`.
    pub cells: Vec<Vec<SmiClass>>,
}

impl Topology {
    /// GPUs in index order, then the RDMA NICs that have a PCI location, as
    /// NIC0.. in name order (`mlx5_2` before `mlx5_10`), as nvidia-smi numbers
    /// them. Plain Ethernet ports (NCCL's socket transport) are not NICs here.
    pub fn matrix_endpoints(&self) -> Vec<Endpoint> {
        let gpus = self.gpus_in_order().into_iter().enumerate().map(|(i, g)| Endpoint {
            label: format!("GPU{}", g.index.unwrap_or(i as u32)),
            kind: EndpointKind::Gpu,
            bus_id: g.bus_id,
            name: g.name.clone(),
        });
        let mut nics: Vec<(&crate::Nic, BusId)> = self
            .nics
            .iter()
            .filter(|n| n.kind != crate::NicKind::Ethernet)
            .filter_map(|n| n.bus_id.map(|b| (n, b)))
            .collect();
        nics.sort_by_key(|(n, _)| natural_key(&n.name));
        let nics = nics.into_iter().enumerate().map(|(i, (nic, bus_id))| Endpoint {
            label: format!("NIC{i}"),
            kind: EndpointKind::Nic,
            bus_id,
            name: Some(nic.name.clone()),
        });
        gpus.chain(nics).collect()
    }

    /// The full matrix. Two NICs on one PCI function (ports of one card) are PIX,
    /// as nvidia-smi shows them.
    pub fn matrix(&self) -> Matrix {
        let endpoints = self.matrix_endpoints();
        let cells = endpoints
            .iter()
            .enumerate()
            .map(|(i, row)| {
                endpoints
                    .iter()
                    .enumerate()
                    .map(|(j, column)| match (i == j, row.bus_id == column.bus_id) {
                        (true, _) => SmiClass::Same,
                        (false, true) => SmiClass::Pix,
                        (false, false) => self.smi_class(row.bus_id, column.bus_id),
                    })
                    .collect()
            })
            .collect();
        Matrix { endpoints, cells }
    }
}

/// Sort key that orders `mlx5_10` after `mlx5_9`: the text before the trailing
/// number, then the number.
pub fn natural_key(name: &str) -> (String, u64, String) {
    // Byte index just past the last non-digit; digits are ASCII, so this is
    // always a character boundary, whatever the name holds.
    let digits_at = name.char_indices().rev().find(|(_, c)| !c.is_ascii_digit()).map_or(0, |(i, c)| i + c.len_utf8());
    let (stem, number) = name.split_at(digits_at);
    (stem.to_string(), number.parse().unwrap_or(u64::MAX), name.to_string())
}

#[cfg(test)]
mod tests {
    use super::natural_key;

    #[test]
    fn natural_order_and_any_text() {
        let mut names = vec!["mlx5_10", "mlx5_9", "mlx5_bond_0", "ib0"];
        names.sort_by_key(|n| natural_key(n));
        assert_eq!(names, ["ib0", "mlx5_9", "mlx5_10", "mlx5_bond_0"]);
        // Found by the fuzzer: a multi-byte character right before the digits.
        assert_eq!(natural_key("eth\u{fffd}12").1, 12);
        assert_eq!(natural_key("\u{fffd}").0, "\u{fffd}");
        assert_eq!(natural_key("99999999999999999999999").1, u64::MAX);
    }
}
