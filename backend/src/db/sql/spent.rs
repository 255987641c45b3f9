//! Figures of a spend window (`dated=spent`: the reports with attempts
//! started in the window, those attempts only) read from the period cells
//! (issue 36): each report's sums per month and per day its attempts
//! started in. The window's whole months are read from the month cells and
//! its days at either end from the day cells, so every attempt in it is
//! read once, and each report's part is summed before it is counted: a
//! report with attempts in three of the window's months is one report.

use chrono::{Datelike, NaiveDate};
use failpass_shared::api::figures::FiguresQuery;
use failpass_shared::api::reports::Dated;
use failpass_shared::figures::GroupTotals;
use failpass_shared::model::GroupBy;

use super::periods::EVERY_GOAL;
use super::rollup_reads::totals_of;
use super::rollup_sums::{COST_SUMS, INT_SUMS, report_counts};
use super::{Db, Engine};
use crate::db::figures::narrows_reports;
use crate::db::{ProjectScope, StorageResult};

/// The period cells that hold a window's attempts: `(kind, from, to)`,
/// each a half-open range of period keys, `None` at an open end.
type Ranges = Vec<(&'static str, Option<String>, Option<String>)>;

/// The first day of the month after `d`'s.
fn next_month(d: NaiveDate) -> Option<NaiveDate> {
    let (y, m) = if d.month() == 12 { (d.year() + 1, 1) } else { (d.year(), d.month() + 1) };
    NaiveDate::from_ymd_opt(y, m, 1)
}

/// The cells of the days `[since, until)` (either end open): whole months
/// as month cells, the rest as day cells. `None` for an empty window.
pub(in crate::db) fn window_ranges(since: Option<NaiveDate>, until: Option<NaiveDate>) -> Option<Ranges> {
    if let (Some(s), Some(u)) = (since, until)
        && s >= u
    {
        return None;
    }
    let month = |d: NaiveDate| d.format("%Y-%m").to_string();
    let day = |d: NaiveDate| d.format("%Y-%m-%d").to_string();
    // The first whole month's first day, and the first day after the last whole month.
    let first = match since {
        Some(s) if s.day() == 1 => Some(s),
        Some(s) => Some(next_month(s)?),
        None => None,
    };
    let end = until.and_then(|u| u.with_day(1));
    let mut out: Ranges = Vec::new();
    let whole = match (first, end) {
        (Some(f), Some(e)) => f < e,
        _ => true,
    };
    if whole {
        out.push(("month", first.map(month), end.map(month)));
        if let (Some(s), Some(f)) = (since, first)
            && s < f
        {
            out.push(("day", Some(day(s)), Some(day(f))));
        }
        if let (Some(e), Some(u)) = (end, until)
            && e < u
        {
            out.push(("day", Some(day(e)), Some(day(u))));
        }
    } else {
        out.push(("day", since.map(day), until.map(day)));
    }
    Some(out)
}

impl Engine {
    /// The totals per group of a `dated=spent` window, grouped by nothing,
    /// the project or the route, from the period cells; `None` when the
    /// query needs what they do not keep (another grouping, an agent or
    /// model, a status, label, verdict, text or route check).
    pub(in crate::db) async fn spent_totals(
        &self,
        query: &FiguresQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Option<Vec<(String, GroupTotals)>>> {
        let f = &query.filter;
        let kept = f.dated == Dated::Spent
            && !narrows_reports(f)
            && f.route_check.is_none()
            && query.agent.is_none()
            && query.model.is_none();
        // One row per report: its key read once from its cells.
        let (key, year_key) = match query.dimensions()[..] {
            [GroupBy::None] => ("'all'", "'all'"),
            [GroupBy::Project] => ("MAX(p.slug)", "p.slug"),
            [GroupBy::Route] => ("MAX(c.route)", "g.route"),
            _ => return Ok(None),
        };
        if !kept {
            return Ok(None);
        }
        // A window's ends are midnights (days), as the filter gives them, in
        // four-digit years, as period keys write them; any other goes the exact way.
        let day = |t: Option<chrono::DateTime<chrono::Utc>>| match t {
            Some(t) if t.time() == chrono::NaiveTime::MIN && (0..=9999).contains(&t.year()) => Ok(Some(t.date_naive())),
            Some(_) => Err(()),
            None => Ok(None),
        };
        let (since, until) = f.window(crate::db::common::now().date_naive());
        let (Ok(since), Ok(until)) = (day(since), day(until)) else { return Ok(None) };
        if since.is_none() && until.is_none() {
            return Ok(None);
        }
        // A year from its first day, with no attempt after the window's end
        // in it (this year, up to today): the year's groups hold it. The
        // check and the read are two statements: an attempt dated after the
        // window's end and written between them is counted, as if it had
        // been written just before the check.
        if let (Some((year, next)), Some(end)) = (year_from_its_start(since, until), until)
            && (end == next || !self.spent_between(end, next).await?)
        {
            return Ok(Some(self.spent_year_totals(query, scope, year_key, year).await?));
        }
        let Some(ranges) = window_ranges(since, until) else { return Ok(Some(Vec::new())) };
        let goal = query.goal.as_str();
        let sum = |column: &str, zero: &str, ty: &str| goal_sum("c", goal, column, zero, ty);
        // Each report's part, summed from its cells in the window.
        let parts: Vec<String> = INT_SUMS
            .iter()
            .map(|c| sum(c, "0", "BIGINT"))
            .chain(COST_SUMS.iter().map(|c| sum(c, "0.0", "DOUBLE PRECISION")))
            .collect();
        // The groups' totals from the reports' parts, as
        // `failpass_shared::figures::fold_contribution` counts them, so
        // the database hands over a row a group rather than one a report
        // (48,331 rows took 570 ms to read at a million attempts).
        let totals: Vec<String> = std::iter::once(report_counts("s."))
            .chain(INT_SUMS.iter().map(|c| format!("CAST(SUM(s.{c}) AS BIGINT) AS {c}")))
            .chain(COST_SUMS.iter().map(|c| format!("CAST(SUM(s.{c}) AS DOUBLE PRECISION) AS {c}")))
            .collect();
        let mut qb = sqlx::QueryBuilder::<Db>::new(format!(
            "SELECT s.key AS key, {} FROM (SELECT {key} AS key, MAX(c.det) AS det, MAX(c.in_patch) AS in_patch, {} \
             FROM period_cells c JOIN projects p ON p.id = c.project_id WHERE (",
            totals.join(", "),
            parts.join(", ")
        ));
        for (i, (kind, from, to)) in ranges.into_iter().enumerate() {
            if i > 0 {
                qb.push(" OR ");
            }
            qb.push("(c.kind = ").push_bind(kind).push(" AND c.period <> 'unknown'");
            if let Some(v) = from {
                qb.push(" AND c.period >= ").push_bind(v);
            }
            if let Some(v) = to {
                qb.push(" AND c.period < ").push_bind(v);
            }
            qb.push(")");
        }
        qb.push(")");
        Self::push_scope_project_route(&mut qb, scope, f, "c");
        qb.push(" GROUP BY c.report_id) s GROUP BY s.key");
        use sqlx::Row;
        let rows = qb.build().fetch_all(&self.read).await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            out.push((row.try_get::<String, _>("key")?, totals_of(&row)?));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Some(out))
    }

    /// Whether any attempt (of any project or goal) started on the days
    /// `[from, to)`.
    async fn spent_between(&self, from: NaiveDate, to: NaiveDate) -> StorageResult<bool> {
        let day = |d: NaiveDate| d.format("%Y-%m-%d").to_string();
        Ok(sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM period_cells WHERE kind = 'day' AND period >= $1 AND period < $2)",
        )
        .bind(day(from))
        .bind(day(to))
        .fetch_one(&self.read)
        .await?)
    }

    /// The totals per group (keyed by `key` on groups `g` and projects `p`)
    /// of the year `year`'s spend window, from its groups (migration 45): a
    /// row a project and route, not one a report. The reports and their
    /// oracles are counted by the cells of every goal, as the window counts
    /// a report with an attempt of any goal in it; the goal's own cells give
    /// the rest (a year's cell holds all of a report's attempts in it, so
    /// its counts are the report's own over the window).
    async fn spent_year_totals(
        &self,
        query: &FiguresQuery,
        scope: &ProjectScope,
        key: &str,
        year: i32,
    ) -> StorageResult<Vec<(String, GroupTotals)>> {
        let goal = query.goal.as_str();
        let of = |goal: &str, column: &str, zero: &str, ty: &str| goal_sum("g", goal, column, zero, ty);
        let every = |column: &str| of(EVERY_GOAL, column, "0", "BIGINT");
        let columns: Vec<String> = [every("reports")]
            .into_iter()
            .chain(["reports_graded", "reports_reproduced", "reports_awaiting"].map(|c| of(goal, c, "0", "BIGINT")))
            .chain([every("reports_with_oracle"), every("reports_in_patch")])
            .chain(INT_SUMS.iter().map(|c| of(goal, c, "0", "BIGINT")))
            .chain(COST_SUMS.iter().map(|c| of(goal, c, "0.0", "DOUBLE PRECISION")))
            .collect();
        let mut qb = sqlx::QueryBuilder::<Db>::new(format!(
            "SELECT {key} AS key, {} FROM period_groups g JOIN projects p ON p.id = g.project_id \
             WHERE g.kind = 'year' AND g.period = ",
            columns.join(", ")
        ));
        qb.push_bind(format!("{year:04}"));
        qb.push(" AND g.goal IN (").push_bind(EVERY_GOAL).push(", ").push_bind(goal).push(")");
        Self::push_scope_project_route(&mut qb, scope, &query.filter, "g");
        qb.push(format!(" GROUP BY 1 HAVING SUM(CASE WHEN g.goal = '{EVERY_GOAL}' THEN g.reports ELSE 0 END) > 0"));
        use sqlx::Row;
        let mut out = Vec::new();
        for row in qb.build().fetch_all(&self.read).await? {
            out.push((row.try_get::<String, _>("key")?, totals_of(&row)?));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

/// `column` of the rows `alias` of `goal` summed (`zero` for the others),
/// as `ty`, named `column`.
fn goal_sum(alias: &str, goal: &str, column: &str, zero: &str, ty: &str) -> String {
    format!("CAST(SUM(CASE WHEN {alias}.goal = '{goal}' THEN {alias}.{column} ELSE {zero} END) AS {ty}) AS {column}")
}

/// The year of a window of days `[since, until)` that starts on its first
/// of January and ends by the next, with that next first of January.
fn year_from_its_start(since: Option<NaiveDate>, until: Option<NaiveDate>) -> Option<(i32, NaiveDate)> {
    let (since, until) = (since?, until?);
    let next = NaiveDate::from_ymd_opt(since.year() + 1, 1, 1)?;
    // Year 9999's next first of January has no four-digit key to compare with.
    (since.ordinal() == 1 && since.year() < 9999 && since < until && until <= next).then_some((since.year(), next))
}

#[cfg(test)]
mod tests {
    use super::window_ranges;

    fn d(s: &str) -> Option<chrono::NaiveDate> {
        Some(s.parse().unwrap())
    }

    fn owned(r: &[(&'static str, Option<&str>, Option<&str>)]) -> super::Ranges {
        r.iter().map(|(k, f, t)| (*k, f.map(str::to_owned), t.map(str::to_owned))).collect()
    }

    #[test]
    fn a_window_is_its_whole_months_and_the_days_at_its_ends() {
        // 2026-01-04 to 2026-04-10 (until is the day after): February and March whole.
        assert_eq!(
            window_ranges(d("2026-01-04"), d("2026-04-11")),
            Some(owned(&[
                ("month", Some("2026-02"), Some("2026-04")),
                ("day", Some("2026-01-04"), Some("2026-02-01")),
                ("day", Some("2026-04-01"), Some("2026-04-11")),
            ]))
        );
        // A year: its months, no days.
        assert_eq!(
            window_ranges(d("2026-01-01"), d("2027-01-01")),
            Some(owned(&[("month", Some("2026-01"), Some("2027-01"))]))
        );
        // Inside one month: days only, also across a month's end.
        assert_eq!(
            window_ranges(d("2026-01-12"), d("2026-01-14")),
            Some(owned(&[("day", Some("2026-01-12"), Some("2026-01-14"))]))
        );
        assert_eq!(
            window_ranges(d("2026-01-20"), d("2026-02-03")),
            Some(owned(&[("day", Some("2026-01-20"), Some("2026-02-03"))]))
        );
        // December into January.
        assert_eq!(
            window_ranges(d("2025-12-15"), d("2026-02-01")),
            Some(owned(&[
                ("month", Some("2026-01"), Some("2026-02")),
                ("day", Some("2025-12-15"), Some("2026-01-01"))
            ]))
        );
        // Open ends.
        assert_eq!(
            window_ranges(None, d("2026-01-21")),
            Some(owned(&[("month", None, Some("2026-01")), ("day", Some("2026-01-01"), Some("2026-01-21"))]))
        );
        assert_eq!(
            window_ranges(d("2026-01-09"), None),
            Some(owned(&[("month", Some("2026-02"), None), ("day", Some("2026-01-09"), Some("2026-02-01"))]))
        );
        assert_eq!(window_ranges(d("2026-01-09"), d("2026-01-09")), None);
    }
}
