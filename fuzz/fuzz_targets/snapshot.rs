//! Any bytes into the snapshot reader (YAML or JSON): never a panic, and
//! nesting is refused before the parser sees it (bounded time).
#![no_main]

use libfuzzer_sys::fuzz_target;
use topo_model::Snapshot;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Snapshot::from_text(text, "fuzz");
    }
});
