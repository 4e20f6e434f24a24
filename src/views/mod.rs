//! Views render a Snapshot; they never probe hardware.

pub mod document;
pub mod dot;
pub mod findings;
pub mod gpus;
pub mod graph_dump;
pub mod html;
pub mod job;
pub mod nccl;
pub mod plain;
pub mod prometheus;

use topo_model::PciDevice;
use topo_model::topology::pci_class;

/// A short word for what a PCI function is.
pub fn device_kind(device: &PciDevice) -> &'static str {
    if device.is_nvswitch() {
        return "NVSwitch";
    }
    let Some(class) = device.class else { return "device" };
    match pci_class::base(class) {
        0x0600 => "host bridge",
        0x0604 => "PCI bridge",
        0x0300 => "VGA",
        0x0302 => "3D controller",
        0x0200 => "Ethernet",
        0x0207 => "InfiniBand",
        0x0108 => "NVMe",
        0x0106 => "SATA",
        0x0104 => "RAID",
        0x0c03 => "USB",
        0x0403 => "audio",
        0x0b40 => "coprocessor",
        _ => "device",
    }
}
