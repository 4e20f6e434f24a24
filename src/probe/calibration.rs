//! The calibration table (`calibration.tsv`): figures others measured on
//! healthy machines (nvbandwidth, nccl-tests, with their sources), held
//! against what `topo probe` would expect on the bundled example of the same
//! kind of machine. Only a test reads it: it keeps the efficiencies in
//! `expect` honest against published numbers.

#[cfg(test)]
mod tests {
    use topo_model::measure::{
        CollectiveResult, CollectiveRow, CopyKind, CopyResult, Expectation, HopResult, ProbeReport, ProbedGpu,
    };
    use topo_model::{Bandwidth, collective::Collective};

    const TABLE: &str = include_str!("calibration.tsv");
    /// published / expected must fall in here.
    const TOLERANCE: (f64, f64) = (0.80, 1.30);

    struct Row<'a> {
        machine: &'a str,
        example: &'a str,
        measure: &'a str,
        gpus: (u32, u32),
        gbps: f64,
        source: &'a str,
        /// `holds`, or `gap: why`.
        status: &'a str,
    }

    fn rows() -> Vec<Row<'static>> {
        TABLE
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("machine\t") && !l.trim().is_empty())
            .map(|line| {
                let f: Vec<&str> = line.split('\t').collect();
                assert_eq!(f.len(), 8, "{line}");
                let gpus = match f[3].split_once('-') {
                    Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                    None => (f[3].parse().unwrap(), f[3].parse().unwrap()),
                };
                Row {
                    machine: f[0],
                    example: f[1],
                    measure: f[2],
                    gpus,
                    gbps: f[4].parse().unwrap(),
                    source: f[5],
                    status: f[7],
                }
            })
            .collect()
    }

    fn copy(kind: CopyKind, gpu: u32, peer: Option<u32>, gbps: f64) -> CopyResult {
        CopyResult {
            kind,
            gpu,
            peer,
            bytes: 1 << 28,
            seconds: (1u64 << 28) as f64 / (gbps * 1e9),
            bandwidth: Bandwidth(gbps * 1e9),
            expectation: Expectation::default(),
            host_node: None,
            error: None,
        }
    }

    /// topo's expectation for `row` on its example, in GB/s, and the path it names.
    fn expectation(row: &Row) -> (f64, String) {
        // A bundled example by name, or a real topology file under tests/fixtures/.
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(row.example);
        let origin = match row.example.contains('/') {
            true => crate::sources::Origin::File(&fixture),
            false => crate::sources::Origin::Example(row.example),
        };
        let snapshot = crate::sources::load(origin).unwrap();
        let topology = &snapshot.topology;
        let mut buses: Vec<String> = topology.gpus.iter().map(|g| g.bus_id.to_string()).collect();
        buses.sort();
        let (a, b) = row.gpus;
        let ring: Vec<u32> = if row.measure == "ring" { (a..=b).collect() } else { (0..buses.len() as u32).collect() };
        let mut report = ProbeReport {
            gpus: ring
                .iter()
                .enumerate()
                .map(|(rank, &ordinal)| ProbedGpu {
                    ordinal,
                    bus_id: buses[ordinal as usize].clone(),
                    name: String::new(),
                    nccl_rank: Some(rank as u32),
                    ..ProbedGpu::default()
                })
                .collect(),
            ..ProbeReport::default()
        };
        let rate = Bandwidth(row.gbps * 1e9);
        match row.measure {
            "h2d" => report.copies.push(copy(CopyKind::HostToDevice, a, None, row.gbps)),
            "d2h" => report.copies.push(copy(CopyKind::DeviceToHost, a, None, row.gbps)),
            "p2p" => report.copies.push(copy(CopyKind::Peer, a, Some(b), row.gbps)),
            "ring" => report.collectives.push(CollectiveResult {
                collective: Collective::AllReduce,
                ranks: ring.len() as u32,
                rows: vec![CollectiveRow {
                    bytes: 1 << 30,
                    seconds: 0.01,
                    slowest: 0.01,
                    algbw: rate,
                    busbw: rate,
                    wrong: 0,
                    per_rank: vec![],
                }],
                expectation: Expectation::default(),
            }),
            "nic" => report.ring_walk.push(HopResult {
                from: 999,
                to: a,
                bytes: 1 << 28,
                seconds: 0.01,
                bandwidth: rate,
                expectation: Expectation::default(),
            }),
            other => panic!("unknown measure {other}"),
        }
        super::super::expect::annotate(&mut report, topology);
        let e = report
            .copies
            .first()
            .map(|c| c.expectation.clone())
            .or_else(|| report.collectives.first().map(|c| c.expectation.clone()))
            .or_else(|| report.ring_walk.first().map(|h| h.expectation.clone()))
            .unwrap();
        (e.expected.map_or(0.0, |x| x.0 / 1e9), e.path.unwrap_or_default())
    }

    #[test]
    fn published_healthy_figures_pass_and_half_of_them_fail() {
        let rows = rows();
        assert!(rows.len() >= 12, "{} rows", rows.len());
        let mut report = Vec::new();
        for row in &rows {
            assert!(row.source.starts_with("https://"), "{}", row.machine);
            let (expected, path) = expectation(row);
            let ratio = row.gbps / expected;
            let ok = expected > 0.0 && ratio >= TOLERANCE.0 && ratio <= TOLERANCE.1 && ratio * 0.5 < 0.75;
            // A row marked as a gap must still be one: when topo learns it,
            // the table is to say so.
            let wrong = ok != (row.status == "holds");
            assert!(row.status == "holds" || row.status.starts_with("gap: "), "{}", row.status);
            report.push(format!(
                "{} {:>5} {:<34} published {:>7.2} expected {:>7.2} ({path}) ratio {ratio:.2} [{}]{}",
                row.example,
                row.measure,
                row.machine.chars().take(34).collect::<String>(),
                row.gbps,
                expected,
                if row.status == "holds" { "holds" } else { "gap" },
                if wrong { "  <-- table disagrees" } else { "" }
            ));
        }
        let text = report.join("\n");
        println!("{text}");
        assert!(!text.contains("<-- table disagrees"), "{text}");
        let holds = rows.iter().filter(|r| r.status == "holds").count();
        assert!(holds >= 16, "{holds} rows hold");
    }
}
