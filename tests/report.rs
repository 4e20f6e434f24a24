//! `topo report`: the one-file HTML report of the bundled real machines, a
//! recorded node with probe results and real NCCL logs; hostile host names
//! and log lines stay text; and a real headless browser (Debian's chromium)
//! opens the file with no console error and draws the picture in the
//! path-class colours (the screenshot is decoded and its pixels counted).

#[path = "support/tools.rs"]
mod tools;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::Command as Cli;
use topo_model::Snapshot;

const STANDIN_PROBE: &str = "tests/fixtures/snapshots/asus-esc8000a-e12-standin-probe.yaml";
const RING_LOG: &str = "tests/fixtures/nccl-logs/046-nccl27to213-1node-4gpu-single-process-p2p-direct-8ch.log";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `topo report ARGS -o DIR/report.html` and returns the file's text.
fn report(dir: &Path, args: &[&str]) -> String {
    let out = dir.join("report.html");
    Cli::cargo_bin("topo").unwrap().current_dir(root()).arg("report").args(args).arg("-o").arg(&out).assert().success();
    std::fs::read_to_string(out).unwrap()
}

/// The text between `<section id="ID">` and its `</section>`.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html.find(&format!("<section id=\"{id}\">")).unwrap_or_else(|| panic!("no section {id}"));
    let end = start + html[start..].find("</section>").unwrap();
    &html[start..end + "</section>".len()]
}

/// Nothing in the file makes a browser fetch anything or run anything (text
/// from the input cannot hold a raw `<` or `"`, so these can only be markup).
fn assert_self_contained(html: &str) {
    let lower = html.to_ascii_lowercase();
    for needle in ["<script", "<img", "<link", "<iframe", "<object", "<embed", "src=\"", "href=\"", "url(", "@import"] {
        assert!(!lower.contains(needle), "{needle:?} in the report");
    }
    assert!(lower.contains("content-security-policy"));
}

#[test]
fn a_bundled_machine_in_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let html = report(dir.path(), &["--example", "h100-sxm-8gpu"]);
    assert_self_contained(&html);
    // Written beside the target and renamed: nothing else is left in the directory.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["report.html"]);
    for id in ["summary", "matrix", "picture", "pcie", "findings"] {
        section(&html, id);
    }
    let matrix = section(&html, "matrix");
    assert!(matrix.contains("<td class=\"c-nv\" title=\"GPU0 - GPU1: NV18\">NV18</td>"), "{matrix}");
    assert!(matrix.contains("<td class=\"c-sys\" title=\"GPU0 - NIC0: SYS\">SYS</td>"), "{matrix}");
    let picture = section(&html, "picture");
    // 8 GPUs, 4 hidden NVSwitches, one NVLink bundle from every GPU to every switch.
    assert_eq!(picture.matches("<title>GPU ").count(), 32, "{picture}");
    assert_eq!(picture.matches("NVSwitch</text>").count(), 4);
    assert!(picture.contains("inter-socket (SYS)"));
    insta::assert_snapshot!("h100-matrix", matrix);
}

#[test]
fn a_pcie_machine_picture() {
    let dir = tempfile::tempdir().unwrap();
    let html = report(dir.path(), &["--example", "rtx6000ada-4gpu-pcie"]);
    assert_self_contained(&html);
    insta::assert_snapshot!("rtx6000ada-picture", section(&html, "picture"));
}

#[test]
fn probe_figures_rings_and_findings() {
    let dir = tempfile::tempdir().unwrap();
    let html = report(dir.path(), &["--from", STANDIN_PROBE, "--nccl-log", RING_LOG]);
    assert_self_contained(&html);
    let probe = section(&html, "probe");
    // GPU 3's host link at a third of its speed: 33 %, marked below the threshold.
    assert!(
        probe.contains("<tr><td>GPU 3 H2D</td><td>PCIe Gen4 x16</td><td class=\"num\">8.9 GB/s</td><td class=\"num\">27.1 GB/s</td><td class=\"num bad\">33 %</td></tr>"),
        "{probe}"
    );
    let rings = section(&html, "nccl");
    assert!(rings.contains("0 &rarr; 1 &rarr; 2 &rarr; 3 &rarr; 0"), "{rings}");
    let findings = section(&html, "findings");
    assert!(findings.contains("<code>probe-slow-link</code>"), "{findings}");
    assert!(findings.contains("<b>Why</b>") && findings.contains("<b>Fix</b>"));
    insta::assert_snapshot!("standin-probe-figures", probe);
    insta::assert_snapshot!("standin-rings", rings);
    insta::assert_snapshot!("standin-findings", findings);
}

/// A host name and a log line written to break out of the page: both shown
/// as text, no element made from them (checked in the file and, when
/// chromium is here, in the DOM the browser built).
#[test]
fn hostile_host_name_and_log_line_stay_text() {
    let dir = tempfile::tempdir().unwrap();
    let mut snapshot = Snapshot::load(&root().join(STANDIN_PROBE)).unwrap();
    snapshot.host.hostname = Some("<script>alert(1)</script>\"><img src=x onerror=alert(1)>".into());
    let node = dir.path().join("node.yaml");
    std::fs::write(&node, snapshot.to_yaml()).unwrap();
    let log = dir.path().join("job.log");
    let mut text = std::fs::read_to_string(root().join(RING_LOG)).unwrap();
    text.push_str(
        "como:60725:60750 [0] NCCL WARN Call to connect returned Connection refused </pre><img src=x onerror=alert(2)><script>alert(3)</script>\n",
    );
    std::fs::write(&log, text).unwrap();
    let html = report(dir.path(), &["--from", node.to_str().unwrap(), "--nccl-log", log.to_str().unwrap()]);
    assert_self_contained(&html);
    assert!(html.contains(
        "<title>topo report: &lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(1)&gt;</title>"
    ));
    assert!(
        html.contains("&lt;/pre&gt;&lt;img src=x onerror=alert(2)&gt;&lt;script&gt;alert(3)&lt;/script&gt;"),
        "the log line is shown"
    );
    let Some(chromium) = tools::require("chromium", "chromium") else { return };
    let output = tools::output_within(
        Command::new(chromium)
            .args(["--headless", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr", "--v=0", "--dump-dom"])
            .arg(format!("file://{}", dir.path().join("report.html").display())),
        120,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages:\n{}", console.join("\n"));
    let dom = String::from_utf8_lossy(&output.stdout).to_ascii_lowercase();
    assert!(dom.contains("<svg") && dom.contains("id=\"findings\""), "the browser built the page:\n{dom}");
    assert!(!dom.contains("<script") && !dom.contains("<img"), "an element from the input:\n{dom}");
}

/// Chromium loads the report (no console message: no error, no blocked
/// load), and the screenshot shows the picture drawn: GPU boxes, and inside
/// the picture's band NVLink-green and inter-socket-red pixels.
#[test]
fn a_real_browser_draws_the_picture() {
    let Some(chromium) = tools::require("chromium", "chromium") else { return };
    let dir = tempfile::tempdir().unwrap();
    report(dir.path(), &["--example", "h100-sxm-8gpu"]);
    let png = dir.path().join("shot.png");
    let output = tools::output_within(
        Command::new(chromium)
            .args([
                "--headless",
                "--disable-gpu",
                "--no-sandbox",
                "--hide-scrollbars",
                "--enable-logging=stderr",
                "--v=0",
            ])
            .arg(format!("--screenshot={}", png.display()))
            .arg("--window-size=1400,1500")
            .arg(format!("file://{}", dir.path().join("report.html").display())),
        120,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages:\n{}", console.join("\n"));
    assert!(png.is_file(), "no screenshot:\n{stderr}");

    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    let channels = frame.color_type.samples();
    let (width, height) = (frame.width as usize, frame.height as usize);
    let at = |x: usize, y: usize| {
        let i = (y * width + x) * channels;
        (pixels[i], pixels[i + 1], pixels[i + 2])
    };
    let near = |(r, g, b): (u8, u8, u8), hex: &str| {
        let want = u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap();
        let (wr, wg, wb) = ((want >> 16) as u8, (want >> 8) as u8, want as u8);
        r.abs_diff(wr) <= 4 && g.abs_diff(wg) <= 4 && b.abs_diff(wb) <= 4
    };
    // The GPU boxes' fill is drawn only in the picture: it locates the band.
    let gpu_rows: Vec<usize> =
        (0..height).filter(|&y| (0..width).filter(|&x| near(at(x, y), "#c8e6c9")).count() > 50).collect();
    assert!(!gpu_rows.is_empty(), "no GPU box drawn");
    let (top, bottom) = (gpu_rows[0].saturating_sub(160), (gpu_rows[gpu_rows.len() - 1] + 120).min(height));
    let count = |hex: &str| {
        (top..bottom).flat_map(|y| (0..width).map(move |x| (x, y))).filter(|&(x, y)| near(at(x, y), hex)).count()
    };
    let (green, red) = (count("#2e8b57"), count("#c62828"));
    assert!(green > 500, "NVLink edges: {green} green pixels in rows {top}..{bottom}");
    assert!(red > 50, "the inter-socket link: {red} red pixels in rows {top}..{bottom}");
}

/// `--from` takes what `topo show --from` takes: pasted lspci output (a
/// bundle directory) and an NCCL topology XML; a directory of snapshots is a
/// cluster, refused with exit 2.
#[test]
fn from_pastes_and_nccl_xml() {
    let dir = tempfile::tempdir().unwrap();
    let pasted = dir.path().join("pasted");
    std::fs::create_dir(&pasted).unwrap();
    for (name, fixture) in
        [("tv.txt", "asus-esc8000a-e12-lspci-tv.txt"), ("vvv.txt", "asus-esc8000a-e12-lspci-vvv.txt")]
    {
        std::fs::copy(root().join("tests/fixtures/lspci").join(fixture), pasted.join(name)).unwrap();
    }
    let html = report(dir.path(), &["--from", pasted.to_str().unwrap()]);
    let picture = section(&html, "picture");
    // The four GPUs and the paths to them; not the hundred functions of unknown class.
    assert_eq!(picture.matches("fill=\"#c8e6c9\"").count(), 4, "{picture}");
    assert!(picture.matches("<g class=\"node\">").count() < 20, "{picture}");
    assert!(section(&html, "pcie").contains("1022:14a4"), "the text tree keeps them");

    let html = report(dir.path(), &["--from", "tests/fixtures/nccl-topo/aws-p4d-24xlarge-a100x8.xml"]);
    assert!(section(&html, "matrix").contains("<td class=\"c-pix\" title=\"GPU0 - GPU1: PIX\">PIX</td>"));
    assert_self_contained(&html);

    // The V100 hybrid cube mesh: NVLinks straight between GPUs, one arc per pair.
    let html = report(dir.path(), &["--from", "tests/fixtures/nvidia-smi-topo/v100-sxm2-x8-1ib-oneflow.txt"]);
    let picture = section(&html, "picture");
    assert_eq!(picture.matches("<path class=\"nvlink\"").count(), 16, "{picture}");
    assert!(picture.contains("<title>NV2</title>"));

    Cli::cargo_bin("topo")
        .unwrap()
        .current_dir(root())
        .args(["report", "--from", "tests/fixtures/snapshots", "-o"])
        .arg(dir.path().join("cluster.html"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("a directory of snapshots is a cluster"));
}

/// Ring hops coloured by the hardware path under them. Log 001 ran two A100s
/// of one host; no published machine file has their bus IDs, so (as in
/// tests/nccl_cli.rs) a hand-made NCCL topology file describes that pair: NV12.
#[test]
fn ring_hops_carry_their_hardware_path() {
    let dir = tempfile::tempdir().unwrap();
    let gpu = |bus: &str, dev: u32, peer: &str| {
        format!(
            r#"<pci busid="{bus}" class="0x030200" vendor="0x10de" device="0x20b2" link_speed="16.0 GT/s PCIe" link_width="16"><gpu dev="{dev}" sm="80" rank="{dev}" gdr="1"><nvlink target="{peer}" count="12" tclass="0x030200"/></gpu></pci>"#
        )
    };
    let xml = format!(
        r#"<system version="1"><cpu numaid="0" affinity="ff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="106">{}{}</cpu></system>"#,
        gpu("0000:17:00.0", 0, "0000:65:00.0"),
        gpu("0000:65:00.0", 1, "0000:17:00.0")
    );
    let machine = dir.path().join("machine.xml");
    std::fs::write(&machine, xml).unwrap();
    let log = root().join("tests/fixtures/nccl-logs/001-nccl2277-1node-2gpu-a100-nvlink-graph-alloc-full.log");
    let html = report(dir.path(), &["--from", machine.to_str().unwrap(), "--nccl-log", log.to_str().unwrap()]);
    let rings = section(&html, "nccl");
    assert!(rings.contains("<span class=\"hop c-nv\">0&rarr;1 "), "{rings}");
    assert!(rings.contains("(NV12)</span>"), "{rings}");
    assert!(!rings.contains("&rarr;1 ?"), "{rings}");
}
