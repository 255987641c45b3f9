//! `/api/v1/environments`: the recipes a project's candidates run in.

use axum::extract::State;
use axum::http::StatusCode;
use failpass_shared::api::jobs::{CreateEnvironmentRequest, Environment, EnvironmentBuild};
use failpass_shared::model::EnvironmentRole;

use super::AppState;
use crate::auth::{Action, Viewer};
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult, QueryPairs};

/// `GET /api/v1/environments?project=owner/name`.
#[utoipa::path(
    get, path = "/api/v1/environments", tag = "environments",
    params(("project" = String, Query, example = "pytorch/pytorch", description = "The project, `owner/name`.")),
    responses((status = 200, description = "The project's environments (recipes).", body = Vec<Environment>))
)]
pub async fn list_environments(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<Vec<Environment>>> {
    let project = crate::summaries::project_param(query.iter())?
        .ok_or_else(|| ApiError::BadRequest("project: required (owner/name)".into()))?;
    crate::summaries::visible_project(state.storage.as_ref(), &viewer.scope(), &project).await?;
    viewer.require(Action::ReadEnvironments, &project)?;
    Ok(ApiJson(state.storage.list_environments(&project).await?))
}

/// `POST /api/v1/environments`: creates or replaces a project's environment by name.
#[utoipa::path(
    post, path = "/api/v1/environments", tag = "environments",
    request_body = CreateEnvironmentRequest,
    responses((status = 201, description = "Created.", body = Environment),
              (status = 200, description = "An environment of this name was replaced.", body = Environment),
              (status = 409, description = "The project already has a buggy (or fixed) environment of another name.", body = failpass_shared::error::ApiErrorBody))
)]
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

/// The environment `id` as `viewer` may see it: `NotFound` when it does not
/// exist or its project is out of the viewer's sight.
async fn visible_environment(state: &AppState, viewer: &Viewer, id: i64) -> ApiResult<Environment> {
    match state.storage.environment(id).await? {
        Some(e) if state.storage.get_project(&e.project, &viewer.scope()).await?.is_some() => Ok(e),
        _ => Err(ApiError::NotFound(format!("environment {id} not found"))),
    }
}

/// `POST /api/v1/environments/{id}/build` (body `{}`): builds the recipe on a
/// runner now (a job; one waiting per environment) and keeps its log.
#[utoipa::path(
    post, path = "/api/v1/environments/{id}/build", tag = "environments",
    params(("id" = i64, Path, example = 1, description = "The environment's id.")),
    responses((status = 202, description = "The build job (or the one already waiting).", body = failpass_shared::api::jobs::Job),
              (status = 404, description = "No such environment.", body = failpass_shared::error::ApiErrorBody))
)]
pub async fn build_environment(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<(StatusCode, ApiJson<failpass_shared::api::jobs::Job>)> {
    let env = visible_environment(&state, &viewer, id).await?;
    viewer.require(Action::ManageEnvironments, &env.project)?;
    let (job, _) = state.storage.enqueue(&crate::db::queue::NewJob::build(id), chrono::Utc::now()).await?;
    tracing::info!(project = %env.project, environment = %env.name, job = job.id, by = %viewer.name(), "environment build queued");
    Ok((StatusCode::ACCEPTED, ApiJson(job)))
}

/// `GET /api/v1/environments/{id}/build`: the newest build asked for, with its log.
#[utoipa::path(
    get, path = "/api/v1/environments/{id}/build", tag = "environments",
    params(("id" = i64, Path, example = 1, description = "The environment's id.")),
    responses((status = 200, description = "The newest build and its log.", body = EnvironmentBuild),
              (status = 404, description = "No such environment, or it was never built on request.", body = failpass_shared::error::ApiErrorBody))
)]
pub async fn latest_build(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<ApiJson<EnvironmentBuild>> {
    let env = visible_environment(&state, &viewer, id).await?;
    viewer.require(Action::ReadEnvironments, &env.project)?;
    let builds = state.storage.latest_builds(&env.project).await?;
    builds
        .into_iter()
        .find(|b| b.environment_id == id)
        .map(ApiJson)
        .ok_or_else(|| ApiError::NotFound(format!("environment {id} has no build yet; POST to build it")))
}
