//! What one NCCL message says. Each shape is recognised by its text, not by the
//! NCCL version, so one parser reads logs from 2.3 to 2.30 (format strings:
//! `shared/research/nccl-log-format.md`).

pub use super::coll_line::{CollMemo, collective, collective_after, collective_in};

/// A fact read from one message.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<'a> {
    Version(&'a str),
    /// `NCCL_X set by environment to Y` (also `NCCL_IB_HCA set to Y`).
    Env {
        name: &'a str,
        value: &'a str,
    },
    UsingNetwork(&'a str),
    /// `NET/IB : Using [0]mlx5_0:1/RoCE [1]...; OOB ...`: the device list.
    NetDevices(Vec<&'a str>),
    /// `NET/Socket : Using [0]eth0:10.0.0.1<0> ...`: the socket transport's
    /// interfaces as listed (name and address), listed even when IB carries
    /// the traffic.
    SocketInterfaces(Vec<&'a str>),
    NetIbNotFound,
    /// Which network plugin this process loaded (`NET/Plugin: Loaded net
    /// plugin NAME (vN)`, a plugin's own `Plugin Path : ...`), or none (`Using
    /// internal network plugin`, `No plugin found ... using internal implementation`).
    NetPlugin(Option<&'a str>),
    /// The network plugin the job named in NCCL_NET_PLUGIN, as NCCL echoes it
    /// (`Plugin name set by env to NAME`, 2.12-2.22; `NET/Plugin: Plugin name
    /// set by env to NAME`, 2.23-2.27).
    NetPluginAsked(&'a str),
    /// aws-ofi-nccl: `NET/OFI Selected Provider is efa (found 16 nics)`; the
    /// count is absent from older releases' line.
    OfiProvider {
        provider: &'a str,
        nics: Option<u32>,
    },
    /// aws-ofi-nccl 1.16+: `NET/OFI GUID of rdmap47s0: 733065c100010d00`, one
    /// line per NIC it opened (platform-aws.cpp): the NICs by name.
    OfiNic(&'a str),
    Bootstrap(Vec<&'a str>),
    /// 2.2/2.3 `NET : Using interface eth0:10.0.0.1<0>`: bootstrap's interface
    /// and the socket transport's.
    LegacyInterface(&'a str),
    GdrForHca {
        hca: &'a str,
        enabled: bool,
    },
    CommInit(CommInit<'a>),
    /// A step of NVLS (NVLink SHARP multicast) setup: `NVLS comm 0x.. headRank`,
    /// `NVLS Creating Multicast group`, `NVLS importing shareableHandle`,
    /// `NVLS Bind mem`, ... (2.17+). NCCL sets NVLS up after its rings and
    /// trees, as init's last large step (init.cc 2.17-2.30).
    NvlsSetup,
    /// A user buffer registered for a collective or by ncclCommRegister (NCCL_REG).
    BufferRegistration,
    /// `comm 0x.. rank 0 nRanks 8 nNodes 4 localRanks 2 localRank 0 MNNVL 0`.
    CommNodes {
        comm: &'a str,
        rank: u32,
        nranks: u32,
        nnodes: u32,
    },
    /// The communicator size without a pointer: 2.3's `rank %d nranks %d`,
    /// 2.4's `nranks %d` (init.cc).
    RankCount {
        rank: Option<u32>,
        nranks: u32,
    },
    /// `Channel 00/02 : 0 1 2 3`: a ring's order, printed by rank 0.
    RingOrder {
        channel: u32,
        ranks: Vec<u32>,
    },
    /// `Ring 00 : 3 -> 0 -> 1` (GRAPH, 2.10+): prev -> me -> next.
    RingNeighbours {
        channel: u32,
        prev: u32,
        me: u32,
        next: u32,
    },
    Connection(ConnectionLine<'a>),
    /// `Trees [0] 1/-1/-1->0->-1 [1] ...`, already in (channel, parent, me, children).
    Trees(Vec<(u32, i64, i64, Vec<i64>)>),
    /// GRAPH `Tree 5 : -1 -> 3 -> 2/1/-1`: parent -> me -> children.
    GraphTree {
        channel: u32,
        parent: i64,
        me: i64,
        children: Vec<i64>,
    },
    Channels(topo_model::nccl::ChannelCounts),
    GraphSearch(topo_model::nccl::GraphSearch),
    InitTimings {
        rank: u32,
        total: f64,
    },
    /// PyTorch's watchdog gave up on a collective:
    /// `[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808,
    /// OpType=ALLREDUCE, ... Timeout(ms)=600000) ran for 600020 milliseconds before timing out.`
    WatchdogTimeout {
        rank: Option<u32>,
        /// The process group (`[PG ID 1 PG GUID 1(tp) Rank 0]`, `[PG 1 Rank 0]`),
        /// where PyTorch 2.2+ prints it: sequence numbers count per group.
        pg: Option<&'a str>,
        seq: Option<u64>,
        op: &'a str,
        timeout_ms: Option<u64>,
        ran_ms: Option<u64>,
        /// The group's rank count from `NumelIn`/`NumelOut` (see [`group_size`]).
        group_size: Option<u32>,
        numel_in: Option<u64>,
        numel_out: Option<u64>,
    },
    /// `[... Rank 1] Exception (either an error or timeout) detected by watchdog at
    /// work: 808, last enqueued NCCL work: 811, last completed NCCL work: 807.`
    WatchdogProgress {
        rank: Option<u32>,
        last_completed: Option<u64>,
    },
    Collective(Collective<'a>),
    /// `file:line -> N`: an error propagating up the stack.
    ErrorTrace {
        location: &'a str,
        code: i64,
    },
    /// `AllReduce: 8388608 Bytes -> Algo RING proto SIMPLE ...`.
    Tuning {
        collective: &'a str,
        bytes: Option<u64>,
        algorithm: &'a str,
        protocol: &'a str,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct CommInit<'a> {
    pub comm: &'a str,
    pub rank: u32,
    pub nranks: u32,
    pub cuda_dev: Option<u32>,
    pub nvml_dev: Option<u32>,
    /// NCCL's integer form (`1a000`).
    pub bus_id: Option<&'a str>,
    pub comm_id: Option<&'a str>,
    pub complete: bool,
    /// A `Destroy COMPLETE` / `Abort COMPLETE` line: the communicator's end,
    /// which still names its size and this rank's place in it.
    pub ends: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionLine<'a> {
    pub channel: u32,
    pub conn_index: u32,
    pub from: u32,
    pub to: Option<u32>,
    pub direction: topo_model::nccl::Direction,
    pub via: &'a str,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Collective<'a> {
    pub op: &'a str,
    pub op_count: u64,
    pub count: u64,
    pub datatype: u32,
    pub comm: Option<&'a str>,
    pub nranks: Option<u32>,
}

/// Reads a message; `None` when it carries nothing the report uses.
///
/// Most lines of a long log are COLL lines or text the report does not use, so
/// every shape is gated by a cheap test of its first byte (or of a byte it must
/// contain) before any substring search runs.
pub fn parse(message: &str) -> Option<Event<'_>> {
    let bytes = message.as_bytes();
    let first = *bytes.first()?;
    if first.is_ascii_uppercase()
        && let Some(op) = collective(message)
    {
        return Some(Event::Collective(op));
    }
    let by_shape = match first {
        b'C' => channel_line(message).or_else(|| collnet_line(message)).or_else(|| net_device_without_pci(message)),
        b'R' => ring_line(message).or_else(|| rccl_version(message)).or_else(|| fork_env(message)),
        b'M' => fork_env(message),
        b'T' => trees(message).or_else(|| graph_tree(message)),
        b'N' => nccl_or_net(message),
        b'c' => comm_init(message).or_else(|| comm_nodes(message)),
        b'n' => comm_init(message).or_else(|| comm_nodes(message)).or_else(|| rank_count(message)),
        b'r' => rank_count(message).or_else(|| buffer_registration(message)),
        b'[' => comm_init(message)
            .or_else(|| comm_nodes(message))
            .or_else(|| watchdog(message))
            .or_else(|| device_tagged_ring(message)),
        // `Using network IB` (2.6+), `Using internal Network Socket` (2.3-2.5).
        b'U' => message
            .strip_prefix("Using network ")
            .or_else(|| message.strip_prefix("Using internal Network "))
            .map(|n| Event::UsingNetwork(n.trim())),
        b'B' => bootstrap(message),
        b'G' => gdr_for_hca(message),
        b'P' => graph_search(message)
            .or_else(|| plugin_path(message))
            .or_else(|| plugin_asked(message))
            .or_else(|| buffer_registration(message)),
        b'I' => init_timings(message),
        b'0'..=b'9' => channel_counts(message).or_else(|| untagged_connection(message)),
        _ => None,
    };
    if by_shape.is_some() {
        return by_shape;
    }
    // Error traces (`file:line -> N`) and TUNING lines (`... Bytes -> Algo ...`).
    if memchr::memchr(b'>', bytes).is_some() {
        return error_trace(message).or_else(|| tuning(message));
    }
    None
}

/// PyTorch ProcessGroupNCCL watchdog lines (after the `[rankN]:` tag): the
/// timeout itself, and the progress line that says which work completed last,
/// wherever in the line they stand (`what():  [Rank 7] Watchdog caught ...`
/// after `std::terminate`).
pub fn watchdog(message: &str) -> Option<Event<'_>> {
    // `[Rank 1]` or `[PG ID 0 PG GUID 0(default_pg) Rank 1]` before the text.
    let rank_before = |end: usize| {
        let head = &message[..end];
        let at = head.rfind("Rank ")?;
        num::<u32>(head[at + 5..].split(']').next()?)
    };
    let after = |text: &str, key: &str| -> Option<u64> {
        let start = text.find(key)? + key.len();
        text[start..].split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    };
    // `PG ID 1 PG GUID 1(tp)`, `PG 1 (default_pg)` or `PG 1` before ` Rank `.
    let pg_before = |end: usize| {
        let head = &message[..end];
        let at = head.rfind("[PG ")?;
        let id = head[at + 4..].strip_prefix("ID ").unwrap_or(&head[at + 4..]);
        let id = id.split([' ', '(', ']']).next()?;
        (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then_some(id)
    };
    // PyTorch 1.9+'s watchdog; 1.7-1.8 with NCCL_BLOCKING_WAIT=1 raised the
    // same report from the waiting call: `[Rank 0] Caught collective operation
    // timeout: WorkNCCL(OpType=BROADCAST, ...) ran for N milliseconds ...`.
    let timeout = message
        .find("Watchdog caught collective operation timeout")
        .or_else(|| message.find("Caught collective operation timeout"));
    if let Some(at) = timeout {
        let work = &message[at..];
        let op = work.find("OpType=").map_or("", |i| work[i + 7..].split([',', ')']).next().unwrap_or(""));
        let (numel_in, numel_out) = (after(work, "NumelIn="), after(work, "NumelOut="));
        return Some(Event::WatchdogTimeout {
            rank: rank_before(at),
            pg: pg_before(at),
            seq: after(work, "SeqNum="),
            op,
            timeout_ms: after(work, "Timeout(ms)="),
            ran_ms: after(work, "ran for "),
            group_size: group_size(op, numel_in, numel_out),
            numel_in,
            numel_out,
        });
    }
    let at = message.find("detected by watchdog at work")?;
    Some(Event::WatchdogProgress {
        rank: rank_before(at),
        last_completed: after(&message[at..], "last completed NCCL work: "),
    })
}

/// A process group's rank count from one of PyTorch's work sizes (2.0+ print
/// `NumelIn=1, NumelOut=4`): an all-gather's output is its input from every
/// rank, a reduce-scatter's input is every rank's share. Other operations'
/// sizes say nothing of it, and a ratio that is not whole is no count.
fn group_size(op: &str, numel_in: Option<u64>, numel_out: Option<u64>) -> Option<u32> {
    let (whole, part) = if op.contains("ALLGATHER") {
        (numel_out?, numel_in?)
    } else if op.contains("REDUCE_SCATTER") {
        (numel_in?, numel_out?)
    } else {
        return None;
    };
    if part == 0 || whole % part != 0 {
        return None;
    }
    u32::try_from(whole / part).ok().filter(|n| *n > 0)
}

fn num<T: std::str::FromStr>(text: &str) -> Option<T> {
    text.trim().parse().ok()
}

/// The word after `key ` in `text`.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let start = text.find(key)? + key.len();
    text[start..].split_whitespace().next()
}

/// `Channel 00/02 : 0 1 2 3` (ring order) or `Channel 00/0 : 0[0] -> 1[1] [send] via X`.
fn channel_line(message: &str) -> Option<Event<'_>> {
    let rest = message.strip_prefix("Channel ")?;
    let (label, body) = rest.split_once(':')?;
    let (channel, second) = match label.trim().split_once('/') {
        Some((c, n)) => (num::<u32>(c)?, num::<u32>(n)),
        None => (num::<u32>(label)?, None),
    };
    if body.contains(" via ") {
        return connection(channel, second.unwrap_or(0), body);
    }
    let ranks: Option<Vec<u32>> = body.split_whitespace().filter(|t| *t != "...").map(num).collect();
    let ranks = ranks?;
    (!ranks.is_empty()).then_some(Event::RingOrder { channel, ranks })
}

/// `Ring 00 : 0[0] -> 1[1] via P2P/IPC` (2.3-2.6 connections),
/// `Ring 00 : 3 -> 0 -> 1` (2.10+ neighbours) or `Ring 00 :    0   1   2   3`
/// (2.3's ring listing, printed by rank 0 where later versions say `Channel`).
fn ring_line(message: &str) -> Option<Event<'_>> {
    let rest = message.strip_prefix("Ring ")?;
    let (label, body) = rest.split_once(':')?;
    let channel = num::<u32>(label)?;
    if body.contains(" via ") {
        return connection(channel, 0, body);
    }
    if !body.contains("->") {
        let ranks: Option<Vec<u32>> = body.split_whitespace().map(num).collect();
        return ranks.filter(|r| !r.is_empty()).map(|ranks| Event::RingOrder { channel, ranks });
    }
    let parts: Option<Vec<u32>> = body.split("->").map(num).collect();
    match parts?.as_slice() {
        [prev, me, next] => Some(Event::RingNeighbours { channel, prev: *prev, me: *me, next: *next }),
        _ => None,
    }
}

/// 2.1/2.2's ring listing behind the device tag: `[0] Ring 0 :    0   1   2   3`.
fn device_tagged_ring(message: &str) -> Option<Event<'_>> {
    let rest = message.strip_prefix('[')?;
    let (device, rest) = rest.split_once("] ")?;
    num::<u32>(device)?;
    ring_line(rest)
}

/// 2.1/2.2's connection line without a ring label: `1 -> 0 via P2P/IPC` (one
/// per hop; read as channel 0, since those versions name no channel here).
/// NCCL 2.1 puts the process id in the brackets (`1[5224] -> 0[5223]`),
/// which [`connection`] reads like any other bracket.
fn untagged_connection(message: &str) -> Option<Event<'_>> {
    connection(0, 0, message)
}

/// ` 0[0] -> 1[1] [send] via NET/IB/0/GDRDMA`; the bracket holds a CUDA device,
/// NVML index or bus ID depending on the version and is not needed here.
fn connection(channel: u32, conn_index: u32, body: &str) -> Option<Event<'_>> {
    let (edge, via) = body.split_once(" via ")?;
    // Some builds append ` comm 0x.. nRanks 32`: not part of the transport.
    let via = via.split(" comm 0x").next().unwrap_or(via);
    let (edge, direction) = if let Some(e) = edge.strip_suffix("[send]") {
        (e, topo_model::nccl::Direction::Send)
    } else if let Some(e) = edge.strip_suffix("[receive]") {
        (e, topo_model::nccl::Direction::Receive)
    } else {
        (edge, topo_model::nccl::Direction::None)
    };
    let (from, to) = edge.split_once("->")?;
    let rank = |t: &str| num::<u32>(t.trim().split('[').next()?);
    Some(Event::Connection(ConnectionLine {
        channel,
        conn_index,
        from: rank(from)?,
        to: Some(rank(to)?),
        direction,
        via: via.trim(),
    }))
}

/// `CollNet 00/0 : 0 [receive] via COLLNET/SHARP/1/GDRDMA` and older `Coll 00 :` forms.
fn collnet_line(message: &str) -> Option<Event<'_>> {
    let rest = message.strip_prefix("CollNet ").or_else(|| message.strip_prefix("Coll "))?;
    let (label, body) = rest.split_once(':')?;
    let (channel, conn_index) = match label.trim().split_once('/') {
        Some((c, n)) => (num::<u32>(c)?, num::<u32>(n)?),
        None => (num::<u32>(label)?, 0),
    };
    let (left, via) = body.split_once(" via ")?;
    let (rank, direction) = if let Some(r) = left.trim().strip_suffix("[send]") {
        (r, topo_model::nccl::Direction::Send)
    } else {
        (left.trim().strip_suffix("[receive]")?, topo_model::nccl::Direction::Receive)
    };
    Some(Event::Connection(ConnectionLine {
        channel,
        conn_index,
        from: num(rank)?,
        to: None,
        direction,
        via: via.trim(),
    }))
}

/// `Trees [0] 1/-1/-1->0->-1 [1] ...` in any of its three conventions:
/// 2.4 `parent->me->c/c/c`, 2.5-2.7 `c/c/c->me->parent|parent->me->c/c/c`,
/// 2.8+ `c/c/c->me->parent`. The shape tells which.
fn trees(message: &str) -> Option<Event<'_>> {
    let body = message.strip_prefix("Trees")?;
    let mut entries = Vec::new();
    for part in body.split('[').skip(1) {
        let (channel, spec) = part.split_once(']')?;
        let channel = num::<u32>(channel)?;
        // The up-tree is the one collectives use; in the dual form it comes first.
        // Some builds append ` comm 0x.. nRanks 32 busId 17000`: the spec is one word.
        let spec = spec.trim().split('|').next()?.split_whitespace().next()?;
        let pieces: Vec<&str> = spec.split("->").collect();
        let [a, me, b] = pieces.as_slice() else { return None };
        let list = |t: &str| -> Option<Vec<i64>> { t.split('/').map(num).collect() };
        let me = num::<i64>(me)?;
        let (parent, children) = if a.contains('/') { (num::<i64>(b)?, list(a)?) } else { (num::<i64>(a)?, list(b)?) };
        entries.push((channel, parent, me, children));
    }
    (!entries.is_empty()).then_some(Event::Trees(entries))
}

/// GRAPH `Tree 5 : -1 -> 3 -> 2/1/-1`.
fn graph_tree(message: &str) -> Option<Event<'_>> {
    let rest = message.strip_prefix("Tree ")?;
    let (label, body) = rest.split_once(':')?;
    let channel = num::<u32>(label)?;
    let pieces: Vec<&str> = body.split("->").collect();
    let [parent, me, children] = pieces.as_slice() else { return None };
    let children: Option<Vec<i64>> = children.split('/').map(num).collect();
    Some(Event::GraphTree { channel, parent: num(parent)?, me: num(me)?, children: children? })
}

/// RCCL's version line, bare (`RCCL version 2.20.5+hip6.2 HEAD:45b618a+`)
/// or as an INFO line (`RCCL version : 2.22.3-HEAD:271856d`): the NCCL
/// release RCCL is built from, without its git head.
fn rccl_version(message: &str) -> Option<Event<'_>> {
    let rest = message.strip_prefix("RCCL version")?.trim_start();
    let rest = rest.strip_prefix(':').unwrap_or(rest).trim_start();
    let version = rest.split_whitespace().next()?;
    let version = version.split_once("-HEAD").map_or(version, |(v, _)| v);
    (version.starts_with(|c: char| c.is_ascii_digit()) && version.contains('.')).then_some(Event::Version(version))
}

fn nccl_or_net<'a>(message: &'a str) -> Option<Event<'a>> {
    if let Some(version) = message.strip_prefix("NCCL version ") {
        // A markdown paste may keep the bold markers (`**NCCL version 2.4.7**`);
        // a script's own print (`NCCL version :  (2, 23, 4)`) is no version line.
        let version = version.split_whitespace().next()?.trim_end_matches('*');
        return version.starts_with(|c: char| c.is_ascii_digit()).then_some(Event::Version(version));
    }
    if let Some(rest) = message.strip_prefix("NCCL_") {
        return env(message, rest);
    }
    // A plugin's own line behind its clock (GCP's TCPX/TCPXO): read as NCCL's
    // own shapes read it, settings and device list alike.
    if let Some((_, text)) = plugin_stamped(message) {
        if let Some(rest) = text.strip_prefix("NCCL_") {
            return env(text, rest);
        }
        if let Some(list) = text.strip_prefix("Using ").filter(|l| l.starts_with('[')) {
            return plugin_devices(list);
        }
        return None;
    }
    if let Some(plugin) = net_plugin(message) {
        return Some(plugin);
    }
    if message.starts_with("NET/IB : No device found") || message.starts_with("NET/IB: No device found") {
        return Some(Event::NetIbNotFound);
    }
    if let Some(rest) = message.strip_prefix("NET/IB : Using").or_else(|| message.strip_prefix("NET/IB: Using")) {
        if rest.trim_start().starts_with("interface ") {
            return None;
        }
        return Some(Event::NetDevices(device_list(rest.split(';').next()?)));
    }
    // 2.3: `NET/IB: [0] mlx5_0:1/IB [1] mlx5_1:1/IB`, the index apart from the device.
    if let Some(rest) = message.strip_prefix("NET/IB: ").or_else(|| message.strip_prefix("NET/IB : "))
        && rest.starts_with('[')
    {
        let devices: Vec<&str> = rest.split_whitespace().filter(|t| !t.starts_with('[')).collect();
        if !devices.is_empty() && devices.iter().all(|d| d.contains(':')) {
            return Some(Event::NetDevices(devices));
        }
    }
    if let Some(rest) = message.strip_prefix("NET/Socket : Using").or_else(|| message.strip_prefix("NET/Socket: Using"))
    {
        // `[0]eno1:10.0.0.1<0>`, as listed: the interface name is the device
        // (see [`socket_interface_name`]), the address says where it reaches.
        let entries: Vec<&str> =
            device_list(rest).into_iter().filter(|d| !socket_interface_name(d).is_empty()).collect();
        return Some(Event::SocketInterfaces(entries));
    }
    // A network plugin's own device list, in NCCL's shape (GCP's
    // `NET/FastSocket : Using [0]ens8:10.128.0.107<0>`, `NET/GPUDirectTCPX`):
    // the plugin's devices, named by interface where they carry an address.
    if let Some((plugin, rest)) =
        message.strip_prefix("NET/").and_then(|m| m.split_once(" : Using ").or_else(|| m.split_once(": Using ")))
        && !plugin.is_empty()
        && !plugin.contains(' ')
        && rest.starts_with('[')
    {
        return plugin_devices(rest);
    }
    // 2.2/2.3: `NET : Using interface eth0:10.0.0.1<0>` (bootstrap and sockets)
    // and `NET/IB : Using interface ib0 for sideband communication`.
    if let Some(rest) = message.strip_prefix("NET : Using interface ") {
        // The one interface of bootstrap and the socket transport alike.
        return Some(Event::LegacyInterface(rest.split_whitespace().next()?));
    }
    if let Some(rest) = message
        .strip_prefix("NET/OFI Selected Provider is ")
        .or_else(|| message.strip_prefix("NET/OFI Selected provider is "))
    {
        // `efa (found 16 nics)` / `efa, fabric is efa-direct (found 16 nics)`;
        // releases before the count print the provider alone.
        let provider = rest.split([' ', ',']).next().filter(|p| !p.is_empty())?;
        let nics: Option<u32> = field(rest, "(found ").and_then(num);
        return Some(Event::OfiProvider { provider, nics });
    }
    if let Some(rest) = message.strip_prefix("NET/OFI GUID of ") {
        let name = rest.split(':').next().filter(|n| !n.is_empty() && !n.contains(' '))?;
        return Some(Event::OfiNic(name));
    }
    if message.starts_with("NET/") && message.contains("GPU Direct RDMA") {
        return gdr_for_hca(message);
    }
    nvls_setup(message)
}

/// The interface name of a socket transport entry (`eno1:10.0.0.1<0>` is
/// `eno1`). A pasted log may have the address redacted (`ib0.<ip>`): the name
/// ends there too.
pub(crate) fn socket_interface_name(entry: &str) -> &str {
    let name = entry.split(':').next().unwrap_or(entry);
    name.split('<').next().unwrap_or(name).trim_end_matches('.')
}

/// `Could not find real path of /sys/class/net/eth0/device` (2.4+): NCCL
/// asked for the PCI path of a device of the network it set up and found
/// none, as for a container's or VM's virtual NIC. Under /sys/class/net (IB
/// devices are under /sys/class/infiniband, aws-ofi-nccl says `NET/OFI`) it
/// is an interface of the socket transport (net_socket.cc in 2.4-2.5), where
/// no `NET/Socket : Using` line lists them.
fn net_device_without_pci(message: &str) -> Option<Event<'_>> {
    let rest = message.strip_prefix("Could not find real path of /sys/class/net/")?;
    let name = rest.split('/').next().filter(|n| !n.is_empty() && !n.contains(' '))?;
    Some(Event::SocketInterfaces(vec![name]))
}

/// The NVLS lines of multicast setup (transport/nvls.cc, 2.17 to 2.30), not
/// `NVLS multicast support is available` (printed early, before the graph
/// search) nor `NVLS Trees` (the graph) nor the teardown's `Unbind`/`Unmap`.
fn nvls_setup(message: &str) -> Option<Event<'_>> {
    const STEPS: &[&str] = &[
        "comm 0x",
        "Creating Multicast group",
        "Created Multicast group",
        "importing shareableHandle",
        "group ",
        "Bind mem",
        "Mapped ",
        "rank ",
    ];
    let step = message.strip_prefix("NVLS ")?;
    STEPS.iter().any(|s| step.starts_with(s)).then_some(Event::NvlsSetup)
}

/// The NCCL_REG lines of a successful user-buffer registration (register.cc,
/// transport/net.cc, coll_net.cc, p2p.cc, nvls.cc, 2.19-2.30), after the
/// `rank N` or `Proxy rank N` that starts most of them. Failures (`failed to
/// NET register`) are the message table's; deregistration happens at teardown.
const REGISTRATION_STEPS: &[&str] = &[
    " - NET register userbuff ",
    " - NET reuse buffer ",
    " - COLLNET register userbuff ",
    " - COLLNET reuse register userbuff ",
    " - IPC register buffer ",
    " - IPC registered buffer ",
    " - IPC registering buffer ",
    " - IPC reuse buffer ",
    " - IPC local register buffer ",
    " - IPC local reuse buffer ",
    " - IPC graph register buffer ",
    " successfully registered ",
    " reuse registered NVLS ",
    " register success regAddr ",
];

fn buffer_registration(message: &str) -> Option<Event<'_>> {
    if message.starts_with("register comm 0x") && message.contains(" buffer ") {
        return Some(Event::BufferRegistration);
    }
    let rest = message.strip_prefix("Proxy rank ").or_else(|| message.strip_prefix("rank "))?;
    let after_rank = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    (after_rank.len() < rest.len() && REGISTRATION_STEPS.iter().any(|s| after_rank.starts_with(s)))
        .then_some(Event::BufferRegistration)
}

/// A setting of NCCL's forks, echoed by NCCL's own parameter code:
/// `RCCL_MSCCL_ENABLE set by environment to 0` (RCCL), `MSCCL_XML_FILES set by
/// environment to /path.xml` (Microsoft's MSCCL).
fn fork_env(message: &str) -> Option<Event<'_>> {
    let rest = message.strip_prefix("RCCL_").or_else(|| message.strip_prefix("MSCCL_"))?;
    rest.contains(" set by environment to ").then(|| env(message, rest)).flatten()
}

/// `NCCL_IB_GID_INDEX set by environment to 3.` / `NCCL_ALGO set by environment to Ring`.
fn env<'a>(message: &'a str, _rest: &'a str) -> Option<Event<'a>> {
    let (name, value) = message.split_once(" set by environment to ").or_else(|| message.split_once(" set to "))?;
    if name.contains(' ') {
        return None;
    }
    let value = value.trim();
    // Integer parameters end with a period; string values are printed as they are.
    let value = match value.strip_suffix('.') {
        Some(v) if v.parse::<i64>().is_ok() => v,
        _ => value,
    };
    Some(Event::Env { name, value })
}

/// ` [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE` (also `[RO]` markers) -> `mlx5_0:1/RoCE`, ...
/// Merged virtual NICs (2.19+, `[0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE}
/// [1]={...}`) give their physical devices, each once.
fn device_list(list: &str) -> Vec<&str> {
    if list.contains("={") {
        let mut devices: Vec<&str> = Vec::new();
        for part in list.split(['{', '}', ',']) {
            let part = part.trim();
            let Some(device) = part.strip_prefix('[').and_then(|t| t.split_once(']')).map(|(_, d)| d.trim()) else {
                continue;
            };
            if !device.is_empty() && !device.starts_with('=') && !devices.contains(&device) {
                devices.push(device);
            }
        }
        return devices;
    }
    // `[RO]` (relaxed ordering) and the like follow the devices: not devices.
    list.split_whitespace()
        .flat_map(glued_entries)
        .filter_map(|t| t.strip_prefix('[').and_then(|t| t.split_once(']')).map(|(_, d)| d))
        .filter(|d| d.chars().next().is_some_and(|c| c.is_ascii_alphanumeric()))
        .collect()
}

/// Entries a plugin printed without a space between them
/// (`[0]eth1:192.169.0.3<0>[1]eth2:192.169.1.3<0>`, GCP's TCPXO): cut before
/// each `[` that follows an address's closing `>`.
fn glued_entries(token: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (at, _) in token.match_indices(">[") {
        out.push(&token[start..=at]);
        start = at + 1;
    }
    out.push(&token[start..]);
    out
}

/// The network plugin a process loaded, or none: NCCL's `NET/Plugin` INFO
/// lines of every version (2.12's `No plugin found (...), using internal
/// implementation`, 2.19+'s `Using internal network plugin.` and `Loaded net
/// plugin NAME (vN)`).
fn net_plugin(message: &str) -> Option<Event<'_>> {
    let rest = message.strip_prefix("NET/Plugin")?.trim_start_matches([' ', ':']);
    if rest.starts_with(PLUGIN_ASKED) {
        return plugin_asked(rest);
    }
    if let Some(name) = rest.strip_prefix("Loaded net plugin ") {
        return Some(Event::NetPlugin(Some(name.split(" (v").next()?.trim())));
    }
    let internal = rest.contains("Using internal network plugin") || rest.contains("using internal implementation");
    internal.then_some(Event::NetPlugin(None))
}

/// NCCL's echo of NCCL_NET_PLUGIN (net.cc 2.12-2.22, plugin_open.cc 2.23-2.27).
const PLUGIN_ASKED: &str = "Plugin name set by env to ";

/// `Plugin name set by env to libnccl-net-ofi.so`: the plugin's name.
fn plugin_asked(message: &str) -> Option<Event<'_>> {
    let name = message.strip_prefix(PLUGIN_ASKED)?.trim();
    (!name.is_empty() && !name.contains(char::is_whitespace)).then_some(Event::NetPluginAsked(name))
}

/// A plugin's own `Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so`.
fn plugin_path(message: &str) -> Option<Event<'_>> {
    let path = message.strip_prefix("Plugin Path")?.trim_start().strip_prefix(':')?.trim();
    (!path.is_empty()).then_some(Event::NetPlugin(Some(path)))
}

fn bootstrap(message: &str) -> Option<Event<'_>> {
    let rest = message.strip_prefix("Bootstrap : Using").or_else(|| message.strip_prefix("Bootstrap: Using"))?;
    let interfaces = rest
        .split_whitespace()
        .map(|t| t.strip_prefix('[').and_then(|t| t.split_once(']')).map_or(t, |(_, d)| d))
        .collect();
    Some(Event::Bootstrap(interfaces))
}

/// `NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'`.
fn gdr_for_hca(message: &str) -> Option<Event<'_>> {
    let at = message.find("GPU Direct RDMA ")?;
    let rest = &message[at + 16..];
    let enabled = rest.starts_with("Enabled");
    if !enabled && !rest.starts_with("Disabled") {
        return None;
    }
    // `for HCA 0 'mlx5_0'` (2.5+), `for GPU 0 / HCA mlx4_0 (not supported by GPU)` (2.4).
    let hca = match rest.split('\'').nth(1) {
        Some(quoted) => quoted,
        None => rest.split("HCA ").nth(1)?.split_whitespace().next()?,
    };
    Some(Event::GdrForHca { hca, enabled })
}

/// Init START / COMPLETE lines of every era (see the research notes, section 3).
fn comm_init(message: &str) -> Option<Event<'_>> {
    // 2.3: `comm %p rank %d nranks %d - COMPLETE`; 2.4+: `... - Init COMPLETE`;
    // 2.2: `comm %p rank %d nranks %d` and nothing after.
    let complete = message.contains("Init COMPLETE") || message.trim_end().ends_with("- COMPLETE");
    // A line that is only `comm %p rank %d nranks %d ...` fields (2.2 printed
    // nothing after them; excerpts cut 2.4's `cudaDev %d nvmlDev %d - Init
    // COMPLETE` after the fields): the rank's init line all the same. Destroy
    // and Abort COMPLETE lines are not.
    // The same for 2.19+'s `ncclCommInitRank comm %p rank %d nranks %d ...
    // commId 0x%llx - Init START`, named by its caller, hard-wrapped before its end.
    let caller_fields = message.starts_with("ncclComm") && message.contains(" comm 0x") && message.contains(" nranks ");
    let fields_only = (message.starts_with("comm 0x") || caller_fields) && !message.contains(" - ");
    let ends = message.ends_with("Destroy COMPLETE") || message.ends_with("Abort COMPLETE");
    if !complete && !message.contains("Init START") && !fields_only && !ends {
        return None;
    }
    let at = message.find("comm 0x").or_else(|| message.find("comm (nil)"))?;
    let rest = &message[at..];
    Some(Event::CommInit(CommInit {
        comm: field(rest, "comm ")?,
        rank: field(rest, " rank ").and_then(num)?,
        nranks: field(rest, " nranks ").and_then(num)?,
        cuda_dev: field(rest, " cudaDev ").and_then(num),
        nvml_dev: field(rest, " nvmlDev ").and_then(num),
        bus_id: field(rest, " busId "),
        // A line cut inside the id (`commId 0x`) names none.
        comm_id: field(rest, " commId ").filter(|id| id.len() > 2),
        complete,
        ends,
    }))
}

/// `rank 0 nranks 4` (2.3) and `nranks 4` (2.4): the whole message.
fn rank_count(message: &str) -> Option<Event<'_>> {
    let words: Vec<&str> = message.split_whitespace().collect();
    match words.as_slice() {
        ["nranks", n] => Some(Event::RankCount { rank: None, nranks: num(n)? }),
        ["rank", r, "nranks", n] => Some(Event::RankCount { rank: Some(num(r)?), nranks: num(n)? }),
        _ => None,
    }
}

fn comm_nodes(message: &str) -> Option<Event<'_>> {
    let rest = message.strip_prefix("comm ")?;
    Some(Event::CommNodes {
        comm: rest.split_whitespace().next()?,
        rank: field(rest, " rank ").and_then(num)?,
        nranks: field(rest, " nRanks ").and_then(num)?,
        nnodes: field(rest, " nNodes ").and_then(num)?,
    })
}

/// `N coll channels, [N collnet channels, ][N nvls channels, ]N p2p channels, N p2p channels per peer`.
fn channel_counts(message: &str) -> Option<Event<'_>> {
    if !message.contains(" coll channels") {
        return None;
    }
    let mut counts = topo_model::nccl::ChannelCounts::default();
    for part in message.split(',') {
        let mut words = part.split_whitespace();
        let n: u32 = num(words.next()?)?;
        match words.collect::<Vec<_>>().join(" ").as_str() {
            "coll channels" => counts.coll = n,
            "collnet channels" => counts.collnet = Some(n),
            "nvls channels" => counts.nvls = Some(n),
            "p2p channels" => counts.p2p = n,
            "p2p channels per peer" => counts.p2p_per_peer = Some(n),
            _ => {}
        }
    }
    Some(Event::Channels(counts))
}

/// `Pattern 4, crossNic 0, nChannels 2, bw 40.000000/40.000000, type NVL/PIX, sameChannels 1`
/// (`speed` instead of `bw` before 2.14).
fn graph_search(message: &str) -> Option<Event<'_>> {
    let rest = message.strip_prefix("Pattern ")?;
    let pattern = num(rest.split(',').next()?)?;
    let channels = field(rest, "nChannels ").and_then(|c| num(c.trim_end_matches(',')))?;
    let bw = field(rest, " bw ").or_else(|| field(rest, " speed "))?.trim_end_matches(',');
    let (intra, inter) = bw.split_once('/')?;
    let kind = field(rest, " type ")?.trim_end_matches(',');
    let (type_intra, type_inter) = kind.split_once('/').unwrap_or((kind, ""));
    Some(Event::GraphSearch(topo_model::nccl::GraphSearch {
        pattern,
        channels,
        bw_intra: num(intra)?,
        bw_inter: num(inter)?,
        type_intra: type_intra.to_string(),
        type_inter: type_inter.to_string(),
    }))
}

/// `Init timings - ncclCommInitRank: rank 0 nranks 8 total 1.23 (...)`.
fn init_timings(message: &str) -> Option<Event<'_>> {
    let rest = message.strip_prefix("Init timings")?;
    Some(Event::InitTimings { rank: field(rest, "rank ").and_then(num)?, total: field(rest, " total ").and_then(num)? })
}

/// `transport/net.cc:1298 -> 6`, with optional `[Async thread]` or `(strerror)`.
/// A network plugin's trail carries its tag before the location (`NCCL/NET
/// (shim) /build/nccl-shim/src/guest_config_checker.cc:132 -> 4`, GKE's
/// config-checker shim): the last word, when it names a source file.
fn error_trace(message: &str) -> Option<Event<'_>> {
    let (location, rest) = message.split_once(" -> ")?;
    let location = location.trim();
    let location = match location.rsplit_once(' ') {
        Some((_, last)) if is_source_file(last.rsplit_once(':').map_or("", |(file, _)| file)) => last,
        _ => location.split(" (").next()?,
    };
    let (file, line) = location.rsplit_once(':')?;
    if file.is_empty() || file.contains(' ') || line.parse::<u64>().is_err() {
        return None;
    }
    let code = num(rest.split_whitespace().next()?)?;
    Some(Event::ErrorTrace { location, code })
}

/// A network plugin's device list (`[0]ens8:10.128.0.107<0> [1]...`): the
/// plugin's devices, named by interface where they carry an address.
fn plugin_devices(list: &str) -> Option<Event<'_>> {
    let devices: Vec<&str> = device_list(list.split(';').next()?)
        .into_iter()
        .map(|d| if d.contains('<') { d.split(':').next().unwrap_or(d) } else { d })
        .collect();
    (!devices.is_empty()).then_some(Event::NetDevices(devices))
}

/// A network plugin's line that prints its own clock after its tag (`NET/FasTrak
/// 2026-08-02T13:31:19.101248334+00:00: Using [0]eth1:...`, GCP's TCPXO):
/// the plugin's name and the text after the time.
fn plugin_stamped(message: &str) -> Option<(&str, &str)> {
    let (plugin, rest) = message.strip_prefix("NET/")?.split_once(' ')?;
    let (stamp, text) = rest.split_once(": ")?;
    let clock = stamp.len() >= 19 && stamp.as_bytes()[..4].iter().all(u8::is_ascii_digit) && stamp.contains('T');
    (clock && !stamp.contains(' ')).then_some((plugin, text))
}

/// A C or C++ source or header file's name (`net.cc`, `socket.h`, `common.cu`).
pub(crate) fn is_source_file(name: &str) -> bool {
    [".cc", ".c", ".h", ".cu", ".cpp", ".hpp", ".cuh"].iter().any(|ext| name.ends_with(ext))
}

/// `AllReduce: 8388608 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..23}` (2.24+),
/// `AllReduce: 8388608 Bytes -> Algo 1 proto 2 time 12.3` (2.23), `8388608 Bytes -> Algo 1 proto 2 time ...` (2.20-2.22).
fn tuning(message: &str) -> Option<Event<'_>> {
    let (head, rest) = message.split_once(" Bytes -> Algo ")?;
    let (collective, bytes) = match head.split_once(": ") {
        Some((c, b)) => (c, b),
        None => ("?", head),
    };
    let mut words = rest.split_whitespace();
    let algorithm = words.next()?;
    if words.next()? != "proto" {
        return None;
    }
    let protocol = words.next()?;
    Some(Event::Tuning {
        collective,
        bytes: num(bytes),
        algorithm: algorithm_name(algorithm),
        protocol: protocol_name(protocol),
    })
}

fn algorithm_name(id: &str) -> &str {
    match id {
        "0" => "TREE",
        "1" => "RING",
        "2" => "COLLNET_DIRECT",
        "3" => "COLLNET_CHAIN",
        "4" => "NVLS",
        "5" => "NVLS_TREE",
        "6" => "PAT",
        other => other,
    }
}

fn protocol_name(id: &str) -> &str {
    match id {
        "0" => "LL",
        "1" => "LL128",
        "2" => "SIMPLE",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topo_model::nccl::Direction;

    #[test]
    fn a_watchdogs_gather_and_scatter_sizes_give_the_group_size() {
        // PyTorch 2.x (corpus 1326): an all-gather's output is every rank's input.
        let line = "[Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=493, OpType=ALLGATHER, \
                    NumelIn=1, NumelOut=4, Timeout(ms)=60000) ran for 60044 milliseconds before timing out.";
        let Some(Event::WatchdogTimeout { group_size: size, op, seq, .. }) = watchdog(line) else { panic!("not read") };
        assert_eq!((size, op, seq), (Some(4), "ALLGATHER", Some(493)));
        // A reduce-scatter's input is every rank's share of it.
        assert_eq!(group_size("_REDUCE_SCATTER_BASE", Some(544_997_376), Some(68_124_672)), Some(8));
        // An all-reduce's sizes are equal whatever the group; an uneven ratio,
        // a zero or a missing size is no count.
        assert_eq!(group_size("ALLREDUCE", Some(10), Some(10)), None);
        assert_eq!(group_size("ALLGATHER", Some(3), Some(10)), None);
        assert_eq!(group_size("ALLGATHER", Some(0), Some(10)), None);
        assert_eq!(group_size("ALLGATHER", None, Some(10)), None);
        assert_eq!(group_size("ALLGATHER", Some(1), Some(u64::MAX)), None);
    }

    /// RCCL's version lines as RCCL prints them (corpus 2122, amikael/RCCL-tests;
    /// corpus 1146, an INFO line with its git head); a ring line still reads as one.
    #[test]
    fn rccl_names_its_version_in_its_own_words() {
        assert_eq!(parse("RCCL version 2.20.5+hip6.2 HEAD:45b618a+"), Some(Event::Version("2.20.5+hip6.2")));
        assert_eq!(parse("RCCL version : 2.22.3-HEAD:271856d"), Some(Event::Version("2.22.3")));
        assert_eq!(parse("RCCL version : unknown"), None);
        assert!(matches!(parse("Ring 00 : 0 1 2 3"), Some(Event::RingOrder { .. })));
    }

    #[test]
    fn connections_of_every_era() {
        let Some(Event::Connection(c)) = parse("Channel 02/1 : 5[5] -> 0[0] [send] via NET/IBext_v8/0(4)/GDRDMA")
        else {
            panic!()
        };
        assert_eq!(
            (c.channel, c.conn_index, c.from, c.to, c.direction, c.via),
            (2, 1, 5, Some(0), Direction::Send, "NET/IBext_v8/0(4)/GDRDMA")
        );
        let Some(Event::Connection(old)) = parse("Ring 04 : 7[7] -> 3[3] via P2P/IPC") else { panic!() };
        assert_eq!((old.channel, old.from, old.to), (4, 7, Some(3)));
        let Some(Event::Connection(net24)) = parse("Ring 00 : 7 -> 8 [send] via NET/IB/0") else { panic!() };
        assert_eq!((net24.from, net24.to, net24.direction), (7, Some(8), Direction::Send));
        let Some(Event::Connection(collnet)) = parse("CollNet 00/0 : 0 [receive] via COLLNET/SHARP/1/GDRDMA") else {
            panic!()
        };
        assert_eq!((collnet.from, collnet.to, collnet.direction), (0, None, Direction::Receive));
        assert_eq!(
            parse("Channel 00/02 :    0   7   6   5"),
            Some(Event::RingOrder { channel: 0, ranks: vec![0, 7, 6, 5] })
        );
        assert_eq!(parse("Ring 06 : 0 -> 1 -> 3"), Some(Event::RingNeighbours { channel: 6, prev: 0, me: 1, next: 3 }));
        // NCCL 2.1/2.2 (closed source; horovod#1097-era logs): the device tag
        // before the ring listing, and hops without a ring label.
        assert_eq!(
            parse("[0] Ring 0 :    0   1   2   3"),
            Some(Event::RingOrder { channel: 0, ranks: vec![0, 1, 2, 3] })
        );
        let Some(Event::Connection(hop)) = parse("2 -> 1 via P2P/IPC") else { panic!() };
        assert_eq!((hop.channel, hop.from, hop.to, hop.via), (0, 2, Some(1), "P2P/IPC"));
        assert_eq!(parse("2 -> 1 is not a hop"), None);
        // NCCL 2.1 with process ids in brackets (corpus 651).
        let Some(Event::Connection(hop)) = parse("1[5224] -> 0[5223] via direct shared memory") else { panic!() };
        assert_eq!((hop.from, hop.to, hop.via), (1, Some(0), "direct shared memory"));
        // NCCL 2.3.7 src/init.cu: `sprintf(prefix, "Ring %02d : ", r)` then the ranks.
        assert_eq!(parse("Ring 01 :    0   3   2   1"), Some(Event::RingOrder { channel: 1, ranks: vec![0, 3, 2, 1] }));
    }

    #[test]
    fn annotations_appended_by_some_builds() {
        assert_eq!(
            parse("Trees [0] 17/24/-1->16->0 [1] 17/-1/-1->16->9 comm 0x5609976f9470 nRanks 32 busId 17000"),
            Some(Event::Trees(vec![(0, 0, 16, vec![17, 24, -1]), (1, 9, 16, vec![17, -1, -1])]))
        );
        let Some(Event::Connection(c)) =
            parse("Channel 00/0 : 16[17000] -> 18[21000] via P2P/IPC comm 0x5609976f9470 nRanks 32")
        else {
            panic!()
        };
        assert_eq!(c.via, "P2P/IPC");
    }

    #[test]
    fn trees_in_three_conventions() {
        assert_eq!(parse("Trees [0] 26->25->-1/-1/-1"), Some(Event::Trees(vec![(0, 26, 25, vec![-1, -1, -1])])));
        assert_eq!(
            parse("Trees [0] 1/-1/-1->0->-1|-1->0->1/-1/-1"),
            Some(Event::Trees(vec![(0, -1, 0, vec![1, -1, -1])]))
        );
        assert_eq!(
            parse("Trees [0] -1/-1/-1->1->0 [1] 0/-1/-1->1->-1"),
            Some(Event::Trees(vec![(0, 0, 1, vec![-1, -1, -1]), (1, -1, 1, vec![0, -1, -1])]))
        );
        assert_eq!(
            parse("Tree 5 : -1 -> 3 -> 2/1/-1"),
            Some(Event::GraphTree { channel: 5, parent: -1, me: 3, children: vec![2, 1, -1] })
        );
    }

    /// A socket interface without a PCI path names the interface (corpus 400,
    /// 1065, 1280); an IB device's path and aws-ofi-nccl's line do not.
    #[test]
    fn a_socket_interface_without_a_pci_path_is_named() {
        let line = "Could not find real path of /sys/class/net/eth0/device";
        assert_eq!(parse(line), Some(Event::SocketInterfaces(vec!["eth0"])));
        assert_eq!(parse("Could not find real path of /sys/class/infiniband/mlx5_0/device"), None);
        assert_eq!(parse("Could not find real path of /sys/class/net/"), None);
    }

    /// NVLS multicast setup (transport/nvls.cc 2.17-2.30) is a step of init;
    /// the early support line, the graph's NVLS trees and the teardown are not.
    #[test]
    fn buffer_registrations_and_what_is_not_one() {
        // Wordings of NCCL 2.23-2.31 (register.cc, transport/net.cc, p2p.cc,
        // nvls.cc); the first three from corpus 2641 (NVIDIA/nccl#2389).
        for registered in [
            "rank 0 - NET register userbuff 0x7fe232600000 (handle 0x7fe208458a70), buffSize 25165824",
            "register comm 0xaf9d8c0 buffer 0x7fe1ec000000 size 402653184",
            "rank 0 - NET reuse buffer 0x7fe1ec000000 size 402653184 (baseAddr 0x7fe1ec000000 size 402653184) handle 0x7fe2083ef900",
            "rank 2 - IPC register buffer 0x7f00 size 1048576 (baseAddr 0x7f00 totalSize 1048576 numSegments 1) to peer 3 regAddr 0x7e00 offsetOut 0",
            "rank 5 - COLLNET register userbuff 0x7f00 (handle 0x1), buffSize 4096, type Send",
            "rank 1 successfully registered NVLS sendbuff 0x1, recvbuff 0x2, sendbuff size 3, recvbuff size 4, reg sendbuff 0x5, reg recvbuff 0x6",
            "Proxy rank 4 register success regAddr 0x7f00 size 4096 offset 0 legacyIpcCap 0 sameProcess 0",
        ] {
            assert_eq!(parse(registered), Some(Event::BufferRegistration), "{registered}");
        }
        for other in [
            "rank 0 failed to NET register userbuff 0x7f00 buffSize 4096 GDR flag 0",
            "rank 0 - deregistered net buffer handle 0x7f00",
            "ranks 0, 1 - NET register userbuff",
            "register plugin loaded",
        ] {
            assert_ne!(parse(other), Some(Event::BufferRegistration), "{other}");
        }
    }

    #[test]
    fn nvls_setup_steps_and_what_is_not_one() {
        for setup in [
            "NVLS Bind mem 0xac0000000 UC handle 0x7f3310ccb240 MC handle 0x7f3310ccaa20 size 1073741824",
            "NVLS comm 0x55d0c2a3e0f0 headRank 0 nHeads 8 buffSize 4194304 memSize 2097152 nvlsPerRankSize 201326592 nvlsTotalSize 1610612736",
            "NVLS Creating Multicast group nranks 8 size 1610612736 on rank 0",
            "NVLS importing shareableHandle 0x7f0c5c000b60 from rank 0",
            "NVLS rank 3 (dev 3) alloc done, ucptr 0x7f0 ucgran 2097152 mcptr 0x7f1 mcgran 2097152 ucsize 1 mcsize 1 (inputsize 1)",
        ] {
            assert_eq!(parse(setup), Some(Event::NvlsSetup), "{setup}");
        }
        for other in [
            "NVLS multicast support is available on dev 0 (NVLS_NCHANNELS 16)",
            "NVLS Trees : 0/-1/-1->0->-1 1/-1/-1->0->-1",
            "NVLS Unbind MC handle 7f0 size 1 dev 0",
            "NVLS Unmap mem UC handle 0x1(0x2) ucsize 1 MC handle 0x3(0x4) mcsize 1",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }

    #[test]
    fn init_env_network_and_errors() {
        let Some(Event::CommInit(init)) = parse(
            "ncclCommInitRank comm 0x55d0 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 4b000 commId 0xabc - Init COMPLETE",
        ) else {
            panic!()
        };
        assert_eq!(
            (init.rank, init.nranks, init.bus_id, init.comm_id, init.complete),
            (3, 8, Some("4b000"), Some("0xabc"), true)
        );
        let Some(Event::CommInit(start)) = parse(
            "[Rank 0] ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x2 - Init START",
        ) else {
            panic!()
        };
        assert!(!start.complete);
        let Some(Event::CommInit(v22)) = parse("comm 0x7fa42c00a3b0 rank 0 nranks 2") else { panic!() };
        assert_eq!((v22.rank, v22.nranks, v22.complete), (0, 2, false));
        let Some(Event::CommInit(old)) = parse("comm 0x7f5be8002130 rank 3 nranks 8 - COMPLETE") else { panic!() };
        assert_eq!((old.rank, old.nranks, old.complete), (3, 8, true));
        assert_eq!(
            parse("NCCL_IB_GID_INDEX set by environment to 3."),
            Some(Event::Env { name: "NCCL_IB_GID_INDEX", value: "3" })
        );
        assert_eq!(
            parse("NCCL_SOCKET_IFNAME set by environment to eth0"),
            Some(Event::Env { name: "NCCL_SOCKET_IFNAME", value: "eth0" })
        );
        // NCCL's forks echo their own settings the same way (RCCL, MSCCL).
        assert_eq!(
            parse("RCCL_MSCCL_ENABLE set by environment to 0."),
            Some(Event::Env { name: "RCCL_MSCCL_ENABLE", value: "0" })
        );
        assert_eq!(
            parse("MSCCL_XML_FILES set by environment to /x/allreduce.xml"),
            Some(Event::Env { name: "MSCCL_XML_FILES", value: "/x/allreduce.xml" })
        );
        assert_eq!(parse("RCCL version : unknown"), None);
        assert_eq!(
            parse("NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB eth0:10.0.0.1<0>"),
            Some(Event::NetDevices(vec!["mlx5_0:1/RoCE", "mlx5_1:1/RoCE"]))
        );
        assert_eq!(
            parse("NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'"),
            Some(Event::GdrForHca { hca: "mlx5_0", enabled: false })
        );
        assert_eq!(
            parse("transport/net.cc:1298 -> 6 [Async thread]"),
            Some(Event::ErrorTrace { location: "transport/net.cc:1298", code: 6 })
        );
        assert_eq!(
            parse("misc/socket.cc:50 -> 2 (Connection refused)"),
            Some(Event::ErrorTrace { location: "misc/socket.cc:50", code: 2 })
        );
        let Some(Event::Collective(c)) = parse(
            "AllReduce: opCount 139d sendbuff 0x1 recvbuff 0x1 count 7382228 datatype 7 op 0 root 0 comm 0x78cf [nranks=128] stream 0x1",
        ) else {
            panic!()
        };
        assert_eq!(
            (c.op, c.op_count, c.count, c.datatype, c.comm, c.nranks),
            ("AllReduce", 0x139d, 7382228, 7, Some("0x78cf"), Some(128))
        );
        assert_eq!(
            parse("AllReduce: 8388608 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..23}"),
            Some(Event::Tuning {
                collective: "AllReduce",
                bytes: Some(8388608),
                algorithm: "RING",
                protocol: "SIMPLE"
            })
        );
        assert_eq!(
            parse(
                "NET/IB : Using [0]={[0] mlx5_2:1/RoCE, [1] mlx5_3:1/RoCE} [1]={[0] mlx5_4:1/RoCE, [1] mlx5_5:1/RoCE} [RO]; OOB eth0:10.0.0.1<0>"
            ),
            Some(Event::NetDevices(vec!["mlx5_2:1/RoCE", "mlx5_3:1/RoCE", "mlx5_4:1/RoCE", "mlx5_5:1/RoCE"]))
        );
        assert_eq!(
            parse("NET/Socket : Using [0]ib0:10.1.0.1<0> [1]eth0:10.0.0.1<0>"),
            Some(Event::SocketInterfaces(vec!["ib0:10.1.0.1<0>", "eth0:10.0.0.1<0>"]))
        );
        // A plugin's list in NCCL's shape (corpus 771, GCP FastSocket).
        assert_eq!(
            parse("NET/FastSocket : Using [0]ens8:10.128.0.107<0> [1]ens9:10.128.1.7<0>"),
            Some(Event::NetDevices(vec!["ens8", "ens9"]))
        );
        assert_eq!(parse("NET : Using interface eth0:10.0.0.1<0>"), Some(Event::LegacyInterface("eth0:10.0.0.1<0>")));
        assert_eq!(parse("Using internal Network Socket"), Some(Event::UsingNetwork("Socket")));
        assert!(parse("Connected all rings").is_none());
        assert!(parse("").is_none());
    }
}
