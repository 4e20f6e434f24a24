//! Any bytes into the `nvidia-smi topo -m` text reader and on to a topology:
//! never a panic, bounded time and memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use topo_parsers::nvidia_smi::{parse, to_topology};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(matrix) = parse(&text, "fuzz") {
        let _ = to_topology(&matrix);
    }
});
