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
    let bad = |why: &str| {
        StorageError::invalid("cursor", format!("`{cursor}` {why}; use the next_cursor of a previous page"))
    };
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
        ReportSort::Cost => CursorValue::Float(
            value.parse().ok().filter(|f: &f64| f.is_finite()).ok_or_else(|| bad("has no valid cost"))?,
        ),
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
     a.started_at, a.ended_at, a.wall_seconds, a.cost_usd, a.tokens_in, a.tokens_out, a.api_calls, a.iterations, a.candidate, \
     a.signals, a.verdict, a.verdict_source, a.failure_cause, a.review, a.reviewer, a.review_comment, a.attempt_key, \
     a.counts, a.created_at, a.flaky, a.grade";

pub const PROJECT_COLUMNS: &str = "p.id, p.slug, p.name, p.description, p.public, p.created_at, \
     (SELECT COUNT(*) FROM reports r WHERE r.project_id = p.id) AS reports";

/// Multi-row attempt inserts: 27 parameters a row stays under SQLite's and
/// PostgreSQL's bind limits.
pub const ATTEMPT_INSERT_CHUNK: usize = 1000;

/// A new report: status `new` and its creation time are `$21`, `$22`.
pub const REPORT_INSERT: &str = "INSERT INTO reports (project_id, external_id, url, title, body, labels, paths, filed_at, reporter, \
     environment, features, category, vague, llm_only, route, explanation, oracle_kind, oracle_source, \
     has_det_oracle, content_hash, status, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)";

pub const ORACLE_INSERT: &str = "INSERT INTO oracles (report_id, kind, source, command, fail_to_pass, pass_to_pass, signature, \
     repeats, authoring_minutes, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

pub const LABEL_INSERT: &str = "INSERT INTO report_labels (report_id, label) VALUES ($1, $2)";

/// Marks a report queued for creation later in the same batch.
pub const PENDING_ID: i64 = -1;

pub const ATTEMPT_INSERT: &str = "INSERT INTO attempts (report_id, goal, agent, model, model_cutoff, started_at, ended_at, \
     wall_seconds, cost_usd, tokens_in, tokens_out, api_calls, iterations, candidate, signals, verdict, verdict_source, \
     failure_cause, review, reviewer, review_comment, attempt_key, graded, counts, awaiting, content_hash, created_at) ";

/// An attempt with everything derived that storage writes beside it.
#[derive(Debug, Clone)]
pub struct PreparedAttempt {
    pub req: failpass_shared::api::attempts::CreateAttemptRequest,
    pub report_id: i64,
    pub agent: String,
    pub attempt_key: Option<String>,
    pub started_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub graded: bool,
    pub counts: bool,
    pub awaiting: bool,
    pub content_hash: String,
}

impl PreparedAttempt {
    pub fn new(
        req: &failpass_shared::api::attempts::CreateAttemptRequest,
        report_id: i64,
        report_vague: bool,
        attempt_key: Option<String>,
    ) -> Self {
        use failpass_shared::model::{attempt_awaits_review, attempt_counts};
        let now = now();
        Self {
            report_id,
            agent: req.agent.trim().to_owned(),
            attempt_key,
            started_at: req.started_at.map(secs).unwrap_or(now),
            created_at: now,
            graded: req.verdict.is_graded(),
            counts: attempt_counts(req.goal, req.verdict, req.verdict_source, req.review, report_vague),
            awaiting: attempt_awaits_review(req.goal, req.verdict, req.verdict_source, req.review, report_vague),
            content_hash: failpass_shared::hash::content_hash(req),
            req: req.clone(),
        }
    }
}

pub fn no_project(slug: &str) -> StorageError {
    StorageError::invalid("project", format!("no project `{slug}`; create it first (POST /api/v1/projects)"))
}

/// A deterministic grade needs something deterministic to grade by.
pub fn check_grading(
    req: &failpass_shared::api::attempts::CreateAttemptRequest,
    report_has_oracle: bool,
) -> StorageResult<()> {
    use failpass_shared::model::{Verdict, VerdictSource};
    let graded_verdict =
        matches!(req.verdict, Verdict::Reproduced | Verdict::NotReproduced | Verdict::Resolved | Verdict::Unresolved);
    if req.verdict_source == VerdictSource::Deterministic && graded_verdict && !report_has_oracle {
        return Err(StorageError::invalid(
            "verdict_source",
            format!(
                "{} has no deterministic oracle, so nothing could grade `{}` deterministically (add an oracle, or use `human` if a person ran it)",
                describe_report_ref(req),
                req.verdict
            ),
        ));
    }
    Ok(())
}

pub fn describe_report_ref(req: &failpass_shared::api::attempts::CreateAttemptRequest) -> String {
    match (&req.report_id, &req.report) {
        (Some(id), _) => format!("report {id}"),
        (None, Some(k)) => format!("report `{}` of project `{}`", k.external_id, k.project),
        (None, None) => "report (none named)".to_owned(),
    }
}

/// How a run names its attempt, for messages.
pub fn describe_attempt_ref(req: &failpass_shared::api::attempts::CreateRunRequest) -> String {
    match (&req.attempt_id, &req.attempt) {
        (Some(id), _) => format!("attempt {id}"),
        (None, Some(k)) => {
            format!("attempt `{}` by `{}` on {}#{}", k.attempt_key, k.agent, k.report.project, k.report.external_id)
        }
        (None, None) => "attempt (none named)".to_owned(),
    }
}

/// Per-report sums over attempts, to be completed with `) GROUP BY a.report_id`
/// after the bound ids. Ranks come from `Verdict::rank` so SQL and Rust agree.
pub fn report_aggregate_sql() -> String {
    use failpass_shared::model::Verdict;
    let rank =
        Verdict::ALL.iter().map(|v| format!("WHEN '{}' THEN {}", v.as_str(), v.rank())).collect::<Vec<_>>().join(" ");
    format!(
        "SELECT a.report_id AS report_id, \
         COALESCE(SUM(CASE WHEN a.goal = 'reproduce' THEN 1 ELSE 0 END), 0) AS attempts, \
         COALESCE(SUM(CASE WHEN a.goal = 'reproduce' AND a.graded THEN 1 ELSE 0 END), 0) AS graded, \
         COALESCE(SUM(CASE WHEN a.goal = 'reproduce' AND a.counts THEN 1 ELSE 0 END), 0) AS counting, \
         COALESCE(SUM(CASE WHEN a.goal = 'reproduce' AND a.awaiting THEN 1 ELSE 0 END), 0) AS awaiting, \
         COALESCE(SUM(CASE WHEN a.goal = 'reproduce' THEN a.cost_usd ELSE 0.0 END), 0.0) AS cost, \
         CAST(MAX(CASE WHEN a.goal = 'reproduce' THEN CASE a.verdict {rank} END END) AS BIGINT) AS best_rank, \
         MIN(CASE WHEN a.goal = 'reproduce' AND a.counts THEN COALESCE(a.ended_at, a.started_at) END) AS first_counting_at \
         FROM attempts a WHERE a.report_id IN ("
    )
}

macro_rules! impl_storage {
    ($ty:ty, $db:ty, $backend:expr) => {
        impl $ty {
            /// The SQL giving a row's group key, one expression per dimension.
            fn group_key(query: &failpass_shared::api::figures::FiguresQuery) -> Vec<&'static str> {
                use failpass_shared::model::GroupBy;
                let dimension = |d: GroupBy| match d {
                    GroupBy::None => "'all'",
                    GroupBy::Project => "p.slug",
                    GroupBy::Route => "r.route",
                    GroupBy::Category => "r.category",
                    GroupBy::Agent => "a.agent",
                    GroupBy::Model => "COALESCE(a.model, 'unknown')",
                    GroupBy::Cutoff => {
                        "CASE WHEN a.model_cutoff IS NULL THEN 'unknown' \
                         WHEN r.filed_at < a.model_cutoff THEN 'before_cutoff' ELSE 'after_cutoff' END"
                    }
                    GroupBy::Week => Self::WEEK_KEY,
                    GroupBy::Vagueness => "CASE WHEN r.vague THEN 'vague' ELSE 'clear' END",
                };
                query.dimensions().into_iter().map(dimension).collect()
            }

            /// `JOIN attempts a` for the query's goal, agent and model.
            fn push_attempt_join(
                qb: &mut sqlx::QueryBuilder<$db>,
                query: &failpass_shared::api::figures::FiguresQuery,
                join: &str,
            ) {
                qb.push(format!(" {join} attempts a ON a.report_id = r.id AND a.goal = "));
                qb.push_bind(query.goal.as_str());
                if let Some(v) = &query.agent {
                    qb.push(" AND a.agent = ").push_bind(v.clone());
                }
                if let Some(v) = &query.model {
                    qb.push(" AND a.model = ").push_bind(v.clone());
                }
            }

            /// Appends `AND …` for the scope and the report filter.
            fn push_report_filter(
                qb: &mut sqlx::QueryBuilder<$db>,
                filter: &failpass_shared::api::reports::ReportFilter,
                scope: &crate::db::ProjectScope,
            ) {
                qb.push(" AND ").push(scope.sql("p"));
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
                let (since, until) = filter.window();
                if let Some(t) = since {
                    qb.push(" AND r.filed_at >= ").push_bind(t);
                }
                if let Some(t) = until {
                    qb.push(" AND r.filed_at < ").push_bind(t);
                }
                if let Some(q) = &filter.q {
                    let pattern = format!("%{}%", q.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
                    qb.push(" AND (r.title ").push(Self::LIKE).push(" ").push_bind(pattern.clone()).push(" ESCAPE '\\'");
                    qb.push(" OR r.external_id ").push(Self::LIKE).push(" ").push_bind(pattern.clone()).push(" ESCAPE '\\'");
                    qb.push(" OR r.body ").push(Self::LIKE).push(" ").push_bind(pattern).push(" ESCAPE '\\')");
                }
            }

            async fn project_id(tx: &mut sqlx::Transaction<'static, $db>, slug: &str) -> crate::db::StorageResult<i64> {
                let id: Option<i64> = sqlx::query_scalar("SELECT id FROM projects WHERE slug = $1")
                    .bind(slug)
                    .fetch_optional(&mut **tx)
                    .await?;
                id.ok_or_else(|| crate::db::sql::no_project(slug))
            }

            /// Inserts a report (`existing` = None) or rewrites one in place, with
            /// its labels and oracle; a rewrite re-derives its attempts' counting.
            async fn write_report(
                tx: &mut sqlx::Transaction<'static, $db>,
                existing: Option<i64>,
                project_id: i64,
                new: &crate::db::NewReport,
                hash: &str,
            ) -> crate::db::StorageResult<i64> {
                use sqlx::types::Json;
                let req = &new.request;
                let d = &new.decision;
                let now = crate::db::sql::now();
                let labels = crate::db::sql::clean_labels(&req.labels);
                let det = d.oracle.as_ref().is_some_and(|o| o.is_deterministic());
                let sql = match existing {
                    None => format!("{} RETURNING id", crate::db::sql::REPORT_INSERT),
                    Some(_) => "UPDATE reports SET url = $3, title = $4, body = $5, labels = $6, paths = $7, filed_at = $8, \
                         reporter = $9, environment = $10, features = $11, category = $12, vague = $13, llm_only = $14, route = $15, \
                         explanation = $16, oracle_kind = $17, oracle_source = $18, has_det_oracle = $19, content_hash = $20 \
                         WHERE project_id = $1 AND external_id = $2 RETURNING id"
                        .to_owned(),
                };
                let query = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
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
                    .bind(d.oracle_kind().as_str())
                    .bind(d.oracle.as_ref().and_then(|o| o.source).map(|s| s.as_str()))
                    .bind(det)
                    .bind(hash);
                // Only a new report starts its status and creation time.
                let query = match existing {
                    None => query.bind(failpass_shared::model::ReportStatus::New.as_str()).bind(now),
                    Some(_) => query,
                };
                let id: i64 = query
                    .fetch_one(&mut **tx)
                    .await
                    .map_err(crate::db::sql::conflict_on_unique(format!(
                        "project `{}` already has a report `{}`",
                        req.project,
                        req.external_id.trim()
                    )))?;
                if existing.is_some() {
                    sqlx::query("DELETE FROM report_labels WHERE report_id = $1").bind(id).execute(&mut **tx).await?;
                }
                if !labels.is_empty() {
                    let mut qb = sqlx::QueryBuilder::<$db>::new("INSERT INTO report_labels (report_id, label) ");
                    qb.push_values(&labels, |mut b, label| {
                        b.push_bind(id).push_bind(label.clone());
                    });
                    qb.build().execute(&mut **tx).await?;
                }
                Self::write_oracle(tx, id, d.oracle.as_ref(), existing.is_some()).await?;
                if existing.is_some() {
                    Self::rederive_attempts(tx, id, d.vague).await?;
                }
                Ok(id)
            }

            /// Inserts new reports of an import batch and records their ids under their keys.
            async fn create_reports(
                tx: &mut sqlx::Transaction<'static, $db>,
                creates: Vec<((i64, String), &crate::db::NewReport, String)>,
                existing: &mut std::collections::HashMap<(i64, String), (i64, Option<String>)>,
            ) -> crate::db::StorageResult<()> {
                if creates.is_empty() {
                    return Ok(());
                }
                let rows: Vec<(i64, &crate::db::NewReport, &str)> = creates.iter().map(|((p, _), n, h)| (*p, *n, h.as_str())).collect();
                let ids = Self::bulk_insert_reports(tx, &rows).await?;
                for ((key, _, hash), id) in creates.into_iter().zip(ids) {
                    existing.insert(key, (id, Some(hash)));
                }
                Ok(())
            }

            /// Stores a report's oracle, replacing any it had.
            async fn write_oracle(
                tx: &mut sqlx::Transaction<'static, $db>,
                report_id: i64,
                oracle: Option<&failpass_shared::api::reports::Oracle>,
                replace: bool,
            ) -> crate::db::StorageResult<()> {
                use sqlx::types::Json;
                if replace {
                    sqlx::query("DELETE FROM oracles WHERE report_id = $1").bind(report_id).execute(&mut **tx).await?;
                }
                if let Some(o) = oracle {
                    sqlx::query(crate::db::sql::ORACLE_INSERT)
                    .bind(report_id)
                    .bind(o.kind.as_str())
                    .bind(o.source.map(|s| s.as_str()))
                    .bind(&o.command)
                    .bind(Json(&o.fail_to_pass))
                    .bind(Json(&o.pass_to_pass))
                    .bind(&o.signature)
                    .bind(o.repeats.map(|r| r as i32))
                    .bind(o.authoring_minutes)
                    .bind(crate::db::sql::now())
                    .execute(&mut **tx)
                    .await?;
                }
                Ok(())
            }

            /// Re-applies the counting rule to a report's attempts (its `vague` flag changed or may have).
            async fn rederive_attempts(tx: &mut sqlx::Transaction<'static, $db>, report_id: i64, vague: bool) -> crate::db::StorageResult<()> {
                use failpass_shared::model::{attempt_awaits_review, attempt_counts, Goal, Review, Verdict, VerdictSource};
                let rows: Vec<(i64, String, String, String, Option<String>)> =
                    sqlx::query_as("SELECT id, goal, verdict, verdict_source, review FROM attempts WHERE report_id = $1")
                        .bind(report_id)
                        .fetch_all(&mut **tx)
                        .await?;
                use crate::db::rows::{parse, parse_opt};
                for (id, goal, verdict, source, review) in rows {
                    let goal: Goal = parse(&goal, "attempts.goal")?;
                    let verdict: Verdict = parse(&verdict, "attempts.verdict")?;
                    let source: VerdictSource = parse(&source, "attempts.verdict_source")?;
                    let review: Option<Review> = parse_opt(review.as_deref(), "attempts.review")?;
                    sqlx::query("UPDATE attempts SET counts = $1, awaiting = $2 WHERE id = $3")
                        .bind(attempt_counts(goal, verdict, source, review, vague))
                        .bind(attempt_awaits_review(goal, verdict, source, review, vague))
                        .bind(id)
                        .execute(&mut **tx)
                        .await?;
                }
                Self::refresh_reports(tx, &[report_id]).await
            }

            /// The report an attempt names, with its `vague` flag.
            async fn resolve_report(
                tx: &mut sqlx::Transaction<'static, $db>,
                req: &failpass_shared::api::attempts::CreateAttemptRequest,
            ) -> crate::db::StorageResult<(i64, bool, bool)> {
                let row: Option<(i64, bool, bool)> = match (&req.report_id, &req.report) {
                    (Some(id), _) => sqlx::query_as("SELECT id, vague, has_det_oracle FROM reports WHERE id = $1").bind(*id).fetch_optional(&mut **tx).await?,
                    (None, Some(k)) => sqlx::query_as(
                        "SELECT r.id, r.vague, r.has_det_oracle FROM reports r JOIN projects p ON p.id = r.project_id WHERE p.slug = $1 AND r.external_id = $2",
                    )
                    .bind(&k.project)
                    .bind(&k.external_id)
                    .fetch_optional(&mut **tx)
                    .await?,
                    (None, None) => None,
                };
                let (id, vague, det) = row.ok_or_else(|| crate::db::StorageError::NotFound(crate::db::sql::describe_report_ref(req)))?;
                crate::db::sql::check_grading(req, det)?;
                Ok((id, vague, det))
            }

            /// Resolves each request's report; a missing one is that request's error.
            async fn resolve_reports(
                tx: &mut sqlx::Transaction<'static, $db>,
                reqs: &[failpass_shared::api::attempts::CreateAttemptRequest],
            ) -> crate::db::StorageResult<Vec<crate::db::StorageResult<(i64, bool, bool)>>> {
                use std::collections::HashMap;
                let mut by_id: HashMap<i64, (i64, bool, bool)> = HashMap::new();
                let mut by_key: HashMap<(String, String), (i64, bool, bool)> = HashMap::new();
                let ids: Vec<i64> = reqs.iter().filter_map(|r| r.report_id).collect();
                for chunk in ids.chunks(500) {
                    let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT id, vague, has_det_oracle FROM reports WHERE id IN (");
                    let mut sep = qb.separated(", ");
                    for id in chunk {
                        sep.push_bind(*id);
                    }
                    qb.push(")");
                    for (id, vague, det) in qb.build_query_as::<(i64, bool, bool)>().fetch_all(&mut **tx).await? {
                        by_id.insert(id, (id, vague, det));
                    }
                }
                let mut projects: HashMap<&str, Vec<&str>> = HashMap::new();
                for k in reqs.iter().filter(|r| r.report_id.is_none()).filter_map(|r| r.report.as_ref()) {
                    projects.entry(k.project.as_str()).or_default().push(k.external_id.as_str());
                }
                for (project, mut externals) in projects {
                    externals.sort_unstable();
                    externals.dedup();
                    for chunk in externals.chunks(500) {
                        let mut qb = sqlx::QueryBuilder::<$db>::new(
                            "SELECT r.id, r.vague, r.has_det_oracle, r.external_id FROM reports r JOIN projects p ON p.id = r.project_id WHERE p.slug = ",
                        );
                        qb.push_bind(project.to_owned()).push(" AND r.external_id IN (");
                        let mut sep = qb.separated(", ");
                        for e in chunk {
                            sep.push_bind((*e).to_owned());
                        }
                        qb.push(")");
                        for (id, vague, det, ext) in qb.build_query_as::<(i64, bool, bool, String)>().fetch_all(&mut **tx).await? {
                            by_key.insert((project.to_owned(), ext), (id, vague, det));
                        }
                    }
                }
                Ok(reqs
                    .iter()
                    .map(|r| {
                        let hit = match (&r.report_id, &r.report) {
                            (Some(id), _) => by_id.get(id).copied(),
                            (None, Some(k)) => by_key.get(&(k.project.clone(), k.external_id.clone())).copied(),
                            (None, None) => None,
                        };
                        let (id, vague, det) = hit.ok_or_else(|| crate::db::StorageError::NotFound(crate::db::sql::describe_report_ref(r)))?;
                        crate::db::sql::check_grading(r, det)?;
                        Ok((id, vague, det))
                    })
                    .collect())
            }

            /// Inserts attempts in one multi-row statement; returns their ids in
            /// order when `want_ids` (bulk imports skip that: on SQLite every
            /// returned row is a hand-off between threads).
            async fn insert_attempts(
                tx: &mut sqlx::Transaction<'static, $db>,
                rows: &[crate::db::sql::PreparedAttempt],
                want_ids: bool,
            ) -> crate::db::StorageResult<Vec<i64>> {
                use sqlx::types::Json;
                if rows.is_empty() {
                    return Ok(Vec::new());
                }
                let mut qb = sqlx::QueryBuilder::<$db>::new(crate::db::sql::ATTEMPT_INSERT);
                qb.push_values(rows, |mut b, p| {
                    let r = &p.req;
                    b.push_bind(p.report_id)
                        .push_bind(r.goal.as_str())
                        .push_bind(p.agent.clone())
                        .push_bind(r.model.clone())
                        .push_bind(r.model_cutoff)
                        .push_bind(p.started_at)
                        .push_bind(r.ended_at.map(crate::db::sql::secs))
                        .push_bind(r.effective_wall_seconds())
                        .push_bind(r.cost_usd)
                        .push_bind(r.tokens_in)
                        .push_bind(r.tokens_out)
                        .push_bind(r.api_calls)
                        .push_bind(r.iterations.min(i32::MAX as u32) as i32)
                        .push_bind(r.candidate.clone())
                        .push_bind(Json(r.signals.clone()))
                        .push_bind(r.verdict.as_str())
                        .push_bind(r.verdict_source.as_str())
                        .push_bind(r.failure_cause.map(|c| c.as_str()))
                        .push_bind(r.review.map(|v| v.as_str()))
                        .push_bind(r.reviewer.clone())
                        .push_bind(r.review_comment.clone())
                        .push_bind(p.attempt_key.clone())
                        .push_bind(p.graded)
                        .push_bind(p.counts)
                        .push_bind(p.awaiting)
                        .push_bind(p.content_hash.clone())
                        .push_bind(p.created_at);
                });
                let conflict = crate::db::sql::conflict_on_unique("an attempt with the same agent, report and attempt_key exists");
                if !want_ids {
                    qb.build().execute(&mut **tx).await.map_err(conflict)?;
                    return Ok(Vec::new());
                }
                qb.push(" RETURNING id");
                let ids: Vec<(i64,)> = qb.build_query_as().fetch_all(&mut **tx).await.map_err(conflict)?;
                Ok(ids.into_iter().map(|(id,)| id).collect())
            }

            async fn update_attempt(
                tx: &mut sqlx::Transaction<'static, $db>,
                id: i64,
                p: &crate::db::sql::PreparedAttempt,
            ) -> crate::db::StorageResult<()> {
                use sqlx::types::Json;
                let r = &p.req;
                sqlx::query(
                    "UPDATE attempts SET goal = $1, model = $2, model_cutoff = $3, started_at = $4, ended_at = $5, \
                     wall_seconds = $6, cost_usd = $7, tokens_in = $8, tokens_out = $9, api_calls = $10, iterations = $11, \
                     candidate = $12, signals = $13, verdict = $14, verdict_source = $15, failure_cause = $16, review = $17, \
                     reviewer = $18, review_comment = $19, graded = $20, counts = $21, awaiting = $22, content_hash = $23 \
                     WHERE id = $24",
                )
                .bind(r.goal.as_str())
                .bind(&r.model)
                .bind(r.model_cutoff)
                .bind(p.started_at)
                .bind(r.ended_at.map(crate::db::sql::secs))
                .bind(r.effective_wall_seconds())
                .bind(r.cost_usd)
                .bind(r.tokens_in)
                .bind(r.tokens_out)
                .bind(r.api_calls)
                .bind(r.iterations.min(i32::MAX as u32) as i32)
                .bind(&r.candidate)
                .bind(Json(&r.signals))
                .bind(r.verdict.as_str())
                .bind(r.verdict_source.as_str())
                .bind(r.failure_cause.map(|c| c.as_str()))
                .bind(r.review.map(|v| v.as_str()))
                .bind(&r.reviewer)
                .bind(&r.review_comment)
                .bind(p.graded)
                .bind(p.counts)
                .bind(p.awaiting)
                .bind(&p.content_hash)
                .bind(id)
                .execute(&mut **tx)
                .await?;
                Ok(())
            }

            /// `verify` needs something deterministic to grade by and something to run.
            async fn check_verifiable(
                tx: &mut sqlx::Transaction<'static, $db>,
                req: &failpass_shared::api::attempts::CreateAttemptRequest,
                report_id: i64,
            ) -> crate::db::StorageResult<()> {
                use failpass_shared::grading::Unverifiable;
                let oracle: Option<(String, Option<String>)> = sqlx::query_as("SELECT kind, command FROM oracles WHERE report_id = $1")
                    .bind(report_id)
                    .fetch_optional(&mut **tx)
                    .await?;
                let roles: Vec<String> = sqlx::query_scalar(
                    "SELECT e.role FROM environments e JOIN reports r ON r.project_id = e.project_id WHERE r.id = $1",
                )
                .bind(report_id)
                .fetch_all(&mut **tx)
                .await?;
                let kind = match &oracle {
                    Some((k, _)) => Some(crate::db::rows::parse::<failpass_shared::model::OracleKind>(k, "oracles.kind")?),
                    None => None,
                };
                let roles = roles
                    .iter()
                    .map(|r| crate::db::rows::parse(r, "environments.role"))
                    .collect::<crate::db::StorageResult<Vec<failpass_shared::model::EnvironmentRole>>>()?;
                let command = oracle.as_ref().and_then(|(_, c)| c.as_deref());
                let invalid = crate::db::StorageError::invalid;
                match failpass_shared::grading::verifiable(kind.map(|k| (k, command)), req.candidate.is_some(), &roles) {
                    Ok(()) => Ok(()),
                    Err(Unverifiable::NoOracle) => Err(invalid(
                        "verify",
                        format!("report {report_id} has no deterministic oracle to grade by; add one to the report first"),
                    )),
                    Err(Unverifiable::NothingToRun) => {
                        Err(invalid("candidate", "nothing to run: give a candidate (the oracle has no command)".to_owned()))
                    }
                    Err(Unverifiable::NoCandidate { command }) => {
                        Err(invalid("candidate", format!("the oracle's command `{command}` runs the candidate: give one")))
                    }
                    Err(Unverifiable::NoEnvironments) => Err(invalid(
                        "verify",
                        format!("report {report_id}'s project has no buggy and fixed environment to run in; add them (POST /api/v1/environments) first"),
                    )),
                }
            }

            /// Writes one run; `None` when a run with the same content hash is
            /// already stored for the attempt (a run without a hash is always written).
            async fn insert_run_tx(
                tx: &mut sqlx::Transaction<'static, $db>,
                new: &crate::db::NewRun,
                now: chrono::DateTime<chrono::Utc>,
                content_hash: Option<&str>,
            ) -> crate::db::StorageResult<Option<i64>> {
                use sqlx::types::Json;
                Ok(sqlx::query_scalar(
                    "INSERT INTO runs (attempt_id, trigger, environment, exit_status, timed_out, duration_ms, output, \
                     output_truncated, output_bytes, failing_tests, passing_tests, runner_id, started_at, content_hash) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
                     ON CONFLICT (attempt_id, content_hash) DO NOTHING RETURNING id",
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
                .bind(new.started_at.map(crate::db::sql::secs).unwrap_or(now))
                .bind(content_hash)
                .fetch_optional(&mut **tx)
                .await?)
            }

            /// Recomputes reports' counters, best verdict, status and spend from their attempts.
            async fn refresh_reports(tx: &mut sqlx::Transaction<'static, $db>, ids: &[i64]) -> crate::db::StorageResult<()> {
                use failpass_shared::model::{report_status, Verdict};
                for chunk in ids.chunks(500) {
                    let mut qb = sqlx::QueryBuilder::<$db>::new(crate::db::sql::report_aggregate_sql());
                    let mut sep = qb.separated(", ");
                    for id in chunk {
                        sep.push_bind(*id);
                    }
                    qb.push(") GROUP BY a.report_id");
                    let rows: Vec<crate::db::rows::ReportAggregateRow> = qb.build_query_as().fetch_all(&mut **tx).await?;
                    for r in rows {
                        let best = r.best_rank.and_then(|rank| Verdict::ALL.iter().copied().find(|v| i64::from(v.rank()) == rank));
                        let status = report_status(r.attempts, r.counting, r.awaiting, r.graded);
                        sqlx::query(
                            "UPDATE reports SET attempts = $1, attempts_graded = $2, attempts_counting = $3, attempts_awaiting = $4, \
                             best_verdict = $5, status = $6, cost_usd = $7, first_counting_at = $8 WHERE id = $9",
                        )
                        .bind(r.attempts)
                        .bind(r.graded)
                        .bind(r.counting)
                        .bind(r.awaiting)
                        .bind(best.map(|b| b.as_str()))
                        .bind(status.as_str())
                        .bind(r.cost)
                        .bind(r.first_counting_at)
                        .bind(r.report_id)
                        .execute(&mut **tx)
                        .await?;
                    }
                }
                Ok(())
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
                sqlx::query("INSERT INTO health (id, checked_at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at")
                    .bind(crate::db::sql::now())
                    .execute(&self.write)
                    .await?;
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
                .bind(req.public.unwrap_or(true))
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
                let rows: Vec<crate::db::rows::ProjectRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM projects p WHERE {} ORDER BY p.slug",
                    crate::db::sql::PROJECT_COLUMNS,
                    scope.sql("p")
                )))
                .fetch_all(&self.read)
                .await?;
                Ok(rows.into_iter().map(Into::into).collect())
            }

            async fn get_project(
                &self,
                slug: &str,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<Option<failpass_shared::api::projects::Project>> {
                let row: Option<crate::db::rows::ProjectRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM projects p WHERE p.slug = $1 AND {}",
                    crate::db::sql::PROJECT_COLUMNS,
                    scope.sql("p")
                )))
                .bind(slug)
                .fetch_optional(&self.read)
                .await?;
                Ok(row.map(Into::into))
            }

            async fn create_report(
                &self,
                new: &crate::db::NewReport,
            ) -> crate::db::StorageResult<failpass_shared::api::reports::Report> {
                let mut tx = self.write.begin().await?;
                let project_id = Self::project_id(&mut tx, &new.request.project).await?;
                let hash = failpass_shared::hash::content_hash(&new.request);
                let id = Self::write_report(&mut tx, None, project_id, new, &hash).await?;
                tx.commit().await?;
                self.get_report(id, &crate::db::ProjectScope::All)
                    .await?
                    .ok_or_else(|| crate::db::StorageError::NotFound(format!("report {id}")))
            }

            async fn import_reports(
                &self,
                news: &[crate::db::NewReport],
            ) -> crate::db::StorageResult<Vec<crate::db::StorageResult<failpass_shared::api::import::Outcome>>> {
                use failpass_shared::api::import::Outcome;
                use std::collections::HashMap;
                let mut tx = self.write.begin().await?;
                // Project ids, then every existing (project, external id) of the batch, in few queries.
                let mut projects: HashMap<String, Option<i64>> = HashMap::new();
                for new in news {
                    if !projects.contains_key(&new.request.project) {
                        let id: Option<i64> = sqlx::query_scalar("SELECT id FROM projects WHERE slug = $1")
                            .bind(&new.request.project)
                            .fetch_optional(&mut *tx)
                            .await?;
                        projects.insert(new.request.project.clone(), id);
                    }
                }
                let mut existing: HashMap<(i64, String), (i64, Option<String>)> = HashMap::new();
                for (slug, id) in &projects {
                    let Some(project_id) = id else { continue };
                    let externals: Vec<&str> =
                        news.iter().filter(|n| &n.request.project == slug).map(|n| n.request.external_id.trim()).collect();
                    for chunk in externals.chunks(500) {
                        let mut qb = sqlx::QueryBuilder::<$db>::new("SELECT id, external_id, content_hash FROM reports WHERE project_id = ");
                        qb.push_bind(*project_id).push(" AND external_id IN (");
                        let mut sep = qb.separated(", ");
                        for e in chunk {
                            sep.push_bind((*e).to_owned());
                        }
                        qb.push(")");
                        for (id, ext, hash) in qb.build_query_as::<(i64, String, Option<String>)>().fetch_all(&mut *tx).await? {
                            existing.insert((*project_id, ext), (id, hash));
                        }
                    }
                }
                // New reports are written together at the end (or before a later
                // line of the batch changes one of them), updates in place.
                let mut out = Vec::with_capacity(news.len());
                let mut creates: Vec<((i64, String), &crate::db::NewReport, String)> = Vec::new();
                for new in news {
                    let Some(project_id) = projects[&new.request.project] else {
                        out.push(Err(crate::db::sql::no_project(&new.request.project)));
                        continue;
                    };
                    let hash = failpass_shared::hash::content_hash(&new.request);
                    let key = (project_id, new.request.external_id.trim().to_owned());
                    let outcome = match existing.get(&key) {
                        Some((_, Some(h))) if *h == hash => Outcome::Unchanged,
                        Some((id, _)) => {
                            let mut id = *id;
                            if id == crate::db::sql::PENDING_ID {
                                Self::create_reports(&mut tx, std::mem::take(&mut creates), &mut existing).await?;
                                id = existing[&key].0;
                            }
                            Self::write_report(&mut tx, Some(id), project_id, new, &hash).await?;
                            existing.insert(key, (id, Some(hash)));
                            Outcome::Updated
                        }
                        None => {
                            existing.insert(key.clone(), (crate::db::sql::PENDING_ID, Some(hash.clone())));
                            creates.push((key, new, hash));
                            Outcome::Created
                        }
                    };
                    out.push(Ok(outcome));
                }
                Self::create_reports(&mut tx, creates, &mut existing).await?;
                tx.commit().await?;
                Ok(out)
            }

            async fn import_projects(
                &self,
                reqs: &[failpass_shared::api::projects::CreateProjectRequest],
                default_public: bool,
            ) -> crate::db::StorageResult<Vec<failpass_shared::api::import::Outcome>> {
                use failpass_shared::api::import::Outcome;
                let mut tx = self.write.begin().await?;
                let mut out = Vec::with_capacity(reqs.len());
                for req in reqs {
                    let existing: Option<(i64, String, Option<String>, bool)> =
                        sqlx::query_as("SELECT id, name, description, public FROM projects WHERE slug = $1")
                            .bind(&req.slug)
                            .fetch_optional(&mut *tx)
                            .await?;
                    out.push(match existing {
                        Some((id, n, d, p)) => {
                            // A field the record leaves out keeps its stored value.
                            let name = req.name.clone().unwrap_or(n.clone());
                            let description = req.description.clone().or(d.clone());
                            let public = req.public.unwrap_or(p);
                            if (&name, &description, public) == (&n, &d, p) {
                                Outcome::Unchanged
                            } else {
                                sqlx::query("UPDATE projects SET name = $1, description = $2, public = $3 WHERE id = $4")
                                    .bind(&name)
                                    .bind(&description)
                                    .bind(public)
                                    .bind(id)
                                    .execute(&mut *tx)
                                    .await?;
                                Outcome::Updated
                            }
                        }
                        None => {
                            sqlx::query("INSERT INTO projects (slug, name, description, public, created_at) VALUES ($1, $2, $3, $4, $5)")
                                .bind(&req.slug)
                                .bind(req.name.clone().unwrap_or_else(|| req.slug.clone()))
                                .bind(&req.description)
                                .bind(req.public.unwrap_or(default_public))
                                .bind(crate::db::sql::now())
                                .execute(&mut *tx)
                                .await?;
                            Outcome::Created
                        }
                    });
                }
                tx.commit().await?;
                Ok(out)
            }

            async fn import_agents(
                &self,
                agents: &[failpass_shared::api::import::AgentRecord],
            ) -> crate::db::StorageResult<Vec<failpass_shared::api::import::Outcome>> {
                use failpass_shared::api::import::Outcome;
                let mut tx = self.write.begin().await?;
                let mut out = Vec::with_capacity(agents.len());
                let now = crate::db::sql::now();
                for a in agents {
                    let hash = failpass_shared::hash::content_hash(a);
                    let existing: Option<(i64, String)> = sqlx::query_as("SELECT id, content_hash FROM agents WHERE name = $1")
                        .bind(a.name.trim())
                        .fetch_optional(&mut *tx)
                        .await?;
                    let (sql, outcome) = match &existing {
                        Some((_, h)) if *h == hash => {
                            out.push(Outcome::Unchanged);
                            continue;
                        }
                        Some(_) => (
                            "UPDATE agents SET source = $2, model = $3, date = $4, stated_rate = $5, stated_instances = $6, \
                             stated_cost_usd = $7, stated_instance_cost_usd = $8, stated_instance_calls = $9, notes = $10, \
                             content_hash = $11, updated_at = $12 WHERE name = $1",
                            Outcome::Updated,
                        ),
                        None => (
                            "INSERT INTO agents (name, source, model, date, stated_rate, stated_instances, stated_cost_usd, \
                             stated_instance_cost_usd, stated_instance_calls, notes, content_hash, updated_at, created_at) \
                             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)",
                            Outcome::Created,
                        ),
                    };
                    sqlx::query(sql)
                        .bind(a.name.trim())
                        .bind(&a.source)
                        .bind(&a.model)
                        .bind(&a.date)
                        .bind(a.stated_rate)
                        .bind(a.stated_instances.map(|n| n.min(i64::MAX as u64) as i64))
                        .bind(a.stated_cost_usd)
                        .bind(a.stated_instance_cost_usd)
                        .bind(a.stated_instance_calls)
                        .bind(&a.notes)
                        .bind(&hash)
                        .bind(now)
                        .execute(&mut *tx)
                        .await?;
                    out.push(outcome);
                }
                tx.commit().await?;
                Ok(out)
            }

            async fn update_routing(
                &self,
                report_id: i64,
                d: &failpass_shared::routing::RoutingDecision,
            ) -> crate::db::StorageResult<()> {
                use sqlx::types::Json;
                let mut tx = self.write.begin().await?;
                let done = sqlx::query(
                    "UPDATE reports SET features = $1, category = $2, vague = $3, llm_only = $4, route = $5, explanation = $6, \
                     oracle_kind = $7, oracle_source = $8, has_det_oracle = $9 WHERE id = $10",
                )
                .bind(Json(&d.features))
                .bind(d.category.as_str())
                .bind(d.vague)
                .bind(d.llm_only)
                .bind(d.route.as_str())
                .bind(Json(&d.explanation))
                .bind(d.oracle_kind().as_str())
                .bind(d.oracle.as_ref().and_then(|o| o.source).map(|s| s.as_str()))
                .bind(d.oracle.as_ref().is_some_and(|o| o.is_deterministic()))
                .bind(report_id)
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() == 0 {
                    return Err(crate::db::StorageError::NotFound(format!("report {report_id}")));
                }
                Self::write_oracle(&mut tx, report_id, d.oracle.as_ref(), true).await?;
                Self::rederive_attempts(&mut tx, report_id, d.vague).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn find_report(&self, project: &str, external_id: &str) -> crate::db::StorageResult<Option<i64>> {
                Ok(sqlx::query_scalar(
                    "SELECT r.id FROM reports r JOIN projects p ON p.id = r.project_id WHERE p.slug = $1 AND r.external_id = $2",
                )
                .bind(project)
                .bind(external_id)
                .fetch_optional(&self.read)
                .await?)
            }

            async fn list_agents(&self) -> crate::db::StorageResult<Vec<failpass_shared::api::import::AgentRecord>> {
                let rows: Vec<crate::db::rows::AgentRow> = sqlx::query_as(
                    "SELECT name, source, model, date, stated_rate, stated_instances, stated_cost_usd, \
                     stated_instance_cost_usd, stated_instance_calls, notes FROM agents ORDER BY name",
                )
                .fetch_all(&self.read)
                .await?;
                Ok(rows.into_iter().map(Into::into).collect())
            }

            async fn report_project(&self, id: i64, scope: &crate::db::ProjectScope) -> crate::db::StorageResult<Option<String>> {
                Ok(sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                    "SELECT p.slug FROM reports r JOIN projects p ON p.id = r.project_id WHERE r.id = $1 AND {}",
                    scope.sql("p")
                )))
                .bind(id)
                .fetch_optional(&self.read)
                .await?)
            }

            async fn attempt_project(&self, id: i64, scope: &crate::db::ProjectScope) -> crate::db::StorageResult<Option<String>> {
                Ok(sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                    "SELECT p.slug FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
                     WHERE a.id = $1 AND {}",
                    scope.sql("p")
                )))
                .bind(id)
                .fetch_optional(&self.read)
                .await?)
            }

            async fn get_report(
                &self,
                id: i64,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<Option<failpass_shared::api::reports::Report>> {
                let row: Option<crate::db::rows::ReportDetailRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {}, r.body, r.reporter, r.environment, r.paths, r.features, r.explanation \
                     FROM reports r JOIN projects p ON p.id = r.project_id \
                     WHERE r.id = $1 AND {}",
                    crate::db::sql::REPORT_SUMMARY_COLUMNS,
                    scope.sql("p")
                )))
                .bind(id)
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
            ) -> crate::db::StorageResult<(failpass_shared::api::attempts::Attempt, failpass_shared::api::import::Outcome)> {
                let mut tx = self.write.begin().await?;
                let (report_id, vague, _) = Self::resolve_report(&mut tx, req).await?;
                let row = crate::db::sql::PreparedAttempt::new(req, report_id, vague, req.attempt_key.clone());
                if let Some(key) = &req.attempt_key {
                    let taken: Option<(i64, Option<String>)> = sqlx::query_as(
                        "SELECT id, content_hash FROM attempts WHERE agent = $1 AND report_id = $2 AND attempt_key = $3",
                    )
                    .bind(&row.agent)
                    .bind(report_id)
                    .bind(key)
                    .fetch_optional(&mut *tx)
                    .await?;
                    match taken {
                        // The same attempt again (a retry): answer with what is stored.
                        Some((id, Some(hash))) if hash == row.content_hash => {
                            tx.rollback().await?;
                            let stored = self.get_attempt(id, &crate::db::ProjectScope::All).await?;
                            let stored = stored.ok_or_else(|| crate::db::StorageError::NotFound(format!("attempt {id}")))?;
                            return Ok((stored.attempt, failpass_shared::api::import::Outcome::Unchanged));
                        }
                        Some(_) => {
                            return Err(crate::db::StorageError::Conflict(format!(
                                "agent `{}` already has a different attempt `{key}` on report {report_id}",
                                row.agent
                            )));
                        }
                        None => {}
                    }
                }
                if req.verify {
                    Self::check_verifiable(&mut tx, req, report_id).await?;
                }
                let ids = Self::insert_attempts(&mut tx, std::slice::from_ref(&row), true).await?;
                Self::refresh_reports(&mut tx, &[report_id]).await?;
                if req.verify {
                    // Queued in the same transaction: no attempt without its job, no job without its attempt.
                    let job = crate::db::jobs::NewJob::verify(ids[0], failpass_shared::api::jobs::PRIORITY_INITIAL, false);
                    Self::enqueue_tx(&mut tx, &job, crate::db::sql::now()).await?;
                }
                let row: crate::db::rows::AttemptRow = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
                     WHERE a.id = $1",
                    crate::db::sql::ATTEMPT_COLUMNS
                )))
                .bind(ids[0])
                .fetch_one(&mut *tx)
                .await?;
                tx.commit().await?;
                Ok((row.into_attempt()?, failpass_shared::api::import::Outcome::Created))
            }

            async fn import_attempts(
                &self,
                reqs: &[failpass_shared::api::attempts::CreateAttemptRequest],
            ) -> crate::db::StorageResult<Vec<crate::db::StorageResult<failpass_shared::api::import::Outcome>>> {
                use failpass_shared::api::import::Outcome;
                use std::collections::HashMap;
                let mut tx = self.write.begin().await?;
                let mut results: Vec<crate::db::StorageResult<Outcome>> = Vec::with_capacity(reqs.len());
                // Resolve every report reference of the batch in one query per form.
                let resolved = Self::resolve_reports(&mut tx, reqs).await?;
                let mut prepared: Vec<(usize, crate::db::sql::PreparedAttempt)> = Vec::with_capacity(reqs.len());
                for (i, (req, report)) in reqs.iter().zip(resolved).enumerate() {
                    match report {
                        Ok((report_id, vague, _)) => {
                            // Keyless records get their content hash as key, so a re-import is a no-op.
                            let key = req.attempt_key.clone().unwrap_or_else(|| format!("h:{}", failpass_shared::hash::content_hash(req)));
                            prepared.push((i, crate::db::sql::PreparedAttempt::new(req, report_id, vague, Some(key))));
                            results.push(Ok(Outcome::Created));
                        }
                        Err(e) => results.push(Err(e)),
                    }
                }
                // Which natural keys exist already?
                let mut report_ids: Vec<i64> = prepared.iter().map(|(_, p)| p.report_id).collect();
                report_ids.sort_unstable();
                report_ids.dedup();
                let mut existing: HashMap<(String, i64, String), (i64, String)> = HashMap::new();
                for chunk in report_ids.chunks(500) {
                    let mut qb = sqlx::QueryBuilder::<$db>::new(
                        "SELECT id, agent, report_id, attempt_key, content_hash FROM attempts WHERE attempt_key IS NOT NULL AND report_id IN (",
                    );
                    let mut sep = qb.separated(", ");
                    for id in chunk {
                        sep.push_bind(*id);
                    }
                    qb.push(")");
                    let rows: Vec<(i64, String, i64, String, Option<String>)> = qb.build_query_as().fetch_all(&mut *tx).await?;
                    for (id, agent, report_id, key, hash) in rows {
                        existing.insert((agent, report_id, key), (id, hash.unwrap_or_default()));
                    }
                }
                // New attempts to insert; a key repeated inside the batch replaces its
                // pending row (the later line wins), so only the last version is stored.
                let mut to_insert: Vec<crate::db::sql::PreparedAttempt> = Vec::new();
                let mut pending: HashMap<(String, i64, String), usize> = HashMap::new();
                // Which input record each pending row answers for.
                let mut slot_record: Vec<usize> = Vec::new();
                let mut touched: Vec<i64> = Vec::new();
                for (i, p) in prepared {
                    let key = (p.agent.clone(), p.report_id, p.attempt_key.clone().unwrap_or_default());
                    if let Some(&slot) = pending.get(&key) {
                        let same = to_insert[slot].content_hash == p.content_hash;
                        results[i] = Ok(if same { Outcome::Unchanged } else { Outcome::Updated });
                        to_insert[slot] = p;
                        slot_record[slot] = i;
                        continue;
                    }
                    match existing.get(&key) {
                        Some((_, hash)) if *hash == p.content_hash => results[i] = Ok(Outcome::Unchanged),
                        Some((id, _)) => {
                            let id = *id;
                            Self::update_attempt(&mut tx, id, &p).await?;
                            touched.push(p.report_id);
                            existing.insert(key, (id, p.content_hash.clone()));
                            results[i] = Ok(Outcome::Updated);
                        }
                        None => {
                            pending.insert(key, to_insert.len());
                            to_insert.push(p);
                            slot_record.push(i);
                        }
                    }
                }
                // `verify` needs a deterministic oracle and something to run; checked per record.
                let mut verified: Vec<usize> = Vec::new();
                for (slot, p) in to_insert.iter().enumerate() {
                    if p.req.verify {
                        verified.push(slot);
                    }
                }
                if !verified.is_empty() {
                    let mut keep = vec![true; to_insert.len()];
                    for &slot in &verified {
                        let p = &to_insert[slot];
                        if let Err(e) = Self::check_verifiable(&mut tx, &p.req, p.report_id).await {
                            keep[slot] = false;
                            results[slot_record[slot]] = Err(e);
                        }
                    }
                    let mut slot = 0;
                    to_insert.retain(|_| {
                        slot += 1;
                        keep[slot - 1]
                    });
                }
                Self::bulk_insert_attempts(&mut tx, &to_insert).await?;
                // Queue their verification in this transaction.
                for p in to_insert.iter().filter(|p| p.req.verify) {
                    let id: i64 = sqlx::query_scalar("SELECT id FROM attempts WHERE report_id = $1 AND agent = $2 AND attempt_key = $3")
                        .bind(p.report_id)
                        .bind(&p.agent)
                        .bind(&p.attempt_key)
                        .fetch_one(&mut *tx)
                        .await?;
                    let job = crate::db::jobs::NewJob::verify(id, failpass_shared::api::jobs::PRIORITY_INITIAL, false);
                    Self::enqueue_tx(&mut tx, &job, crate::db::sql::now()).await?;
                }
                touched.extend(to_insert.iter().map(|p| p.report_id));
                touched.sort_unstable();
                touched.dedup();
                Self::refresh_reports(&mut tx, &touched).await?;
                tx.commit().await?;
                Ok(results)
            }

            async fn get_attempt(
                &self,
                id: i64,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<Option<failpass_shared::api::attempts::AttemptDetail>> {
                let row: Option<crate::db::rows::AttemptRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
                     WHERE a.id = $1 AND {}",
                    crate::db::sql::ATTEMPT_COLUMNS,
                    scope.sql("p")
                )))
                .bind(id)
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
                qb.push(" AND ").push(scope.sql("p"));
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

            async fn create_run(&self, new: &crate::db::NewRun) -> crate::db::StorageResult<(i64, failpass_shared::api::import::Outcome)> {
                use failpass_shared::api::import::Outcome;
                let mut tx = self.write.begin().await?;
                let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM attempts WHERE id = $1").bind(new.attempt_id).fetch_optional(&mut *tx).await?;
                if exists.is_none() {
                    return Err(crate::db::StorageError::NotFound(format!("attempt {}", new.attempt_id)));
                }
                let hash = failpass_shared::hash::content_hash(&(
                    new.trigger.as_str(), new.environment.as_str(), new.exit_status, new.timed_out, new.duration_ms, &new.output,
                    new.output_truncated, new.output_bytes, &new.failing_tests, &new.passing_tests, &new.runner_id, new.started_at,
                ));
                let inserted = Self::insert_run_tx(&mut tx, new, crate::db::sql::now(), Some(&hash)).await?;
                let out = match inserted {
                    Some(id) => (id, Outcome::Created),
                    None => {
                        let id: i64 = sqlx::query_scalar("SELECT id FROM runs WHERE attempt_id = $1 AND content_hash = $2")
                            .bind(new.attempt_id)
                            .bind(&hash)
                            .fetch_one(&mut *tx)
                            .await?;
                        (id, Outcome::Unchanged)
                    }
                };
                tx.commit().await?;
                Ok(out)
            }

            async fn rerun_targets(
                &self,
                report_id: Option<i64>,
                filter: Option<&failpass_shared::api::reports::ReportFilter>,
                verdicts: &[failpass_shared::model::Verdict],
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<Vec<i64>> {
                use failpass_shared::model::{EnvironmentRole, OracleKind};
                use futures_util::TryStreamExt;
                // The database narrows to deterministic oracles; the shared rule decides.
                let kinds: Vec<&str> =
                    OracleKind::ALL.iter().filter(|k| k.is_deterministic()).map(|k| k.as_str()).collect();
                let mut qb = sqlx::QueryBuilder::<$db>::new(
                    "SELECT a.id, o.kind, o.command, a.candidate IS NOT NULL, \
                     EXISTS (SELECT 1 FROM environments e WHERE e.project_id = p.id AND e.role = 'buggy'), \
                     EXISTS (SELECT 1 FROM environments e WHERE e.project_id = p.id AND e.role = 'fixed') \
                     FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
                     JOIN oracles o ON o.report_id = r.id WHERE o.kind IN (",
                );
                let mut sep = qb.separated(", ");
                for k in kinds {
                    sep.push_bind(k);
                }
                qb.push(")");
                Self::push_report_filter(&mut qb, filter.unwrap_or(&Default::default()), scope);
                if let Some(id) = report_id {
                    qb.push(" AND r.id = ").push_bind(id);
                }
                qb.push(" AND a.verdict IN (");
                let mut sep = qb.separated(", ");
                for v in verdicts {
                    sep.push_bind(v.as_str());
                }
                qb.push(") ORDER BY a.id");
                let mut rows = qb.build_query_as::<(i64, String, Option<String>, bool, bool, bool)>().fetch(&self.read);
                let mut out = Vec::new();
                while let Some((id, kind, command, has_candidate, buggy, fixed)) = rows.try_next().await? {
                    let kind: OracleKind = crate::db::rows::parse(&kind, "oracles.kind")?;
                    let roles: Vec<EnvironmentRole> = [(buggy, EnvironmentRole::Buggy), (fixed, EnvironmentRole::Fixed)]
                        .into_iter()
                        .filter_map(|(has, role)| has.then_some(role))
                        .collect();
                    if failpass_shared::grading::verifiable(Some((kind, command.as_deref())), has_candidate, &roles).is_ok() {
                        out.push(id);
                        if out.len() == crate::db::RERUN_LIMIT {
                            break;
                        }
                    }
                }
                Ok(out)
            }

            async fn oracle_summary(
                &self,
                project: Option<&str>,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<failpass_shared::api::oracles::OracleSummary> {
                use failpass_shared::figures::{OracleCounts, oracle_summary};
                use crate::db::rows::{parse, parse_opt};
                let rows: Vec<(Option<String>, Option<String>, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT o.kind, o.source, COUNT(*) FROM reports r JOIN projects p ON p.id = r.project_id \
                     LEFT JOIN oracles o ON o.report_id = r.id \
                     WHERE {} AND ($1 IS NULL OR p.slug = $1) GROUP BY o.kind, o.source",
                    scope.sql("p")
                )))
                .bind(project)
                .fetch_all(&self.read)
                .await?;
                let reports = rows
                    .into_iter()
                    .map(|(kind, source, n)| {
                        Ok((parse_opt(kind.as_deref(), "oracles.kind")?, parse_opt(source.as_deref(), "oracles.source")?, n))
                    })
                    .collect::<crate::db::StorageResult<Vec<_>>>()?;
                let visible = scope.sql("p");
                let minutes: Vec<f64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                    "SELECT o.authoring_minutes FROM oracles o JOIN reports r ON r.id = o.report_id JOIN projects p ON p.id = r.project_id \
                     WHERE o.authoring_minutes IS NOT NULL AND {visible} AND ($1 IS NULL OR p.slug = $1)",
                )))
                .bind(project)
                .fetch_all(&self.read)
                .await?;
                let causes: Vec<(String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT a.failure_cause, COUNT(*) FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
                     WHERE a.failure_cause IS NOT NULL AND a.goal = 'reproduce' AND {visible} AND ($1 IS NULL OR p.slug = $1) \
                     GROUP BY a.failure_cause ORDER BY COUNT(*) DESC, a.failure_cause",
                )))
                .bind(project)
                .fetch_all(&self.read)
                .await?;
                // LLM-verdict precision: each LLM-judged lead (accepted or not)
                // that a deterministic check graded afterwards: in place (the
                // attempt itself regraded; `llm_verdict` keeps the lead), else by
                // a later attempt on its report. Right when that check reproduced it.
                let (judged, right): (i64, i64) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT COUNT(*), COALESCE(SUM(CASE WHEN l.llm_verdict IS NOT NULL THEN \
                       CASE WHEN l.verdict = 'reproduced' THEN 1 ELSE 0 END \
                       WHEN EXISTS (SELECT 1 FROM attempts d WHERE d.report_id = l.report_id \
                       AND d.goal = 'reproduce' AND d.verdict_source = 'deterministic' AND d.verdict = 'reproduced' \
                       AND d.started_at >= l.started_at AND d.id <> l.id) THEN 1 ELSE 0 END), 0) \
                     FROM attempts l JOIN reports r ON r.id = l.report_id JOIN projects p ON p.id = r.project_id \
                     WHERE l.goal = 'reproduce' \
                       AND {visible} AND ($1 IS NULL OR p.slug = $1) \
                       AND ((l.llm_verdict IS NOT NULL AND l.verdict_source = 'deterministic' AND l.verdict IN ('reproduced', 'not_reproduced')) \
                         OR (l.llm_verdict IS NULL AND l.verdict_source = 'llm' AND l.verdict IN ('lead', 'confirmed') \
                         AND EXISTS (SELECT 1 FROM attempts d WHERE d.report_id = l.report_id AND d.goal = 'reproduce' \
                         AND d.verdict_source = 'deterministic' AND d.verdict IN ('reproduced', 'not_reproduced') \
                         AND d.started_at >= l.started_at AND d.id <> l.id)))",
                )))
                .bind(project)
                .fetch_one(&self.read)
                .await?;
                Ok(oracle_summary(OracleCounts {
                    reports,
                    authoring_minutes: minutes,
                    failure_causes: causes
                        .into_iter()
                        .map(|(c, n)| Ok((parse(&c, "attempts.failure_cause")?, n)))
                        .collect::<crate::db::StorageResult<_>>()?,
                    llm_judged: judged,
                    llm_right: right,
                }))
            }

            async fn review_attempt(
                &self,
                id: i64,
                req: &failpass_shared::api::attempts::ReviewRequest,
                reviewer: &str,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<failpass_shared::api::attempts::Attempt> {
                use failpass_shared::model::{attempt_awaits_review, attempt_counts, Goal, Review, Verdict, VerdictSource};
                let mut tx = self.write.begin().await?;
                let row: Option<(i64, String, String, String, bool)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT a.report_id, a.goal, a.verdict, a.verdict_source, r.vague FROM attempts a JOIN reports r ON r.id = a.report_id \
                     JOIN projects p ON p.id = r.project_id WHERE a.id = $1 AND {}",
                    scope.sql("p")
                )))
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
                let Some((report_id, goal, verdict, source, vague)) = row else {
                    return Err(crate::db::StorageError::NotFound(format!("attempt {id}")));
                };
                use crate::db::rows::parse;
                let goal: Goal = parse(&goal, "attempts.goal")?;
                let mut verdict: Verdict = parse(&verdict, "attempts.verdict")?;
                let source: VerdictSource = parse(&source, "attempts.verdict_source")?;
                // The verdict rules: an accepted lead is confirmed; a rejected confirmation is a lead again.
                match (verdict, req.review) {
                    (Verdict::Lead, Review::Accepted) => verdict = Verdict::Confirmed,
                    (Verdict::Confirmed, Review::Rejected) => verdict = Verdict::Lead,
                    (Verdict::Hypothesis | Verdict::Error, _) => {
                        return Err(crate::db::StorageError::invalid(
                            "review",
                            format!("attempt {id} is `{verdict}`: nothing was judged to accept or reject; grade it first (verify or rerun)"),
                        ))
                    }
                    _ => {}
                }
                sqlx::query(
                    "UPDATE attempts SET verdict = $1, review = $2, reviewer = $3, review_comment = $4, graded = $5, counts = $6, awaiting = $7 WHERE id = $8",
                )
                .bind(verdict.as_str())
                .bind(req.review.as_str())
                .bind(reviewer)
                .bind(&req.comment)
                .bind(verdict.is_graded())
                .bind(attempt_counts(goal, verdict, source, Some(req.review), vague))
                .bind(attempt_awaits_review(goal, verdict, source, Some(req.review), vague))
                .bind(id)
                .execute(&mut *tx)
                .await?;
                Self::refresh_reports(&mut tx, &[report_id]).await?;
                tx.commit().await?;
                self.get_attempt(id, scope)
                    .await?
                    .map(|d| d.attempt)
                    .ok_or_else(|| crate::db::StorageError::NotFound(format!("attempt {id}")))
            }

            async fn import_run(
                &self,
                req: &failpass_shared::api::attempts::CreateRunRequest,
            ) -> crate::db::StorageResult<failpass_shared::api::import::Outcome> {
                let attempt_id = match (&req.attempt_id, &req.attempt) {
                    (Some(id), _) => *id,
                    (None, Some(k)) => {
                        let id: Option<i64> = sqlx::query_scalar(
                            "SELECT a.id FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
                             WHERE p.slug = $1 AND r.external_id = $2 AND a.agent = $3 AND a.attempt_key = $4",
                        )
                        .bind(&k.report.project)
                        .bind(k.report.external_id.trim())
                        .bind(k.agent.trim())
                        .bind(&k.attempt_key)
                        .fetch_optional(&self.read)
                        .await?;
                        id.ok_or_else(|| crate::db::StorageError::NotFound(crate::db::sql::describe_attempt_ref(req)))?
                    }
                    (None, None) => return Err(crate::db::StorageError::invalid("attempt_id", "give attempt_id or attempt")),
                };
                Ok(self.create_run(&crate::db::NewRun::from_request(attempt_id, req)).await?.1)
            }

            async fn figure_contributions(
                &self,
                query: &failpass_shared::api::figures::FiguresQuery,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<Vec<failpass_shared::figures::ReportContribution>> {
                // Each dimension its own column, so no name can blur two groups.
                let dims = Self::group_key(query);
                let part = |i: usize| dims.get(i).map_or_else(|| "CAST(NULL AS TEXT)".to_owned(), |d| d.to_string());
                let key = format!("{} AS key, {} AS key1, {}", part(0), part(1), part(2));
                let join = if query.is_per_attempt() || query.agent.is_some() || query.model.is_some() {
                    "JOIN"
                } else {
                    "LEFT JOIN"
                };
                let mut qb = sqlx::QueryBuilder::<$db>::new(format!(
                    "SELECT {key} AS key2, r.has_det_oracle AS det, \
                     CASE WHEN r.oracle_source = 'in_patch_test' THEN TRUE ELSE FALSE END AS in_patch, \
                     COUNT(a.id) AS attempts, \
                     COALESCE(SUM(CASE WHEN a.graded THEN 1 ELSE 0 END), 0) AS graded, \
                     COALESCE(SUM(CASE WHEN a.counts THEN 1 ELSE 0 END), 0) AS counting, \
                     COALESCE(SUM(CASE WHEN a.verdict = 'lead' THEN 1 ELSE 0 END), 0) AS leads, \
                     COALESCE(SUM(CASE WHEN a.verdict = 'error' THEN 1 ELSE 0 END), 0) AS errors, \
                     COALESCE(SUM(a.cost_usd), 0.0) AS cost, \
                     COALESCE(SUM(CASE WHEN a.counts THEN a.cost_usd ELSE 0.0 END), 0.0) AS cost_counting, \
                     CAST(COALESCE(SUM(a.api_calls), 0) AS BIGINT) AS api_calls, \
                     COUNT(a.api_calls) AS with_api_calls \
                     FROM reports r JOIN projects p ON p.id = r.project_id"
                ));
                Self::push_attempt_join(&mut qb, query, join);
                qb.push(" WHERE 1 = 1");
                Self::push_report_filter(&mut qb, &query.filter, scope);
                qb.push(" GROUP BY 1, 2, 3, r.id, r.has_det_oracle, r.oracle_source");
                let rows: Vec<crate::db::rows::ContributionRow> = qb.build_query_as().fetch_all(&self.read).await?;
                Ok(rows
                    .into_iter()
                    .map(|r| failpass_shared::figures::ReportContribution {
                        key: failpass_shared::figures::join_key_parts(r.key, r.key1, r.key2),
                        has_deterministic_oracle: r.det,
                        has_in_patch_test: r.in_patch,
                        attempts: r.attempts.max(0) as u64,
                        attempts_graded: r.graded.max(0) as u64,
                        attempts_counting: r.counting.max(0) as u64,
                        attempts_lead: r.leads.max(0) as u64,
                        attempts_error: r.errors.max(0) as u64,
                        cost_usd: r.cost,
                        cost_counting_usd: r.cost_counting,
                        api_calls: r.api_calls.max(0) as u64,
                        attempts_with_api_calls: r.with_api_calls.max(0) as u64,
                    })
                    .collect())
            }

            async fn metric_values(
                &self,
                query: &failpass_shared::api::figures::DistributionQuery,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<Vec<(String, f64)>> {
                use failpass_shared::api::figures::Metric;
                let column = match query.metric {
                    Metric::CostUsd => "a.cost_usd",
                    Metric::WallSeconds => "a.wall_seconds",
                };
                let q = &query.figures;
                let mut qb = sqlx::QueryBuilder::<$db>::new(format!(
                    "SELECT {} AS key, CAST({column} AS DOUBLE PRECISION) AS value \
                     FROM reports r JOIN projects p ON p.id = r.project_id",
                    Self::group_key(q).join(&format!(" || '{}' || ", failpass_shared::api::figures::KEY_SEPARATOR))
                ));
                Self::push_attempt_join(&mut qb, q, "JOIN");
                qb.push(format!(" WHERE {column} IS NOT NULL"));
                Self::push_report_filter(&mut qb, &q.filter, scope);
                let rows: Vec<(String, f64)> = qb.build_query_as().fetch_all(&self.read).await?;
                Ok(rows)
            }

            async fn facets(
                &self,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<failpass_shared::api::figures::Facets> {
                let visible = scope.sql("p");
                let distinct = |column: &str| {
                    format!(
                        "SELECT DISTINCT {column} FROM attempts a JOIN reports r ON r.id = a.report_id \
                         JOIN projects p ON p.id = r.project_id WHERE {column} IS NOT NULL AND {visible}"
                    )
                };
                let mut agents: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(distinct("a.agent"))).fetch_all(&self.read).await?;
                let mut models: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(distinct("a.model"))).fetch_all(&self.read).await?;
                // Sorted here: PostgreSQL's collation and SQLite's byte order differ.
                agents.sort();
                models.sort();
                Ok(failpass_shared::api::figures::Facets { agents, models })
            }

            async fn report_flows(
                &self,
                filter: &failpass_shared::api::reports::ReportFilter,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<Vec<failpass_shared::figures::ReportFlow>> {
                let mut qb = sqlx::QueryBuilder::<$db>::new(
                    "SELECT r.filed_at AS filed_at, r.created_at AS created_at, r.status AS status, \
                     MIN(a.started_at) AS first_attempt_at, \
                     MIN(CASE WHEN a.counts THEN COALESCE(a.ended_at, a.started_at) END) AS first_counting_at, \
                     MAX(CASE WHEN a.graded THEN COALESCE(a.ended_at, a.started_at) END) AS last_graded_at \
                     FROM reports r JOIN projects p ON p.id = r.project_id \
                     LEFT JOIN attempts a ON a.report_id = r.id AND a.goal = 'reproduce' WHERE 1 = 1",
                );
                Self::push_report_filter(&mut qb, filter, scope);
                qb.push(" GROUP BY r.id, r.filed_at, r.created_at, r.status");
                let rows: Vec<crate::db::rows::FlowRow> = qb.build_query_as().fetch_all(&self.read).await?;
                rows.into_iter().map(crate::db::rows::FlowRow::into_flow).collect()
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
