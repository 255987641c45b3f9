//! The executor `failpass serve` and `failpass worker` drive: it checks that
//! candidates may run here, then hands each job to the executor for its kind.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use failpass_shared::api::jobs::Job;
use failpass_shared::model::JobKind;

use super::bisect::Bisector;
use super::build::Build;
use super::deliver::Deliver;
use super::oracle::ValidateOracle;
use super::recheck::Recheck;
use super::refine::{DEFAULT_BUDGET, Generator, Refine};
use super::verify::Verify;
use super::workbench::Workbench;
use super::{Executor, JobError};
use crate::db::Storage;
use crate::db::attempts::Verification;

/// Verify, re-check, refine, build and deliver jobs, each to its executor.
#[derive(Clone)]
pub struct ByKind {
    pub bench: Workbench,
    pub deliver: Deliver,
    pub build: Build,
    pub oracle: ValidateOracle,
    pub verify: Verify,
    pub recheck: Recheck,
    pub refine: Refine,
    pub bisect: Bisector,
}

/// How the runner is set up: what `serve` and `worker` read from their flags.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Where the refine loop's candidates come from, and its try budget.
    pub generator: Generator,
    pub refine_budget: u32,
    /// Run candidates even when the sandbox cannot give them users of their own.
    pub allow_unsandboxed: bool,
    /// The routing rule, for re-routing a report that gains a validated oracle.
    pub routing: Arc<failpass_shared::routing::RoutingConfig>,
    /// Private networks hooks may post into (`--hook-allow-network`).
    pub hook_networks: Arc<crate::hooks::HookNetworks>,
    /// Private networks setup and agent commands may reach (`--run-allow-network`).
    pub run_networks: Vec<ipnet::IpNet>,
    /// The package index and the environment cache's cap.
    pub releases: crate::releases::Settings,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        Self {
            generator: Generator::Snippet,
            refine_budget: DEFAULT_BUDGET,
            allow_unsandboxed: false,
            routing: Arc::default(),
            hook_networks: Arc::default(),
            run_networks: Vec::new(),
            releases: Default::default(),
        }
    }
}

impl ByKind {
    pub fn new(storage: Arc<dyn Storage>, data_dir: &Path, config: RunnerConfig) -> Self {
        let deliver = Deliver::new(storage.clone(), config.hook_networks.clone());
        let mut bench = Workbench::new(storage, data_dir);
        bench.allow_unsandboxed = config.allow_unsandboxed;
        bench.envs.allow_networks = config.run_networks;
        bench.envs.cap_bytes = config.releases.cache_cap_bytes;
        bench.index = config.releases.index(data_dir);
        let verify = Verify { bench: bench.clone() };
        Self {
            recheck: super::recheck::Recheck { bench: bench.clone() },
            refine: Refine { verify: verify.clone(), generator: config.generator, budget: config.refine_budget },
            oracle: ValidateOracle { verify: verify.clone(), routing: config.routing.clone() },
            verify,
            build: Build { bench: bench.clone() },
            bisect: Bisector { bench: bench.clone() },
            bench,
            deliver,
        }
    }
}

#[async_trait]
impl Executor for ByKind {
    async fn execute(&self, job: &Job, runner: &str) -> Result<Option<Verification>, JobError> {
        // A delivery runs nothing: it needs no sandbox.
        if job.kind != JobKind::Deliver {
            self.bench.preflight().await?;
        }
        match job.kind {
            JobKind::Deliver => self.deliver.execute(job).await.map(|()| None),
            JobKind::Verify => self.verify.execute(job, runner).await.map(Some),
            JobKind::Recheck => self.recheck.execute(job, runner).await.map(Some),
            JobKind::Refine => self.refine.execute(job, runner).await.map(Some),
            JobKind::Build => self.build.execute(job).await.map(|()| None),
            JobKind::Oracle => self.oracle.execute(job, runner).await.map(|()| None),
            JobKind::Bisect => self.bisect.execute(job).await.map(|()| None),
        }
    }
}

/// What a job that failed for good leaves behind besides the job: a build
/// still `running`, a draft oracle still `validating`. They are ended with
/// the job's error, so their pages stop waiting.
pub async fn after_final_failure(storage: &dyn Storage, job: &Job, error: &str) {
    let ended = match job.kind {
        JobKind::Build => match job.payload.environment_id {
            Some(env) => storage.fail_running_builds(env, error).await,
            None => Ok(()),
        },
        JobKind::Oracle => match job.payload.oracle_draft_id {
            Some(draft) => {
                let result = crate::db::oracle_drafts::DraftResult {
                    verdict: "error".into(),
                    reason: format!("the validation could not run: {error}"),
                    ..Default::default()
                };
                storage.finish_oracle_validation(draft, None, &result, None).await.map(|_| ())
            }
            None => Ok(()),
        },
        JobKind::Deliver => match job.payload.delivery_id {
            Some(delivery) => storage.give_up_delivery(delivery, error).await,
            None => Ok(()),
        },
        JobKind::Bisect => match job.payload.report_id {
            Some(report) => end_bisect(storage, report, error).await,
            None => Ok(()),
        },
        JobKind::Verify | JobKind::Recheck | JobKind::Refine => Ok(()),
    };
    if let Err(e) = ended {
        tracing::error!(job = job.id, error = %e, "could not end what the failed job left running");
    }
}

/// A bisect whose job failed for good: its stored progress says so.
async fn end_bisect(storage: &dyn Storage, report: i64, error: &str) -> crate::db::StorageResult<()> {
    let mut v = storage.report_versions(report).await?;
    if let Some(b) = v.bisect.as_mut().filter(|b| b.state == "running") {
        b.state = "error".into();
        b.summary = format!("the bisect could not finish: {error}");
        b.finished_at = Some(chrono::Utc::now());
        storage.set_report_versions(report, &v).await?;
    }
    Ok(())
}
