//! nccl-tests output (`all_reduce_perf` and friends): the rank lines, the size
//! table (out-of-place and in-place time, algbw, busbw, #wrong), `Avg bus
//! bandwidth` and the out-of-bounds count. Lines may carry launcher tags and be
//! interleaved with NCCL's own lines; a table row cut by one is skipped.

use topo_model::BusId;
use topo_model::nccl::{NcclTestsMeasure, NcclTestsRank, NcclTestsRow, NcclTestsRun};

/// Collects nccl-tests runs from lines, one at a time.
#[derive(Debug, Default)]
pub struct NcclTestsParser {
    runs: Vec<NcclTestsRun>,
    open: Option<NcclTestsRun>,
}

/// Rows kept per run: a sweep has tens; this bounds a hostile input.
const MAX_ROWS: usize = 4096;
const MAX_RUNS: usize = 1024;

impl NcclTestsParser {
    /// Offers a line (launcher tag already removed); returns whether it was
    /// nccl-tests output.
    pub fn line(&mut self, line: &str) -> bool {
        let text = line.trim();
        if let Some(header) = text.strip_prefix('#') {
            return self.header(header.trim());
        }
        if text.as_bytes().first().is_some_and(u8::is_ascii_digit)
            && let Some(row) = parse_row(text)
        {
            let run = self.open.get_or_insert_with(NcclTestsRun::default);
            if run.rows.len() < MAX_ROWS {
                run.rows.push(row);
            }
            return true;
        }
        false
    }

    fn header(&mut self, header: &str) -> bool {
        if header.starts_with("nThread ") {
            self.close();
            self.open = Some(NcclTestsRun { parameters: Some(header.to_string()), ..NcclTestsRun::default() });
            return true;
        }
        if let Some(rank) = parse_rank(header) {
            let run = self.open.get_or_insert_with(NcclTestsRun::default);
            if run.ranks.len() < MAX_ROWS {
                run.ranks.push(rank);
            }
            return true;
        }
        let Some(run) = self.open.as_mut() else { return false };
        if let Some(value) = header.strip_prefix("Avg bus bandwidth") {
            run.avg_bus_bandwidth =
                value.trim_start_matches([' ', ':']).split_whitespace().next().and_then(|v| v.parse().ok());
            return true;
        }
        if let Some(value) = header.strip_prefix("Out of bounds values") {
            run.out_of_bounds =
                value.trim_start_matches([' ', ':']).split_whitespace().next().and_then(|v| v.parse().ok());
            return true;
        }
        if let Some(test) = header.strip_prefix("Collective test concluded:") {
            run.test = Some(test.trim().to_string());
            self.close();
            return true;
        }
        header.is_empty() || header.starts_with("size") || header.starts_with("(B)") || header.contains("out-of-place")
    }

    fn close(&mut self) {
        if let Some(run) = self.open.take()
            && (!run.rows.is_empty() || !run.ranks.is_empty())
            && self.runs.len() < MAX_RUNS
        {
            self.runs.push(run);
        }
    }

    pub fn finish(mut self) -> Vec<NcclTestsRun> {
        self.close();
        self.runs
    }
}

/// `Rank  0 Group  0 Pid  34088 on      gpu34 device  0 [0000:07:00] NVIDIA A100-SXM4-80GB`;
/// nccl-tests before 2.11 printed no `Group` (`Rank  0 Pid 108039 on ip-0AB85F07 device  0 [0x00] ...`).
fn parse_rank(header: &str) -> Option<NcclTestsRank> {
    let rest = header.strip_prefix("Rank")?;
    let mut words = rest.split_whitespace().peekable();
    let rank = words.next()?.parse().ok()?;
    let group = match words.peek() == Some(&"Group") {
        true => words.nth(1)?.parse().ok()?,
        false => 0,
    };
    let pid = (words.next()? == "Pid").then(|| words.next()?.parse().ok()).flatten()?;
    let host = (words.next()? == "on").then(|| words.next()).flatten()?.to_string();
    let device = (words.next()? == "device").then(|| words.next()?.parse().ok()).flatten()?;
    let after_device = rest.split_once(" device ")?.1.trim_start();
    let after_device = after_device.split_once(' ').map_or("", |(_, r)| r).trim();
    let (bus_id, name) = match after_device.strip_prefix('[').and_then(|r| r.split_once(']')) {
        Some((bus, name)) => (format!("{bus}.0").parse::<BusId>().ok(), name.trim()),
        None => (None, after_device),
    };
    Some(NcclTestsRank { rank, group, pid, host, device, bus_id, name: name.to_string() })
}

/// `size count type redop root time algbw busbw #wrong time algbw busbw #wrong`;
/// the in-place half may be missing (alltoall prints it for in-place as well).
fn parse_row(text: &str) -> Option<NcclTestsRow> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() != 9 && words.len() != 13 {
        return None;
    }
    let measure = |w: &[&str]| -> Option<NcclTestsMeasure> {
        Some(NcclTestsMeasure {
            time_us: w.first()?.parse().ok()?,
            algbw: w.get(1)?.parse().ok()?,
            busbw: w.get(2)?.parse().ok()?,
            wrong: match *w.get(3)? {
                "N/A" => None,
                value => Some(value.parse().ok()?),
            },
        })
    };
    Some(NcclTestsRow {
        bytes: words[0].parse().ok()?,
        count: words[1].parse().ok()?,
        datatype: words[2].to_string(),
        redop: words[3].to_string(),
        root: words[4].parse().ok()?,
        out_of_place: measure(&words[5..9])?,
        in_place: if words.len() == 13 { Some(measure(&words[9..13])?) } else { None },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_with_ranks_and_footer() {
        let mut parser = NcclTestsParser::default();
        for line in [
            "# nThread 1 nGpus 1 minBytes 16 maxBytes 4294967296 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
            "#  Rank  0 Group  0 Pid  34088 on      gpu34 device  0 [0000:07:00] NVIDIA A100-SXM4-80GB",
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
            "  4294967296    1073741824     float     sum      -1   346304   12.40   21.70      0   347314   12.37   21.64      0",
            "     8388608       2097152     float     sum      -1mew0:64904:64904 [1] NCCL INFO AllReduce: opCount 0",
            "# Out of bounds values : 0 OK",
            "# Avg bus bandwidth    : 8.42113 ",
            "# Collective test concluded: all_reduce_perf",
        ] {
            parser.line(line);
        }
        let runs = parser.finish();
        assert_eq!(runs.len(), 1);
        let run = &runs[0];
        assert_eq!(run.test.as_deref(), Some("all_reduce_perf"));
        assert_eq!(run.ranks[0].bus_id.unwrap().to_string(), "0000:07:00.0");
        assert_eq!(run.ranks[0].name, "NVIDIA A100-SXM4-80GB");
        assert_eq!(run.rows.len(), 1, "the row cut by an NCCL line is skipped");
        assert_eq!(run.rows[0].in_place.as_ref().unwrap().busbw, 21.64);
        assert_eq!((run.avg_bus_bandwidth, run.out_of_bounds), (Some(8.42113), Some(0)));
    }

    /// The device table of nccl-tests before `Group` was added (NVIDIA/nccl-tests#41).
    #[test]
    fn ranks_without_a_group() {
        let rank = parse_rank("Rank  2 Pid 108039 on ip-0AB85F07 device  2 [0x00] Tesla V100-PCIE-16GB").unwrap();
        assert_eq!((rank.rank, rank.group, rank.pid, rank.device), (2, 0, 108039, 2));
        assert_eq!((rank.host.as_str(), rank.name.as_str()), ("ip-0AB85F07", "Tesla V100-PCIE-16GB"));
        assert!(parse_rank("Rank  2 Group Pid 1 on h device 0 [0x00] x").is_none());
    }
}
