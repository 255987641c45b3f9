//! The job queue over HTTP: reruns, the queue and its runners, a job's live
//! progress (server-sent events), and the environments candidates run in.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use failpass_shared::api::jobs::{
    CreateEnvironmentRequest, Environment, Job, PRIORITY_BULK, PRIORITY_MANUAL, QueueOverview, RerunRequest,
    RerunResponse,
};
use failpass_shared::model::{EnvironmentRole, JobStatus, Verdict};
use futures_util::Stream;

use super::AppState;
use crate::auth::{Action, Viewer};
use crate::db::jobs::NewJob;
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult, QueryPairs};

/// `POST /api/v1/reruns`: one attempt (manual priority), every failed or
/// errored attempt of a report or a filter (bulk priority), or a re-check of
/// reproduced attempts against another environment.
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
            let runnable = report
                .as_ref()
                .and_then(|r| r.oracle.as_ref())
                .is_some_and(|o| o.is_deterministic() && (attempt.candidate.is_some() || o.command.is_some()));
            if !runnable {
                return Err(ApiError::BadRequest(format!(
                    "attempt_id: attempt {id} cannot be rerun: its report needs a deterministic oracle and the attempt a candidate (or the oracle a command)"
                )));
            }
            let envs = state.storage.list_environments(&attempt.project).await?;
            let has = |role: EnvironmentRole| envs.iter().any(|e| e.role == role);
            if !(has(EnvironmentRole::Buggy) && has(EnvironmentRole::Fixed)) {
                return Err(ApiError::BadRequest(format!(
                    "attempt_id: project {} has no buggy and fixed environment to run in, so its recorded verdict stays; add them first (POST /api/v1/environments)",
                    attempt.project
                )));
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
            None => {
                return Err(ApiError::BadRequest(format!(
                    "recheck_environment: project {project} has no environment `{env}`"
                )));
            }
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
    Ok((StatusCode::ACCEPTED, ApiJson(RerunResponse { queued, already_queued })))
}

/// `POST /api/v1/refine`: queues the refine loop for an `agent_first` report.
pub async fn refine(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(req): ApiJson<failpass_shared::api::jobs::RefineRequest>,
) -> ApiResult<(StatusCode, ApiJson<Job>)> {
    let report = state
        .storage
        .get_report(req.report_id, &viewer.scope())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("report {} not found", req.report_id)))?;
    viewer.require(Action::Rerun, &report.summary.project)?;
    if report.summary.route != failpass_shared::model::Route::AgentFirst {
        return Err(ApiError::BadRequest(format!(
            "report_id: report {} is routed {}; the refine loop is for agent_first reports",
            req.report_id, report.summary.route
        )));
    }
    if !report.oracle.as_ref().is_some_and(|o| o.is_deterministic()) {
        return Err(ApiError::BadRequest(format!(
            "report_id: report {} has no deterministic oracle to grade candidates by",
            req.report_id
        )));
    }
    // As for verify: no environments, nothing to grade in (and no `error` attempt left behind).
    let envs = state.storage.list_environments(&report.summary.project).await?;
    let has = |role: EnvironmentRole| envs.iter().any(|e| e.role == role);
    if !(has(EnvironmentRole::Buggy) && has(EnvironmentRole::Fixed)) {
        return Err(ApiError::BadRequest(format!(
            "report_id: project {} has no buggy and fixed environment to grade candidates in; an admin adds them first (POST /api/v1/environments)",
            report.summary.project
        )));
    }
    let (job, _) =
        state.storage.enqueue(&NewJob::refine(req.report_id, PRIORITY_MANUAL, true), chrono::Utc::now()).await?;
    Ok((StatusCode::ACCEPTED, ApiJson(job)))
}

/// `GET /api/v1/jobs`: the queue page's data.
pub async fn queue(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<QueueOverview>> {
    if let Some((k, _)) = query.iter().next() {
        return Err(ApiError::BadRequest(format!("{k}: unknown query parameter `{k}`; this list takes none")));
    }
    Ok(ApiJson(state.storage.queue_overview(chrono::Utc::now(), &viewer.scope()).await?))
}

pub async fn get_job(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<ApiJson<Job>> {
    Ok(ApiJson(
        state
            .storage
            .get_job(id, &viewer.scope())
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("job {id} not found")))?,
    ))
}

/// `GET /api/v1/jobs/{id}/events`: the job's state as server-sent events
/// (`job` events with the job, then `attempt` with the graded attempt), until
/// it is done or failed. Polls storage, so it follows workers in any process.
pub async fn job_events(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let first = state
        .storage
        .get_job(id, &viewer.scope())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("job {id} not found")))?;
    let scope = viewer.scope();
    let stream = futures_util::stream::unfold((Some(first), None::<String>, false), move |(job, last, finished)| {
        let state = state.clone();
        let scope = scope.clone();
        async move {
            if finished {
                return None;
            }
            let mut job = match job {
                Some(j) => j,
                None => {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    state.storage.get_job(id, &scope).await.ok().flatten()?
                }
            };
            // Wait for a change (or the end) before sending again.
            let mut text = serde_json::to_string(&job).unwrap_or_default();
            while last.as_deref() == Some(text.as_str()) {
                tokio::time::sleep(Duration::from_millis(300)).await;
                job = state.storage.get_job(id, &scope).await.ok().flatten()?;
                text = serde_json::to_string(&job).unwrap_or_default();
            }
            let ended = matches!(job.status, JobStatus::Done | JobStatus::Failed | JobStatus::Cancelled);
            let mut event = Event::default().event("job").data(text.clone());
            if ended
                && let Some(a) = job.payload.attempt_id
                && let Ok(Some(d)) = state.storage.get_attempt(a, &scope).await
            {
                // The final event carries the job and the graded attempt.
                let both = serde_json::json!({ "job": job, "attempt": d });
                event = Event::default().event("done").data(both.to_string());
            }
            Some((Ok(event), (None, Some(text), ended)))
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// `GET /api/v1/environments?project=owner/name`.
pub async fn list_environments(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<Vec<Environment>>> {
    let mut project = None;
    for (k, v) in query.iter() {
        match k {
            "project" => project = Some(v.to_owned()),
            other => {
                return Err(ApiError::BadRequest(format!(
                    "{other}: unknown query parameter `{other}`; known: project"
                )));
            }
        }
    }
    let project = project.ok_or_else(|| ApiError::BadRequest("project: required (owner/name)".into()))?;
    state
        .storage
        .get_project(&project, &viewer.scope())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("project `{project}` not found")))?;
    viewer.require(Action::ReadEnvironments, &project)?;
    Ok(ApiJson(state.storage.list_environments(&project).await?))
}

/// `POST /api/v1/environments`: creates or replaces a project's environment by name.
pub async fn create_environment(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(req): ApiJson<CreateEnvironmentRequest>,
) -> ApiResult<(StatusCode, ApiJson<Environment>)> {
    // Admins only (the route's action): the runner builds what this says.
    req.validate()?;
    if state.storage.get_project(&req.project, &viewer.scope()).await?.is_none() {
        return Err(ApiError::BadRequest(format!("project: `{}` does not exist", req.project)));
    }
    // One buggy and one fixed environment per project (grading uses exactly
    // those); releases may be many. Posting an existing name replaces it.
    let existing = state.storage.list_environments(&req.project).await?;
    let name = req.name.trim();
    if matches!(req.role, EnvironmentRole::Buggy | EnvironmentRole::Fixed)
        && let Some(other) = existing.iter().find(|e| e.role == req.role && e.name != name)
    {
        return Err(ApiError::Conflict(format!(
            "project {} already has a {} environment, `{}`; post with that name to replace it, or use role `release`",
            req.project, req.role, other.name
        )));
    }
    let replaced = existing.iter().any(|e| e.name == name);
    let env = state.storage.create_environment(&req.project, &req).await?;
    tracing::info!(project = %req.project, environment = %env.name, role = %env.role, by = %viewer.name(), "environment recipe stored");
    Ok((if replaced { StatusCode::OK } else { StatusCode::CREATED }, ApiJson(env)))
}

/// `GET /api/v1/signatures?project=owner/name`: failures grouped by normalised signature.
pub async fn signatures(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<Vec<failpass_shared::api::jobs::SignatureGroup>>> {
    let mut project = None;
    for (k, v) in query.iter() {
        match k {
            "project" => project = Some(v.to_owned()),
            other => {
                return Err(ApiError::BadRequest(format!(
                    "{other}: unknown query parameter `{other}`; known: project"
                )));
            }
        }
    }
    Ok(ApiJson(state.storage.signature_groups(project.as_deref(), &viewer.scope()).await?))
}

/// `GET /api/v1/oracles?project=owner/name`: oracle coverage, sources, authoring time, failure causes.
pub async fn oracles(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<failpass_shared::api::oracles::OracleSummary>> {
    Ok(ApiJson(oracle_summary(&state, &viewer.scope(), query.iter()).await?))
}

/// The oracle figures of the project `pairs` names (or of every project in scope).
pub(super) async fn oracle_summary<'a>(
    state: &AppState,
    scope: &crate::db::ProjectScope,
    pairs: impl Iterator<Item = (&'a str, &'a str)>,
) -> ApiResult<failpass_shared::api::oracles::OracleSummary> {
    let mut project = None;
    for (k, v) in pairs {
        match k {
            "project" if !v.is_empty() => project = Some(v.to_owned()),
            "project" => {}
            other => {
                return Err(ApiError::BadRequest(format!(
                    "{other}: unknown query parameter `{other}`; known: project"
                )));
            }
        }
    }
    if let Some(p) = &project {
        state
            .storage
            .get_project(p, scope)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("project `{p}` not found")))?;
    }
    Ok(state.storage.oracle_summary(project.as_deref(), scope).await?)
}
