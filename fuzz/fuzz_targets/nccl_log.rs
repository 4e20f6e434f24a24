//! Any bytes into the NCCL log reader: never a panic, whatever the lines hold,
//! and the report always serialises.
#![no_main]

use libfuzzer_sys::fuzz_target;
use topo_parsers::nccl_log::{LogParser, feed};

fuzz_target!(|data: &[u8]| {
    let mut parser = LogParser::new();
    feed(std::io::Cursor::new(data), &mut parser).expect("reading memory cannot fail");
    let report = parser.finish();
    assert!(report.lines as usize <= data.len() + 1);
    let _ = format!("{report:?}");
});
