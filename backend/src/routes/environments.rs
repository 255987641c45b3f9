//! `/api/v1/environments`: the recipes a project's candidates run in.

use axum::extract::State;
use axum::http::StatusCode;
use failpass_shared::api::jobs::{CreateEnvironmentRequest, Environment};
use failpass_shared::model::EnvironmentRole;

use super::AppState;
use crate::auth::{Action, Viewer};
use crate::error::{ApiError, ApiJson, ApiResult, QueryPairs};

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
