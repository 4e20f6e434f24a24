//! `topo-probes`: hardware discovery. Today: the sysfs reader, which works on any
//! Linux machine (GPU or not) and on captured sysfs trees via a configurable root.

pub mod live;
pub mod nvml;
pub mod sysfs;
