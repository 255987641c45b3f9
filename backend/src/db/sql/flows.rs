//! Throughput maintained as data arrives (issue 16): what each report adds
//! to the weekly flows, the backlog and the time to reproduction
//! (`failpass_shared::figures::FlowFacts`), kept per report in `flow_cells`
//! and summed per group in `flow_groups` (migration 23), in the same
//! transaction as every write that changes a report's status, dates, route
//! or route check. Throughput, the glance and the status pages read the
//! groups; `check-figures` rebuilds and compares them with the rest.

use std::collections::BTreeMap;

use failpass_shared::api::reports::ReportFilter;
use failpass_shared::figures::{FlowCounts, FlowFacts, FlowKind, FlowRead};

use crate::db::figures::{has_window, narrows_reports};
use crate::db::rows::FlowRow;
use crate::db::{ProjectScope, StorageResult};

use super::{Db, Engine, Tx};
use crate::db::dialect::{Dialect, Param};

/// The route kept at a level (else `''`).
const ROUTE: u8 = 1;
/// The route check kept at a level (else -1).
const CHECK: u8 = 2;
/// The project kept at a level (else 0). A level without it sums the
/// public projects only (migration 43): every caller but one with a list
/// of projects sees all of them, so a visitor reads one row a day, and a
/// caller who sees private projects adds theirs from the project's level.
const PROJECT: u8 = 4;

/// A cell's columns, in [`FlowCell`]'s order.
const CELL_COLUMNS: &str =
    "report_id, project_id, route, route_check, status, filed_day, counted_day, graded_day, ttr_bin, benchmark, public";

/// One row of `flow_cells`: a report's place in the throughput counts.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
struct FlowCell {
    report_id: i64,
    project_id: i64,
    route: String,
    route_check: i64,
    status: String,
    filed_day: i64,
    counted_day: Option<i64>,
    graded_day: Option<i64>,
    ttr_bin: Option<i64>,
    benchmark: i64,
    /// Its project is public: the levels without a project count it.
    public: i64,
}

impl FlowCell {
    /// The counts the report adds.
    fn events(&self) -> StorageResult<Vec<(FlowKind, i64)>> {
        let facts = FlowFacts {
            status: crate::db::rows::parse(&self.status, "flow_cells.status")?,
            filed_day: self.filed_day,
            counted_day: self.counted_day,
            graded_day: self.graded_day,
            ttr_bin: self.ttr_bin,
            benchmark: self.benchmark != 0,
        };
        Ok(facts.events())
    }
}

/// A report's row as the cells are computed from it.
#[derive(sqlx::FromRow)]
struct SourceRow {
    id: i64,
    project_id: i64,
    route: String,
    route_check: bool,
    public: bool,
    #[sqlx(flatten)]
    flow: FlowRow,
}

impl SourceRow {
    fn cell(self) -> StorageResult<FlowCell> {
        let status = self.flow.status.clone();
        let facts = FlowFacts::of(&self.flow.into_flow()?);
        Ok(FlowCell {
            report_id: self.id,
            project_id: self.project_id,
            route: self.route,
            route_check: i64::from(self.route_check),
            status,
            filed_day: facts.filed_day,
            counted_day: facts.counted_day,
            graded_day: facts.graded_day,
            ttr_bin: facts.ttr_bin,
            benchmark: i64::from(facts.benchmark),
            public: i64::from(self.public),
        })
    }
}

/// The reports' columns [`SourceRow`] reads.
const SOURCE: &str = "SELECT r.id AS id, r.project_id AS project_id, r.route AS route, r.route_check AS route_check, \
     r.filed_at AS filed_at, r.created_at AS created_at, r.status AS status, r.first_attempt_at AS first_attempt_at, \
     r.first_counting_at AS first_counting_at, r.last_graded_at AS last_graded_at, \
     r.filed_at_stated AS filed_at_stated, bp.benchmark AS benchmark, bp.public AS public \
     FROM reports r JOIN projects bp ON bp.id = r.project_id";

/// A group's key in `flow_groups`: level, kind, project, route, route check, day or bin.
type FlowKey = (u8, FlowKind, i64, String, i64, i64);

/// The change to the groups as cells are taken out (-1) and put in (+1).
#[derive(Default)]
pub(super) struct FlowDelta(BTreeMap<FlowKey, i64>);

impl FlowDelta {
    fn add(&mut self, cell: &FlowCell, sign: i64) -> StorageResult<()> {
        for (kind, at) in cell.events()? {
            for level in 0..8u8 {
                if level & PROJECT == 0 && cell.public == 0 {
                    continue;
                }
                let route = if level & ROUTE != 0 { cell.route.clone() } else { String::new() };
                let check = if level & CHECK != 0 { cell.route_check } else { -1 };
                let project = if level & PROJECT != 0 { cell.project_id } else { 0 };
                *self.0.entry((level, kind, project, route, check, at)).or_default() += sign;
            }
        }
        Ok(())
    }
}

impl Engine {
    /// Recomputes the throughput cells of the reports in `list` and adds
    /// what their groups move by to `delta`, in `tx` (which holds the
    /// figures' lock); [`Self::move_flows`] applies it.
    pub(super) async fn flow_changes(tx: &mut Tx, list: &str, delta: &mut FlowDelta) -> StorageResult<()> {
        let old: Vec<FlowCell> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {CELL_COLUMNS} FROM flow_cells WHERE report_id IN ({list})"
        )))
        .fetch_all(&mut **tx)
        .await?;
        let rows: Vec<SourceRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!("{SOURCE} WHERE r.id IN ({list})")))
            .fetch_all(&mut **tx)
            .await?;
        let new = rows.into_iter().map(SourceRow::cell).collect::<StorageResult<Vec<_>>>()?;
        let old: BTreeMap<i64, FlowCell> = old.into_iter().map(|c| (c.report_id, c)).collect();
        let new: BTreeMap<i64, FlowCell> = new.into_iter().map(|c| (c.report_id, c)).collect();
        let changed: std::collections::BTreeSet<i64> =
            old.keys().chain(new.keys()).filter(|id| old.get(id) != new.get(id)).copied().collect();
        if changed.is_empty() {
            return Ok(());
        }
        for id in &changed {
            if let Some(c) = old.get(id) {
                delta.add(c, -1)?;
            }
            if let Some(c) = new.get(id) {
                delta.add(c, 1)?;
            }
        }
        let changed_list = changed.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
        sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM flow_cells WHERE report_id IN ({changed_list})")))
            .execute(&mut **tx)
            .await?;
        let inserts: Vec<&FlowCell> = changed.iter().filter_map(|id| new.get(id)).collect();
        Self::insert_flow_cells(tx, &inserts).await
    }

    async fn insert_flow_cells(tx: &mut Tx, cells: &[&FlowCell]) -> StorageResult<()> {
        let mut values = Vec::with_capacity(cells.len() * 11);
        let day = Param::MaybeInt;
        for c in cells {
            values.extend([
                Param::Int(c.report_id),
                Param::Int(c.project_id),
                Param::Text(&c.route),
                Param::Int(c.route_check),
                Param::Text(&c.status),
                Param::Int(c.filed_day),
                day(c.counted_day),
                day(c.graded_day),
                day(c.ttr_bin),
                Param::Int(c.benchmark),
                Param::Int(c.public),
            ]);
        }
        Self::write_rows(tx, "flow_cells", &CELL_COLUMNS.split(", ").collect::<Vec<_>>(), "", &values).await
    }

    /// Adds `delta` to the groups, in the order of their key.
    pub(super) async fn move_flows(tx: &mut Tx, delta: &FlowDelta) -> StorageResult<()> {
        let mut values = Vec::with_capacity(delta.0.len() * 7);
        for ((level, kind, project, route, check, at), n) in delta.0.iter().filter(|(_, n)| **n != 0) {
            values.extend([
                Param::Int(i64::from(*level)),
                Param::Text(kind.as_str()),
                Param::Int(*project),
                Param::Text(route),
                Param::Int(*check),
                Param::Int(*at),
                Param::Int(*n),
            ]);
        }
        Self::write_rows(
            tx,
            "flow_groups",
            &["level", "kind", "project_id", "route", "route_check", "at", "n"],
            "ON CONFLICT (level, kind, at, project_id, route, route_check) DO UPDATE SET n = flow_groups.n + excluded.n",
            &values,
        )
        .await
    }

    /// A project's benchmark flag or visibility changed: its reports' throughput counts
    /// follow, and its data version moves (its status page is out of date),
    /// in `tx`, which holds the figures' lock.
    pub(in crate::db) async fn refresh_project_flows(tx: &mut Tx, project_id: i64) -> StorageResult<()> {
        let ids: Vec<i64> = sqlx::query_scalar("SELECT id FROM reports WHERE project_id = $1 ORDER BY id")
            .bind(project_id)
            .fetch_all(&mut **tx)
            .await?;
        Self::refresh_status(tx, &ids).await
    }

    /// Empties both tables and computes them again from every report, in `tx`.
    pub(in crate::db) async fn rebuild_flows(tx: &mut Tx) -> StorageResult<()> {
        sqlx::query("DELETE FROM flow_groups").execute(&mut **tx).await?;
        sqlx::query("DELETE FROM flow_cells").execute(&mut **tx).await?;
        let rows: Vec<SourceRow> = sqlx::query_as(SOURCE).fetch_all(&mut **tx).await?;
        let cells = rows.into_iter().map(SourceRow::cell).collect::<StorageResult<Vec<_>>>()?;
        let mut delta = FlowDelta::default();
        for c in &cells {
            delta.add(c, 1)?;
        }
        Self::insert_flow_cells(tx, &cells.iter().collect::<Vec<_>>()).await?;
        Self::move_flows(tx, &delta).await
    }

    /// Every non-empty group, keyed like the figures' groups, and the cells'
    /// count and a fingerprint of them.
    pub(in crate::db) async fn flow_rows(tx: &mut Tx) -> StorageResult<BTreeMap<String, Vec<f64>>> {
        let rows: Vec<(i64, String, i64, String, i64, i64, i64)> =
            sqlx::query_as("SELECT level, kind, project_id, route, route_check, at, n FROM flow_groups WHERE n <> 0")
                .fetch_all(&mut **tx)
                .await?;
        let mut out: BTreeMap<String, Vec<f64>> = rows
            .into_iter()
            .map(|(l, k, p, r, c, at, n)| (format!("flow {l}|{k}|{p}|{r}|{c}|{at}"), vec![n as f64]))
            .collect();
        let cells: Vec<FlowCell> =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {CELL_COLUMNS} FROM flow_cells ORDER BY report_id")))
                .fetch_all(&mut **tx)
                .await?;
        for c in cells {
            let facts = [
                Some(c.route_check),
                Some(c.filed_day),
                c.counted_day,
                c.graded_day,
                c.ttr_bin,
                Some(c.benchmark),
                Some(c.public),
            ];
            out.insert(
                format!("flow cell {}|{}|{}|{}", c.report_id, c.project_id, c.route, c.status),
                facts.iter().map(|v| v.map_or(-1.0, |v| v as f64)).collect(),
            );
        }
        Ok(out)
    }

    /// The throughput counts `read` names of the reports `filter` selects,
    /// from the groups; `None` when the filter needs what they do not keep (a
    /// status, label, verdict, text or date window), which the exact path
    /// answers.
    pub(in crate::db) async fn flow_totals_now(
        &self,
        filter: &ReportFilter,
        scope: &ProjectScope,
        read: &FlowRead,
    ) -> StorageResult<Option<FlowCounts>> {
        if has_window(filter) || narrows_reports(filter) {
            return Ok(None);
        }
        let level =
            if filter.route.is_some() { ROUTE } else { 0 } | if filter.route_check.is_some() { CHECK } else { 0 };
        // A caller who sees every public project, and no one project, reads
        // the level that sums them, and the private projects it sees at the
        // project's level; any other reads the project's level alone.
        let summed = filter.project.is_none() && !matches!(scope, ProjectScope::Only(_));
        let mut parts: Vec<(u8, Option<String>)> = Vec::new();
        if summed {
            parts.push((level, None));
            if !matches!(scope, ProjectScope::PublicOnly) {
                parts.push((level | PROJECT, Some(format!("p.public = FALSE AND {}", scope.sql("p")))));
            }
        } else {
            parts.push((level | PROJECT, Some(scope.sql("p"))));
        }
        // One part per kind and level, each a range of the key (level, kind,
        // at), so each groups its rows in the key's order (grouping them all
        // at once sorted them first: 2 ms for a visitor's throughput).
        let mut qb = sqlx::QueryBuilder::<Db>::new("");
        let mut first = true;
        for (kind, days) in read.iter() {
            for (level, projects) in &parts {
                if !first {
                    qb.push(" UNION ALL ");
                }
                first = false;
                qb.push("SELECT g.kind, g.at, CAST(SUM(g.n) AS BIGINT) FROM flow_groups g");
                if projects.is_some() {
                    qb.push(" JOIN projects p ON p.id = g.project_id");
                }
                qb.push(" WHERE g.level = ").push_bind(i64::from(*level));
                qb.push(" AND g.kind = ").push_bind(kind.as_str());
                if let Some((from, to)) = days {
                    qb.push(" AND g.at >= ").push_bind(*from).push(" AND g.at <= ").push_bind(*to);
                }
                if let Some(projects) = projects {
                    qb.push(" AND ").push(projects.as_str());
                }
                if let Some(v) = &filter.project {
                    qb.push(" AND p.slug = ").push_bind(v.clone());
                }
                if let Some(v) = filter.route {
                    qb.push(" AND g.route = ").push_bind(v.as_str());
                }
                if let Some(v) = filter.route_check {
                    qb.push(" AND g.route_check = ").push_bind(i64::from(v));
                }
                qb.push(" GROUP BY g.kind, g.at");
            }
        }
        if first {
            return Ok(Some(FlowCounts::default()));
        }
        let rows: Vec<(String, i64, i64)> = qb.build_query_as().fetch_all(&self.read).await?;
        // The parts' counts of a day added: the public projects' and the private ones'.
        let mut summed: BTreeMap<(FlowKind, i64), i64> = BTreeMap::new();
        for (kind, at, n) in rows {
            *summed.entry((crate::db::rows::parse(&kind, "flow_groups.kind")?, at)).or_default() += n;
        }
        let mut counts = FlowCounts::default();
        counts.0.extend(summed.into_iter().filter(|(_, n)| *n > 0).map(|(key, n)| (key, n as u64)));
        Ok(Some(counts))
    }
}
