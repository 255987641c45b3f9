use axum::extract::State;
use axum::http::StatusCode;
use failpass_shared::api::attempts::{Attempt, AttemptDetail, AttemptListQuery, CreateAttemptRequest};
use failpass_shared::api::Page;

use super::AppState;
use crate::auth::Viewer;
use crate::db::sql_describe_report_ref as describe_report_ref;
use crate::db::StorageError;
use failpass_shared::api::import::Outcome;
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult, QueryPairs};

#[tracing::instrument(skip_all)]
pub async fn list_attempts(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<Page<Attempt>>> {
    let query = AttemptListQuery::from_pairs(query.iter())?;
    Ok(ApiJson(state.storage.list_attempts(&query, &viewer.scope()).await?))
}

#[tracing::instrument(skip_all, fields(agent = %req.agent))]
pub async fn create_attempt(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(req): ApiJson<CreateAttemptRequest>,
) -> ApiResult<(StatusCode, ApiJson<Attempt>)> {
    viewer.require_write()?;
    req.validate()?;
    let scope = viewer.scope();
    // A report outside the viewer's scope is as absent as a missing one.
    let (field, visible) = match (&req.report_id, &req.report) {
        (Some(id), _) => ("report_id", state.storage.get_report(*id, &scope).await?.is_some()),
        (None, Some(k)) => ("report", state.storage.get_project(&k.project, &scope).await?.is_some()),
        (None, None) => ("report_id", false),
    };
    let missing = |what: String| ApiError::BadRequest(format!("{field}: {what} does not exist"));
    if !visible {
        return Err(missing(describe_report_ref(&req)));
    }
    match state.storage.create_attempt(&req).await {
        Ok((a, Outcome::Created)) => Ok((StatusCode::CREATED, ApiJson(a))),
        // A retry of a stored attempt: the same answer, nothing new created.
        Ok((a, _)) => Ok((StatusCode::OK, ApiJson(a))),
        Err(StorageError::NotFound(what)) => Err(missing(what)),
        Err(e) => Err(e.into()),
    }
}

#[tracing::instrument(skip_all, fields(attempt_id = id))]
pub async fn get_attempt(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<ApiJson<AttemptDetail>> {
    state
        .storage
        .get_attempt(id, &viewer.scope())
        .await?
        .map(ApiJson)
        .ok_or_else(|| ApiError::NotFound(format!("attempt {id} not found")))
}

/// `POST /api/v1/attempts/{id}/review`: accept or reject an attempt.
#[tracing::instrument(skip_all, fields(attempt_id = id))]
pub async fn review_attempt(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
    ApiJson(req): ApiJson<failpass_shared::api::attempts::ReviewRequest>,
) -> ApiResult<ApiJson<Attempt>> {
    viewer.require_write()?;
    req.validate()?;
    match state.storage.review_attempt(id, &req, &viewer.scope()).await {
        Ok(a) => Ok(ApiJson(a)),
        Err(StorageError::NotFound(what)) => Err(ApiError::NotFound(format!("{what} not found"))),
        Err(e) => Err(e.into()),
    }
}
