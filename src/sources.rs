//! Turning what the user pointed at (this machine, a sysfs capture, a file, an
//! example) into one Snapshot.

use std::path::Path;

use anyhow::{Context, bail};
use topo_model::{HostInfo, Snapshot, Source};
use topo_parsers::nccl_xml;
use topo_probes::sysfs;

use crate::examples::{self, ExampleFormat};

/// Where `show` and `snapshot` take the machine from.
pub enum Origin<'a> {
    Sysfs(&'a Path),
    File(&'a Path),
    Example(&'a str),
}

pub fn load(origin: Origin) -> anyhow::Result<Snapshot> {
    match origin {
        Origin::Sysfs(root) => {
            let found = sysfs::discover(root)?;
            let source = Source::Sysfs { root: root.display().to_string() };
            Ok(Snapshot::new(source, found.host, found.topology, found.warnings))
        }
        Origin::File(path) => load_file(path),
        Origin::Example(name) => {
            let Some(example) = examples::find(name) else {
                bail!("no example named {name:?}; examples: {}", examples::names().join(", "));
            };
            match example.format {
                ExampleFormat::NcclXml => {
                    let imported = nccl_xml::import(example.text, name)?;
                    let source = Source::Example { name: name.to_string() };
                    Ok(Snapshot::new(source, HostInfo::default(), imported.topology, imported.warnings))
                }
                ExampleFormat::Snapshot => Ok(Snapshot::from_text(example.text, name)?),
            }
        }
    }
}

/// A file is NCCL topology XML if it starts with `<` (after blanks), else a
/// snapshot in YAML or JSON.
fn load_file(path: &Path) -> anyhow::Result<Snapshot> {
    if path.is_dir() {
        bail!("{}: is a directory; give an NCCL topology XML file or a snapshot", path.display());
    }
    let mut head = [0u8; 256];
    let read = {
        use std::io::Read;
        let mut file = std::fs::File::open(path).with_context(|| path.display().to_string())?;
        file.read(&mut head).with_context(|| path.display().to_string())?
    };
    let looks_like_xml = head[..read].iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'<');
    if looks_like_xml {
        let imported = nccl_xml::import_file(path)?;
        let source = Source::NcclXml { path: path.display().to_string() };
        Ok(Snapshot::new(source, HostInfo::default(), imported.topology, imported.warnings))
    } else {
        Ok(Snapshot::load(path)?)
    }
}
