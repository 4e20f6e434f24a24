//! End to end: the real binary in a real terminal (tmux). Opens the UI on the
//! bundled 8-GPU example, switches through every screen by key, quits, and
//! checks the process exited with 0 and left the terminal as it found it
//! (alternate screen off, mouse reporting off). `.ci/run` installs tmux.

use std::process::Command;
use std::time::{Duration, Instant};

struct Tmux {
    socket: String,
}

impl Tmux {
    fn run(&self, args: &[&str]) -> String {
        let output =
            Command::new("tmux").arg("-L").arg(&self.socket).args(args).output().expect("tmux (installed by .ci/run)");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn pane(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "ui"])
    }

    /// Waits until the pane shows `text`, returning the pane.
    fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let pane = self.pane();
            if pane.contains(text) {
                return pane;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "waited 10 s for {text:?}; pane:\n{pane}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-L").arg(&self.socket).arg("kill-server").output();
    }
}

#[test]
fn switch_every_screen_and_quit_cleanly() {
    let tmux = Tmux { socket: format!("topo-test-{}", std::process::id()) };
    let binary = env!("CARGO_BIN_EXE_topo");
    let command = format!("{binary} show --example h100-sxm-8gpu; echo TOPO-EXITED $?; sleep 60");
    tmux.run(&["new-session", "-d", "-s", "ui", "-x", "120", "-y", "40", &command]);
    let first = tmux.wait_for("GPU7");
    assert!(first.contains("GPU7") && first.contains("H100 SXM5 80GB"), "{first}");
    for (key, marker) in [
        ("2", "Matrix (arrows move"),
        ("3", "PCIe tree:"),
        ("4", "NVLink (topology file"),
        ("5", "No NCCL report"),
        ("6", "No bandwidth measurements"),
        ("7", "Findings"),
        ("Tab", "Node"),
    ] {
        tmux.run(&["send-keys", "-t", "ui", key]);
        tmux.wait_for(marker);
    }
    tmux.run(&["send-keys", "-t", "ui", "q"]);
    let after = tmux.wait_for("TOPO-EXITED");
    assert!(after.contains("TOPO-EXITED 0"), "{after}");
    // The UI's screen is gone and the terminal modes are back.
    assert!(!after.contains("1 Overview"), "{after}");
    let modes = tmux.run(&["display-message", "-p", "-t", "ui", "#{alternate_on} #{mouse_any_flag}"]);
    assert_eq!(modes.trim(), "0 0");
}
