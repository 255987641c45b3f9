//! "Build now": builds an environment's recipe on a runner and keeps what it
//! printed, so the set-up page can say whether (and why not) it builds
//! before any candidate is graded in it.
//!
//! A build that fails is a result (stored with its log), not a failed job;
//! only a database that cannot take the result fails the job. A recipe built
//! before is not built again: the build says so and shows the cached log.

use failpass_shared::api::jobs::Job;
use failpass_shared::model::BuildStatus;

use super::JobError;
use super::workbench::Workbench;

#[derive(Clone)]
pub struct Build {
    pub bench: Workbench,
}

impl Build {
    /// Carries out one `build` job (see [`super::Executor`]).
    #[tracing::instrument(name = "build", skip_all, fields(job = job.id, environment = job.payload.environment_id))]
    pub async fn execute(&self, job: &Job) -> Result<(), JobError> {
        let id = job.payload.environment_id.ok_or_else(|| JobError::permanent("the job names no environment_id"))?;
        let storage = &self.bench.storage;
        let env = storage
            .environment(id)
            .await?
            .ok_or_else(|| JobError::permanent(format!("environment {id} does not exist")))?;
        let build = storage.start_build(id, Some(job.id), &env.recipe_hash).await?;
        let (status, log) = match self.bench.envs.get(&env.recipe, &self.bench.base).await {
            Ok(built) if built.built_now => (BuildStatus::Built, built_log(&built.dir)),
            Ok(built) => (
                BuildStatus::Cached,
                format!("# this recipe was built before; its build log:\n{}", built_log(&built.dir)),
            ),
            Err(failed) => (BuildStatus::Failed, format!("{}\n# {}\n", failed.log.trim_end(), failed.reason)),
        };
        tracing::info!(environment = %env.name, project = %env.project, status = %status, "environment build ended");
        storage.finish_build(build, status, &log).await?;
        Ok(())
    }
}

/// The log a finished build left in its `.built` marker, beside its tree.
fn built_log(tree: &std::path::Path) -> String {
    tree.parent()
        .map(|d| d.join(".built"))
        .and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_else(|| "# (the build left no log)\n".to_owned())
}
