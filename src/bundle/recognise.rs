//! What a pasted file is, told by its content alone (file names are whatever
//! the ticket's author chose). Checked most specific first: a P2P matrix and
//! `nvidia-smi topo -m` share their header line, and nvidia-smi -q text has
//! `GPU ...:` lines that a loose nvlink reader would take for its own.

use topo_parsers::{ibstat, lspci, nccl_graph, nvbandwidth, nvidia_smi_q, nvlink, p2p_matrix};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Lspci,
    Ibstat,
    IbvDevinfo,
    NvidiaSmiTopo,
    NvidiaSmiQuery,
    NvidiaSmiNvlink,
    NvidiaSmiP2p,
    Nvbandwidth,
    NcclGraph,
}

fn smi_topo(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.starts_with(char::is_whitespace) && l.split_whitespace().next() == Some("GPU0"))
}

pub(super) fn recognise(text: &str) -> Option<Kind> {
    Some(if nvidia_smi_q::looks_like_query(text) {
        Kind::NvidiaSmiQuery
    } else if nccl_graph::looks_like_graph_dump(text) {
        Kind::NcclGraph
    } else if nvbandwidth::looks_like_nvbandwidth(text) {
        Kind::Nvbandwidth
    } else if p2p_matrix::looks_like_p2p(text) {
        Kind::NvidiaSmiP2p
    } else if smi_topo(text) {
        Kind::NvidiaSmiTopo
    } else if nvlink::looks_like_nvlink(text) {
        Kind::NvidiaSmiNvlink
    } else if lspci::looks_like_tree(text) || lspci::looks_like_verbose(text) {
        Kind::Lspci
    } else if ibstat::looks_like_ibv_devinfo(text) {
        Kind::IbvDevinfo
    } else if ibstat::looks_like_ibstat(text) {
        Kind::Ibstat
    } else {
        return None;
    })
}
