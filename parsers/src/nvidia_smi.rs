//! `nvidia-smi topo -m` text, as pasted into tickets: the GPU/NIC matrix, the
//! affinity columns and the NIC legend, tab- or space-aligned, old and new
//! drivers. [`to_topology`] turns it into a partial topology whose matrix shows
//! the same cells, so `topo show` can re-render (and later reason about) it.

use std::collections::BTreeMap;

use topo_model::{
    BridgeRole, BusId, CpuSet, Gpu, Nic, NicKind, NumaNode, NvLinkBundle, NvLinkRemote, NvSwitch, PciDevice, SmiClass,
    Topology,
};

#[derive(Debug, Clone, PartialEq)]
pub struct SmiMatrix {
    /// `GPU0`, ..., `NIC0` (or NIC names on old drivers).
    pub labels: Vec<String>,
    pub cells: Vec<Vec<SmiClass>>,
    pub cpu_affinity: Vec<Option<String>>,
    pub numa_affinity: Vec<Option<String>>,
    /// `NIC0` -> `mlx5_0` from the `NIC Legend:` block.
    pub nic_names: BTreeMap<String, String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SmiError {
    #[error("{name}: no `nvidia-smi topo -m` header line (one starting with GPU0)")]
    NoHeader { name: String },
    #[error("{name}:{line}: {message}")]
    Malformed { name: String, line: usize, message: String },
    #[error("{name}: {size} bytes is larger than any `nvidia-smi topo -m` output ({MAX_SMI_BYTES} bytes at most)")]
    TooLarge { name: String, size: usize },
}

/// Text above this is refused before parsing: a 64-GPU, 32-NIC matrix is
/// under 64 KiB.
pub const MAX_SMI_BYTES: usize = 4 * 1024 * 1024;

/// A token from the input as an error message shows it: its first
/// [`MAX_ECHO_CHARS`] characters, so a crafted line is never echoed whole.
fn echo(token: &str) -> String {
    match token.char_indices().nth(MAX_ECHO_CHARS) {
        Some((cut, _)) => format!("{}... ({} bytes)", &token[..cut], token.len()),
        None => token.to_string(),
    }
}

const MAX_ECHO_CHARS: usize = 200;

/// The highest NUMA node number Linux allows (`CONFIG_NODES_SHIFT` 10).
pub const MAX_NUMA_NODE: i32 = 1023;

/// Reads the matrix; `name` is used in messages.
pub fn parse(text: &str, name: &str) -> Result<SmiMatrix, SmiError> {
    if text.len() > MAX_SMI_BYTES {
        return Err(SmiError::TooLarge { name: name.to_string(), size: text.len() });
    }
    let lines: Vec<&str> = text.lines().collect();
    let header_at = lines
        .iter()
        .position(|l| l.split_whitespace().next() == Some("GPU0") && l.starts_with(char::is_whitespace))
        .ok_or_else(|| SmiError::NoHeader { name: name.to_string() })?;
    let header = lines[header_at];
    let labels: Vec<String> = header
        .split_whitespace()
        .take_while(|t| !matches!(*t, "CPU" | "NUMA" | "GPU" | "Affinity"))
        .map(str::to_string)
        .collect();
    let has_cpu = header.contains("CPU Affinity");
    let has_numa = header.contains("NUMA Affinity");
    let malformed =
        |line: usize, message: String| SmiError::Malformed { name: name.to_string(), line: line + 1, message };

    let mut cells = Vec::new();
    let (mut cpu_affinity, mut numa_affinity) = (Vec::new(), Vec::new());
    let mut row_lines = lines.iter().enumerate().skip(header_at + 1).filter(|(_, l)| !l.trim().is_empty());
    for label in &labels {
        let (number, line) =
            row_lines.next().ok_or_else(|| malformed(lines.len(), format!("missing the {} row", echo(label))))?;
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if tokens.first() != Some(&label.as_str()) {
            return Err(malformed(
                number,
                format!("expected the {} row, found {:?}", echo(label), echo(tokens.first().unwrap_or(&""))),
            ));
        }
        let row: Option<Vec<SmiClass>> = tokens.iter().skip(1).take(labels.len()).map(|t| SmiClass::parse(t)).collect();
        let row = row
            .filter(|r| r.len() == labels.len())
            .ok_or_else(|| malformed(number, format!("{}: expected {} matrix cells", echo(label), labels.len())))?;
        cells.push(row);
        let mut extra = tokens.iter().skip(1 + labels.len());
        cpu_affinity.push(if has_cpu { extra.next().map(|s| s.to_string()) } else { None });
        numa_affinity.push(if has_numa { extra.next().map(|s| s.to_string()) } else { None });
    }
    for (i, row) in cells.iter().enumerate() {
        if row.get(i) != Some(&SmiClass::Same) {
            return Err(malformed(header_at + 1 + i, format!("{}: the diagonal is not X", echo(&labels[i]))));
        }
    }
    let nic_names = lines
        .iter()
        .filter_map(|l| {
            let (label, name) = l.trim().split_once(':')?;
            (label.starts_with("NIC") && label[3..].parse::<u32>().is_ok())
                .then(|| (label.to_string(), name.trim().to_string()))
        })
        .collect();
    Ok(SmiMatrix { labels, cells, cpu_affinity, numa_affinity, nic_names })
}

/// How close two endpoints are on PCIe, for grouping: 1 PIX .. 5 SYS; `None`
/// for NVLink cells (nvidia-smi hides the PCIe relation behind them).
fn level(class: SmiClass) -> Option<u8> {
    match class {
        SmiClass::Same => Some(0),
        SmiClass::Pix => Some(1),
        SmiClass::Pxb => Some(2),
        SmiClass::Phb => Some(3),
        SmiClass::Node => Some(4),
        SmiClass::Sys => Some(5),
        SmiClass::Nv(_) | SmiClass::Unknown => None,
    }
}

/// Union-find over endpoint indices.
struct Groups(Vec<usize>);

impl Groups {
    fn new(n: usize) -> Groups {
        Groups((0..n).collect())
    }
    fn find(&mut self, i: usize) -> usize {
        let mut root = i;
        while self.0[root] != root {
            root = self.0[root];
        }
        self.0[i] = root;
        root
    }
    fn join(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        self.0[a.max(b)] = a.min(b);
    }
    /// Members of each group, in index order.
    fn members(&mut self, of: &[usize]) -> Vec<Vec<usize>> {
        let mut by_root: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &i in of {
            let root = self.find(i);
            by_root.entry(root).or_default().push(i);
        }
        by_root.into_values().collect()
    }
}

/// Endpoints within `members` grouped by "at most `max` apart" (transitively).
fn cluster(matrix: &SmiMatrix, members: &[usize], max: u8) -> Vec<Vec<usize>> {
    let mut groups = Groups::new(matrix.labels.len());
    for &a in members {
        for &b in members {
            if level(matrix.cells[a][b]).is_some_and(|l| l <= max) {
                groups.join(a, b);
            }
        }
    }
    groups.members(members)
}

/// A made-up PCI address for a device the text names but does not locate.
fn synthetic(n: usize) -> BusId {
    BusId { domain: 0xfffe, bus: (n / 32) as u8, device: (n % 32) as u8, function: 0 }
}

/// Builds a topology that shows the same matrix. Endpoints get synthetic bus IDs
/// (domain `fffe`): the text has none. Returns warnings for cells that no PCIe
/// hierarchy can reproduce (inconsistent pastes).
pub fn to_topology(matrix: &SmiMatrix) -> (Topology, Vec<String>) {
    let n = matrix.labels.len();
    let all: Vec<usize> = (0..n).collect();
    let is_gpu = |i: usize| matrix.labels[i].starts_with("GPU");
    let bus_of: Vec<BusId> = (0..n).map(synthetic).collect();
    let mut next_bridge = n;
    let mut topology = Topology::default();

    // NUMA domains: closer than SYS; GPUs whose relations are all NVLink join
    // the domain of GPUs with the same printed affinity, unless a SYS cell says no.
    let mut domains = cluster(matrix, &all, 4);
    let affinity = |i: usize| matrix.numa_affinity[i].clone().or_else(|| matrix.cpu_affinity[i].clone());
    let mut merged = true;
    while merged {
        merged = false;
        'outer: for a in 0..domains.len() {
            for b in a + 1..domains.len() {
                let same = domains[a]
                    .iter()
                    .any(|&i| domains[b].iter().any(|&j| affinity(i).is_some() && affinity(i) == affinity(j)));
                let apart = domains[a].iter().any(|&i| domains[b].iter().any(|&j| matrix.cells[i][j] == SmiClass::Sys));
                if same && !apart {
                    let moved = domains.remove(b);
                    domains[a].extend(moved);
                    domains[a].sort();
                    merged = true;
                    break 'outer;
                }
            }
        }
    }
    let mut used_ids = Vec::new();
    let mut numa_warnings = Vec::new();
    for (d, domain) in domains.iter().enumerate() {
        // A printed NUMA node that is no node number (7777777777, -5) is unknown, and said so.
        let out_of_range: Vec<(usize, &str)> = domain
            .iter()
            .filter_map(|&i| Some((i, matrix.numa_affinity.get(i)?.as_deref()?)))
            .filter(|(_, text)| *text != "N/A" && !text.parse::<i32>().is_ok_and(|n| (0..=MAX_NUMA_NODE).contains(&n)))
            .collect();
        for (i, text) in &out_of_range {
            numa_warnings.push(format!(
                "{}: NUMA affinity {} is not a NUMA node (0 to {MAX_NUMA_NODE}): ignored; the node is \
                 told from the GPUs that share its domain, else unknown",
                echo(&matrix.labels[*i]),
                echo(text)
            ));
        }
        let known_numa = out_of_range.len() < domain.len();
        let printed: Option<i32> = domain
            .iter()
            .find_map(|&i| matrix.numa_affinity[i].as_deref()?.parse().ok())
            .filter(|n| (0..=MAX_NUMA_NODE).contains(n));
        let id = match printed {
            Some(id) if !used_ids.contains(&id) => id,
            _ => (0..).find(|k| !used_ids.contains(k)).unwrap_or(d as i32),
        };
        used_ids.push(id);
        let cpus: Vec<u32> = domain
            .iter()
            .filter_map(|&i| CpuSet::parse_list(matrix.cpu_affinity[i].as_deref()?).ok())
            .flat_map(|c| c.cpus().to_vec())
            .collect();
        topology.numa_nodes.push(NumaNode { id, cpus: CpuSet::new(cpus), ..NumaNode::default() });

        for (h, host) in cluster(matrix, domain, 3).into_iter().enumerate() {
            let host_bridge = format!("pci-synthetic-{d}-{h}");
            let device =
                |bus_id: BusId, parent: Option<BusId>, bridge: Option<BridgeRole>, i: Option<usize>| PciDevice {
                    bus_id,
                    parent,
                    host_bridge: Some(host_bridge.clone()),
                    bridge,
                    class: Some(match (bridge, i) {
                        (Some(_), _) => 0x060400,
                        (None, Some(i)) if is_gpu(i) => 0x030200,
                        _ => 0x020700,
                    }),
                    vendor: i.filter(|i| is_gpu(*i)).map(|_| topo_model::topology::NVIDIA_VENDOR),
                    numa_node: known_numa.then_some(id),
                    local_cpus: i.and_then(|i| CpuSet::parse_list(matrix.cpu_affinity[i].as_deref()?).ok()),
                    ..PciDevice::default()
                };
            for top in cluster(matrix, &host, 2) {
                let pix_groups = cluster(matrix, &top, 1);
                if top.len() == 1 {
                    topology.pci_devices.push(device(bus_of[top[0]], None, None, Some(top[0])));
                    continue;
                }
                let switch = synthetic(next_bridge);
                next_bridge += 1;
                topology.pci_devices.push(device(switch, None, Some(BridgeRole::Switch), None));
                for group in pix_groups {
                    let parent = if cluster(matrix, &top, 1).len() == 1 {
                        switch
                    } else {
                        let child = synthetic(next_bridge);
                        next_bridge += 1;
                        topology.pci_devices.push(device(child, Some(switch), Some(BridgeRole::Switch), None));
                        child
                    };
                    for i in group {
                        topology.pci_devices.push(device(bus_of[i], Some(parent), None, Some(i)));
                    }
                }
            }
        }
    }

    for (label, &bus_id) in matrix.labels.iter().zip(&bus_of) {
        if let Some(index) = label.strip_prefix("GPU") {
            topology.gpus.push(Gpu { index: index.parse().ok(), bus_id, ..Gpu::default() });
        } else {
            let name = matrix.nic_names.get(label).cloned().unwrap_or_else(|| label.clone());
            topology.nics.push(Nic { name, bus_id: Some(bus_id), kind: NicKind::Unknown, ..Nic::default() });
        }
    }
    nvlinks(matrix, &bus_of, &mut topology);
    topology.canonicalize();

    let rebuilt = topology.matrix();
    let mut warnings = numa_warnings;
    for (i, row) in matrix.cells.iter().enumerate() {
        for (j, cell) in row.iter().enumerate() {
            let a = matrix.labels.get(i).map(String::as_str).unwrap_or("?");
            let label_j = matrix.labels.get(j).map(String::as_str).unwrap_or("?");
            let position = |label: &str| {
                rebuilt.endpoints.iter().position(|e| e.label == label || e.name.as_deref() == Some(label))
            };
            let shown = match (position(a), position(label_j)) {
                (Some(x), Some(y)) => rebuilt.cells[x][y],
                _ => SmiClass::Unknown,
            };
            if shown != *cell {
                warnings.push(format!("{a} x {label_j}: the text says {cell}, no PCIe tree gives that with its other cells (shown as {shown})"));
            }
        }
    }
    (topology, warnings)
}

/// NV# cells: a clique of GPUs all joined by the same count is an NVSwitch
/// system (nvidia-smi prints the per-GPU link count to the fabric); otherwise
/// the links are direct (DGX-1's NV1/NV2 mesh, NVLink bridges).
fn nvlinks(matrix: &SmiMatrix, bus_of: &[BusId], topology: &mut Topology) {
    let gpus: Vec<usize> = (0..matrix.labels.len()).filter(|&i| matrix.labels[i].starts_with("GPU")).collect();
    let counts: Vec<u32> = gpus
        .iter()
        .flat_map(|&a| gpus.iter().filter(move |&&b| b != a).map(move |&b| (a, b)))
        .filter_map(|(a, b)| match matrix.cells[a][b] {
            SmiClass::Nv(c) => Some(c),
            _ => None,
        })
        .collect();
    let pairs = gpus.len() * gpus.len().saturating_sub(1);
    let switched = gpus.len() >= 3 && counts.len() == pairs && counts.windows(2).all(|w| w[0] == w[1]);
    if switched {
        topology.nvswitches.push(NvSwitch { bus_id: BusId::NCCL_INVISIBLE, visible: false });
        for &g in &gpus {
            topology.nvlinks.push(NvLinkBundle {
                gpu: bus_of[g],
                remote: NvLinkRemote::NvSwitch(BusId::NCCL_INVISIBLE),
                links: counts[0],
            });
        }
        return;
    }
    for &a in &gpus {
        for &b in &gpus {
            if let SmiClass::Nv(links) = matrix.cells[a][b] {
                topology.nvlinks.push(NvLinkBundle { gpu: bus_of[a], remote: NvLinkRemote::Gpu(bus_of[b]), links });
            }
        }
    }
}
