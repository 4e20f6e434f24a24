//! Any bytes into the NCCL log reader: never a panic, whatever the lines hold,
//! and the report always serialises. Each line is also read as a COLL line
//! twice, alone and with the memo of the lines before it: the answers agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use topo_parsers::nccl_log::message::{CollMemo, collective, collective_after};
use topo_parsers::nccl_log::{LogParser, feed};

fuzz_target!(|data: &[u8]| {
    let mut parser = LogParser::new();
    feed(std::io::Cursor::new(data), &mut parser).expect("reading memory cannot fail");
    let report = parser.finish();
    assert!(report.lines as usize <= data.len() + 1);
    let _ = format!("{report:?}");

    let mut memo = CollMemo::default();
    for line in data.split(|b| *b == b'\n').filter_map(|line| std::str::from_utf8(line).ok()) {
        assert_eq!(collective_after(line, &mut memo), collective(line), "{line:?}");
    }
});
