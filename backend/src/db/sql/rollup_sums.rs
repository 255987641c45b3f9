//! The sums a rollup row holds and the pieces of SQL every rollup writes
//! and reads with: the bottom of the rollups (`rollups` moves them,
//! `periods` and `values` keep their own kinds, `rollup_reads` reads them),
//! importing none of them.

use crate::db::dialect::Param;

/// A cell's sums that count, as they are added up at every level.
pub(super) const INT_SUMS: [&str; 10] = [
    "attempts",
    "graded",
    "counting",
    "leads",
    "errors",
    "awaiting",
    "without_cost",
    "counting_without_cost",
    "api_calls",
    "with_api_calls",
];

/// A cell's sums of costs, after [`INT_SUMS`].
pub(super) const COST_SUMS: [&str; 2] = ["cost_usd", "cost_counting_usd"];

/// Every sum of a cell: [`INT_SUMS`], then [`COST_SUMS`].
pub(super) fn sums() -> impl Iterator<Item = &'static str> {
    INT_SUMS.iter().chain(&COST_SUMS).copied()
}

/// Days in a block of span 1; blocks start on multiples of it (days since
/// 1970-01-01).
pub(super) const BLOCK: i64 = 32;

/// A group's per-report counts, then its [`sums`].
pub(super) const COUNTS: [&str; 6] =
    ["reports", "reports_graded", "reports_reproduced", "reports_awaiting", "reports_with_oracle", "reports_in_patch"];

/// The [`COUNTS`] of a group summed over rows of one report each (their
/// columns `{x}graded`, `counting`, `awaiting`, `det`, `in_patch`), as
/// `failpass_shared::figures::fold_contribution` counts them: a report
/// awaits review only when none of its attempts counts.
pub(super) fn report_counts(x: &str) -> String {
    let counted = |condition: String, name: &str| {
        format!("CAST(SUM(CASE WHEN {condition} THEN 1 ELSE 0 END) AS BIGINT) AS {name}")
    };
    [
        "CAST(COUNT(*) AS BIGINT) AS reports".to_owned(),
        counted(format!("{x}graded > 0"), "reports_graded"),
        counted(format!("{x}counting > 0"), "reports_reproduced"),
        counted(format!("{x}awaiting > 0 AND {x}counting = 0"), "reports_awaiting"),
        format!("CAST(SUM({x}det) AS BIGINT) AS reports_with_oracle"),
        format!("CAST(SUM({x}in_patch) AS BIGINT) AS reports_in_patch"),
    ]
    .join(", ")
}

/// An attempt's cutoff class, as the exact figures compute it.
pub(in crate::db) const CUTOFF_KEY: &str = "CASE WHEN a.model_cutoff IS NULL OR NOT r.filed_at_stated THEN 'unknown' \
     WHEN r.filed_at < a.model_cutoff THEN 'before_cutoff' ELSE 'after_cutoff' END";

/// `reports` (a condition on `r.id`: `r.id IN (…)`, `r.id BETWEEN …` or
/// `TRUE`) restated on the attempts `alias`, to be added beside it where
/// attempts are joined: PostgreSQL, whose statistics lag a bulk import,
/// otherwise plans a scan of every attempt for a batch of reports (2 to 3 s
/// a batch at 1,000,000 attempts), which made imports slow down as they grew.
pub(super) fn on_attempts(reports: &str, alias: &str) -> String {
    reports.replace("r.id", &format!("{alias}.report_id"))
}

/// [`on_attempts`], narrowed to the attempts `appended` names (ids,
/// comma-separated) when the write only appended attempts to its reports.
/// Then the attempts are read by id and their reports by key: both report
/// conditions are written so that no index serves them (`+`, see
/// [`reports_of`]), or the planner read every attempt of a busy report to
/// find the few new ones (90 ms for 43 reports of 1,400 attempts).
pub(super) fn on_attempts_of(reports: &str, alias: &str, appended: Option<&str>) -> String {
    match appended {
        None => on_attempts(reports, alias),
        Some(ids) => format!("+{} AND {alias}.id IN ({ids})", on_attempts(reports, alias)),
    }
}

/// `reports` (on `r`) where the attempts it is read beside are the
/// appended ones (see [`on_attempts_of`]).
pub(super) fn reports_of(reports: &str, appended: Option<&str>) -> String {
    match appended {
        None => reports.to_owned(),
        Some(_) => format!("+{reports}"),
    }
}

/// A cell's sums ([`sums`]' order) over the attempts `a` of its group.
pub(super) const ATTEMPT_SUMS: &str = "COUNT(*) AS attempts, \
     CAST(SUM(CASE WHEN a.graded THEN 1 ELSE 0 END) AS BIGINT) AS graded, \
     CAST(SUM(CASE WHEN a.counts THEN 1 ELSE 0 END) AS BIGINT) AS counting, \
     CAST(SUM(CASE WHEN a.verdict = 'lead' THEN 1 ELSE 0 END) AS BIGINT) AS leads, \
     CAST(SUM(CASE WHEN a.verdict = 'error' THEN 1 ELSE 0 END) AS BIGINT) AS errors, \
     CAST(SUM(CASE WHEN a.awaiting THEN 1 ELSE 0 END) AS BIGINT) AS awaiting, \
     CAST(SUM(CASE WHEN a.cost_known THEN 0 ELSE 1 END) AS BIGINT) AS without_cost, \
     CAST(SUM(CASE WHEN a.counts AND NOT a.cost_known THEN 1 ELSE 0 END) AS BIGINT) AS counting_without_cost, \
     CAST(COALESCE(SUM(a.api_calls), 0) AS BIGINT) AS api_calls, COUNT(a.api_calls) AS with_api_calls, \
     CAST(SUM(a.cost_usd) AS DOUBLE PRECISION) AS cost_usd, \
     CAST(SUM(CASE WHEN a.counts THEN a.cost_usd ELSE 0.0 END) AS DOUBLE PRECISION) AS cost_counting_usd";

/// A cell's sums, as its columns name them: [`INT_SUMS`], then [`COST_SUMS`].
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub(super) struct Sums {
    pub(super) attempts: i64,
    pub(super) graded: i64,
    pub(super) counting: i64,
    pub(super) leads: i64,
    pub(super) errors: i64,
    pub(super) awaiting: i64,
    pub(super) without_cost: i64,
    pub(super) counting_without_cost: i64,
    pub(super) api_calls: i64,
    pub(super) with_api_calls: i64,
    pub(super) cost_usd: f64,
    pub(super) cost_counting_usd: f64,
}

impl Sums {
    /// The counting sums, in [`INT_SUMS`]' order.
    pub(super) fn ints(&self) -> [i64; 10] {
        [
            self.attempts,
            self.graded,
            self.counting,
            self.leads,
            self.errors,
            self.awaiting,
            self.without_cost,
            self.counting_without_cost,
            self.api_calls,
            self.with_api_calls,
        ]
    }

    /// Adds `other`'s sums to these (a cell's part of attempts appended to it).
    pub(super) fn add(&mut self, other: &Sums) {
        self.attempts += other.attempts;
        self.graded += other.graded;
        self.counting += other.counting;
        self.leads += other.leads;
        self.errors += other.errors;
        self.awaiting += other.awaiting;
        self.without_cost += other.without_cost;
        self.counting_without_cost += other.counting_without_cost;
        self.api_calls += other.api_calls;
        self.with_api_calls += other.with_api_calls;
        self.cost_usd += other.cost_usd;
        self.cost_counting_usd += other.cost_counting_usd;
    }

    /// The sums as a written row's values, in [`sums`]' order.
    pub(super) fn params(&self, values: &mut Vec<Param<'_>>) {
        values.extend(self.ints().map(Param::Int));
        values.extend([Param::Real(self.cost_usd), Param::Real(self.cost_counting_usd)]);
    }
}
