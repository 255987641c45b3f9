//! Success by rank: where an agent (or a study) ranked the first candidate
//! that reproduced a report, as the share of reports reproduced by its first
//! choice, and within its first k.

use crate::api::figures::{RankFigures, RankRow, RankWithin};

/// The ranks k asked for by default: 1, 3, 5 and 10.
pub const DEFAULT_WITHIN: [u32; 4] = [1, 3, 5, 10];

/// The figures of `reports` reports (the denominator: every report the
/// filter selects, reproduced or not), given one `(agent, rank)` per
/// (agent, report) with the best rank of its counting attempts there.
pub fn rank_figures(reports: u64, firsts: &[(String, u32)], within: &[u32]) -> RankFigures {
    let mut agents: Vec<&str> = firsts.iter().map(|(a, _)| a.as_str()).collect();
    agents.sort_unstable();
    agents.dedup();
    let rows = agents
        .into_iter()
        .map(|agent| {
            let ranks: Vec<u32> = firsts.iter().filter(|(a, _)| a == agent).map(|(_, k)| *k).collect();
            RankRow {
                agent: agent.to_owned(),
                reports_ranked: ranks.len() as u64,
                within: within
                    .iter()
                    .map(|&k| {
                        let n = ranks.iter().filter(|&&r| r <= k).count() as u64;
                        let interval = super::wilson_interval(n, reports);
                        RankWithin {
                            k,
                            reports: n,
                            rate: (reports > 0).then(|| n as f64 / reports as f64),
                            rate_low: interval.map(|i| i.0),
                            rate_high: interval.map(|i| i.1),
                        }
                    })
                    .collect(),
            }
        })
        .collect();
    RankFigures { reports, agents: rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_k_counts_reports_whose_best_rank_is_at_most_k_over_every_report() {
        let firsts: Vec<(String, u32)> =
            [("libro", 1), ("libro", 1), ("libro", 3), ("libro", 9), ("other", 2)].map(|(a, k)| (a.into(), k)).into();
        let f = rank_figures(31, &firsts, &DEFAULT_WITHIN);
        assert_eq!(f.reports, 31);
        let libro = &f.agents[0];
        assert_eq!((libro.agent.as_str(), libro.reports_ranked), ("libro", 4));
        let counts: Vec<(u32, u64)> = libro.within.iter().map(|w| (w.k, w.reports)).collect();
        assert_eq!(counts, [(1, 2), (3, 3), (5, 3), (10, 4)]);
        assert!((libro.within[0].rate.unwrap() - 2.0 / 31.0).abs() < 1e-12);
        let (lo, hi) = (libro.within[0].rate_low.unwrap(), libro.within[0].rate_high.unwrap());
        assert!(lo < 2.0 / 31.0 && 2.0 / 31.0 < hi);
        assert_eq!(f.agents[1].within[0].reports, 0, "rank 2 is not a first-choice success");
        assert_eq!(rank_figures(0, &[], &DEFAULT_WITHIN).agents.len(), 0);
    }
}
