//! `POST /api/v1/reruns`: rerun attempts, or re-check reproduced ones against a release.

use axum::extract::State;
use axum::http::StatusCode;
use failpass_shared::api::jobs::{PRIORITY_BULK, PRIORITY_MANUAL, RerunRequest, RerunResponse};
use failpass_shared::grading::{self, Unverifiable};
use failpass_shared::model::{EnvironmentRole, Verdict};

use super::AppState;
use crate::auth::{Action, Viewer};
use crate::db::queue::NewJob;
use crate::error::{ApiError, ApiJson, ApiResult};

/// `POST /api/v1/reruns`: one attempt (manual priority), every failed or
/// errored attempt of a report or a filter (bulk priority), or a re-check of
/// reproduced attempts against another environment.
#[utoipa::path(
    post, path = "/api/v1/reruns", tag = "jobs",
    request_body = RerunRequest,
    responses((status = 202, description = "Queued.", body = RerunResponse))
)]
#[tracing::instrument(skip_all)]
pub async fn rerun(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(req): ApiJson<RerunRequest>,
) -> ApiResult<(StatusCode, ApiJson<RerunResponse>)> {
    req.validate()?;
    let scope = viewer.scope();
    let recheck = req.recheck_environment.as_deref().map(str::trim);
    let verdicts: &[Verdict] =
        if recheck.is_some() { &[Verdict::Reproduced] } else { &[Verdict::NotReproduced, Verdict::Error] };
    // The one attempt a single rerun names, read once for every check below.
    let single = match req.attempt_id {
        Some(id) => Some(
            state
                .storage
                .get_attempt(id, &scope)
                .await?
                .ok_or_else(|| ApiError::NotFound(format!("attempt {id} not found")))?
                .attempt,
        ),
        None => None,
    };
    let (targets, priority) = match &single {
        Some(attempt) => {
            viewer.require(Action::Rerun, &attempt.project)?;
            let id = attempt.id;
            let report = state.storage.get_report(attempt.report_id, &scope).await?;
            let envs = state.storage.list_environments(&attempt.project).await?;
            let mut roles: Vec<_> = envs.iter().map(|e| e.role).collect();
            // A project that builds its releases grades on the report's own.
            if state.storage.release_template(&attempt.project).await?.is_some() {
                roles.extend([
                    failpass_shared::model::EnvironmentRole::Buggy,
                    failpass_shared::model::EnvironmentRole::Fixed,
                ]);
            }
            let oracle = report.as_ref().and_then(|r| r.oracle.as_ref()).map(|o| o.kind_and_command());
            match grading::verifiable(oracle, attempt.candidate.is_some(), &roles) {
                Ok(()) => {}
                Err(Unverifiable::NoEnvironments) => {
                    return Err(ApiError::BadRequest(format!(
                        "attempt_id: project {0} has no buggy and fixed environment to run in, so its recorded verdict stays; an admin adds them first on /settings/projects/{0}",
                        attempt.project
                    )));
                }
                Err(why) => {
                    return Err(ApiError::BadRequest(format!(
                        "attempt_id: attempt {id} cannot be rerun: its report needs a deterministic oracle and the attempt a candidate (or the oracle a command): {why}"
                    )));
                }
            }
            (vec![id], PRIORITY_MANUAL)
        }
        None => {
            if let Some(id) = req.report_id {
                let report = state
                    .storage
                    .get_report(id, &scope)
                    .await?
                    .ok_or_else(|| ApiError::NotFound(format!("report {id} not found")))?;
                viewer.require(Action::Rerun, &report.summary.project)?;
            }
            if let Some(p) = req.filter.as_ref().and_then(|f| f.project.as_deref()) {
                state
                    .storage
                    .get_project(p, &scope)
                    .await?
                    .ok_or_else(|| ApiError::NotFound(format!("project `{p}` not found")))?;
                viewer.require(Action::Rerun, p)?;
            }
            // A filter across projects reruns only in those the caller maintains.
            (
                state
                    .storage
                    .rerun_targets(req.report_id, req.filter.as_ref(), verdicts, &viewer.scope_for(Action::Rerun))
                    .await?,
                PRIORITY_BULK,
            )
        }
    };
    if let Some(env) = recheck {
        // Environment names belong to a project: a re-check names one project.
        let project = match (&single, req.report_id, req.filter.as_ref().and_then(|f| f.project.clone())) {
            (Some(a), _, _) => {
                if a.verdict != Verdict::Reproduced {
                    return Err(ApiError::BadRequest(format!(
                        "attempt_id: attempt {} is {}, and only reproduced attempts are re-checked",
                        a.id, a.verdict
                    )));
                }
                a.project.clone()
            }
            (None, Some(id), _) => {
                state.storage.get_report(id, &scope).await?.map(|r| r.summary.project).unwrap_or_default()
            }
            (None, None, Some(p)) => p,
            _ => return Err(ApiError::BadRequest(
                "recheck_environment: environments belong to one project; give attempt_id, report_id or filter.project"
                    .into(),
            )),
        };
        let envs = state.storage.list_environments(&project).await?;
        match envs.iter().find(|e| e.name == env) {
            // A project that builds its releases re-checks on any of them, by label (`pandas 2.2.3`).
            None => index_release(&state, &project, env).await?,
            Some(e) if e.role != EnvironmentRole::Release => {
                return Err(ApiError::BadRequest(format!(
                    "recheck_environment: `{env}` is the project's {} environment; re-checks run against a release",
                    e.role
                )));
            }
            Some(_) => {}
        }
    }
    let manual = priority == PRIORITY_MANUAL;
    let jobs: Vec<NewJob> = targets
        .iter()
        .map(|id| match recheck {
            Some(env) => NewJob::recheck(*id, env, priority, manual),
            None => NewJob::verify(*id, priority, manual),
        })
        .collect();
    let (queued, already_queued) = state.storage.enqueue_many(&jobs, chrono::Utc::now()).await?;
    // Each report's timeline says what was queued for it, and by whom.
    if !targets.is_empty() {
        let mut per_report: std::collections::BTreeMap<i64, Vec<i64>> = std::collections::BTreeMap::new();
        for (attempt, report) in state.storage.attempt_reports(&targets).await? {
            per_report.entry(report).or_default().push(attempt);
        }
        let what = match recheck {
            Some(env) => format!("re-check against {env}"),
            None => "rerun".to_owned(),
        };
        let events: Vec<(i64, String)> = per_report
            .into_iter()
            .map(|(report, ids)| {
                let list = ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
                let plural = if ids.len() == 1 { "" } else { "s" };
                let already = if queued.is_empty() { " (already waiting to run)" } else { "" };
                (report, format!("{what} queued for attempt{plural} {list}{already}"))
            })
            .collect();
        state.storage.note_reports(&events, "rerun", &viewer.origin()).await?;
    }
    Ok((StatusCode::ACCEPTED, ApiJson(RerunResponse { queued, already_queued })))
}

/// Checks a re-check's `{package} {version}` against the project's release
/// template and the index's list of buildable releases.
async fn index_release(state: &AppState, project: &str, env: &str) -> ApiResult<()> {
    let missing = || ApiError::BadRequest(format!("recheck_environment: project {project} has no environment `{env}`"));
    let template = state.storage.release_template(project).await?.ok_or_else(missing)?;
    let version = env.strip_prefix(&format!("{} ", template.package)).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "recheck_environment: project {project} has no environment `{env}`; its releases are named `{} <version>`",
            template.package
        ))
    })?;
    let listing = state
        .index
        .releases(&template.package, !template.setup.is_empty())
        .await
        .map_err(|e| ApiError::Unavailable(format!("listing the releases of {}: {e}", template.package)))?;
    crate::releases::resolve(&template, &listing, version, &state.index.url)
        .map(|_| ())
        .map_err(|why| ApiError::BadRequest(format!("recheck_environment: {why}")))
}
