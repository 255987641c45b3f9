//! The figure math of DOMAIN.md ("Figures"), as pure functions.
//!
//! Storage hands over one [`ReportContribution`] per (group, report): what that
//! report's attempts inside the group add up to. Everything a figure row says
//! is derived here, so SQLite, PostgreSQL and the tests agree by construction.

use std::collections::BTreeMap;

use crate::api::figures::FigureRow;

/// z for a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Wilson score interval for `successes` out of `n` at 95%.
///
/// `None` when `n == 0`: there is no rate to bound. The bounds are clamped to
/// [0, 1] against rounding.
pub fn wilson_interval(successes: u64, n: u64) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let successes = successes.min(n);
    let n = n as f64;
    let p = successes as f64 / n;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 * ((p * (1.0 - p) / n) + z2 / (4.0 * n * n)).sqrt() / denom;
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

/// `numerator / denominator`, or `None` when the denominator is zero.
pub fn ratio(numerator: f64, denominator: f64) -> Option<f64> {
    (denominator != 0.0).then(|| numerator / denominator)
}

/// Cost per reproduction: all spend in the scope (failed and errored attempts
/// included) over reports reproduced. `None` with no reproduction.
pub fn cost_per_reproduction(cost_total_usd: f64, reports_reproduced: u64) -> Option<f64> {
    ratio(cost_total_usd, reports_reproduced as f64)
}

/// The figure papers usually quote: the mean cost of the successful attempts
/// alone. `None` with no successful attempt.
pub fn cost_mean_success(cost_successful_usd: f64, attempts_successful: u64) -> Option<f64> {
    ratio(cost_successful_usd, attempts_successful as f64)
}

/// One report's attempts within one group, as storage sums them up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReportContribution {
    pub key: String,
    pub has_deterministic_oracle: bool,
    pub has_in_patch_test: bool,
    pub attempts: u64,
    pub attempts_graded: u64,
    pub attempts_counting: u64,
    pub attempts_lead: u64,
    pub attempts_error: u64,
    pub cost_usd: f64,
    pub cost_counting_usd: f64,
    /// API calls summed over the attempts that reported them, and how many did.
    pub api_calls: u64,
    pub attempts_with_api_calls: u64,
}

#[derive(Default)]
struct Acc {
    reports: u64,
    reports_graded: u64,
    reports_reproduced: u64,
    reports_with_oracle: u64,
    reports_in_patch_test: u64,
    attempts: u64,
    attempts_graded: u64,
    attempts_counting: u64,
    attempts_lead: u64,
    attempts_error: u64,
    cost_usd: f64,
    cost_counting_usd: f64,
    api_calls: u64,
    attempts_with_api_calls: u64,
}

/// Folds contributions into one row per key, sorted by key.
///
/// A report is graded in a group when at least one of its attempts there is
/// graded, and reproduced when at least one counts. A contribution with zero
/// attempts still counts the report (and its oracle) in `reports`.
pub fn figure_rows<I>(contributions: I) -> Vec<FigureRow>
where
    I: IntoIterator<Item = ReportContribution>,
{
    let mut groups: BTreeMap<String, Acc> = BTreeMap::new();
    for c in contributions {
        let acc = groups.entry(c.key).or_default();
        acc.reports += 1;
        acc.reports_graded += u64::from(c.attempts_graded > 0);
        acc.reports_reproduced += u64::from(c.attempts_counting > 0);
        acc.reports_with_oracle += u64::from(c.has_deterministic_oracle);
        acc.reports_in_patch_test += u64::from(c.has_in_patch_test);
        acc.attempts += c.attempts;
        acc.attempts_graded += c.attempts_graded;
        acc.attempts_counting += c.attempts_counting;
        acc.attempts_lead += c.attempts_lead;
        acc.attempts_error += c.attempts_error;
        acc.cost_usd += c.cost_usd;
        acc.cost_counting_usd += c.cost_counting_usd;
        acc.api_calls += c.api_calls;
        acc.attempts_with_api_calls += c.attempts_with_api_calls;
    }
    groups.into_iter().map(|(key, a)| row(key, a)).collect()
}

fn row(key: String, a: Acc) -> FigureRow {
    let interval = wilson_interval(a.reports_reproduced, a.reports_graded);
    let per_repro = cost_per_reproduction(a.cost_usd, a.reports_reproduced);
    let mean_success = cost_mean_success(a.cost_counting_usd, a.attempts_counting);
    FigureRow {
        key,
        reports: a.reports,
        reports_graded: a.reports_graded,
        reports_reproduced: a.reports_reproduced,
        rate: ratio(a.reports_reproduced as f64, a.reports_graded as f64),
        rate_low: interval.map(|i| i.0),
        rate_high: interval.map(|i| i.1),
        attempts: a.attempts,
        attempts_graded: a.attempts_graded,
        attempts_counting: a.attempts_counting,
        attempt_rate: ratio(a.attempts_counting as f64, a.attempts_graded as f64),
        attempts_lead: a.attempts_lead,
        lead_rate: ratio(a.attempts_lead as f64, a.attempts_graded as f64),
        attempts_error: a.attempts_error,
        cost_total_usd: a.cost_usd,
        cost_mean_attempt_usd: ratio(a.cost_usd, a.attempts as f64),
        api_calls_mean: ratio(a.api_calls as f64, a.attempts_with_api_calls as f64),
        cost_per_reproduction_usd: per_repro,
        cost_mean_success_usd: mean_success,
        cost_ratio: match (per_repro, mean_success) {
            (Some(p), Some(m)) => ratio(p, m),
            _ => None,
        },
        reports_with_oracle: a.reports_with_oracle,
        oracle_coverage: ratio(a.reports_with_oracle as f64, a.reports as f64),
        reports_in_patch_test: a.reports_in_patch_test,
        in_patch_test_share: ratio(a.reports_in_patch_test as f64, a.reports as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn wilson_matches_reference_values() {
        // 85 of 106 (RepGen): 0.8019, Wilson 95% [0.7160, 0.8666].
        let (lo, hi) = wilson_interval(85, 106).unwrap();
        assert!(close(lo, 0.7160), "{lo}");
        assert!(close(hi, 0.8666), "{hi}");
        // 1 of 2: [0.0945, 0.9055]
        let (lo, hi) = wilson_interval(1, 2).unwrap();
        assert!(close(lo, 0.0945) && close(hi, 0.9055), "{lo} {hi}");
    }

    #[test]
    fn wilson_edges() {
        assert_eq!(wilson_interval(0, 0), None);
        let (lo, hi) = wilson_interval(0, 10).unwrap();
        assert!(close(lo, 0.0), "{lo}");
        assert!(close(hi, 0.2775), "{hi}");
        let (lo, hi) = wilson_interval(10, 10).unwrap();
        assert!(close(lo, 0.7225), "{lo}");
        assert!(close(hi, 1.0), "{hi}");
        // more successes than trials is clamped, never NaN
        let (lo, hi) = wilson_interval(5, 3).unwrap();
        assert!(lo.is_finite() && hi <= 1.0);
    }

    #[test]
    fn cost_per_reproduction_both_ways() {
        // $10 over 4 reproductions = $2.50; successful attempts cost $3 in all
        // over 3 attempts = $1.00; ratio 2.5.
        let rows = figure_rows(vec![
            contribution("a", 2, 1, 1, 4.0, 1.5),
            contribution("a", 1, 1, 1, 1.0, 1.0),
            contribution("a", 3, 2, 1, 4.5, 0.5),
            contribution("a", 1, 1, 0, 0.5, 0.0),
            contribution("a", 0, 0, 0, 0.0, 0.0),
        ]);
        // reproduced = reports with counting attempts: 3
        let r = &rows[0];
        assert_eq!(r.reports, 5);
        assert_eq!(r.reports_graded, 4);
        assert_eq!(r.reports_reproduced, 3);
        assert_eq!(r.attempts, 7);
        assert!(close(r.cost_total_usd, 10.0));
        assert!(close(r.cost_per_reproduction_usd.unwrap(), 10.0 / 3.0));
        assert!(close(r.cost_mean_success_usd.unwrap(), 3.0 / 3.0));
        assert!(close(r.cost_ratio.unwrap(), 10.0 / 3.0));
        assert!(close(r.rate.unwrap(), 0.75));
    }

    #[test]
    fn zero_reproductions_give_no_cost_per_reproduction() {
        let rows = figure_rows(vec![contribution("x", 3, 3, 0, 2.0, 0.0)]);
        let r = &rows[0];
        assert_eq!(r.reports_reproduced, 0);
        assert_eq!(r.rate, Some(0.0));
        assert_eq!(r.cost_per_reproduction_usd, None);
        assert_eq!(r.cost_mean_success_usd, None);
        assert_eq!(r.cost_ratio, None);
        assert_eq!(r.rate_low, Some(0.0));
    }

    #[test]
    fn no_graded_reports_give_no_rate() {
        let rows = figure_rows(vec![contribution("x", 2, 0, 0, 1.0, 0.0)]);
        assert_eq!(rows[0].rate, None);
        assert_eq!(rows[0].rate_low, None);
        assert_eq!(rows[0].attempt_rate, None);
        assert!(figure_rows(Vec::new()).is_empty());
    }

    #[test]
    fn oracle_coverage_counts_reports_not_attempts() {
        let mut a = contribution("k", 5, 5, 0, 0.0, 0.0);
        a.has_deterministic_oracle = true;
        a.has_in_patch_test = true;
        let b = contribution("k", 1, 1, 0, 0.0, 0.0);
        let rows = figure_rows(vec![a, b]);
        assert_eq!(rows[0].oracle_coverage, Some(0.5));
        assert_eq!(rows[0].in_patch_test_share, Some(0.5));
    }

    #[test]
    fn rows_are_grouped_and_sorted_by_key() {
        let rows = figure_rows(vec![
            contribution("b", 1, 1, 1, 1.0, 1.0),
            contribution("a", 1, 1, 0, 1.0, 0.0),
            contribution("b", 1, 1, 0, 1.0, 0.0),
        ]);
        let keys: Vec<_> = rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["a", "b"]);
        assert_eq!(rows[1].reports, 2);
        assert_eq!(rows[1].rate, Some(0.5));
    }

    fn contribution(key: &str, attempts: u64, graded: u64, counting: u64, cost: f64, cost_ok: f64) -> ReportContribution {
        ReportContribution {
            key: key.into(),
            attempts,
            attempts_graded: graded,
            attempts_counting: counting,
            cost_usd: cost,
            cost_counting_usd: cost_ok,
            ..Default::default()
        }
    }
}
