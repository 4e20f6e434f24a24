//! NCCL topology XML: the format NCCL reads from `NCCL_TOPO_FILE` and writes to
//! `NCCL_TOPO_DUMP_FILE`.
//!
//! Shape: `<system>` holds one `<cpu>` per NUMA node; `<pci>` elements nest below
//! it as the PCIe tree (one element per switch: NCCL folds downstream ports into
//! their switch and leaves root ports out); a `<pci>` holds `<gpu>` (with
//! `<nvlink>` children) or `<nic>` (with `<net>` children). Socket NICs hang
//! straight off `<cpu>`. Real files differ a lot: see `tests/fixtures/SOURCES.md`.

mod export;
mod import;

pub use export::to_xml;
pub use import::{Imported, MAX_XML_BYTES, XmlError, import, import_file};
