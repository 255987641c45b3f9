//! The job queue's life cycle and runners' heartbeats. The SQL is written
//! once; the claim's row lock is the dialect's `SKIP_LOCKED`.
//!
//! States and rules are in docs/job-queue.md. In short: a claim takes the
//! highest-priority due job (or a running one whose lease expired) and
//! leases it to its owner; renew, complete and fail are fenced by owner, so a
//! worker that lost its lease cannot overwrite a result. Times are passed in
//! (`now`) so tests can move the clock.

use async_trait::async_trait;

use super::StorageResult;
use chrono::{DateTime, Duration, Utc};
use failpass_shared::api::jobs::{Job, QueueOverview, Runner};
use failpass_shared::model::JobStatus;

use super::attempts::Verification;
use super::queue::NewJob;

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

/// The job queue: enqueue, claim with a lease, renew, complete (with the
/// verification, in one transaction) and fail; runners' heartbeats and the
/// queue overview.
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

    /// The newest verification of an attempt (queued, running or ended), if
    /// the scope may see its project.
    async fn verification_job(&self, attempt_id: i64, scope: &super::ProjectScope) -> StorageResult<Option<Job>>;

    /// Waiting and running jobs (manual first), recent failures, runners, timing;
    /// jobs of projects outside `scope` are left out.
    async fn queue_overview(&self, now: DateTime<Utc>, scope: &super::ProjectScope) -> StorageResult<QueueOverview>;

    /// A runner's heartbeat (and what it is doing).
    async fn heartbeat(&self, runner: &Runner) -> StorageResult<()>;
}

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
