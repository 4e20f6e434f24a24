//! Any bytes into the `nvidia-smi topo -p2p` matrix reader: never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use topo_parsers::p2p_matrix::{looks_like_p2p, parse};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = looks_like_p2p(&text);
    let _ = parse(&text);
});
