//! The job queue, runners' heartbeats, environments and verification
//! results: one trait, stamped out per engine by `impl_jobs!` (SQL shared,
//! the claim's row lock the only dialect difference).
//!
//! States and rules are in docs/job-queue.md. In short: a claim takes the
//! highest-priority due job (or a running one whose lease expired) and
//! leases it to its owner; renew, complete and fail are fenced by owner, so a
//! worker that lost its lease cannot overwrite a result. Times are passed in
//! (`now`) so tests can move the clock.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use failpass_shared::api::attempts::Signals;
use failpass_shared::api::jobs::{CreateEnvironmentRequest, Environment, Job, JobPayload, QueueOverview, Runner};
use failpass_shared::model::{FailureCause, JobKind, JobStatus, Verdict};

use super::{NewRun, StorageResult};

/// A job to enqueue.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    pub kind: JobKind,
    pub payload: JobPayload,
    pub priority: i32,
    pub max_tries: i64,
    /// At most one waiting or running job per key (`verify:42`).
    pub dedup_key: Option<String>,
}

impl NewJob {
    /// Runs the refine loop on a report.
    pub fn refine(report_id: i64, priority: i32, manual: bool) -> Self {
        Self {
            kind: JobKind::Refine,
            payload: JobPayload { report_id: Some(report_id), manual, ..Default::default() },
            priority,
            max_tries: 2,
            dedup_key: Some(format!("refine:{report_id}")),
        }
    }

    /// Re-checks a reproduced attempt against the environment named `environment`.
    pub fn recheck(attempt_id: i64, environment: &str, priority: i32, manual: bool) -> Self {
        Self {
            kind: JobKind::Recheck,
            payload: JobPayload {
                attempt_id: Some(attempt_id),
                environment: Some(environment.to_owned()),
                manual,
                ..Default::default()
            },
            priority,
            max_tries: 3,
            dedup_key: Some(format!("recheck:{attempt_id}:{environment}")),
        }
    }

    pub fn verify(attempt_id: i64, priority: i32, manual: bool) -> Self {
        Self {
            kind: JobKind::Verify,
            payload: JobPayload { attempt_id: Some(attempt_id), manual, ..Default::default() },
            priority,
            max_tries: 3,
            dedup_key: Some(format!("verify:{attempt_id}")),
        }
    }
}

/// What grading an attempt found, written with the job's completion.
#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    pub attempt_id: i64,
    pub verdict: Verdict,
    pub failure_cause: Option<FailureCause>,
    pub signals: Signals,
    pub flaky: bool,
    /// The grading's counts, reason and signatures (stored as JSON, shown on the
    /// report page); a re-check's carries only its re-check.
    pub grade: failpass_shared::grading::GradeRecord,
    pub runs: Vec<NewRun>,
    /// Replace the attempt's verdict (an initial verification or a rerun);
    /// `false` for a re-check, which only adds runs and the re-check outcome.
    pub sets_verdict: bool,
    /// Set by the refine loop: the final candidate, the iterations it took,
    /// and their summed cost and time.
    pub refined: Option<Refined>,
    /// An attempt to create with the result (the refine loop's), in the same
    /// transaction as the job's completion; `attempt_id` and the runs'
    /// attempt ids are then placeholders.
    pub new_attempt: Option<failpass_shared::api::attempts::CreateAttemptRequest>,
}

impl Verification {
    /// A verdict for `attempt_id` and nothing else: no signals, runs or
    /// grade yet, replacing the attempt's verdict.
    pub fn new(attempt_id: i64, verdict: Verdict) -> Self {
        Self {
            attempt_id,
            verdict,
            failure_cause: None,
            signals: Signals::default(),
            flaky: false,
            grade: Default::default(),
            runs: Vec::new(),
            sets_verdict: true,
            refined: None,
            new_attempt: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Refined {
    pub candidate: String,
    pub iterations: u32,
    pub cost_usd: f64,
    pub wall_seconds: f64,
    pub tokens_in: i64,
    pub tokens_out: i64,
}

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// Stored; the job is done.
    Done,
    /// The caller no longer holds the lease; nothing was written.
    Fenced,
}

/// Whether a failed try may be tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Back to the queue after a backoff, until the tries run out.
    Later,
    /// Retrying cannot help: the job fails now.
    Never,
}

/// Backoff before try `tries + 1` after a transient failure: 5 s, 10 s, 20 s … capped at 10 minutes.
pub fn backoff(tries: i64) -> Duration {
    let secs = 5i64.saturating_mul(1i64 << (tries.clamp(1, 20) - 1)).min(600);
    Duration::seconds(secs)
}

#[async_trait]
pub trait JobStore: Send + Sync {
    /// The database's clock. Workers on many machines take lease times from
    /// it, so a worker whose own clock runs fast cannot expire others' leases.
    async fn clock(&self) -> StorageResult<DateTime<Utc>>;

    /// Queues a job; when its dedup key is already waiting or running, returns that job and `false`.
    async fn enqueue(&self, job: &NewJob, now: DateTime<Utc>) -> StorageResult<(Job, bool)>;

    /// Queues several jobs in one transaction; returns the new jobs' ids and
    /// how many were already waiting or running.
    async fn enqueue_many(&self, jobs: &[NewJob], now: DateTime<Utc>) -> StorageResult<(Vec<i64>, usize)>;

    /// Leases the next due job to `owner` until `now + lease`: queued jobs
    /// whose `run_after` has come, or running jobs whose lease expired (their
    /// worker died). Jobs out of tries are failed instead of claimed.
    async fn claim(&self, owner: &str, now: DateTime<Utc>, lease: Duration) -> StorageResult<Option<Job>>;

    /// Extends `owner`'s lease; `false` when it no longer holds it.
    async fn renew(&self, id: i64, owner: &str, now: DateTime<Utc>, lease: Duration) -> StorageResult<bool>;

    /// Completes a job held by `owner`, writing the verification (if any) in
    /// the same transaction. `Fenced` (and nothing written) if the lease is lost.
    async fn complete(
        &self,
        id: i64,
        owner: &str,
        now: DateTime<Utc>,
        result: Option<&Verification>,
    ) -> StorageResult<Finish>;

    /// Records a failed try. Transient failures go back to the queue after a
    /// backoff until the tries run out; permanent ones fail the job at once.
    /// `None` when `owner` no longer holds the lease.
    async fn fail(
        &self,
        id: i64,
        owner: &str,
        now: DateTime<Utc>,
        error: &str,
        retry: Retry,
    ) -> StorageResult<Option<JobStatus>>;

    /// A job, if the scope may see its project.
    async fn get_job(&self, id: i64, scope: &super::ProjectScope) -> StorageResult<Option<Job>>;

    /// Waiting and running jobs (manual first), recent failures, runners, timing;
    /// jobs of projects outside `scope` are left out.
    async fn queue_overview(&self, now: DateTime<Utc>, scope: &super::ProjectScope) -> StorageResult<QueueOverview>;

    /// A runner's heartbeat (and what it is doing).
    async fn heartbeat(&self, runner: &Runner) -> StorageResult<()>;

    /// Failure signature groups over graded attempts (optionally one project's).
    async fn signature_groups(
        &self,
        project: Option<&str>,
        scope: &super::ProjectScope,
    ) -> StorageResult<Vec<failpass_shared::api::jobs::SignatureGroup>>;

    async fn create_environment(&self, project: &str, req: &CreateEnvironmentRequest) -> StorageResult<Environment>;
    async fn list_environments(&self, project: &str) -> StorageResult<Vec<Environment>>;
}

#[derive(sqlx::FromRow)]
pub struct JobRow {
    pub id: i64,
    pub kind: String,
    pub payload: sqlx::types::Json<JobPayload>,
    pub status: String,
    pub priority: i32,
    pub attempts: i64,
    pub max_attempts: i64,
    pub run_after: DateTime<Utc>,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

pub const JOB_COLUMNS: &str = "id, kind, payload, status, priority, attempts, max_attempts, run_after, lease_owner, \
     lease_expires_at, last_error, created_at, started_at, finished_at";

impl JobRow {
    pub fn into_job(self) -> StorageResult<Job> {
        Ok(Job {
            id: self.id,
            kind: super::rows::parse(&self.kind, "jobs.kind")?,
            payload: self.payload.0,
            status: super::rows::parse(&self.status, "jobs.status")?,
            priority: self.priority,
            tries: self.attempts,
            max_tries: self.max_attempts,
            run_after: self.run_after,
            lease_owner: self.lease_owner,
            lease_expires_at: self.lease_expires_at,
            last_error: self.last_error,
            created_at: self.created_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
        })
    }
}

#[derive(sqlx::FromRow)]
pub struct EnvironmentRow {
    pub id: i64,
    pub project: String,
    pub name: String,
    pub role: String,
    pub recipe: sqlx::types::Json<failpass_shared::api::jobs::Recipe>,
    pub recipe_hash: String,
    pub created_at: DateTime<Utc>,
}

impl EnvironmentRow {
    pub fn into_environment(self) -> StorageResult<Environment> {
        Ok(Environment {
            id: self.id,
            project: self.project,
            name: self.name,
            role: super::rows::parse(&self.role, "environments.role")?,
            recipe: self.recipe.0,
            recipe_hash: self.recipe_hash,
            created_at: self.created_at,
        })
    }
}

macro_rules! impl_jobs {
    ($ty:ty, $db:ty) => {
        #[async_trait::async_trait]
        impl crate::db::jobs::JobStore for $ty {
            async fn clock(&self) -> crate::db::StorageResult<chrono::DateTime<chrono::Utc>> {
                Ok(sqlx::query_scalar(Self::NOW).fetch_one(&self.read).await?)
            }

            async fn enqueue(
                &self,
                job: &crate::db::jobs::NewJob,
                now: chrono::DateTime<chrono::Utc>,
            ) -> crate::db::StorageResult<(failpass_shared::api::jobs::Job, bool)> {
                let mut tx = self.write.begin().await?;
                let out = Self::enqueue_tx(&mut tx, job, now).await?;
                tx.commit().await?;
                Ok(out)
            }

            async fn enqueue_many(
                &self,
                jobs: &[crate::db::jobs::NewJob],
                now: chrono::DateTime<chrono::Utc>,
            ) -> crate::db::StorageResult<(Vec<i64>, usize)> {
                let mut tx = self.write.begin().await?;
                let (mut queued, mut already) = (Vec::new(), 0);
                for job in jobs {
                    match Self::enqueue_tx(&mut tx, job, now).await? {
                        (j, true) => queued.push(j.id),
                        (_, false) => already += 1,
                    }
                }
                tx.commit().await?;
                Ok((queued, already))
            }

            async fn claim(
                &self,
                owner: &str,
                now: chrono::DateTime<chrono::Utc>,
                lease: chrono::Duration,
            ) -> crate::db::StorageResult<Option<failpass_shared::api::jobs::Job>> {
                // Job timings keep milliseconds; lease arithmetic stays in whole seconds.
                let precise = chrono::SubsecRound::trunc_subsecs(now, 3);
                let now = crate::db::sql::secs(now);
                let mut tx = self.write.begin().await?;
                // Expired leases out of tries fail rather than run again.
                sqlx::query(
                    "UPDATE jobs SET status = 'failed', finished_at = $1, updated_at = $1, \
                     last_error = COALESCE(last_error, 'the worker stopped') || ' (lease expired after the last try)' \
                     WHERE status = 'running' AND lease_expires_at < $1 AND attempts >= max_attempts",
                )
                .bind(now)
                .execute(&mut *tx)
                .await?;
                let row: Option<crate::db::jobs::JobRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "UPDATE jobs SET status = 'running', lease_owner = $1, lease_expires_at = $2, attempts = attempts + 1, \
                     started_at = $4, updated_at = $3 \
                     WHERE id = (SELECT id FROM jobs WHERE (status = 'queued' AND run_after <= $3) \
                        OR (status = 'running' AND lease_expires_at < $3 AND attempts < max_attempts) \
                        ORDER BY priority DESC, id LIMIT 1 {}) \
                     RETURNING {}",
                    Self::SKIP_LOCKED,
                    crate::db::jobs::JOB_COLUMNS
                )))
                .bind(owner)
                .bind(now + lease)
                .bind(now)
                .bind(precise)
                .fetch_optional(&mut *tx)
                .await?;
                tx.commit().await?;
                row.map(crate::db::jobs::JobRow::into_job).transpose()
            }

            async fn renew(
                &self,
                id: i64,
                owner: &str,
                now: chrono::DateTime<chrono::Utc>,
                lease: chrono::Duration,
            ) -> crate::db::StorageResult<bool> {
                let now = crate::db::sql::secs(now);
                let done = sqlx::query(
                    "UPDATE jobs SET lease_expires_at = $1, updated_at = $2 WHERE id = $3 AND status = 'running' AND lease_owner = $4",
                )
                .bind(now + lease)
                .bind(now)
                .bind(id)
                .bind(owner)
                .execute(&self.write)
                .await?;
                Ok(done.rows_affected() == 1)
            }

            async fn complete(
                &self,
                id: i64,
                owner: &str,
                now: chrono::DateTime<chrono::Utc>,
                result: Option<&crate::db::jobs::Verification>,
            ) -> crate::db::StorageResult<crate::db::jobs::Finish> {
                let precise = chrono::SubsecRound::trunc_subsecs(now, 3);
                let now = crate::db::sql::secs(now);
                let mut tx = self.write.begin().await?;
                let fenced = sqlx::query(
                    "UPDATE jobs SET status = 'done', finished_at = $1, updated_at = $1, last_error = NULL \
                     WHERE id = $2 AND status = 'running' AND lease_owner = $3",
                )
                .bind(precise)
                .bind(id)
                .bind(owner)
                .execute(&mut *tx)
                .await?;
                if fenced.rows_affected() != 1 {
                    return Ok(crate::db::jobs::Finish::Fenced); // dropped: rolled back
                }
                if let Some(v) = result {
                    Self::write_verification(&mut tx, v, now).await?;
                }
                sqlx::query("UPDATE runners SET jobs_done = jobs_done + 1, current_job = NULL WHERE id = $1")
                    .bind(owner)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(crate::db::jobs::Finish::Done)
            }

            async fn fail(
                &self,
                id: i64,
                owner: &str,
                now: chrono::DateTime<chrono::Utc>,
                error: &str,
                retry: crate::db::jobs::Retry,
            ) -> crate::db::StorageResult<Option<failpass_shared::model::JobStatus>> {
                use failpass_shared::model::JobStatus;
                let now = crate::db::sql::secs(now);
                let mut tx = self.write.begin().await?;
                let held: Option<(i64, i64)> = sqlx::query_as(
                    "SELECT attempts, max_attempts FROM jobs WHERE id = $1 AND status = 'running' AND lease_owner = $2",
                )
                .bind(id)
                .bind(owner)
                .fetch_optional(&mut *tx)
                .await?;
                let Some((tries, max)) = held else { return Ok(None) };
                let status = if retry == crate::db::jobs::Retry::Never || tries >= max { JobStatus::Failed } else { JobStatus::Queued };
                let error: String = error.chars().take(4000).collect();
                sqlx::query(
                    "UPDATE jobs SET status = $1, last_error = $2, run_after = $3, lease_owner = NULL, lease_expires_at = NULL, \
                     finished_at = $4, updated_at = $5 WHERE id = $6",
                )
                .bind(status.as_str())
                .bind(&error)
                .bind(now + crate::db::jobs::backoff(tries))
                .bind((status == JobStatus::Failed).then_some(now))
                .bind(now)
                .bind(id)
                .execute(&mut *tx)
                .await?;
                sqlx::query("UPDATE runners SET current_job = NULL WHERE id = $1").bind(owner).execute(&mut *tx).await?;
                tx.commit().await?;
                Ok(Some(status))
            }

            async fn get_job(&self, id: i64, scope: &crate::db::ProjectScope) -> crate::db::StorageResult<Option<failpass_shared::api::jobs::Job>> {
                let row: Option<crate::db::jobs::JobRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM jobs WHERE id = $1 AND {}",
                    crate::db::jobs::JOB_COLUMNS,
                    scope.sql_project_id("project_id")
                )))
                .bind(id)
                .fetch_optional(&self.read)
                .await?;
                row.map(crate::db::jobs::JobRow::into_job).transpose()
            }

            async fn queue_overview(
                &self,
                now: chrono::DateTime<chrono::Utc>,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<failpass_shared::api::jobs::QueueOverview> {
                let now = crate::db::sql::secs(now);
                let visible = scope.sql_project_id("project_id");
                let day_ago = now - chrono::Duration::days(1);
                let (queued, running): (i64, i64) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT COALESCE(SUM(CASE WHEN status = 'queued' THEN 1 ELSE 0 END), 0), \
                     COALESCE(SUM(CASE WHEN status = 'running' THEN 1 ELSE 0 END), 0) FROM jobs WHERE status IN ('queued', 'running') \
                     AND {visible}"
                )))
                .fetch_one(&self.read)
                .await?;
                let (failed_last_day, done_last_day): (i64, i64) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT COALESCE(SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END), 0), \
                     COALESCE(SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END), 0) FROM jobs \
                     WHERE status IN ('failed', 'done') AND finished_at >= $1 \
                     AND {visible}"
                )))
                .bind(day_ago)
                .fetch_one(&self.read)
                .await?;
                let finished: Vec<(chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT started_at, finished_at FROM jobs WHERE status = 'done' AND started_at IS NOT NULL \
                     AND finished_at IS NOT NULL AND {visible} ORDER BY finished_at DESC LIMIT 200"
                )))
                .fetch_all(&self.read)
                .await?;
                let durations: Vec<f64> =
                    finished.iter().map(|(s, f)| (*f - *s).num_milliseconds().max(0) as f64 / 1000.0).collect();
                let mean_job_seconds = failpass_shared::figures::mean_seconds(&durations);
                let jobs: Vec<crate::db::jobs::JobRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM jobs WHERE status IN ('queued', 'running') AND {} \
                     ORDER BY CASE WHEN status = 'running' THEN 0 ELSE 1 END, priority DESC, id LIMIT 200",
                    crate::db::jobs::JOB_COLUMNS,
                    visible
                )))
                .fetch_all(&self.read)
                .await?;
                let failures: Vec<crate::db::jobs::JobRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM jobs WHERE status = 'failed' AND {} ORDER BY finished_at DESC, id DESC LIMIT 20",
                    crate::db::jobs::JOB_COLUMNS,
                    visible
                )))
                .fetch_all(&self.read)
                .await?;
                let runners: Vec<(String, String, i64, chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>, Option<i64>, i64)> =
                    sqlx::query_as(
                        "SELECT id, host, pid, started_at, last_heartbeat, current_job, jobs_done FROM runners \
                         ORDER BY last_heartbeat DESC LIMIT 100",
                    )
                    .fetch_all(&self.read)
                    .await?;
                let mut runners: Vec<failpass_shared::api::jobs::Runner> = runners
                    .into_iter()
                    .map(|(id, host, pid, started_at, last_heartbeat, current_job, jobs_done)| failpass_shared::api::jobs::Runner {
                        id, host, pid, started_at, last_heartbeat, current_job, jobs_done,
                    })
                    .collect();
                // What a runner did is counted in the jobs the caller may see,
                // and a job it holds that the caller may not see is not named.
                if *scope != crate::db::ProjectScope::All {
                    let done: Vec<(String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                        "SELECT lease_owner, COUNT(*) FROM jobs WHERE status = 'done' AND lease_owner IS NOT NULL AND {visible} GROUP BY lease_owner"
                    )))
                    .fetch_all(&self.read)
                    .await?;
                    for r in &mut runners {
                        r.jobs_done = done.iter().find(|(owner, _)| *owner == r.id).map_or(0, |(_, n)| *n);
                        if let Some(job) = r.current_job {
                            if self.get_job(job, scope).await?.is_none() {
                                r.current_job = None;
                            }
                        }
                    }
                }
                let alive = runners.iter().filter(|r| failpass_shared::figures::runner_alive(r, now)).count();
                let estimated_wait_seconds = failpass_shared::figures::queue_wait(alive, mean_job_seconds, queued + running);
                Ok(failpass_shared::api::jobs::QueueOverview {
                    queued,
                    running,
                    failed_last_day,
                    done_last_day,
                    mean_job_seconds,
                    estimated_wait_seconds,
                    jobs: jobs.into_iter().map(crate::db::jobs::JobRow::into_job).collect::<Result<_, _>>()?,
                    recent_failures: failures.into_iter().map(crate::db::jobs::JobRow::into_job).collect::<Result<_, _>>()?,
                    runners,
                })
            }

            async fn heartbeat(&self, r: &failpass_shared::api::jobs::Runner) -> crate::db::StorageResult<()> {
                sqlx::query(
                    "INSERT INTO runners (id, host, pid, started_at, last_heartbeat, current_job, jobs_done) \
                     VALUES ($1, $2, $3, $4, $5, $6, 0) \
                     ON CONFLICT (id) DO UPDATE SET last_heartbeat = $5, current_job = $6",
                )
                .bind(&r.id)
                .bind(&r.host)
                .bind(r.pid)
                .bind(crate::db::sql::secs(r.started_at))
                .bind(crate::db::sql::secs(r.last_heartbeat))
                .bind(r.current_job)
                .execute(&self.write)
                .await?;
                // Runners silent for a day are gone (restarted processes get new ids).
                sqlx::query("DELETE FROM runners WHERE last_heartbeat < $1")
                    .bind(crate::db::sql::secs(r.last_heartbeat) - chrono::Duration::days(1))
                    .execute(&self.write)
                    .await?;
                Ok(())
            }

            async fn signature_groups(
                &self,
                project: Option<&str>,
                scope: &crate::db::ProjectScope,
            ) -> crate::db::StorageResult<Vec<failpass_shared::api::jobs::SignatureGroup>> {
                let visible = scope.sql("p");
                let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT a.failure_signature, COUNT(*), COUNT(DISTINCT a.report_id), \
                     COALESCE(SUM(CASE WHEN a.verdict = 'reproduced' THEN 1 ELSE 0 END), 0) \
                     FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
                     WHERE a.failure_signature IS NOT NULL AND {visible} AND ($1 IS NULL OR p.slug = $1) \
                     GROUP BY a.failure_signature ORDER BY COUNT(*) DESC, a.failure_signature LIMIT 200"
                )))
                .bind(project)
                .fetch_all(&self.read)
                .await?;
                let mut out = Vec::with_capacity(rows.len());
                for (signature, attempts, reports, reproduced) in rows {
                    let report_ids: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                        "SELECT DISTINCT a.report_id FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
                         WHERE a.failure_signature = $1 AND {visible} AND ($2 IS NULL OR p.slug = $2) ORDER BY a.report_id LIMIT 10"
                    )))
                    .bind(&signature)
                    .bind(project)
                    .fetch_all(&self.read)
                    .await?;
                    out.push(failpass_shared::api::jobs::SignatureGroup { signature, attempts, reports, reproduced, report_ids });
                }
                Ok(out)
            }

            async fn create_environment(
                &self,
                project: &str,
                req: &failpass_shared::api::jobs::CreateEnvironmentRequest,
            ) -> crate::db::StorageResult<failpass_shared::api::jobs::Environment> {
                use sqlx::types::Json;
                let mut tx = self.write.begin().await?;
                let project_id = Self::project_id(&mut tx, project).await?;
                let name = req.name.trim();
                sqlx::query(
                    "INSERT INTO environments (project_id, name, role, recipe, recipe_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6) \
                     ON CONFLICT (project_id, name) DO UPDATE SET role = $3, recipe = $4, recipe_hash = $5",
                )
                .bind(project_id)
                .bind(name)
                .bind(req.role.as_str())
                .bind(Json(&req.recipe))
                .bind(req.recipe.hash())
                .bind(crate::db::sql::now())
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                self.list_environments(project)
                    .await?
                    .into_iter()
                    .find(|e| e.name == name)
                    .ok_or_else(|| crate::db::StorageError::NotFound(format!("environment `{name}`")))
            }

            async fn list_environments(&self, project: &str) -> crate::db::StorageResult<Vec<failpass_shared::api::jobs::Environment>> {
                let rows: Vec<crate::db::jobs::EnvironmentRow> = sqlx::query_as(
                    "SELECT e.id, p.slug AS project, e.name, e.role, e.recipe, e.recipe_hash, e.created_at \
                     FROM environments e JOIN projects p ON p.id = e.project_id WHERE p.slug = $1 ORDER BY e.role, e.name",
                )
                .bind(project)
                .fetch_all(&self.read)
                .await?;
                rows.into_iter().map(crate::db::jobs::EnvironmentRow::into_environment).collect()
            }
        }

        impl $ty {
            /// Queues a job inside the caller's transaction (the write that causes it).
            pub(crate) async fn enqueue_tx(
                tx: &mut sqlx::Transaction<'static, $db>,
                job: &crate::db::jobs::NewJob,
                now: chrono::DateTime<chrono::Utc>,
            ) -> crate::db::StorageResult<(failpass_shared::api::jobs::Job, bool)> {
                use sqlx::types::Json;
                let now = crate::db::sql::secs(now);
                let project_id = Self::job_project(tx, &job.payload).await?;
                // Insert unless a job with the key waits or runs; concurrent enqueues
                // of one key (two clicks, two servers) meet at the unique index.
                let inserted: Option<crate::db::jobs::JobRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "INSERT INTO jobs (kind, payload, status, priority, attempts, max_attempts, run_after, dedup_key, project_id, created_at, updated_at) \
                     VALUES ($1, $2, 'queued', $3, 0, $4, $5, $6, $7, $5, $5) \
                     ON CONFLICT (dedup_key) WHERE dedup_key IS NOT NULL AND status IN ('queued', 'running') DO NOTHING RETURNING {}",
                    crate::db::jobs::JOB_COLUMNS
                )))
                .bind(job.kind.as_str())
                .bind(Json(&job.payload))
                .bind(job.priority)
                .bind(job.max_tries)
                .bind(now)
                .bind(&job.dedup_key)
                .bind(project_id)
                .fetch_optional(&mut **tx)
                .await?;
                if let Some(row) = inserted {
                    return Ok((row.into_job()?, true));
                }
                let row: crate::db::jobs::JobRow = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT {} FROM jobs WHERE dedup_key = $1 AND status IN ('queued', 'running')",
                    crate::db::jobs::JOB_COLUMNS
                )))
                .bind(&job.dedup_key)
                .fetch_one(&mut **tx)
                .await?;
                // A manual request lifts a waiting job's priority.
                if job.priority > row.priority && row.status == "queued" {
                    sqlx::query("UPDATE jobs SET priority = $1 WHERE id = $2").bind(job.priority).bind(row.id).execute(&mut **tx).await?;
                }
                Ok((row.into_job()?, false))
            }

            /// The project a job's attempt or report belongs to (for scoping job lists).
            async fn job_project(
                tx: &mut sqlx::Transaction<'static, $db>,
                payload: &failpass_shared::api::jobs::JobPayload,
            ) -> crate::db::StorageResult<Option<i64>> {
                Ok(match (payload.attempt_id, payload.report_id) {
                    (Some(a), _) => sqlx::query_scalar("SELECT r.project_id FROM attempts a JOIN reports r ON r.id = a.report_id WHERE a.id = $1")
                        .bind(a)
                        .fetch_optional(&mut **tx)
                        .await?,
                    (None, Some(r)) => sqlx::query_scalar("SELECT project_id FROM reports WHERE id = $1").bind(r).fetch_optional(&mut **tx).await?,
                    _ => None,
                })
            }

            /// Stores a verification's runs and (unless a re-check) the attempt's new
            /// verdict, signals and grade, then refreshes the report.
            async fn write_verification(
                tx: &mut sqlx::Transaction<'static, $db>,
                v: &crate::db::jobs::Verification,
                now: chrono::DateTime<chrono::Utc>,
            ) -> crate::db::StorageResult<()> {
                use failpass_shared::model::{attempt_awaits_review, attempt_counts, Goal, Review, VerdictSource};
                use sqlx::types::Json;
                let attempt_id = match &v.new_attempt {
                    None => v.attempt_id,
                    Some(req) => {
                        // Found again by its key if an earlier try of the job stored it.
                        let (report_id, vague, _) = Self::resolve_report(tx, req).await?;
                        let existing: Option<i64> = sqlx::query_scalar("SELECT id FROM attempts WHERE report_id = $1 AND agent = $2 AND attempt_key = $3")
                            .bind(report_id)
                            .bind(req.agent.trim())
                            .bind(&req.attempt_key)
                            .fetch_optional(&mut **tx)
                            .await?;
                        match existing {
                            Some(id) => id,
                            None => {
                                let row = crate::db::sql::PreparedAttempt::new(req, report_id, vague, req.attempt_key.clone());
                                Self::insert_attempts(tx, std::slice::from_ref(&row), true).await?[0]
                            }
                        }
                    }
                };
                let row: Option<(i64, String, Option<String>, bool, Option<Json<serde_json::Value>>, String, String)> = sqlx::query_as(
                    "SELECT a.report_id, a.goal, a.review, r.vague, a.grade, a.verdict, a.verdict_source \
                     FROM attempts a JOIN reports r ON r.id = a.report_id WHERE a.id = $1",
                )
                .bind(attempt_id)
                .fetch_optional(&mut **tx)
                .await?;
                let Some((report_id, goal, review, vague, stored, old_verdict, old_source)) = row else {
                    return Err(crate::db::StorageError::NotFound(format!("attempt {attempt_id}")));
                };
                // Merged with what is stored now (a verification and a re-check may
                // have run side by side); an unreadable stored grade is replaced.
                let stored = stored.and_then(|g| serde_json::from_value(g.0).ok());
                let grade = v.grade.clone().stored_over(stored, v.sets_verdict);
                for run in &v.runs {
                    // Repeats of one run may be alike, so no content hash: each is kept.
                    Self::insert_run_tx(tx, &crate::db::NewRun { attempt_id, ..run.clone() }, now, None).await?;
                }
                if v.sets_verdict {
                    let goal: Goal = crate::db::rows::parse(&goal, "attempts.goal")?;
                    let review: Option<Review> = crate::db::rows::parse_opt(review.as_deref(), "attempts.review")?;
                    let source = VerdictSource::Deterministic;
                    // An LLM's lead regraded by execution: keep what the LLM said,
                    // so LLM-verdict precision can score it.
                    let llm_verdict = (old_source == "llm" && matches!(old_verdict.as_str(), "lead" | "confirmed")).then_some(old_verdict);
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
                    if let Some(r) = &v.refined {
                        sqlx::query(
                            "UPDATE attempts SET candidate = $1, iterations = $2, cost_usd = $3, wall_seconds = $4, tokens_in = $5, \
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
                    sqlx::query("UPDATE attempts SET grade = $1 WHERE id = $2").bind(Json(&grade)).bind(attempt_id).execute(&mut **tx).await?;
                }
                Self::refresh_reports(tx, &[report_id]).await
            }
        }
    };
}

pub(crate) use impl_jobs;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        assert_eq!(backoff(1), Duration::seconds(5));
        assert_eq!(backoff(2), Duration::seconds(10));
        assert_eq!(backoff(3), Duration::seconds(20));
        assert_eq!(backoff(30), Duration::seconds(600));
        assert_eq!(backoff(0), Duration::seconds(5));
    }
}
