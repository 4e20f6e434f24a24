//! NCCL debug logs (`NCCL_DEBUG=INFO`), read as a stream into an
//! [`NcclReport`](topo_model::nccl::NcclReport).

mod bytes;
mod coll_line;
mod input;
pub mod message;
pub mod prefix;
mod prefix_cache;
mod report;
mod tuning_table;

pub use input::{LogError, feed, read_lines, read_stream};
pub use report::{LogParser, transport_kind};
