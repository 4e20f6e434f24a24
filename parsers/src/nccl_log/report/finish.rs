//! The end of reading: the tables of a whole log become the report
//! (communicators merged and named, hosts folded, trails in order).

use super::*;

impl LogParser {
    /// The report of everything read so far.
    pub fn finish(mut self) -> NcclReport {
        self.close_quote();
        self.read_held_warn_now();
        let verbs_missing = self.verbs_missing;
        let socket_started = self.socket_transport_started;
        let host_lines: HashMap<String, u64> = self
            .hosts
            .iter()
            .filter(|(h, s)| !h.is_empty() && s.lines > 0)
            .map(|(h, s)| (h.clone(), s.lines))
            .collect();
        let op_names: Vec<String> = self.collectives.iter().map(|(name, _)| name.clone()).collect();
        let (tuning_table, tuning_ranges) = self.tuning_table.finish();
        let mut collectives_sorted = self.collectives;
        collectives_sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let host_pids: HashMap<&str, &BTreeSet<Option<u64>>> = self
            .hosts
            .iter()
            .filter(|(h, _)| host_lines.contains_key(h.as_str()))
            .map(|(h, s)| (h.as_str(), &s.pids))
            .collect();
        let mut hosts = canonical_hosts(&host_lines);
        fold_cut_heads(&mut hosts, &host_lines, &host_pids);
        let rename = |h: &str| hosts.get(h).cloned().unwrap_or_else(|| h.to_string());
        let host_list: Vec<String> = hosts.values().cloned().collect::<BTreeSet<_>>().into_iter().collect();
        // A prefix whose host was redacted (`:21831:21831 [0] NCCL INFO ...`)
        // still names its process, unless a named host has that pid too (a
        // redaction that left `NAME :70918:70918`); a line without a prefix names none.
        let named_pids: BTreeSet<u64> = self
            .hosts
            .iter()
            .filter(|(h, _)| !h.is_empty())
            .flat_map(|(_, s)| s.pids.iter().flatten().copied())
            .collect();
        let processes: BTreeSet<(String, Option<u64>)> = self
            .hosts
            .iter()
            .flat_map(|(h, s)| s.pids.iter().map(move |p| (h, *p)))
            .filter(|(h, p)| !h.is_empty() || p.is_some_and(|p| !named_pids.contains(&p)))
            .map(|(h, p)| (rename(h), p))
            .collect();

        let (comms, orphans) = settle_pending(self.comms, self.orphans);
        let mut comms = merge_orphans(comms, orphans);
        mark_shared_sizes(&mut comms);
        // A printed `nNodes` is NCCL's own count: never replaced by a bound.
        let nnodes_printed = comms.iter().any(|c| c.nnodes.is_some());
        let communicators = comms.into_iter().map(|c| c.into_report(&rename)).collect();
        let env_overrides = self
            .env
            .into_iter()
            .map(|((name, value), hosts)| EnvOverride {
                name,
                value,
                hosts: hosts.iter().map(|h| rename(h)).collect::<BTreeSet<_>>().into_iter().collect(),
            })
            .collect();
        let mut not_kept = self.budget.not_kept();
        for (name, table) in [
            ("distinct warnings", &self.warnings),
            ("distinct notices", &self.notices),
            ("distinct framework errors", &self.framework_errors),
        ] {
            if table.dropped > 0 {
                not_kept.insert(name.to_string(), table.dropped);
            }
        }
        let warning_count = self.warnings.count;
        let warnings = self.warnings.finish(MessageLevel::Warn, &rename);
        let notices = self.notices.finish(MessageLevel::Info, &rename);
        let framework_errors = self.framework_errors.finish(MessageLevel::Framework, &rename);
        let mut logged_paths = self.logged_paths;
        for path in &mut logged_paths {
            path.host = path.host.as_deref().map(rename);
        }
        let collectives = collectives_sorted
            .into_iter()
            .map(|(op, (calls, histogram, total_bytes))| {
                let size_histogram = histogram
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n > 0)
                    .map(|(bucket, n)| (if bucket == 0 { 0 } else { 1u64 << (bucket - 1).min(63) }, *n))
                    .collect();
                (op, CollectiveStats { calls, size_histogram, total_bytes })
            })
            .collect();
        let mut progress: Vec<RankProgress> = Vec::new();
        for (host, state) in self.hosts {
            for (comm, pid, p) in state.progress {
                progress.push(RankProgress {
                    host: (!host.is_empty()).then(|| rename(&host)),
                    pid,
                    comm,
                    rank: p.rank,
                    last_op: p.last_op.and_then(|i| op_names.get(i)).cloned().unwrap_or_default(),
                    last_op_count: p.last_op_count,
                    calls: p.calls,
                    nranks: p.nranks,
                    recent: (0..RECENT_CALLS.min(p.calls as usize))
                        .rev()
                        .filter_map(|back| {
                            let at = (p.calls as usize - 1 - back) % RECENT_CALLS;
                            let (op_count, op, count, datatype) = *p.recent.get(at)?;
                            Some(CollectiveCall { op_count, op: op_names.get(op)?.clone(), count, datatype })
                        })
                        .collect(),
                });
            }
        }
        progress.sort_by(|a, b| (&a.host, a.pid, &a.comm).cmp(&(&b.host, b.pid, &b.comm)));
        let mut report = NcclReport {
            schema_version: NCCL_REPORT_SCHEMA_VERSION,
            graph_dumps: Vec::new(),
            inputs: Vec::new(),
            nccl_versions: self.versions.into_iter().collect(),
            hosts: host_list,
            processes: processes.len() as u64,
            nodes: None,
            nodes_at_least: false,
            communicators,
            network: Network {
                // Merged under each host's canonical name, as everywhere else.
                devices_by_host: {
                    let mut merged: BTreeMap<String, Vec<String>> = BTreeMap::new();
                    for (host, devices) in &self.network.devices_by_host {
                        let listed = merged.entry(rename(host)).or_default();
                        devices.iter().for_each(|d| push_unique(listed, d));
                    }
                    merged
                },
                plugins_by_host: self
                    .network
                    .plugins_by_host
                    .iter()
                    .map(|(host, plugin)| (rename(host), plugin.clone()))
                    .collect(),
                // Without a `Using network` line, the NET transports of the
                // connection lines name it (`NET/Socket/0` -> `Socket`).
                used: if self.network.used.is_empty() {
                    let mut used: Vec<String> = Vec::new();
                    for via in self.via.keys() {
                        if let Some(name) = via.strip_prefix("NET/").and_then(|v| v.split('/').next())
                            && !name.is_empty()
                            && !used.iter().any(|u| u == name)
                        {
                            used.push(name.to_string());
                        }
                    }
                    used
                } else {
                    self.network.used.clone()
                },
                // The transport's devices; the socket transport's interfaces
                // only when nothing else was listed (they are listed always).
                devices: if self.network.devices.is_empty() {
                    self.network.socket_interfaces.clone()
                } else {
                    self.network.devices.clone()
                },
                ..self.network
            },
            env_overrides,
            warnings,
            warning_count,
            notices,
            framework_errors,
            application_error: self.application_error,
            logged_paths,
            error_codes: {
                let mut trail: Vec<((String, i64), ErrorCount)> = self.errors.into_iter().collect();
                trail.sort_by_key(|(_, c)| c.first);
                trail
                    .into_iter()
                    .map(|((location, code), c)| ErrorTrace {
                        location,
                        code,
                        count: c.lines,
                        after_abort: c.after_abort,
                    })
                    .collect()
            },
            collectives,
            progress,
            tuning: self
                .tuning
                .into_iter()
                .map(|((collective, algorithm, protocol, bytes), count)| TuningChoice {
                    collective,
                    algorithm,
                    protocol,
                    bytes,
                    count,
                })
                .collect(),
            init_complete: self.init_complete,
            nvls_setup: self.nvls_setup,
            buffer_registrations: self.buffer_registrations,
            via: self.via,
            first_lines: self.first_lines,
            timeouts: self.timeouts,
            nccl_tests: self.nccl_tests.finish(),
            tuning_table,
            tuning_ranges,
            lines: self.lines,
            nccl_lines: self.nccl_lines,
            unparsed_lines: self.unparsed_lines,
            not_kept,
        };
        report.annotate_from_logged_paths();
        // Nothing named the network: a network plugin's own WARN names it
        // (`NET/OFI ...`: aws-ofi-nccl), else a message only a transport in
        // use prints does.
        if report.network.used.is_empty() {
            let by_row =
                report.warnings.iter().chain(&report.framework_errors).find_map(|w| CATALOGUE.text_network(&w.text));
            report.network.used.extend(by_row.map(str::to_string));
        }
        if report.network.used.is_empty() {
            let carried = report
                .warnings
                .iter()
                .filter_map(|w| w.class.as_deref())
                .find_map(|class| CATALOGUE.class(class).and_then(|c| c.carried_by));
            report.network.used.extend(carried.map(str::to_string));
        }
        // A WARN from the IB or socket transport's own file, or NCCL's per-HCA
        // GPUDirect lines (printed by the IB transport), prove that network.
        if report.network.used.is_empty() {
            let from_source =
                report.warnings.iter().filter_map(|w| w.source.as_deref()).find_map(|s| CATALOGUE.source_network(s));
            // So does an error trail through the IB transport (`transport/net_ib.cu:453
            // -> 2`), whose code runs only for that network. Not the socket
            // transport's: NCCL 2.3-2.4 ran the bootstrap over it whatever the
            // network (bootstrap.cu: `ncclBootstrapNet = &ncclNetSocket`).
            let from_trail = report
                .error_codes
                .iter()
                .find_map(|e| CATALOGUE.source_network(&e.location))
                .filter(|network| *network == "IB");
            let from_gdr = (!report.network.gdr_by_hca.is_empty()).then_some("IB");
            // `NET/IB : Using [0]mlx5_0:1/RoCE`: the IB transport found ports, and
            // without a plugin NCCL uses the IB transport when it has any.
            let ib_ports = report.network.devices.iter().any(|d| d.ends_with("/IB") || d.ends_with("/RoCE"));
            let from_ports = (ib_ports && !report.network.ib_not_found).then_some("IB");
            // `NET/IB : No device found.` with nothing else named: NCCL's
            // internal transports leave only sockets (a plugin would have said
            // `Using network <plugin>`).
            // So does a libibverbs that would not load, once the socket
            // transport listed its interfaces (2.4 printed no `Using network`).
            let no_verbs = verbs_missing && !report.network.socket_interfaces.is_empty();
            // The socket transport listed its interfaces: NCCL starts it only
            // when nothing before it could carry the traffic (2.4 -> 2.30's
            // ncclNetInit stops at the first usable network).
            let from_no_ib = (report.network.ib_not_found || no_verbs || socket_started).then_some("Socket");
            report
                .network
                .used
                .extend(from_source.or(from_trail).or(from_gdr).or(from_ports).or(from_no_ib).map(str::to_string));
        }
        if report.network.devices.is_empty() {
            report.network.devices = report.network.gdr_by_hca.keys().cloned().collect();
        }
        // Without NCCL's device list, the IB devices its warnings name.
        if report.network.devices.is_empty() {
            let named: BTreeSet<String> =
                report.warnings.iter().filter_map(|w| ib_device_named(&w.text)).map(str::to_string).collect();
            report.network.devices = named.into_iter().collect();
        }
        let printed = report.communicators.iter().filter_map(|c| c.nnodes).max();
        let named = u32::try_from(report.hosts.len()).ok().filter(|n| *n > 0);
        // nccl-tests' device table names each rank's host, also when NCCL_DEBUG was off.
        let tested = report
            .nccl_tests
            .iter()
            .map(|run| run.ranks.iter().map(|r| r.host.as_str()).collect::<std::collections::BTreeSet<_>>().len())
            .filter_map(|n| u32::try_from(n).ok().filter(|n| *n > 0))
            .max();
        report.nodes = printed.max(named).max(tested);
        // A communicator's count that is itself a bound (a hop leaving one
        // host's lines) stays one when nothing else reaches it.
        let counted = named.max(tested);
        report.nodes_at_least = !nnodes_printed
            && counted < report.nodes
            && report.communicators.iter().any(|c| c.nnodes_at_least && c.nnodes == report.nodes);
        // One node's lines of a multi-node job: the hosts named are a lower bound.
        if report.nodes.unwrap_or(0) < 2 && !nnodes_printed && span::remote_peer_shown(&report) {
            report.nodes = Some(2);
            report.nodes_at_least = true;
        }
        report
    }
}

/// The IB device an IB warning names, with its port where it gives one: the
/// async event thread's `NET/IB : mlx5_0:1 Got async event` (net_ib.cc, all
/// versions), ibv_modify_qp's `on dev mlx5_bond_1:1, curr state` (ibvwrap.cc,
/// 2.23+), a completion error's trailing `hca mlx5_11` (net_ib.cc, 2.19+).
/// These devices carried the job's traffic; a device NCCL could not open
/// did not, and is not taken.
fn ib_device_named(text: &str) -> Option<&str> {
    fn device(s: &str) -> bool {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    }
    fn with_port(token: &str) -> Option<&str> {
        let (name, number) = token.split_once(':')?;
        (device(name) && !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())).then_some(token)
    }
    if let Some(rest) = text.strip_prefix("NET/IB : ")
        && rest.contains("event")
        && let Some(token) = rest.split(' ').next().and_then(with_port)
    {
        return Some(token);
    }
    if let Some(at) = text.find(" on dev ") {
        let token = text[at + " on dev ".len()..].split([',', ' ']).next()?;
        return with_port(token);
    }
    let (_, last) = text.rsplit_once(" hca ")?;
    device(last.trim_end()).then_some(last.trim_end())
}

#[cfg(test)]
mod tests {
    use super::ib_device_named;

    #[test]
    fn ib_warnings_name_the_device_they_happened_on() {
        let cases = [
            ("NET/IB : mlx5_0:1 Got async event : local access violation work queue error", Some("mlx5_0:1")),
            (
                "NET/IB : mlx5_ib0:1 async fatal event on QP (0x7f69f01519a8): local access violation",
                Some("mlx5_ib0:1"),
            ),
            (
                "Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_bond_1:1, curr state INIT",
                Some("mlx5_bond_1:1"),
            ),
            (
                "NET/IB : Got completion from peer 10.0.0.6<5000> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.106.5 remoteGids::ffff:10.0.106.6 hca mlx5_11",
                Some("mlx5_11"),
            ),
            // A device NCCL could not open carried nothing.
            ("NET/IB : Unable to open device erdma_1", None),
            ("NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>", None),
            ("Cuda failure 'out of memory'", None),
        ];
        for (text, want) in cases {
            assert_eq!(ib_device_named(text), want, "{text}");
        }
    }
}
