//! The job queue over HTTP: the queue and its runners, one job, and a job's
//! live progress as server-sent events.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use failpass_shared::api::jobs::{Job, QueueOverview};
use failpass_shared::model::JobStatus;
use futures_util::Stream;

use super::AppState;
use crate::auth::Viewer;
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult, QueryPairs};

/// `GET /api/v1/jobs`: the queue page's data.
#[utoipa::path(
    get, path = "/api/v1/jobs", tag = "jobs",
    responses((status = 200, description = "The queue by state, recent jobs and runners.", body = QueueOverview))
)]
pub async fn queue(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<QueueOverview>> {
    if let Some((k, _)) = query.iter().next() {
        return Err(ApiError::BadRequest(format!("{k}: unknown query parameter `{k}`; this list takes none")));
    }
    Ok(ApiJson(overview(&state, &viewer).await?))
}

/// The queue as the viewer may see it (`GET /api/v1/jobs`, the Runners page).
pub(crate) async fn overview(state: &AppState, viewer: &Viewer) -> ApiResult<QueueOverview> {
    let mut overview = state.storage.queue_overview(chrono::Utc::now(), &viewer.scope()).await?;
    // An attempt's job names its report too, so the Runners page can link it.
    let ids: Vec<i64> = overview
        .jobs
        .iter()
        .chain(&overview.recent_failures)
        .filter(|j| j.payload.report_id.is_none())
        .filter_map(|j| j.payload.attempt_id)
        .collect();
    if !ids.is_empty() {
        let reports: std::collections::HashMap<i64, i64> =
            state.storage.attempt_reports(&ids).await?.into_iter().collect();
        for job in overview.jobs.iter_mut().chain(overview.recent_failures.iter_mut()) {
            if job.payload.report_id.is_none() {
                job.payload.report_id = job.payload.attempt_id.and_then(|a| reports.get(&a).copied());
            }
        }
    }
    Ok(overview)
}

#[utoipa::path(
    get, path = "/api/v1/jobs/{id}", tag = "jobs",
    params(("id" = i64, Path, example = 1, description = "The job's id.")),
    responses((status = 200, description = "The job.", body = Job))
)]
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
#[utoipa::path(
    get, path = "/api/v1/jobs/{id}/events", tag = "jobs",
    params(("id" = i64, Path, example = 1, description = "The job's id.")),
    responses((status = 200, description = "Server-sent events: `job` (a Job, on each change), then `done` (`{job, attempt}`, attempt null where the job grades none, as refine and build jobs) when it ends.", content_type = "text/event-stream", body = String))
)]
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
    Ok(follow(state, viewer, first))
}

/// `GET /api/v1/attempts/{id}/events`: [`job_events`] of the attempt's
/// newest verification, for a client that knows only the attempt it
/// submitted (`failpass submit attempt --wait`).
#[utoipa::path(
    get, path = "/api/v1/attempts/{id}/events", tag = "attempts",
    params(("id" = i64, Path, example = 1, description = "The attempt's id.")),
    responses((status = 200, description = "Server-sent events of the attempt's newest verification job, as `GET /api/v1/jobs/{id}/events` gives them: `job` on each change, then `done` (`{job, attempt}`) when it ends.", content_type = "text/event-stream", body = String),
              (status = 404, description = "No such attempt, or it was never queued for verification.", body = failpass_shared::error::ApiErrorBody))
)]
pub async fn attempt_events(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let scope = viewer.scope();
    if state.storage.get_attempt(id, &scope).await?.is_none() {
        return Err(ApiError::NotFound(format!("attempt {id} not found")));
    }
    let first = state.storage.verification_job(id, &scope).await?.ok_or_else(|| {
        ApiError::NotFound(format!(
            "attempt {id} has no verification: submit it with `verify: true`, or queue one with POST /api/v1/reruns"
        ))
    })?;
    Ok(follow(state, viewer, first))
}

/// The server-sent events of `first`, polled from storage until it ends.
fn follow(state: AppState, viewer: Viewer, first: Job) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let id = first.id;
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
            if ended {
                // The final event carries the job and the attempt it graded,
                // if it names one (a refine or build job does not).
                let attempt = match job.payload.attempt_id {
                    Some(a) => state.storage.get_attempt(a, &scope).await.ok().flatten(),
                    None => None,
                };
                let both = serde_json::json!({ "job": job, "attempt": attempt });
                event = Event::default().event("done").data(both.to_string());
            }
            Some((Ok(event), (None, Some(text), ended)))
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
