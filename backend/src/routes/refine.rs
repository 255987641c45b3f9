//! `POST /api/v1/refine`: queue the refine loop for a report.

use axum::extract::State;
use axum::http::StatusCode;
use failpass_shared::api::jobs::{Job, PRIORITY_MANUAL};
use failpass_shared::grading::{self, Unverifiable};

use super::AppState;
use crate::auth::{Action, Viewer};
use crate::db::queue::NewJob;
use crate::error::{ApiError, ApiJson, ApiResult};

/// `POST /api/v1/refine`: queues the refine loop for an `agent_first` report.
#[utoipa::path(
    post, path = "/api/v1/refine", tag = "jobs",
    request_body = failpass_shared::api::jobs::RefineRequest,
    responses((status = 202, description = "The refine job, queued.", body = Job))
)]
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
    // As for verify: nothing to grade by or in, no job (and no `error` attempt left behind).
    let envs = state.storage.list_environments(&report.summary.project).await?;
    let roles: Vec<_> = envs.iter().map(|e| e.role).collect();
    let oracle = report.oracle.as_ref().map(|o| o.kind_and_command());
    // The loop brings its own candidates.
    match grading::verifiable(oracle, true, &roles) {
        Ok(()) => {}
        Err(Unverifiable::NoEnvironments) => {
            return Err(ApiError::BadRequest(format!(
                "report_id: project {0} has no buggy and fixed environment to grade candidates in; an admin adds them first on /settings/projects/{0}",
                report.summary.project
            )));
        }
        Err(_) => {
            return Err(ApiError::BadRequest(format!(
                "report_id: report {} has no deterministic oracle to grade candidates by",
                req.report_id
            )));
        }
    }
    let (job, _) =
        state.storage.enqueue(&NewJob::refine(req.report_id, PRIORITY_MANUAL, true), chrono::Utc::now()).await?;
    Ok((StatusCode::ACCEPTED, ApiJson(job)))
}
