//! Scheduled re-checks: every reproduced attempt is re-run, now and then,
//! against its project's newest release environment, so a report fixed
//! upstream shows `no longer reproduces` and one that breaks again shows
//! `regressed` (docs/domain.md, "Grading").

use std::sync::Arc;
use std::time::Duration;

use failpass_shared::api::jobs::{Environment, PRIORITY_BULK};
use failpass_shared::api::reports::ReportFilter;
use failpass_shared::model::{EnvironmentRole, Verdict};
use tokio::sync::watch;

use crate::db::queue::NewJob;
use crate::db::{ProjectScope, Storage, StorageResult};
use crate::releases::index::PackageIndex;

/// Queues a re-check of every reproduced attempt against its project's
/// newest release: for a project that builds its releases from the package
/// index, the newest buildable release there (so re-checks follow releases
/// as they are published; an attempt already re-checked on it is skipped);
/// otherwise its newest release environment. Returns how many jobs were
/// queued (attempts already waiting for one are skipped).
pub async fn enqueue_rechecks(storage: &dyn Storage, index: Option<&PackageIndex>) -> StorageResult<usize> {
    let mut queued = 0;
    for project in storage.list_projects(&ProjectScope::All).await? {
        let template = match index {
            Some(_) => storage.release_template(&project.slug).await?,
            None => None,
        };
        let (name, published) = match (template, index) {
            (Some(t), Some(index)) => match index.releases(&t.package, !t.setup.is_empty()).await {
                Ok(listing) => match crate::releases::newest(&listing) {
                    Some(v) => (format!("{} {v}", t.package), true),
                    None => continue,
                },
                Err(e) => {
                    tracing::warn!(project = %project.slug, error = %e, "re-checks skipped: the package index cannot be listed");
                    continue;
                }
            },
            _ => match newest_release(&storage.list_environments(&project.slug).await?) {
                Some(release) => (release.name.clone(), false),
                None => continue,
            },
        };
        let filter = ReportFilter { project: Some(project.slug.clone()), ..Default::default() };
        let mut targets =
            storage.rerun_targets(None, Some(&filter), &[Verdict::Reproduced], &ProjectScope::All).await?;
        if published {
            // A release is re-checked once: the schedule runs again when a newer one is out.
            let mut fresh = Vec::with_capacity(targets.len());
            for id in targets {
                let done = storage.get_attempt(id, &ProjectScope::All).await?.is_some_and(|d| {
                    d.attempt.grade.as_ref().is_some_and(|g| g.recheck_history().iter().any(|h| h.environment == name))
                });
                if !done {
                    fresh.push(id);
                }
            }
            targets = fresh;
        }
        let jobs: Vec<NewJob> = targets.iter().map(|id| NewJob::recheck(*id, &name, PRIORITY_BULK, false)).collect();
        queued += storage.enqueue_many(&jobs, chrono::Utc::now()).await?.0.len();
    }
    Ok(queued)
}

/// The release a re-check runs against: the highest `recipe.version`
/// (compared part by part, numbers as numbers: 2.10 is after 2.9); releases
/// without a version come before any with one, by creation.
pub fn newest_release(envs: &[Environment]) -> Option<&Environment> {
    envs.iter().filter(|e| e.role == EnvironmentRole::Release).max_by(|a, b| release_key(a).cmp(&release_key(b)))
}

/// Where release `name` stands among the project's releases (by version,
/// then creation); `None` for a name that is not an environment any more,
/// which comes before all.
pub(crate) fn release_position(envs: &[Environment], name: &str) -> Option<ReleaseKey> {
    match envs.iter().find(|e| e.name == name) {
        Some(e) => Some(release_key(e)),
        // A release from the index, by its label (`pandas 2.2.3`).
        None => {
            name.rsplit_once(' ').map(|(_, v)| (Some(version_parts(v)), chrono::DateTime::<chrono::Utc>::MIN_UTC, 0))
        }
    }
}

pub(crate) type ReleaseKey = (Option<Vec<Part>>, chrono::DateTime<chrono::Utc>, i64);

/// One part of a version: numbers compare as numbers, before any text.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Part {
    Num(u64),
    Text(String),
}

fn version_parts(v: &str) -> Vec<Part> {
    let v = v.trim();
    let v = v.strip_prefix(['v', 'V']).unwrap_or(v);
    v.split(['.', '-', '+', '_'])
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().map(Part::Num).unwrap_or_else(|_| Part::Text(p.to_ascii_lowercase())))
        .collect()
}

fn release_key(e: &Environment) -> ReleaseKey {
    let version = e.recipe.version.as_deref().filter(|v| !v.trim().is_empty()).map(version_parts);
    (version, e.created_at, e.id)
}

/// The schedule's name in `scheduled_tasks`.
const TASK: &str = "recheck";

/// How long until the next re-check is due: `every` after the last one
/// (recorded in storage, so restarts do not push it back), at once when
/// that has passed. The first start records itself as the last run.
pub async fn due_in(
    storage: &dyn Storage,
    every: Duration,
    now: chrono::DateTime<chrono::Utc>,
) -> StorageResult<Duration> {
    match storage.task_last_run(TASK).await? {
        Some(last) => {
            let since = (now - last).to_std().unwrap_or(Duration::ZERO);
            Ok(every.saturating_sub(since))
        }
        None => {
            storage.set_task_last_run(TASK, now).await?;
            Ok(every)
        }
    }
}

/// Re-checks every `every` (counted from the last run, across restarts)
/// until `shutdown` turns true.
pub async fn run(storage: Arc<dyn Storage>, index: PackageIndex, every: Duration, mut shutdown: watch::Receiver<bool>) {
    loop {
        let wait = match due_in(storage.as_ref(), every, chrono::Utc::now()).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(error = %crate::telemetry::cause_chain(&e), "reading the re-check schedule; waiting a full period");
                every
            }
        };
        if tokio::time::timeout(wait, shutdown.changed()).await.is_ok() || *shutdown.borrow() {
            return;
        }
        let now = chrono::Utc::now();
        match enqueue_rechecks(storage.as_ref(), Some(&index)).await {
            Ok(n) => tracing::info!(queued = n, "scheduled re-checks queued"),
            Err(e) => {
                tracing::warn!(error = %crate::telemetry::cause_chain(&e), "scheduled re-checks failed; trying again next time")
            }
        }
        if let Err(e) = storage.set_task_last_run(TASK, now).await {
            tracing::warn!(error = %crate::telemetry::cause_chain(&e), "recording the re-check run");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use failpass_shared::api::jobs::Recipe;

    fn env(id: i64, role: EnvironmentRole, version: Option<&str>, minutes_ago: i64) -> Environment {
        Environment {
            id,
            project: "a/b".into(),
            name: format!("env-{id}"),
            role,
            recipe: Recipe { version: version.map(str::to_owned), ..Default::default() },
            recipe_hash: String::new(),
            created_at: chrono::Utc::now() - chrono::Duration::minutes(minutes_ago),
        }
    }

    #[test]
    fn the_newest_release_is_the_highest_version_not_the_last_created() {
        let envs = [
            env(1, EnvironmentRole::Release, Some("2.10.0"), 30),
            env(2, EnvironmentRole::Release, Some("2.9.1"), 10),
            env(3, EnvironmentRole::Release, None, 1),
            env(4, EnvironmentRole::Fixed, Some("9.0"), 0),
        ];
        assert_eq!(newest_release(&envs).map(|e| e.id), Some(1), "2.10.0 is after 2.9.1, whenever each was added");
        assert!(version_parts("v2.10.0") > version_parts("2.9.99"));
        // Without versions, the last created.
        let envs = [env(1, EnvironmentRole::Release, None, 30), env(2, EnvironmentRole::Release, None, 10)];
        assert_eq!(newest_release(&envs).map(|e| e.id), Some(2));
        assert!(newest_release(&[env(1, EnvironmentRole::Buggy, Some("1"), 0)]).is_none());
    }
}
