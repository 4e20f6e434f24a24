//! Any bytes into the Flight Recorder reader (pickle and JSON), the NCCL RAS
//! parser and the Inspector parser: errors are fine, panics are not.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = topo_parsers::flight_recorder::read_dump("fuzz_0", data);
    let text = String::from_utf8_lossy(data);
    let _ = topo_parsers::ras::parse("fuzz", &text);
    if let Ok(records) = topo_parsers::inspector::parse("fuzz", &text) {
        let _ = topo_parsers::inspector::stragglers(&records);
    }
});
