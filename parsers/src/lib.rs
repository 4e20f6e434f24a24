//! `topo-parsers`: readers (and writers) for what GPU machines and NCCL produce.
//! Pure text in, model types out; nothing here touches hardware.

pub mod flight_recorder;
pub mod ibstat;
pub mod inspector;
pub mod lspci;
pub mod nccl_graph;
pub mod nccl_log;
pub mod nccl_tests;
pub mod nccl_xml;
pub mod nvbandwidth;
pub mod nvidia_smi;
pub mod nvidia_smi_q;
pub mod nvlink;
pub mod p2p_matrix;
pub mod ras;
