//! Any bytes into the NCCL graph dump reader: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use topo_parsers::nccl_graph::parse;

fuzz_target!(|data: &[u8]| {
    let _ = parse(&String::from_utf8_lossy(data), "fuzz");
});
