//! Re-checking a reproduced attempt: its candidate runs against another
//! environment (a newer release), and the outcome is recorded beside the
//! grade; the verdict stays.

use chrono::SubsecRound;
use failpass_shared::api::jobs::Job;
use failpass_shared::grading::{self, GradeRecord, Recheck as RecheckRecord};
use failpass_shared::model::{RecheckOutcome, RunEnvironment, RunTrigger, Verdict};

use super::JobError;
use super::workbench::{self, Workbench};
use crate::db::ProjectScope;
use crate::db::attempts::Verification;

/// Runs a reproduced attempt's candidate against the environment a re-check
/// job names: `still_reproduces` when it still fails there,
/// `no_longer_reproduces` when it passes, `regressed` when it fails again
/// after an earlier re-check found it fixed ([`RecheckOutcome::of`]).
/// The re-checks of a report's attempts, but the one on `env` of `attempt`
/// (which this re-check replaces).
async fn report_history(
    bench: &Workbench,
    report_id: i64,
    attempt: i64,
    env: &str,
) -> Result<Vec<RecheckRecord>, JobError> {
    let query = failpass_shared::api::attempts::AttemptListQuery {
        report_id: Some(report_id),
        limit: failpass_shared::api::MAX_LIMIT,
        ..Default::default()
    };
    let mut out = Vec::new();
    let mut query = query;
    loop {
        let page = bench.storage.list_attempts(&query, &ProjectScope::All).await?;
        for a in &page.items {
            let Some(g) = &a.grade else { continue };
            out.extend(g.recheck_history().into_iter().filter(|h| !(a.id == attempt && h.environment == env)));
        }
        match page.next_cursor {
            Some(c) => query.cursor = Some(c),
            None => break,
        }
    }
    Ok(out)
}

/// The release of `project`'s package a re-check names by its label:
/// `Err` (recorded as the re-check's error) when it cannot be built; a
/// job error when the index cannot be reached (tried again later) or the
/// name is neither an environment nor a release.
async fn index_release(
    bench: &Workbench,
    project: &str,
    name: &str,
) -> Result<Result<crate::releases::ResolvedRelease, String>, JobError> {
    let missing = || JobError::permanent(format!("project {project} has no environment `{name}`"));
    let template = bench.storage.release_template(project).await?.ok_or_else(missing)?;
    let version = name.strip_prefix(&format!("{} ", template.package)).ok_or_else(missing)?;
    match super::sides::resolve(bench, &template, version).await {
        Ok(r) => Ok(Ok(r)),
        Err(super::sides::SidesError::Unusable(why)) => Ok(Err(why)),
        Err(e @ super::sides::SidesError::Unreachable(_)) => Err(JobError::transient(e.to_string())),
    }
}

#[derive(Clone)]
pub struct Recheck {
    pub bench: Workbench,
}

impl Recheck {
    /// Carries out one `recheck` job (see [`super::Executor`]).
    #[tracing::instrument(name = "recheck", skip_all, fields(job = job.id, attempt = job.payload.attempt_id))]
    pub async fn execute(&self, job: &Job, runner: &str) -> Result<Verification, JobError> {
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
        let target = environments.iter().find(|e| e.name == name);
        // Not an environment: a release on the index, by its label (`pandas 2.2.3`).
        let release = match target {
            Some(_) => None,
            None => Some(index_release(bench, &report.summary.project, name).await?),
        };
        let oracle = report.oracle.clone().unwrap_or_default();
        let at = Some(chrono::Utc::now().trunc_subsecs(0));
        // Only the re-check is written; storage keeps the rest of the grade.
        let recorded = |recheck: RecheckRecord| Verification {
            sets_verdict: false,
            grade: GradeRecord { recheck: Some(recheck), ..GradeRecord::default() },
            ..Verification::new(attempt_id, Verdict::Reproduced)
        };
        let built = match (target, release) {
            (Some(t), _) => bench.envs.get(&t.recipe, &bench.base).await.map_err(|e| (e.to_string(), Some(e.log))),
            (None, Some(Ok(r))) => bench.envs.get_release(&r).await.map_err(|e| (e.to_string(), Some(e.log))),
            (None, Some(Err(why))) => Err((why, None)),
            (None, None) => unreachable!("a release is resolved when no environment has the name"),
        };
        let env = match built {
            Ok(env) => env,
            Err((reason, setup_log)) => {
                return Ok(Verification {
                    verdict: Verdict::Error,
                    ..recorded(RecheckRecord {
                        environment: name.to_owned(),
                        version: None,
                        outcome: RecheckOutcome::Error,
                        failed: None,
                        runs: None,
                        reason: Some(reason),
                        setup_log,
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
        // Judged per report: every attempt's re-checks count, and a release
        // is "later" by version (schedule::newest_release's order).
        let history = report_history(bench, report.summary.id, attempt_id, name).await?;
        let position = |env: &str| super::schedule::release_position(&environments, env);
        let here = position(name);
        let was_fixed = history.iter().any(|h| {
            h.outcome == RecheckOutcome::NoLongerReproduces && h.environment != name && position(&h.environment) < here
        });
        let outcome = RecheckOutcome::of(failed, repeats, was_fixed);
        let record = RecheckRecord {
            environment: name.to_owned(),
            version: Some(env.version.clone().unwrap_or_else(|| name.to_owned())),
            outcome,
            failed: Some(failed),
            runs: Some(repeats),
            reason: None,
            setup_log: None,
            at,
        };
        // The report is regressed when its conclusive re-check on the
        // highest release re-checked says so.
        let latest = history
            .iter()
            .chain(std::iter::once(&record))
            .filter(|h| {
                matches!(
                    h.outcome,
                    RecheckOutcome::StillReproduces | RecheckOutcome::NoLongerReproduces | RecheckOutcome::Regressed
                )
            })
            .max_by(|a, b| (position(&a.environment), a.at).cmp(&(position(&b.environment), b.at)));
        let report_regressed = latest.map(|h| h.outcome == RecheckOutcome::Regressed);
        Ok(Verification { flaky: outcome == RecheckOutcome::Flaky, runs, report_regressed, ..recorded(record) })
    }
}
