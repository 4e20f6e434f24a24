//! The human report of `topo nccl`: per communicator its ranks, rings with the
//! transport of every hop, trees, channel counts and graph search; then network,
//! environment, warnings, errors, collectives and tuning.

use std::collections::BTreeMap;
use std::fmt::Write;

use topo_model::nccl::{Communicator, HopIndex, NcclReport, Ring};

/// `ncclResult_t` names, for error traces.
fn result_name(code: i64) -> &'static str {
    match code {
        0 => "success",
        1 => "unhandled CUDA error",
        2 => "system error",
        3 => "internal error",
        4 => "invalid argument",
        5 => "invalid usage",
        6 => "remote error",
        7 => "in progress",
        8 => "timeout",
        _ => "unknown",
    }
}

pub fn render(report: &NcclReport) -> String {
    let mut out = String::new();
    summary(&mut out, report);
    for (index, comm) in report.communicators.iter().enumerate() {
        communicator(&mut out, index, comm);
    }
    super::graph_dump::render(&mut out, &report.graph_dumps);
    logged_topology(&mut out, report);
    network(&mut out, report);
    environment(&mut out, report);
    problems(&mut out, report);
    collectives(&mut out, report);
    nccl_tests(&mut out, report);
    let _ = writeln!(
        out,
        "Lines: {} read, {} from NCCL, {} not understood",
        report.lines, report.nccl_lines, report.unparsed_lines
    );
    if !report.not_kept.is_empty() {
        let parts: Vec<String> = report.not_kept.iter().map(|(table, n)| format!("{n} {table}")).collect();
        let _ = writeln!(out, "Not kept (tables at their cap; memory stays bounded): {}", parts.join(", "));
    }
    out
}

/// NCCL's own view of each node (its topology dump): the path type between
/// every pair of GPUs, and from each GPU to the NICs, once per pair.
fn logged_topology(out: &mut String, report: &NcclReport) {
    if report.logged_paths.is_empty() {
        return;
    }
    out.push_str("Paths in NCCL's topology dump (GPU pairs and GPU to NIC):\n");
    let mut seen = std::collections::BTreeSet::new();
    let mut lines: std::collections::BTreeMap<String, Vec<String>> = std::collections::BTreeMap::new();
    for path in &report.logged_paths {
        let (a, b) = if path.from <= path.to { (&path.from, &path.to) } else { (&path.to, &path.from) };
        if !seen.insert((path.host.clone(), a.clone(), b.clone())) {
            continue;
        }
        let host = path.host.clone().unwrap_or_else(|| "?".into());
        lines.entry(host).or_default().push(format!("{a} ↔ {b} {} {:.1} GB/s", path.path_type, path.bw));
    }
    for (host, pairs) in lines {
        let shown: Vec<&String> = pairs.iter().take(32).collect();
        let more = pairs.len().saturating_sub(shown.len());
        let tail = if more > 0 { format!(" · {more} more") } else { String::new() };
        let _ = writeln!(out, "  {host}: {}{tail}", shown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" · "));
    }
    out.push('\n');
}

fn summary(out: &mut String, report: &NcclReport) {
    let versions = if report.nccl_versions.is_empty() {
        "version not printed".to_string()
    } else {
        report.nccl_versions.join(", ")
    };
    let _ = writeln!(
        out,
        "NCCL {versions} · {} host{} · {} process{} · {} communicator{}",
        report.hosts.len(),
        plural(report.hosts.len()),
        report.processes,
        if report.processes == 1 { "" } else { "es" },
        report.communicators.len(),
        plural(report.communicators.len()),
    );
    if !report.hosts.is_empty() {
        let _ = writeln!(out, "Hosts: {}", report.hosts.join(", "));
    }
    if report.nodes_at_least
        && let Some(nodes) = report.nodes
    {
        let _ = writeln!(
            out,
            "Nodes: at least {nodes} (the lines show peers on other nodes than the {} named: one node's log of a larger job)",
            if report.hosts.len() == 1 { "host" } else { "hosts" }
        );
    }
    out.push('\n');
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn communicator(out: &mut String, index: usize, comm: &Communicator) {
    let size = match (comm.nranks, comm.nranks_source.as_deref()) {
        (Some(n), Some("printed")) | (Some(n), None) => format!("{n} ranks"),
        (Some(n), Some(source)) => format!("{n} ranks ({source})"),
        (None, _) => "size unknown".to_string(),
    };
    let at_least = if comm.nnodes_at_least { "at least " } else { "" };
    let nodes = comm.nnodes.map(|n| format!(" on {at_least}{n} node{}", plural(n as usize))).unwrap_or_default();
    let _ = writeln!(out, "Communicator {index} [{}]: {size}{nodes}", comm.id);
    if let Some(n) = comm.nranks.filter(|_| !comm.init_complete.is_empty() || !comm.ranks.is_empty()) {
        let _ = write!(out, "  Init COMPLETE: {}/{n} ranks", comm.init_complete.len());
        if let Some(seconds) = comm.init_seconds {
            let _ = write!(out, ", slowest {seconds:.2} s");
        }
        out.push('\n');
    }
    if !comm.ranks.is_empty() {
        out.push_str("  rank  host                  pid       cudaDev  nvmlDev  busId\n");
        for rank in &comm.ranks {
            let _ = writeln!(
                out,
                "  {:<5} {:<21} {:<9} {:<8} {:<8} {}",
                rank.rank,
                rank.host.as_deref().unwrap_or("?"),
                rank.pid.map_or("?".to_string(), |p| p.to_string()),
                rank.cuda_dev.map_or("?".to_string(), |d| d.to_string()),
                rank.nvml_dev.map_or("?".to_string(), |d| d.to_string()),
                rank.bus_id.map_or("?".to_string(), |b| b.to_string()),
            );
        }
    }
    if let Some(c) = comm.channels {
        let mut parts = vec![format!("{} coll", c.coll)];
        parts.extend(c.collnet.map(|n| format!("{n} collnet")));
        parts.extend(c.nvls.map(|n| format!("{n} nvls")));
        parts.push(format!("{} p2p", c.p2p));
        parts.extend(c.p2p_per_peer.map(|n| format!("{n} p2p per peer")));
        let _ = writeln!(out, "  Channels: {}", parts.join(", "));
    }
    for graph in &comm.graphs {
        let kind = match graph.pattern {
            1 => "balanced tree",
            2 => "split tree",
            3 => "tree",
            4 => "ring",
            5 => "NVLS",
            6 => "CollNet direct",
            _ => "pattern",
        };
        let _ = writeln!(
            out,
            "  Graph search: {kind} (pattern {}), {} channels, bw {:.1}/{:.1} GB/s, type {}/{}",
            graph.pattern, graph.channels, graph.bw_intra, graph.bw_inter, graph.type_intra, graph.type_inter
        );
    }
    rings(out, comm);
    trees(out, comm);
    transports(out, comm);
    out.push('\n');
}

fn hop_text(hops: &HopIndex, channel: u32, from: u32, to: u32) -> String {
    match hops.hop(channel, from, to) {
        Some(c) => {
            let mut text = format!("{from}→{to} {}", c.detail);
            if c.cross_node == Some(true) {
                text.push_str(" [cross-node]");
            }
            if let Some(hw) = &c.hardware {
                let _ = write!(text, " [{} / {}]", hw.smi, hw.nccl);
            }
            text
        }
        None => format!("{from}→{to} ?"),
    }
}

fn ring_hops(hops: &HopIndex, ring: &Ring) -> Vec<String> {
    let n = ring.order.len();
    (0..n).map(|i| hop_text(hops, ring.channel, ring.order[i], ring.order[(i + 1) % n])).collect()
}

fn rings(out: &mut String, comm: &Communicator) {
    if comm.rings.is_empty() {
        return;
    }
    let _ = writeln!(out, "  Rings ({}):", comm.rings.len());
    // Channels with the same order and transports print once.
    let mut seen: BTreeMap<(Vec<u32>, Vec<String>), u32> = BTreeMap::new();
    let index = HopIndex::new(comm);
    for ring in &comm.rings {
        let hops = ring_hops(&index, ring);
        let order: Vec<String> = ring.order.iter().chain(ring.order.first()).map(u32::to_string).collect();
        let key = (
            ring.order.clone(),
            hops.iter().map(|h| h.split_once(' ').map_or(h.clone(), |(_, t)| t.to_string())).collect(),
        );
        if let Some(first) = seen.get(&key) {
            let _ = writeln!(out, "    {:02}: same as {first:02}", ring.channel);
            continue;
        }
        seen.insert(key, ring.channel);
        let _ = writeln!(out, "    {:02}: {}", ring.channel, order.join(" → "));
        if hops.iter().any(|h| !h.ends_with(" ?")) {
            let _ = writeln!(out, "        {}", hops.join(" · "));
        }
    }
}

fn trees(out: &mut String, comm: &Communicator) {
    if comm.trees.is_empty() {
        return;
    }
    let mut by_channel: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for node in &comm.trees {
        let parent = if node.parent < 0 { "root".to_string() } else { format!("↑{}", node.parent) };
        let children = if node.children.is_empty() {
            String::new()
        } else {
            format!(" ↓{}", node.children.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
        };
        by_channel.entry(node.channel).or_default().push(format!("{} ({parent}{children})", node.rank));
    }
    let _ = writeln!(out, "  Trees ({} channels; rank (parent, children)):", by_channel.len());
    for (channel, nodes) in by_channel {
        let _ = writeln!(out, "    {channel:02}: {}", nodes.join("  "));
    }
}

fn transports(out: &mut String, comm: &Communicator) {
    if comm.connections.is_empty() {
        return;
    }
    let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for c in &comm.connections {
        let base = c.detail.split('/').take(2).collect::<Vec<_>>().join("/");
        let entry = counts.entry(base).or_default();
        entry.0 += 1;
        if c.gdr {
            entry.1 += 1;
        }
    }
    let parts: Vec<String> = counts
        .iter()
        .map(|(name, (n, gdr))| if *gdr > 0 { format!("{name} {n} ({gdr} GDRDMA)") } else { format!("{name} {n}") })
        .collect();
    let cross = comm.connections.iter().filter(|c| c.cross_node == Some(true)).count();
    let _ =
        writeln!(out, "  Connections: {} distinct; {}; {cross} cross-node", comm.connections.len(), parts.join(", "));
}

fn network(out: &mut String, report: &NcclReport) {
    let net = &report.network;
    if net.used.is_empty() && net.devices.is_empty() && net.bootstrap.is_empty() && !net.ib_not_found {
        return;
    }
    out.push_str("Network:\n");
    if !net.used.is_empty() {
        let _ = writeln!(out, "  Using network {}", net.used.join(", "));
    }
    if net.ib_not_found {
        out.push_str("  NET/IB: no device found\n");
    }
    if !net.devices.is_empty() {
        let _ = writeln!(out, "  Devices: {}", net.devices.join(", "));
    }
    if !net.gdr_by_hca.is_empty() {
        let gdr: Vec<String> = net
            .gdr_by_hca
            .iter()
            .map(|(hca, on)| format!("{hca} {}", if *on { "enabled" } else { "disabled" }))
            .collect();
        let _ = writeln!(out, "  GPUDirect RDMA: {}", gdr.join(", "));
    }
    if !net.bootstrap.is_empty() {
        let _ = writeln!(out, "  Bootstrap: {}", net.bootstrap.join(", "));
    }
    out.push('\n');
}

fn environment(out: &mut String, report: &NcclReport) {
    if report.env_overrides.is_empty() {
        return;
    }
    out.push_str("Set by environment:\n");
    for env in &report.env_overrides {
        let hosts = if env.hosts.is_empty() { String::new() } else { format!("  ({})", env.hosts.join(", ")) };
        let _ = writeln!(out, "  {}={}{hosts}", env.name, env.value);
    }
    out.push('\n');
}

fn problems(out: &mut String, report: &NcclReport) {
    if report.warning_count > 0 {
        let _ = writeln!(out, "Warnings ({} lines, {} distinct):", report.warning_count, report.warnings.len());
        messages(out, &report.warnings);
    }
    if !report.notices.is_empty() {
        let _ = writeln!(out, "Degraded choices NCCL reported ({} distinct):", report.notices.len());
        messages(out, &report.notices);
    }
    if !report.framework_errors.is_empty() {
        let _ = writeln!(out, "Framework errors carrying NCCL's words ({} distinct):", report.framework_errors.len());
        messages(out, &report.framework_errors);
    }
    if !report.error_codes.is_empty() {
        out.push_str("Errors propagated:\n");
        for e in &report.error_codes {
            let _ = writeln!(out, "  {} -> {} ({}) ×{}", e.location, e.code, result_name(e.code), e.count);
        }
        out.push('\n');
    }
}

/// One line per distinct message: where first, who, the source location, the
/// text, how often, and the class NCCL's message table gives it.
fn messages(out: &mut String, list: &[topo_model::nccl::Warning]) {
    for w in list {
        let mut who = match (w.host.as_deref(), w.rank) {
            (Some(h), Some(r)) => format!("{h} rank {r}"),
            (Some(h), None) => h.to_string(),
            (None, Some(r)) => format!("rank {r}"),
            (None, None) => "?".to_string(),
        };
        if w.hosts.len() > 1 || w.ranks.len() > 1 {
            who.push_str(&format!(" (+{} hosts, {} ranks)", w.hosts.len().saturating_sub(1), w.ranks.len()));
        }
        let source = w.source.as_deref().map(|s| format!(" {s}")).unwrap_or_default();
        let repeat = if w.count > 1 { format!(" (×{})", w.count) } else { String::new() };
        let class = w.class.as_deref().map(|c| format!(" [{c}]")).unwrap_or_default();
        let _ = writeln!(out, "  {}:{} {who}{source}: {}{repeat}{class}", w.file, w.line, w.text);
    }
    out.push('\n');
}

fn collectives(out: &mut String, report: &NcclReport) {
    if !report.collectives.is_empty() {
        out.push_str("Collectives (from COLL lines):\n");
        for (op, stats) in &report.collectives {
            let histogram: Vec<String> = stats
                .size_histogram
                .iter()
                .map(|(upper, n)| format!("≤{} ×{n}", topo_model::units::size_label(*upper)))
                .collect();
            let _ = writeln!(
                out,
                "  {op}: {} calls, {} total; {}",
                stats.calls,
                topo_model::units::size_label(stats.total_bytes),
                histogram.join(", ")
            );
        }
        out.push('\n');
    }
    if !report.tuning_ranges.is_empty() {
        out.push_str("Algorithm and protocol by size (NCCL's init tuning table):\n");
        let mut by_collective: Vec<(&str, Vec<String>)> = Vec::new();
        for range in &report.tuning_ranges {
            let text = format!(
                "{}..{} {}/{}",
                topo_model::units::size_label(range.from_bytes),
                topo_model::units::size_label(range.to_bytes),
                range.algorithm,
                range.protocol
            );
            match by_collective.last_mut() {
                Some((name, list)) if *name == range.collective => list.push(text),
                _ => by_collective.push((&range.collective, vec![text])),
            }
        }
        for (collective, ranges) in by_collective {
            let _ = writeln!(out, "  {collective}: {}", ranges.join(", "));
        }
        out.push('\n');
    }
    if !report.tuning.is_empty() {
        out.push_str("Algorithm and protocol chosen (TUNING lines):\n");
        for t in &report.tuning {
            let size = t.bytes.map(|b| format!(" {}", topo_model::units::size_label(b))).unwrap_or_default();
            let _ = writeln!(out, "  {}{size} -> {}/{} ×{}", t.collective, t.algorithm, t.protocol, t.count);
        }
        out.push('\n');
    }
}

fn nccl_tests(out: &mut String, report: &NcclReport) {
    for run in &report.nccl_tests {
        let name = run.test.as_deref().unwrap_or("nccl-tests");
        let _ = writeln!(out, "{name}: {} ranks, {} sizes", run.ranks.len(), run.rows.len());
        let best = run
            .rows
            .iter()
            .flat_map(|r| {
                [
                    Some((r.bytes, &r.out_of_place, "out-of-place")),
                    r.in_place.as_ref().map(|m| (r.bytes, m, "in-place")),
                ]
            })
            .flatten()
            .max_by(|a, b| a.1.busbw.total_cmp(&b.1.busbw));
        if let Some((bytes, measure, place)) = best {
            let _ = writeln!(
                out,
                "  peak busbw {:.2} GB/s (algbw {:.2}) at {} {place}",
                measure.busbw,
                measure.algbw,
                topo_model::units::size_label(bytes)
            );
        }
        let wrong: f64 = run
            .rows
            .iter()
            .flat_map(|r| [r.out_of_place.wrong, r.in_place.as_ref().and_then(|m| m.wrong)])
            .flatten()
            .sum();
        let mut facts = Vec::new();
        facts.extend(run.avg_bus_bandwidth.map(|a| format!("avg bus bandwidth {a}")));
        facts.extend(run.out_of_bounds.map(|o| format!("out of bounds {o}")));
        if run.rows.iter().any(|r| r.out_of_place.wrong.is_some()) {
            facts.push(format!("#wrong total {wrong}"));
        }
        if !facts.is_empty() {
            let _ = writeln!(out, "  {}", facts.join(", "));
        }
        out.push('\n');
    }
}
