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
//! emptied that way keep a row of zeros, which reads skip.

use crate::db::dialect::Dialect;
use crate::db::figures::{AGENT, CUTOFF, FigureCheck, MODEL, rollup_level};
use crate::db::{ProjectScope, StorageResult};
use failpass_shared::api::figures::FiguresQuery;
use failpass_shared::figures::GroupTotals;
use failpass_shared::model::GroupBy;

use super::{Db, Engine, Tx};

/// A cell's sums, as they are added up at every level.
const SUMS: [&str; 12] = [
    "attempts",
    "graded",
    "counting",
    "leads",
    "errors",
    "awaiting",
    "cost_usd",
    "cost_counting_usd",
    "without_cost",
    "counting_without_cost",
    "api_calls",
    "with_api_calls",
];

/// A group's key columns.
const KEY: &str = "goal, level, project_id, route, category, vague, agent, model, cutoff";

/// A group's per-report counts, then [`SUMS`].
const COUNTS: [&str; 6] =
    ["reports", "reports_graded", "reports_reproduced", "reports_awaiting", "reports_with_oracle", "reports_in_patch"];

/// An attempt's cutoff class, as the exact figures compute it.
pub(in crate::db) const CUTOFF_KEY: &str = "CASE WHEN a.model_cutoff IS NULL THEN 'unknown' \
     WHEN r.filed_at < a.model_cutoff THEN 'before_cutoff' ELSE 'after_cutoff' END";

impl Engine {
    /// Recomputes the figures' cells of `ids` and moves their groups by the
    /// difference, in `tx`.
    pub(in crate::db) async fn refresh_figures(tx: &mut Tx, ids: &[i64]) -> StorageResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        // Writers on many machines take the groups one at a time.
        sqlx::query(Self::FIGURES_LOCK).execute(&mut **tx).await?;
        for chunk in ids.chunks(500) {
            let list = chunk.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
            let cells = format!("c.report_id IN ({list})");
            let reports = format!("r.id IN ({list})");
            Self::move_groups(tx, &cells, "-").await?;
            sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM figure_cells AS c WHERE {cells}")))
                .execute(&mut **tx)
                .await?;
            sqlx::query(sqlx::AssertSqlSafe(cells_sql(&reports))).execute(&mut **tx).await?;
            Self::move_groups(tx, &cells, "+").await?;
        }
        Ok(())
    }

    /// Adds (`+`) or takes away (`-`) the groups of the cells `cells` selects.
    async fn move_groups(tx: &mut Tx, cells: &str, sign: &str) -> StorageResult<()> {
        let delta = groups_sql(cells);
        let columns: Vec<&str> = COUNTS.iter().chain(SUMS.iter()).copied().collect();
        let sql = if sign == "-" {
            let set = columns.iter().map(|c| format!("{c} = figure_groups.{c} - d.{c}")).collect::<Vec<_>>();
            let on = KEY.split(", ").map(|k| format!("figure_groups.{k} = d.{k}")).collect::<Vec<_>>();
            format!("UPDATE figure_groups SET {} FROM ({delta}) AS d WHERE {}", set.join(", "), on.join(" AND "))
        } else {
            let set = columns.iter().map(|c| format!("{c} = figure_groups.{c} + excluded.{c}")).collect::<Vec<_>>();
            // `WHERE TRUE`: SQLite reads `ON CONFLICT` after a bare `FROM (…)` as a join's.
            format!(
                "INSERT INTO figure_groups ({KEY}, {}) SELECT * FROM ({delta}) AS d WHERE TRUE \
                 ON CONFLICT ({KEY}) DO UPDATE SET {}",
                columns.join(", "),
                set.join(", ")
            )
        };
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut **tx).await?;
        Ok(())
    }

    /// Empties both tables and computes them again from every report, in `tx`.
    pub(in crate::db) async fn rebuild_figures(tx: &mut Tx) -> StorageResult<()> {
        sqlx::query(Self::FIGURES_LOCK).execute(&mut **tx).await?;
        sqlx::query("DELETE FROM figure_groups").execute(&mut **tx).await?;
        sqlx::query("DELETE FROM figure_cells").execute(&mut **tx).await?;
        sqlx::query(sqlx::AssertSqlSafe(cells_sql("TRUE"))).execute(&mut **tx).await?;
        Self::move_groups(tx, "TRUE", "+").await
    }

    /// Builds the rollups of a database that has reports but none yet (one
    /// written before migration 22); does nothing otherwise.
    pub(in crate::db) async fn ensure_figures(&self) -> StorageResult<()> {
        let missing = "SELECT EXISTS (SELECT 1 FROM reports) AND NOT EXISTS (SELECT 1 FROM figure_cells)";
        let missing_now: bool = sqlx::query_scalar(missing).fetch_one(&self.write).await?;
        if !missing_now {
            return Ok(());
        }
        let mut tx = self.write.begin().await?;
        sqlx::query(Self::FIGURES_LOCK).execute(&mut *tx).await?;
        // Another process may have built them while this one waited.
        if sqlx::query_scalar::<_, bool>(missing).fetch_one(&mut *tx).await? {
            Self::rebuild_figures(&mut tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Compares the stored rollups with a rebuild from the raw rows; keeps
    /// the rebuild if `repair` and they differ.
    pub(in crate::db) async fn check_figures_now(&self, repair: bool) -> StorageResult<FigureCheck> {
        let mut tx = self.write.begin().await?;
        sqlx::query(Self::FIGURES_LOCK).execute(&mut *tx).await?;
        let stored = Self::group_rows(&mut tx).await?;
        let stored_cells = Self::cell_fingerprint(&mut tx).await?;
        Self::rebuild_figures(&mut tx).await?;
        let fresh = Self::group_rows(&mut tx).await?;
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
        let values = COUNTS.iter().chain(SUMS.iter()).map(|c| format!("CAST({c} AS DOUBLE PRECISION)"));
        let sql = format!(
            "SELECT goal || '|' || CAST(level AS TEXT) || '|' || CAST(project_id AS TEXT) || '|' || route || '|' || category \
             || '|' || CAST(vague AS TEXT) || '|' || agent || '|' || model || '|' || cutoff, {} \
             FROM figure_groups WHERE reports <> 0",
            values.collect::<Vec<_>>().join(", ")
        );
        use sqlx::Row;
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_all(&mut **tx).await?;
        let mut out = std::collections::BTreeMap::new();
        for row in rows {
            let key: String = row.try_get(0)?;
            let values = (1..=COUNTS.len() + SUMS.len()).map(|i| row.try_get::<f64, _>(i)).collect::<Result<_, _>>()?;
            out.insert(key, values);
        }
        Ok(out)
    }

    /// How many cells there are, and each sum over all of them.
    async fn cell_fingerprint(tx: &mut Tx) -> StorageResult<(i64, Vec<f64>)> {
        let sums = SUMS.iter().map(|c| format!("CAST(COALESCE(SUM({c}), 0) AS DOUBLE PRECISION)"));
        let sql = format!("SELECT COUNT(*), {} FROM figure_cells", sums.collect::<Vec<_>>().join(", "));
        use sqlx::Row;
        let row = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch_one(&mut **tx).await?;
        let n: i64 = row.try_get(0)?;
        let values = (1..=SUMS.len()).map(|i| row.try_get::<f64, _>(i)).collect::<Result<_, _>>()?;
        Ok((n, values))
    }

    /// The totals per group `query` asks for, from the rollups; `None` when
    /// the query needs what they do not keep (a week or month, a status,
    /// label, verdict, text or date filter), which the exact path answers.
    pub(in crate::db) async fn rollup_totals(
        &self,
        query: &FiguresQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Option<Vec<(String, GroupTotals)>>> {
        let Some(level) = rollup_level(query) else { return Ok(None) };
        let dims = query.dimensions();
        let part = |i: usize| {
            dims.get(i).map_or("CAST(NULL AS TEXT)", |d| match d {
                GroupBy::None => "'all'",
                GroupBy::Project => "p.slug",
                GroupBy::Route => "g.route",
                GroupBy::Category => "g.category",
                GroupBy::Vagueness => "CASE WHEN g.vague = 1 THEN 'vague' ELSE 'clear' END",
                GroupBy::Agent => "g.agent",
                GroupBy::Model => "g.model",
                _ => "g.cutoff",
            })
        };
        let ints = COUNTS.iter().chain(&SUMS[..6]).chain(&SUMS[8..]);
        let mut select: Vec<String> = ints.map(|c| format!("CAST(SUM(g.{c}) AS BIGINT) AS {c}")).collect();
        select.push("CAST(SUM(g.cost_usd) AS DOUBLE PRECISION) AS cost_usd".into());
        select.push("CAST(SUM(g.cost_counting_usd) AS DOUBLE PRECISION) AS cost_counting_usd".into());
        let mut qb = sqlx::QueryBuilder::<Db>::new(format!(
            "SELECT {} AS key, {} AS key1, {} AS key2, {} FROM figure_groups g JOIN projects p ON p.id = g.project_id \
             WHERE g.goal = ",
            part(0),
            part(1),
            part(2),
            select.join(", ")
        ));
        qb.push_bind(query.goal.as_str());
        qb.push(" AND g.level = ").push_bind(i64::from(level));
        qb.push(" AND ").push(scope.sql("p"));
        if let Some(v) = &query.filter.project {
            qb.push(" AND p.slug = ").push_bind(v.clone());
        }
        if let Some(v) = query.filter.route {
            qb.push(" AND g.route = ").push_bind(v.as_str());
        }
        if let Some(v) = &query.agent {
            qb.push(" AND g.agent = ").push_bind(v.clone());
        }
        if let Some(v) = &query.model {
            qb.push(" AND g.model = ").push_bind(v.clone());
        }
        qb.push(" GROUP BY 1, 2, 3 HAVING SUM(g.reports) > 0");
        use sqlx::Row;
        let rows = qb.build().fetch_all(&self.read).await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let n = |c: &str| row.try_get::<i64, _>(c).map(|v| v.max(0) as u64);
            let totals = GroupTotals {
                reports: n("reports")?,
                reports_graded: n("reports_graded")?,
                reports_reproduced: n("reports_reproduced")?,
                reports_awaiting_review: n("reports_awaiting")?,
                reports_with_oracle: n("reports_with_oracle")?,
                reports_in_patch_test: n("reports_in_patch")?,
                attempts: n("attempts")?,
                attempts_graded: n("graded")?,
                attempts_counting: n("counting")?,
                attempts_lead: n("leads")?,
                attempts_error: n("errors")?,
                attempts_awaiting_review: n("awaiting")?,
                cost_usd: row.try_get("cost_usd")?,
                cost_counting_usd: row.try_get("cost_counting_usd")?,
                attempts_without_cost: n("without_cost")?,
                attempts_counting_without_cost: n("counting_without_cost")?,
                api_calls: n("api_calls")?,
                attempts_with_api_calls: n("with_api_calls")?,
            };
            let key = failpass_shared::figures::join_key_parts(
                row.try_get("key")?,
                row.try_get("key1")?,
                row.try_get("key2")?,
            );
            out.push((key, totals));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Some(out))
    }
}

/// `INSERT` of the cells of the reports `reports` selects (on `r`).
fn cells_sql(reports: &str) -> String {
    let flags = "r.project_id, r.route, r.category, CASE WHEN r.vague THEN 1 ELSE 0 END, \
                 CASE WHEN r.has_det_oracle THEN 1 ELSE 0 END, \
                 CASE WHEN r.oracle_source = 'in_patch_test' THEN 1 ELSE 0 END";
    format!(
        "INSERT INTO figure_cells (report_id, goal, agent, model, cutoff, project_id, route, category, vague, det, in_patch, {sums}) \
         SELECT r.id, g.goal, '', '', '', {flags}, 0, 0, 0, 0, 0, 0, 0.0, 0.0, 0, 0, 0, 0 \
         FROM reports r CROSS JOIN (SELECT 'reproduce' AS goal UNION ALL SELECT 'fix') g WHERE {reports} \
         UNION ALL \
         SELECT r.id, a.goal, a.agent, COALESCE(a.model, 'unknown'), {CUTOFF_KEY}, {flags}, \
         COUNT(*), SUM(CASE WHEN a.graded THEN 1 ELSE 0 END), SUM(CASE WHEN a.counts THEN 1 ELSE 0 END), \
         SUM(CASE WHEN a.verdict = 'lead' THEN 1 ELSE 0 END), SUM(CASE WHEN a.verdict = 'error' THEN 1 ELSE 0 END), \
         SUM(CASE WHEN a.awaiting THEN 1 ELSE 0 END), SUM(a.cost_usd), SUM(CASE WHEN a.counts THEN a.cost_usd ELSE 0.0 END), \
         SUM(CASE WHEN a.cost_known THEN 0 ELSE 1 END), SUM(CASE WHEN a.counts AND NOT a.cost_known THEN 1 ELSE 0 END), \
         COALESCE(SUM(a.api_calls), 0), COUNT(a.api_calls) \
         FROM reports r JOIN attempts a ON a.report_id = r.id WHERE {reports} \
         GROUP BY r.id, a.goal, a.agent, COALESCE(a.model, 'unknown'), {CUTOFF_KEY}, r.project_id, r.route, r.category, \
         r.vague, r.has_det_oracle, r.oracle_source",
        sums = SUMS.join(", ")
    )
}

/// The groups (key, counts, sums) of the cells `cells` selects (on `c`),
/// at every level.
fn groups_sql(cells: &str) -> String {
    let report_dims = "goal, project_id, route, category, vague, det, in_patch";
    let levels: Vec<String> = (0..8u8)
        .map(|level| {
            let keep = |bit: u8, column: &str| {
                if level & bit != 0 { format!("c.{column}") } else { "''".to_owned() }
            };
            let kept: Vec<String> = [(AGENT, "agent"), (MODEL, "model"), (CUTOFF, "cutoff")]
                .into_iter()
                .filter(|(bit, _)| level & bit != 0)
                .map(|(_, c)| format!(", c.{c}"))
                .collect();
            let inner_sums = SUMS.iter().map(|c| format!("SUM(c.{c}) AS {c}")).collect::<Vec<_>>().join(", ");
            // The base cells count every report once at level 0; they hold
            // no attempt, so no attempt dimension's group has them.
            let base = if level == 0 { "" } else { " AND c.agent <> ''" };
            let outer_sums = SUMS
                .iter()
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
                "SELECT x.goal AS goal, {level} AS level, x.project_id AS project_id, x.route AS route, \
                 x.category AS category, x.vague AS vague, x.agent AS agent, x.model AS model, x.cutoff AS cutoff, \
                 COUNT(*) AS reports, SUM(CASE WHEN x.graded > 0 THEN 1 ELSE 0 END) AS reports_graded, \
                 SUM(CASE WHEN x.counting > 0 THEN 1 ELSE 0 END) AS reports_reproduced, \
                 SUM(CASE WHEN x.awaiting > 0 AND x.counting = 0 THEN 1 ELSE 0 END) AS reports_awaiting, \
                 CAST(SUM(x.det) AS BIGINT) AS reports_with_oracle, CAST(SUM(x.in_patch) AS BIGINT) AS reports_in_patch, \
                 {outer_sums} \
                 FROM (SELECT c.report_id, {dims}, {agent} AS agent, {model} AS model, {cutoff} AS cutoff, {inner_sums} \
                 FROM figure_cells c WHERE {cells}{base} GROUP BY c.report_id, {dims}{kept}) x \
                 GROUP BY x.goal, x.project_id, x.route, x.category, x.vague, x.agent, x.model, x.cutoff",
                dims = report_dims.split(", ").map(|d| format!("c.{d}")).collect::<Vec<_>>().join(", "),
                agent = keep(AGENT, "agent"),
                model = keep(MODEL, "model"),
                cutoff = keep(CUTOFF, "cutoff"),
                kept = kept.join(""),
            )
        })
        .collect();
    levels.join(" UNION ALL ")
}

/// Two rows of figures equal but for float dust in the sums of costs.
fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-9 * x.abs().max(1.0))
}
