//! The SQL of attempts, runs, reviews and verification results, written once for both engines
//! (see `mod.rs`).

use crate::db::attempts::*;
use crate::db::common::{ATTEMPT_COLUMNS, ATTEMPT_INSERT, PreparedAttempt};
use crate::db::hooks::Change;
use crate::db::rows::{AttemptRow, RunRow};
use crate::db::{RERUN_LIMIT, common, rows};
use async_trait::async_trait;
use failpass_shared::api::Page;
use failpass_shared::api::attempts::{Attempt, AttemptDetail, AttemptListQuery, CreateAttemptRequest, ReviewRequest};
use failpass_shared::api::hooks::HookEvent;
use failpass_shared::api::import::Outcome;
use failpass_shared::api::reports::ReportFilter;
use failpass_shared::api::status::{GradedBy, LatestVerdict};
use failpass_shared::grading;
use failpass_shared::model::Verdict;
use failpass_shared::model::{EnvironmentRole, OracleKind};

use super::{Db, Engine, Tx};
use crate::db::write_queue::{Answer, Write, mismatch};

/// What a verification's writer reads of the attempt it grades: report id,
/// goal, review, whether the report is vague, the stored grade, verdict and
/// verdict source.
type StoredGrading = (i64, String, Option<String>, bool, Option<sqlx::types::Json<serde_json::Value>>, String, String);
use crate::db::{NewRun, ProjectScope, StorageError, StorageResult};

#[async_trait]
impl AttemptStore for Engine {
    async fn attempt_project(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<String>> {
        Ok(sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT p.slug FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
             WHERE a.id = $1 AND {}",
            scope.sql("p")
        )))
        .bind(id)
        .fetch_optional(&self.read)
        .await?)
    }

    async fn put_trajectory(
        &self,
        id: i64,
        format: &str,
        steps: i64,
        raw_bytes: i64,
        body: &[u8],
    ) -> StorageResult<()> {
        sqlx::query(
            "INSERT INTO attempt_trajectories (attempt_id, format, steps, raw_bytes, body, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (attempt_id) DO UPDATE SET format = excluded.format, \
             steps = excluded.steps, raw_bytes = excluded.raw_bytes, body = excluded.body, created_at = excluded.created_at",
        )
        .bind(id)
        .bind(format)
        .bind(steps)
        .bind(raw_bytes)
        .bind(body)
        .bind(common::now())
        .execute(&self.write)
        .await?;
        Ok(())
    }

    async fn get_trajectory(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<Vec<u8>>> {
        Ok(sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT t.body FROM attempt_trajectories t JOIN attempts a ON a.id = t.attempt_id \
             JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id WHERE t.attempt_id = $1 AND {}",
            scope.sql("p")
        )))
        .bind(id)
        .fetch_optional(&self.read)
        .await?)
    }

    async fn create_attempt(&self, req: &CreateAttemptRequest) -> StorageResult<(Attempt, Outcome)> {
        match self.writer.submit(Write::Attempt(Box::new(req.clone()))).await? {
            Answer::Attempt(attempt, outcome) => Ok((attempt, outcome)),
            _ => Err(mismatch("attempt")),
        }
    }

    async fn attempt_reports(&self, ids: &[i64]) -> StorageResult<Vec<(i64, i64)>> {
        let mut out = Vec::with_capacity(ids.len());
        // Bound as a JSON array of ids would differ by engine; the list is short (one queue page).
        for chunk in ids.chunks(100) {
            let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
            let sql = format!("SELECT id, report_id FROM attempts WHERE id IN ({})", marks.join(", "));
            let mut q = sqlx::query_as::<_, (i64, i64)>(sqlx::AssertSqlSafe(sql));
            for id in chunk {
                q = q.bind(*id);
            }
            out.extend(q.fetch_all(&self.read).await?);
        }
        Ok(out)
    }

    async fn get_attempt(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<AttemptDetail>> {
        let row: Option<AttemptRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
             WHERE a.id = $1 AND {}",
            ATTEMPT_COLUMNS,
            scope.sql("p")
        )))
        .bind(id)
        .fetch_optional(&self.read)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let runs: Vec<RunRow> = sqlx::query_as(
            "SELECT id, attempt_id, trigger, environment, exit_status, timed_out, duration_ms, output, \
             output_truncated, output_bytes, failing_tests, passing_tests, runner_id, started_at, iteration, release, \
             isolation FROM runs WHERE attempt_id = $1 ORDER BY id",
        )
        .bind(id)
        .fetch_all(&self.read)
        .await?;
        Ok(Some(AttemptDetail {
            attempt: row.into_attempt()?,
            runs: runs.into_iter().map(RunRow::into_run).collect::<Result<_, _>>()?,
        }))
    }

    async fn list_attempts(&self, query: &AttemptListQuery, scope: &ProjectScope) -> StorageResult<Page<Attempt>> {
        let mut qb = sqlx::QueryBuilder::<Db>::new(format!(
            "SELECT {} FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
             WHERE 1 = 1",
            ATTEMPT_COLUMNS
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
                StorageError::invalid(
                    "cursor",
                    format!("`{c}` is not a cursor; use the next_cursor of a previous page"),
                )
            })?;
            qb.push(" AND a.id < ").push_bind(id);
        }
        qb.push(" ORDER BY a.id DESC LIMIT ").push_bind(i64::from(query.limit) + 1);
        let rows: Vec<AttemptRow> = qb.build_query_as().fetch_all(&self.read).await?;
        let mut items = rows.into_iter().map(AttemptRow::into_attempt).collect::<Result<Vec<_>, _>>()?;
        let next_cursor = if items.len() > query.limit as usize {
            items.truncate(query.limit as usize);
            items.last().map(|a| a.id.to_string())
        } else {
            None
        };
        Ok(Page { items, next_cursor })
    }

    async fn create_run(&self, new: &NewRun) -> StorageResult<(i64, Outcome)> {
        match self.writer.submit(Write::Run(Box::new(new.clone()))).await? {
            Answer::Run(id, outcome) => Ok((id, outcome)),
            _ => Err(mismatch("run")),
        }
    }

    async fn latest_verdicts(&self, project: &str, limit: usize) -> StorageResult<Vec<LatestVerdict>> {
        type Row = (String, String, Option<String>, String, String, Option<String>, chrono::DateTime<chrono::Utc>);
        let rows: Vec<Row> = sqlx::query_as(
            // One row per report: its newest graded reproduction attempt,
            // the reports taken newest graded first.
            "SELECT r.external_id, r.title, r.url, a.verdict, a.verdict_source, a.review, \
             COALESCE(a.ended_at, a.started_at) AS at \
             FROM reports r JOIN projects p ON p.id = r.project_id \
             JOIN attempts a ON a.id = (SELECT a2.id FROM attempts a2 WHERE a2.report_id = r.id \
               AND a2.goal = 'reproduce' AND a2.graded AND a2.time_stated \
               ORDER BY COALESCE(a2.ended_at, a2.started_at) DESC, a2.id DESC LIMIT 1) \
             WHERE p.slug = $1 AND r.last_graded_at IS NOT NULL \
             ORDER BY r.last_graded_at DESC, r.id DESC LIMIT $2",
        )
        .bind(project)
        .bind(limit.min(1000) as i64)
        .fetch_all(&self.read)
        .await?;
        rows.into_iter()
            .map(|(external_id, title, url, verdict, source, review, at)| {
                let verdict = rows::parse(&verdict, "attempts.verdict")?;
                let source = rows::parse(&source, "attempts.verdict_source")?;
                let review = rows::parse_opt(review.as_deref(), "attempts.review")?;
                Ok(LatestVerdict {
                    external_id,
                    title,
                    url,
                    verdict,
                    graded_by: GradedBy::of(verdict, source, review),
                    at,
                })
            })
            .collect()
    }

    async fn rerun_targets(
        &self,
        report_id: Option<i64>,
        filter: Option<&ReportFilter>,
        verdicts: &[Verdict],
        scope: &ProjectScope,
    ) -> StorageResult<Vec<i64>> {
        use futures_util::TryStreamExt;
        // The database narrows to deterministic oracles; the shared rule decides.
        let kinds: Vec<&str> = OracleKind::ALL.iter().filter(|k| k.is_deterministic()).map(|k| k.as_str()).collect();
        let mut qb = sqlx::QueryBuilder::<Db>::new(
            "SELECT a.id, o.kind, o.command, a.candidate IS NOT NULL, \
             EXISTS (SELECT 1 FROM environments e WHERE e.project_id = p.id AND e.role = 'buggy') \
             OR EXISTS (SELECT 1 FROM project_releases pr WHERE pr.project_id = p.id), \
             EXISTS (SELECT 1 FROM environments e WHERE e.project_id = p.id AND e.role = 'fixed') \
             OR EXISTS (SELECT 1 FROM project_releases pr WHERE pr.project_id = p.id) \
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
            let kind: OracleKind = rows::parse(&kind, "oracles.kind")?;
            let roles: Vec<EnvironmentRole> = [(buggy, EnvironmentRole::Buggy), (fixed, EnvironmentRole::Fixed)]
                .into_iter()
                .filter_map(|(has, role)| has.then_some(role))
                .collect();
            if grading::verifiable(Some((kind, command.as_deref())), has_candidate, &roles).is_ok() {
                out.push(id);
                if out.len() == RERUN_LIMIT {
                    break;
                }
            }
        }
        Ok(out)
    }

    async fn awaiting_review(&self, scope: &ProjectScope, limit: usize) -> StorageResult<(u64, Vec<(i64, i64)>)> {
        // `attempts_awaiting` (migration 37) holds only the waiting attempts.
        let from = format!(
            "FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
             WHERE a.awaiting AND {}",
            scope.sql("p")
        );
        let total: i64 =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) {from}"))).fetch_one(&self.read).await?;
        let items: Vec<(i64, i64)> =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT a.id, a.report_id {from} ORDER BY a.id DESC LIMIT $1")))
                .bind(limit.min(1000) as i64)
                .fetch_all(&self.read)
                .await?;
        Ok((total as u64, items))
    }

    async fn review_attempt(
        &self,
        id: i64,
        req: &ReviewRequest,
        origin: &crate::db::Origin,
        scope: &ProjectScope,
    ) -> StorageResult<Attempt> {
        let write = Write::Review { id, req: req.clone(), origin: origin.clone(), scope: scope.clone() };
        match self.writer.submit(write).await? {
            Answer::Reviewed(attempt) => Ok(attempt),
            _ => Err(mismatch("review")),
        }
    }
}

impl Engine {
    /// Inserts attempts in one multi-row statement; returns their ids in
    /// order when `want_ids` (bulk imports skip that: on SQLite every
    /// returned row is a hand-off between threads).
    pub(in crate::db) async fn insert_attempts(
        tx: &mut Tx,
        rows: &[PreparedAttempt<'_>],
        want_ids: bool,
    ) -> StorageResult<Vec<i64>> {
        use sqlx::types::Json;
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let mut qb = sqlx::QueryBuilder::<Db>::new(ATTEMPT_INSERT);
        qb.push_values(rows, |mut b, p| {
            let r = &p.req;
            b.push_bind(p.report_id)
                .push_bind(r.goal.as_str())
                .push_bind(p.agent.clone())
                .push_bind(r.model.clone())
                .push_bind(r.model_cutoff)
                .push_bind(p.started_at)
                .push_bind(r.ended_at.map(common::secs))
                .push_bind(r.effective_wall_seconds())
                .push_bind(r.cost_usd.unwrap_or(0.0))
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
                .push_bind(p.created_at)
                .push_bind(r.cost_usd.is_some())
                .push_bind(r.rank.map(|k| k as i32))
                .push_bind(p.time_stated);
        });
        let conflict = common::conflict_on_unique(common::ATTEMPT_KEY_TAKEN);
        if !want_ids {
            qb.build().execute(&mut **tx).await.map_err(conflict)?;
            return Ok(Vec::new());
        }
        qb.push(" RETURNING id");
        let ids: Vec<(i64,)> = qb.build_query_as().fetch_all(&mut **tx).await.map_err(conflict)?;
        Ok(ids.into_iter().map(|(id,)| id).collect())
    }

    pub(in crate::db) async fn update_attempt(tx: &mut Tx, id: i64, p: &PreparedAttempt<'_>) -> StorageResult<()> {
        use sqlx::types::Json;
        let r = &p.req;
        sqlx::query(
            // A re-import without times keeps the times stored.
            "UPDATE attempts SET goal = $1, model = $2, model_cutoff = $3, \
             started_at = CASE WHEN $27 THEN $4 ELSE started_at END, ended_at = CASE WHEN $27 THEN $5 ELSE ended_at END, \
             wall_seconds = $6, cost_usd = $7, tokens_in = $8, tokens_out = $9, api_calls = $10, iterations = $11, \
             candidate = $12, signals = $13, verdict = $14, verdict_source = $15, failure_cause = $16, review = $17, \
             reviewer = $18, review_comment = $19, graded = $20, counts = $21, awaiting = $22, content_hash = $23, \
             cost_known = $25, success_rank = $26, time_stated = (time_stated OR $27) WHERE id = $24",
        )
        .bind(r.goal.as_str())
        .bind(&r.model)
        .bind(r.model_cutoff)
        .bind(p.started_at)
        .bind(r.ended_at.map(common::secs))
        .bind(r.effective_wall_seconds())
        .bind(r.cost_usd.unwrap_or(0.0))
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
        .bind(r.cost_usd.is_some())
        .bind(r.rank.map(|k| k as i32))
        .bind(p.time_stated)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    /// `verify` needs something deterministic to grade by and something to run.
    pub(in crate::db) async fn check_verifiable(
        tx: &mut Tx,
        req: &CreateAttemptRequest,
        report_id: i64,
    ) -> StorageResult<()> {
        use failpass_shared::grading::Unverifiable;
        let oracle: Option<(String, Option<String>)> =
            sqlx::query_as("SELECT kind, command FROM oracles WHERE report_id = $1")
                .bind(report_id)
                .fetch_optional(&mut **tx)
                .await?;
        // A project that builds its releases grades on the report's own (its grade says what is missing).
        let roles: Vec<String> = sqlx::query_scalar(
            "SELECT e.role FROM environments e JOIN reports r ON r.project_id = e.project_id WHERE r.id = $1 \
             UNION ALL SELECT x.role FROM (SELECT 'buggy' AS role UNION ALL SELECT 'fixed') x \
             WHERE EXISTS (SELECT 1 FROM project_releases pr JOIN reports r ON r.project_id = pr.project_id WHERE r.id = $1)",
        )
        .bind(report_id)
        .fetch_all(&mut **tx)
        .await?;
        let kind = match &oracle {
            Some((k, _)) => Some(rows::parse::<OracleKind>(k, "oracles.kind")?),
            None => None,
        };
        let roles = roles
            .iter()
            .map(|r| rows::parse(r, "environments.role"))
            .collect::<StorageResult<Vec<EnvironmentRole>>>()?;
        let command = oracle.as_ref().and_then(|(_, c)| c.as_deref());
        let invalid = StorageError::invalid;
        match grading::verifiable(kind.map(|k| (k, command)), req.candidate.is_some(), &roles) {
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
                format!(
                    "report {report_id}'s project has no buggy and fixed environment to run in; an admin adds them on the project's set-up page first"
                ),
            )),
        }
    }

    /// Writes one run; `None` when a run with the same content hash is
    /// already stored for the attempt (a run without a hash is always written).
    pub(in crate::db) async fn insert_run_tx(
        tx: &mut Tx,
        new: &NewRun,
        now: chrono::DateTime<chrono::Utc>,
        content_hash: Option<&str>,
    ) -> StorageResult<Option<i64>> {
        use sqlx::types::Json;
        Ok(sqlx::query_scalar(
            "INSERT INTO runs (attempt_id, trigger, environment, exit_status, timed_out, duration_ms, output, \
             output_truncated, output_bytes, failing_tests, passing_tests, runner_id, started_at, content_hash, \
             iteration, release, isolation) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) \
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
        .bind(new.started_at.map(common::secs).unwrap_or(now))
        .bind(content_hash)
        .bind(new.iteration.map(|i| i as i32))
        .bind(&new.release)
        .bind(new.isolation.as_ref().map(Json))
        .fetch_optional(&mut **tx)
        .await?)
    }

    /// Recomputes reports' counters, best verdict, status and spend from
    /// their attempts: one `UPDATE … FROM` of the aggregate per chunk of ids;
    /// then their figures' rollups.
    pub(in crate::db) async fn refresh_reports(tx: &mut Tx, ids: &[i64]) -> StorageResult<()> {
        let best = rank_verdict_sql("agg.best_rank");
        for chunk in ids.chunks(500) {
            let mut qb = sqlx::QueryBuilder::<Db>::new(
                "UPDATE reports SET attempts = agg.attempts, attempts_graded = agg.graded, \
                 attempts_counting = agg.counting, attempts_awaiting = agg.awaiting, ",
            );
            qb.push(format!("best_verdict = {best}, "));
            qb.push(
                "cost_usd = agg.cost, first_counting_at = agg.first_counting_at, first_attempt_at = agg.first_attempt_at, \
                 last_graded_at = agg.last_graded_at, last_activity_at = ",
            );
            qb.push_bind(common::now());
            qb.push(" FROM (");
            qb.push(report_aggregate_sql("a.report_id"));
            let mut sep = qb.separated(", ");
            for id in chunk {
                sep.push_bind(*id);
            }
            qb.push(") GROUP BY a.report_id) agg WHERE reports.id = agg.report_id");
            qb.build().execute(&mut **tx).await?;
            Self::set_status(tx, chunk).await?;
        }
        Self::refresh_figures(tx, ids).await
    }

    /// Stores a verification's runs and (unless a re-check) the attempt's new
    /// verdict, signals and grade, then refreshes the report.
    pub(in crate::db) async fn write_verification(
        tx: &mut Tx,
        v: &Verification,
        now: chrono::DateTime<chrono::Utc>,
    ) -> StorageResult<()> {
        use failpass_shared::model::{Goal, Review, VerdictSource, attempt_awaits_review, attempt_counts};
        use sqlx::types::Json;
        let attempt_id = match &v.new_attempt {
            None => v.attempt_id,
            Some(req) => {
                // Found again by its key if an earlier try of the job stored it.
                let (report_id, vague, _) = Self::resolve_report(tx, req).await?;
                let existing: Option<i64> = sqlx::query_scalar(
                    "SELECT id FROM attempts WHERE report_id = $1 AND agent = $2 AND attempt_key = $3",
                )
                .bind(report_id)
                .bind(req.agent.trim())
                .bind(&req.attempt_key)
                .fetch_optional(&mut **tx)
                .await?;
                match existing {
                    Some(id) => id,
                    None => {
                        let row = PreparedAttempt::new(req, report_id, vague, req.attempt_key.clone());
                        Self::insert_attempts(tx, std::slice::from_ref(&row), true).await?[0]
                    }
                }
            }
        };
        let row: Option<StoredGrading> = sqlx::query_as(
            "SELECT a.report_id, a.goal, a.review, r.vague, a.grade, a.verdict, a.verdict_source \
             FROM attempts a JOIN reports r ON r.id = a.report_id WHERE a.id = $1",
        )
        .bind(attempt_id)
        .fetch_optional(&mut **tx)
        .await?;
        let Some((report_id, goal, review, vague, stored, old_verdict, old_source)) = row else {
            return Err(StorageError::NotFound(format!("attempt {attempt_id}")));
        };
        let watched = Self::watched_statuses(tx, &[report_id]).await?;
        // Merged with what is stored now (a verification and a re-check may
        // have run side by side); an unreadable stored grade is replaced.
        let stored = stored.and_then(|g| serde_json::from_value(g.0).ok());
        let grade = v.grade.clone().stored_over(stored, v.sets_verdict);
        for run in &v.runs {
            // Repeats of one run may be alike, so no content hash: each is kept.
            Self::insert_run_tx(tx, &NewRun { attempt_id, ..run.clone() }, now, None).await?;
        }
        if v.sets_verdict {
            let goal: Goal = rows::parse(&goal, "attempts.goal")?;
            let review: Option<Review> = rows::parse_opt(review.as_deref(), "attempts.review")?;
            let source = VerdictSource::Deterministic;
            // An LLM's lead regraded by execution: keep what the LLM said,
            // so LLM-verdict precision can score it.
            let changed = (old_verdict != v.verdict.as_str()).then(|| Change {
                event: HookEvent::Verdict,
                report_id,
                attempt_id: Some(attempt_id),
                from: Some(old_verdict.clone()),
                to: v.verdict.as_str().to_owned(),
            });
            let llm_verdict =
                (old_source == "llm" && matches!(old_verdict.as_str(), "lead" | "confirmed")).then_some(old_verdict);
            sqlx::query(
                "UPDATE attempts SET verdict = $1, verdict_source = $2, failure_cause = $3, signals = $4, flaky = $5, grade = $6, \
                 graded = $7, counts = $8, awaiting = $9, failure_signature = $11, llm_verdict = COALESCE(llm_verdict, $12) WHERE id = $10",
            )
            .bind(v.verdict.as_str())
            .bind(source.as_str())
            .bind(v.failure_cause.map(|c| c.as_str()))
            .bind(Json(&v.signals))
            .bind(v.flaky)
            .bind(Json(&grade))
            .bind(v.verdict.is_graded())
            .bind(attempt_counts(goal, v.verdict, source, review, vague))
            .bind(attempt_awaits_review(goal, v.verdict, source, review, vague))
            .bind(attempt_id)
            .bind(grade.buggy_signature())
            .bind(llm_verdict)
            .execute(&mut **tx)
            .await?;
            Self::tell_hooks(tx, changed.as_slice()).await?;
            if let Some(r) = &v.refined {
                sqlx::query(
                    "UPDATE attempts SET candidate = $1, iterations = $2, cost_usd = $3, cost_known = TRUE, wall_seconds = $4, tokens_in = $5, \
                     tokens_out = $6, ended_at = $7 WHERE id = $8",
                )
                .bind(&r.candidate)
                .bind(r.iterations.min(i32::MAX as u32) as i32)
                .bind(r.cost_usd)
                .bind(r.wall_seconds)
                .bind(r.tokens_in)
                .bind(r.tokens_out)
                .bind(now)
                .bind(attempt_id)
                .execute(&mut **tx)
                .await?;
            }
        } else {
            // A re-check keeps the verdict and records its outcome beside the grade.
            sqlx::query("UPDATE attempts SET grade = $1 WHERE id = $2")
                .bind(Json(&grade))
                .bind(attempt_id)
                .execute(&mut **tx)
                .await?;
        }
        if let Some(regressed) = v.report_regressed {
            sqlx::query("UPDATE reports SET regressed = $1 WHERE id = $2")
                .bind(regressed)
                .bind(report_id)
                .execute(&mut **tx)
                .await?;
        }
        Self::refresh_reports(tx, &[report_id]).await?;
        Self::tell_status_changes(tx, &watched).await
    }
}
