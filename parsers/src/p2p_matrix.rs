//! `nvidia-smi topo -p2p r|w|n|a|p`: the peer-to-peer capability matrix
//! (`OK`, `CNS`, `GNS`, `TNS`, `NS`, `DR`, `U`), tab- or space-aligned. The
//! output does not say which capability was asked for (read, write, NVLink,
//! atomics, prop), so the caller says it.

/// The matrix's words and NVML's `nvmlGpuP2PStatus_t` names for them (the
/// words `NvmlPair::p2p` records), from nvidia-smi's own legend.
pub const STATUSES: &[(&str, &str)] = &[
    ("OK", "ok"),
    ("CNS", "chipset-not-supported"),
    ("GNS", "gpu-not-supported"),
    ("TNS", "topology-not-supported"),
    ("NS", "not-supported"),
    ("DR", "disabled-by-regkey"),
    ("U", "unknown"),
];

/// Larger text is refused; a 64-GPU matrix is a few KiB.
pub const MAX_P2P_BYTES: usize = 4 << 20;
/// GPUs kept (the header's labels).
pub const MAX_GPUS: usize = 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum P2pError {
    #[error("{size} bytes is larger than any nvidia-smi topo -p2p output ({MAX_P2P_BYTES} bytes at most)")]
    TooLarge { size: usize },
    #[error("no `GPU0 GPU1 ...` header followed by P2P status rows")]
    NoMatrix,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct P2pMatrix {
    /// GPU indices from the header (`GPU0` -> 0).
    pub gpus: Vec<u32>,
    /// `cells[i][j]`: NVML's word for row GPU `gpus[i]` to column GPU `gpus[j]`;
    /// `None` on the diagonal and where a cell was not a status word.
    pub cells: Vec<Vec<Option<&'static str>>>,
}

fn status(word: &str) -> Option<&'static str> {
    STATUSES.iter().find(|(w, _)| *w == word).map(|(_, nvml)| *nvml)
}

fn gpu_label(token: &str) -> Option<u32> {
    token.strip_prefix("GPU")?.parse().ok()
}

/// Whether `text` holds a P2P matrix (and not `nvidia-smi topo -m`, whose
/// header looks the same).
pub fn looks_like_p2p(text: &str) -> bool {
    text.contains("= Status Ok") || parse(text).is_ok_and(|m| m.cells.iter().flatten().any(Option::is_some))
}

pub fn parse(text: &str) -> Result<P2pMatrix, P2pError> {
    if text.len() > MAX_P2P_BYTES {
        return Err(P2pError::TooLarge { size: text.len() });
    }
    let mut lines = text.lines();
    let gpus: Vec<u32> = loop {
        let line = lines.next().ok_or(P2pError::NoMatrix)?;
        let labels: Option<Vec<u32>> = line.split_whitespace().map(gpu_label).collect();
        match labels {
            Some(labels) if !labels.is_empty() && line.starts_with(char::is_whitespace) => {
                break labels.into_iter().take(MAX_GPUS).collect();
            }
            _ => continue,
        }
    };
    let mut cells = Vec::new();
    for (row, line) in lines.filter(|l| !l.trim().is_empty()).take(gpus.len()).enumerate() {
        let mut tokens = line.split_whitespace();
        if tokens.next().and_then(gpu_label) != gpus.get(row).copied() {
            break;
        }
        let values: Vec<&str> = tokens.collect();
        if values.len() != gpus.len() || values.iter().any(|v| *v != "X" && status(v).is_none()) {
            return Err(P2pError::NoMatrix);
        }
        cells.push(values.iter().map(|v| status(v)).collect());
    }
    if cells.len() != gpus.len() {
        return Err(P2pError::NoMatrix);
    }
    Ok(P2pMatrix { gpus, cells })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_refusals() {
        let m = parse(" \tGPU0\tGPU1\t\n GPU0\tX\tGNS\t\n GPU1\tCNS\tX\t\n").unwrap();
        assert_eq!(m.cells[0][1], Some("gpu-not-supported"));
        assert_eq!(m.cells[1][0], Some("chipset-not-supported"));
        assert_eq!(m.cells[0][0], None);
        assert_eq!(parse("\tGPU0\tGPU1\nGPU0\t X \tPHB\nGPU1\tPHB\t X \n"), Err(P2pError::NoMatrix));
    }
}
