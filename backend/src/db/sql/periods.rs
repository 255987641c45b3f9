//! Figures by the week or month attempts started in (and the spend by the
//! day), maintained as data
//! arrives (issue 16): per report, goal and period, the sums of its
//! attempts started in it (`period_cells`), summed per period, project and
//! route (`period_groups`, migration 25), moved in the figures'
//! transaction. Each cell is one report's whole part of its group, so a
//! group's per-report counts (graded, reproduced, awaiting a review) are
//! the cells' own, exact. `check-figures` rebuilds and compares them.

use std::collections::{BTreeMap, BTreeSet};

use failpass_shared::api::figures::FiguresQuery;
use failpass_shared::api::reports::ReportFilter;
use failpass_shared::figures::GroupTotals;
use failpass_shared::model::GroupBy;

use super::rollup_reads::{summed_totals, totals_of};
use super::rollup_sums::{ATTEMPT_SUMS, COST_SUMS, COUNTS, INT_SUMS, Sums, report_counts, sums};
use super::{Db, Engine, Tx};
use crate::db::dialect::{Dialect, Param};
use crate::db::figures::{has_window, narrows_reports};
use crate::db::{ProjectScope, StorageResult};

/// A cell's columns, in [`PeriodCell`]'s order.
const CELL_COLUMNS: &str = "report_id, goal, kind, period, project_id, route, det, in_patch, attempts, graded, \
     counting, leads, errors, awaiting, without_cost, counting_without_cost, api_calls, with_api_calls, cost_usd, \
     cost_counting_usd";

/// A group's key columns.
const KEY: &str = "goal, kind, period, project_id, route";

/// The goal of a year's cells that sum all of a report's attempts in it,
/// whatever their goal: a spend window counts a report with an attempt of
/// any goal in it (migration 45), so a year's groups of this goal count the
/// reports (and their oracles) and the goal's own groups the rest.
pub(super) const EVERY_GOAL: &str = "*";

/// One row of `period_cells`.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
struct PeriodCell {
    report_id: i64,
    goal: String,
    kind: String,
    period: String,
    project_id: i64,
    route: String,
    det: i64,
    in_patch: i64,
    #[sqlx(flatten)]
    sums: Sums,
}

impl PeriodCell {
    /// The report's counts in its group, in [`COUNTS`]' order.
    fn counts(&self) -> [i64; 6] {
        let s = &self.sums;
        [
            1,
            i64::from(s.graded > 0),
            i64::from(s.counting > 0),
            i64::from(s.awaiting > 0 && s.counting == 0),
            self.det,
            self.in_patch,
        ]
    }
}

/// A group's key: goal, kind, period, project, route.
type GroupKey = (String, String, String, i64, String);

/// A group's change: counts, sums, costs.
type Change = ([i64; 6], [i64; 10], [f64; 2]);

/// The change to the groups as cells are taken out (-1) and put in (+1).
pub(super) type PeriodDelta = BTreeMap<GroupKey, Change>;

impl Engine {
    /// The cells of the reports `reports` selects (on `r`), from their attempts.
    fn period_cells_select(reports: &str) -> String {
        Self::period_cells_select_of(reports, None)
    }

    /// [`Self::period_cells_select`], narrowed to the attempts `appended` names (ids, comma-separated).
    fn period_cells_select_of(reports: &str, appended: Option<&str>) -> String {
        [
            Self::period_part(reports, appended, "week", Self::WEEK_KEY, false),
            Self::period_part(reports, appended, "month", Self::MONTH_KEY, false),
            Self::period_part(reports, appended, "day", Self::DAY_KEY, false),
            Self::period_part(reports, appended, "year", Self::YEAR_KEY, false),
            Self::period_part(reports, appended, "year", Self::YEAR_KEY, true),
        ]
        .join(" UNION ALL ")
    }

    /// The cells of one kind of period, keyed by `key` (see
    /// [`Self::period_cells_select_of`]); with `every_goal`, one cell a
    /// report and period of all its attempts, goal [`EVERY_GOAL`].
    fn period_part(reports: &str, appended: Option<&str>, kind: &str, key: &str, every_goal: bool) -> String {
        let on_a = super::rollup_sums::on_attempts_of(reports, "a", appended);
        let narrowed = super::rollup_sums::reports_of(reports, appended);
        let (goal, by_goal) =
            if every_goal { (format!("'{EVERY_GOAL}'"), "") } else { ("a.goal".to_owned(), "a.goal, ") };
        format!(
            "SELECT r.id AS report_id, {goal} AS goal, '{kind}' AS kind, {key} AS period, r.project_id AS project_id, \
             r.route AS route, CAST(CASE WHEN r.has_det_oracle THEN 1 ELSE 0 END AS BIGINT) AS det, \
             CAST(CASE WHEN r.oracle_source = 'in_patch_test' THEN 1 ELSE 0 END AS BIGINT) AS in_patch, \
             {ATTEMPT_SUMS} FROM reports r JOIN attempts a ON a.report_id = r.id WHERE {narrowed} AND {on_a} \
             GROUP BY r.id, {by_goal}{key}, r.project_id, r.route, r.has_det_oracle, r.oracle_source"
        )
    }

    /// The cells of the reports `reports` selects, of their attempts
    /// `appended` names (all with `None`), for a write. The database groups
    /// the attempts by day alone; each week's and month's cell is the sum of
    /// its days' (a day lies in one week and one month), which costs a
    /// third of grouping by each kind (an import's batch of 50,000 attempts
    /// spent 0.32 s in the three). A day key outside years 1000 to 9998
    /// (whose week or month key the engines might write otherwise) has the
    /// database group by each kind instead. The rebuild (`check-figures`)
    /// groups by each kind in SQL: a second computation to compare with.
    async fn period_cells_of(tx: &mut Tx, reports: &str, appended: Option<&str>) -> StorageResult<Vec<PeriodCell>> {
        let days: Vec<PeriodCell> =
            sqlx::query_as(sqlx::AssertSqlSafe(Self::period_part(reports, appended, "day", Self::DAY_KEY, false)))
                .fetch_all(&mut **tx)
                .await?;
        match fold_days(days) {
            Some(cells) => Ok(cells),
            None => Ok(sqlx::query_as(sqlx::AssertSqlSafe(Self::period_cells_select_of(reports, appended)))
                .fetch_all(&mut **tx)
                .await?),
        }
    }

    /// Recomputes the period cells of the reports in `list` (ids,
    /// comma-separated) and adds what their groups move by to `delta`, in
    /// `tx` (which holds the figures' lock); [`Self::move_periods`] applies it.
    /// With `appended` (attempt ids, comma-separated), those attempts' sums
    /// are added to the stored cells instead.
    pub(super) async fn period_changes(
        tx: &mut Tx,
        list: &str,
        appended: Option<&str>,
        delta: &mut PeriodDelta,
    ) -> StorageResult<()> {
        let old: Vec<PeriodCell> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {CELL_COLUMNS} FROM period_cells WHERE report_id IN ({list})"
        )))
        .fetch_all(&mut **tx)
        .await?;
        let part = Self::period_cells_of(tx, &format!("r.id IN ({list})"), appended).await?;
        let new = match appended {
            None => part,
            Some(_) => {
                let mut cells = old.clone();
                for p in part {
                    let same = |c: &&mut PeriodCell| {
                        (c.report_id, &c.goal, &c.kind, &c.period) == (p.report_id, &p.goal, &p.kind, &p.period)
                    };
                    match cells.iter_mut().find(same) {
                        Some(c) => c.sums.add(&p.sums),
                        None => cells.push(p),
                    }
                }
                cells
            }
        };
        let per_report = |cells: Vec<PeriodCell>| {
            let mut m: BTreeMap<i64, Vec<PeriodCell>> = BTreeMap::new();
            for c in cells {
                m.entry(c.report_id).or_default().push(c);
            }
            for v in m.values_mut() {
                v.sort_by(|a, b| (&a.goal, &a.kind, &a.period).cmp(&(&b.goal, &b.kind, &b.period)));
            }
            m
        };
        let (before, after) = (per_report(old), per_report(new));
        let changed: BTreeSet<i64> =
            before.keys().chain(after.keys()).filter(|r| before.get(r) != after.get(r)).copied().collect();
        if changed.is_empty() {
            return Ok(());
        }
        for (sign, side) in [(-1, &before), (1, &after)] {
            for c in changed.iter().flat_map(|r| side.get(r).into_iter().flatten()) {
                let key = (c.goal.clone(), c.kind.clone(), c.period.clone(), c.project_id, c.route.clone());
                let g = delta.entry(key).or_insert(([0; 6], [0; 10], [0.0; 2]));
                g.0.iter_mut().zip(c.counts()).for_each(|(s, n)| *s += sign * n);
                g.1.iter_mut().zip(c.sums.ints()).for_each(|(s, n)| *s += sign * n);
                g.2[0] += sign as f64 * c.sums.cost_usd;
                g.2[1] += sign as f64 * c.sums.cost_counting_usd;
            }
        }
        let changed_list = changed.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
        sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM period_cells WHERE report_id IN ({changed_list})")))
            .execute(&mut **tx)
            .await?;
        let mut values = Vec::new();
        for c in changed.iter().flat_map(|r| after.get(r).into_iter().flatten()) {
            values.extend([
                Param::Int(c.report_id),
                Param::Text(&c.goal),
                Param::Text(&c.kind),
                Param::Text(&c.period),
                Param::Int(c.project_id),
                Param::Text(&c.route),
                Param::Int(c.det),
                Param::Int(c.in_patch),
            ]);
            c.sums.params(&mut values);
        }
        Self::write_rows(tx, "period_cells", &CELL_COLUMNS.split(", ").collect::<Vec<_>>(), "", &values).await
    }

    /// Adds `delta` to the groups, in the order of their key.
    pub(super) async fn move_periods(tx: &mut Tx, delta: &PeriodDelta) -> StorageResult<()> {
        let changes: Vec<&str> = COUNTS.iter().chain(&INT_SUMS).chain(&COST_SUMS).copied().collect();
        let set: Vec<String> = changes.iter().map(|c| format!("{c} = period_groups.{c} + excluded.{c}")).collect();
        let columns: Vec<&str> = KEY.split(", ").chain(changes.iter().copied()).collect();
        let mut values = Vec::new();
        let moved = |(c, s, m): &&Change| c.iter().chain(s).any(|n| *n != 0) || m.iter().any(|x| *x != 0.0);
        for ((goal, kind, period, project, route), change) in delta.iter().filter(|(_, c)| moved(c)) {
            let (counts, sums, costs) = change;
            values.extend([
                Param::Text(goal),
                Param::Text(kind),
                Param::Text(period),
                Param::Int(*project),
                Param::Text(route),
            ]);
            values.extend(counts.iter().chain(sums).map(|n| Param::Int(*n)));
            values.extend(costs.map(Param::Real));
        }
        Self::write_rows(
            tx,
            "period_groups",
            &columns,
            &format!("ON CONFLICT ({KEY}) DO UPDATE SET {}", set.join(", ")),
            &values,
        )
        .await
    }

    /// Empties both tables and computes them again from every attempt, set-based, in `tx`.
    pub(in crate::db) async fn rebuild_periods(tx: &mut Tx) -> StorageResult<()> {
        sqlx::query("DELETE FROM period_groups").execute(&mut **tx).await?;
        sqlx::query("DELETE FROM period_cells").execute(&mut **tx).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO period_cells ({CELL_COLUMNS}) {}",
            Self::period_cells_select("TRUE")
        )))
        .execute(&mut **tx)
        .await?;
        let counts = report_counts("");
        let summed: Vec<String> = sums().map(|c| format!("SUM({c})")).collect();
        let columns: Vec<&str> = COUNTS.iter().copied().chain(sums()).collect();
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO period_groups ({KEY}, {}) SELECT {KEY}, {counts}, {} FROM period_cells GROUP BY {KEY}",
            columns.join(", "),
            summed.join(", ")
        )))
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    /// Every non-empty group, keyed like the figures' groups, and the cells'
    /// count and sums.
    pub(in crate::db) async fn period_rows(tx: &mut Tx) -> StorageResult<BTreeMap<String, Vec<f64>>> {
        use sqlx::Row;
        let values: Vec<String> =
            COUNTS.iter().copied().chain(sums()).map(|c| format!("CAST({c} AS DOUBLE PRECISION)")).collect();
        let sql = format!(
            "SELECT goal || '|' || kind || '|' || period || '|' || CAST(project_id AS TEXT) || '|' || route, {} \
             FROM period_groups WHERE reports <> 0",
            values.join(", ")
        );
        let mut out = BTreeMap::new();
        for row in sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(&mut **tx).await? {
            let key: String = row.try_get(0)?;
            let v = (1..=values.len()).map(|i| row.try_get::<f64, _>(i)).collect::<Result<Vec<_>, _>>()?;
            out.insert(format!("period {key}"), v);
        }
        let totals: Vec<String> = sums().map(|c| format!("CAST(COALESCE(SUM({c}), 0) AS DOUBLE PRECISION)")).collect();
        let row = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT COUNT(*), {} FROM period_cells", totals.join(", "))))
            .fetch_one(&mut **tx)
            .await?;
        let mut fingerprint = vec![row.try_get::<i64, _>(0)? as f64];
        for i in 1..=totals.len() {
            fingerprint.push(row.try_get::<f64, _>(i)?);
        }
        out.insert("period cells".into(), fingerprint);
        Ok(out)
    }

    /// The spend on reproduction attempts started in `filter`'s window, from
    /// the day groups; `None` when the filter narrows by more than project
    /// and route.
    pub(in crate::db) async fn period_spend(
        &self,
        filter: &ReportFilter,
        scope: &ProjectScope,
    ) -> StorageResult<Option<f64>> {
        if narrows_reports(filter) || filter.route_check.is_some() {
            return Ok(None);
        }
        let (since, until) = filter.window(crate::db::common::now().date_naive());
        let mut qb = sqlx::QueryBuilder::<Db>::new(
            "SELECT CAST(COALESCE(SUM(g.cost_usd), 0.0) AS DOUBLE PRECISION) FROM period_groups g \
             JOIN projects p ON p.id = g.project_id WHERE g.goal = 'reproduce' AND g.kind = 'day'",
        );
        let day = |t: chrono::DateTime<chrono::Utc>| t.date_naive().format("%Y-%m-%d").to_string();
        if since.is_some() || until.is_some() {
            qb.push(" AND g.period <> 'unknown'");
        }
        if let Some(t) = since {
            qb.push(" AND g.period >= ").push_bind(day(t));
        }
        // `until` is the midnight after the window's last day.
        if let Some(t) = until {
            qb.push(" AND g.period < ").push_bind(day(t));
        }
        Self::push_scope_project_route(&mut qb, scope, filter, "g");
        Ok(Some(qb.build_query_scalar().fetch_one(&self.read).await?))
    }

    /// The totals per week or month `query` asks for, from the groups;
    /// `None` unless it groups by one of them alone, filtered by project or
    /// route at most.
    pub(in crate::db) async fn period_totals(
        &self,
        query: &FiguresQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Option<Vec<(String, GroupTotals)>>> {
        let kind = match query.dimensions()[..] {
            [GroupBy::Week] => "week",
            [GroupBy::Month] => "month",
            _ => return Ok(None),
        };
        let f = &query.filter;
        let narrowed = narrows_reports(f)
            || f.route_check.is_some()
            || has_window(f)
            || query.agent.is_some()
            || query.model.is_some();
        if narrowed {
            return Ok(None);
        }
        let mut qb = sqlx::QueryBuilder::<Db>::new(format!(
            "SELECT g.period AS period, {} FROM period_groups g JOIN projects p ON p.id = g.project_id WHERE g.goal = ",
            summed_totals().join(", ")
        ));
        qb.push_bind(query.goal.as_str());
        qb.push(" AND g.kind = ").push_bind(kind);
        Self::push_scope_project_route(&mut qb, scope, f, "g");
        qb.push(" GROUP BY g.period HAVING SUM(g.reports) > 0 ORDER BY g.period");
        use sqlx::Row;
        let mut out = Vec::new();
        for row in qb.build().fetch_all(&self.read).await? {
            out.push((row.try_get::<String, _>("period")?, totals_of(&row)?));
        }
        Ok(Some(out))
    }
}

/// The week (its Monday) and month of a day key `YYYY-MM-DD`, as the
/// engines' `WEEK_KEY` and `MONTH_KEY` write them (its year is the month's
/// first four characters); `None` for `unknown` or a day outside years
/// 1000 to 9998.
fn week_and_month(day: &str) -> Option<(String, String)> {
    use chrono::{Datelike, NaiveDate};
    if day.len() != 10 {
        return None;
    }
    let date = NaiveDate::parse_from_str(day, "%Y-%m-%d").ok().filter(|d| (1000..=9998).contains(&d.year()))?;
    let monday = date - chrono::Days::new(u64::from(date.weekday().num_days_from_monday()));
    Some((monday.format("%Y-%m-%d").to_string(), day[..7].to_owned()))
}

/// Day cells (of a report's attempts, at most one per report, goal and
/// day), with the week, month and year cells they sum to, and the year's
/// cells of every goal ([`EVERY_GOAL`]); `None` when a day has
/// a key [`week_and_month`] does not know, besides `unknown`, whose attempts
/// started at no stated time and are `unknown` in every kind.
fn fold_days(days: Vec<PeriodCell>) -> Option<Vec<PeriodCell>> {
    let mut folded: BTreeMap<(i64, String, &'static str, String), PeriodCell> = BTreeMap::new();
    for day in &days {
        let (week, month) = match day.period.as_str() {
            "unknown" => ("unknown".to_owned(), "unknown".to_owned()),
            key => week_and_month(key)?,
        };
        let year = if month == "unknown" { month.clone() } else { month[..4].to_owned() };
        let goal = || day.goal.clone();
        let every = || EVERY_GOAL.to_owned();
        for (goal, kind, period) in
            [(goal(), "week", week), (goal(), "month", month), (goal(), "year", year.clone()), (every(), "year", year)]
        {
            match folded.entry((day.report_id, goal, kind, period)) {
                std::collections::btree_map::Entry::Occupied(mut cell) => cell.get_mut().sums.add(&day.sums),
                std::collections::btree_map::Entry::Vacant(slot) => {
                    let (_, goal, kind, period) = slot.key();
                    let cell = PeriodCell {
                        goal: goal.clone(),
                        kind: (*kind).to_owned(),
                        period: period.clone(),
                        ..day.clone()
                    };
                    slot.insert(cell);
                }
            }
        }
    }
    let mut cells: Vec<PeriodCell> = folded.into_values().collect();
    cells.extend(days);
    Some(cells)
}

#[cfg(test)]
mod tests {
    use super::week_and_month;

    #[test]
    fn a_days_week_is_its_monday_and_its_month_its_first_seven_characters() {
        let wm = |d: &str| week_and_month(d).map(|(w, m)| format!("{w} {m}"));
        assert_eq!(wm("2026-12-07").as_deref(), Some("2026-12-07 2026-12")); // a Monday
        assert_eq!(wm("2026-12-06").as_deref(), Some("2026-11-30 2026-12")); // a Sunday: the week began in November
        assert_eq!(wm("2027-01-01").as_deref(), Some("2026-12-28 2027-01")); // across a year's end
        assert_eq!(wm("2024-02-29").as_deref(), Some("2024-02-26 2024-02"));
        for odd in ["unknown", "0999-12-31", "9999-12-31", "2026-13-01", "2026-1-01", "+10000-01-01", ""] {
            assert_eq!(week_and_month(odd), None, "{odd}");
        }
    }
}
