//! Figures maintained as data arrives (issue 16): the rollups the figures
//! are read from, written in the same transaction as every write that
//! changes them, written once for both engines (see `mod.rs`).
//!
//! Two tables (migration 22). `figure_cells` holds, per report and goal, a
//! base cell (agent `''`) with the report's own dimensions, and one cell per
//! (agent, model, cutoff class) of its attempts with their sums.
//! `figure_groups` holds the cells summed per group at eight levels: each of
//! agent, model and cutoff class either kept (a bit of `level`) or summed
//! over (`''`). A group's per-report counts (graded, reproduced, awaiting a
//! review) come from the report's cells folded at that level, so they are
//! exact, not estimates.
//!
//! A write that changes reports calls [`Engine::refresh_figures`] with their
//! ids: their old cells are taken out of the groups, the cells are computed
//! again from the reports and attempts, and the new ones are added. Groups
//! emptied that way keep a row of zeros, which reads skip. The oracle
//! figures' counts (`figure_facts`, per report; `figure_project_facts`, per
//! project) move the same way.

use crate::db::StorageResult;
use crate::db::dialect::{Dialect, Param};
use crate::db::figures::{AGENT, CUTOFF, FigureCheck, MODEL};

use super::rollup_sums::{
    ATTEMPT_SUMS, BLOCK, COUNTS, CUTOFF_KEY, INT_SUMS, Sums, on_attempts, on_attempts_of, report_counts, reports_of,
    sums,
};
use super::{Engine, Tx};

/// A cell's columns, in the order of [`Cell`] and of [`cells_select`].
const CELL_COLUMNS: &str = "report_id, goal, agent, model, cutoff, project_id, route, category, vague, det, in_patch, filed_day, \
     attempts, graded, counting, leads, errors, awaiting, without_cost, counting_without_cost, api_calls, with_api_calls, \
     cost_usd, cost_counting_usd";

/// A group's key columns.
const KEY: &str = "goal, level, span, filed, project_id, route, category, vague, agent, model, cutoff";

/// The spans of filing days a group sums (`figure_groups.span`): every day,
/// a block of [`BLOCK`] days, one day.
const SPANS: [u8; 3] = [0, 1, 2];

/// The first day of the span `span` that `day` is in (`filed` of its group).
fn span_start(span: u8, day: i64) -> i64 {
    match span {
        0 => 0,
        1 => day / BLOCK * BLOCK,
        _ => day,
    }
}

impl Engine {
    /// Recomputes the figures' cells of `ids` and moves their groups by the
    /// difference, in `tx`.
    pub(in crate::db) async fn refresh_figures(tx: &mut Tx, ids: &[i64]) -> StorageResult<()> {
        Self::move_figures(tx, ids, None).await
    }

    /// [`Self::refresh_figures`] for reports whose only change is the
    /// attempts `appended` (ids, comma-separated) added to them (a live
    /// write's new attempts). Every rollup is a sum over attempts, so their
    /// new cells are the old ones plus the appended attempts' part, read
    /// without reading the reports' other attempts: a write's cost does not
    /// grow with its report's history. The reports' own dimensions (route,
    /// oracle, filing day) and flows are read again as always. Callers keep
    /// out the reports whose appended attempts include a deterministic grade
    /// (it can change which earlier LLM leads count as checked).
    pub(in crate::db) async fn append_figures(tx: &mut Tx, ids: &[i64], appended: &str) -> StorageResult<()> {
        Self::move_figures(tx, ids, Some(appended)).await
    }

    async fn move_figures(tx: &mut Tx, ids: &[i64], appended: Option<&str>) -> StorageResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        // Writers on many machines take the groups one at a time.
        sqlx::query(Self::FIGURES_LOCK).execute(&mut **tx).await?;
        Self::move_data_versions(tx, ids).await?;
        let mut moves = Moves::default();
        for chunk in ids.chunks(500) {
            let list = chunk.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
            let old: Vec<Cell> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT {CELL_COLUMNS} FROM figure_cells WHERE report_id IN ({list})"
            )))
            .fetch_all(&mut **tx)
            .await?;
            let reports = format!("r.id IN ({list})");
            // Appending needs every report's base cells to add to (a report
            // always has them once its figures are kept).
            let bases = old.iter().filter(|c| c.agent.is_empty()).count();
            let appended = appended.filter(|_| bases == 2 * chunk.len());
            let new: Vec<Cell> = match appended {
                None => sqlx::query_as(sqlx::AssertSqlSafe(cells_select(&reports))).fetch_all(&mut **tx).await?,
                Some(added) => {
                    let on_a = on_attempts_of(&reports, "a", Some(added));
                    let narrowed = reports_of(&reports, Some(added));
                    let part: Vec<Cell> = sqlx::query_as(sqlx::AssertSqlSafe(attempt_cells_select(&narrowed, &on_a)))
                        .fetch_all(&mut **tx)
                        .await?;
                    with_appended(&old, part)
                }
            };
            Self::fact_changes(tx, &list, appended, &mut moves.facts).await?;
            Self::flow_changes(tx, &list, &mut moves.flows).await?;
            Self::value_changes(tx, &list, appended, &mut moves.values).await?;
            Self::period_changes(tx, &list, appended, &mut moves.periods).await?;
            let changed = changed_reports(&old, &new);
            if changed.is_empty() {
                continue;
            }
            let keep = |c: &&Cell| changed.contains(&c.report_id);
            moves.groups.add(old.iter().filter(keep), -1);
            moves.groups.add(new.iter().filter(keep), 1);
            let changed_list = changed.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
            sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM figure_cells WHERE report_id IN ({changed_list})")))
                .execute(&mut **tx)
                .await?;
            let inserts: Vec<&Cell> = new.iter().filter(keep).collect();
            Self::insert_cells(tx, &inserts).await?;
        }
        // The groups move once for the whole write: a group many of its
        // reports share is written once, not once per chunk of them.
        Self::move_groups(tx, &moves.groups).await?;
        Self::move_facts(tx, &moves.facts).await?;
        Self::move_flows(tx, &moves.flows).await?;
        Self::move_values(tx, &moves.values).await?;
        Self::move_periods(tx, &moves.periods).await
    }

    /// Writes `cells`.
    async fn insert_cells(tx: &mut Tx, cells: &[&Cell]) -> StorageResult<()> {
        let mut values = Vec::with_capacity(cells.len() * 24);
        for c in cells {
            values.extend([
                Param::Int(c.report_id),
                Param::Text(&c.goal),
                Param::Text(&c.agent),
                Param::Text(&c.model),
                Param::Text(&c.cutoff),
                Param::Int(c.project_id),
                Param::Text(&c.route),
                Param::Text(&c.category),
                Param::Int(c.vague),
                Param::Int(c.det),
                Param::Int(c.in_patch),
                Param::Int(c.filed_day),
            ]);
            c.sums.params(&mut values);
        }
        Self::write_rows(tx, "figure_cells", &CELL_COLUMNS.split(", ").collect::<Vec<_>>(), "", &values).await
    }

    /// Adds `delta` to the groups, in the order of their key.
    async fn move_groups(tx: &mut Tx, delta: &GroupDelta) -> StorageResult<()> {
        let columns: Vec<&str> = KEY.split(", ").chain(COUNTS).chain(sums()).collect();
        let set = COUNTS
            .iter()
            .copied()
            .chain(sums())
            .map(|c| format!("{c} = figure_groups.{c} + excluded.{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut values = Vec::with_capacity(delta.0.len() * columns.len());
        for (k, t) in delta.0.iter().filter(|(_, t)| !t.is_zero()) {
            values.extend([
                Param::Text(&k.goal),
                Param::Int(i64::from(k.level)),
                Param::Int(i64::from(k.span)),
                Param::Int(k.filed),
                Param::Int(k.project_id),
                Param::Text(&k.route),
                Param::Text(&k.category),
                Param::Int(k.vague),
                Param::Text(&k.agent),
                Param::Text(&k.model),
                Param::Text(&k.cutoff),
            ]);
            values.extend(t.counts.iter().chain(&t.sums).map(|n| Param::Int(*n)));
            values.extend([Param::Real(t.cost_usd), Param::Real(t.cost_counting_usd)]);
        }
        Self::write_rows(tx, "figure_groups", &columns, &format!("ON CONFLICT ({KEY}) DO UPDATE SET {set}"), &values)
            .await
    }

    /// Adds the groups of the cells `cells` selects (on `c`), set-based:
    /// the rebuild, a second computation of what the writes maintain.
    async fn add_groups(tx: &mut Tx, cells: &str) -> StorageResult<()> {
        let columns: Vec<&str> = COUNTS.iter().copied().chain(sums()).collect();
        let set = columns.iter().map(|c| format!("{c} = figure_groups.{c} + excluded.{c}")).collect::<Vec<_>>();
        // `WHERE TRUE`: SQLite reads `ON CONFLICT` after a bare `FROM (…)` as a join's.
        let sql = format!(
            "INSERT INTO figure_groups ({KEY}, {}) SELECT * FROM ({}) AS d WHERE TRUE ON CONFLICT ({KEY}) DO UPDATE SET {}",
            columns.join(", "),
            groups_sql(cells),
            set.join(", ")
        );
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut **tx).await?;
        Ok(())
    }

    /// Empties both tables and computes them again from every report, in `tx`.
    pub(in crate::db) async fn rebuild_figures(tx: &mut Tx) -> StorageResult<()> {
        sqlx::query(Self::FIGURES_LOCK).execute(&mut **tx).await?;
        sqlx::query("DELETE FROM figure_groups").execute(&mut **tx).await?;
        sqlx::query("DELETE FROM figure_cells").execute(&mut **tx).await?;
        sqlx::query(sqlx::AssertSqlSafe(cells_sql("TRUE"))).execute(&mut **tx).await?;
        Self::add_groups(tx, "TRUE").await?;
        sqlx::query("DELETE FROM figure_project_facts").execute(&mut **tx).await?;
        sqlx::query("DELETE FROM figure_facts").execute(&mut **tx).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO figure_facts (report_id, project_id, fact, n) {}",
            facts_select("TRUE")
        )))
        .execute(&mut **tx)
        .await?;
        sqlx::query(
            "INSERT INTO figure_project_facts (project_id, fact, n) \
             SELECT project_id, fact, CAST(SUM(n) AS BIGINT) FROM figure_facts GROUP BY project_id, fact",
        )
        .execute(&mut **tx)
        .await?;
        Self::rebuild_flows(tx).await?;
        Self::rebuild_values(tx).await?;
        Self::rebuild_periods(tx).await
    }

    /// Builds the rollups of a database that has reports but none yet (one
    /// written before migrations 22 to 25), and the throughput rollups of one
    /// whose migration emptied them (41); does nothing otherwise.
    pub(in crate::db) async fn ensure_figures(&self) -> StorageResult<()> {
        let missing = "SELECT EXISTS (SELECT 1 FROM reports) \
                       AND (NOT EXISTS (SELECT 1 FROM figure_cells) \
                       OR (NOT EXISTS (SELECT 1 FROM value_cells) AND EXISTS (SELECT 1 FROM attempts \
                       WHERE wall_seconds IS NOT NULL OR (cost_known AND cost_usd IS NOT NULL))) \
                       OR (NOT EXISTS (SELECT 1 FROM period_cells) AND EXISTS (SELECT 1 FROM attempts)))";
        // The throughput rollups alone are rebuilt alone: when a migration
        // that changed what they keep emptied them, or when they lack the
        // filing-day kinds (migration 41) that a counted report adds (a
        // process of an earlier version wrote a cell after the migration).
        // Only a public project's report adds them at level 0 (migration 43):
        // an install whose projects are all private has none there.
        let flows_missing = format!(
            "SELECT EXISTS (SELECT 1 FROM reports) AND (NOT EXISTS (SELECT 1 FROM flow_cells) \
             OR (EXISTS (SELECT 1 FROM flow_cells WHERE counted_day IS NOT NULL AND benchmark = 0 AND public = 1 \
             AND filed_day <> {}) \
             AND NOT EXISTS (SELECT 1 FROM flow_groups WHERE level = 0 AND kind = '{}')))",
            failpass_shared::figures::NO_DAY,
            failpass_shared::figures::FlowKind::FiledCounted.as_str()
        );
        let missing_now: bool = sqlx::query_scalar(missing).fetch_one(&self.write).await?;
        let flows_missing_now: bool =
            sqlx::query_scalar(sqlx::AssertSqlSafe(flows_missing.clone())).fetch_one(&self.write).await?;
        if !missing_now && !flows_missing_now {
            return Ok(());
        }
        let mut tx = self.write.begin().await?;
        sqlx::query(Self::FIGURES_LOCK).execute(&mut *tx).await?;
        // Another process may have built them while this one waited.
        if sqlx::query_scalar::<_, bool>(missing).fetch_one(&mut *tx).await? {
            Self::rebuild_figures(&mut tx).await?;
        } else if sqlx::query_scalar::<_, bool>(sqlx::AssertSqlSafe(flows_missing)).fetch_one(&mut *tx).await? {
            Self::rebuild_flows(&mut tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Compares the stored rollups with a rebuild from the raw rows; keeps
    /// the rebuild if `repair` and they differ.
    pub(in crate::db) async fn check_figures_now(&self, repair: bool) -> StorageResult<FigureCheck> {
        let mut tx = self.write.begin().await?;
        sqlx::query(Self::FIGURES_LOCK).execute(&mut *tx).await?;
        let mut stored = Self::group_rows(&mut tx).await?;
        stored.extend(Self::project_fact_rows(&mut tx).await?);
        stored.extend(Self::flow_rows(&mut tx).await?);
        stored.extend(Self::value_rows(&mut tx).await?);
        stored.extend(Self::period_rows(&mut tx).await?);
        let stored_cells = Self::cell_fingerprint(&mut tx).await?;
        Self::rebuild_figures(&mut tx).await?;
        let mut fresh = Self::group_rows(&mut tx).await?;
        fresh.extend(Self::project_fact_rows(&mut tx).await?);
        fresh.extend(Self::flow_rows(&mut tx).await?);
        fresh.extend(Self::value_rows(&mut tx).await?);
        fresh.extend(Self::period_rows(&mut tx).await?);
        let fresh_cells = Self::cell_fingerprint(&mut tx).await?;
        let mut differences = Vec::new();
        for (key, want) in &fresh {
            match stored.get(key) {
                Some(have) if close(have, want) => {}
                Some(have) => differences.push(format!("{key}: stored {have:?}, from the rows {want:?}")),
                None => differences.push(format!("{key}: missing, from the rows {want:?}")),
            }
        }
        for (key, have) in &stored {
            if !fresh.contains_key(key) {
                differences.push(format!("{key}: stored {have:?}, not in the rows"));
            }
        }
        if !close(&stored_cells.1, &fresh_cells.1) || stored_cells.0 != fresh_cells.0 {
            differences.push(format!(
                "cells: stored {} with sums {:?}, from the rows {} with sums {:?}",
                stored_cells.0, stored_cells.1, fresh_cells.0, fresh_cells.1
            ));
        }
        let differing = differences.len();
        differences.truncate(20);
        let repaired = repair && differing > 0;
        if repaired {
            tx.commit().await?;
        } else {
            tx.rollback().await?;
        }
        Ok(FigureCheck { groups: stored.len(), cells: stored_cells.0, differences, differing, repaired })
    }

    /// Every non-empty group, keyed by its key columns joined.
    async fn group_rows(tx: &mut Tx) -> StorageResult<std::collections::BTreeMap<String, Vec<f64>>> {
        let values = COUNTS.iter().copied().chain(sums()).map(|c| format!("CAST({c} AS DOUBLE PRECISION)"));
        let sql = format!(
            "SELECT goal || '|' || CAST(level AS TEXT) || '|' || CAST(span AS TEXT) || '|' || CAST(filed AS TEXT) \
             || '|' || CAST(project_id AS TEXT) || '|' || route || '|' || category \
             || '|' || CAST(vague AS TEXT) || '|' || agent || '|' || model || '|' || cutoff, {} \
             FROM figure_groups WHERE reports <> 0",
            values.collect::<Vec<_>>().join(", ")
        );
        use sqlx::Row;
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(&mut **tx).await?;
        let mut out = std::collections::BTreeMap::new();
        for row in rows {
            let key: String = row.try_get(0)?;
            let values =
                (1..=COUNTS.len() + sums().count()).map(|i| row.try_get::<f64, _>(i)).collect::<Result<_, _>>()?;
            out.insert(key, values);
        }
        Ok(out)
    }

    /// The oracle figures' counts per project, keyed like the groups.
    async fn project_fact_rows(tx: &mut Tx) -> StorageResult<std::collections::BTreeMap<String, Vec<f64>>> {
        let rows: Vec<(i64, String, i64)> =
            sqlx::query_as("SELECT project_id, fact, n FROM figure_project_facts WHERE n <> 0")
                .fetch_all(&mut **tx)
                .await?;
        Ok(rows.into_iter().map(|(p, f, n)| (format!("project {p}|{f}"), vec![n as f64])).collect())
    }

    /// Recomputes the facts of the reports in `list` (ids, comma-separated)
    /// and adds what their projects' sums move by to `delta`.
    /// With `appended`, the facts of those attempts are added to the stored ones.
    async fn fact_changes(tx: &mut Tx, list: &str, appended: Option<&str>, delta: &mut FactDelta) -> StorageResult<()> {
        use std::collections::BTreeMap;
        let old: Vec<(i64, i64, String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT report_id, project_id, fact, n FROM figure_facts WHERE report_id IN ({list})"
        )))
        .fetch_all(&mut **tx)
        .await?;
        let part: Vec<(i64, i64, String, i64)> =
            sqlx::query_as(sqlx::AssertSqlSafe(facts_select_of(&format!("r.id IN ({list})"), appended)))
                .fetch_all(&mut **tx)
                .await?;
        let new = match appended {
            None => part,
            Some(_) => {
                let mut sum: BTreeMap<(i64, String), (i64, i64)> = BTreeMap::new();
                for (r, p, f, n) in old.iter().cloned().chain(part) {
                    sum.entry((r, f)).or_insert((p, 0)).1 += n;
                }
                sum.into_iter().filter(|(_, (_, n))| *n != 0).map(|((r, f), (p, n))| (r, p, f, n)).collect()
            }
        };
        let key = |v: &[(i64, i64, String, i64)]| {
            let mut m: BTreeMap<i64, Vec<(i64, String, i64)>> = BTreeMap::new();
            for (r, p, f, n) in v {
                m.entry(*r).or_default().push((*p, f.clone(), *n));
            }
            m.values_mut().for_each(|v| v.sort());
            m
        };
        let (before, after) = (key(&old), key(&new));
        let changed: std::collections::BTreeSet<i64> =
            before.keys().chain(after.keys()).filter(|r| before.get(r) != after.get(r)).copied().collect();
        if changed.is_empty() {
            return Ok(());
        }
        for (sign, side) in [(-1, &before), (1, &after)] {
            for r in &changed {
                for (p, f, n) in side.get(r).into_iter().flatten() {
                    *delta.entry((*p, f.clone())).or_default() += sign * n;
                }
            }
        }
        let changed_list = changed.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
        sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM figure_facts WHERE report_id IN ({changed_list})")))
            .execute(&mut **tx)
            .await?;
        let mut values = Vec::new();
        for r in &changed {
            for (p, f, n) in after.get(r).into_iter().flatten() {
                values.extend([Param::Int(*r), Param::Int(*p), Param::Text(f), Param::Int(*n)]);
            }
        }
        Self::write_rows(tx, "figure_facts", &["report_id", "project_id", "fact", "n"], "", &values).await
    }

    /// Adds `delta` to the projects' facts.
    async fn move_facts(tx: &mut Tx, delta: &FactDelta) -> StorageResult<()> {
        let mut values = Vec::new();
        for ((p, f), n) in delta.iter().filter(|(_, n)| **n != 0) {
            values.extend([Param::Int(*p), Param::Text(f), Param::Int(*n)]);
        }
        Self::write_rows(
            tx,
            "figure_project_facts",
            &["project_id", "fact", "n"],
            "ON CONFLICT (project_id, fact) DO UPDATE SET n = figure_project_facts.n + excluded.n",
            &values,
        )
        .await
    }

    /// How many cells there are, and each sum over all of them.
    async fn cell_fingerprint(tx: &mut Tx) -> StorageResult<(i64, Vec<f64>)> {
        let totals = sums().map(|c| format!("CAST(COALESCE(SUM({c}), 0) AS DOUBLE PRECISION)"));
        let sql = format!("SELECT COUNT(*), {} FROM figure_cells", totals.collect::<Vec<_>>().join(", "));
        use sqlx::Row;
        let row = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_one(&mut **tx).await?;
        let n: i64 = row.try_get(0)?;
        let values = (1..=sums().count()).map(|i| row.try_get::<f64, _>(i)).collect::<Result<_, _>>()?;
        Ok((n, values))
    }
}

/// `INSERT` of the cells of the reports `reports` selects (on `r`).
fn cells_sql(reports: &str) -> String {
    format!("INSERT INTO figure_cells ({CELL_COLUMNS}) {}", cells_select(reports))
}

/// The cells of the reports `reports` selects (on `r`), computed from the
/// reports and their attempts, in [`CELL_COLUMNS`]' order.
fn cells_select(reports: &str) -> String {
    let filed = Engine::FILED_DAY;
    // The union's columns are named by its first part: the base cells'.
    let named = format!(
        "r.id AS report_id, g.goal AS goal, '' AS agent, '' AS model, '' AS cutoff, r.project_id AS project_id, \
         r.route AS route, r.category AS category, CAST(CASE WHEN r.vague THEN 1 ELSE 0 END AS BIGINT) AS vague, \
         CAST(CASE WHEN r.has_det_oracle THEN 1 ELSE 0 END AS BIGINT) AS det, \
         CAST(CASE WHEN r.oracle_source = 'in_patch_test' THEN 1 ELSE 0 END AS BIGINT) AS in_patch, \
         {filed} AS filed_day, {}, CAST(0.0 AS DOUBLE PRECISION) AS cost_usd, CAST(0.0 AS DOUBLE PRECISION) AS cost_counting_usd",
        INT_SUMS.iter().map(|c| format!("CAST(0 AS BIGINT) AS {c}")).collect::<Vec<_>>().join(", ")
    );
    format!(
        "SELECT {named} \
         FROM reports r CROSS JOIN (SELECT 'reproduce' AS goal UNION ALL SELECT 'fix') g WHERE {reports} \
         UNION ALL {}",
        attempt_cells_select(reports, &on_attempts(reports, "a"))
    )
}

/// The attempt cells of the reports `reports` selects (on `r`), of their
/// attempts `on_a` selects (on `a`), in [`CELL_COLUMNS`]' order.
fn attempt_cells_select(reports: &str, on_a: &str) -> String {
    let filed = Engine::FILED_DAY;
    format!(
        "SELECT r.id AS report_id, a.goal AS goal, a.agent AS agent, COALESCE(a.model, 'unknown') AS model, \
         {CUTOFF_KEY} AS cutoff, r.project_id AS project_id, r.route AS route, r.category AS category, \
         CAST(CASE WHEN r.vague THEN 1 ELSE 0 END AS BIGINT) AS vague, \
         CAST(CASE WHEN r.has_det_oracle THEN 1 ELSE 0 END AS BIGINT) AS det, \
         CAST(CASE WHEN r.oracle_source = 'in_patch_test' THEN 1 ELSE 0 END AS BIGINT) AS in_patch, \
         {filed} AS filed_day, {ATTEMPT_SUMS} \
         FROM reports r JOIN attempts a ON a.report_id = r.id WHERE {reports} AND {on_a} \
         GROUP BY r.id, a.goal, a.agent, COALESCE(a.model, 'unknown'), {CUTOFF_KEY}, r.project_id, r.route, r.category, \
         r.vague, r.has_det_oracle, r.oracle_source, r.filed_at"
    )
}

/// The cells `old` with the appended attempts' cells `part` added in.
fn with_appended(old: &[Cell], part: Vec<Cell>) -> Vec<Cell> {
    let mut cells = old.to_vec();
    for p in part {
        let same = |c: &&mut Cell| {
            (c.report_id, &c.goal, &c.agent, &c.model, &c.cutoff)
                == (p.report_id, &p.goal, &p.agent, &p.model, &p.cutoff)
        };
        match cells.iter_mut().find(same) {
            Some(c) => c.sums.add(&p.sums),
            None => cells.push(p),
        }
    }
    cells
}

/// The groups (key, counts, sums) of the cells `cells` selects (on `c`),
/// at every level.
fn groups_sql(cells: &str) -> String {
    let report_dims = "goal, project_id, route, category, vague, det, in_patch, filed_day";
    let levels: Vec<String> = (0..8u8)
        .flat_map(|level| SPANS.map(|span| (level, span)))
        .map(|(level, span)| {
            // The span's first day, as `span_start` computes it.
            let filed = match span {
                0 => "0".to_owned(),
                1 => format!("(x.filed_day / {BLOCK}) * {BLOCK}"),
                _ => "x.filed_day".to_owned(),
            };
            let keep = |bit: u8, column: &str| {
                if level & bit != 0 { format!("c.{column}") } else { "''".to_owned() }
            };
            let kept: Vec<String> = [(AGENT, "agent"), (MODEL, "model"), (CUTOFF, "cutoff")]
                .into_iter()
                .filter(|(bit, _)| level & bit != 0)
                .map(|(_, c)| format!(", c.{c}"))
                .collect();
            let inner_sums = sums().map(|c| format!("SUM(c.{c}) AS {c}")).collect::<Vec<_>>().join(", ");
            // The base cells count every report once at level 0; they hold
            // no attempt, so no attempt dimension's group has them.
            let base = if level == 0 { "" } else { " AND c.agent <> ''" };
            let outer_sums = sums()
                .map(|c| {
                    if c.starts_with("cost") {
                        format!("SUM(x.{c}) AS {c}")
                    } else {
                        format!("CAST(SUM(x.{c}) AS BIGINT) AS {c}")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "SELECT x.goal AS goal, {level} AS level, {span} AS span, {filed} AS filed, x.project_id AS project_id, \
                 x.route AS route, \
                 x.category AS category, x.vague AS vague, x.agent AS agent, x.model AS model, x.cutoff AS cutoff, \
                 {counts}, {outer_sums} \
                 FROM (SELECT c.report_id, {dims}, {agent} AS agent, {model} AS model, {cutoff} AS cutoff, {inner_sums} \
                 FROM figure_cells c WHERE {cells}{base} GROUP BY c.report_id, {dims}{kept}) x \
                 GROUP BY x.goal{by_filed}, x.project_id, x.route, x.category, x.vague, x.agent, x.model, x.cutoff",
                dims = report_dims.split(", ").map(|d| format!("c.{d}")).collect::<Vec<_>>().join(", "),
                counts = report_counts("x."),
                agent = keep(AGENT, "agent"),
                model = keep(MODEL, "model"),
                cutoff = keep(CUTOFF, "cutoff"),
                kept = kept.join(""),
                // Not `0`: a number in `GROUP BY` names a column.
                by_filed = if span == 0 { String::new() } else { format!(", {filed}") },
            )
        })
        .collect();
    levels.join(" UNION ALL ")
}

/// Two rows of figures equal but for float dust in the sums of costs.
fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-9 * x.abs().max(1.0))
}

/// One row of `figure_cells`.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
struct Cell {
    report_id: i64,
    goal: String,
    agent: String,
    model: String,
    cutoff: String,
    project_id: i64,
    route: String,
    category: String,
    vague: i64,
    det: i64,
    in_patch: i64,
    filed_day: i64,
    #[sqlx(flatten)]
    sums: Sums,
}

/// The reports whose cells differ between `old` and `new` (both as the
/// queries return them: a report's cells together).
fn changed_reports(old: &[Cell], new: &[Cell]) -> std::collections::BTreeSet<i64> {
    let (old, new) = (by_report(old), by_report(new));
    old.keys().chain(new.keys()).filter(|id| old.get(id) != new.get(id)).copied().collect()
}

/// Cells per report, each report's in a fixed order.
fn by_report(cells: &[Cell]) -> std::collections::BTreeMap<i64, Vec<&Cell>> {
    let mut m: std::collections::BTreeMap<i64, Vec<&Cell>> = std::collections::BTreeMap::new();
    for c in cells {
        m.entry(c.report_id).or_default().push(c);
    }
    for v in m.values_mut() {
        v.sort_by(|a, b| (&a.goal, &a.agent, &a.model, &a.cutoff).cmp(&(&b.goal, &b.agent, &b.model, &b.cutoff)));
    }
    m
}

/// A group's key in `figure_groups`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct GroupKey {
    goal: String,
    level: u8,
    span: u8,
    filed: i64,
    project_id: i64,
    route: String,
    category: String,
    vague: i64,
    agent: String,
    model: String,
    cutoff: String,
}

/// A group's counts ([`COUNTS`]) and sums, or a change to them.
#[derive(Debug, Clone, Default)]
struct Totals {
    counts: [i64; 6],
    sums: [i64; 10],
    cost_usd: f64,
    cost_counting_usd: f64,
}

impl Totals {
    fn is_zero(&self) -> bool {
        self.counts.iter().chain(&self.sums).all(|n| *n == 0) && self.cost_usd == 0.0 && self.cost_counting_usd == 0.0
    }
}

/// The change to the projects' facts: project, fact.
type FactDelta = std::collections::BTreeMap<(i64, String), i64>;

/// What one write moves in every rollup's groups, added up over all its
/// reports before any group is written.
#[derive(Default)]
struct Moves {
    groups: GroupDelta,
    facts: FactDelta,
    flows: super::flows::FlowDelta,
    values: super::values::ValueDelta,
    periods: super::periods::PeriodDelta,
}

/// The change to the groups, as cells are taken out (-1) and put in (+1).
#[derive(Default)]
struct GroupDelta(std::collections::BTreeMap<GroupKey, Totals>);

impl GroupDelta {
    /// Folds `cells` into their groups at every level, times `sign`: per
    /// report, the cells a group's level keeps apart are summed, and the
    /// report counts once in it (graded, reproduced, awaiting a review by
    /// those sums), as [`groups_sql`] computes it in SQL.
    fn add<'a>(&mut self, cells: impl Iterator<Item = &'a Cell>, sign: i64) {
        use std::collections::BTreeMap;
        let cells: Vec<&Cell> = cells.collect();
        for (level, span) in (0..8u8).flat_map(|level| SPANS.map(|span| (level, span))) {
            let keep = |bit: u8, v: &str| if level & bit != 0 { v.to_owned() } else { String::new() };
            let mut per_report: BTreeMap<(i64, GroupKey), (Totals, i64, i64)> = BTreeMap::new();
            for c in cells.iter().filter(|c| level == 0 || !c.agent.is_empty()) {
                let key = GroupKey {
                    goal: c.goal.clone(),
                    level,
                    span,
                    filed: span_start(span, c.filed_day),
                    project_id: c.project_id,
                    route: c.route.clone(),
                    category: c.category.clone(),
                    vague: c.vague,
                    agent: keep(AGENT, &c.agent),
                    model: keep(MODEL, &c.model),
                    cutoff: keep(CUTOFF, &c.cutoff),
                };
                let (t, det, in_patch) = per_report.entry((c.report_id, key)).or_default();
                for (s, n) in t.sums.iter_mut().zip(c.sums.ints()) {
                    *s += n;
                }
                t.cost_usd += c.sums.cost_usd;
                t.cost_counting_usd += c.sums.cost_counting_usd;
                (*det, *in_patch) = (c.det, c.in_patch);
            }
            for ((_, key), (t, det, in_patch)) in per_report {
                let g = self.0.entry(key).or_default();
                let [_, graded, counting, _, _, awaiting, ..] = t.sums;
                let report_counts = [
                    1,
                    i64::from(graded > 0),
                    i64::from(counting > 0),
                    i64::from(awaiting > 0 && counting == 0),
                    det,
                    in_patch,
                ];
                for (s, n) in g.counts.iter_mut().zip(report_counts) {
                    *s += sign * n;
                }
                for (s, n) in g.sums.iter_mut().zip(t.sums) {
                    *s += sign * n;
                }
                g.cost_usd += sign as f64 * t.cost_usd;
                g.cost_counting_usd += sign as f64 * t.cost_counting_usd;
            }
        }
    }
}

/// The facts of the reports `reports` selects (on `r`), as
/// `(report_id, project_id, fact, n)`: what the oracle figures count, as
/// the exact queries counted it (see `FigureStore::oracle_summary`).
pub(in crate::db) fn facts_select(reports: &str) -> String {
    facts_select_of(reports, None)
}

/// [`facts_select`], or with `appended` (attempt ids, comma-separated) the
/// part of those attempts alone: what they add to the causes and to the
/// LLM's checked leads (the reports' oracles are counted already).
fn facts_select_of(reports: &str, appended: Option<&str>) -> String {
    // A lead an LLM gave that a deterministic check graded: in place (the
    // attempt regraded, `llm_verdict` keeping the lead), or by a later
    // attempt on its report (one started at or after it); right when that
    // check reproduced it. "A later one exists" is "the newest one is not
    // older", read once a report (`dl`), not once an attempt: a report with
    // a thousand leads took 0.6 s to recount that way.
    let judged = "l.goal = 'reproduce' AND ((l.llm_verdict IS NOT NULL AND l.verdict_source = 'deterministic' \
         AND l.verdict IN ('reproduced', 'not_reproduced')) OR (l.llm_verdict IS NULL AND l.verdict_source = 'llm' \
         AND l.verdict IN ('lead', 'confirmed') AND dl.judged_at >= l.started_at))";
    let right = "CASE WHEN l.llm_verdict IS NOT NULL THEN CASE WHEN l.verdict = 'reproduced' THEN 1 ELSE 0 END \
         WHEN dl.right_at >= l.started_at THEN 1 ELSE 0 END";
    let newest = format!(
        "LEFT JOIN (SELECT d.report_id, \
         MAX(d.started_at) AS judged_at, MAX(CASE WHEN d.verdict = 'reproduced' THEN d.started_at END) AS right_at \
         FROM attempts d WHERE {} AND d.goal = 'reproduce' AND d.verdict_source = 'deterministic' \
         AND d.verdict IN ('reproduced', 'not_reproduced') GROUP BY d.report_id) dl ON dl.report_id = r.id",
        on_attempts(reports, "d")
    );
    let (on_a, on_l) = (on_attempts_of(reports, "a", appended), on_attempts_of(reports, "l", appended));
    let oracles = if appended.is_some() {
        String::new()
    } else {
        format!(
            "SELECT r.id AS report_id, r.project_id AS project_id, \
         'oracle:' || COALESCE(o.kind, '') || '|' || COALESCE(o.source, '') AS fact, CAST(COUNT(*) AS BIGINT) AS n \
         FROM reports r LEFT JOIN oracles o ON o.report_id = r.id WHERE {reports} \
         GROUP BY r.id, r.project_id, o.kind, o.source \
         UNION ALL \
         SELECT r.id, r.project_id, 'minutes:' || CAST(o.authoring_minutes AS TEXT), CAST(COUNT(*) AS BIGINT) \
         FROM reports r JOIN oracles o ON o.report_id = r.id \
         WHERE {reports} AND o.authoring_minutes IS NOT NULL \
         GROUP BY r.id, r.project_id, o.authoring_minutes \
         UNION ALL "
        )
    };
    let narrowed = reports_of(reports, appended);
    format!(
        "{oracles}SELECT r.id AS report_id, r.project_id AS project_id, 'cause:' || a.failure_cause AS fact, \
         CAST(COUNT(*) AS BIGINT) AS n \
         FROM reports r JOIN attempts a ON a.report_id = r.id \
         WHERE {narrowed} AND {on_a} AND a.failure_cause IS NOT NULL AND a.goal = 'reproduce' \
         GROUP BY r.id, r.project_id, a.failure_cause \
         UNION ALL \
         SELECT x.report_id, x.project_id, x.fact, x.n FROM ( \
           SELECT r.id AS report_id, r.project_id AS project_id, 'llm_judged' AS fact, CAST(COUNT(*) AS BIGINT) AS n \
           FROM reports r JOIN attempts l ON l.report_id = r.id {newest} WHERE {narrowed} AND {on_l} AND {judged} \
           GROUP BY r.id, r.project_id \
           UNION ALL \
           SELECT r.id, r.project_id, 'llm_right', CAST(SUM({right}) AS BIGINT) \
           FROM reports r JOIN attempts l ON l.report_id = r.id {newest} WHERE {narrowed} AND {on_l} AND {judged} \
           GROUP BY r.id, r.project_id) x WHERE x.n <> 0"
    )
}
