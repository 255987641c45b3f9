//! The SQL both engines share, stamped out once per engine by `impl_storage!`.
//!
//! Each engine type provides, as inherent items: `read` and `write` pools,
//! `run_migrations()`, and the dialect fragments `LIKE` (case-insensitive
//! match operator) and `WEEK_KEY` (an expression giving the Monday of
//! `a.started_at`'s week as `YYYY-MM-DD`). Everything else is the same text:
//! both engines take `$N` parameters, `RETURNING`, and `TRUE`/`FALSE`.

use chrono::{DateTime, SubsecRound, Utc};
use failpass_shared::api::reports::{Order, ReportSort};

use super::{StorageError, StorageResult};

/// Whole seconds, so SQLite's text timestamps sort as time.
pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(0)
}

pub fn secs(t: DateTime<Utc>) -> DateTime<Utc> {
    t.trunc_subsecs(0)
}

/// Maps a unique-constraint violation to `Conflict` with `message`.
pub fn conflict_on_unique(message: impl Into<String>) -> impl FnOnce(sqlx::Error) -> StorageError {
    let message = message.into();
    move |e| match &e {
        sqlx::Error::Database(db) if db.is_unique_violation() => StorageError::Conflict(message),
        _ => StorageError::Database(e),
    }
}

/// The keyset position a report cursor encodes: `sort.order:value:id`.
#[derive(Debug, Clone, PartialEq)]
pub enum CursorValue {
    Time(DateTime<Utc>),
    Float(f64),
    Int(i64),
}

pub fn report_sort_column(sort: ReportSort) -> &'static str {
    match sort {
        ReportSort::FiledAt => "r.filed_at",
        ReportSort::CreatedAt => "r.created_at",
        ReportSort::Cost => "r.cost_usd",
        ReportSort::Attempts => "r.attempts",
    }
}

fn cursor_prefix(sort: ReportSort, order: Order) -> String {
    format!("{}.{}", sort.as_str(), order.as_str())
}

pub fn encode_report_cursor(sort: ReportSort, order: Order, value: &CursorValue, id: i64) -> String {
    let v = match value {
        CursorValue::Time(t) => t.timestamp().to_string(),
        CursorValue::Float(f) => f.to_string(),
        CursorValue::Int(i) => i.to_string(),
    };
    format!("{}:{v}:{id}", cursor_prefix(sort, order))
}

pub fn decode_report_cursor(cursor: &str, sort: ReportSort, order: Order) -> StorageResult<(CursorValue, i64)> {
    let bad = |why: &str| StorageError::invalid("cursor", format!("`{cursor}` {why}; use the next_cursor of a previous page"));
    let mut parts = cursor.splitn(3, ':');
    let (Some(prefix), Some(value), Some(id)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad("is not a cursor"));
    };
    if prefix != cursor_prefix(sort, order) {
        return Err(bad(&format!("was made for another ordering than {}", cursor_prefix(sort, order))));
    }
    let id: i64 = id.parse().map_err(|_| bad("has no valid id"))?;
    let value = match sort {
        ReportSort::FiledAt | ReportSort::CreatedAt => {
            let ts: i64 = value.parse().map_err(|_| bad("has no valid time"))?;
            CursorValue::Time(DateTime::from_timestamp(ts, 0).ok_or_else(|| bad("has no valid time"))?)
        }
        ReportSort::Cost => CursorValue::Float(value.parse().ok().filter(|f: &f64| f.is_finite()).ok_or_else(|| bad("has no valid cost"))?),
        ReportSort::Attempts => CursorValue::Int(value.parse().map_err(|_| bad("has no valid count"))?),
    };
    Ok((value, id))
}

/// Labels trimmed, without duplicates, in first-seen order.
pub fn clean_labels(labels: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(labels.len());
    for l in labels {
        let l = l.trim();
        if !out.iter().any(|o| o == l) {
            out.push(l.to_owned());
        }
    }
    out
}

pub const REPORT_SUMMARY_COLUMNS: &str = "r.id, p.slug AS project, r.external_id, r.url, r.title, r.labels, r.filed_at, \
     r.route, r.category, r.vague, r.llm_only, r.oracle_kind, r.status, r.best_verdict, r.attempts, r.cost_usd, r.created_at";

pub const ATTEMPT_COLUMNS: &str = "a.id, a.report_id, p.slug AS project, a.goal, a.agent, a.model, a.model_cutoff, \
     a.started_at, a.ended_at, a.wall_seconds, a.cost_usd, a.tokens_in, a.tokens_out, a.iterations, a.candidate, \
     a.signals, a.verdict, a.verdict_source, a.failure_cause, a.review, a.reviewer, a.review_comment, a.attempt_key, \
     a.counts, a.created_at";

pub const PROJECT_COLUMNS: &str = "p.id, p.slug, p.name, p.description, p.public, p.created_at, \
     (SELECT COUNT(*) FROM reports r WHERE r.project_id = p.id) AS reports";

macro_rules! impl_storage {
    ($ty:ty, $db:ty, $backend:expr) => {
        impl $ty {
            /// Appends `AND …` for the scope and the report filter.
            fn push_report_filter(
                qb: &mut sqlx::QueryBuilder<$db>,
                filter: &failpass_shared::api::reports::ReportFilter,
                scope: &crate::db::ProjectScope,
            ) {
                if *scope == crate::db::ProjectScope::PublicOnly {
                    qb.push(" AND p.public = TRUE");
                }
                if let Some(v) = &filter.project {
                    qb.push(" AND p.slug = ").push_bind(v.clone());
                }
                if let Some(v) = filter.route {
                    qb.push(" AND r.route = ").push_bind(v.as_str());
                }
                if let Some(v) = filter.status {
                    qb.push(" AND r.status = ").push_bind(v.as_str());
                }
                if let Some(v) = filter.verdict {
                    qb.push(" AND r.best_verdict = ").push_bind(v.as_str());
                }
                if let Some(v) = &filter.label {
                    qb.push(" AND EXISTS (SELECT 1 FROM report_labels l WHERE l.report_id = r.id AND l.label = ")
                        .push_bind(v.clone())
                        .push(")");
                }
                if let Some(q) = &filter.q {
                    let pattern = format!("%{}%", q.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
                    qb.push(" AND (r.title ").push(Self::LIKE).push(" ").push_bind(pattern.clone()).push(" ESCAPE '\\'");
                    qb.push(" OR r.external_id ").push(Self::LIKE).push(" ").push_bind(pattern.clone()).push(" ESCAPE '\\'");
                    qb.push(" OR r.body ").push(Self::LIKE).push(" ").push_bind(pattern).push(" ESCAPE '\\')");
                }
            }

            async fn load_oracle(&self, report_id: i64) -> crate::db::StorageResult<Option<failpass_shared::api::reports::Oracle>> {
                let row: Option<crate::db::rows::OracleRow> = sqlx::query_as(
                    "SELECT kind, source, command, fail_to_pass, pass_to_pass, signature, repeats, authoring_minutes \
                     FROM oracles WHERE report_id = $1",
                )
                .bind(report_id)
                .fetch_optional(&self.read)
                .await?;
                row.map(crate::db::rows::OracleRow::into_oracle).transpose()
            }
        }

        #[async_trait::async_trait]
        impl crate::db::Storage for $ty {
            fn backend(&self) -> crate::db::Backend {
                $backend
            }

            async fn migrate(&self) -> crate::db::StorageResult<()> {
                self.run_migrations().await
            }

            async fn ping(&self) -> crate::db::StorageResult<()> {
                sqlx::query("SELECT 1").execute(&self.read).await?;
                Ok(())
            }

            async fn is_empty(&self) -> crate::db::StorageResult<bool> {
                let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM projects").fetch_one(&self.read).await?;
                Ok(n == 0)
            }

            async fn create_project(
                &self,
                req: &failpass_shared::api::projects::CreateProjectRequest,
            ) -> crate::db::StorageResult<failpass_shared::api::projects::Project> {
                let name = req.name.clone().unwrap_or_else(|| req.slug.clone());
                let id: i64 = sqlx::query_scalar(
                    "INSERT INTO projects (slug, name, description, public, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id",
                )
                .bind(&req.slug)
                .bind(&name)
                .bind(&req.description)
                .bind(req.public)
                .bind(crate::db::sql::now())
                .fetch_one(&self.write)
                .await
                .map_err(crate::db::sql::conflict_on_unique(format!("project `{}` already exists", req.slug)))?;
                let row: crate::db::rows::ProjectRow = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM projects p WHERE p.id = $1",
                    crate::db::sql::PROJECT_COLUMNS
                )))
                .bind(id)
                .fetch_one(&self.write)
                .await?;
                Ok(row.into())
            }

            async fn list_projects(
                &self,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<Vec<failpass_shared::api::projects::Project>> {
                let public_only = *scope == crate::db::ProjectScope::PublicOnly;
                let rows: Vec<crate::db::rows::ProjectRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM projects p WHERE ($1 = FALSE OR p.public = TRUE) ORDER BY p.slug",
                    crate::db::sql::PROJECT_COLUMNS
                )))
                .bind(public_only)
                .fetch_all(&self.read)
                .await?;
                Ok(rows.into_iter().map(Into::into).collect())
            }

            async fn get_project(
                &self,
                slug: &str,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<Option<failpass_shared::api::projects::Project>> {
                let public_only = *scope == crate::db::ProjectScope::PublicOnly;
                let row: Option<crate::db::rows::ProjectRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM projects p WHERE p.slug = $1 AND ($2 = FALSE OR p.public = TRUE)",
                    crate::db::sql::PROJECT_COLUMNS
                )))
                .bind(slug)
                .bind(public_only)
                .fetch_optional(&self.read)
                .await?;
                Ok(row.map(Into::into))
            }

            async fn create_report(
                &self,
                new: &crate::db::NewReport,
            ) -> crate::db::StorageResult<failpass_shared::api::reports::Report> {
                use sqlx::types::Json;
                let req = &new.request;
                let d = &new.decision;
                let now = crate::db::sql::now();
                let labels = crate::db::sql::clean_labels(&req.labels);
                let mut tx = self.write.begin().await?;
                let project_id: Option<i64> = sqlx::query_scalar("SELECT id FROM projects WHERE slug = $1")
                    .bind(&req.project)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(project_id) = project_id else {
                    return Err(crate::db::StorageError::invalid(
                        "project",
                        format!("no project `{}`; create it first (POST /api/v1/projects)", req.project),
                    ));
                };
                let oracle_kind = d.oracle_kind();
                let det = d.oracle.as_ref().is_some_and(|o| o.is_deterministic());
                let status = failpass_shared::model::ReportStatus::New;
                let id: i64 = sqlx::query_scalar(
                    "INSERT INTO reports (project_id, external_id, url, title, body, labels, paths, filed_at, reporter, \
                     environment, features, category, vague, llm_only, route, explanation, oracle_kind, oracle_source, \
                     has_det_oracle, status, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21) \
                     RETURNING id",
                )
                .bind(project_id)
                .bind(req.external_id.trim())
                .bind(&req.url)
                .bind(req.title.trim())
                .bind(&req.body)
                .bind(Json(&labels))
                .bind(Json(&req.paths))
                .bind(req.filed_at.map(crate::db::sql::secs).unwrap_or(now))
                .bind(&req.reporter)
                .bind(&req.environment)
                .bind(Json(&d.features))
                .bind(d.category.as_str())
                .bind(d.vague)
                .bind(d.llm_only)
                .bind(d.route.as_str())
                .bind(Json(&d.explanation))
                .bind(oracle_kind.as_str())
                .bind(d.oracle.as_ref().and_then(|o| o.source).map(|s| s.as_str()))
                .bind(det)
                .bind(status.as_str())
                .bind(now)
                .fetch_one(&mut *tx)
                .await
                .map_err(crate::db::sql::conflict_on_unique(format!(
                    "project `{}` already has a report `{}`",
                    req.project,
                    req.external_id.trim()
                )))?;
                for label in &labels {
                    sqlx::query("INSERT INTO report_labels (report_id, label) VALUES ($1, $2)")
                        .bind(id)
                        .bind(label)
                        .execute(&mut *tx)
                        .await?;
                }
                if let Some(o) = &d.oracle {
                    sqlx::query(
                        "INSERT INTO oracles (report_id, kind, source, command, fail_to_pass, pass_to_pass, signature, \
                         repeats, authoring_minutes, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                    )
                    .bind(id)
                    .bind(o.kind.as_str())
                    .bind(o.source.map(|s| s.as_str()))
                    .bind(&o.command)
                    .bind(Json(&o.fail_to_pass))
                    .bind(Json(&o.pass_to_pass))
                    .bind(&o.signature)
                    .bind(o.repeats.map(|r| r as i32))
                    .bind(o.authoring_minutes)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                self.get_report(id, &crate::db::ProjectScope::All)
                    .await?
                    .ok_or_else(|| crate::db::StorageError::NotFound(format!("report {id}")))
            }

            async fn get_report(
                &self,
                id: i64,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<Option<failpass_shared::api::reports::Report>> {
                let public_only = *scope == crate::db::ProjectScope::PublicOnly;
                let row: Option<crate::db::rows::ReportDetailRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {}, r.body, r.reporter, r.environment, r.paths, r.features, r.explanation \
                     FROM reports r JOIN projects p ON p.id = r.project_id \
                     WHERE r.id = $1 AND ($2 = FALSE OR p.public = TRUE)",
                    crate::db::sql::REPORT_SUMMARY_COLUMNS
                )))
                .bind(id)
                .bind(public_only)
                .fetch_optional(&self.read)
                .await?;
                let Some(row) = row else { return Ok(None) };
                let oracle = self.load_oracle(id).await?;
                row.into_report(oracle).map(Some)
            }

            async fn list_reports(
                &self,
                query: &failpass_shared::api::reports::ReportListQuery,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<failpass_shared::api::Page<failpass_shared::api::reports::ReportSummary>> {
                use crate::db::sql::{CursorValue, report_sort_column};
                use failpass_shared::api::reports::{Order, ReportSort};
                let col = report_sort_column(query.sort);
                let (cmp, dir) = match query.order {
                    Order::Asc => (">", "ASC"),
                    Order::Desc => ("<", "DESC"),
                };
                let mut qb = sqlx::QueryBuilder::<$db>::new(format!(
                    "SELECT {} FROM reports r JOIN projects p ON p.id = r.project_id WHERE 1 = 1",
                    crate::db::sql::REPORT_SUMMARY_COLUMNS
                ));
                Self::push_report_filter(&mut qb, &query.filter, scope);
                if let Some(cursor) = &query.cursor {
                    let (value, id) = crate::db::sql::decode_report_cursor(cursor, query.sort, query.order)?;
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
                qb.push(format!(" ORDER BY {col} {dir}, r.id {dir} LIMIT "))
                    .push_bind(i64::from(query.limit) + 1);
                let rows: Vec<crate::db::rows::ReportSummaryRow> = qb.build_query_as().fetch_all(&self.read).await?;
                let mut items = rows
                    .into_iter()
                    .map(crate::db::rows::ReportSummaryRow::into_summary)
                    .collect::<Result<Vec<_>, _>>()?;
                let next_cursor = if items.len() > query.limit as usize {
                    items.truncate(query.limit as usize);
                    items.last().map(|last| {
                        let value = match query.sort {
                            ReportSort::FiledAt => CursorValue::Time(last.filed_at),
                            ReportSort::CreatedAt => CursorValue::Time(last.created_at),
                            ReportSort::Cost => CursorValue::Float(last.cost_usd),
                            ReportSort::Attempts => CursorValue::Int(last.attempts),
                        };
                        crate::db::sql::encode_report_cursor(query.sort, query.order, &value, last.id)
                    })
                } else {
                    None
                };
                Ok(failpass_shared::api::Page { items, next_cursor })
            }

            async fn create_attempt(
                &self,
                req: &failpass_shared::api::attempts::CreateAttemptRequest,
            ) -> crate::db::StorageResult<failpass_shared::api::attempts::Attempt> {
                use failpass_shared::model::{attempt_awaits_review, attempt_counts, report_status, Verdict};
                use sqlx::types::Json;
                let now = crate::db::sql::now();
                let mut tx = self.write.begin().await?;
                let report: Option<crate::db::rows::ReportCountersRow> = sqlx::query_as(
                    "SELECT r.vague, r.best_verdict, r.attempts, r.attempts_graded, r.attempts_counting, \
                     r.attempts_awaiting FROM reports r WHERE r.id = $1",
                )
                .bind(req.report_id)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(report) = report else {
                    return Err(crate::db::StorageError::NotFound(format!("report {}", req.report_id)));
                };
                let counts = attempt_counts(req.goal, req.verdict, req.verdict_source, req.review, report.vague);
                let awaiting = attempt_awaits_review(req.goal, req.verdict, req.verdict_source, req.review, report.vague);
                let graded = req.verdict.is_graded();
                let started_at = req.started_at.map(crate::db::sql::secs).unwrap_or(now);
                let id: i64 = sqlx::query_scalar(
                    "INSERT INTO attempts (report_id, goal, agent, model, model_cutoff, started_at, ended_at, wall_seconds, \
                     cost_usd, tokens_in, tokens_out, iterations, candidate, signals, verdict, verdict_source, failure_cause, \
                     review, reviewer, review_comment, attempt_key, graded, counts, awaiting, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, \
                     $21, $22, $23, $24, $25) RETURNING id",
                )
                .bind(req.report_id)
                .bind(req.goal.as_str())
                .bind(req.agent.trim())
                .bind(&req.model)
                .bind(req.model_cutoff)
                .bind(started_at)
                .bind(req.ended_at.map(crate::db::sql::secs))
                .bind(req.effective_wall_seconds())
                .bind(req.cost_usd)
                .bind(req.tokens_in)
                .bind(req.tokens_out)
                .bind(req.iterations.min(i32::MAX as u32) as i32)
                .bind(&req.candidate)
                .bind(Json(&req.signals))
                .bind(req.verdict.as_str())
                .bind(req.verdict_source.as_str())
                .bind(req.failure_cause.map(|c| c.as_str()))
                .bind(req.review.map(|r| r.as_str()))
                .bind(&req.reviewer)
                .bind(&req.review_comment)
                .bind(&req.attempt_key)
                .bind(graded)
                .bind(counts)
                .bind(awaiting)
                .bind(now)
                .fetch_one(&mut *tx)
                .await
                .map_err(crate::db::sql::conflict_on_unique(format!(
                    "agent `{}` already has attempt `{}` on report {}",
                    req.agent.trim(),
                    req.attempt_key.as_deref().unwrap_or_default(),
                    req.report_id
                )))?;
                // Triage state follows reproduction attempts only; a fix attempt
                // (a benchmark's patch) adds to the spend but not to the status.
                let repro = req.goal == failpass_shared::model::Goal::Reproduce;
                let attempts = report.attempts + i64::from(repro);
                let attempts_graded = report.attempts_graded + i64::from(repro && graded);
                let attempts_counting = report.attempts_counting + i64::from(repro && counts);
                let attempts_awaiting = report.attempts_awaiting + i64::from(repro && awaiting);
                let previous_best = report
                    .best_verdict
                    .as_deref()
                    .map(|v| v.parse::<Verdict>().map_err(|e| crate::db::StorageError::Corrupt(e.to_string())))
                    .transpose()?;
                let best = match previous_best {
                    Some(p) if !repro || p.rank() >= req.verdict.rank() => Some(p),
                    _ if repro => Some(req.verdict),
                    _ => None,
                };
                let status = report_status(attempts, attempts_counting, attempts_awaiting, attempts_graded);
                sqlx::query(
                    "UPDATE reports SET attempts = $1, attempts_graded = $2, attempts_counting = $3, attempts_awaiting = $4, \
                     best_verdict = $5, status = $6, cost_usd = cost_usd + $7, \
                     first_counting_at = CASE WHEN first_counting_at IS NULL AND $8 THEN $9 ELSE first_counting_at END \
                     WHERE id = $10",
                )
                .bind(attempts)
                .bind(attempts_graded)
                .bind(attempts_counting)
                .bind(attempts_awaiting)
                .bind(best.map(|b| b.as_str()))
                .bind(status.as_str())
                .bind(req.cost_usd)
                .bind(repro && counts)
                .bind(req.ended_at.map(crate::db::sql::secs).unwrap_or(now))
                .bind(req.report_id)
                .execute(&mut *tx)
                .await?;
                let row: crate::db::rows::AttemptRow = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
                     WHERE a.id = $1",
                    crate::db::sql::ATTEMPT_COLUMNS
                )))
                .bind(id)
                .fetch_one(&mut *tx)
                .await?;
                tx.commit().await?;
                row.into_attempt()
            }

            async fn get_attempt(
                &self,
                id: i64,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<Option<failpass_shared::api::attempts::AttemptDetail>> {
                let public_only = *scope == crate::db::ProjectScope::PublicOnly;
                let row: Option<crate::db::rows::AttemptRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
                     WHERE a.id = $1 AND ($2 = FALSE OR p.public = TRUE)",
                    crate::db::sql::ATTEMPT_COLUMNS
                )))
                .bind(id)
                .bind(public_only)
                .fetch_optional(&self.read)
                .await?;
                let Some(row) = row else { return Ok(None) };
                let runs: Vec<crate::db::rows::RunRow> = sqlx::query_as(
                    "SELECT id, attempt_id, trigger, environment, exit_status, timed_out, duration_ms, output, \
                     output_truncated, output_bytes, failing_tests, passing_tests, runner_id, started_at \
                     FROM runs WHERE attempt_id = $1 ORDER BY id",
                )
                .bind(id)
                .fetch_all(&self.read)
                .await?;
                Ok(Some(failpass_shared::api::attempts::AttemptDetail {
                    attempt: row.into_attempt()?,
                    runs: runs.into_iter().map(crate::db::rows::RunRow::into_run).collect::<Result<_, _>>()?,
                }))
            }

            async fn list_attempts(
                &self,
                query: &failpass_shared::api::attempts::AttemptListQuery,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<failpass_shared::api::Page<failpass_shared::api::attempts::Attempt>> {
                let mut qb = sqlx::QueryBuilder::<$db>::new(format!(
                    "SELECT {} FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
                     WHERE 1 = 1",
                    crate::db::sql::ATTEMPT_COLUMNS
                ));
                if *scope == crate::db::ProjectScope::PublicOnly {
                    qb.push(" AND p.public = TRUE");
                }
                if let Some(v) = query.report_id {
                    qb.push(" AND a.report_id = ").push_bind(v);
                }
                if let Some(v) = &query.project {
                    qb.push(" AND p.slug = ").push_bind(v.clone());
                }
                if let Some(v) = &query.agent {
                    qb.push(" AND a.agent = ").push_bind(v.clone());
                }
                if let Some(v) = &query.model {
                    qb.push(" AND a.model = ").push_bind(v.clone());
                }
                if let Some(v) = query.verdict {
                    qb.push(" AND a.verdict = ").push_bind(v.as_str());
                }
                if let Some(v) = query.goal {
                    qb.push(" AND a.goal = ").push_bind(v.as_str());
                }
                if let Some(c) = &query.cursor {
                    let id: i64 = c.parse().map_err(|_| {
                        crate::db::StorageError::invalid("cursor", format!("`{c}` is not a cursor; use the next_cursor of a previous page"))
                    })?;
                    qb.push(" AND a.id < ").push_bind(id);
                }
                qb.push(" ORDER BY a.id DESC LIMIT ").push_bind(i64::from(query.limit) + 1);
                let rows: Vec<crate::db::rows::AttemptRow> = qb.build_query_as().fetch_all(&self.read).await?;
                let mut items = rows
                    .into_iter()
                    .map(crate::db::rows::AttemptRow::into_attempt)
                    .collect::<Result<Vec<_>, _>>()?;
                let next_cursor = if items.len() > query.limit as usize {
                    items.truncate(query.limit as usize);
                    items.last().map(|a| a.id.to_string())
                } else {
                    None
                };
                Ok(failpass_shared::api::Page { items, next_cursor })
            }

            async fn create_run(
                &self,
                new: &crate::db::NewRun,
            ) -> crate::db::StorageResult<failpass_shared::api::attempts::Run> {
                use sqlx::types::Json;
                let row: Option<crate::db::rows::RunRow> = sqlx::query_as(
                    "INSERT INTO runs (attempt_id, trigger, environment, exit_status, timed_out, duration_ms, output, \
                     output_truncated, output_bytes, failing_tests, passing_tests, runner_id, started_at) \
                     SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13 WHERE EXISTS (SELECT 1 FROM attempts WHERE id = $1) \
                     RETURNING id, attempt_id, trigger, environment, exit_status, timed_out, duration_ms, output, \
                     output_truncated, output_bytes, failing_tests, passing_tests, runner_id, started_at",
                )
                .bind(new.attempt_id)
                .bind(new.trigger.as_str())
                .bind(new.environment.as_str())
                .bind(new.exit_status)
                .bind(new.timed_out)
                .bind(new.duration_ms)
                .bind(&new.output)
                .bind(new.output_truncated)
                .bind(new.output_bytes)
                .bind(Json(&new.failing_tests))
                .bind(Json(&new.passing_tests))
                .bind(&new.runner_id)
                .bind(crate::db::sql::now())
                .fetch_optional(&self.write)
                .await?;
                row.ok_or_else(|| crate::db::StorageError::NotFound(format!("attempt {}", new.attempt_id)))?
                    .into_run()
            }

            async fn figure_contributions(
                &self,
                query: &failpass_shared::api::figures::FiguresQuery,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<Vec<failpass_shared::figures::ReportContribution>> {
                use failpass_shared::model::GroupBy;
                let key = match query.group_by {
                    GroupBy::None => "'all'".to_owned(),
                    GroupBy::Project => "p.slug".to_owned(),
                    GroupBy::Route => "r.route".to_owned(),
                    GroupBy::Category => "r.category".to_owned(),
                    GroupBy::Agent => "a.agent".to_owned(),
                    GroupBy::Model => "COALESCE(a.model, 'unknown')".to_owned(),
                    GroupBy::Cutoff => "CASE WHEN a.model_cutoff IS NULL THEN 'unknown' \
                        WHEN r.filed_at < a.model_cutoff THEN 'before_cutoff' ELSE 'after_cutoff' END"
                        .to_owned(),
                    GroupBy::Week => Self::WEEK_KEY.to_owned(),
                };
                let join = if query.group_by.is_per_attempt() || query.agent.is_some() || query.model.is_some() {
                    "JOIN"
                } else {
                    "LEFT JOIN"
                };
                let mut qb = sqlx::QueryBuilder::<$db>::new(format!(
                    "SELECT {key} AS key, r.has_det_oracle AS det, \
                     CASE WHEN r.oracle_source = 'in_patch_test' THEN TRUE ELSE FALSE END AS in_patch, \
                     COUNT(a.id) AS attempts, \
                     COALESCE(SUM(CASE WHEN a.graded THEN 1 ELSE 0 END), 0) AS graded, \
                     COALESCE(SUM(CASE WHEN a.counts THEN 1 ELSE 0 END), 0) AS counting, \
                     COALESCE(SUM(CASE WHEN a.verdict = 'lead' THEN 1 ELSE 0 END), 0) AS leads, \
                     COALESCE(SUM(CASE WHEN a.verdict = 'error' THEN 1 ELSE 0 END), 0) AS errors, \
                     COALESCE(SUM(a.cost_usd), 0.0) AS cost, \
                     COALESCE(SUM(CASE WHEN a.counts THEN a.cost_usd ELSE 0.0 END), 0.0) AS cost_counting \
                     FROM reports r JOIN projects p ON p.id = r.project_id \
                     {join} attempts a ON a.report_id = r.id AND a.goal = "
                ));
                qb.push_bind(query.goal.as_str());
                if let Some(v) = &query.agent {
                    qb.push(" AND a.agent = ").push_bind(v.clone());
                }
                if let Some(v) = &query.model {
                    qb.push(" AND a.model = ").push_bind(v.clone());
                }
                qb.push(" WHERE 1 = 1");
                Self::push_report_filter(&mut qb, &query.filter, scope);
                qb.push(" GROUP BY 1, r.id, r.has_det_oracle, r.oracle_source");
                let rows: Vec<crate::db::rows::ContributionRow> = qb.build_query_as().fetch_all(&self.read).await?;
                Ok(rows
                    .into_iter()
                    .map(|r| failpass_shared::figures::ReportContribution {
                        key: r.key,
                        has_deterministic_oracle: r.det,
                        has_in_patch_test: r.in_patch,
                        attempts: r.attempts.max(0) as u64,
                        attempts_graded: r.graded.max(0) as u64,
                        attempts_counting: r.counting.max(0) as u64,
                        attempts_lead: r.leads.max(0) as u64,
                        attempts_error: r.errors.max(0) as u64,
                        cost_usd: r.cost,
                        cost_counting_usd: r.cost_counting,
                    })
                    .collect())
            }
        }
    };
}

pub(crate) use impl_storage;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips_and_rejects_mismatch() {
        let t = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let c = encode_report_cursor(ReportSort::FiledAt, Order::Desc, &CursorValue::Time(t), 42);
        assert_eq!(decode_report_cursor(&c, ReportSort::FiledAt, Order::Desc).unwrap(), (CursorValue::Time(t), 42));
        let e = decode_report_cursor(&c, ReportSort::Cost, Order::Desc).unwrap_err();
        assert!(e.to_string().starts_with("cursor:"), "{e}");
        assert!(decode_report_cursor("garbage", ReportSort::FiledAt, Order::Desc).is_err());
        let c = encode_report_cursor(ReportSort::Cost, Order::Asc, &CursorValue::Float(0.1 + 0.2), 7);
        assert_eq!(decode_report_cursor(&c, ReportSort::Cost, Order::Asc).unwrap(), (CursorValue::Float(0.1 + 0.2), 7));
        assert!(decode_report_cursor("cost.asc:NaN:1", ReportSort::Cost, Order::Asc).is_err());
    }

    #[test]
    fn labels_are_cleaned() {
        let l = clean_labels(&[" bug".into(), "bug".into(), "module: nn".into()]);
        assert_eq!(l, ["bug", "module: nn"]);
    }
}
