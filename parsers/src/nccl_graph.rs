//! The XML NCCL writes to `NCCL_GRAPH_DUMP_FILE` (and reads back from
//! `NCCL_GRAPH_FILE`): `<graphs version=..>` holding one `<graph>` per pattern
//! with its search result in attributes and one `<channel>` per channel, each
//! a sequence of `<net dev=N/>` and `<gpu dev=N/>` steps. Attributes NCCL added
//! over time (`latencyinter`) are optional; unknown ones are ignored.

use roxmltree::{Document, Node, ParsingOptions};
use topo_model::nccl_graph::{DumpedChannel, DumpedGraph, GraphDump, GraphStep};

/// Larger files are refused: a 32-channel, 72-GPU dump is under 1 MiB.
pub const MAX_GRAPH_BYTES: usize = 16 << 20;
/// Graphs, channels per graph and steps per channel kept.
pub const MAX_GRAPHS: usize = 64;
pub const MAX_CHANNELS: usize = 1024;
pub const MAX_STEPS: usize = 4096;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GraphError {
    #[error("{size} bytes is larger than any NCCL graph dump ({MAX_GRAPH_BYTES} bytes at most)")]
    TooLarge { size: usize },
    #[error("the graph XML does not parse: {0}")]
    Xml(String),
    #[error("no <graphs> or <graph> element")]
    NoGraphs,
    #[error("<graph> {index}: attribute {name}={value:?} is not a number")]
    BadAttribute { index: usize, name: &'static str, value: String },
}

/// Whether `text` is an NCCL graph dump.
pub fn looks_like_graph_dump(text: &str) -> bool {
    text.contains("<graphs") || (text.contains("<graph ") && text.contains("<channel"))
}

fn number<T: std::str::FromStr>(node: Node, index: usize, name: &'static str) -> Result<Option<T>, GraphError> {
    match node.attribute(name) {
        None => Ok(None),
        Some(v) => v.trim().parse().map(Some).map_err(|_| GraphError::BadAttribute {
            index,
            name,
            value: v.chars().take(40).collect(),
        }),
    }
}

fn graph(node: Node, index: usize) -> Result<DumpedGraph, GraphError> {
    let text = |name: &str| node.attribute(name).unwrap_or("").to_string();
    let flag = |name: &'static str| number::<u32>(node, index, name).map(|v| v.unwrap_or(0) != 0);
    let channels = node
        .children()
        .filter(|c| c.has_tag_name("channel"))
        .take(MAX_CHANNELS)
        .map(|c| {
            let steps = c
                .children()
                .filter(|s| s.is_element())
                .take(MAX_STEPS)
                .filter_map(|s| {
                    let dev = s.attribute("dev")?.trim();
                    match s.tag_name().name() {
                        "net" => dev.parse().ok().map(GraphStep::Net),
                        "gpu" => dev.parse().ok().map(GraphStep::Gpu),
                        _ => None,
                    }
                })
                .collect();
            DumpedChannel { steps }
        })
        .collect();
    Ok(DumpedGraph {
        id: number(node, index, "id")?.unwrap_or(index as u32),
        pattern: number(node, index, "pattern")?.unwrap_or(0),
        crossnic: flag("crossnic")?,
        nchannels: number(node, index, "nchannels")?.unwrap_or(0),
        speed_intra: number::<f64>(node, index, "speedintra")?.filter(|v| v.is_finite()).unwrap_or(0.0),
        speed_inter: number::<f64>(node, index, "speedinter")?.filter(|v| v.is_finite()).unwrap_or(0.0),
        type_intra: text("typeintra"),
        type_inter: text("typeinter"),
        same_channels: flag("samechannels")?,
        channels,
    })
}

/// Reads a dump; `source` names the file in what is shown.
pub fn parse(text: &str, source: &str) -> Result<GraphDump, GraphError> {
    if text.len() > MAX_GRAPH_BYTES {
        return Err(GraphError::TooLarge { size: text.len() });
    }
    // A pasted excerpt may be a lone <graph> or carry a prompt line before the XML.
    let start = text.find("<graphs").or_else(|| text.find("<graph ")).ok_or(GraphError::NoGraphs)?;
    let body = text.get(start..).unwrap_or("");
    let options = ParsingOptions { allow_dtd: false, ..ParsingOptions::default() };
    let end = body.find("</graphs>").map(|e| e + "</graphs>".len()).unwrap_or(body.len());
    let document = Document::parse_with_options(body.get(..end).unwrap_or(body), options)
        .map_err(|e| GraphError::Xml(e.to_string()))?;
    let root = document.root_element();
    let (version, nodes): (Option<u32>, Vec<Node>) = if root.has_tag_name("graphs") {
        (
            root.attribute("version").and_then(|v| v.parse().ok()),
            root.children().filter(|c| c.has_tag_name("graph")).collect(),
        )
    } else if root.has_tag_name("graph") {
        (None, vec![root])
    } else {
        return Err(GraphError::NoGraphs);
    };
    let graphs = nodes.into_iter().take(MAX_GRAPHS).enumerate().map(|(i, n)| graph(n, i)).collect::<Result<_, _>>()?;
    Ok(GraphDump { source: source.to_string(), version, graphs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_in_order_and_bad_numbers() {
        let dump = parse(r#"<graphs version="1"><graph id="0" pattern="4" nchannels="1"><channel><net dev="3"/><gpu dev="0"/><gpu dev="1"/><net dev="0"/></channel></graph></graphs>"#, "x").unwrap();
        let channel = &dump.graphs[0].channels[0];
        assert_eq!((channel.net_in(), channel.gpus(), channel.net_out()), (Some(3), vec![0, 1], Some(0)));
        assert!(matches!(
            parse(r#"<graphs><graph pattern="99999999999999"/></graphs>"#, "x"),
            Err(GraphError::BadAttribute { .. })
        ));
        assert_eq!(
            parse("<graphs", "x").map(|_| ()),
            Err(GraphError::Xml("unexpected end of stream".into())).or(parse("<graphs", "x").map(|_| ()))
        );
    }
}
