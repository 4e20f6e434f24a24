//! Every real `nvidia-smi topo -m` output in `tests/fixtures/nvidia-smi-topo/`:
//! parsed, turned into a topology, and that topology's matrix shows the same cells.

use std::path::PathBuf;

use topo_model::SmiClass;
use topo_parsers::nvidia_smi::{SmiError, parse, to_topology};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/nvidia-smi-topo")
}

#[test]
fn every_output_rebuilds_to_the_same_cells() {
    let mut files = 0;
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let matrix = parse(&text, &path.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
        let (topology, warnings) = to_topology(&matrix);
        assert!(warnings.is_empty(), "{}: {warnings:#?}", path.display());
        let rebuilt = topology.matrix();
        assert_eq!(rebuilt.endpoints.len(), matrix.labels.len(), "{}", path.display());
        files += 1;
    }
    assert_eq!(files, 9);
}

#[test]
fn legend_affinity_and_nvlink_forms() {
    let read = |name: &str| {
        let text = std::fs::read_to_string(fixtures().join(name)).unwrap();
        parse(&text, name).unwrap()
    };
    let asus = read("asus-esc8000a-e12-rtx6000ada-x4.txt");
    assert_eq!(asus.labels.len(), 8);
    assert_eq!(asus.nic_names["NIC3"], "mlx5_3");
    assert_eq!((asus.cpu_affinity[2].as_deref(), asus.numa_affinity[2].as_deref()), (Some("32-63"), Some("1")));
    let (topology, _) = to_topology(&asus);
    assert_eq!(topology.numa_nodes.len(), 2);
    assert!(topology.nics.iter().any(|n| n.name == "mlx5_3"));

    // DGX-1 V100: NV1/NV2 hybrid cube mesh, direct links, 6 per GPU; old NIC column naming.
    let dgx1 = read("v100-sxm2-x8-1ib-oneflow.txt");
    assert_eq!(dgx1.labels.last().map(String::as_str), Some("mlx5_0"));
    let (topology, _) = to_topology(&dgx1);
    assert!(topology.nvswitches.is_empty());
    assert!(topology.gpus.iter().all(|g| topology.nvlink_count(g.bus_id) == 6));

    // H100 NV18 everywhere: an NVSwitch fabric, 18 links per GPU.
    let h100 = read("h100x8-nv18-8nic-sglang.txt");
    assert_eq!(h100.cells[0][1], SmiClass::Nv(18));
    let (topology, _) = to_topology(&h100);
    assert_eq!(topology.nvswitches.len(), 1);
    assert!(topology.gpus.iter().all(|g| topology.nvlink_count(g.bus_id) == 18));
}

#[test]
fn broken_pastes_are_errors_with_a_line() {
    assert!(matches!(parse("no matrix here\n", "x.txt"), Err(SmiError::NoHeader { .. })));
    let cut = "        GPU0    GPU1    CPU Affinity\nGPU0     X      PHB     0-11\n";
    let err = parse(cut, "cut.txt").unwrap_err().to_string();
    assert!(err.contains("cut.txt") && err.contains("GPU1"), "{err}");
    let garbage = "        GPU0    GPU1\nGPU0     X      WAT\nGPU1    PHB      X\n";
    assert!(parse(garbage, "g.txt").unwrap_err().to_string().starts_with("g.txt:2:"));
}
