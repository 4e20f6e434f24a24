//! What lspci's names stand for, where `-nn` did not print the numbers:
//! vendor names and class names as pci.ids spells them (the database lspci
//! prints from), and the few device-name hints needed for functions only the
//! tree shows. Source: pci.ids (https://pci-ids.ucw.cz/), class and vendor
//! sections.

/// Vendor name prefix (as lspci prints it) -> PCI vendor id.
const VENDORS: &[(&str, u16)] = &[
    ("NVIDIA Corporation", 0x10de),
    ("Mellanox Technologies", 0x15b3),
    ("Intel Corporation", 0x8086),
    ("Advanced Micro Devices, Inc. [AMD/ATI]", 0x1002),
    ("Advanced Micro Devices, Inc. [AMD]", 0x1022),
    ("Broadcom / LSI", 0x1000),
    ("Broadcom Inc. and subsidiaries", 0x14e4),
    ("PLX Technology, Inc.", 0x10b5),
    ("Microsemi / PMC / IDT", 0x11f8),
    ("PMC-Sierra Inc.", 0x11f8),
    ("Amazon.com, Inc.", 0x1d0f),
    ("Samsung Electronics Co Ltd", 0x144d),
    ("ASPEED Technology, Inc.", 0x1a03),
    ("Red Hat, Inc.", 0x1af4),
    ("Microsoft Corporation", 0x1414),
    ("Huawei Technologies Co., Ltd.", 0x19e5),
    ("Cisco Systems Inc", 0x1137),
    ("Xilinx Corporation", 0x10ee),
];

/// Class name (lspci's header word before `:`) -> 24-bit class code, prog-if 0.
const CLASSES: &[(&str, u32)] = &[
    ("Host bridge", 0x060000),
    ("ISA bridge", 0x060100),
    ("PCI bridge", 0x060400),
    ("Bridge", 0x068000),
    ("System peripheral", 0x088000),
    ("IOMMU", 0x080600),
    ("VGA compatible controller", 0x030000),
    ("XGA compatible controller", 0x030100),
    ("3D controller", 0x030200),
    ("Display controller", 0x038000),
    ("Ethernet controller", 0x020000),
    ("Infiniband controller", 0x020700),
    ("Fabric controller", 0x020800),
    ("Network controller", 0x028000),
    ("InfiniBand", 0x0c0600),
    ("Non-Volatile memory controller", 0x010802),
    ("RAID bus controller", 0x010400),
    ("SATA controller", 0x010601),
    ("Serial Attached SCSI controller", 0x010700),
    ("Audio device", 0x040300),
    ("USB controller", 0x0c0300),
    ("SMBus", 0x0c0500),
    ("Serial bus controller", 0x0c8000),
    ("Processing accelerators", 0x120000),
    ("Encryption controller", 0x108000),
    ("Signal processing controller", 0x118000),
    ("Co-processor", 0x0b4000),
    ("Unassigned class", 0xff0000),
];

/// For functions shown only in the tree: words in the name that give the
/// class. Checked in order; the first match wins.
const CLASS_HINTS: &[(&str, u32)] = &[
    ("High Definition Audio", 0x040300),
    ("HD Audio", 0x040300),
    ("USB", 0x0c0300),
    ("NVMe", 0x010802),
    ("Non-Volatile memory", 0x010802),
    ("RAID", 0x010400),
    ("NVSwitch", 0x068000),
    ("Infiniband", 0x020700),
    ("InfiniBand", 0x020700),
    ("ConnectX", 0x020000),
    ("BlueField", 0x020000),
    ("Elastic Fabric Adapter", 0x020000),
    ("Ethernet", 0x020000),
    ("Network", 0x020000),
];

/// NVIDIA functions on GPU boards that are not the GPU (name words), and
/// NVSwitch device ids (`Device 22a3` where pci.ids has no name yet).
const NVIDIA_NON_GPU_HINTS: &[&str] = &["Audio", "USB", "UCSI", "Serial", "Bridge", "Switch", "SMBus", "ConnectX"];
const NVSWITCH_DEVICE_IDS: &[u16] = &[0x10f5, 0x1ac0, 0x1ac1, 0x1ac2, 0x1af1, 0x22a3, 0x22a4, 0x2901];

pub fn vendor_by_name(description: &str) -> Option<u16> {
    VENDORS
        .iter()
        .filter(|(name, _)| description.starts_with(name))
        .max_by_key(|(name, _)| name.len())
        .map(|(_, id)| *id)
}

pub fn class_by_name(class_name: &str) -> Option<u32> {
    CLASSES.iter().find(|(name, _)| *name == class_name).map(|(_, code)| *code)
}

/// `... Device 22a3` (pci.ids has no name): the device id.
pub fn device_id_in_name(description: &str) -> Option<u16> {
    let word = description.strip_suffix(')').map_or(description, |d| d.rsplit_once(" (").map_or(d, |(h, _)| h));
    let id = word.rsplit_once("Device ")?.1;
    (id.len() == 4).then(|| u16::from_str_radix(id, 16).ok()).flatten()
}

/// The class of a function known only by its name in the tree. An NVIDIA
/// function that is none of a board's helper functions is taken as the GPU.
pub fn class_by_description(vendor: Option<u16>, device: Option<u16>, description: &str) -> Option<u32> {
    if vendor == Some(topo_model::topology::NVIDIA_VENDOR) {
        if device.is_some_and(|d| NVSWITCH_DEVICE_IDS.contains(&d)) || description.contains("NVSwitch") {
            return Some(0x068000);
        }
        if !NVIDIA_NON_GPU_HINTS.iter().any(|hint| description.contains(hint)) {
            return Some(0x030200);
        }
    }
    CLASS_HINTS.iter().find(|(hint, _)| description.contains(hint)).map(|(_, code)| *code)
}

/// The marketing name lspci prints in brackets (`AD102GL [RTX 6000 Ada
/// Generation]` -> `RTX 6000 Ada Generation`).
pub fn product_name(description: &str) -> Option<String> {
    let close = description.rfind(']')?;
    let open = description[..close].rfind('[')?;
    let name = description[open + 1..close].trim();
    (!name.is_empty() && !name.contains(':')).then(|| name.to_string())
}

/// Network functions that carry RDMA (what nvidia-smi and NCCL list as NICs):
/// Mellanox/NVIDIA ConnectX and BlueField, and AWS EFA. Other vendors' RDMA
/// (Broadcom bnxt_re, Intel irdma) depends on a driver lspci does not show.
pub fn is_rdma_capable(vendor: Option<u16>, description: &str) -> bool {
    vendor == Some(0x15b3)
        || description.contains("Elastic Fabric Adapter")
        || (vendor == Some(topo_model::topology::NVIDIA_VENDOR) && description.contains("ConnectX"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_real_lines() {
        assert_eq!(vendor_by_name("Advanced Micro Devices, Inc. [AMD] Device 14a4"), Some(0x1022));
        assert_eq!(device_id_in_name("Advanced Micro Devices, Inc. [AMD] Device 14a4"), Some(0x14a4));
        assert_eq!(
            product_name("NVIDIA Corporation AD102GL [RTX 6000 Ada Generation]").as_deref(),
            Some("RTX 6000 Ada Generation")
        );
        assert_eq!(
            class_by_description(Some(0x10de), None, "NVIDIA Corporation AD102 High Definition Audio Controller"),
            Some(0x040300)
        );
        assert_eq!(class_by_description(Some(0x10de), Some(0x22a3), "NVIDIA Corporation Device 22a3"), Some(0x068000));
    }
}
