//! The SQL of routing health (learned boilerplate, route confirmations and
//! the reports the health panel counts), for both engines.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use failpass_shared::api::reports::{RouteCorrection, RuleOutcome};
use failpass_shared::model::Route;
use failpass_shared::routing::sections::LearnedLine;
use sqlx::types::Json;

use super::Engine;
use crate::db::common;
use crate::db::reports::Origin;
use crate::db::routing::{LearnedBoilerplate, RouteConfirmation, RoutedReport, RoutingStore};
use crate::db::{StorageError, StorageResult};

type RoutedRow = (
    DateTime<Utc>,
    String,
    bool,
    Option<Json<RouteCorrection>>,
    Option<Json<RouteConfirmation>>,
    Json<Vec<RuleOutcome>>,
);

#[async_trait]
impl RoutingStore for Engine {
    async fn project_boilerplate(&self, project: &str) -> StorageResult<LearnedBoilerplate> {
        let row: Option<(Json<Vec<LearnedLine>>, i64, DateTime<Utc>)> = sqlx::query_as(
            "SELECT r.boilerplate, r.reports, r.learned_at FROM project_routing r \
             JOIN projects p ON p.id = r.project_id WHERE p.slug = $1",
        )
        .bind(project)
        .fetch_optional(&self.read)
        .await?;
        Ok(row.map_or_else(LearnedBoilerplate::default, |(lines, reports, at)| LearnedBoilerplate {
            lines: lines.0,
            reports: reports.max(0) as u64,
            learned_at: Some(at),
        }))
    }

    async fn set_project_boilerplate(&self, project: &str, learned: &LearnedBoilerplate) -> StorageResult<()> {
        let mut tx = self.write.begin().await?;
        let project_id = Self::project_id(&mut tx, project).await?;
        sqlx::query(
            "INSERT INTO project_routing (project_id, boilerplate, reports, learned_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (project_id) DO UPDATE SET boilerplate = $2, reports = $3, learned_at = $4",
        )
        .bind(project_id)
        .bind(Json(&learned.lines))
        .bind(learned.reports as i64)
        .bind(learned.learned_at.unwrap_or_else(common::now))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn report_bodies(&self, project: &str, limit: i64) -> StorageResult<Vec<String>> {
        Ok(sqlx::query_scalar(
            // The start of each body is enough for a template, and bounds memory.
            "SELECT substr(r.body, 1, 20000) FROM reports r JOIN projects p ON p.id = r.project_id WHERE p.slug = $1 \
             ORDER BY r.filed_at DESC, r.id DESC LIMIT $2",
        )
        .bind(project)
        .bind(limit)
        .fetch_all(&self.read)
        .await?)
    }

    async fn confirm_route(&self, report_id: i64, c: &RouteConfirmation, via: &'static str) -> StorageResult<()> {
        let mut tx = self.write.begin().await?;
        let done: Option<i64> = sqlx::query_scalar(
            "UPDATE reports SET route_check = FALSE, route_confirmation = $1 WHERE id = $2 AND route = $3 RETURNING id",
        )
        .bind(Json(c))
        .bind(report_id)
        .bind(c.route.as_str())
        .fetch_optional(&mut *tx)
        .await?;
        if done.is_none() {
            // Gone, or routed elsewhere since the maintainer looked.
            let now: Option<String> = sqlx::query_scalar("SELECT route FROM reports WHERE id = $1")
                .bind(report_id)
                .fetch_optional(&mut *tx)
                .await?;
            return Err(match now {
                None => StorageError::NotFound(format!("report {report_id}")),
                Some(r) => StorageError::invalid(
                    "route",
                    format!(
                        "the report is now routed {}, not {}",
                        r.replace('_', " "),
                        c.route.as_str().replace('_', " ")
                    ),
                ),
            });
        }
        let origin = Origin { actor: c.by.clone(), via };
        let mut text = format!("route {} confirmed", c.route.as_str().replace('_', " "));
        if let Some(r) = &c.reason {
            text = format!("{text}: {r}");
        }
        Self::add_activity(&mut tx, report_id, &origin, "route", &text).await?;
        Self::refresh_figures(&mut tx, &[report_id]).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn routing_counts(
        &self,
        scope: &crate::db::ProjectScope,
        since: DateTime<Utc>,
    ) -> StorageResult<Vec<(String, u64, u64, u64)>> {
        let sql = format!(
            "SELECT p.slug, COUNT(*), SUM(CASE WHEN r.route = 'human_first' THEN 1 ELSE 0 END), \
             SUM(CASE WHEN r.route_correction IS NULL THEN 0 ELSE 1 END) \
             FROM reports r JOIN projects p ON p.id = r.project_id WHERE r.filed_at >= $1 AND {} \
             GROUP BY p.slug ORDER BY p.slug",
            scope.sql("p")
        );
        let rows: Vec<(String, i64, i64, i64)> =
            sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(common::secs(since)).fetch_all(&self.read).await?;
        Ok(rows.into_iter().map(|(p, n, h, c)| (p, n.max(0) as u64, h.max(0) as u64, c.max(0) as u64)).collect())
    }

    async fn routed_reports(&self, project: &str, since: DateTime<Utc>) -> StorageResult<Vec<RoutedReport>> {
        let rows: Vec<RoutedRow> = sqlx::query_as(
            "SELECT r.filed_at, r.route, r.route_check, r.route_correction, r.route_confirmation, r.explanation \
             FROM reports r JOIN projects p ON p.id = r.project_id WHERE p.slug = $1 AND r.filed_at >= $2 \
             ORDER BY r.filed_at, r.id",
        )
        .bind(project)
        .bind(common::secs(since))
        .fetch_all(&self.read)
        .await?;
        rows.into_iter()
            .map(|(filed_at, route, route_check, correction, confirmation, explanation)| {
                Ok(RoutedReport {
                    filed_at,
                    route: route.parse::<Route>().map_err(|e| StorageError::Corrupt(e.to_string()))?,
                    route_check,
                    correction: correction.map(|c| c.0),
                    confirmation: confirmation.map(|c| c.0),
                    harness: explanation.0.into_iter().find(|r| r.rule == "harness_or_plumbing"),
                })
            })
            .collect()
    }
}
