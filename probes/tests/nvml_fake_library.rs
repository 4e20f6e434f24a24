//! The NVML recorder, run against a stand-in `libnvidia-ml.so.1` built here
//! from `fake-nvml/fake_nvml.c` (needs a C compiler, `cc`): the real wrapper
//! calls and the `unsafe` raw calls, on a machine without a GPU.

use std::path::{Path, PathBuf};
use std::process::Command;

use topo_model::nvml::{Answer, Fabric, RemappedRows};
use topo_probes::nvml::{self, NvmlUnavailable};

fn build_fake_library(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake-nvml/fake_nvml.c");
    let library = dir.join("libnvidia-ml.so.1");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .status()
        .expect("a C compiler (`cc`) to build the stand-in NVML library");
    assert!(status.success());
    library
}

#[test]
fn records_what_the_driver_answers() {
    let dir = tempfile::tempdir().unwrap();
    let library = build_fake_library(dir.path());
    let recording = nvml::probe(Some(library.as_os_str())).unwrap();

    assert_eq!(recording.driver_version, Answer::Ok("999.12.34".into()));
    // A call the driver does not have is "not supported", not a failure.
    assert_eq!(recording.nvml_version, Answer::NotSupported);
    assert_eq!((recording.device_count.clone(), recording.devices.len()), (Answer::Ok(2), 2));
    // GPU 1 fell off the bus: reported, and GPU 0 was still probed.
    assert!(recording.devices[1].answers.is_none());
    assert!(recording.devices[1].unreachable.as_deref().unwrap().contains("fell off the bus"));
    assert!(recording.pairs.is_empty());

    let gpu = recording.devices[0].answers.as_deref().unwrap();
    assert_eq!(gpu.name, Answer::Ok("Fake H100".into()));
    assert_eq!(gpu.bus_id().unwrap().to_string(), "0000:1a:00.0");
    assert_eq!((gpu.pcie.gen_current.clone(), gpu.pcie.gen_max.clone()), (Answer::Ok(5), Answer::NotSupported));
    assert_eq!(gpu.serial, Answer::NotSupported);
    // The raw calls: remapped rows, clock event reasons, fabric (v3 refused, v2 answered).
    assert_eq!(
        gpu.remapped_rows,
        Answer::Ok(RemappedRows { corrected: 3, uncorrected: 1, pending: true, failed: false })
    );
    assert_eq!(gpu.clock_event_reasons, Answer::Ok(0x40));
    assert_eq!(
        gpu.fabric,
        Answer::Ok(Fabric {
            state: "completed".into(),
            status: "Success".into(),
            clique_id: 7,
            cluster_uuid: "ab000000-0000-0000-0000-000000000001".into(),
        })
    );
    // Links 0 and 1, then "invalid argument" ends the walk.
    assert_eq!(gpu.nvlinks.len(), 2);
    for link in &gpu.nvlinks {
        assert_eq!((link.active.clone(), link.version.clone()), (Answer::Ok(true), Answer::Ok(4)));
        assert_eq!(link.remote_bus_id, Answer::Ok("00000000:F3:00.0".into()));
        // The wrapper's own remote_device_type would say "unknown" here.
        assert_eq!(link.remote_type, Answer::Ok("switch".into()));
    }
    assert_eq!(
        (gpu.nvlinks[0].errors.replay.clone(), gpu.nvlinks[1].errors.replay.clone()),
        (Answer::Ok(0), Answer::Ok(42))
    );
}

#[test]
fn missing_library_is_named() {
    let missing = Path::new("/nonexistent/libnvidia-ml.so.1");
    match nvml::probe(Some(missing.as_os_str())) {
        Err(NvmlUnavailable::NoLibrary { reason }) => assert!(reason.contains("/nonexistent/libnvidia-ml.so.1")),
        other => panic!("{other:?}"),
    }
}
