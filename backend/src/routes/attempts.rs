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
    review_as(&state, &viewer, id, &req).await.map(ApiJson)
}

/// `viewer`'s review of attempt `id`, the API's and the review inbox's.
pub async fn review_as(
    state: &AppState,
    viewer: &Viewer,
    id: i64,
    req: &failpass_shared::api::attempts::ReviewRequest,
) -> ApiResult<Attempt> {
    req.validate()?;
    let scope = viewer.scope();
    let project = state
        .storage
        .attempt_project(id, &scope)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("attempt {id} not found")))?;
    viewer.require(Action::Review, &project)?;
    match state.storage.review_attempt(id, req, &viewer.origin(), &scope).await {
        Ok(a) => Ok(a),
        Err(StorageError::NotFound(what)) => Err(ApiError::NotFound(format!("{what} not found"))),
        Err(e) => Err(e.into()),
    }
}

/// Bytes a trajectory upload may have.
pub const TRAJECTORY_LIMIT: usize = 64 << 20;

/// What reading a trajectory found (`PUT /api/v1/attempts/{id}/trajectory`).
#[derive(Debug, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct TrajectorySummary {
    pub attempt_id: i64,
    pub format: failpass_shared::trajectory::TrajectoryFormat,
    pub steps: usize,
    /// The upload's size, and what is stored (the read steps, compressed).
    pub raw_bytes: usize,
    pub stored_bytes: usize,
    /// Steps whose input or output was cut to its cap.
    pub capped: u32,
    pub loops: Vec<failpass_shared::trajectory::Loop>,
    pub candidate_step: Option<u32>,
    /// `stuck_in_loop` when a loop was found: a proposal for a maintainer.
    pub proposed_cause: Option<failpass_shared::model::FailureCause>,
}

/// `PUT /api/v1/attempts/{id}/trajectory`: the agent's trajectory file, read
/// into steps and stored (replacing one sent before).
#[utoipa::path(
    put, path = "/api/v1/attempts/{id}/trajectory", tag = "attempts",
    params(("id" = i64, Path, example = 1, description = "The attempt's id."),
           ("format" = Option<failpass_shared::trajectory::TrajectoryFormat>, Query, description = "`swe_agent`, `open_hands` or `steps`; left out, the body's shape says.")),
    request_body(content = String, content_type = "application/json", description = "The trajectory as the agent wrote it: a SWE-agent `.traj`, an OpenHands event list, or JSON Lines of steps (`application/x-ndjson`). At most 64 MiB."),
    responses((status = 200, description = "Read and stored: its steps, loops and the candidate's step.", body = TrajectorySummary),
              (status = 400, description = "Not a trajectory failpass reads: the reason names the line or field.", body = failpass_shared::error::ApiErrorBody),
              (status = 409, description = "A token sent a trajectory for an attempt that has one: replacing it is a maintainer's.", body = failpass_shared::error::ApiErrorBody),
              (status = 413, description = "Larger than 64 MiB.", body = failpass_shared::error::ApiErrorBody))
)]
#[tracing::instrument(skip_all, fields(attempt_id = id))]
pub async fn put_trajectory(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
    query: QueryPairs,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> ApiResult<ApiJson<TrajectorySummary>> {
    let body = body.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::PayloadTooLarge(format!("body: a trajectory is at most {} MiB", TRAJECTORY_LIMIT >> 20))
        }
        _ => ApiError::BadRequest(format!("body: {e}")),
    })?;
    use failpass_shared::trajectory::TrajectoryFormat;
    let mut format = None;
    for (k, v) in query.iter() {
        match k {
            "format" => {
                format = Some(TrajectoryFormat::named(v).ok_or_else(|| {
                    ApiError::BadRequest(format!(
                        "format: unknown trajectory format `{v}`, expected one of: swe_agent, open_hands, steps"
                    ))
                })?)
            }
            other => {
                return Err(ApiError::BadRequest(format!("{other}: unknown query parameter `{other}`; known: format")));
            }
        }
    }
    let scope = viewer.scope();
    let project = state
        .storage
        .attempt_project(id, &scope)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("attempt {id} not found")))?;
    viewer.require(Action::SubmitAttempt, &project)?;
    // A project's token may add an attempt's trajectory; replacing one is a
    // person's (attempts do not record which agent's token sent them).
    let project_token =
        matches!(viewer.principal, Principal::Token { scope, .. } if scope != failpass_shared::model::TokenScope::User);
    if project_token && state.storage.get_trajectory(id, &scope).await?.is_some() {
        return Err(ApiError::Conflict(format!(
            "attempt {id} has a trajectory already; a maintainer may replace it, a token may not"
        )));
    }
    let candidate = state.storage.get_attempt(id, &scope).await?.and_then(|a| a.attempt.candidate);
    let raw_bytes = body.len();
    // Reading and compressing take a core for a while on a large upload:
    // off the threads that answer requests.
    let read = tokio::task::spawn_blocking(move || {
        let text = std::str::from_utf8(&body)
            .map_err(|_| ApiError::BadRequest("body: the trajectory is not UTF-8 text".into()))?;
        let t = failpass_shared::trajectory::parse(text, format, candidate.as_deref())
            .map_err(|e| ApiError::BadRequest(format!("body: {e}")))?;
        let json = serde_json::to_vec(&t).map_err(|e| ApiError::Internal(anyhow::anyhow!("the trajectory: {e}")))?;
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let compressed = gz
            .write_all(&json)
            .and_then(|_| gz.finish())
            .map_err(|e| ApiError::Internal(anyhow::anyhow!("compressing: {e}")))?;
        Ok::<_, ApiError>((t, compressed))
    })
    .await
    .map_err(|e| ApiError::Internal(anyhow::anyhow!("reading the trajectory: {e}")))?;
    let (t, compressed) = read?;
    state.storage.put_trajectory(id, t.format.as_str(), t.steps.len() as i64, raw_bytes as i64, &compressed).await?;
    Ok(ApiJson(TrajectorySummary {
        attempt_id: id,
        format: t.format,
        steps: t.steps.len(),
        raw_bytes,
        stored_bytes: compressed.len(),
        capped: t.capped,
        proposed_cause: t.proposed_cause(),
        candidate_step: t.candidate_step,
        loops: t.loops,
    }))
}

/// `GET /api/v1/attempts/{id}/trajectory`: the stored trajectory, step by step.
#[utoipa::path(
    get, path = "/api/v1/attempts/{id}/trajectory", tag = "attempts",
    params(("id" = i64, Path, example = 1, description = "The attempt's id.")),
    responses((status = 200, description = "The steps as read, with loops and the candidate's step.", body = failpass_shared::trajectory::Trajectory),
              (status = 404, description = "No such attempt, or it has no trajectory.", body = failpass_shared::error::ApiErrorBody))
)]
#[tracing::instrument(skip_all, fields(attempt_id = id))]
pub async fn get_trajectory(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<axum::response::Response> {
    use axum::response::IntoResponse;
    let body = state
        .storage
        .get_trajectory(id, &viewer.scope())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("attempt {id} has no trajectory (or does not exist)")))?;
    let mut json = Vec::new();
    {
        use std::io::Read;
        flate2::read::GzDecoder::new(body.as_slice())
            .read_to_end(&mut json)
            .map_err(|e| ApiError::Internal(anyhow::anyhow!("attempt {id}'s stored trajectory: {e}")))?;
    }
    Ok(([(axum::http::header::CONTENT_TYPE, "application/json")], json).into_response())
}
