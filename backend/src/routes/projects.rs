use axum::extract::State;
use axum::http::StatusCode;
use failpass_shared::api::projects::{CreateProjectRequest, Project, UpdateProjectRequest};

use super::AppState;
use crate::auth::Viewer;
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult};

#[utoipa::path(
    get, path = "/api/v1/projects", tag = "projects",
    responses((status = 200, description = "The projects you may read.", body = Vec<Project>))
)]
#[tracing::instrument(skip_all)]
pub async fn list_projects(State(state): State<AppState>, viewer: Viewer) -> ApiResult<ApiJson<Vec<Project>>> {
    Ok(ApiJson(state.storage.list_projects(&viewer.scope()).await?))
}

#[utoipa::path(
    post, path = "/api/v1/projects", tag = "projects",
    request_body = CreateProjectRequest,
    responses((status = 201, description = "Created.", body = Project))
)]
#[tracing::instrument(skip_all, fields(slug = %req.slug))]
pub async fn create_project(
    State(state): State<AppState>,
    ApiJson(mut req): ApiJson<CreateProjectRequest>,
) -> ApiResult<(StatusCode, ApiJson<Project>)> {
    // Admins only (the route's action); the visibility defaults by the server's switch.
    req.validate()?;
    req.public.get_or_insert(!state.security.private_by_default);
    Ok((StatusCode::CREATED, ApiJson(state.storage.create_project(&req).await?)))
}

#[utoipa::path(
    get, path = "/api/v1/projects/{slug}", tag = "projects",
    params(("slug" = String, Path, example = "pytorch/pytorch", description = "`owner/name` (the slash may be sent as is).")),
    responses((status = 200, description = "The project.", body = Project))
)]
#[tracing::instrument(skip_all, fields(slug = %slug))]
pub async fn get_project(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(slug): ApiPath<String>,
) -> ApiResult<ApiJson<Project>> {
    let slug = slug.trim_start_matches('/');
    state
        .storage
        .get_project(slug, &viewer.scope())
        .await?
        .map(ApiJson)
        .ok_or_else(|| ApiError::NotFound(format!("project `{slug}` not found")))
}

/// `PATCH /api/v1/projects/{owner}/{name}`: name, description, visibility,
/// upstream address (admins only, the route's action).
#[utoipa::path(
    patch, path = "/api/v1/projects/{slug}", tag = "projects",
    params(("slug" = String, Path, example = "pytorch/pytorch", description = "`owner/name` (the slash may be sent as is).")),
    request_body = UpdateProjectRequest,
    responses((status = 200, description = "The project as changed.", body = Project),
              (status = 404, description = "No such project.", body = failpass_shared::error::ApiErrorBody))
)]
#[tracing::instrument(skip_all, fields(slug = %slug))]
pub async fn update_project(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(slug): ApiPath<String>,
    ApiJson(req): ApiJson<UpdateProjectRequest>,
) -> ApiResult<ApiJson<Project>> {
    let slug = slug.trim_start_matches('/');
    req.validate()?;
    if state.storage.get_project(slug, &viewer.scope()).await?.is_none() {
        return Err(ApiError::NotFound(format!("project `{slug}` not found")));
    }
    viewer.require(crate::auth::Action::ManageProjects, slug)?;
    let project = state.storage.update_project(slug, &req).await?;
    // A project made private leaves the status pages' list now (its own page checks on every call).
    state.status.forget_index();
    tracing::info!(project = %slug, public = project.public, by = %viewer.name(), "project changed");
    Ok(ApiJson(project))
}
