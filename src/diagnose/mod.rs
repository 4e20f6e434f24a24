//! `topo diagnose`: findings from what NCCL reported (a parsed log) and, when
//! given, what the node is (a snapshot). Rules are pure functions over those
//! two; each returns at most one finding with its evidence.

mod evidence;
pub mod hang;
mod job;
mod network;
mod rules;
mod settings;

use topo_model::nccl::NcclReport;
use topo_model::{Finding, Snapshot};

/// What the rules look at.
pub struct Inputs<'a> {
    pub report: &'a NcclReport,
    pub machine: Option<&'a Snapshot>,
}

/// Every finding, most severe first, then by code.
pub fn diagnose(report: &NcclReport, machine: Option<&Snapshot>) -> Vec<Finding> {
    let inputs = Inputs { report, machine };
    let mut findings: Vec<Finding> = rules::RULES.iter().filter_map(|rule| rule(&inputs)).collect();
    findings.extend(machine.map(crate::checks::hardware).unwrap_or_default());
    findings.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.code.cmp(&b.code)));
    findings
}
