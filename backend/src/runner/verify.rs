//! Grading one attempt by execution: build the environments, check the
//! candidate statically, run it (repeatedly, if the oracle asks) on buggy and
//! fixed, grade the runs by the report's oracle, and compute the four signals.

use failpass_shared::api::attempts::{Signal, Signals};
use failpass_shared::api::jobs::{Environment, Job};
use failpass_shared::api::reports::Report;
use failpass_shared::grading::{self, GradeRecord, Observation, SetupFailure, Sides, Unverifiable};
use failpass_shared::model::{EnvironmentRole, FailureCause, RunEnvironment, RunTrigger, SignalSource, Verdict};

use super::JobError;
use super::workbench::{self, Workbench};
use crate::db::ProjectScope;
use crate::db::attempts::Verification;

/// Verifies the attempt a job names: the first grade, or a rerun.
#[derive(Clone)]
pub struct Verify {
    pub bench: Workbench,
}

impl Verify {
    /// Carries out one `verify` job (see [`super::Executor`]).
    #[tracing::instrument(name = "verify", skip_all, fields(job = job.id, attempt = job.payload.attempt_id))]
    pub async fn execute(&self, job: &Job, runner: &str) -> Result<Verification, JobError> {
        let attempt_id = job.payload.attempt_id.ok_or_else(|| JobError::permanent("the job names no attempt_id"))?;
        let storage = &self.bench.storage;
        let detail = storage
            .get_attempt(attempt_id, &ProjectScope::All)
            .await?
            .ok_or_else(|| JobError::permanent(format!("attempt {attempt_id} does not exist")))?;
        let report = storage
            .get_report(detail.attempt.report_id, &ProjectScope::All)
            .await?
            .ok_or_else(|| JobError::permanent(format!("report {} does not exist", detail.attempt.report_id)))?;
        let environments = storage.list_environments(&report.summary.project).await?;
        let trigger = if job.payload.manual { RunTrigger::Rerun } else { RunTrigger::Initial };
        let candidate = detail.attempt.candidate.as_deref();
        self.grade(runner, attempt_id, &report, candidate, &environments, trigger).await
    }
}

impl Verify {
    /// Grades `candidate` for `report` on its project's buggy and fixed
    /// environments. What the candidate did is a result (any verdict, an
    /// `error` for a failed setup); a run that could not start at all is the
    /// runner's trouble, not the candidate's, and fails the job (transiently).
    #[tracing::instrument(name = "grade", skip_all, fields(attempt = attempt_id, report = report.summary.id))]
    pub async fn grade(
        &self,
        runner: &str,
        attempt_id: i64,
        report: &Report,
        candidate: Option<&str>,
        environments: &[Environment],
        trigger: RunTrigger,
    ) -> Result<Verification, JobError> {
        let bench = &self.bench;
        let error = |cause: FailureCause, reason: String, detail: Option<SetupFailure>| Verification {
            failure_cause: Some(cause),
            grade: GradeRecord { detail, ..GradeRecord::because(reason) },
            ..Verification::new(attempt_id, Verdict::Error)
        };
        // The report's own releases, when its project builds releases and the report names them.
        let own = match super::sides::for_report(bench, report).await {
            Ok(own) => own,
            Err(super::sides::SidesError::Unusable(why)) => return Ok(error(FailureCause::EnvSetup, why, None)),
            // The index cannot be reached: the job waits and tries again, saying why.
            Err(super::sides::SidesError::Unreachable(why)) => {
                return Err(JobError::transient(format!("waiting for the package index: {why}")));
            }
        };
        let release_envs = own.as_ref().map(|s| {
            [
                super::sides::as_environment(report, EnvironmentRole::Buggy, &s.buggy),
                super::sides::as_environment(report, EnvironmentRole::Fixed, &s.fixed),
            ]
        });
        let environments = release_envs.as_ref().map_or(environments, |e| e.as_slice());
        let roles: Vec<_> = environments.iter().map(|e| e.role).collect();
        let rule =
            grading::verifiable(report.oracle.as_ref().map(|o| o.kind_and_command()), candidate.is_some(), &roles);
        let (Some(oracle), Some(buggy), Some(fixed)) = (
            report.oracle.as_ref(),
            workbench::find(environments, EnvironmentRole::Buggy, None),
            workbench::find(environments, EnvironmentRole::Fixed, None),
        ) else {
            // The rule below says why.
            return Ok(unverifiable(rule.err().unwrap_or(Unverifiable::NoEnvironments), report, error));
        };
        if let Err(why) = rule {
            return Ok(unverifiable(why, report, error));
        }
        let built = match &own {
            Some(sides) => super::sides::build(bench, sides).await,
            None => {
                async {
                    Ok((
                        bench.envs.get(&buggy.recipe, &bench.base).await?,
                        bench.envs.get(&fixed.recipe, &bench.base).await?,
                    ))
                }
                .await
            }
        };
        let (buggy_env, fixed_env) = match built {
            Ok(pair) => pair,
            Err(e) => {
                let detail = SetupFailure { setup_log: e.log.clone() };
                return Ok(error(FailureCause::EnvSetup, e.to_string(), Some(detail)));
            }
        };
        let mut signals = Signals::default();
        if let Some(code) = candidate {
            let (syntax, quality) = workbench::static_signals(code, &bench.scratch).await?;
            let (relevant, detail) = grading::relevance(&format!("{}\n{}", report.summary.title, report.body), code);
            signals.relevance =
                Some(Signal { passed: relevant, source: SignalSource::Deterministic, detail: Some(detail) });
            signals.quality = quality;
            let parses = syntax.passed;
            let syntax_detail = syntax.detail.clone().unwrap_or_default();
            signals.syntax = Some(syntax);
            if !parses {
                return Ok(Verification {
                    failure_cause: Some(FailureCause::Other),
                    signals,
                    grade: GradeRecord::because(format!("the candidate does not parse: {syntax_detail}")),
                    ..Verification::new(attempt_id, Verdict::NotReproduced)
                });
            }
        }
        let repeats = Workbench::repeats(oracle);
        let mut runs = Vec::new();
        let mut observed = [Vec::new(), Vec::new()];
        for (side, (env_role, env)) in
            [(RunEnvironment::Buggy, &buggy_env), (RunEnvironment::Fixed, &fixed_env)].into_iter().enumerate()
        {
            for _ in 0..repeats {
                let (obs, run) = bench
                    .run_once(oracle, candidate, env)
                    .await
                    .map_err(|e| JobError::because("a run could not start", e))?;
                runs.push(bench.new_run(runner, attempt_id, trigger, env_role, run, &obs));
                observed[side].push(obs);
            }
        }
        let criteria = workbench::criteria(oracle, report);
        let g = grading::grade(&criteria, &observed[0], &observed[1]);
        let buggy_sigs = grading::signatures(&observed[0]);
        let report_exception = failpass_shared::routing::exception_line(&report.body).map(str::to_owned);
        let failure_shown = match (&report_exception, oracle.signature.as_deref()) {
            (_, Some(sig)) => observed[0].iter().all(|o| grading::signature_matches(sig, &o.output)),
            (Some(exc), None) => observed[0].iter().all(|o| grading::signature_matches(exc, &o.output)),
            (None, None) => g.buggy_failed == g.buggy_runs,
        };
        signals.failure_behaviour = Some(Signal {
            passed: failure_shown,
            source: SignalSource::Deterministic,
            detail: Some(match buggy_sigs.first() {
                Some(s) => format!("buggy shows {s}"),
                None => {
                    format!("buggy exits {}", observed[0].iter().map(exit_text).collect::<Vec<_>>().join(", "))
                }
            }),
        });
        let failure_cause = grading::failure_cause(&g, &observed[0]);
        let environments =
            Sides { buggy: workbench::used(buggy, &buggy_env), fixed: workbench::used(fixed, &fixed_env) };
        let (verdict, flaky) = (g.verdict, g.flaky);
        Ok(Verification {
            failure_cause,
            signals,
            flaky,
            grade: GradeRecord::graded(g, [buggy_sigs, grading::signatures(&observed[1])], environments),
            runs,
            ..Verification::new(attempt_id, verdict)
        })
    }
}

/// The `error` verdict for an attempt that cannot be graded here.
fn unverifiable(
    why: Unverifiable,
    report: &Report,
    error: impl Fn(FailureCause, String, Option<SetupFailure>) -> Verification,
) -> Verification {
    match why {
        Unverifiable::NoEnvironments => error(
            FailureCause::EnvSetup,
            format!(
                "project {0} has no buggy and fixed environment to run in (an admin adds them on /settings/projects/{0})",
                report.summary.project
            ),
            None,
        ),
        other => error(FailureCause::Other, other.to_string(), None),
    }
}

fn exit_text(o: &Observation) -> String {
    if o.timed_out { "timeout".into() } else { o.exit_status.map_or("killed".into(), |s| s.to_string()) }
}
