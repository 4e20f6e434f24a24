//! Any bytes into the `nvidia-smi nvlink -s` / `-e` reader: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use topo_parsers::nvlink::parse;

fuzz_target!(|data: &[u8]| {
    let _ = parse(&String::from_utf8_lossy(data));
});
