//! The figure math of docs/domain.md ("Figures"), as pure functions.
//!
//! Storage hands over one [`ReportContribution`] per (group, report): what that
//! report's attempts inside the group add up to. Everything a figure row says
//! is derived here, so SQLite, PostgreSQL and the tests agree by construction.

use std::collections::BTreeMap;

use crate::api::figures::FigureRow;

mod flows;
mod oracles;
mod queue;
mod ranks;
mod values;
pub use flows::{
    FlowCounts, FlowFacts, FlowKind, FlowRead, NO_DAY, RESOLUTION_NOTE, bin_hours, cohort_read, date_of_day, day_of,
    everything, glance_read, hours_bin, monday_of, throughput_of, throughput_read,
};
pub use oracles::{OracleCounts, oracle_summary};
pub use queue::{RUNNER_ALIVE_SECONDS, mean_seconds, queue_wait, runner_alive};
pub use ranks::{DEFAULT_WITHIN, rank_figures};
pub use values::{VALUES_NOTE, ValueBins, bin_edges_of, bin_value, distribution_of, value_bin};

/// `x` to 12 significant digits, and `-0.0` as `0.0`: sums and quotients of
/// floats leave dust (`0.1 + 0.2` is `0.30000000000000004`) that no figure
/// means and every reader would see.
///
/// The dashboard's WebAssembly keeps `x` as it is (it only ever shows
/// figures rounded, and float parsing would weigh on its bundle).
pub fn tidy(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return if x == 0.0 { 0.0 } else { x };
    }
    #[cfg(not(target_arch = "wasm32"))]
    let x = format!("{x:.11e}").parse().unwrap_or(x);
    x
}

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
    // At 0 of n (or n of n) the bound is exactly 0 (or 1); the formula
    // leaves float dust there (1.39e-17 at 0 of 25).
    let low = if successes == 0 { 0.0 } else { (centre - half).max(0.0) };
    let high = if successes as f64 == n { 1.0 } else { (centre + half).min(1.0) };
    Some((tidy(low), tidy(high)))
}

/// `numerator / denominator`, or `None` when the denominator is zero.
pub fn ratio(numerator: f64, denominator: f64) -> Option<f64> {
    (denominator != 0.0).then(|| tidy(numerator / denominator))
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

/// Joins the parts of a crossed group's key between groups: a control
/// character no name contains, so two groups never blur into one.
pub const KEY_PARTS: char = '\u{1f}';

/// A contribution's key from its dimensions' values (one to three).
pub fn join_key_parts(first: String, second: Option<String>, third: Option<String>) -> String {
    [Some(first), second, third].into_iter().flatten().collect::<Vec<_>>().join(&KEY_PARTS.to_string())
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
    /// Attempts whose verdict counts only once a person accepts it (leads,
    /// and vague reports' graded reproductions), not yet reviewed.
    pub attempts_awaiting_review: u64,
    pub cost_usd: f64,
    pub cost_counting_usd: f64,
    /// Attempts (and counting attempts) whose cost is unknown: `cost_usd`
    /// and `cost_counting_usd` hold only the known ones.
    pub attempts_without_cost: u64,
    pub attempts_counting_without_cost: u64,
    /// API calls summed over the attempts that reported them, and how many did.
    pub api_calls: u64,
    pub attempts_with_api_calls: u64,
}

/// What a group's figures are computed from: its reports' per-report
/// counts and its attempts' sums. [`figure_rows`] folds contributions into
/// these; the maintained rollups store them as they are.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupTotals {
    pub reports: u64,
    pub reports_graded: u64,
    pub reports_reproduced: u64,
    pub reports_with_oracle: u64,
    pub reports_in_patch_test: u64,
    pub attempts: u64,
    pub attempts_graded: u64,
    pub attempts_counting: u64,
    pub attempts_lead: u64,
    pub attempts_error: u64,
    pub attempts_awaiting_review: u64,
    pub reports_awaiting_review: u64,
    pub cost_usd: f64,
    pub cost_counting_usd: f64,
    pub attempts_without_cost: u64,
    pub attempts_counting_without_cost: u64,
    pub api_calls: u64,
    pub attempts_with_api_calls: u64,
}

impl GroupTotals {
    /// Adds `other`'s counts and sums: the totals of two disjoint parts of
    /// a group (the rollups' spans of filing days) are the group's.
    pub fn add(&mut self, other: &GroupTotals) {
        self.reports += other.reports;
        self.reports_graded += other.reports_graded;
        self.reports_reproduced += other.reports_reproduced;
        self.reports_with_oracle += other.reports_with_oracle;
        self.reports_in_patch_test += other.reports_in_patch_test;
        self.attempts += other.attempts;
        self.attempts_graded += other.attempts_graded;
        self.attempts_counting += other.attempts_counting;
        self.attempts_lead += other.attempts_lead;
        self.attempts_error += other.attempts_error;
        self.attempts_awaiting_review += other.attempts_awaiting_review;
        self.reports_awaiting_review += other.reports_awaiting_review;
        self.cost_usd += other.cost_usd;
        self.cost_counting_usd += other.cost_counting_usd;
        self.attempts_without_cost += other.attempts_without_cost;
        self.attempts_counting_without_cost += other.attempts_counting_without_cost;
        self.api_calls += other.api_calls;
        self.attempts_with_api_calls += other.attempts_with_api_calls;
    }
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
    let mut groups: BTreeMap<String, GroupTotals> = BTreeMap::new();
    for c in contributions {
        fold_contribution(&mut groups, c);
    }
    rows_from_totals(groups)
}

/// Adds one contribution to its group's totals (see [`figure_rows`]), so a
/// caller can fold contributions as they stream in.
pub fn fold_contribution(groups: &mut BTreeMap<String, GroupTotals>, c: ReportContribution) {
    let acc = match groups.get_mut(&c.key) {
        Some(acc) => acc,
        None => groups.entry(c.key.clone()).or_default(),
    };
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
    acc.attempts_awaiting_review += c.attempts_awaiting_review;
    // A report not reproduced yet whose review could make it so.
    acc.reports_awaiting_review += u64::from(c.attempts_awaiting_review > 0 && c.attempts_counting == 0);
    acc.cost_usd += c.cost_usd;
    acc.cost_counting_usd += c.cost_counting_usd;
    acc.attempts_without_cost += c.attempts_without_cost;
    acc.attempts_counting_without_cost += c.attempts_counting_without_cost;
    acc.api_calls += c.api_calls;
    acc.attempts_with_api_calls += c.attempts_with_api_calls;
}

/// One row per key from groups' totals, in the order given.
pub fn rows_from_totals<I>(groups: I) -> Vec<FigureRow>
where
    I: IntoIterator<Item = (String, GroupTotals)>,
{
    groups.into_iter().map(|(key, a)| row(key, a)).collect()
}

fn row(key: String, a: GroupTotals) -> FigureRow {
    let interval = wilson_interval(a.reports_reproduced, a.reports_graded);
    // Unknown costs are left out: means are over the attempts with a cost,
    // and with none known there is no cost figure at all.
    let with_cost = a.attempts.saturating_sub(a.attempts_without_cost);
    let per_repro =
        if with_cost == 0 && a.attempts > 0 { None } else { cost_per_reproduction(a.cost_usd, a.reports_reproduced) };
    let mean_success =
        cost_mean_success(a.cost_counting_usd, a.attempts_counting.saturating_sub(a.attempts_counting_without_cost));
    FigureRow {
        key,
        keys: Vec::new(),
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
        attempts_awaiting_review: a.attempts_awaiting_review,
        reports_awaiting_review: a.reports_awaiting_review,
        attempts_without_cost: a.attempts_without_cost,
        cost_total_usd: tidy(a.cost_usd),
        cost_mean_attempt_usd: ratio(a.cost_usd, with_cost as f64),
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

/// The `q`-quantile of sorted values by nearest rank; `None` when empty.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// The median of sorted values (the mean of the middle two for an even count).
pub fn median_sorted(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// `bins` equal bins from 0 (or the least value, if negative) to the greatest
/// value over every group; a single bin `[0, 1]` when there is no spread.
pub fn bin_edges(groups: &[&[f64]], bins: usize) -> Vec<f64> {
    let all = groups.iter().flat_map(|g| g.iter().copied()).filter(|v| v.is_finite());
    let (lo, hi) = all.fold((0.0_f64, 0.0_f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let bins = bins.max(1);
    if hi <= lo {
        return vec![lo, lo + 1.0];
    }
    let width = (hi - lo) / bins as f64;
    (0..=bins).map(|i| if i == bins { hi } else { lo + width * i as f64 }).collect()
}

/// Counts of sorted values per bin of `edges`; the last bin is closed.
pub fn histogram(sorted: &[f64], edges: &[f64]) -> Vec<crate::api::figures::Bin> {
    let mut out: Vec<crate::api::figures::Bin> =
        edges.windows(2).map(|w| crate::api::figures::Bin { low: w[0], high: w[1], count: 0 }).collect();
    let last = out.len().saturating_sub(1);
    for v in sorted.iter().copied().filter(|v| v.is_finite()) {
        let i = out.iter().position(|b| v < b.high).unwrap_or(last);
        if let Some(b) = out.get_mut(i) {
            b.count += 1;
        }
    }
    out
}

/// The empirical CDF of sorted values at up to 101 points: `(value, share <= value)`.
pub fn cdf(sorted: &[f64]) -> Vec<(f64, f64)> {
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let step = n.div_ceil(100).max(1);
    let mut idx: Vec<usize> = (step - 1..n).step_by(step).collect();
    if idx.last() != Some(&(n - 1)) {
        idx.push(n - 1);
    }
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(idx.len());
    for i in idx {
        // Ties: the share at a value counts every copy of it.
        let v = sorted[i];
        let upto = sorted.partition_point(|x| *x <= v);
        let point = (v, upto as f64 / n as f64);
        match out.last_mut() {
            Some(last) if last.0 == v => *last = point,
            _ => out.push(point),
        }
    }
    out
}

/// One group's distribution over shared bin edges. `values` are sorted here.
pub fn distribution(key: String, mut values: Vec<f64>, edges: &[f64]) -> crate::api::figures::Distribution {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let n = values.len();
    crate::api::figures::Distribution {
        key,
        n: n as u64,
        mean: ratio(values.iter().sum(), n as f64),
        median: median_sorted(&values),
        p90: quantile(&values, 0.9),
        max: values.last().copied(),
        histogram: histogram(&values, edges),
        cdf: cdf(&values),
    }
}

/// A report as the throughput figures see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportFlow {
    pub filed_at: chrono::DateTime<chrono::Utc>,
    /// When failpass took the report in.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// The start of its first reproduction attempt.
    pub first_attempt_at: Option<chrono::DateTime<chrono::Utc>>,
    pub status: crate::model::ReportStatus,
    /// The end of its first counting attempt.
    pub first_counting_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The end of its last graded attempt.
    pub last_graded_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Whether `filed_at` was stated, or is only when an import that gave
    /// none took it in: then the report was filed on no known day.
    pub filed_stated: bool,
    /// Whether its project is a benchmark: its instances are in no backlog.
    pub benchmark: bool,
}

impl ReportFlow {
    /// When the report entered triage: failpass's own intake time, unless
    /// its history predates it (attempts imported with it, started before
    /// failpass saw it), when filing is the best record there is.
    pub fn intake(&self) -> chrono::DateTime<chrono::Utc> {
        match self.first_attempt_at {
            Some(first) if first < self.created_at => self.filed_at,
            _ => self.created_at,
        }
    }

    /// [`Self::intake`] when it is known: not when it would be a filing
    /// date nobody stated.
    pub fn known_intake(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        match self.first_attempt_at {
            Some(first) if first < self.created_at => self.filed_stated.then_some(self.filed_at),
            _ => Some(self.created_at),
        }
    }
}

/// The Monday starting the week of `t` (UTC), as `YYYY-MM-DD`.
pub fn week_of(t: chrono::DateTime<chrono::Utc>) -> String {
    week_of_date(t.date_naive())
}

/// The Monday starting the week of the day `d`, as `YYYY-MM-DD`.
pub fn week_of_date(d: chrono::NaiveDate) -> String {
    use chrono::Datelike;
    let monday = d - chrono::Duration::days(i64::from(d.weekday().num_days_from_monday()));
    monday.format("%Y-%m-%d").to_string()
}

/// The `n` weeks up to the one holding `now`, oldest first, each with its
/// counts from `weeks` (a week without any is all zeros).
pub fn recent_weeks(
    weeks: &[crate::api::figures::WeekFlow],
    now: chrono::DateTime<chrono::Utc>,
    n: usize,
) -> Vec<crate::api::figures::WeekFlow> {
    (0..n)
        .rev()
        .map(|back| {
            let key = week_of(now - chrono::Duration::weeks(back as i64));
            weeks.iter().find(|w| w.week == key).cloned().unwrap_or(crate::api::figures::WeekFlow {
                week: key,
                filed: 0,
                finished: 0,
                reproduced: 0,
            })
        })
        .collect()
}

/// docs/domain.md's throughput: reports reaching a final state per week (a
/// reproduction when its first counting verdict lands; a report graded and
/// not reproduced when its last graded attempt ends), the backlog and its
/// age (since filing) at `now`, and the time from intake
/// ([`ReportFlow::intake`]) to the first counting verdict, through the
/// counts storage keeps (see [`throughput_of`] for what they round).
pub fn throughput(reports: &[ReportFlow], now: chrono::DateTime<chrono::Utc>) -> crate::api::figures::Throughput {
    throughput_of(&FlowCounts::from(reports), now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_weeks_fill_the_gaps_up_to_now() {
        use crate::api::figures::WeekFlow;
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-03T12:00:00Z").unwrap().to_utc();
        let had = [WeekFlow { week: "2026-11-16".into(), filed: 3, finished: 1, reproduced: 1 }];
        let w = recent_weeks(&had, now, 4);
        let keys: Vec<&str> = w.iter().map(|w| w.week.as_str()).collect();
        assert_eq!(keys, ["2026-11-09", "2026-11-16", "2026-11-23", "2026-11-30"]);
        assert_eq!((w[1].filed, w[0].filed, w[3].filed), (3, 0, 0));
    }

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
    fn figures_carry_no_float_dust() {
        assert_eq!(tidy(0.1 + 0.2), 0.3);
        assert_eq!(tidy(-0.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(tidy(1.0 / 3.0), 0.333333333333);
        assert_eq!(tidy(123_456.789), 123_456.789);
        assert_eq!(tidy(1.39e-17), 1.39e-17, "small values keep their digits");
        assert!(tidy(f64::NAN).is_nan());
        assert_eq!(ratio(0.7, 1.0), Some(0.7));
        assert_eq!(super::mean_seconds(&[0.2542, 0.2542, 0.2542, 0.2542, 0.2542]), Some(0.2542));
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
        // The bounds at 0 of n and n of n are exact, not float dust.
        assert_eq!(wilson_interval(0, 25).unwrap().0.to_bits(), 0.0f64.to_bits());
        assert_eq!(wilson_interval(25, 25).unwrap().1, 1.0);
        // more successes than trials is clamped, never NaN
        let (lo, hi) = wilson_interval(5, 3).unwrap();
        assert!(lo.is_finite() && hi <= 1.0);
    }

    #[test]
    fn unknown_costs_are_left_out_and_counted() {
        let unknown = |counting: u64| ReportContribution {
            attempts_without_cost: 1,
            attempts_counting_without_cost: counting,
            ..contribution("a", 1, 1, counting, 0.0, 0.0)
        };
        // $3 known over 2 attempts; a third attempt (a reproduction) has no cost.
        let rows = figure_rows(vec![contribution("a", 2, 2, 1, 3.0, 1.0), unknown(1)]);
        let r = &rows[0];
        assert_eq!((r.attempts, r.attempts_without_cost), (3, 1));
        assert_eq!(r.cost_mean_attempt_usd, Some(1.5), "over the 2 attempts with a cost, not 3");
        assert_eq!(r.cost_mean_success_usd, Some(1.0), "the unknown reproduction is not a $0 one");
        assert_eq!(r.cost_per_reproduction_usd, Some(1.5));
        // Nothing known: no cost figure, not $0.
        let rows = figure_rows(vec![unknown(1), unknown(0)]);
        let r = &rows[0];
        assert_eq!((r.cost_per_reproduction_usd, r.cost_mean_attempt_usd, r.cost_mean_success_usd), (None, None, None));
        assert_eq!(r.attempts_without_cost, 2);
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

    #[test]
    fn quantiles_histogram_and_cdf() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        assert_eq!(quantile(&v, 0.9), Some(9.0));
        assert_eq!(quantile(&v, 1.0), Some(10.0));
        assert_eq!(quantile(&v, 0.0), Some(1.0));
        assert_eq!(median_sorted(&v), Some(5.5));
        assert_eq!(quantile(&[], 0.5), None);
        let edges = bin_edges(&[&v, &[20.0]], 4);
        assert_eq!(edges, [0.0, 5.0, 10.0, 15.0, 20.0]);
        let d = distribution("a".into(), vec![10.0, 1.0, f64::NAN, 5.0], &edges);
        assert_eq!(d.n, 3);
        let counts: Vec<u64> = d.histogram.iter().map(|b| b.count).collect();
        // 1 in [0,5); 5 in [5,10); 10 in [10,15); the top edge is closed
        assert_eq!(counts, [1, 1, 1, 0]);
        assert_eq!(d.cdf, [(1.0, 1.0 / 3.0), (5.0, 2.0 / 3.0), (10.0, 1.0)]);
        assert_eq!(d.median, Some(5.0));
        let top = histogram(&[20.0], &edges);
        assert_eq!(top[3].count, 1);
        // ties collapse to one point at the full share
        assert_eq!(cdf(&[2.0, 2.0, 2.0]), [(2.0, 1.0)]);
        assert!(cdf(&(0..1000).map(f64::from).collect::<Vec<_>>()).len() <= 101);
        assert_eq!(bin_edges(&[&[]], 3), [0.0, 1.0]);
    }

    #[test]
    fn a_regressed_report_counts_as_reproduced_and_as_regressed() {
        let t = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().to_utc();
        let flow = ReportFlow {
            filed_at: t("2026-11-02T00:00:00Z"),
            created_at: t("2026-11-02T00:00:00Z"),
            first_attempt_at: Some(t("2026-11-02T01:00:00Z")),
            status: crate::model::ReportStatus::Regressed,
            first_counting_at: Some(t("2026-11-03T00:00:00Z")),
            last_graded_at: Some(t("2026-11-03T00:00:00Z")),
            filed_stated: true,
            benchmark: false,
        };
        let out = throughput(&[flow], t("2026-11-30T00:00:00Z"));
        assert_eq!((out.regressed, out.backlog, out.time_to_reproduction_n), (1, 0, 1));
        assert_eq!(out.weeks.iter().map(|w| w.reproduced).sum::<u64>(), 1);
    }

    #[test]
    fn throughput_counts_final_states_per_week() {
        use crate::model::ReportStatus::*;
        let t = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().to_utc();
        let flow = |filed: &str, status, first: Option<&str>, last: Option<&str>| ReportFlow {
            filed_at: t(filed),
            // imported with its history: intake falls back to filing
            created_at: t("2026-12-01T00:00:00Z"),
            first_attempt_at: Some(t(filed)),
            status,
            first_counting_at: first.map(t),
            last_graded_at: last.map(t),
            filed_stated: true,
            benchmark: false,
        };
        let reports = [
            // filed Monday 2026-11-02, reproduced Wednesday 2026-11-11 (next week), 218 h later
            flow("2026-11-02T00:00:00Z", Reproduced, Some("2026-11-11T02:00:00Z"), Some("2026-11-11T02:00:00Z")),
            flow("2026-11-03T00:00:00Z", NotReproduced, None, Some("2026-11-04T00:00:00Z")),
            flow("2026-11-20T00:00:00Z", NeedsReview, None, None),
            flow("2026-11-25T00:00:00Z", New, None, None),
        ];
        let out = throughput(&reports, t("2026-11-30T00:00:00Z"));
        assert_eq!(out.reports, 4);
        let weeks: Vec<(&str, u64, u64, u64)> =
            out.weeks.iter().map(|w| (w.week.as_str(), w.filed, w.finished, w.reproduced)).collect();
        assert_eq!(
            weeks,
            [("2026-11-02", 2, 1, 0), ("2026-11-09", 0, 1, 1), ("2026-11-16", 1, 0, 0), ("2026-11-23", 1, 0, 0)]
        );
        assert_eq!(out.backlog, 2);
        // Ages from the middle of the filing day: 10 and 5 days, read as 9.5 and 4.5.
        assert_eq!(out.backlog_oldest_days, Some(9.5));
        assert_eq!(out.backlog_median_days, Some(7.0));
        assert_eq!(out.time_to_reproduction_n, 1);
        let median = out.time_to_reproduction_median_hours.unwrap();
        assert!((median / 218.0 - 1.0).abs() <= 0.022, "{median}");
        // Days counted in a window, and none in a window that ends before it starts.
        let counts = FlowCounts::from(&reports[..]);
        let d = |s: &str| chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        assert_eq!(counts.within(FlowKind::Filed, d("2026-11-02"), d("2026-11-20")), 3);
        assert_eq!(counts.within(FlowKind::Filed, d("2026-11-20"), d("2026-11-02")), 0);
        assert_eq!(week_of(t("2026-11-29T23:59:59Z")), "2026-11-23");
    }

    #[test]
    fn time_bins_read_within_their_stated_error() {
        // From half a minute to twelve years, every time reads back within
        // 2.2% (or 30 s under a minute), and bins grow with the time.
        let mut last = 0;
        let mut h = 0.5 / 60.0;
        while h < 12.0 * 365.0 * 24.0 {
            let bin = hours_bin(h);
            assert!(bin >= last, "{h} h in bin {bin}, after {last}");
            last = bin;
            let read = bin_hours(bin);
            if h < 1.0 / 60.0 {
                assert!((read - h).abs() <= 0.5 / 60.0, "{h} read {read}");
            } else if bin < flows_bins() {
                assert!((read / h - 1.0).abs() <= 0.022, "{h} h read as {read}");
            }
            h *= 1.013;
        }
        assert_eq!(hours_bin(0.0), 0);
        // 1970-01-05 and 2026-11-30 were Mondays.
        assert_eq!((monday_of(4), monday_of(10), monday_of(3)), (4, 4, -3));
        let monday = |s: &str| day_of(chrono::DateTime::parse_from_rfc3339(s).unwrap().to_utc());
        assert_eq!(monday_of(monday("2026-12-06T23:00:00Z")), monday("2026-11-30T00:00:00Z"));
        assert_eq!(hours_bin(f64::NAN), flows_bins());
        assert_eq!(
            date_of_day(day_of(chrono::DateTime::from_timestamp(86_400 * 3 + 5, 0).unwrap())).to_string(),
            "1970-01-04"
        );
    }

    #[test]
    fn value_bins_read_within_their_stated_error() {
        use crate::api::figures::Metric;
        for metric in [Metric::CostUsd, Metric::WallSeconds] {
            let floor = values::value_floor(metric);
            let mut v = floor / 3.0;
            while v < 1e7 {
                let read = bin_value(metric, value_bin(metric, v));
                if v < floor {
                    assert!((read - v).abs() <= floor / 2.0, "{v} read {read}");
                } else {
                    assert!((read / v - 1.0).abs() <= 0.022, "{metric:?} {v} read {read}");
                }
                v *= 1.007;
            }
            assert_eq!(bin_value(metric, value_bin(metric, 0.0)), 0.0);
        }
    }

    #[test]
    fn distributions_from_bins_count_exactly_and_read_within_the_bins() {
        use crate::api::figures::Metric;
        let values: Vec<f64> = (0..1000).map(|i| 0.01 * (1.0 + (i % 97) as f64) * (1.0 + (i / 97) as f64)).collect();
        let mut bins = ValueBins::default();
        values.iter().for_each(|v| bins.add(Metric::CostUsd, *v));
        let edges = bin_edges_of(Metric::CostUsd, &[&bins], 20);
        let d = distribution_of("all".into(), Metric::CostUsd, &bins, &edges);
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let exact = distribution("all".into(), values, &bin_edges(&[&sorted], 20));
        assert_eq!(d.n, exact.n);
        assert!((d.mean.unwrap() - exact.mean.unwrap()).abs() < 1e-9);
        for (got, want) in [(d.median, exact.median), (d.p90, exact.p90), (d.max, exact.max)] {
            assert!((got.unwrap() / want.unwrap() - 1.0).abs() <= 0.022, "{got:?} {want:?}");
        }
        assert_eq!(d.histogram.iter().map(|b| b.count).sum::<u64>(), 1000);
        assert_eq!(d.cdf.last().unwrap().1, 1.0);
        assert!(d.cdf.len() <= 101 && d.cdf.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
    }

    fn flows_bins() -> i64 {
        super::flows::BINS
    }

    #[test]
    fn intake_is_failpass_time_unless_history_predates_it() {
        use crate::model::ReportStatus::Reproduced;
        let t = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().to_utc();
        // filed on GitHub in January, taken in on 1 March, first attempt after that
        let mut live = ReportFlow {
            filed_at: t("2026-01-01T00:00:00Z"),
            created_at: t("2026-03-01T00:00:00Z"),
            first_attempt_at: Some(t("2026-03-01T02:00:00Z")),
            status: Reproduced,
            first_counting_at: Some(t("2026-03-01T05:00:00Z")),
            last_graded_at: None,
            filed_stated: true,
            benchmark: false,
        };
        assert_eq!(live.intake(), t("2026-03-01T00:00:00Z"));
        let median = throughput(&[live.clone()], t("2026-04-01T00:00:00Z")).time_to_reproduction_median_hours.unwrap();
        assert!((median / 5.0 - 1.0).abs() <= 0.022, "{median}");
        // the same report imported later with its attempts: filing is the record
        live.created_at = t("2026-06-01T00:00:00Z");
        assert_eq!(live.intake(), t("2026-01-01T00:00:00Z"));
        live.first_attempt_at = None;
        assert_eq!(live.intake(), t("2026-06-01T00:00:00Z"));
    }

    #[test]
    fn a_report_filed_on_no_stated_day_counts_in_no_period_and_has_no_age() {
        use crate::model::ReportStatus::{InProgress, Reproduced};
        let t = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().to_utc();
        let imported = ReportFlow {
            filed_at: t("2026-06-01T00:00:00Z"),
            created_at: t("2026-06-01T00:00:00Z"),
            first_attempt_at: Some(t("2024-01-01T00:00:00Z")),
            status: Reproduced,
            first_counting_at: Some(t("2024-01-02T00:00:00Z")),
            last_graded_at: None,
            filed_stated: false,
            benchmark: false,
        };
        let facts = flows::FlowFacts::of(&imported);
        assert_eq!(facts.filed_day, NO_DAY);
        assert_eq!(facts.ttr_bin, None, "intake would be the unstated filing");
        let kinds: Vec<FlowKind> = facts.events().into_iter().map(|(k, _)| k).collect();
        assert!(!kinds.contains(&FlowKind::Filed) && !kinds.contains(&FlowKind::FiledWeek), "{kinds:?}");
        assert!(kinds.contains(&FlowKind::Counted), "its reproduction has a day of its own");
        let open = ReportFlow { status: InProgress, first_counting_at: None, ..imported };
        let th = throughput(std::slice::from_ref(&open), t("2026-07-01T00:00:00Z"));
        assert_eq!((th.backlog, th.backlog_oldest_days), (1, None), "open, of unknown age");
        // A benchmark's open instance is in no backlog, dated or not; still a report.
        for filed_stated in [false, true] {
            let instance = ReportFlow { benchmark: true, filed_stated, ..open.clone() };
            let th = throughput(&[instance], t("2026-07-01T00:00:00Z"));
            assert_eq!((th.reports, th.backlog, th.backlog_oldest_days), (1, 0, None), "a benchmark's instance");
        }
    }

    fn contribution(
        key: &str,
        attempts: u64,
        graded: u64,
        counting: u64,
        cost: f64,
        cost_ok: f64,
    ) -> ReportContribution {
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
