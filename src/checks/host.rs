//! The node's network ports and what the host gives a job: RDMA port state
//! and rate, MTUs, GPUDirect RDMA modules, /dev/shm and the memlock limit.

use topo_model::{Evidence, Finding, NicKind, Severity, Snapshot};

use super::facts::{evidence, has_rdma, rdma_ports};

pub(super) fn ib_port_down(snapshot: &Snapshot) -> Option<Finding> {
    let items: Vec<Evidence> = rdma_ports(snapshot)
        .filter(|(_, p)| p.state.is_some() && !p.is_active())
        .map(|(n, p)| {
            let state = format!("{} / {}", p.state.as_deref().unwrap_or("?"), p.phys_state.as_deref().unwrap_or("?"));
            evidence(format!("sysfs {}/ports/{}", n.name, p.port), format!("state {state}"))
        })
        .collect();
    (!items.is_empty()).then(|| {
        Finding::new(
            "ib-port-down",
            Severity::Error,
            "RDMA ports not active".into(),
            items,
            "A rail with its port down carries nothing: NCCL leaves that NIC out or the job fails to connect.",
            "Check the cable and switch port (`ibstat`, `mlxlink`), the subnet manager for InfiniBand, the link \
             configuration for RoCE. A port unused by design belongs in the expectations file.",
        )
    })
}

/// Active ports below the fastest active port of the same kind.
pub(super) fn ib_port_slow(snapshot: &Snapshot) -> Option<Finding> {
    let active: Vec<(&topo_model::Nic, &topo_model::NicPort, f64)> =
        rdma_ports(snapshot).filter(|(_, p)| p.is_active()).filter_map(|(n, p)| Some((n, p, p.rate_gbps?))).collect();
    let best = active.iter().map(|(.., r)| *r).fold(0.0, f64::max);
    let items: Vec<Evidence> = active
        .iter()
        .filter(|(.., rate)| *rate < best)
        .map(|(n, p, rate)| {
            evidence(format!("sysfs {}/ports/{}", n.name, p.port), format!("{rate} Gb/s, others {best} Gb/s"))
        })
        .collect();
    (!items.is_empty()).then(|| {
        Finding::new(
            "ib-port-slow",
            Severity::Warning,
            "RDMA ports running below the others' rate".into(),
            items,
            "NCCL spreads traffic evenly over the rails, so the slowest port sets the pace for all of them.",
            "Check the cable and the negotiated speed/width (`ibstat`, `mlxlink -d <dev> -m`); reseat or replace.",
        )
    })
}

/// Interfaces of the RDMA NICs with differing MTUs.
pub(super) fn mtu_mismatch(snapshot: &Snapshot) -> Option<Finding> {
    let topology = &snapshot.topology;
    let mtus: Vec<(&str, u32)> = topology
        .nics
        .iter()
        .filter(|n| n.kind != NicKind::Ethernet)
        .flat_map(|n| n.netdevs.iter())
        .filter_map(|name| {
            let interface = topology.net_interfaces.iter().find(|i| &i.name == name)?;
            Some((name.as_str(), interface.mtu?))
        })
        .collect();
    let mut distinct: Vec<u32> = mtus.iter().map(|(_, m)| *m).collect();
    distinct.sort_unstable();
    distinct.dedup();
    (distinct.len() > 1).then(|| {
        let items = mtus.iter().map(|(name, mtu)| evidence(format!("sysfs net/{name}/mtu"), mtu.to_string())).collect();
        Finding::new(
            "mtu-mismatch",
            Severity::Warning,
            format!(
                "RDMA interfaces with different MTUs: {}",
                distinct.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            ),
            items,
            "RoCE traffic uses the smaller path MTU; a mismatch across rails or hosts splits messages into more \
             packets on some paths and can stall connections.",
            "Set one MTU on every RDMA interface and switch port (typically 9000 for RoCE, 4096 IB MTU).",
        )
    })
}

/// GPUDirect RDMA needs a peer-memory module (or DMA-BUF, which the probe cannot
/// see from sysfs): only judged on a live probe of a node with GPUs, an RDMA NIC
/// and the `nvidia` module loaded, where the module list is known.
pub(super) fn gdr_not_ready(snapshot: &Snapshot) -> Option<Finding> {
    let modules = &snapshot.host.modules;
    let judged = modules.iter().any(|m| m == "nvidia") && has_rdma(snapshot) && !snapshot.topology.gpus.is_empty();
    let peer_memory = modules.iter().any(|m| m == "nvidia_peermem" || m == "nv_peer_mem");
    (judged && !peer_memory).then(|| {
        Finding::new(
            "gdr-not-ready",
            Severity::Warning,
            "No GPUDirect RDMA peer-memory module loaded".into(),
            vec![evidence("sysfs module/", format!("loaded: {}", modules.join(", ")))],
            "Without nvidia_peermem (or DMA-BUF support), NCCL stages every network transfer through host memory: \
             a large cut in inter-node bandwidth.",
            "`modprobe nvidia_peermem` (and load it at boot), or use a driver and kernel with DMA-BUF \
             (open kernel modules, kernel >= 5.12) and check NCCL's log for `GDRDMA`.",
        )
    })
}

/// `/dev/shm` below this is reported: Docker's 64 MiB default is the classic case.
pub const MIN_DEV_SHM_BYTES: u64 = 1 << 30;

pub(super) fn dev_shm_small(snapshot: &Snapshot) -> Option<Finding> {
    let size = snapshot.host.dev_shm_bytes?;
    (size < MIN_DEV_SHM_BYTES && !snapshot.topology.gpus.is_empty()).then(|| {
        Finding::new(
            "dev-shm-small",
            Severity::Warning,
            format!("/dev/shm is {} MiB", size >> 20),
            vec![evidence("proc/mounts", format!("/dev/shm tmpfs of {size} bytes"))],
            "NCCL's shared-memory transport and proxies allocate segments in /dev/shm; a small one fails setup \
             with `No space left on device` once several GPUs share the node.",
            "Give the job a larger /dev/shm: docker --shm-size=16g or --ipc=host; Kubernetes: an emptyDir with \
             medium: Memory at /dev/shm.",
        )
    })
}

pub(super) fn memlock_limited(snapshot: &Snapshot) -> Option<Finding> {
    let limit = snapshot.host.memlock.as_deref()?;
    (limit != "unlimited" && has_rdma(snapshot)).then(|| {
        Finding::new(
            "memlock-limited",
            Severity::Warning,
            format!("Locked-memory limit is {limit} bytes on a node with RDMA NICs"),
            vec![evidence("proc/self/limits", format!("Max locked memory {limit}"))],
            "RDMA registers (pins) communication buffers; a small memlock limit makes registration fail or forces \
             NCCL to fall back.",
            "Set `ulimit -l unlimited` for the job (limits.conf memlock, Slurm PropagateResourceLimits, \
             docker --ulimit memlock=-1).",
        )
    })
}
