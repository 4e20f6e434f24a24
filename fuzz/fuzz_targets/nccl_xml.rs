//! Any bytes into the NCCL topology XML importer: never a panic, and whatever
//! imports must survive export and re-import unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use topo_parsers::nccl_xml::{import, to_xml};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(first) = import(&text, "fuzz") {
        let exported = to_xml(&first.topology);
        let second = import(&exported, "export").expect("our own export must parse");
        assert_eq!(first.topology, second.topology, "round trip changed the model");
    }
});
