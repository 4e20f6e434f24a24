//! The log rules, in the order they are run. Each reads the NCCL report, with
//! the snapshot where it sharpens the verdict (a socket fallback on a node that
//! has InfiniBand is an error, not a choice).

use topo_model::Finding;

use super::Inputs;
use super::{job, network, requested, settings};

type Rule = fn(&Inputs) -> Option<Finding>;

pub const RULES: &[Rule] = &[
    network::net_socket_fallback,
    network::verbs_not_loaded,
    network::gdr_disabled,
    settings::p2p_not_used,
    settings::env_override,
    settings::rank_mismatch,
    settings::version_mismatch,
    job::ring_suboptimal,
    settings::few_channels,
    requested::nvls_not_set_up,
    requested::collnet_not_set_up,
    requested::net_plugin_not_loaded,
    network::bootstrap_interface,
    network::link_local_gids,
    network::shared_host_name,
    network::plugin_mismatch,
    job::collective_timeout,
    job::collective_mismatch,
    job::shared_gpu,
    job::reused_comm_id,
    job::singleton_launch,
    job::wrong_results,
    job::small_messages,
];
