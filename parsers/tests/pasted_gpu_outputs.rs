//! The readers of pasted GPU tool output (`nvidia-smi -q`/`-q -x`, `nvidia-smi
//! nvlink -s`/`-e`, `nvidia-smi topo -p2p`, nvbandwidth, NCCL graph dumps) on
//! the real outputs in `tests/fixtures/` (origins in `tests/fixtures/SOURCES.md`).
//! Every real sample reads with no warning: none of them holds a value the
//! readers do not understand.

use std::path::PathBuf;

use topo_model::nvml::{Answer, Pending};
use topo_parsers::{nccl_graph, nvbandwidth, nvidia_smi_q, nvlink, p2p_matrix};

fn read(file: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn query(file: &str) -> nvidia_smi_q::Query {
    let text = read(file);
    assert!(nvidia_smi_q::looks_like_query(&text), "{file}");
    let query = nvidia_smi_q::parse(&text).unwrap();
    assert!(query.warnings.is_empty(), "{file}: {:?}", query.warnings);
    query
}

#[test]
fn nvidia_smi_q_xml_of_three_driver_generations() {
    // Driver 535 (DTD v12), A100 SXM4 in MIG mode, ECC on.
    let q = query("nvidia-smi-q/telegraf-a100-sxm4-v12.xml");
    assert_eq!(q.form, nvidia_smi_q::Form::Xml);
    assert_eq!(q.recording.driver_version, Answer::Ok("535.54.03".into()));
    assert_eq!(q.recording.cuda_version(), Answer::Ok("12.2".into()));
    let (_, d) = q.recording.answered().next().unwrap();
    assert_eq!(d.name, Answer::Ok("NVIDIA A100-SXM4-80GB".into()));
    assert_eq!(d.bus_id().map(|b| b.to_string()).as_deref(), Some("0000:01:00.0"));
    assert_eq!(d.uuid, Answer::Ok("GPU-513536b6-7d19-9063-b049-1e69664bb298".into()));
    assert_eq!(d.serial, Answer::Ok("1650522003820".into()));
    assert_eq!((d.pcie.gen_current.ok(), d.pcie.gen_max.ok()), (Some(&4), Some(&4)));
    assert_eq!((d.pcie.width_current.ok(), d.pcie.width_max.ok()), (Some(&16), Some(&16)));
    assert_eq!(d.mig_mode, Answer::Ok(Pending { current: true, pending: true }));
    assert_eq!(d.ecc.mode, Answer::Ok(Pending { current: true, pending: true }));
    assert_eq!((d.ecc.volatile_corrected.ok(), d.ecc.aggregate_uncorrected.ok()), (Some(&0), Some(&0)));
    assert_eq!(d.remapped_rows, Answer::NotSupported, "printed N/A in MIG mode");
    assert_eq!(d.clock_event_reasons, Answer::Ok(0));
    assert_eq!(d.fabric, Answer::NotSupported);
    assert_eq!(d.memory_total_bytes, Answer::Ok(81920 << 20));
    assert_eq!(d.power_usage_mw, Answer::Ok(67030));

    // Driver 515 (DTD v11): the older throttle-reason and power element names.
    let q = query("nvidia-smi-q/telegraf-tesla-t4.xml");
    let (_, d) = q.recording.answered().next().unwrap();
    assert_eq!(d.bus_id().map(|b| b.to_string()).as_deref(), Some("0000:00:1e.0"));
    assert_eq!(d.pcie.gen_current, Answer::Ok(3));
    assert!(d.clock_event_reasons.ok().is_some());
    assert!(d.power_limit_mw.ok().is_some());
    assert_eq!(d.retired_pages.single_bit, Answer::Ok(0));

    // Driver 580-era (DTD v13), a GeForce: ECC and MIG not supported.
    let q = query("nvidia-smi-q/telegraf-rtx-3080-v13.xml");
    let (_, d) = q.recording.answered().next().unwrap();
    assert_eq!(d.bus_id().map(|b| b.to_string()).as_deref(), Some("0000:0c:00.0"));
    assert_eq!(d.ecc.mode, Answer::NotSupported);
    assert_eq!(d.mig_mode, Answer::NotSupported);
}

#[test]
fn nvidia_smi_q_text_hopper_and_ampere() {
    let q = query("nvidia-smi-q/princeton-della-h100-nvidia-smi-a.txt");
    assert_eq!(q.form, nvidia_smi_q::Form::Text);
    let (_, d) = q.recording.answered().next().unwrap();
    assert_eq!(d.name, Answer::Ok("NVIDIA H100 80GB HBM3".into()));
    assert_eq!(d.bus_id().map(|b| b.to_string()).as_deref(), Some("0000:19:00.0"));
    assert_eq!((d.pcie.gen_current.ok(), d.pcie.width_current.ok()), (Some(&5), Some(&16)));
    assert_eq!(d.clock_event_reasons, Answer::Ok(0x1), "Idle: Active");
    assert_eq!(d.fabric.ok().map(|f| (f.state.as_str(), f.status.as_str())), Some(("completed", "Success")));
    assert_eq!(d.remapped_rows.ok().map(|r| (r.corrected, r.pending, r.failed)), Some((0, false, false)));
    assert_eq!(d.c2c_enabled, Answer::Ok(false));
    assert_eq!(d.power_limit_mw, Answer::Ok(700_000));

    // Driver 525 prints `Clocks Throttle Reasons`, `Ecc Mode` and `Power Readings`.
    let q = query("nvidia-smi-q/h800-x8-nvidia-smi-q-i0.txt");
    assert_eq!(q.attached_gpus, Some(8), "`-i 0`: one of eight listed");
    let (_, d) = q.recording.answered().next().unwrap();
    assert_eq!(d.uuid, Answer::Ok("GPU-34bf77d1-c686-6821-79a8-32d326c5039c".into()));
    assert_eq!(d.ecc.mode, Answer::Ok(Pending { current: false, pending: false }));
    assert_eq!(d.ecc.volatile_corrected, Answer::NotSupported);
    assert_eq!(d.clock_event_reasons, Answer::Ok(0x1));
    assert_eq!(d.power_limit_mw, Answer::Ok(700_000));

    // `-q -d ECC` of eight A100s: one GPU has 87 corrected DRAM errors since manufacture.
    let q = query("nvidia-smi-q/brev-a100-sxm4-40gb-x8-q-d-ecc.txt");
    let counts: Vec<(String, u64)> = q
        .recording
        .answered()
        .map(|(_, d)| (d.bus_id().unwrap().to_string(), *d.ecc.aggregate_corrected.ok().unwrap()))
        .collect();
    assert_eq!(counts.len(), 8);
    assert_eq!(counts[1], ("0000:0b:00.0".to_string(), 87));
    assert!(counts.iter().filter(|(_, n)| *n == 0).count() == 7);
}

#[test]
fn nvlink_status_and_errors() {
    let gpus = nvlink::parse(&read("nvidia-smi-nvlink/brev-a100-sxm4-40gb-x8-nvlink-s-i0.txt")).unwrap();
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0].links.len(), 12);
    assert!(gpus[0].links.values().all(|l| l.speed_gbps == Some(25.0) && l.active == Some(true)));

    let gpus = nvlink::parse(&read("nvidia-smi-nvlink/brev-a100-sxm4-40gb-x8-nvlink-e.txt")).unwrap();
    assert_eq!(gpus.len(), 8);
    assert!(gpus.iter().all(|g| g.links.len() == 12 && g.links.values().all(|l| l.errors.len() == 3)));
    assert_eq!(gpus[7].uuid.as_deref(), Some("GPU-63a54e17-d900-3b99-c42a-4506beaaa446"));

    // Pasted with elisions (`...`, `[...]`): the links shown are read, the rest is not invented.
    let gpus = nvlink::parse(&read("nvidia-smi-nvlink/h800-x8-nvlink-status.txt")).unwrap();
    assert_eq!(gpus.iter().map(|g| g.index).collect::<Vec<_>>(), [0, 1, 7]);
    assert!(gpus.iter().all(|g| g.links.len() == 8 && g.links.values().all(|l| l.speed_gbps == Some(26.562))));
    let gpus = nvlink::parse(&read("nvidia-smi-nvlink/ml-engineering-h100-nvlink-e.txt")).unwrap();
    assert_eq!(gpus[0].links.keys().copied().collect::<Vec<_>>(), [0, 1, 17]);
    let gpus = nvlink::parse(&read("nvidia-smi-nvlink/ml-engineering-h100-nvlink-status.txt")).unwrap();
    assert_eq!(gpus[0].links.keys().copied().collect::<Vec<_>>(), [0, 17]);
}

#[test]
fn p2p_matrices_tab_and_space_aligned() {
    for file in
        ["nvidia-smi-p2p/club-3090-1229-2x5090-p2p-rw.txt", "nvidia-smi-p2p/club-3090-1130-2x5090-p2p-rw-spaces.txt"]
    {
        let text = read(file);
        assert!(p2p_matrix::looks_like_p2p(&text), "{file}");
        let m = p2p_matrix::parse(&text).unwrap();
        assert_eq!(m.gpus, [0, 1]);
        assert_eq!(m.cells[0][1], Some("gpu-not-supported"), "{file}");
    }
    let m = p2p_matrix::parse(&read("nvidia-smi-p2p/aikitoria-13-5gpu-p2p-p.txt")).unwrap();
    assert_eq!(m.gpus.len(), 5);
    assert!((0..5).all(|i| (0..5).all(|j| (i == j) == m.cells[i][j].is_none())));
    // The same machines' `nvidia-smi topo -m` is no P2P matrix.
    assert!(!p2p_matrix::looks_like_p2p(&read("nvidia-smi-p2p/aikitoria-13-5gpu-topo-m.txt")));
}

#[test]
fn nvbandwidth_text_of_four_releases() {
    let run = nvbandwidth::parse(&read("nvbandwidth/nvbandwidth-issue50-a6000x6-d2d-read-ce.txt")).unwrap();
    assert_eq!(run.version.as_deref(), Some("v0.8"));
    let t = &run.testcases[0];
    assert_eq!(t.name, "device_to_device_memcpy_read_ce", "named by its SUM line");
    assert_eq!(t.matrix.len(), 6);
    assert_eq!(t.matrix[0][0], None);
    assert_eq!(t.matrix[3][5], Some(26.35));
    assert_eq!(t.sum, Some(715.53));

    let run = nvbandwidth::parse(&read("nvbandwidth/nvbandwidth-issue42-a100-h2d-sm.txt")).unwrap();
    assert_eq!(run.devices[0].bus_id.map(|b| b.to_string()).as_deref(), Some("0000:99:00.0"));
    assert_eq!(run.testcases[0].matrix, [vec![Some(25.13)]]);

    let run = nvbandwidth::parse(&read("nvbandwidth/superbench-gh200-v0.6-all.txt")).unwrap();
    assert_eq!(run.devices[0].bus_id.map(|b| b.to_string()).as_deref(), Some("0009:01:00.0"));
    let names: Vec<&str> =
        run.testcases.iter().filter(|t| t.status == nvbandwidth::Status::Passed).map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), 15);
    assert_eq!(run.testcases.iter().filter(|t| t.status == nvbandwidth::Status::Waived).count(), 17);
    let latency = run.testcases.iter().find(|t| t.name == "host_device_latency_sm").unwrap();
    assert!(!latency.is_bandwidth());

    let run = nvbandwidth::parse(&read("nvbandwidth/nvbandwidth-issue34-a100x8-v0.7-assert.txt")).unwrap();
    assert_eq!(run.devices.len(), 8);
    assert_eq!(run.testcases[0].status, nvbandwidth::Status::Error);

    let run = nvbandwidth::parse(&read("nvbandwidth/nvbandwidth-issue24-h100x8-h2d-d2h-sm.txt")).unwrap();
    assert_eq!(run.testcases.len(), 2);
    assert_eq!(run.testcases[1].matrix[0].len(), 8);

    for file in
        ["readme-v0.8-d2d-write-ce-8gpu.txt", "readme-v0.8-h2d-ce-8gpu.txt", "readme-v0.8-h2d-bidir-ce-8gpu.txt"]
    {
        let run = nvbandwidth::parse(&read(&format!("nvbandwidth/{file}"))).unwrap();
        assert_eq!(run.testcases[0].matrix[0].len(), 8, "{file}");
    }
}

/// The `-j` JSON (DCGM's recorded v0.5 run) and the releases that print a
/// coefficient of variation (v0.9, v0.10).
#[test]
fn nvbandwidth_json_and_coefficient_of_variation() {
    let text = read("nvbandwidth/dcgm-v0.5-json-1gpu-verbose.json");
    assert!(nvbandwidth::looks_like_nvbandwidth(&text));
    let run = nvbandwidth::parse(&text).unwrap();
    assert_eq!(run.version.as_deref(), Some("v0.5"));
    assert_eq!(run.driver_version.as_deref(), Some("565.02"));
    assert_eq!(run.cuda_runtime.as_deref(), Some("12070"));
    assert!(run.devices.is_empty(), "v0.5 prints no `GPU Device list`");
    assert_eq!(run.testcases.len(), 32);
    assert_eq!(run.testcases.iter().filter(|t| t.status == nvbandwidth::Status::Waived).count(), 17);
    let h2d = &run.testcases[0];
    assert_eq!(h2d.name, "host_to_device_memcpy_ce");
    assert_eq!(h2d.matrix, [vec![Some(12.3964)]]);
    assert_eq!(h2d.sum, Some(12.396_361_291_25), "printed as 12.396361291250001");
    let latency = run.testcases.iter().find(|t| t.name == "host_device_latency_sm").unwrap();
    assert_eq!(latency.matrix, [vec![Some(649.879)]]);
    assert!(!latency.is_bandwidth());

    // v0.9: the host name printed before the device list, a CV line per test.
    let run = nvbandwidth::parse(&read("nvbandwidth/pcie-riser-notes-rtx5060ti-x2-v0.9-d2h-bidir.txt")).unwrap();
    assert_eq!(run.version.as_deref(), Some("v0.9"));
    assert_eq!(run.devices.len(), 2);
    assert_eq!(run.devices[1].bus_id.map(|b| b.to_string()).as_deref(), Some("0000:02:00.0"));
    assert_eq!(run.testcases.len(), 2);
    assert_eq!(run.testcases[0].matrix, [vec![Some(26.83), Some(26.83)]]);
    assert_eq!((run.testcases[0].sum, run.testcases[0].cv), (Some(53.67), Some(0.0)));
    assert_eq!(run.testcases[1].name, "device_to_host_bidirectional_memcpy_sm");

    // v0.10: `13.3 (13030)` versions; each bidirectional test prints three
    // matrices (one per direction and the total), named by their SUM lines.
    let run = nvbandwidth::parse(&read("nvbandwidth/dell-7gpu-v0.10-ce-suite.txt")).unwrap();
    assert_eq!(run.version.as_deref(), Some("v0.10.0"));
    assert_eq!(run.cuda_runtime.as_deref(), Some("13030"));
    assert!(run.devices.is_empty());
    let names: Vec<&str> = run.testcases.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), 12, "{names:?}");
    assert_eq!(
        names[6..9],
        [
            "device_to_device_bidirectional_memcpy_read_ce",
            "device_to_device_bidirectional_memcpy_read_ce_read2",
            "device_to_device_bidirectional_memcpy_read_ce_total"
        ]
    );
    assert!(run.testcases.iter().all(|t| t.status == nvbandwidth::Status::Passed && [1, 7].contains(&t.matrix.len())));
    let read_ce = &run.testcases[4];
    assert_eq!(read_ce.name, "device_to_device_memcpy_read_ce");
    assert_eq!((read_ce.matrix[0][0], read_ce.matrix[4][6]), (None, Some(766.34)));
    assert_eq!(read_ce.cv, Some(0.0));
    assert_eq!(run.testcases[3].cv, Some(0.01));
    assert_eq!(run.testcases[8].cv, Some(0.0), "the total's CV");
    assert_eq!(run.testcases[11].sum, Some(64669.78));

    // v0.10's latency title, and two runs pasted one after the other.
    let run = nvbandwidth::parse(&read("nvbandwidth/h100x8-validation-sheet-v0.10-latency-d2d-read.txt")).unwrap();
    assert_eq!(run.driver_version.as_deref(), Some("595.71.05"));
    assert_eq!(run.testcases.len(), 2);
    let latency = &run.testcases[0];
    assert_eq!(latency.description, "Device to Device Latency SM GPU(row) <-> GPU(column) (ns)");
    assert_eq!((latency.matrix.len(), latency.matrix[7][3]), (8, Some(821.94)));
    assert!(!latency.is_bandwidth());
    assert_eq!((run.testcases[1].matrix[3][2], run.testcases[1].sum), (Some(395.23), Some(22126.64)));
}

#[test]
fn nccl_graph_dumps() {
    let dump = nccl_graph::parse(&read("nccl-graph/nccl-issue524-4gpu-2nic-ring-tree.xml"), "x").unwrap();
    assert_eq!(dump.graphs.len(), 3);
    let ring = &dump.graphs[0];
    assert_eq!((ring.pattern, ring.nchannels, ring.type_intra.as_str()), (4, 2, "SYS"));
    assert_eq!(ring.channels[0].gpus(), [0, 1, 2, 3]);
    assert_eq!((ring.channels[0].net_in(), ring.channels[0].net_out()), (Some(3), Some(0)));
    assert!(dump.graphs[2].channels.is_empty());

    let dump = nccl_graph::parse(&read("nccl-graph/nccl-issue1406-1gpu-1nic-pxb.xml"), "x").unwrap();
    assert_eq!(dump.graphs.iter().map(|g| g.pattern).collect::<Vec<_>>(), [4, 3, 3, 5]);

    let dump = nccl_graph::parse(&read("nccl-graph/azure-ncv4-a100x4-graph.xml"), "x").unwrap();
    assert_eq!(dump.graphs[1].channels[1].gpus(), [1, 0, 3, 2]);
    assert!(dump.graphs.iter().flat_map(|g| &g.channels).all(|c| c.net_in().is_none()));
}

/// Every reader on every prefix of every real sample (a paste cut short), on
/// the sample with its bytes mangled (not UTF-8, read lossily), and on huge
/// numbers in place of the real ones: an answer or an error, never a panic.
#[test]
fn truncated_mangled_and_huge_inputs_never_panic() {
    let dirs = ["nvidia-smi-q", "nvidia-smi-nvlink", "nvidia-smi-p2p", "nvbandwidth", "nccl-graph"];
    let every = |text: &str| {
        let _ = nvidia_smi_q::parse(text);
        let _ = nvlink::parse(text);
        let _ = p2p_matrix::looks_like_p2p(text);
        let _ = p2p_matrix::parse(text);
        let _ = nvbandwidth::parse(text);
        let _ = nccl_graph::parse(text, "x");
    };
    for dir in dirs {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures").join(dir);
        for entry in std::fs::read_dir(root).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            let step = (bytes.len() / 400).max(1);
            for cut in (0..bytes.len()).step_by(step) {
                every(&String::from_utf8_lossy(&bytes[..cut]));
            }
            let mangled: Vec<u8> = bytes.iter().enumerate().map(|(i, b)| if i % 97 == 0 { 0xff } else { *b }).collect();
            every(&String::from_utf8_lossy(&mangled));
            let text = String::from_utf8_lossy(&bytes);
            let huge: String = text.chars().map(|c| if c.is_ascii_digit() { '9' } else { c }).collect();
            every(&huge.replace("99", "9999999999999999999999999999"));
        }
    }
}
