//! What each kind of NCCL line changes in the reader's tables: init lines,
//! connections, rings and trees, collectives, error trails (split from the
//! line reader in `report.rs`).

use super::*;

/// Reuses of one communicator ID kept (the first few say it).
const MAX_ID_REUSES: usize = 16;

impl LogParser {
    /// PyTorch's watchdog: a timeout, or the progress of the rank that timed
    /// out. Its own function, called from the framework lines too, so that
    /// [`Self::event`] keeps its one call site on the per-line path (a
    /// second one cost 5 % of `topo nccl`'s throughput: it was no longer inlined).
    pub(super) fn watchdog(&mut self, event: Event) {
        match event {
            Event::WatchdogTimeout { rank, pg, seq, op, timeout_ms, ran_ms, group_size, numel_in, numel_out } => {
                let known = self.timeouts.iter().any(|t| t.rank == rank && t.seq == seq);
                if !known && self.timeouts.len() < MAX_TIMEOUTS {
                    self.timeouts.push(CollectiveTimeout {
                        rank,
                        pg: pg.map(str::to_string),
                        seq,
                        op: op.to_string(),
                        timeout_ms,
                        ran_ms,
                        last_completed: None,
                        group_size,
                        numel_in,
                        numel_out,
                        file: self.input_name.clone(),
                        line: self.line_number,
                    });
                }
            }
            Event::WatchdogProgress { rank, last_completed } => {
                if let Some(timeout) = self.timeouts.iter_mut().rev().find(|t| t.rank == rank) {
                    timeout.last_completed = last_completed.or(timeout.last_completed);
                }
            }
            _ => {}
        }
    }

    pub(super) fn event(&mut self, line: &LogLine, event: Event) {
        match event {
            Event::Version(v) => {
                if self.versions.len() < MAX_SMALL_TABLE {
                    self.versions.insert(v.to_string());
                }
            }
            Event::Env { name, value } => {
                self.first_line(format!("env/{name}={value}"), line.message);
                let key = (name.to_string(), value.to_string());
                if !self.env.contains_key(&key) && !self.budget.take(Table::EnvHosts, 1) {
                    return;
                }
                let hosts = self.env.entry(key).or_default();
                if let Some(host) = line.host
                    && !hosts.contains(host)
                    && self.budget.take(Table::EnvHosts, 1)
                {
                    hosts.insert(host.to_string());
                }
            }
            Event::UsingNetwork(name) => {
                self.first_line(format!("network/{name}"), line.message);
                push_unique(&mut self.network.used, name)
            }
            Event::NetDevices(devices) => {
                if let Some(host) = line.host {
                    let budget = &mut self.budget;
                    let listed = self.network.devices_by_host.get(host).map_or(0, Vec::len);
                    if listed == 0 && budget.take(Table::HostDevices, 1) {
                        self.network.devices_by_host.insert(host.to_string(), Vec::new());
                    }
                    if let Some(listed) = self.network.devices_by_host.get_mut(host) {
                        for device in &devices {
                            if !listed.iter().any(|d| d == device) && budget.take(Table::HostDevices, 1) {
                                listed.push(device.to_string());
                            }
                        }
                    }
                }
                devices.into_iter().for_each(|d| push_unique(&mut self.network.devices, d))
            }
            Event::LegacyInterface(interface) => {
                self.first_line(format!("bootstrap/{interface}"), line.message);
                push_unique(&mut self.network.bootstrap, interface);
                let name = interface.split(':').next().unwrap_or(interface);
                push_unique(&mut self.network.socket_interfaces, name);
            }
            Event::SocketInterfaces(entries) => {
                self.socket_transport_started = true;
                for entry in entries {
                    push_unique(&mut self.network.socket_interfaces, message::socket_interface_name(entry));
                    if CATALOGUE.unreachable_interface(entry).is_some() {
                        self.first_line(format!("socket/{entry}"), line.message);
                        push_unique(&mut self.network.socket_unreachable, entry);
                    }
                }
            }
            Event::NetPluginAsked(name) => self.first_line(format!("net-plugin-asked/{name}"), line.message),
            Event::NetPlugin(plugin) => {
                if plugin.is_none() {
                    self.first_line("net-plugin-internal".to_string(), line.message);
                }
                if let Some(host) = line.host
                    && self.network.plugins_by_host.len() < MAX_SMALL_TABLE
                {
                    let name = plugin.unwrap_or("internal");
                    self.network.plugins_by_host.entry(host.to_string()).or_insert_with(|| name.to_string());
                }
            }
            Event::NetIbNotFound => {
                self.first_line("net-ib-not-found".to_string(), line.message);
                self.network.ib_not_found = true
            }
            Event::OfiProvider { provider, nics } => {
                let summary = match nics {
                    Some(1) => format!("{provider} (1 nic)"),
                    Some(n) => format!("{provider} ({n} nics)"),
                    None => provider.to_string(),
                };
                // Where the plugin names its NICs, the names are the devices.
                if !self.ofi_nics_named {
                    push_unique(&mut self.network.devices, &summary);
                    push_unique(&mut self.ofi_summaries, &summary);
                }
            }
            Event::OfiNic(name) => {
                if !self.ofi_nics_named {
                    self.ofi_nics_named = true;
                    let summaries = std::mem::take(&mut self.ofi_summaries);
                    self.network.devices.retain(|d| !summaries.contains(d));
                }
                push_unique(&mut self.network.devices, name);
            }
            Event::Bootstrap(interfaces) => {
                for interface in interfaces {
                    self.first_line(format!("bootstrap/{interface}"), line.message);
                    push_unique(&mut self.network.bootstrap, interface);
                }
            }
            Event::GdrForHca { hca, enabled } => {
                self.first_line(format!("gdr/{hca}"), line.message);
                if self.network.gdr_by_hca.len() < MAX_SMALL_TABLE {
                    self.network.gdr_by_hca.insert(hca.to_string(), enabled);
                }
            }
            Event::CommInit(init) => self.comm_init(line, init),
            Event::NvlsSetup => self.nvls_setup += 1,
            Event::BufferRegistration => self.buffer_registrations += 1,
            Event::CommNodes { comm, nranks, nnodes, .. } => {
                let index = self.host(line.host).and_then(|h| h.comm_for_pointer(comm, line.pid));
                let state = match index {
                    Some(i) => &mut self.comms[i],
                    None => self.current(line).0,
                };
                state.nranks = Some(nranks);
                state.nnodes = Some(nnodes);
            }
            Event::RankCount { rank, nranks } => {
                let (comm, _) = self.current(line);
                if let Some(rank) = rank {
                    comm.saw_rank(rank);
                }
                comm.nranks.get_or_insert(nranks);
            }
            Event::RingOrder { channel, ranks } => {
                let (comm, budget) = self.current(line);
                ranks.iter().for_each(|r| comm.saw_rank(*r));
                if !comm.ring_orders.contains_key(&channel)
                    && budget.take(Table::RingOrderRanks, ranks.len() as u64 + 1)
                {
                    comm.ring_orders.insert(channel, ranks);
                }
            }
            Event::RingNeighbours { channel, prev, me, next } => {
                let (comm, budget) = self.current(line);
                [prev, me, next].iter().for_each(|r| comm.saw_rank(*r));
                let known = comm.ring_next.get(&channel).is_some_and(|n| n.contains_key(&me));
                if known || budget.take(Table::RingEdges, 1) {
                    comm.ring_next.entry(channel).or_default().insert(me, next);
                    comm.ring_prev.entry(channel).or_default().insert(me, prev);
                }
            }
            Event::Connection(connection) => self.connection(line, connection),
            Event::Trees(entries) => {
                let size = annotated_nranks(line.message);
                let (comm, budget) = self.current(line);
                comm.coll_nranks = comm.coll_nranks.or(size);
                for (channel, parent, me, children) in entries {
                    comm.add_tree(channel, parent, me, &children, budget);
                }
            }
            Event::GraphTree { channel, parent, me, children } => {
                let (comm, budget) = self.current(line);
                comm.add_tree(channel, parent, me, &children, budget);
            }
            Event::Channels(counts) => self.current(line).0.channels = Some(counts),
            Event::GraphSearch(graph) => {
                let (comm, _) = self.current(line);
                if !comm.graphs.contains(&graph) && comm.graphs.len() < 64 {
                    comm.graphs.push(graph);
                }
            }
            Event::WatchdogTimeout { .. } | Event::WatchdogProgress { .. } => self.watchdog(event),
            Event::InitTimings { total, .. } => {
                let (comm, _) = self.current(line);
                comm.init_seconds = Some(comm.init_seconds.map_or(total, |t: f64| t.max(total)));
            }
            Event::Collective(collective) => self.collective(line, collective),
            Event::ErrorTrace { location, code } => {
                let key = (location.to_string(), code);
                let next = self.errors.len();
                let aborted = code == 3 && self.aborting_threads.contains(&(line.pid, line.tid));
                if next < MAX_DISTINCT_ERRORS || self.errors.contains_key(&key) {
                    let entry = self.errors.entry(key).or_insert(ErrorCount { first: next, ..ErrorCount::default() });
                    entry.lines += 1;
                    entry.after_abort += u64::from(aborted);
                }
            }
            Event::Tuning { collective, bytes, algorithm, protocol } => {
                let key = (collective.to_string(), algorithm.to_string(), protocol.to_string(), bytes);
                if self.tuning.len() < MAX_SMALL_TABLE || self.tuning.contains_key(&key) {
                    *self.tuning.entry(key).or_default() += 1;
                }
            }
        }
    }

    fn comm_init(&mut self, line: &LogLine, init: CommInit) {
        if init.complete {
            self.init_complete += 1;
        }
        let known = self.host(line.host).and_then(|h| h.comm_for_pointer(init.comm, line.pid));
        // A communicator's end adds nothing to one already known; an excerpt
        // that starts after init learns its size and ranks from it, without
        // making it the thread's current communicator.
        if init.ends && known.is_some() {
            return;
        }
        // Ranks of one communicator share its commId (2.16+); before that, group by
        // size and start a new communicator when a rank number comes back.
        let index = match (init.comm_id, known) {
            (_, Some(i)) => i,
            (Some(id), None) => match self.comm_by_id.get(id) {
                Some(&i) => {
                    self.note_id_reuse(i, line, &init);
                    i
                }
                None => self.new_comm(id.to_string()),
            },
            (None, None) => {
                // One process holds several ranks of one communicator only on
                // several GPUs (ncclCommInitAll, one thread per device): a rank
                // of this process on this GPU already there is another
                // communicator of the same size (Megatron's many groups of 2).
                let same_gpu = |r: &RankInfo| {
                    r.host.as_deref() == line.host
                        && r.pid.is_some()
                        && r.pid == line.pid
                        && match (r.bus_id, init.bus_id.and_then(|b| BusId::from_nccl_int(b).ok())) {
                            (Some(held), Some(this)) => held == this,
                            _ => r.cuda_dev.is_some() && r.cuda_dev == init.cuda_dev,
                        }
                };
                // The same rank of the same process under another pointer (a
                // known pointer was found above) is another communicator too.
                let fits = |c: &CommState| {
                    c.nranks == Some(init.nranks)
                        && !c.id.starts_with("0x")
                        && c.ranks
                            .get(&init.rank)
                            .is_none_or(|r| r.host.as_deref() == line.host && r.pid == line.pid && r.pid.is_none())
                        && !c.ranks.values().any(same_gpu)
                };
                match self.comms.iter().rposition(fits) {
                    Some(i) => i,
                    None => {
                        let id = format!("{SIZE_GROUPED}{}-{}", init.nranks, self.comms.len());
                        self.new_comm(id)
                    }
                }
            }
        };
        // Lines this thread printed since an earlier COMPLETE were this
        // communicator's (see `settle_pending`).
        if let Some(pending) = self.current_index(line).filter(|&p| p != index && self.comms[p].id.starts_with(PENDING))
        {
            let lines = std::mem::take(&mut self.comms[pending]);
            self.comms[index].absorb(lines);
        }
        let started = self.comms[index].started.contains(&init.rank);
        let (state, budget) = (&mut self.hosts[self.line_host].1, &mut self.budget);
        if !init.ends {
            state.last_collective.clear();
        }
        if known.is_none() && budget.take(Table::CommPointers, 1) {
            state.comm_by_pointer.entry(init.comm.to_string()).or_default().push((line.pid, index));
        }
        let thread = (line.pid, line.tid);
        if !init.ends && (state.current_by_thread.contains_key(&thread) || budget.take(Table::Threads, 1)) {
            state.current_by_thread.insert(thread, index);
            if state.current_by_pid.insert(line.pid, index).is_some_and(|before| before != index)
                && state.pids_with_several.len() < MAX_SMALL_TABLE
            {
                state.pids_with_several.insert(line.pid);
            }
        }
        let (comm, budget) = (&mut self.comms[index], &mut self.budget);
        comm.nranks = Some(init.nranks);
        comm.saw_rank(init.rank);
        comm.saw_host(line.host, budget);
        if init.complete && (comm.init_complete.contains(&init.rank) || budget.take(Table::Ranks, 1)) {
            comm.init_complete.insert(init.rank);
        }
        if comm.ranks.contains_key(&init.rank) || budget.take(Table::Ranks, 1) {
            let rank =
                comm.ranks.entry(init.rank).or_insert_with(|| RankInfo { rank: init.rank, ..RankInfo::default() });
            rank.host = line.host.map(str::to_string);
            rank.pid = line.pid;
            rank.cuda_dev = init.cuda_dev.or(rank.cuda_dev);
            rank.nvml_dev = init.nvml_dev.or(rank.nvml_dev);
            rank.bus_id = init.bus_id.and_then(|b| BusId::from_nccl_int(b).ok()).or(rank.bus_id);
        }
        if let Some(host) = line.host
            && (comm.rank_hosts.contains_key(&init.rank) || budget.take(Table::RankHosts, 1))
        {
            comm.rank_hosts.insert(init.rank, host.to_string());
        }
        if !init.complete && !init.ends {
            comm.started.insert(init.rank);
        } else if init.complete && !started && self.comms.len() < MAX_COMMUNICATORS {
            // No `Init START` opened it: what this thread prints next may
            // be the next communicator's, printed before its COMPLETE.
            let pending = self.new_comm(format!("{PENDING}{}", self.comms.len()));
            self.comms[pending].pending_after = Some(index);
            let state = &mut self.hosts[self.line_host].1;
            if state.current_by_thread.contains_key(&thread) {
                state.current_by_thread.insert(thread, pending);
            }
        }
    }

    /// A new communicator (a pointer not seen before) starting under the ID
    /// of one whose rank this process already holds: the ID was used twice.
    fn note_id_reuse(&mut self, index: usize, line: &LogLine, init: &CommInit) {
        if init.complete || init.ends {
            return;
        }
        let comm = &self.comms[index];
        let held = comm.ranks.get(&init.rank).is_some_and(|r| r.host.as_deref() == line.host && r.pid == line.pid);
        if held && line.pid.is_some() && comm.id_reused.len() < MAX_ID_REUSES {
            let reuse = topo_model::nccl::IdReuse {
                rank: init.rank,
                host: line.host.map(str::to_string),
                pid: line.pid,
                file: self.input_name.clone(),
                line: self.line_number,
            };
            self.comms[index].id_reused.push(reuse);
        }
    }

    fn connection(&mut self, line: &LogLine, connection: ConnectionLine) {
        if self.via.len() < MAX_DISTINCT_VIA || self.via.contains_key(connection.via) {
            *self.via.entry(connection.via.to_string()).or_default() += 1;
            self.first_line(format!("via/{}", connection.via), line.message);
        }
        let size = annotated_nranks(line.message);
        let highest = connection.to.map_or(connection.from, |to| to.max(connection.from));
        let (comm, budget) = self.current_holding(line, highest);
        comm.coll_nranks = comm.coll_nranks.or(size);
        comm.saw_rank(connection.from);
        connection.to.iter().for_each(|r| comm.saw_rank(*r));
        // P2P/SHM lines and [send] halves are printed by the sender, [receive] by the receiver.
        let printer = match connection.direction {
            Direction::Receive => connection.to.unwrap_or(connection.from),
            _ => connection.from,
        };
        if let Some(host) = line.host
            && !comm.rank_hosts.contains_key(&printer)
            && budget.take(Table::RankHosts, 1)
        {
            comm.rank_hosts.insert(printer, host.to_string());
        }
        let key = (
            connection.channel,
            connection.conn_index,
            connection.from,
            connection.to,
            connection.direction,
            connection.via.to_string(),
        );
        if !comm.connections.contains(&key) && budget.take(Table::Connections, 1) {
            comm.connections.insert(key);
        }
    }

    pub(super) fn collective(&mut self, line: &LogLine, op: Collective) {
        let bytes = op.count.saturating_mul(datatype_size(op.datatype));
        let bucket = if bytes == 0 { 0 } else { (64 - (bytes - 1).leading_zeros()) as usize };
        let add = |entry: &mut CollectiveAccumulator| {
            entry.0 += 1;
            if let Some(slot) = entry.1.get_mut(bucket) {
                *slot += 1;
            }
            entry.2 = entry.2.saturating_add(bytes);
        };
        let last = self.last_collective_op;
        let index = match self.collectives.get(last) {
            Some((name, _)) if short_eq(name, op.op) => Some(last),
            _ => self.collective_index.get(op.op).copied().or_else(|| {
                (self.collectives.len() < MAX_SMALL_TABLE).then(|| {
                    self.collectives.push((op.op.to_string(), (0, [0; 65], 0)));
                    self.collective_index.insert(op.op.to_string(), self.collectives.len() - 1);
                    self.collectives.len() - 1
                })
            }),
        };
        let op_index = index;
        if let Some(index) = index {
            self.last_collective_op = index;
            if let Some((_, entry)) = self.collectives.get_mut(index) {
                add(entry);
            }
        }

        let pointer = op.comm.unwrap_or("?");
        let cached = self
            .line_state()
            .last_collective
            .iter()
            .find(|(pid, last, ..)| *pid == line.pid && short_eq(last, pointer))
            .map(|(_, _, comm, slot)| (*comm, *slot));
        let (index, slot) = match cached {
            Some(hit) => hit,
            None => match self.locate_collective(line, pointer, op.nranks) {
                Some(found) => found,
                None => return,
            },
        };
        let state = self.line_state();
        let Some((_, _, progress)) = state.progress.get_mut(slot) else {
            return;
        };
        if let (Some(slot), Some(op_index)) =
            (progress.recent.get_mut(progress.calls as usize % RECENT_CALLS), op_index)
        {
            *slot = (op.op_count, op_index, op.count, op.datatype);
        }
        progress.calls += 1;
        progress.last_op_count = op.op_count;
        progress.last_op = op_index;
        progress.nranks = progress.nranks.or(op.nranks);
        if cached.is_none() {
            let entry = (line.pid, pointer.to_string(), index, slot);
            // One entry per (process, communicator): a thread that takes turns
            // between communicators must not evict its own entries.
            let cache = &mut state.last_collective;
            if cache.len() < MAX_RECENT_COMMS {
                cache.push(entry);
            } else if let Some(oldest) = cache.first_mut() {
                *oldest = entry;
                cache.rotate_left(1);
            }
        }
    }

    /// First COLL line of a (process, communicator): finds the communicator, notes
    /// its size and host, and makes the progress slot. Returns (communicator, slot).
    fn locate_collective(
        &mut self,
        line: &LogLine,
        pointer: &str,
        nranks: Option<u32>,
    ) -> Option<(Option<usize>, usize)> {
        let index = self.host(line.host).and_then(|h| h.comm_for_pointer(pointer, line.pid));
        let (comm, budget) = match index {
            Some(i) => (&mut self.comms[i], &mut self.budget),
            None => self.current(line),
        };
        comm.saw_host(line.host, budget);
        if comm.coll_nranks.is_none() {
            comm.coll_nranks = nranks;
        }
        let rank = index.and_then(|i| {
            self.comms[i].ranks.values().find(|r| r.host.as_deref() == line.host && r.pid == line.pid).map(|r| r.rank)
        });
        let (state, budget) = (&mut self.hosts[self.line_host].1, &mut self.budget);
        let known = state.progress_index.get(pointer).and_then(|list| list.iter().find(|(pid, _)| *pid == line.pid));
        let slot = match known {
            Some((_, slot)) => *slot,
            None if budget.take(Table::Progress, 1) => {
                state.progress.push((pointer.to_string(), line.pid, Progress { rank, ..Progress::default() }));
                let slot = state.progress.len() - 1;
                state.progress_index.entry(pointer.to_string()).or_default().push((line.pid, slot));
                slot
            }
            None => return None,
        };
        Some((index, slot))
    }
}
