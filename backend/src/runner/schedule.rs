//! Scheduled re-checks: every reproduced attempt is re-run, now and then,
//! against its project's newest release environment, so a report fixed
//! upstream shows `no longer reproduces` and one that breaks again shows
//! `regressed` (docs/domain.md, "Grading").

use std::sync::Arc;
use std::time::Duration;

use failpass_shared::api::jobs::PRIORITY_BULK;
use failpass_shared::api::reports::ReportFilter;
use failpass_shared::model::{EnvironmentRole, Verdict};
use tokio::sync::watch;

use crate::db::queue::NewJob;
use crate::db::{ProjectScope, Storage, StorageResult};

/// Queues a re-check of every reproduced attempt against its project's
/// newest release environment; returns how many jobs were queued (attempts
/// already waiting for one are skipped).
pub async fn enqueue_rechecks(storage: &dyn Storage) -> StorageResult<usize> {
    let mut queued = 0;
    for project in storage.list_projects(&ProjectScope::All).await? {
        let envs = storage.list_environments(&project.slug).await?;
        let Some(release) =
            envs.iter().filter(|e| e.role == EnvironmentRole::Release).max_by_key(|e| (e.created_at, e.id))
        else {
            continue;
        };
        let filter = ReportFilter { project: Some(project.slug.clone()), ..Default::default() };
        let targets = storage.rerun_targets(None, Some(&filter), &[Verdict::Reproduced], &ProjectScope::All).await?;
        let jobs: Vec<NewJob> =
            targets.iter().map(|id| NewJob::recheck(*id, &release.name, PRIORITY_BULK, false)).collect();
        queued += storage.enqueue_many(&jobs, chrono::Utc::now()).await?.0.len();
    }
    Ok(queued)
}

/// Re-checks every `every` until `shutdown` turns true.
pub async fn run(storage: Arc<dyn Storage>, every: Duration, mut shutdown: watch::Receiver<bool>) {
    loop {
        if tokio::time::timeout(every, shutdown.changed()).await.is_ok() || *shutdown.borrow() {
            return;
        }
        match enqueue_rechecks(storage.as_ref()).await {
            Ok(n) => tracing::info!(queued = n, "scheduled re-checks queued"),
            Err(e) => {
                tracing::warn!(error = %crate::telemetry::cause_chain(&e), "scheduled re-checks failed; trying again next time")
            }
        }
    }
}
