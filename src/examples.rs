//! Real machines bundled into the binary, so `topo show` does something useful
//! anywhere. Each is a published file; see `tests/fixtures/SOURCES.md`.

pub struct Example {
    pub name: &'static str,
    pub description: &'static str,
    pub format: ExampleFormat,
    pub text: &'static str,
}

pub enum ExampleFormat {
    NcclXml,
    Snapshot,
}

pub const EXAMPLES: &[Example] = &[
    Example {
        name: "h100-sxm-8gpu",
        description: "8x H100 SXM5 80GB, 4 NVSwitches (NV18), 8x ConnectX-7 RoCE 200G, 2 Sapphire Rapids sockets (IBM Cloud gx3d VM, NCCL dump)",
        format: ExampleFormat::NcclXml,
        text: include_str!("../tests/fixtures/nccl-topo/ibm-gx3d-h100x8.xml"),
    },
    Example {
        name: "a100-sxm-8gpu",
        description: "8x A100 SXM4 80GB, 6 NVSwitches (NV12), nested PEX switches, 5x ConnectX-6 Dx, 2 Ice Lake sockets (Alibaba Cloud, NCCL dump)",
        format: ExampleFormat::NcclXml,
        text: include_str!("../tests/fixtures/nccl-topo/alibaba-a100-sxm80g-x8-cx6bond.xml"),
    },
    Example {
        name: "b200-8gpu-vm",
        description: "8x B200 (NV18 to hidden NVSwitches), flattened PCIe, 13 mlx5 devices, 2 Emerald Rapids sockets (cloud VM, NCCL dump)",
        format: ExampleFormat::NcclXml,
        text: include_str!("../tests/fixtures/nccl-topo/modal-b200x8-vm.xml"),
    },
    Example {
        name: "rtx-a6000-4gpu-pcie",
        description: "4x RTX A6000 on CPU root ports, no NVLink, 2 Skylake sockets (Dell server, NCCL dump)",
        format: ExampleFormat::NcclXml,
        text: include_str!("../tests/fixtures/nccl-topo/rtxa6000x4-dell-skylake.xml"),
    },
    Example {
        name: "rtx6000ada-4gpu-pcie",
        description: "4x RTX 6000 Ada, 2x dual-port ConnectX-7, 2 EPYC Genoa sockets, idle GPU links at Gen1 (ASUS ESC8000A-E12, sysfs rebuilt from lspci)",
        format: ExampleFormat::Snapshot,
        text: include_str!("../tests/fixtures/snapshots/asus-esc8000a-e12.yaml"),
    },
];

pub fn find(name: &str) -> Option<&'static Example> {
    EXAMPLES.iter().find(|e| e.name == name)
}

pub fn names() -> Vec<&'static str> {
    EXAMPLES.iter().map(|e| e.name).collect()
}
