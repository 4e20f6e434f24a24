//! The indented text form: `Key<spaces>: value` lines under section headers,
//! four spaces per level, one block per GPU headed `GPU 00000000:19:00.0`.
//! A key that has a value and deeper lines under it (`HW Slowdown` above
//! `HW Thermal Slowdown`) is a value, not a section: the deeper lines belong
//! to the enclosing section, as nvidia-smi's own XML nests them.

use super::{Flattened, GpuFields, MAX_FIELDS_PER_GPU, MAX_GPUS};

fn indent(line: &str) -> usize {
    line.chars().take_while(|c| *c == ' ' || *c == '\t').map(|c| if c == '\t' { 4 } else { 1 }).sum()
}

/// `Key : value` (the value may be empty: `Key :`); `None` for a section header.
fn key_value(line: &str) -> Option<(&str, &str)> {
    let trimmed = line.trim();
    if let Some((key, value)) = trimmed.split_once(" : ") {
        return Some((key.trim(), value.trim()));
    }
    trimmed.strip_suffix(" :").or_else(|| trimmed.strip_suffix(':')).map(|key| (key.trim(), ""))
}

/// `GPU 00000000:19:00.0` at the left margin.
fn gpu_header(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("GPU ")?;
    let id = rest.trim();
    (id.len() >= 7 && id.contains(':') && !id.contains(' ')).then_some(id)
}

pub(super) fn flatten(text: &str) -> Flattened {
    let mut flat = Flattened::default();
    // (indent, name) of the open sections of the current GPU.
    let mut sections: Vec<(usize, String)> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() || line.contains("NVSMI LOG") {
            continue;
        }
        let depth = indent(line);
        if depth == 0
            && let Some(id) = gpu_header(line)
        {
            if flat.gpus.len() >= MAX_GPUS {
                break;
            }
            flat.gpus.push(GpuFields { header_bus_id: Some(id.to_string()), fields: Vec::new() });
            sections.clear();
            continue;
        }
        while sections.last().is_some_and(|(d, _)| *d >= depth) {
            sections.pop();
        }
        match key_value(line) {
            Some((key, value)) => {
                let Some(gpu) = flat.gpus.last_mut() else {
                    match key {
                        "Driver Version" => flat.driver_version = Some(value.to_string()),
                        "CUDA Version" => flat.cuda_version = Some(value.to_string()),
                        "Attached GPUs" => flat.attached_gpus = Some(value.to_string()),
                        _ => {}
                    }
                    continue;
                };
                if gpu.fields.len() < MAX_FIELDS_PER_GPU {
                    let mut path: Vec<&str> = sections.iter().map(|(_, s)| s.as_str()).collect();
                    path.push(key);
                    gpu.fields.push((path.join("/"), value.to_string()));
                }
            }
            // A section header; nesting is bounded (headers add no fields).
            None if !flat.gpus.is_empty() && depth > 0 && sections.len() < 16 => {
                sections.push((depth, line.trim().to_string()));
            }
            None => {}
        }
    }
    flat
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_values_belong_to_their_section() {
        let text = "==============NVSMI LOG==============\nDriver Version : 1\nGPU 00000000:19:00.0\n    Clocks Event Reasons\n        HW Slowdown                       : Not Active\n            HW Thermal Slowdown           : Active\n    Fan Speed : N/A\n";
        let flat = flatten(text);
        let gpu = &flat.gpus[0];
        assert_eq!(gpu.get("Clocks Event Reasons/HW Thermal Slowdown"), Some("Active"));
        assert_eq!(gpu.get("Fan Speed"), Some("N/A"));
        assert_eq!(flat.driver_version.as_deref(), Some("1"));
    }
}
