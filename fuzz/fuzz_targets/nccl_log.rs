//! Any bytes into the NCCL log reader: never a panic, whatever the lines hold,
//! and the report always serialises. The same bytes read a few at a time give
//! the same report (lines cut at read boundaries, COLL lines read straight
//! from the buffer or not), and each line read as a COLL line alone and with
//! the memo of the lines before it gives the same answer.
#![no_main]

use std::io::BufReader;

use libfuzzer_sys::fuzz_target;
use topo_parsers::nccl_log::message::{CollMemo, collective, collective_after};
use topo_parsers::nccl_log::{LogParser, feed};

fuzz_target!(|data: &[u8]| {
    let mut parser = LogParser::new();
    feed(std::io::Cursor::new(data), &mut parser).expect("reading memory cannot fail");
    let report = parser.finish();
    assert!(report.lines as usize <= data.len() + 1);
    let _ = format!("{report:?}");

    let mut parser = LogParser::new();
    feed(BufReader::with_capacity(61, std::io::Cursor::new(data)), &mut parser).expect("reading memory cannot fail");
    assert_eq!(parser.finish(), report);

    let mut memo = CollMemo::default();
    for line in data.split(|b| *b == b'\n').filter_map(|line| std::str::from_utf8(line).ok()) {
        assert_eq!(collective_after(line, &mut memo), collective(line), "{line:?}");
    }
});
