//! Workers: claim a job, hold its lease while running it (renewing), then
//! complete or fail it, fenced by owner. `failpass serve` runs a pool of them
//! in-process; `failpass worker` runs them alone against a shared PostgreSQL
//! (any number of processes on any number of machines).

use std::sync::Arc;
use std::time::Duration;

use chrono::{SubsecRound, Utc};
use failpass_shared::api::jobs::{Job, Runner};
use tokio::sync::watch;
use tracing::Instrument;

use super::{Executor, JobError};
use crate::db::Storage;
use crate::db::jobs::Finish;
use crate::telemetry::cause_chain;

#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// Lease length; renewed every third of it while a job runs.
    pub lease: chrono::Duration,
    /// Pause when the queue is empty.
    pub poll: Duration,
    /// How often an idle worker reports its heartbeat.
    pub heartbeat: Duration,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        Self {
            lease: chrono::Duration::seconds(30),
            poll: Duration::from_millis(500),
            heartbeat: Duration::from_secs(5),
        }
    }
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// A runner id unique across machines and processes: `host:pid:n`.
pub fn runner_id(n: usize) -> String {
    format!("{}:{}:{n}", hostname(), std::process::id())
}

/// Starts `count` workers that take jobs from `storage` and carry them out
/// with `executor`; they stop when `shutdown` turns true.
pub fn spawn_pool(
    executor: Arc<dyn Executor>,
    storage: Arc<dyn Storage>,
    count: usize,
    options: WorkerOptions,
    shutdown: watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    if count > 0 {
        super::sandbox::warn_if_isolation_missing();
    }
    (0..count)
        .map(|n| {
            let worker = Worker { executor: executor.clone(), storage: storage.clone(), id: runner_id(n) };
            let (o, s) = (options.clone(), shutdown.clone());
            tokio::spawn(async move { worker.run(o, s).await })
        })
        .collect()
}

/// One worker: its id, where its jobs come from, what carries them out.
#[derive(Clone)]
pub struct Worker {
    pub executor: Arc<dyn Executor>,
    pub storage: Arc<dyn Storage>,
    pub id: String,
}

impl Worker {
    /// Claims and runs jobs until `shutdown` turns true.
    pub async fn run(&self, options: WorkerOptions, shutdown: watch::Receiver<bool>) {
        run_worker(self, options, shutdown).await
    }
}

async fn run_worker(worker: &Worker, options: WorkerOptions, mut shutdown: watch::Receiver<bool>) {
    let storage = worker.storage.clone();
    let id = worker.id.clone();
    let started = Utc::now().trunc_subsecs(0);
    let mut me = Runner {
        id: id.clone(),
        host: hostname(),
        pid: std::process::id() as i64,
        started_at: started,
        last_heartbeat: started,
        current_job: None,
        jobs_done: 0,
    };
    let mut last_beat = std::time::Instant::now() - options.heartbeat;
    tracing::info!(runner = %id, "worker started");
    while !*shutdown.borrow() {
        if last_beat.elapsed() >= options.heartbeat {
            me.last_heartbeat = clock(&storage).await;
            me.current_job = None;
            if let Err(e) = storage.heartbeat(&me).await {
                tracing::warn!(runner = %id, error = %cause_chain(&e), "heartbeat failed");
            }
            last_beat = std::time::Instant::now();
        }
        let job = match storage.claim(&id, clock(&storage).await, options.lease).await {
            Ok(Some(job)) => job,
            Ok(None) => {
                // Whoever could stop us is gone (the sender dropped): stop rather than poll without a pause.
                if let Ok(Err(_)) = tokio::time::timeout(options.poll, shutdown.changed()).await {
                    break;
                }
                continue;
            }
            Err(e) => {
                tracing::warn!(runner = %id, error = %cause_chain(&e), "claim failed; retrying");
                if let Ok(Err(_)) = tokio::time::timeout(options.poll * 4, shutdown.changed()).await {
                    break;
                }
                continue;
            }
        };
        me.current_job = Some(job.id);
        me.last_heartbeat = clock(&storage).await;
        let _ = storage.heartbeat(&me).await;
        last_beat = std::time::Instant::now();
        let span = tracing::info_span!("job", job = job.id, kind = %job.kind, runner = %id, try_no = job.tries);
        run_one(worker, &job, &options).instrument(span).await;
    }
    tracing::info!(runner = %id, "worker stopped");
}

/// Runs one claimed job to its end, renewing the lease meanwhile.
async fn run_one(worker: &Worker, job: &Job, options: &WorkerOptions) {
    let (storage, id) = (&worker.storage, worker.id.as_str());
    let started = std::time::Instant::now();
    let renew = async {
        let every = (options.lease / 3).to_std().unwrap_or(Duration::from_secs(10)).max(Duration::from_millis(200));
        loop {
            tokio::time::sleep(every).await;
            match storage.renew(job.id, id, clock(storage).await, options.lease).await {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => tracing::warn!(error = %cause_chain(&e), "lease renewal failed"),
            }
        }
    };
    let outcome = tokio::select! {
        r = worker.executor.execute(job, id) => Some(r),
        _ = renew => None,
    };
    let now = clock(storage).await;
    let ended = match &outcome {
        None => "lost",
        Some(Ok(_)) => "done",
        Some(Err(_)) => "failed",
    };
    crate::metrics::job_finished(job.kind.as_str(), ended, started.elapsed().as_secs_f64());
    match outcome {
        None => tracing::warn!("lease lost to another worker; result dropped"),
        Some(Ok(v)) => match storage.complete(job.id, id, now, v.as_ref()).await {
            Ok(Finish::Done) => match &v {
                Some(v) => {
                    tracing::info!(attempt = v.attempt_id, verdict = %v.verdict, ms = started.elapsed().as_millis() as u64, "job done")
                }
                None => tracing::info!(kind = %job.kind, ms = started.elapsed().as_millis() as u64, "job done"),
            },
            Ok(Finish::Fenced) => {
                tracing::warn!("lease lost before completing; result dropped")
            }
            Err(e) => fail(storage, job, id, JobError::because("storing the result", e)).await,
        },
        Some(Err(e)) => fail(storage, job, id, e).await,
    }
}

/// The database's time (the worker's own if the database cannot say).
async fn clock(storage: &Arc<dyn Storage>) -> chrono::DateTime<Utc> {
    storage.clock().await.unwrap_or_else(|_| Utc::now())
}

/// Records a failed try with the error's whole cause chain.
async fn fail(storage: &Arc<dyn Storage>, job: &Job, id: &str, e: JobError) {
    let message = cause_chain(&e);
    match storage.fail(job.id, id, clock(storage).await, &message, e.retry()).await {
        Ok(Some(status)) => {
            tracing::warn!(error = %message, retry = ?e.retry(), %status, "job failed");
            if status == failpass_shared::model::JobStatus::Failed {
                super::executors::after_final_failure(storage.as_ref(), job, &message).await;
            }
        }
        Ok(None) => tracing::warn!(error = %message, "lease lost before recording the failure"),
        Err(err) => tracing::error!(error = %cause_chain(&err), failure = %message, "could not record the failure"),
    }
}
