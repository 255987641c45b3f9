//! Distributions maintained as data arrives (issue 16): per report, its
//! attempts' costs and wall times counted in bins (`value_cells`), summed
//! per group at the figures' eight levels (`value_groups`, migration 24),
//! moved in the same transaction as the figures' rollups. The distributions
//! and their charts read the groups; `check-figures` rebuilds and compares
//! them with the rest.

use std::collections::BTreeMap;

use failpass_shared::api::figures::{DistributionQuery, Metric};
use failpass_shared::figures::{ValueBins, value_bin};
use failpass_shared::model::GroupBy;

use super::rollup_reads::push_group_filters;
use super::rollup_sums::CUTOFF_KEY;
use super::{Db, Engine, Tx};
use crate::db::dialect::{Dialect, Param};
use crate::db::figures::{AGENT, CUTOFF, MODEL, rollup_level};
use crate::db::{ProjectScope, StorageResult};

/// A cell's key columns, then its count and sum.
const CELL_COLUMNS: &str = "report_id, goal, agent, model, cutoff, metric, bin, project_id, route, n, total";

/// A cell's key: report, goal, agent, model, cutoff class, metric, bin.
type CellKey = (i64, String, String, String, String, &'static str, i64);
/// What a cell holds besides its key: project, route, count, sum.
type CellValue = (i64, String, i64, f64);

/// A group's key, its strings interned by [`ValueDelta`]: goal, metric,
/// level, project, route, agent, model, cutoff class, bin.
type GroupKey = (u32, u32, u8, i64, u32, u32, u32, u32, i64);

/// One row of `value_cells`, in [`CELL_COLUMNS`]' order.
#[derive(sqlx::FromRow)]
struct StoredCell {
    report_id: i64,
    goal: String,
    agent: String,
    model: String,
    cutoff: String,
    metric: String,
    bin: i64,
    project_id: i64,
    route: String,
    n: i64,
    total: f64,
}

/// The metrics, as the cells name them.
const METRICS: [Metric; 2] = [Metric::CostUsd, Metric::WallSeconds];

/// The attempts of the reports `reports` selects (on `r`), with what their
/// cells are keyed by.
fn attempts_select(reports: &str) -> String {
    attempts_select_of(reports, None)
}

/// [`attempts_select`], narrowed to the attempts `appended` names (ids, comma-separated).
fn attempts_select_of(reports: &str, appended: Option<&str>) -> String {
    format!(
        "SELECT r.id AS report_id, a.goal AS goal, a.agent AS agent, COALESCE(a.model, 'unknown') AS model, \
         {CUTOFF_KEY} AS cutoff, r.project_id AS project_id, r.route AS route, \
         CAST(CASE WHEN a.cost_known THEN a.cost_usd END AS DOUBLE PRECISION) AS cost_usd, \
         CAST(a.wall_seconds AS DOUBLE PRECISION) AS wall_seconds \
         FROM reports r JOIN attempts a ON a.report_id = r.id WHERE {narrowed} AND {on_a} ORDER BY a.id",
        narrowed = super::rollup_sums::reports_of(reports, appended),
        on_a = super::rollup_sums::on_attempts_of(reports, "a", appended)
    )
}

/// The value cells of the attempts `sql` ([`attempts_select_of`]) reads,
/// as its rows come ([`Dialect::each_row`]): a row's strings are read in
/// place and interned, and its cell found by integer key (a batch of an
/// import reads 25,000 attempts, two values each). Each cell's sum adds its
/// attempts in the order of their ids, as every computation of it does.
async fn cells_of(tx: &mut Tx, sql: String) -> StorageResult<BTreeMap<CellKey, CellValue>> {
    type Key = (i64, [u32; 4], u8, i64);
    let mut names = Interner::default();
    let mut cells: rustc_hash::FxHashMap<Key, (i64, u32, i64, f64)> = rustc_hash::FxHashMap::default();
    Engine::each_row(tx, &sql, &mut |row| {
        let report = row.int(0)?;
        let mut dims = [0u32; 4];
        for (i, dim) in dims.iter_mut().enumerate() {
            *dim = names.id(row.text(i + 1)?);
        }
        for (m, metric) in METRICS.iter().enumerate() {
            let Some(v) = row.real(7 + m)?.filter(|v| v.is_finite()) else { continue };
            let cell = match cells.entry((report, dims, m as u8, value_bin(*metric, v))) {
                std::collections::hash_map::Entry::Occupied(cell) => cell.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert((row.int(5)?, names.id(row.text(6)?), 0, 0.0))
                }
            };
            cell.2 += 1;
            cell.3 += v;
        }
        Ok(())
    })
    .await?;
    let name = |id: u32| names.name(id).to_owned();
    Ok(cells
        .into_iter()
        .map(|((report, [goal, agent, model, cutoff], m, bin), (project, route, n, total))| {
            let key = (report, name(goal), name(agent), name(model), name(cutoff), METRICS[m as usize].as_str(), bin);
            (key, (project, name(route), n, total))
        })
        .collect())
}

/// Strings numbered in the order they are first seen; id 0 is `''` (a
/// summed dimension, in [`ValueDelta`]'s keys).
struct Interner {
    ids: rustc_hash::FxHashMap<String, u32>,
    names: Vec<String>,
}

impl Default for Interner {
    fn default() -> Self {
        Self { ids: [(String::new(), 0)].into_iter().collect(), names: vec![String::new()] }
    }
}

impl Interner {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), id);
        id
    }

    fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }
}

/// Cells per report, in key order.
fn per_report(cells: &BTreeMap<CellKey, CellValue>) -> BTreeMap<i64, Vec<(&CellKey, &CellValue)>> {
    let mut m: BTreeMap<i64, Vec<(&CellKey, &CellValue)>> = BTreeMap::new();
    for (k, v) in cells {
        m.entry(k.0).or_default().push((k, v));
    }
    m
}

/// The change to the groups as cells are taken out (-1) and put in (+1).
/// A batch moves each cell at eight levels, so the groups' strings are
/// interned once and the keys hashed as integers.
#[derive(Default)]
pub(super) struct ValueDelta {
    groups: rustc_hash::FxHashMap<GroupKey, (i64, f64)>,
    names: Interner,
}

impl ValueDelta {
    fn add(&mut self, key: &CellKey, value: &CellValue, sign: i64) {
        let (_, goal, agent, model, cutoff, metric, bin) = key;
        let (project, route, n, total) = value;
        let [goal, metric, route, agent, model, cutoff] =
            [goal, *metric, route, agent, model, cutoff].map(|s| self.names.id(s));
        for level in 0..8u8 {
            let keep = |bit: u8, id: u32| if level & bit != 0 { id } else { 0 };
            let key = (
                goal,
                metric,
                level,
                *project,
                route,
                keep(AGENT, agent),
                keep(MODEL, model),
                keep(CUTOFF, cutoff),
                *bin,
            );
            let g = self.groups.entry(key).or_default();
            g.0 += sign * n;
            g.1 += sign as f64 * total;
        }
    }

    /// The groups that moved (writers take the figures' lock before they
    /// move any, so their order is for the index's sake alone).
    fn moves(&self) -> Vec<(&GroupKey, &(i64, f64))> {
        self.groups.iter().filter(|(_, (n, t))| *n != 0 || *t != 0.0).collect()
    }
}

impl Engine {
    /// Recomputes the value cells of the reports in `list` (ids,
    /// comma-separated) and adds what their groups move by to `delta`, in
    /// `tx` (which holds the figures' lock); [`Self::move_values`] applies it.
    /// With `appended` (attempt ids, comma-separated), those attempts' cells
    /// are added to the stored ones instead, and to the groups.
    pub(super) async fn value_changes(
        tx: &mut Tx,
        list: &str,
        appended: Option<&str>,
        delta: &mut ValueDelta,
    ) -> StorageResult<()> {
        if appended.is_some() {
            // What the appended attempts add is what the groups move by:
            // their cells are added to the stored ones in place, and the
            // report's other cells (a hundred and fifty a report at a
            // million attempts) are neither read nor written again.
            let part = cells_of(tx, attempts_select_of(&format!("r.id IN ({list})"), appended)).await?;
            for (k, v) in &part {
                delta.add(k, v, 1);
            }
            return Self::add_value_cells(tx, &part.iter().collect::<Vec<_>>()).await;
        }
        let old: Vec<StoredCell> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {CELL_COLUMNS} FROM value_cells WHERE report_id IN ({list})"
        )))
        .fetch_all(&mut **tx)
        .await?;
        let new = cells_of(tx, attempts_select(&format!("r.id IN ({list})"))).await?;
        let mut old_cells: BTreeMap<CellKey, CellValue> = BTreeMap::new();
        for c in old {
            let metric = METRICS.iter().find(|m| m.as_str() == c.metric).map_or("", |m| m.as_str());
            old_cells.insert(
                (c.report_id, c.goal, c.agent, c.model, c.cutoff, metric, c.bin),
                (c.project_id, c.route, c.n, c.total),
            );
        }
        // A report's cells change together: compare them per report.
        let (before, after) = (per_report(&old_cells), per_report(&new));
        let changed: std::collections::BTreeSet<i64> =
            before.keys().chain(after.keys()).filter(|r| before.get(r) != after.get(r)).copied().collect();
        if changed.is_empty() {
            return Ok(());
        }
        for (sign, side) in [(-1, &before), (1, &after)] {
            for r in &changed {
                for (k, v) in side.get(r).into_iter().flatten() {
                    delta.add(k, v, sign);
                }
            }
        }
        let changed_list = changed.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
        sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM value_cells WHERE report_id IN ({changed_list})")))
            .execute(&mut **tx)
            .await?;
        let inserts: Vec<(&CellKey, &CellValue)> =
            changed.iter().flat_map(|r| after.get(r).into_iter().flatten().copied()).collect();
        Self::insert_value_cells(tx, &inserts).await
    }

    async fn insert_value_cells(tx: &mut Tx, cells: &[(&CellKey, &CellValue)]) -> StorageResult<()> {
        Self::write_value_cells(tx, cells, "").await
    }

    /// Adds `cells` to the stored cells of the same key (a new key is stored
    /// as it is). A cell's sum becomes its stored sum plus theirs; a recount
    /// adds the same values one at a time, equal within rounding, which is
    /// how `check-figures` compares them.
    async fn add_value_cells(tx: &mut Tx, cells: &[(&CellKey, &CellValue)]) -> StorageResult<()> {
        Self::write_value_cells(
            tx,
            cells,
            "ON CONFLICT (report_id, goal, agent, model, cutoff, metric, bin) \
             DO UPDATE SET n = value_cells.n + excluded.n, total = value_cells.total + excluded.total",
        )
        .await
    }

    async fn write_value_cells(tx: &mut Tx, cells: &[(&CellKey, &CellValue)], conflict: &str) -> StorageResult<()> {
        let mut values = Vec::with_capacity(cells.len() * 11);
        for ((r, goal, agent, model, cutoff, metric, bin), (project, route, n, total)) in cells {
            values.extend([
                Param::Int(*r),
                Param::Text(goal),
                Param::Text(agent),
                Param::Text(model),
                Param::Text(cutoff),
                Param::Text(metric),
                Param::Int(*bin),
                Param::Int(*project),
                Param::Text(route),
                Param::Int(*n),
                Param::Real(*total),
            ]);
        }
        Self::write_rows(tx, "value_cells", &CELL_COLUMNS.split(", ").collect::<Vec<_>>(), conflict, &values).await
    }

    /// Adds `delta` to the groups, in the order of their key.
    pub(super) async fn move_values(tx: &mut Tx, delta: &ValueDelta) -> StorageResult<()> {
        let name = |id: &u32| delta.names.name(*id);
        let mut moves = delta.moves();
        moves.sort_by(|(a, _), (b, _)| {
            // The table's key order (migration 44): agent, model, cutoff and bin before project and route.
            let key =
                |k: &&GroupKey| (name(&k.0), name(&k.1), k.2, name(&k.5), name(&k.6), name(&k.7), k.8, k.3, name(&k.4));
            key(a).cmp(&key(b))
        });
        let mut values = Vec::with_capacity(moves.len() * 11);
        for ((goal, metric, level, project, route, agent, model, cutoff, bin), (n, t)) in moves {
            values.extend([
                Param::Text(name(goal)),
                Param::Text(name(metric)),
                Param::Int(i64::from(*level)),
                Param::Int(*project),
                Param::Text(name(route)),
                Param::Text(name(agent)),
                Param::Text(name(model)),
                Param::Text(name(cutoff)),
                Param::Int(*bin),
                Param::Int(*n),
                Param::Real(*t),
            ]);
        }
        Self::write_rows(
            tx,
            "value_groups",
            &["goal", "metric", "level", "project_id", "route", "agent", "model", "cutoff", "bin", "n", "total"],
            "ON CONFLICT (goal, metric, level, project_id, route, agent, model, cutoff, bin) \
             DO UPDATE SET n = value_groups.n + excluded.n, total = value_groups.total + excluded.total",
            &values,
        )
        .await
    }

    /// Empties both tables and computes them again from every attempt, a
    /// few thousand reports at a time, in `tx`.
    pub(in crate::db) async fn rebuild_values(tx: &mut Tx) -> StorageResult<()> {
        sqlx::query("DELETE FROM value_groups").execute(&mut **tx).await?;
        sqlx::query("DELETE FROM value_cells").execute(&mut **tx).await?;
        let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM reports ORDER BY id").fetch_all(&mut **tx).await?;
        let mut delta = ValueDelta::default();
        for chunk in ids.chunks(5000) {
            let (lo, hi) = (chunk[0], chunk[chunk.len() - 1]);
            let cells = cells_of(tx, attempts_select(&format!("r.id BETWEEN {lo} AND {hi}"))).await?;
            for (k, v) in &cells {
                delta.add(k, v, 1);
            }
            Self::insert_value_cells(tx, &cells.iter().collect::<Vec<_>>()).await?;
        }
        Self::move_values(tx, &delta).await
    }

    /// Every non-empty group, keyed like the figures' groups, and the cells'
    /// count and sums.
    pub(in crate::db) async fn value_rows(tx: &mut Tx) -> StorageResult<BTreeMap<String, Vec<f64>>> {
        let rows: Vec<(String, i64, f64)> = sqlx::query_as(
            "SELECT goal || '|' || metric || '|' || CAST(level AS TEXT) || '|' || CAST(project_id AS TEXT) || '|' \
             || route || '|' || agent || '|' || model || '|' || cutoff || '|' || CAST(bin AS TEXT), n, total \
             FROM value_groups WHERE n <> 0",
        )
        .fetch_all(&mut **tx)
        .await?;
        let mut out: BTreeMap<String, Vec<f64>> =
            rows.into_iter().map(|(key, n, t)| (format!("values {key}"), vec![n as f64, t])).collect();
        let (cells, n, total, bins): (i64, Option<i64>, Option<f64>, Option<i64>) = sqlx::query_as(
            "SELECT COUNT(*), CAST(SUM(n) AS BIGINT), CAST(SUM(total) AS DOUBLE PRECISION), \
             CAST(SUM(bin * n + report_id) AS BIGINT) FROM value_cells",
        )
        .fetch_one(&mut **tx)
        .await?;
        out.insert(
            "values cells".into(),
            vec![cells as f64, n.unwrap_or(0) as f64, total.unwrap_or(0.0), bins.unwrap_or(0) as f64],
        );
        Ok(out)
    }

    /// The bins per group `query` asks for, from the groups; `None` when it
    /// needs what they do not keep (a category or vagueness, a week or
    /// month, a status, label, verdict, text or date filter).
    pub(in crate::db) async fn value_totals_now(
        &self,
        query: &DistributionQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Option<BTreeMap<String, ValueBins>>> {
        let q = &query.figures;
        let Some(level) = rollup_level(q) else { return Ok(None) };
        let key = match q.group_by {
            GroupBy::None => "'all'",
            GroupBy::Project => "p.slug",
            GroupBy::Route => "g.route",
            GroupBy::Agent => "g.agent",
            GroupBy::Model => "g.model",
            GroupBy::Cutoff => "g.cutoff",
            _ => return Ok(None),
        };
        if !q.then_by.is_empty() {
            return Ok(None);
        }
        let mut qb = sqlx::QueryBuilder::<Db>::new(format!(
            "SELECT {key} AS key, g.bin, CAST(SUM(g.n) AS BIGINT), CAST(SUM(g.total) AS DOUBLE PRECISION) \
             FROM value_groups g JOIN projects p ON p.id = g.project_id WHERE g.goal = "
        ));
        qb.push_bind(q.goal.as_str());
        qb.push(" AND g.metric = ").push_bind(query.metric.as_str());
        push_group_filters(&mut qb, q, level, scope);
        // Grouped in the key's order (migration 44) where the key is among
        // its first columns, so the rows are summed as they are read; a
        // filter by agent or model keeps that column too, so a key's bin can
        // come in more than one row, added here.
        qb.push(match q.group_by {
            GroupBy::Project | GroupBy::Route => " GROUP BY 1, 2",
            _ => " GROUP BY g.agent, g.model, g.cutoff, g.bin",
        });
        let rows: Vec<(String, i64, i64, f64)> = qb.build_query_as().fetch_all(&self.read).await?;
        let mut out: BTreeMap<String, ValueBins> = BTreeMap::new();
        for (key, bin, n, total) in rows {
            let cell = out.entry(key).or_default().0.entry(bin).or_insert((0, 0.0));
            cell.0 += n.max(0) as u64;
            cell.1 += total;
        }
        // A bin whose values all left (a group's row of zeros) is no bin.
        for bins in out.values_mut() {
            bins.0.retain(|_, (n, _)| *n > 0);
        }
        out.retain(|_, bins| !bins.0.is_empty());
        Ok(Some(out))
    }
}
