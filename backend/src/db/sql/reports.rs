//! The SQL of reports and their routing, written once for both engines
//! (see `mod.rs`).

use crate::db::common;
use crate::db::common::REPORT_SUMMARY_COLUMNS;
use crate::db::dialect::Dialect;
use crate::db::hooks::Change;
use crate::db::reports::*;
use crate::db::rows::{OracleRow, ReportDetailRow, ReportSummaryRow};
use async_trait::async_trait;
use failpass_shared::api::Page;
use failpass_shared::api::hooks::HookEvent;
use failpass_shared::api::import::LifeCycleRecord;
use failpass_shared::api::reports::{
    Activity, Oracle, Report, ReportListQuery, ReportSummary, RouteCorrection, Upstream,
};
use failpass_shared::hash;
use failpass_shared::model::Resolution;
use failpass_shared::routing::RoutingDecision;

use super::{Db, Engine, Tx};
use crate::db::write_queue::{Answer, Write, mismatch};

/// A query returning one id.
pub(super) type ScalarQuery<'q> = sqlx::query::QueryScalar<'q, Db, i64, <Db as sqlx::Database>::Arguments>;
use crate::db::{NewReport, ProjectScope, StorageError, StorageResult};

#[async_trait]
impl ReportStore for Engine {
    async fn create_report(&self, new: &NewReport) -> StorageResult<Report> {
        let mut tx = self.write.begin().await?;
        let project_id = Self::project_id(&mut tx, &new.request.project).await?;
        let hash = hash::content_hash(&new.request);
        let id = Self::write_report(&mut tx, None, project_id, new, &hash).await?;
        Self::after_report_write(&mut tx, id, new, true).await?;
        let template = Self::template_in(&mut tx, project_id).await?;
        Self::read_versions(&mut tx, template.as_ref(), id, &new.request).await?;
        // Routed for the first time: hooks hear of it as a route.
        let routed = Change {
            event: HookEvent::Route,
            report_id: id,
            attempt_id: None,
            from: None,
            to: new.decision.route.as_str().to_owned(),
        };
        Self::tell_hooks(&mut tx, &[routed]).await?;
        Self::refresh_figures(&mut tx, &[id]).await?;
        tx.commit().await?;
        self.get_report(id, &ProjectScope::All).await?.ok_or_else(|| StorageError::NotFound(format!("report {id}")))
    }

    async fn update_routing(&self, report_id: i64, d: &RoutingDecision) -> StorageResult<()> {
        // `failpass reroute` moves many reports at once, as an import does: it tells no one.
        let mut tx = self.write.begin().await?;
        Self::route_report(&mut tx, report_id, d, &Origin { actor: "reroute".into(), via: "cli" }, false).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn find_report(&self, project: &str, external_id: &str) -> StorageResult<Option<i64>> {
        Ok(sqlx::query_scalar(
            "SELECT r.id FROM reports r JOIN projects p ON p.id = r.project_id WHERE p.slug = $1 AND r.external_id = $2",
        )
        .bind(project)
        .bind(external_id)
        .fetch_optional(&self.read)
        .await?)
    }

    async fn correct_route(&self, report_id: i64, c: &RouteCorrection, via: &'static str) -> StorageResult<()> {
        use sqlx::types::Json;
        let mut tx = self.write.begin().await?;
        let before: Option<String> = sqlx::query_scalar("SELECT route FROM reports WHERE id = $1")
            .bind(report_id)
            .fetch_optional(&mut *tx)
            .await?;
        let done: Option<i64> = sqlx::query_scalar(
            "UPDATE reports SET route_override = $1, route = $1, route_check = FALSE, route_correction = $2, \
             category = CASE WHEN $1 = 'human_first' THEN 'harness' WHEN category = 'harness' THEN 'patch_logic' ELSE category END \
             WHERE id = $3 RETURNING id",
        )
        .bind(c.route.as_str())
        .bind(Json(c))
        .bind(report_id)
        .fetch_optional(&mut *tx)
        .await?;
        if done.is_none() {
            return Err(StorageError::NotFound(format!("report {report_id}")));
        }
        if before.as_deref() != Some(c.route.as_str()) {
            let change = Change {
                event: HookEvent::Route,
                report_id,
                attempt_id: None,
                from: before,
                to: c.route.as_str().to_owned(),
            };
            Self::tell_hooks(&mut tx, &[change]).await?;
        }
        let origin = Origin { actor: c.by.clone(), via };
        Self::add_activity(
            &mut tx,
            report_id,
            &origin,
            "route",
            &format!(
                "route {} → {}: {}",
                c.previous.as_str().replace('_', " "),
                c.route.as_str().replace('_', " "),
                c.reason
            ),
        )
        .await?;
        Self::refresh_figures(&mut tx, &[report_id]).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn set_resolution(
        &self,
        report_id: i64,
        resolution: Option<Resolution>,
        duplicate_of: Option<i64>,
        reason: Option<&str>,
        origin: &Origin,
    ) -> StorageResult<()> {
        let mut tx = self.write.begin().await?;
        let before: Option<String> = sqlx::query_scalar("SELECT status FROM reports WHERE id = $1")
            .bind(report_id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(before) = before else { return Err(StorageError::NotFound(format!("report {report_id}"))) };
        let watched = Self::watched_statuses(&mut tx, &[report_id]).await?;
        sqlx::query("UPDATE reports SET resolution = $1, resolution_by = $2, duplicate_of = $3 WHERE id = $4")
            .bind(resolution.map_or("reopened", |r| r.as_str()))
            .bind(&origin.actor)
            .bind(duplicate_of)
            .bind(report_id)
            .execute(&mut *tx)
            .await?;
        Self::refresh_status(&mut tx, &[report_id]).await?;
        let after: String =
            sqlx::query_scalar("SELECT status FROM reports WHERE id = $1").bind(report_id).fetch_one(&mut *tx).await?;
        let (before, after) = (before.replace('_', " "), after.replace('_', " "));
        let mut text = if resolution.is_none() {
            format!("reopened: {before} → {after}")
        } else {
            format!("{before} → {after}")
        };
        if let Some(dup) = duplicate_of {
            let ext: Option<String> = sqlx::query_scalar("SELECT external_id FROM reports WHERE id = $1")
                .bind(dup)
                .fetch_optional(&mut *tx)
                .await?;
            text = format!("{text} of #{}", ext.unwrap_or_else(|| dup.to_string()));
        }
        if let Some(r) = reason.map(str::trim).filter(|r| !r.is_empty()) {
            text = format!("{text}: {r}");
        }
        Self::add_activity(&mut tx, report_id, origin, "status", &text).await?;
        Self::tell_status_changes(&mut tx, &watched).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn assign_report(&self, report_id: i64, assignee: Option<&str>, origin: &Origin) -> StorageResult<()> {
        let mut tx = self.write.begin().await?;
        let before: Option<Option<String>> = sqlx::query_scalar("SELECT assignee FROM reports WHERE id = $1")
            .bind(report_id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(before) = before else { return Err(StorageError::NotFound(format!("report {report_id}"))) };
        if before.as_deref() == assignee {
            return Ok(());
        }
        sqlx::query("UPDATE reports SET assignee = $1 WHERE id = $2")
            .bind(assignee)
            .bind(report_id)
            .execute(&mut *tx)
            .await?;
        let text = match (assignee, before) {
            (Some(a), _) => format!("assigned to {a}"),
            (None, Some(b)) => format!("unassigned (was {b})"),
            (None, None) => "unassigned".into(),
        };
        Self::add_activity(&mut tx, report_id, origin, "assigned", &text).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn note_reports(&self, events: &[(i64, String)], kind: &str, origin: &Origin) -> StorageResult<()> {
        let mut tx = self.write.begin().await?;
        for (report_id, text) in events {
            Self::add_activity(&mut tx, *report_id, origin, kind, text).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn comment_report(&self, report_id: i64, text: &str, origin: &Origin) -> StorageResult<()> {
        let write = Write::Comment { report_id, text: text.to_owned(), origin: origin.clone() };
        match self.writer.submit(write).await? {
            Answer::Commented => Ok(()),
            _ => Err(mismatch("comment")),
        }
    }

    async fn life_cycle(&self, report_id: i64) -> StorageResult<Option<LifeCycleRecord>> {
        type Row = (
            String,
            String,
            Option<sqlx::types::Json<RouteCorrection>>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let row: Option<Row> = sqlx::query_as(
            "SELECT p.slug, r.external_id, r.route_correction, r.resolution, r.resolution_by, d.external_id, r.assignee \
             FROM reports r JOIN projects p ON p.id = r.project_id LEFT JOIN reports d ON d.id = r.duplicate_of WHERE r.id = $1",
        )
        .bind(report_id)
        .fetch_optional(&self.read)
        .await?;
        let Some((project, external_id, correction, resolution, resolution_by, duplicate_of, assignee)) = row else {
            return Ok(None);
        };
        // The whole timeline, oldest first (the import takes up to 10000 entries).
        let activity: Vec<(chrono::DateTime<chrono::Utc>, String, String, String, String)> = sqlx::query_as(
            "SELECT at, actor, via, kind, text FROM report_activity WHERE report_id = $1 ORDER BY id LIMIT 10000",
        )
        .bind(report_id)
        .fetch_all(&self.read)
        .await?;
        let activity =
            activity.into_iter().map(|(at, actor, via, kind, text)| Activity { at, actor, via, kind, text }).collect();
        Ok(Some(LifeCycleRecord {
            project,
            external_id,
            route_correction: correction.map(|c| c.0),
            resolution,
            resolution_by,
            duplicate_of,
            assignee,
            activity,
        }))
    }

    async fn import_life_cycle(
        &self,
        report_id: i64,
        l: &LifeCycleRecord,
        duplicate_of: Option<i64>,
    ) -> StorageResult<failpass_shared::api::import::Outcome> {
        use failpass_shared::api::import::Outcome;
        use sqlx::types::Json;
        let mut current =
            self.life_cycle(report_id).await?.ok_or_else(|| StorageError::NotFound(format!("report {report_id}")))?;
        // A correction left out keeps the stored one.
        if l.route_correction.is_none() {
            current.route_correction = None;
        }
        if current == *l {
            return Ok(Outcome::Unchanged);
        }
        let mut tx = self.write.begin().await?;
        if let Some(c) = &l.route_correction {
            sqlx::query(
                "UPDATE reports SET route_override = $1, route = $1, route_check = FALSE, route_correction = $2, \
                 category = CASE WHEN $1 = 'human_first' THEN 'harness' WHEN category = 'harness' THEN 'patch_logic' ELSE category END \
                 WHERE id = $3",
            )
            .bind(c.route.as_str())
            .bind(Json(c))
            .bind(report_id)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query(
            "UPDATE reports SET resolution = $1, resolution_by = $2, duplicate_of = $3, assignee = $4 WHERE id = $5",
        )
        .bind(&l.resolution)
        .bind(&l.resolution_by)
        .bind(duplicate_of)
        .bind(&l.assignee)
        .bind(report_id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("DELETE FROM report_activity WHERE report_id = $1").bind(report_id).execute(&mut *tx).await?;
        for a in &l.activity {
            sqlx::query(
                "INSERT INTO report_activity (report_id, at, actor, via, kind, text) VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(report_id)
            .bind(common::secs(a.at))
            .bind(&a.actor)
            .bind(&a.via)
            .bind(&a.kind)
            .bind(&a.text)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query(
            "UPDATE reports SET last_activity_at = COALESCE((SELECT MAX(at) FROM report_activity WHERE report_id = $1), created_at) \
             WHERE id = $1",
        )
        .bind(report_id)
        .execute(&mut *tx)
        .await?;
        Self::set_status(&mut tx, &[report_id]).await?;
        Self::refresh_figures(&mut tx, &[report_id]).await?;
        tx.commit().await?;
        Ok(Outcome::Updated)
    }

    async fn corrected_routes(&self, project: &str) -> StorageResult<Vec<CorrectedRoute>> {
        type Row = (String, String, String, sqlx::types::Json<Vec<String>>, String);
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT r.external_id, r.title, r.body, r.labels, r.route_override FROM reports r \
             JOIN projects p ON p.id = r.project_id WHERE p.slug = $1 AND r.route_override IS NOT NULL ORDER BY r.id",
        )
        .bind(project)
        .fetch_all(&self.read)
        .await?;
        rows.into_iter()
            .map(|(external_id, title, body, labels, route)| {
                Ok(CorrectedRoute {
                    external_id,
                    title,
                    body,
                    labels: labels.0,
                    route: crate::db::rows::parse(&route, "reports.route_override")?,
                })
            })
            .collect()
    }

    async fn report_project(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<String>> {
        Ok(sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT p.slug FROM reports r JOIN projects p ON p.id = r.project_id WHERE r.id = $1 AND {}",
            scope.sql("p")
        )))
        .bind(id)
        .fetch_optional(&self.read)
        .await?)
    }

    async fn get_report(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<Report>> {
        let row: Option<ReportDetailRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {}, r.body, r.reporter, r.environment, r.paths, r.features, r.explanation, r.route_correction, \
             r.upstream_reason, r.upstream_locked, r.upstream_type, r.resolution, r.resolution_by, r.duplicate_of, \
             d.external_id AS duplicate_of_external \
             FROM reports r JOIN projects p ON p.id = r.project_id LEFT JOIN reports d ON d.id = r.duplicate_of \
             WHERE r.id = $1 AND {}",
            REPORT_SUMMARY_COLUMNS,
            scope.sql("p")
        )))
        .bind(id)
        .fetch_optional(&self.read)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let oracle = self.load_oracle(id).await?;
        // The newest 500 entries, oldest first.
        let mut activity: Vec<(chrono::DateTime<chrono::Utc>, String, String, String, String)> = sqlx::query_as(
            "SELECT at, actor, via, kind, text FROM report_activity WHERE report_id = $1 ORDER BY id DESC LIMIT 500",
        )
        .bind(id)
        .fetch_all(&self.read)
        .await?;
        activity.reverse();
        let activity =
            activity.into_iter().map(|(at, actor, via, kind, text)| Activity { at, actor, via, kind, text }).collect();
        row.into_report(oracle, activity).map(Some)
    }

    async fn count_reports(&self, query: &ReportListQuery, scope: &ProjectScope) -> StorageResult<i64> {
        let mut qb = sqlx::QueryBuilder::<Db>::new(
            "SELECT COUNT(*) FROM reports r JOIN projects p ON p.id = r.project_id WHERE 1 = 1",
        );
        Self::push_list_conditions(&mut qb, query, scope);
        Ok(qb.build_query_scalar().fetch_one(&self.read).await?)
    }

    async fn list_reports(&self, query: &ReportListQuery, scope: &ProjectScope) -> StorageResult<Page<ReportSummary>> {
        use crate::db::reports::CursorValue;
        use failpass_shared::api::reports::ReportSort;
        let mut qb = Self::list_reports_sql("", query, scope)?;
        let rows: Vec<ReportSummaryRow> = qb.build_query_as().fetch_all(&self.read).await?;
        let mut items = rows.into_iter().map(ReportSummaryRow::into_summary).collect::<Result<Vec<_>, _>>()?;
        let next_cursor = if items.len() > query.limit as usize {
            items.truncate(query.limit as usize);
            items.last().map(|last| {
                let value = match query.sort {
                    ReportSort::FiledAt => CursorValue::Time(last.filed_at),
                    ReportSort::CreatedAt => CursorValue::Time(last.created_at),
                    ReportSort::Cost => CursorValue::Float(last.cost_usd),
                    ReportSort::Attempts => CursorValue::Int(last.attempts),
                    ReportSort::LastActivity => CursorValue::Time(last.last_activity_at.unwrap_or(last.created_at)),
                };
                encode_report_cursor(query.sort, query.order, &value, last.id)
            })
        } else {
            None
        };
        Ok(Page { items, next_cursor })
    }

    async fn explain_list_reports(&self, query: &ReportListQuery, scope: &ProjectScope) -> StorageResult<Vec<String>> {
        if Self::BACKEND == crate::db::Backend::Sqlite {
            let mut qb = Self::list_reports_sql("EXPLAIN QUERY PLAN ", query, scope)?;
            let rows: Vec<(i64, i64, i64, String)> = qb.build_query_as().fetch_all(&self.read).await?;
            return Ok(rows.into_iter().map(|(.., detail)| detail).collect());
        }
        let mut tx = self.read.begin().await?;
        sqlx::query("SET LOCAL enable_seqscan = off").execute(&mut *tx).await?;
        sqlx::query("SET LOCAL enable_sort = off").execute(&mut *tx).await?;
        let mut qb = Self::list_reports_sql("EXPLAIN ", query, scope)?;
        let lines: Vec<String> = qb.build_query_scalar().fetch_all(&mut *tx).await?;
        tx.rollback().await?;
        Ok(lines)
    }
}

impl Engine {
    /// The report list's statement after `prefix` (`EXPLAIN …` or nothing):
    /// the filters, the keyset position of the cursor, the order and one row
    /// more than the page (to tell whether another follows).
    fn list_reports_sql(
        prefix: &str,
        query: &ReportListQuery,
        scope: &ProjectScope,
    ) -> StorageResult<sqlx::QueryBuilder<Db>> {
        use crate::db::reports::{CursorValue, report_sort_column};
        use failpass_shared::api::reports::Order;
        let col = report_sort_column(query.sort);
        let (cmp, dir) = match query.order {
            Order::Asc => (">", "ASC"),
            Order::Desc => ("<", "DESC"),
        };
        let mut qb = sqlx::QueryBuilder::<Db>::new(format!(
            "{prefix}SELECT {} FROM reports r JOIN projects p ON p.id = r.project_id WHERE 1 = 1",
            REPORT_SUMMARY_COLUMNS
        ));
        Self::push_list_conditions(&mut qb, query, scope);
        if let Some(cursor) = &query.cursor {
            let (value, id) = decode_report_cursor(cursor, query.sort, query.order)?;
            qb.push(format!(" AND ({col} {cmp} "));
            match &value {
                CursorValue::Time(t) => qb.push_bind(*t),
                CursorValue::Float(f) => qb.push_bind(*f),
                CursorValue::Int(i) => qb.push_bind(*i),
            };
            qb.push(format!(" OR ({col} = "));
            match value {
                CursorValue::Time(t) => qb.push_bind(t),
                CursorValue::Float(f) => qb.push_bind(f),
                CursorValue::Int(i) => qb.push_bind(i),
            };
            qb.push(format!(" AND r.id {cmp} ")).push_bind(id).push("))");
        }
        qb.push(format!(" ORDER BY {col} {dir}, r.id {dir} LIMIT ")).push_bind(i64::from(query.limit) + 1);
        Ok(qb)
    }

    /// Appends the list's conditions: the report filter and scope, then the
    /// list's own `agent`, `model` and `stuck_days`.
    fn push_list_conditions(qb: &mut sqlx::QueryBuilder<Db>, query: &ReportListQuery, scope: &ProjectScope) {
        Self::push_report_filter(qb, &query.filter, scope);
        for (column, v) in [("agent", &query.agent), ("model", &query.model)] {
            if let Some(v) = v {
                // With a spend window, the agent's (or model's) attempts in it.
                qb.push(format!(" AND EXISTS (SELECT 1 FROM attempts fa WHERE fa.report_id = r.id AND fa.{column} = "))
                    .push_bind(v.clone());
                Self::push_spent_window(qb, &query.filter, "fa");
                qb.push(")");
            }
        }
        match query.assignee.as_deref() {
            None => {}
            Some("none") => {
                qb.push(" AND r.assignee IS NULL");
            }
            Some(name) => {
                qb.push(" AND r.assignee = ").push_bind(name.to_owned());
            }
        }
        // New to the reader: arrived after their last visit (as the route
        // worked it out), or in the last 24 hours.
        let arrived_after = query.arrived_after.or_else(|| {
            (query.arrived == Some(failpass_shared::api::reports::Arrived::Day))
                .then(|| common::now() - chrono::Duration::hours(24))
        });
        if let Some(t) = arrived_after {
            qb.push(" AND r.created_at > ").push_bind(t);
        } else if query.arrived.is_some() {
            // Since whose visit? Unresolved (no reader), it selects nothing rather than everything.
            qb.push(" AND 1 = 0");
        }
        if let Some(days) = query.stuck_days {
            let cutoff = common::now() - chrono::Duration::days(i64::from(days));
            // SQLite's `+r.status`: the sort's index serves the page, where the
            // status index would select most reports and sort them.
            let status = if Self::BACKEND == crate::db::Backend::Sqlite { "+r.status" } else { "r.status" };
            // A benchmark's instances wait for no one: never stuck.
            qb.push(format!(
                " AND {status} IN ('new', 'in_progress', 'needs_review') AND NOT p.benchmark \
                 AND COALESCE(r.last_activity_at, r.created_at) < "
            ))
            .push_bind(cutoff);
        }
    }

    /// Binds a routing decision's columns in the order both report writes
    /// list them: features, category, vague, llm_only, route, explanation,
    /// oracle_kind, oracle_source, has_det_oracle, route_check.
    pub(in crate::db) fn bind_routing<'q>(query: ScalarQuery<'q>, d: &'q RoutingDecision) -> ScalarQuery<'q> {
        use sqlx::types::Json;
        query
            .bind(Json(&d.features))
            .bind(d.category.as_str())
            .bind(d.vague)
            .bind(d.llm_only)
            .bind(d.route.as_str())
            .bind(Json(&d.explanation))
            .bind(d.oracle_kind().as_str())
            .bind(d.oracle.as_ref().and_then(|o| o.source).map(|s| s.as_str()))
            .bind(d.oracle.as_ref().is_some_and(|o| o.is_deterministic()))
            .bind(d.route_check)
    }

    /// Stores a routing decision (its oracle, flags, route) and re-derives
    /// what depends on it, inside the caller's transaction; with `tell`,
    /// hooks hear of a changed route.
    pub(in crate::db) async fn route_report(
        tx: &mut Tx,
        report_id: i64,
        d: &RoutingDecision,
        origin: &Origin,
        tell: bool,
    ) -> StorageResult<()> {
        let before: Option<String> = sqlx::query_scalar("SELECT route FROM reports WHERE id = $1")
            .bind(report_id)
            .fetch_optional(&mut **tx)
            .await?;
        let sql = format!(
            "UPDATE reports SET features = $1, vague = $3, llm_only = $4, {}, \
             explanation = $6, oracle_kind = $7, oracle_source = $8, has_det_oracle = $9 WHERE id = $11 RETURNING id",
            common::routing_assignments("$5", "$2", "$10")
        );
        let done: Option<i64> = Self::bind_routing(sqlx::query_scalar(sqlx::AssertSqlSafe(sql)), d)
            .bind(report_id)
            .fetch_optional(&mut **tx)
            .await?;
        if done.is_none() {
            return Err(StorageError::NotFound(format!("report {report_id}")));
        }
        let after: String =
            sqlx::query_scalar("SELECT route FROM reports WHERE id = $1").bind(report_id).fetch_one(&mut **tx).await?;
        if tell && before.as_deref() != Some(after.as_str()) {
            let change = Change { event: HookEvent::Route, report_id, attempt_id: None, from: before, to: after };
            Self::tell_hooks(tx, &[change]).await?;
        }
        Self::write_oracle(tx, report_id, d.oracle.as_ref(), true).await?;
        Self::rederive_attempts(tx, report_id, d.vague).await?;
        // A changed `not_a_bug_labels` changes what upstream implies.
        Self::apply_upstream(tx, report_id, None, d.not_a_bug.as_deref(), origin).await?;
        Ok(())
    }

    /// Appends to a report's activity and moves its last activity to now.
    pub(in crate::db) async fn add_activity(
        tx: &mut Tx,
        report_id: i64,
        origin: &Origin,
        kind: &str,
        text: &str,
    ) -> StorageResult<()> {
        let now = common::now();
        sqlx::query(
            "INSERT INTO report_activity (report_id, at, actor, via, kind, text) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(report_id)
        .bind(now)
        .bind(&origin.actor)
        .bind(origin.via)
        .bind(kind)
        .bind(text)
        .execute(&mut **tx)
        .await?;
        sqlx::query("UPDATE reports SET last_activity_at = $1 WHERE id = $2")
            .bind(now)
            .bind(report_id)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    /// Recomputes reports' statuses from their counters and resolutions
    /// ([`common::STATUS_EXPR`]), one statement per chunk of ids, and their
    /// throughput counts.
    pub(in crate::db) async fn refresh_status(tx: &mut Tx, report_ids: &[i64]) -> StorageResult<()> {
        Self::set_status(tx, report_ids).await?;
        if report_ids.is_empty() {
            return Ok(());
        }
        Self::move_data_versions(tx, report_ids).await?;
        let mut delta = super::flows::FlowDelta::default();
        for chunk in report_ids.chunks(500) {
            let list = chunk.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
            Self::flow_changes(tx, &list, &mut delta).await?;
        }
        Self::move_flows(tx, &delta).await
    }

    /// [`Self::refresh_status`] without the throughput counts, for writes
    /// that refresh all the figures next.
    pub(in crate::db) async fn set_status(tx: &mut Tx, report_ids: &[i64]) -> StorageResult<()> {
        for chunk in report_ids.chunks(500) {
            let mut qb = sqlx::QueryBuilder::<Db>::new(format!(
                "UPDATE reports SET status = {} WHERE id IN (",
                common::STATUS_EXPR
            ));
            let mut sep = qb.separated(", ");
            for id in chunk {
                sep.push_bind(*id);
            }
            qb.push(")");
            qb.build().execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// The projects of these reports changed: their data versions move, so a
    /// cached status of one knows it is out of date. Every write that changes
    /// a report's figures or status comes here once, through
    /// [`Self::refresh_figures`] or [`Self::refresh_status`].
    pub(in crate::db) async fn move_data_versions(tx: &mut Tx, report_ids: &[i64]) -> StorageResult<()> {
        if report_ids.is_empty() {
            return Ok(());
        }
        // The figures' lock first, as every writer takes it before the
        // project's row: two writers in one project never wait on each other
        // in opposite orders (PostgreSQL's advisory lock is re-entrant).
        sqlx::query(Self::FIGURES_LOCK).execute(&mut **tx).await?;
        for chunk in report_ids.chunks(500) {
            let mut qb = sqlx::QueryBuilder::<Db>::new(
                "UPDATE projects SET data_version = data_version + 1 WHERE id IN (SELECT project_id FROM reports WHERE id IN (",
            );
            let mut sep = qb.separated(", ");
            for id in chunk {
                sep.push_bind(*id);
            }
            qb.push("))");
            qb.build().execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// After a report is created or updated from intake: its upstream state
    /// and what it implies, its activity, its status.
    pub(in crate::db) async fn after_report_write(
        tx: &mut Tx,
        report_id: i64,
        new: &NewReport,
        created: bool,
    ) -> StorageResult<()> {
        if created {
            Self::add_activity(tx, report_id, &new.origin, "created", &Self::taken_in(new)).await?;
        }
        Self::apply_upstream_of(tx, report_id, new, created).await
    }

    /// A new report's first activity.
    pub(in crate::db) fn taken_in(new: &NewReport) -> String {
        format!("taken in, routed {}", new.decision.route.as_str().replace('_', " "))
    }

    /// Applies a written report's upstream state and not-a-bug label. A new
    /// report without either has nothing to apply (its columns start empty):
    /// two statements a report saved on every import.
    pub(in crate::db) async fn apply_upstream_of(
        tx: &mut Tx,
        report_id: i64,
        new: &NewReport,
        created: bool,
    ) -> StorageResult<()> {
        if created && new.request.upstream.is_none() && new.decision.not_a_bug.is_none() {
            return Ok(());
        }
        Self::apply_upstream(
            tx,
            report_id,
            Some(new.request.upstream.as_ref()),
            new.decision.not_a_bug.as_deref(),
            &new.origin,
        )
        .await
    }

    /// Many reports' activities at once (a bulk import's "taken in"): one
    /// statement per chunk for the rows and one for the reports' last activity.
    pub(in crate::db) async fn add_activities(tx: &mut Tx, rows: &[(i64, &Origin, &str, String)]) -> StorageResult<()> {
        let now = common::now();
        for chunk in rows.chunks(500) {
            let mut qb =
                sqlx::QueryBuilder::<Db>::new("INSERT INTO report_activity (report_id, at, actor, via, kind, text) ");
            qb.push_values(chunk, |mut b, (id, origin, kind, text)| {
                b.push_bind(*id)
                    .push_bind(now)
                    .push_bind(origin.actor.clone())
                    .push_bind(origin.via)
                    .push_bind(*kind)
                    .push_bind(text.clone());
            });
            qb.build().execute(&mut **tx).await?;
            let mut qb = sqlx::QueryBuilder::<Db>::new("UPDATE reports SET last_activity_at = ");
            qb.push_bind(now).push(" WHERE id IN (");
            let mut sep = qb.separated(", ");
            for (id, ..) in chunk {
                sep.push_bind(*id);
            }
            qb.push(")");
            qb.build().execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// Stores the upstream state (`Some`; `None` keeps the stored one) and
    /// the resolution it and the rule's `not_a_bug` imply, unless a member
    /// set one; records what changed and refreshes the status.
    pub(in crate::db) async fn apply_upstream(
        tx: &mut Tx,
        report_id: i64,
        upstream: Option<Option<&Upstream>>,
        not_a_bug: Option<&str>,
        origin: &Origin,
    ) -> StorageResult<()> {
        let row: Option<(Option<String>, Option<String>, Option<String>)> =
            sqlx::query_as("SELECT upstream_state, resolution, resolution_by FROM reports WHERE id = $1")
                .bind(report_id)
                .fetch_optional(&mut **tx)
                .await?;
        let Some((state, resolution, by)) = row else { return Ok(()) };
        let mut new_state = state.clone();
        if let Some(u) = upstream {
            new_state = u.map(|u| u.state.as_str().to_owned());
            sqlx::query(
                "UPDATE reports SET upstream_state = $1, upstream_reason = $2, upstream_locked = $3, upstream_type = $4 \
                 WHERE id = $5",
            )
            .bind(&new_state)
            .bind(u.and_then(|u| u.reason.as_deref()))
            .bind(u.is_some_and(|u| u.locked))
            .bind(u.and_then(|u| u.kind.as_deref()))
            .bind(report_id)
            .execute(&mut **tx)
            .await?;
            let first_open = state.is_none() && new_state.as_deref() == Some("open");
            if state != new_state && !first_open {
                let reason = u.and_then(|u| u.reason.as_deref()).map(|r| format!(" ({r})")).unwrap_or_default();
                let text = format!(
                    "upstream {} → {}{reason}",
                    state.as_deref().unwrap_or("unknown"),
                    new_state.as_deref().unwrap_or("unknown")
                );
                Self::add_activity(tx, report_id, origin, "upstream", &text).await?;
            }
        }
        let member = by.as_deref().is_some_and(|b| b != "upstream");
        if !member {
            let implied = match (not_a_bug, new_state.as_deref()) {
                (Some(_), _) => Some("not_a_bug"),
                (None, Some("closed" | "merged")) => Some("closed_upstream"),
                _ => None,
            };
            if implied != resolution.as_deref() {
                sqlx::query("UPDATE reports SET resolution = $1, resolution_by = $2 WHERE id = $3")
                    .bind(implied)
                    .bind(implied.map(|_| "upstream"))
                    .bind(report_id)
                    .execute(&mut **tx)
                    .await?;
                if let (Some("not_a_bug"), Some(why)) = (implied, not_a_bug) {
                    Self::add_activity(tx, report_id, origin, "status", &format!("not a bug: {why}")).await?;
                }
                // Otherwise the status stands: it follows the counters, which
                // their own writes refresh.
                Self::refresh_status(tx, &[report_id]).await?;
            }
        }
        Ok(())
    }

    pub(in crate::db) async fn load_oracle(&self, report_id: i64) -> StorageResult<Option<Oracle>> {
        let row: Option<OracleRow> = sqlx::query_as(
            "SELECT kind, source, command, fail_to_pass, pass_to_pass, signature, repeats, authoring_minutes \
             FROM oracles WHERE report_id = $1",
        )
        .bind(report_id)
        .fetch_optional(&self.read)
        .await?;
        row.map(OracleRow::into_oracle).transpose()
    }
}
