//! The SQL of the job queue's life cycle, written once for both engines
//! (see `mod.rs`).

use crate::db::attempts::Verification;
use crate::db::common;
use crate::db::dialect::Dialect;
use crate::db::jobs::*;
use crate::db::queue::NewJob;
use crate::db::rows::{JOB_COLUMNS, JobRow};
use async_trait::async_trait;
use failpass_shared::api::jobs::{Job, QueueOverview, Runner};
use failpass_shared::figures;
use failpass_shared::model::JobStatus;

use super::Engine;
use crate::db::{ProjectScope, StorageResult};

#[async_trait]
impl JobStore for Engine {
    async fn clock(&self) -> StorageResult<chrono::DateTime<chrono::Utc>> {
        Ok(sqlx::query_scalar(Self::NOW).fetch_one(&self.read).await?)
    }

    async fn enqueue(&self, job: &NewJob, now: chrono::DateTime<chrono::Utc>) -> StorageResult<(Job, bool)> {
        let mut tx = self.write.begin().await?;
        let out = Self::enqueue_tx(&mut tx, job, now).await?;
        tx.commit().await?;
        Ok(out)
    }

    async fn enqueue_many(
        &self,
        jobs: &[NewJob],
        now: chrono::DateTime<chrono::Utc>,
    ) -> StorageResult<(Vec<i64>, usize)> {
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
    ) -> StorageResult<Option<Job>> {
        // Job timings keep milliseconds; lease arithmetic stays in whole seconds.
        let precise = chrono::SubsecRound::trunc_subsecs(now, 3);
        let now = common::secs(now);
        let mut tx = self.write.begin().await?;
        // A delivery whose job fails so ends with it (else it would stay `pending`).
        sqlx::query(
            "UPDATE hook_deliveries SET state = 'failed', error = COALESCE(error, 'the worker stopped') || ' (on the last try)' \
             WHERE state = 'pending' AND 'deliver:' || CAST(id AS TEXT) IN (SELECT dedup_key FROM jobs \
             WHERE kind = 'deliver' AND status = 'running' AND lease_expires_at < $1 AND attempts >= max_attempts)",
        )
        .bind(now)
        .execute(&mut *tx)
        .await?;
        // Expired leases out of tries fail rather than run again.
        sqlx::query(
            "UPDATE jobs SET status = 'failed', finished_at = $1, updated_at = $1, \
             last_error = COALESCE(last_error, 'the worker stopped') || ' (lease expired after the last try)' \
             WHERE status = 'running' AND lease_expires_at < $1 AND attempts >= max_attempts",
        )
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let row: Option<JobRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "UPDATE jobs SET status = 'running', lease_owner = $1, lease_expires_at = $2, attempts = attempts + 1, \
             started_at = $4, updated_at = $3 \
             WHERE id = (SELECT id FROM jobs WHERE (status = 'queued' AND run_after <= $3) \
                OR (status = 'running' AND lease_expires_at < $3 AND attempts < max_attempts) \
                ORDER BY priority DESC, id LIMIT 1 {}) \
             RETURNING {}",
            Self::SKIP_LOCKED,
            JOB_COLUMNS
        )))
        .bind(owner)
        .bind(now + lease)
        .bind(now)
        .bind(precise)
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        row.map(JobRow::into_job).transpose()
    }

    async fn renew(
        &self,
        id: i64,
        owner: &str,
        now: chrono::DateTime<chrono::Utc>,
        lease: chrono::Duration,
    ) -> StorageResult<bool> {
        let now = common::secs(now);
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
        result: Option<&Verification>,
    ) -> StorageResult<Finish> {
        let precise = chrono::SubsecRound::trunc_subsecs(now, 3);
        let now = common::secs(now);
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
            return Ok(Finish::Fenced); // dropped: rolled back
        }
        if let Some(v) = result {
            Self::write_verification(&mut tx, v, now).await?;
        }
        sqlx::query("UPDATE runners SET jobs_done = jobs_done + 1, current_job = NULL WHERE id = $1")
            .bind(owner)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Finish::Done)
    }

    async fn fail(
        &self,
        id: i64,
        owner: &str,
        now: chrono::DateTime<chrono::Utc>,
        error: &str,
        retry: Retry,
    ) -> StorageResult<Option<JobStatus>> {
        let now = common::secs(now);
        let mut tx = self.write.begin().await?;
        let held: Option<(i64, i64)> = sqlx::query_as(
            "SELECT attempts, max_attempts FROM jobs WHERE id = $1 AND status = 'running' AND lease_owner = $2",
        )
        .bind(id)
        .bind(owner)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((tries, max)) = held else { return Ok(None) };
        let status = if retry == Retry::Never || tries >= max { JobStatus::Failed } else { JobStatus::Queued };
        let error: String = error.chars().take(4000).collect();
        sqlx::query(
            "UPDATE jobs SET status = $1, last_error = $2, run_after = $3, lease_owner = NULL, lease_expires_at = NULL, \
             finished_at = $4, updated_at = $5 WHERE id = $6",
        )
        .bind(status.as_str())
        .bind(&error)
        .bind(now + backoff(tries))
        .bind((status == JobStatus::Failed).then_some(now))
        .bind(now)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE runners SET current_job = NULL WHERE id = $1").bind(owner).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(Some(status))
    }

    async fn get_job(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<Job>> {
        let row: Option<JobRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM jobs WHERE id = $1 AND {}",
            JOB_COLUMNS,
            scope.sql_project_id("project_id")
        )))
        .bind(id)
        .fetch_optional(&self.read)
        .await?;
        row.map(JobRow::into_job).transpose()
    }

    async fn verification_job(&self, attempt_id: i64, scope: &ProjectScope) -> StorageResult<Option<Job>> {
        // The key `NewJob::verify` gives, kept after the job ends.
        let row: Option<JobRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM jobs WHERE dedup_key = $1 AND kind = 'verify' AND {} ORDER BY id DESC LIMIT 1",
            JOB_COLUMNS,
            scope.sql_project_id("project_id")
        )))
        .bind(format!("verify:{attempt_id}"))
        .fetch_optional(&self.read)
        .await?;
        row.map(JobRow::into_job).transpose()
    }

    async fn queue_overview(
        &self,
        now: chrono::DateTime<chrono::Utc>,
        scope: &ProjectScope,
    ) -> StorageResult<QueueOverview> {
        let now = common::secs(now);
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
        let finished: Vec<(chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>)> =
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT started_at, finished_at FROM jobs WHERE status = 'done' AND started_at IS NOT NULL \
             AND finished_at IS NOT NULL AND {visible} ORDER BY finished_at DESC LIMIT 200"
            )))
            .fetch_all(&self.read)
            .await?;
        let durations: Vec<f64> =
            finished.iter().map(|(s, f)| (*f - *s).num_milliseconds().max(0) as f64 / 1000.0).collect();
        let mean_job_seconds = figures::mean_seconds(&durations);
        let jobs: Vec<JobRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM jobs WHERE status IN ('queued', 'running') AND {} \
             ORDER BY CASE WHEN status = 'running' THEN 0 ELSE 1 END, priority DESC, id LIMIT 200",
            JOB_COLUMNS, visible
        )))
        .fetch_all(&self.read)
        .await?;
        let failures: Vec<JobRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM jobs WHERE status = 'failed' AND {} ORDER BY finished_at DESC, id DESC LIMIT 20",
            JOB_COLUMNS, visible
        )))
        .fetch_all(&self.read)
        .await?;
        let runners: Vec<(
            String,
            String,
            i64,
            chrono::DateTime<chrono::Utc>,
            chrono::DateTime<chrono::Utc>,
            Option<i64>,
            i64,
        )> = sqlx::query_as(
            "SELECT id, host, pid, started_at, last_heartbeat, current_job, jobs_done FROM runners \
                 ORDER BY last_heartbeat DESC LIMIT 100",
        )
        .fetch_all(&self.read)
        .await?;
        let mut runners: Vec<Runner> = runners
            .into_iter()
            .map(|(id, host, pid, started_at, last_heartbeat, current_job, jobs_done)| Runner {
                id,
                host,
                pid,
                started_at,
                last_heartbeat,
                current_job,
                jobs_done,
            })
            .collect();
        // What a runner did is counted in the jobs the caller may see,
        // and a job it holds that the caller may not see is not named.
        if *scope != ProjectScope::All {
            let done: Vec<(String, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT lease_owner, COUNT(*) FROM jobs WHERE status = 'done' AND lease_owner IS NOT NULL AND {visible} GROUP BY lease_owner"
            )))
            .fetch_all(&self.read)
            .await?;
            for r in &mut runners {
                r.jobs_done = done.iter().find(|(owner, _)| *owner == r.id).map_or(0, |(_, n)| *n);
                if let Some(job) = r.current_job
                    && self.get_job(job, scope).await?.is_none()
                {
                    r.current_job = None;
                }
            }
        }
        let alive = runners.iter().filter(|r| figures::runner_alive(r, now)).count();
        let estimated_wait_seconds = figures::queue_wait(alive, mean_job_seconds, queued + running);
        Ok(QueueOverview {
            queued,
            running,
            failed_last_day,
            done_last_day,
            mean_job_seconds,
            estimated_wait_seconds,
            jobs: jobs.into_iter().map(JobRow::into_job).collect::<Result<_, _>>()?,
            recent_failures: failures.into_iter().map(JobRow::into_job).collect::<Result<_, _>>()?,
            runners,
        })
    }

    async fn heartbeat(&self, r: &Runner) -> StorageResult<()> {
        sqlx::query(
            "INSERT INTO runners (id, host, pid, started_at, last_heartbeat, current_job, jobs_done) \
             VALUES ($1, $2, $3, $4, $5, $6, 0) \
             ON CONFLICT (id) DO UPDATE SET last_heartbeat = $5, current_job = $6",
        )
        .bind(&r.id)
        .bind(&r.host)
        .bind(r.pid)
        .bind(common::secs(r.started_at))
        .bind(common::secs(r.last_heartbeat))
        .bind(r.current_job)
        .execute(&self.write)
        .await?;
        // Runners silent for a day are gone (restarted processes get new ids).
        sqlx::query("DELETE FROM runners WHERE last_heartbeat < $1")
            .bind(common::secs(r.last_heartbeat) - chrono::Duration::days(1))
            .execute(&self.write)
            .await?;
        Ok(())
    }
}
