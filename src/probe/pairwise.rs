//! `topo probe --pairwise`: which nodes to pair, round after round, and what
//! the results say about each node. Pure: the measuring is passed in, so the
//! same code runs on GPUs and in tests with figures the test controls.
//!
//! Round 1 pairs neighbours (0-1, 2-3, ...). A pair below `threshold` x the
//! round's median (either figure) or with a wrong element fails, and both its
//! nodes become suspects. Each later round pairs every suspect with a distinct
//! node that has passed: a suspect that passes was let down by its partner; one
//! that fails again against a good node is the bad node.

use topo_model::Bandwidth;
use topo_model::measure::{NodeVerdict, PairResult, PairwiseReport};

use super::render::gbps;

/// At most this many rounds after the first (each isolates up to half the nodes).
const MAX_RETESTS: usize = 6;

#[derive(Debug, Clone, PartialEq)]
enum State {
    Untested,
    Good(Vec<String>),
    Suspect(Vec<String>),
    Bad(Vec<String>),
}

fn median(values: impl Iterator<Item = f64>) -> Option<f64> {
    topo_model::collective::median(values).filter(|m| *m > 0.0)
}

/// The pair's figures as `node` saw them: `with rank 3: send/recv ...`.
fn describe(pair: &PairResult, node: u32) -> String {
    let partner = if pair.a == node { pair.b } else { pair.a };
    let wrong = if pair.wrong > 0 { format!(", {} wrong element(s)", pair.wrong) } else { String::new() };
    format!(
        "with rank {partner}: send/recv {} per direction, all_reduce busbw {}{wrong}",
        gbps(pair.sendrecv),
        gbps(pair.all_reduce_busbw)
    )
}

/// Runs the rounds over `size` ranks; `measure` measures one round's pairs
/// (every process calls it with the same pairs) and returns every pair's figures.
pub fn run<E>(
    size: u32,
    threshold: f64,
    bytes: u64,
    hosts: Vec<String>,
    mut measure: impl FnMut(&[(u32, u32)]) -> Result<Vec<PairResult>, E>,
) -> Result<PairwiseReport, E> {
    let mut states = vec![State::Untested; size as usize];
    let first: Vec<(u32, u32)> = (0..size / 2).map(|i| (2 * i, 2 * i + 1)).collect();
    let mut round = measure(&first)?;
    let median_sendrecv = median(round.iter().map(|p| p.sendrecv.0)).map(Bandwidth);
    let median_busbw = median(round.iter().map(|p| p.all_reduce_busbw.0)).map(Bandwidth);
    let judge = |pair: &mut PairResult| {
        let enough =
            |value: Bandwidth, reference: Option<Bandwidth>| reference.is_none_or(|r| value.0 >= threshold * r.0);
        pair.passed =
            pair.wrong == 0 && enough(pair.sendrecv, median_sendrecv) && enough(pair.all_reduce_busbw, median_busbw);
    };
    for pair in &mut round {
        judge(pair);
        for node in [pair.a, pair.b] {
            let line = describe(pair, node);
            states[node as usize] = if pair.passed {
                State::Good(vec![format!("passed {line}")])
            } else {
                State::Suspect(vec![format!("failed {line}")])
            };
        }
    }
    if size % 2 == 1 {
        states[size as usize - 1] = State::Suspect(vec!["left out of the first round (odd number of nodes)".into()]);
    }
    let mut rounds = vec![round];
    for _ in 0..MAX_RETESTS {
        let suspects: Vec<u32> = (0..size).filter(|r| matches!(states[*r as usize], State::Suspect(_))).collect();
        let good: Vec<u32> = (0..size).filter(|r| matches!(states[*r as usize], State::Good(_))).collect();
        if suspects.is_empty() || good.is_empty() {
            break;
        }
        let pairs: Vec<(u32, u32)> = suspects.iter().zip(&good).map(|(s, g)| (*s, *g)).collect();
        let mut round = measure(&pairs)?;
        for pair in &mut round {
            judge(pair);
            let line = describe(pair, pair.a);
            let suspect = pair.a as usize;
            let mut evidence = match &states[suspect] {
                State::Suspect(e) => e.clone(),
                _ => Vec::new(),
            };
            if pair.passed {
                evidence.push(format!("passed {line}, a node that had passed: its earlier partner was at fault"));
                states[suspect] = State::Good(evidence);
            } else {
                evidence.push(format!("failed again {line}, a node that had passed"));
                states[suspect] = State::Bad(evidence);
            }
        }
        rounds.push(round);
    }
    let nodes = states
        .into_iter()
        .enumerate()
        .map(|(rank, state)| {
            let host = hosts.get(rank).cloned().unwrap_or_default();
            let (passed, evidence) = match state {
                State::Good(e) => (true, e),
                State::Bad(e) => (false, e),
                State::Suspect(mut e) => {
                    e.push("no node passed to test it against, so it cannot be cleared".into());
                    (false, e)
                }
                State::Untested => (false, vec!["never measured".into()]),
            };
            NodeVerdict { rank: rank as u32, host, passed, evidence }
        })
        .collect();
    Ok(PairwiseReport { bytes, threshold, median_sendrecv, median_busbw, hosts, rounds, nodes })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in network: each node's rate; a pair runs at its slower node's.
    fn network(rates: &[f64]) -> impl FnMut(&[(u32, u32)]) -> Result<Vec<PairResult>, ()> + '_ {
        move |pairs| {
            Ok(pairs
                .iter()
                .map(|&(a, b)| {
                    let rate = rates[a as usize].min(rates[b as usize]);
                    PairResult {
                        a,
                        b,
                        sendrecv: Bandwidth::from_gbps(rate),
                        all_reduce_busbw: Bandwidth::from_gbps(rate * 0.9),
                        wrong: 0,
                        passed: false,
                    }
                })
                .collect())
        }
    }

    fn verdicts(report: &PairwiseReport) -> Vec<bool> {
        report.nodes.iter().map(|n| n.passed).collect()
    }

    #[test]
    fn a_bad_node_is_isolated_and_its_partner_cleared() {
        let rates = [48.0, 12.0, 47.0, 48.0, 46.0, 48.0];
        let report = run(6, 0.75, 1 << 20, Vec::new(), network(&rates)).unwrap();
        assert_eq!(verdicts(&report), [true, false, true, true, true, true]);
        // Round 1: (0,1) fails; round 2 retests 0 and 1 against 2 and 3.
        assert_eq!(report.rounds.len(), 2);
        let second: Vec<(u32, u32, bool)> = report.rounds[1].iter().map(|p| (p.a, p.b, p.passed)).collect();
        assert_eq!(second, [(0, 2, true), (1, 3, false)]);
        assert!(report.nodes[0].evidence[1].contains("its earlier partner was at fault"), "{:?}", report.nodes[0]);
        assert!(
            report.nodes[1].evidence[1].contains("failed again with rank 3: send/recv 12.0 GB/s"),
            "{:?}",
            report.nodes[1]
        );
        // Round-1 pairs at 12, 47 and 46 GB/s: the median is 46.
        assert_eq!(report.median_sendrecv.map(|m| m.gbps()), Some(46.0));
    }

    #[test]
    fn odd_counts_wrong_data_and_no_healthy_partner() {
        // Five nodes: node 4 sits out round 1 and is tested against a good node.
        let report = run(5, 0.75, 1 << 20, Vec::new(), network(&[48.0, 48.0, 48.0, 48.0, 20.0])).unwrap();
        assert_eq!(verdicts(&report), [true, true, true, true, false]);
        // A wrong element fails a pair whatever its speed.
        let mut corrupt = network(&[48.0; 4]);
        let report = run(4, 0.75, 1 << 20, Vec::new(), |pairs: &[(u32, u32)]| {
            let mut round = corrupt(pairs)?;
            for pair in round.iter_mut().filter(|p| p.a == 2 || p.b == 2) {
                pair.wrong = 3;
            }
            Ok::<_, ()>(round)
        })
        .unwrap();
        assert_eq!(verdicts(&report), [true, true, false, true]);
        assert!(report.nodes[2].evidence[0].contains("3 wrong element(s)"));
        // Two nodes, one pair, below nothing but itself: with no second pair there
        // is no median to fall below, so it passes; a third slow node cannot be cleared.
        let report = run(2, 0.75, 1 << 20, Vec::new(), network(&[5.0, 5.0])).unwrap();
        assert_eq!(verdicts(&report), [true, true]);
        let report = run(3, 0.75, 1 << 20, Vec::new(), network(&[5.0, 5.0, 1.0])).unwrap();
        assert_eq!(verdicts(&report), [true, true, false]);
    }
}
