//! NCCL debug logs (`NCCL_DEBUG=INFO`), read as a stream into an
//! [`NcclReport`](topo_model::nccl::NcclReport).

mod bytes;
pub mod catalogue;
mod coll_line;
mod communicator;
mod framework;
mod input;
mod limits;
pub mod message;
mod messages;
pub mod pattern;
pub mod prefix;
mod prefix_cache;
pub mod releases;
mod report;
mod topology_lines;
mod tuning_table;
mod wrapper;

pub use communicator::transport_kind;
pub use input::{LogError, feed, read_lines, read_stream};
pub use report::LogParser;

/// Whether one line is NCCL's (an `NCCL INFO`/`WARN` line, old formats
/// included) or a framework's error carrying NCCL's words: how a file of
/// another kind (a RAS status pasted with the job's errors) is seen to hold a
/// log too.
pub fn is_log_line(line: &str) -> bool {
    prefix::split(line).level != prefix::Level::Bare || framework::recognise(line).is_some()
}
