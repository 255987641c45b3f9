//! Re-checking a reproduced attempt: its candidate runs against another
//! environment (a newer release), and the outcome is recorded beside the
//! grade; the verdict stays.

use async_trait::async_trait;
use chrono::SubsecRound;
use failpass_shared::api::jobs::Job;
use failpass_shared::grading::{self, GradeRecord, Recheck as RecheckRecord};
use failpass_shared::model::{RecheckOutcome, RunEnvironment, RunTrigger, Verdict};

use super::workbench::{self, Workbench};
use super::{Executor, JobError};
use crate::db::ProjectScope;
use crate::db::attempts::Verification;

/// Runs a reproduced attempt's candidate against the environment a re-check
/// job names: `still_reproduces` when it still fails there,
/// `no_longer_reproduces` when it passes, `regressed` when it fails again
/// after an earlier re-check found it fixed ([`RecheckOutcome::of`]).
#[derive(Clone)]
pub struct Recheck {
    pub bench: Workbench,
}

#[async_trait]
impl Executor for Recheck {
    #[tracing::instrument(name = "recheck", skip_all, fields(job = job.id, attempt = job.payload.attempt_id))]
    async fn execute(&self, job: &Job, runner: &str) -> Result<Verification, JobError> {
        let bench = &self.bench;
        let attempt_id = job.payload.attempt_id.ok_or_else(|| JobError::permanent("the job names no attempt_id"))?;
        let detail = bench
            .storage
            .get_attempt(attempt_id, &ProjectScope::All)
            .await?
            .ok_or_else(|| JobError::permanent(format!("attempt {attempt_id} does not exist")))?;
        let report = bench
            .storage
            .get_report(detail.attempt.report_id, &ProjectScope::All)
            .await?
            .ok_or_else(|| JobError::permanent(format!("report {} does not exist", detail.attempt.report_id)))?;
        let name =
            job.payload.environment.as_deref().ok_or_else(|| JobError::permanent("a re-check names no environment"))?;
        let environments = bench.storage.list_environments(&report.summary.project).await?;
        let target = environments.iter().find(|e| e.name == name).ok_or_else(|| {
            JobError::permanent(format!("project {} has no environment `{name}`", report.summary.project))
        })?;
        let oracle = report.oracle.clone().unwrap_or_default();
        let at = Some(chrono::Utc::now().trunc_subsecs(0));
        // Only the re-check is written; storage keeps the rest of the grade.
        let recorded = |recheck: RecheckRecord| Verification {
            sets_verdict: false,
            grade: GradeRecord { recheck: Some(recheck), ..GradeRecord::default() },
            ..Verification::new(attempt_id, Verdict::Reproduced)
        };
        let env = match bench.envs.get(&target.recipe, &bench.base).await {
            Ok(env) => env,
            Err(e) => {
                return Ok(Verification {
                    verdict: Verdict::Error,
                    ..recorded(RecheckRecord {
                        environment: name.to_owned(),
                        version: None,
                        outcome: RecheckOutcome::Error,
                        failed: None,
                        runs: None,
                        reason: Some(e.to_string()),
                        setup_log: Some(e.log.clone()),
                        at,
                    })
                });
            }
        };
        let repeats = Workbench::repeats(&oracle);
        let criteria = workbench::criteria(&oracle, &report);
        let candidate = detail.attempt.candidate.as_deref();
        let mut runs = Vec::new();
        let mut failed = 0;
        for _ in 0..repeats {
            let (obs, run) = bench
                .run_once(&oracle, candidate, &env)
                .await
                .map_err(|e| JobError::because("a run could not start", e))?;
            failed += u32::from(grading::failed(&criteria, &obs));
            let mut new = bench.new_run(runner, attempt_id, RunTrigger::Scheduled, RunEnvironment::Release, run, &obs);
            new.release = Some(env.version.clone().unwrap_or_else(|| name.to_owned()));
            runs.push(new);
        }
        let was_fixed = detail.attempt.grade.as_ref().is_some_and(GradeRecord::recheck_found_fixed);
        let outcome = RecheckOutcome::of(failed, repeats, was_fixed);
        Ok(Verification {
            flaky: outcome == RecheckOutcome::Flaky,
            runs,
            ..recorded(RecheckRecord {
                environment: name.to_owned(),
                version: Some(env.version.clone().unwrap_or_else(|| name.to_owned())),
                outcome,
                failed: Some(failed),
                runs: Some(repeats),
                reason: None,
                setup_log: None,
                at,
            })
        })
    }
}
