//! nvbandwidth output (NVIDIA/nvbandwidth, v0.5 to v0.10), text and `-j` JSON:
//! per test case its bandwidth matrix (`memcpy CE CPU(row) -> GPU(column)
//! bandwidth (GB/s)`, rows and columns as the description says), the `SUM`
//! line, the coefficient of variation (v0.9 and later), and whether it ran
//! (`Waived`, an `ASSERT` or error line). The `Device N: NAME (00000000:99:00)`
//! list gives each CUDA ordinal's bus ID where it was printed.

use topo_model::BusId;

/// Larger input is refused; a full run on 72 GPUs is well under 4 MiB.
pub const MAX_NVBANDWIDTH_BYTES: usize = 16 << 20;
/// Test cases, devices and matrix side kept.
pub const MAX_TESTCASES: usize = 4096;
pub const MAX_SIDE: usize = 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NvbandwidthError {
    #[error("{size} bytes is larger than any nvbandwidth output ({MAX_NVBANDWIDTH_BYTES} bytes at most)")]
    TooLarge { size: usize },
    #[error("not nvbandwidth output (no `Running <test>` or bandwidth matrix, no `nvbandwidth` JSON object)")]
    NotNvbandwidth,
    #[error("nvbandwidth JSON: {0}")]
    Json(String),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct NvbandwidthRun {
    pub version: Option<String>,
    pub driver_version: Option<String>,
    pub cuda_runtime: Option<String>,
    pub devices: Vec<NvbDevice>,
    pub testcases: Vec<Testcase>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NvbDevice {
    pub ordinal: u32,
    pub name: String,
    pub bus_id: Option<BusId>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Passed,
    Waived,
    Error,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Testcase {
    /// `host_to_device_memcpy_ce`; empty where a paste left the `Running` line out.
    pub name: String,
    pub status: Status,
    /// `memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)`.
    pub description: String,
    /// GB/s (or ns for latency tests); `None` for `N/A`.
    pub matrix: Vec<Vec<Option<f64>>>,
    pub sum: Option<f64>,
    /// The coefficient of variation (v0.9 and later), when printed.
    pub cv: Option<f64>,
    pub error: Option<String>,
}

impl Testcase {
    fn new(name: &str) -> Testcase {
        Testcase {
            name: name.to_string(),
            status: Status::Passed,
            description: String::new(),
            matrix: Vec::new(),
            sum: None,
            cv: None,
            error: None,
        }
    }

    /// Whether the figures are bandwidths (not latencies).
    pub fn is_bandwidth(&self) -> bool {
        self.description.contains("GB/s")
    }
}

/// Whether `text` is nvbandwidth output of either form.
pub fn looks_like_nvbandwidth(text: &str) -> bool {
    text.contains("nvbandwidth Version:")
        || text.contains("\"nvbandwidth\"")
        || text.lines().any(|l| is_matrix_title(l.trim()))
}

/// `memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)`, `memory latency SM
/// CPU(row) <-> GPU(column) (ns)` (v0.5-v0.9), v0.10's `Device to Device
/// Latency SM GPU(row) <-> GPU(column) (ns)`, and the bidirectional tests'
/// `... GPU(column) Read1 bandwidth (GB/s)`.
fn is_matrix_title(line: &str) -> bool {
    line.contains("(row)") && line.contains("(column)") && (line.ends_with("(GB/s)") || line.ends_with("(ns)"))
}

/// `13030`, or v0.10's `13.3 (13030)`: the number CUDA reports (as JSON prints it).
fn cuda_version(text: &str) -> String {
    let text = text.trim();
    text.rsplit_once('(')
        .map(|(_, n)| n.trim_end_matches(')'))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or(text)
        .to_string()
}

/// `(00000000:99:00)` -> `0000:99:00.0`.
fn device_bus(text: &str) -> Option<BusId> {
    let inner = text.rsplit_once('(')?.1.trim_end_matches(')');
    let mut parts = inner.split(':');
    let (domain, bus, device) = (parts.next()?, parts.next()?, parts.next()?);
    let domain = u32::from_str_radix(domain, 16).ok()?;
    let bus = u8::from_str_radix(bus, 16).ok()?;
    let device = u8::from_str_radix(device.split('.').next()?, 16).ok()?;
    Some(BusId { domain, bus, device, function: 0 })
}

/// `Device 0: NVIDIA A100-SXM4-40GB (00000000:99:00)`, also JSON's
/// `0: NAME (00000000:99:00): (host)`.
fn device_line(line: &str) -> Option<NvbDevice> {
    let rest = line.trim().strip_prefix("Device ").unwrap_or(line.trim());
    let (ordinal, rest) = rest.split_once(": ")?;
    let ordinal = ordinal.trim().parse().ok()?;
    let rest = rest.split(": (").next().unwrap_or(rest);
    let name = rest.rsplit_once(" (").map_or(rest, |(n, _)| n).trim().to_string();
    Some(NvbDevice { ordinal, name, bus_id: device_bus(rest) })
}

fn number(token: &str) -> Option<Option<f64>> {
    if token == "N/A" {
        return Some(None);
    }
    token.parse::<f64>().ok().filter(|v| v.is_finite()).map(Some)
}

pub fn parse(text: &str) -> Result<NvbandwidthRun, NvbandwidthError> {
    if text.len() > MAX_NVBANDWIDTH_BYTES {
        return Err(NvbandwidthError::TooLarge { size: text.len() });
    }
    if text.trim_start().starts_with('{') {
        return parse_json(text);
    }
    let mut run = NvbandwidthRun::default();
    let mut in_matrix = false;
    for raw in text.lines() {
        let line = raw.trim().trim_start_matches("> ").trim();
        if let Some(v) = line.strip_prefix("nvbandwidth Version:") {
            run.version = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Driver Version:") {
            run.driver_version = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("CUDA Runtime Version:") {
            run.cuda_runtime = Some(cuda_version(v));
        } else if line.starts_with("Device ") && !is_matrix_title(line) && run.devices.len() < MAX_SIDE {
            run.devices.extend(device_line(line));
        } else if let Some(name) = line.strip_prefix("Running ") {
            in_matrix = false;
            if run.testcases.len() < MAX_TESTCASES {
                run.testcases.push(Testcase::new(name.trim_end_matches('.')));
            }
        } else if line.starts_with("Waived") {
            in_matrix = false;
            let name = line.trim_start_matches("Waived").trim_start_matches(':').trim().trim_end_matches('.');
            if run.testcases.len() < MAX_TESTCASES {
                run.testcases.push(Testcase { status: Status::Waived, ..Testcase::new(name) });
            }
        } else if is_matrix_title(line) {
            in_matrix = true;
            // A matrix without its `Running` line (an excerpt) is a test case of its own.
            let fresh = run.testcases.last().is_none_or(|t| !t.matrix.is_empty() || !t.description.is_empty());
            if fresh && run.testcases.len() < MAX_TESTCASES {
                run.testcases.push(Testcase::new(""));
            }
            if let Some(t) = run.testcases.last_mut() {
                t.description = line.to_string();
            }
        } else if let Some(rest) = line.strip_prefix("SUM ") {
            in_matrix = false;
            if let Some(t) = run.testcases.last_mut() {
                let mut tokens = rest.split_whitespace();
                let name = tokens.next().unwrap_or("");
                if t.name.is_empty() {
                    t.name = name.to_string();
                }
                t.sum = tokens.next().and_then(|v| v.parse().ok()).filter(|v: &f64| v.is_finite());
            }
        } else if line.starts_with("COEFFICIENT_OF_VARIATION") {
            if let Some(t) = run.testcases.last_mut() {
                t.cv = line.split_whitespace().last().and_then(|v| v.parse().ok()).filter(|v: &f64| v.is_finite());
            }
        } else if line.starts_with("ASSERT") || line.starts_with("ERROR") || line.starts_with("Error") {
            in_matrix = false;
            if let Some(t) = run.testcases.last_mut() {
                t.status = Status::Error;
                t.error = Some(line.chars().take(300).collect());
            }
        } else if in_matrix && let Some(t) = run.testcases.last_mut() {
            let tokens: Vec<&str> = line.split_whitespace().collect();
            let Some((first, cells)) = tokens.split_first() else { continue };
            // The column header row is all integers (figures are printed with decimals).
            if t.matrix.is_empty() && tokens.iter().all(|c| c.parse::<u32>().is_ok()) {
                continue;
            }
            if first.parse::<u32>().is_err() || t.matrix.len() >= MAX_SIDE {
                in_matrix = false;
                continue;
            }
            let row: Option<Vec<Option<f64>>> = cells.iter().take(MAX_SIDE).map(|c| number(c)).collect();
            match row {
                Some(row) => t.matrix.push(row),
                None => in_matrix = false,
            }
        }
    }
    run.testcases.retain(|t| !t.name.is_empty() || !t.matrix.is_empty() || t.status != Status::Passed);
    if run.testcases.is_empty() && run.devices.is_empty() {
        return Err(NvbandwidthError::NotNvbandwidth);
    }
    Ok(run)
}

fn parse_json(text: &str) -> Result<NvbandwidthRun, NvbandwidthError> {
    use serde_json::Value;
    let value: Value = serde_json::from_str(text).map_err(|e| NvbandwidthError::Json(e.to_string()))?;
    let root = value.get("nvbandwidth").ok_or(NvbandwidthError::NotNvbandwidth)?;
    let string = |key: &str| match root.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let mut run = NvbandwidthRun {
        version: string("version"),
        driver_version: string("Driver Version"),
        cuda_runtime: string("CUDA Runtime Version"),
        ..NvbandwidthRun::default()
    };
    if let Some(Value::Array(list)) = root.get("GPU Device list") {
        run.devices = list.iter().take(MAX_SIDE).filter_map(|d| device_line(d.as_str()?)).collect();
    }
    let Some(Value::Array(cases)) = root.get("testcases") else { return Ok(run) };
    for case in cases.iter().take(MAX_TESTCASES) {
        let field = |key: &str| case.get(key).and_then(Value::as_str).unwrap_or("").to_string();
        let status = match field("status").as_str() {
            "Passed" => Status::Passed,
            "Waived" => Status::Waived,
            _ => Status::Error,
        };
        let matrix = case
            .get("bandwidth_matrix")
            .and_then(Value::as_array)
            .map(|rows| {
                rows.iter()
                    .take(MAX_SIDE)
                    .map(|row| {
                        row.as_array()
                            .map(|cells| {
                                cells
                                    .iter()
                                    .take(MAX_SIDE)
                                    .map(|c| match c {
                                        Value::String(s) => number(s).flatten(),
                                        Value::Number(n) => n.as_f64().filter(|v| v.is_finite()),
                                        _ => None,
                                    })
                                    .collect()
                            })
                            .unwrap_or_default()
                    })
                    .collect()
            })
            .unwrap_or_default();
        let error = case.get("error").and_then(Value::as_str).map(|e| e.chars().take(300).collect());
        run.testcases.push(Testcase {
            name: field("name"),
            status,
            description: field("bandwidth_description"),
            matrix,
            sum: case.get("sum").and_then(Value::as_f64).filter(|v| v.is_finite()),
            cv: None,
            error,
        });
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape nvbandwidth's `json_output.cpp` (v0.8) writes, hand-made with
    /// the figures of issue #50: the one real `-j` output found (DCGM's, v0.5,
    /// `tests/fixtures/nvbandwidth/`) has no `GPU Device list`.
    #[test]
    fn json_form() {
        let json = r#"{"nvbandwidth": {"CUDA Runtime Version": 13000, "Driver Version": "580.95.05",
            "GPU Device list": ["0: NVIDIA RTX A6000 (00000000:01:00): (host)"], "version": "v0.8",
            "testcases": [{"name": "device_to_device_memcpy_read_ce", "status": "Passed",
              "bandwidth_description": "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)",
              "bandwidth_matrix": [["N/A", "26.34"], ["26.34", "N/A"]], "sum": 52.68},
              {"name": "host_to_device_memcpy_ce", "status": "Waived"}]}}"#;
        let run = parse(json).unwrap();
        assert_eq!(run.driver_version.as_deref(), Some("580.95.05"));
        assert_eq!(run.cuda_runtime.as_deref(), Some("13000"));
        assert_eq!(run.devices[0].bus_id.map(|b| b.to_string()).as_deref(), Some("0000:01:00.0"));
        assert_eq!(run.testcases[0].matrix, [vec![None, Some(26.34)], vec![Some(26.34), None]]);
        assert_eq!(run.testcases[1].status, Status::Waived);
        assert!(matches!(parse("{\"nvbandwidth\": "), Err(NvbandwidthError::Json(_))));
    }

    /// v0.10 prints the CUDA versions as `13.3 (13030)` and titles its latency
    /// matrix `Device to Device Latency SM ...` (real sample in
    /// `tests/fixtures/nvbandwidth/h100x8-validation-sheet-v0.10-latency-d2d-read.txt`).
    #[test]
    fn v0_10_versions_and_latency_title() {
        assert_eq!(cuda_version(" 13.3 (13030)"), "13030");
        assert_eq!(cuda_version("12040"), "12040");
        assert_eq!(cuda_version("13.3 (x)"), "13.3 (x)");
        assert!(is_matrix_title("Device to Device Latency SM GPU(row) <-> GPU(column) (ns)"));
        assert!(is_matrix_title("memcpy CE GPU(row) <-> GPU(column) Read1 bandwidth (GB/s)"));
        assert!(!is_matrix_title("Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)"));
        let text = "Running device_to_device_latency_sm.\n\
            Device to Device Latency SM GPU(row) <-> GPU(column) (ns)\n           0         1\n 0       N/A    826.42\n\
            1    825.83       N/A\n\nSUM device_to_device_latency_sm 1652.25\n";
        let run = parse(text).unwrap();
        assert_eq!(run.testcases[0].matrix, [vec![None, Some(826.42)], vec![Some(825.83), None]]);
        assert!(!run.testcases[0].is_bandwidth());
    }

    #[test]
    fn device_lines() {
        let d = device_line("Device 0: NVIDIA A100-SXM4-40GB (00000000:99:00)").unwrap();
        assert_eq!((d.ordinal, d.name.as_str()), (0, "NVIDIA A100-SXM4-40GB"));
        assert_eq!(d.bus_id.map(|b| b.to_string()).as_deref(), Some("0000:99:00.0"));
        assert_eq!(device_line("0: NVIDIA GH200 480GB (00000009:01:00): (host)").unwrap().bus_id.unwrap().domain, 9);
        assert!(device_line("Device x: y").is_none());
    }
}
