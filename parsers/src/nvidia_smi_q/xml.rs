//! The XML form (`nvidia-smi -q -x`): `<nvidia_smi_log>` with one `<gpu id=...>`
//! per GPU; every leaf element becomes a `parent/.../leaf` field. The DTD line
//! is allowed (every real file has one); nothing external is fetched.

use roxmltree::{Document, Node, ParsingOptions};

use super::{Flattened, GpuFields, MAX_FIELDS_PER_GPU, MAX_GPUS, QueryError};

/// Subtrees that hold nothing NVML's answers need and can be long (every
/// supported clock pair, every process).
const SKIPPED: &[&str] = &["supported_clocks", "processes", "accounted_processes", "mig_devices"];

fn leaves(node: Node, path: &mut Vec<String>, out: &mut Vec<(String, String)>) {
    for child in node.children().filter(|c| c.is_element()) {
        if out.len() >= MAX_FIELDS_PER_GPU {
            return;
        }
        let name = child.tag_name().name();
        if SKIPPED.contains(&name) || path.len() > 16 {
            continue;
        }
        path.push(name.to_string());
        if child.children().any(|c| c.is_element()) {
            leaves(child, path, out);
        } else {
            out.push((path.join("/"), child.text().unwrap_or("").trim().to_string()));
        }
        path.pop();
    }
}

pub(super) fn flatten(text: &str) -> Result<Flattened, QueryError> {
    // Text before the XML declaration (a shell prompt, the command) is dropped.
    let start = text.find("<?xml").or_else(|| text.find("<!DOCTYPE")).or_else(|| text.find("<nvidia_smi_log"));
    let body = start.and_then(|s| text.get(s..)).unwrap_or(text);
    let end = body.find("</nvidia_smi_log>").map_or(body.len(), |e| e + "</nvidia_smi_log>".len());
    let body = body.get(..end).unwrap_or(body);
    let options = ParsingOptions { allow_dtd: true, ..ParsingOptions::default() };
    let document = Document::parse_with_options(body, options).map_err(|e| QueryError::Xml(e.to_string()))?;
    let root = document.root_element();
    let child_text = |name: &str| {
        root.children().find(|c| c.has_tag_name(name)).and_then(|c| c.text()).map(|t| t.trim().to_string())
    };
    let mut flat = Flattened {
        driver_version: child_text("driver_version"),
        cuda_version: child_text("cuda_version"),
        attached_gpus: child_text("attached_gpus"),
        gpus: Vec::new(),
    };
    for gpu in root.children().filter(|c| c.has_tag_name("gpu")).take(MAX_GPUS) {
        let mut fields = Vec::new();
        leaves(gpu, &mut Vec::new(), &mut fields);
        flat.gpus.push(GpuFields { header_bus_id: gpu.attribute("id").map(str::to_string), fields });
    }
    Ok(flat)
}
