//! Any bytes into the `nvidia-smi -q` / `-q -x` reader: never a panic,
//! bounded time and memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use topo_parsers::nvidia_smi_q::parse;

fuzz_target!(|data: &[u8]| {
    let _ = parse(&String::from_utf8_lossy(data));
});
