use axum::extract::State;
use axum::http::StatusCode;
use failpass_shared::api::attempts::{Attempt, AttemptDetail, AttemptListQuery, CreateAttemptRequest};
use failpass_shared::api::Page;

use super::AppState;
use crate::auth::Viewer;
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

#[tracing::instrument(skip_all, fields(report_id = req.report_id, agent = %req.agent))]
pub async fn create_attempt(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(req): ApiJson<CreateAttemptRequest>,
) -> ApiResult<(StatusCode, ApiJson<Attempt>)> {
    viewer.require_write()?;
    req.validate()?;
    // A report outside the viewer's scope is as absent as a missing one.
    if state.storage.get_report(req.report_id, &viewer.scope()).await?.is_none() {
        return Err(ApiError::BadRequest(format!("report_id: report {} does not exist", req.report_id)));
    }
    Ok((StatusCode::CREATED, ApiJson(state.storage.create_attempt(&req).await?)))
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
