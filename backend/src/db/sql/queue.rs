//! The SQL of enqueuing jobs, written once for both engines
//! (see `mod.rs`).

use crate::db::common;
use crate::db::queue::*;
use crate::db::rows::{JOB_COLUMNS, JobRow};
use failpass_shared::api::jobs::Job;
use failpass_shared::api::jobs::JobPayload;

use super::{Engine, Tx};
use crate::db::StorageResult;

impl Engine {
    /// Queues a job inside the caller's transaction (the write that causes it).
    pub(in crate::db) async fn enqueue_tx(
        tx: &mut Tx,
        job: &NewJob,
        now: chrono::DateTime<chrono::Utc>,
    ) -> StorageResult<(Job, bool)> {
        use sqlx::types::Json;
        let now = common::secs(now);
        let project_id = Self::job_project(tx, &job.payload).await?;
        // Insert unless a job with the key waits or runs; concurrent enqueues
        // of one key (two clicks, two servers) meet at the unique index.
        let inserted: Option<JobRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "INSERT INTO jobs (kind, payload, status, priority, attempts, max_attempts, run_after, dedup_key, project_id, created_at, updated_at) \
             VALUES ($1, $2, 'queued', $3, 0, $4, $5, $6, $7, $5, $5) \
             ON CONFLICT (dedup_key) WHERE dedup_key IS NOT NULL AND status IN ('queued', 'running') DO NOTHING RETURNING {}",
            JOB_COLUMNS
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
        let row: JobRow = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM jobs WHERE dedup_key = $1 AND status IN ('queued', 'running')",
            JOB_COLUMNS
        )))
        .bind(&job.dedup_key)
        .fetch_one(&mut **tx)
        .await?;
        // A manual request lifts a waiting job's priority.
        if job.priority > row.priority && row.status == "queued" {
            sqlx::query("UPDATE jobs SET priority = $1 WHERE id = $2")
                .bind(job.priority)
                .bind(row.id)
                .execute(&mut **tx)
                .await?;
        }
        Ok((row.into_job()?, false))
    }

    /// The project a job's attempt or report belongs to (for scoping job lists).
    pub(in crate::db) async fn job_project(tx: &mut Tx, payload: &JobPayload) -> StorageResult<Option<i64>> {
        Ok(match (payload.attempt_id, payload.report_id) {
            (Some(a), _) => {
                sqlx::query_scalar(
                    "SELECT r.project_id FROM attempts a JOIN reports r ON r.id = a.report_id WHERE a.id = $1",
                )
                .bind(a)
                .fetch_optional(&mut **tx)
                .await?
            }
            (None, Some(r)) => {
                sqlx::query_scalar("SELECT project_id FROM reports WHERE id = $1")
                    .bind(r)
                    .fetch_optional(&mut **tx)
                    .await?
            }
            _ => match payload.environment_id {
                Some(e) => {
                    sqlx::query_scalar("SELECT project_id FROM environments WHERE id = $1")
                        .bind(e)
                        .fetch_optional(&mut **tx)
                        .await?
                }
                None => None,
            },
        })
    }
}
