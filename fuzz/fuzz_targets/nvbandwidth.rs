//! Any bytes into the nvbandwidth reader (text and JSON): never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use topo_parsers::nvbandwidth::parse;

fuzz_target!(|data: &[u8]| {
    let _ = parse(&String::from_utf8_lossy(data));
});
