//! NCCL graph dumps as `topo nccl` shows rings read from a log: per graph its
//! pattern and search result, then one line per channel with the GPU order
//! and the NICs it enters and leaves through; repeated channels print once.

use std::fmt::Write;

use topo_model::nccl_graph::{GraphDump, GraphStep, pattern_name};

fn step(s: &GraphStep) -> String {
    match s {
        GraphStep::Net(n) => format!("NET {n}"),
        GraphStep::Gpu(g) => g.to_string(),
    }
}

pub fn render(out: &mut String, dumps: &[GraphDump]) {
    for dump in dumps {
        let version = dump.version.map(|v| format!(", version {v}")).unwrap_or_default();
        let _ = writeln!(out, "\nNCCL graph dump {}{version}", dump.source);
        for graph in &dump.graphs {
            let _ = writeln!(
                out,
                "  {} (graph {}, pattern {}): {} channel{}, {}/{} GB/s intra/inter, {}/{}{}{}",
                pattern_name(graph.pattern),
                graph.id,
                graph.pattern,
                graph.nchannels,
                if graph.nchannels == 1 { "" } else { "s" },
                graph.speed_intra,
                graph.speed_inter,
                if graph.type_intra.is_empty() { "?" } else { &graph.type_intra },
                if graph.type_inter.is_empty() { "?" } else { &graph.type_inter },
                if graph.crossnic { ", cross-NIC" } else { "" },
                if graph.channels.is_empty() { " (no channels: pattern unused)" } else { "" }
            );
            let mut seen: Vec<(&[GraphStep], usize)> = Vec::new();
            for (c, channel) in graph.channels.iter().enumerate() {
                if let Some((_, first)) = seen.iter().find(|(steps, _)| *steps == channel.steps.as_slice()) {
                    let _ = writeln!(out, "    {c:02}: same as {first:02}");
                    continue;
                }
                seen.push((&channel.steps, c));
                let steps: Vec<String> = channel.steps.iter().map(step).collect();
                let _ = writeln!(out, "    {c:02}: {}", steps.join(" → "));
            }
        }
    }
}
