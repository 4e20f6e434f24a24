//! Loopback ports for the launchers and rendezvous that tests start. A port
//! the kernel hands out for `bind(…:0)` is free the moment it is asked for,
//! but the test lets it go before the job binds it, and the tests of one file
//! run at once: the kernel may hand the same port to a second test in that
//! gap, and two jobs on one port talk to each other's ranks. No port is
//! handed out twice by this process.
// Each test file uses some of these.
#![allow(dead_code)]

use std::collections::HashSet;
use std::sync::Mutex;

static GIVEN: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// How far above a launcher's port topo's rendezvous listens when
/// `TOPO_PORT` is not set (`MASTER_PORT` + `PORT_OFFSET`, src/probe/launcher.rs): a port
/// handed out keeps that one for its job too.
const TOPO_ABOVE_MASTER: u16 = 1;

/// A loopback port free now, never returned before by this process, and not
/// the rendezvous port of a job given an earlier one.
pub fn free_port() -> u16 {
    let mut given = GIVEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let given = given.get_or_insert_with(HashSet::new);
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let above = port.saturating_add(TOPO_ABOVE_MASTER);
        if !given.contains(&port) && !given.contains(&above) {
            given.extend([port, above]);
            return port;
        }
    }
}
