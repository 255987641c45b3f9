use axum::extract::State;
use axum::http::StatusCode;
use failpass_shared::api::Page;
use failpass_shared::api::attempts::{Attempt, AttemptDetail, AttemptListQuery, CreateAttemptRequest};

use super::AppState;
use crate::auth::{Action, Principal, Role, Viewer};
use crate::db::StorageError;
use crate::db::attempts::describe_report_ref;
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult, QueryPairs};
use failpass_shared::api::import::Outcome;
use failpass_shared::model::VerdictSource;

#[utoipa::path(
    get, path = "/api/v1/attempts", tag = "attempts",
    params(AttemptListQuery),
    responses((status = 200, description = "One page of attempts, newest first.", body = Page<Attempt>))
)]
#[tracing::instrument(skip_all)]
pub async fn list_attempts(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<Page<Attempt>>> {
    let query = AttemptListQuery::from_pairs(query.iter())?;
    crate::summaries::known_project(state.storage.as_ref(), &viewer.scope(), query.project.as_deref()).await?;
    Ok(ApiJson(state.storage.list_attempts(&query, &viewer.scope()).await?))
}

#[utoipa::path(
    post, path = "/api/v1/attempts", tag = "attempts",
    request_body = CreateAttemptRequest,
    responses((status = 201, description = "Stored (and queued for grading when `verify` is true).", body = Attempt),
              (status = 409, description = "An attempt with this key is already stored.", body = failpass_shared::error::ApiErrorBody))
)]
#[tracing::instrument(skip_all, fields(agent = %req.agent))]
pub async fn create_attempt(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(mut req): ApiJson<CreateAttemptRequest>,
) -> ApiResult<(StatusCode, ApiJson<Attempt>)> {
    req.validate()?;
    let scope = viewer.scope();
    // A report outside the viewer's scope is as absent as a missing one.
    let (field, project) = match (&req.report_id, &req.report) {
        (Some(id), _) => ("report_id", state.storage.report_project(*id, &scope).await?),
        (None, Some(k)) => ("report", state.storage.get_project(&k.project, &scope).await?.map(|p| p.slug)),
        (None, None) => ("report_id", None),
    };
    let missing = |what: String| ApiError::BadRequest(format!("{field}: {what} does not exist"));
    let Some(project) = project else {
        return Err(missing(describe_report_ref(&req)));
    };
    viewer.require(Action::SubmitAttempt, &project)?;
    if let Principal::Token { scope, .. } = viewer.principal {
        // A token's word is a claim until something grades it: it may not
        // grade itself deterministically, nor speak for a human. (CI results
        // arrive as runs: JUnit uploads.)
        if !matches!(req.verdict_source, VerdictSource::Llm) {
            return Err(ApiError::BadRequest(format!(
                "verdict_source: {} records `llm` verdicts only (this one says `{}`); send `verify: true` to have failpass grade the attempt",
                Role::of_token(scope).map_or("a token", |r| r.with_article()),
                req.verdict_source
            )));
        }
        if req.review.is_some() || req.reviewer.is_some() || req.review_comment.is_some() {
            return Err(ApiError::BadRequest(
                "review: reviews are a maintainer's, made on the report page (POST /api/v1/attempts/{id}/review)"
                    .into(),
            ));
        }
    }
    // A review recorded with the attempt is the caller's own: only who may
    // review, and under their name whatever `reviewer` says.
    if req.review.is_some() || req.reviewer.is_some() || req.review_comment.is_some() {
        viewer.require(Action::Review, &project)?;
        if req.review.is_some() {
            req.reviewer = Some(viewer.name());
        }
    }
    match state.storage.create_attempt(&req).await {
        Ok((a, Outcome::Created)) => Ok((StatusCode::CREATED, ApiJson(a))),
        // A retry of a stored attempt: the same answer, nothing new created.
        Ok((a, _)) => Ok((StatusCode::OK, ApiJson(a))),
        Err(StorageError::NotFound(what)) => Err(missing(what)),
        Err(e) => Err(e.into()),
    }
}

#[utoipa::path(
    get, path = "/api/v1/attempts/{id}", tag = "attempts",
    params(("id" = i64, Path, example = 1, description = "The attempt's id.")),
    responses((status = 200, description = "The attempt with its runs.", body = AttemptDetail))
)]
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
#[utoipa::path(
    post, path = "/api/v1/attempts/{id}/review", tag = "attempts",
    params(("id" = i64, Path, example = 1, description = "The attempt's id.")),
    request_body = failpass_shared::api::attempts::ReviewRequest,
    responses((status = 200, description = "Reviewed.", body = Attempt))
)]
#[tracing::instrument(skip_all, fields(attempt_id = id))]
pub async fn review_attempt(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
    ApiJson(req): ApiJson<failpass_shared::api::attempts::ReviewRequest>,
) -> ApiResult<ApiJson<Attempt>> {
    req.validate()?;
    let scope = viewer.scope();
    let project = state
        .storage
        .attempt_project(id, &scope)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("attempt {id} not found")))?;
    viewer.require(Action::Review, &project)?;
    match state.storage.review_attempt(id, &req, &viewer.name(), &scope).await {
        Ok(a) => Ok(ApiJson(a)),
        Err(StorageError::NotFound(what)) => Err(ApiError::NotFound(format!("{what} not found"))),
        Err(e) => Err(e.into()),
    }
}
