//! Bisect over releases: runs a report's reproduction on the releases from
//! its buggy one to the newest and names the first where it passes and the
//! last where it fails ("fixed in pandas 2.0.1"), or that it still fails on
//! the newest. A binary search: each step builds (or finds) the release's
//! environment and runs the candidate sandboxed, graded by the report's
//! oracle as any run is. A release whose environment does not build, or
//! whose runs disagree, is skipped (as `git bisect skip` does). Progress is
//! stored after every step, so the report shows the search as it goes; the
//! result goes into the report's history, and becomes its fixed release
//! when none was set.

use std::time::Instant;

use chrono::Utc;
use failpass_shared::api::jobs::Job;
use failpass_shared::api::releases::{Bisect, BisectStep, ReleaseTemplate};
use failpass_shared::api::reports::{Oracle, Report};
use failpass_shared::grading;

use super::JobError;
use super::workbench::{self, Workbench};
use crate::db::ProjectScope;

/// The attempt a bisect runs by default: the report's newest reproduced
/// attempt with a candidate, else its newest with one.
pub async fn default_attempt(
    storage: &dyn crate::db::Storage,
    scope: &ProjectScope,
    report_id: i64,
) -> crate::db::StorageResult<Option<i64>> {
    let q = failpass_shared::api::attempts::AttemptListQuery {
        report_id: Some(report_id),
        limit: 200,
        ..Default::default()
    };
    let page = storage.list_attempts(&q, scope).await?;
    let with: Vec<_> = page.items.iter().filter(|a| a.candidate.is_some()).collect();
    Ok(with.iter().find(|a| a.verdict == failpass_shared::model::Verdict::Reproduced).or(with.first()).map(|a| a.id))
}

#[derive(Clone)]
pub struct Bisector {
    pub bench: Workbench,
}

/// What each step runs: the report's candidate, graded by its oracle, in a release of its template.
#[derive(Clone, Copy)]
struct What<'a> {
    report: &'a Report,
    template: &'a ReleaseTemplate,
    oracle: &'a Oracle,
    candidate: &'a str,
}

/// How the candidate did on one release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Fails,
    Passes,
    /// Not decisive: no environment, or runs that disagree.
    Skip,
}

impl Bisector {
    /// Carries out one `bisect` job (see [`super::Executor`]).
    #[tracing::instrument(name = "bisect", skip_all, fields(job = job.id, report = job.payload.report_id))]
    pub async fn execute(&self, job: &Job) -> Result<(), JobError> {
        let storage = &self.bench.storage;
        let report_id = job.payload.report_id.ok_or_else(|| JobError::permanent("the job names no report_id"))?;
        let attempt_id = job.payload.attempt_id.ok_or_else(|| JobError::permanent("the job names no attempt_id"))?;
        let report = storage
            .get_report(report_id, &ProjectScope::All)
            .await?
            .ok_or_else(|| JobError::permanent(format!("report {report_id} does not exist")))?;
        let attempt = storage
            .get_attempt(attempt_id, &ProjectScope::All)
            .await?
            .ok_or_else(|| JobError::permanent(format!("attempt {attempt_id} does not exist")))?;
        let candidate =
            attempt.attempt.candidate.clone().ok_or_else(|| JobError::permanent("the attempt has no candidate"))?;
        let bisect = self.run(&report, attempt_id, &candidate).await?;
        let mut versions = storage.report_versions(report_id).await?;
        if versions.fixed.is_none() && bisect.state == "found" {
            versions.fixed = bisect.first_passing.clone();
            versions.fixed_source = Some(format!("bisect of attempt {attempt_id}"));
        }
        versions.bisect = Some(bisect.clone());
        storage.set_report_versions(report_id, &versions).await?;
        let origin = crate::db::reports::Origin { actor: "bisect".into(), via: "runner" };
        storage.comment_report(report_id, &format!("bisect over releases: {}", bisect.summary), &origin).await?;
        Ok(())
    }

    /// Searches the releases from the report's buggy one to the newest.
    pub async fn run(&self, report: &Report, attempt_id: i64, candidate: &str) -> Result<Bisect, JobError> {
        let storage = &self.bench.storage;
        let project = &report.summary.project;
        let template = storage
            .release_template(project)
            .await?
            .ok_or_else(|| JobError::permanent(format!("project {project} has no release template to bisect over")))?;
        let oracle =
            report.oracle.clone().ok_or_else(|| JobError::permanent("the report has no oracle to grade runs by"))?;
        let versions = storage.report_versions(report.summary.id).await?;
        let from =
            versions.buggy.ok_or_else(|| JobError::permanent("the report names no buggy release to bisect from"))?;
        let listing = self
            .bench
            .index
            .releases(&template.package, !template.setup.is_empty())
            .await
            .map_err(|e| JobError::transient(format!("listing the releases of {}: {e}", template.package)))?;
        let mut releases = crate::releases::releases_from(&listing, &from).map_err(JobError::permanent)?;
        let mut b = Bisect {
            state: "running".into(),
            attempt_id: Some(attempt_id),
            from: from.clone(),
            to: releases.last().cloned().unwrap_or_else(|| from.clone()),
            first_passing: None,
            last_failing: None,
            summary: format!("running on the releases of {} from {from}", template.package),
            steps: Vec::new(),
            started_at: Utc::now(),
            finished_at: None,
        };
        let name = template.package.clone();
        let end = |mut b: Bisect, state: &str, summary: String| {
            b.state = state.into();
            b.summary = summary;
            b.finished_at = Some(Utc::now());
            b
        };
        if let Err(why) = crate::releases::resolve(&template, &listing, &from, "") {
            return Ok(end(b, "error", format!("cannot start at {name} {from}: {why}")));
        }
        if releases.is_empty() {
            return Ok(end(b, "error", format!("no buildable release of {name} from {from}")));
        }
        let what = What { report, template: &template, oracle: &oracle, candidate };
        // The buggy release first: it must fail, and how it fails is the bug's signature.
        let (first, bug) = self.step(&mut b, &what, &releases[0], None).await?;
        match first {
            Outcome::Fails => {}
            Outcome::Passes => {
                let s = format!(
                    "passes on {name} {}, the buggy release: the reproduction does not show the bug there",
                    releases[0]
                );
                return Ok(end(b, "passes_on_buggy", s));
            }
            Outcome::Skip => {
                return Ok(end(b, "error", format!("{name} {} could not be run; see its step", releases[0])));
            }
        }
        // Binary search for the first release that passes; `hi == len` stands for "none yet".
        // A release that cannot be run, or fails another way than the bug (an API since removed), is left out.
        let (mut lo, mut hi) = (0usize, releases.len());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let (outcome, _) = self.step(&mut b, &what, &releases[mid], bug.as_deref()).await?;
            match outcome {
                Outcome::Fails => lo = mid,
                Outcome::Passes => hi = mid,
                Outcome::Skip => {
                    releases.remove(mid);
                    hi -= 1;
                }
            }
        }
        b.last_failing = Some(releases[lo].clone());
        if hi == releases.len() {
            let s = format!("still fails on {name} {} (the newest release it could run on)", releases[lo]);
            return Ok(end(b, "still_fails", s));
        }
        b.first_passing = Some(releases[hi].clone());
        let s = format!("fixed in {name} {} (last failing: {})", releases[hi], releases[lo]);
        Ok(end(b, "found", s))
    }

    /// Runs the candidate on one release, records the step and stores the progress.
    async fn step(
        &self,
        b: &mut Bisect,
        what: &What<'_>,
        version: &str,
        bug: Option<&str>,
    ) -> Result<(Outcome, Option<String>), JobError> {
        let What { report, template, oracle, candidate } = *what;
        let started = Instant::now();
        let mut signature = None;
        let (outcome, detail) = match super::sides::resolve(&self.bench, template, version).await {
            Err(super::sides::SidesError::Unreachable(why)) => return Err(JobError::transient(why)),
            Err(super::sides::SidesError::Unusable(why)) => (Outcome::Skip, why),
            Ok(release) => match self.bench.envs.get_release(&release).await {
                Err(e) => (Outcome::Skip, format!("no environment: {}", e.reason)),
                Ok(env) => {
                    let criteria = workbench::criteria(oracle, report);
                    let mut failed = Vec::new();
                    let mut shown = String::new();
                    for _ in 0..Workbench::repeats(oracle) {
                        let (obs, _) = self
                            .bench
                            .run_once(oracle, Some(candidate), &env)
                            .await
                            .map_err(|e| JobError::because("a run could not start", e))?;
                        failed.push(grading::failed(&criteria, &obs));
                        if shown.is_empty() {
                            shown =
                                grading::signatures(std::slice::from_ref(&obs)).first().cloned().unwrap_or_else(|| {
                                    format!("exit {}", obs.exit_status.map_or("-".into(), |s| s.to_string()))
                                });
                        }
                    }
                    signature = shown_signature(&shown);
                    match (failed.iter().all(|f| *f), failed.iter().all(|f| !*f)) {
                        (true, _) if bug.is_some_and(|b| signature.as_deref() != Some(b)) => {
                            (Outcome::Skip, format!("fails another way than the bug ({shown})"))
                        }
                        (true, _) => (Outcome::Fails, shown),
                        (_, true) => (Outcome::Passes, shown),
                        _ => (Outcome::Skip, format!("runs disagree ({shown})")),
                    }
                }
            },
        };
        b.steps.push(BisectStep {
            version: version.to_owned(),
            outcome: match outcome {
                Outcome::Fails => "fails",
                Outcome::Passes => "passes",
                Outcome::Skip => "error",
            }
            .into(),
            detail: detail.chars().take(300).collect(),
            seconds: started.elapsed().as_secs_f64(),
        });
        b.summary = format!(
            "step {}: {} {version} {}",
            b.steps.len(),
            template.package,
            b.steps.last().map_or("", |s| s.outcome.as_str())
        );
        let storage = &self.bench.storage;
        let mut versions = storage.report_versions(report.summary.id).await?;
        versions.bisect = Some(b.clone());
        storage.set_report_versions(report.summary.id, &versions).await?;
        Ok((outcome, signature))
    }
}

/// The exception type a failing run showed (`AssertionError`), or its exit.
fn shown_signature(shown: &str) -> Option<String> {
    let head = shown.split(':').next().unwrap_or(shown).trim();
    (!head.is_empty()).then(|| head.to_owned())
}
