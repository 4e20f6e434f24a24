//! Live measurements on the GPUs of this machine: copies through the CUDA
//! driver (`cuda`, `copies`) and NCCL collectives (`nccl`, `collectives`).
//! Only raw figures come out of here; what they should have been is decided
//! by the caller from the topology.

pub mod affinity;
pub mod collectives;
pub mod copies;
pub mod cuda;
pub mod nccl;
pub mod pairwise;

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("{call} failed: {message}")]
    Cuda { call: &'static str, message: String },
    #[error("{call} failed: {message} (NCCL error {code}; NCCL_DEBUG=WARN says more)")]
    Nccl { call: &'static str, code: i32, message: String },
    #[error("cannot load {library}: {message}")]
    Library { library: String, message: String },
    #[error("{0}")]
    Usage(String),
}
