//! The GPU/NIC matrix as `nvidia-smi topo -m` prints it, each cell coloured
//! by its path class (the colours of the picture and the legend), so the slow
//! pairs stand out before anyone reads a word.

use std::fmt::Write;

use topo_model::{EndpointKind, SmiClass, Topology};

use super::escape::text;

/// The CSS class of a cell: one per colour of [`super::CLASS_COLOURS`].
pub fn class_css(class: SmiClass) -> &'static str {
    match class {
        SmiClass::Same => "c-x",
        SmiClass::Nv(_) => "c-nv",
        SmiClass::Pix | SmiClass::Pxb => "c-pix",
        SmiClass::Phb | SmiClass::Node => "c-node",
        SmiClass::Sys => "c-sys",
        SmiClass::Unknown => "c-unknown",
    }
}

pub fn render(out: &mut String, topology: &Topology) {
    let matrix = topology.matrix();
    if matrix.endpoints.is_empty() {
        out.push_str("<p>No NVIDIA GPU or RDMA NIC found: no connection matrix.</p>\n");
        return;
    }
    out.push_str("<table class=\"matrix\">\n<tr><th></th>");
    for endpoint in &matrix.endpoints {
        let _ = write!(out, "<th>{}</th>", text(&endpoint.label));
    }
    out.push_str("<th>NUMA</th></tr>\n");
    for (row, cells) in matrix.endpoints.iter().zip(&matrix.cells) {
        let title = row.name.as_deref().map(|n| format!("{n} ({})", row.bus_id)).unwrap_or(row.bus_id.to_string());
        let _ = write!(out, "<tr><th title=\"{}\">{}</th>", text(&title), text(&row.label));
        for (column, cell) in matrix.endpoints.iter().zip(cells) {
            let _ = write!(
                out,
                "<td class=\"{}\" title=\"{} - {}: {}\">{}</td>",
                class_css(*cell),
                text(&row.label),
                text(&column.label),
                cell,
                text(&cell.to_string())
            );
        }
        let numa = match row.kind {
            EndpointKind::Gpu | EndpointKind::Nic => {
                topology.numa_of(row.bus_id).map_or("N/A".into(), |n| n.to_string())
            }
        };
        let _ = writeln!(out, "<td class=\"numa\">{numa}</td></tr>");
    }
    out.push_str("</table>\n<p class=\"legend\">");
    for (css, words) in [
        ("c-nv", "NV# bonded NVLinks"),
        ("c-pix", "PIX / PXB through PCIe switches"),
        ("c-node", "PHB / NODE through a host bridge"),
        ("c-sys", "SYS across sockets"),
    ] {
        let _ = write!(out, "<span class=\"swatch {css}\">&nbsp;&nbsp;</span> {words} &nbsp; ");
    }
    out.push_str("</p>\n");
    let nics: Vec<String> = matrix
        .endpoints
        .iter()
        .filter(|e| e.kind == EndpointKind::Nic)
        .map(|e| format!("{}: {}", text(&e.label), text(e.name.as_deref().unwrap_or("?"))))
        .collect();
    if !nics.is_empty() {
        let _ = writeln!(out, "<p class=\"legend\">{}</p>", nics.join(" &middot; "));
    }
}
