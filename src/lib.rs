//! `topo`: how the GPUs of a machine are wired, what NCCL made of it, and
//! whether the wires carry what they should.
//!
//! The binary is thin glue over this library: [`cli`] parses arguments,
//! [`sources`] turns what the user pointed at into a Snapshot, [`views`]
//! render it.

pub mod bundle;
pub mod checks;
pub mod cli;
pub mod cluster;
pub mod diagnose;
pub mod examples;
pub mod input;
pub mod job_inputs;
pub mod output;
pub mod preflight;
pub mod probe;
pub mod sources;
pub mod views;
