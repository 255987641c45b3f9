//! `GET /api/v1/oracles`: oracle coverage, sources, authoring time, failure causes.

use axum::extract::State;

use super::AppState;
use crate::auth::Viewer;
use crate::error::{ApiJson, ApiResult, QueryPairs};

/// `GET /api/v1/oracles?project=owner/name`: oracle coverage, sources, authoring time, failure causes.
#[utoipa::path(
    get, path = "/api/v1/oracles", tag = "figures",
    params(("project" = Option<String>, Query, example = "pytorch/pytorch", description = "Only this project, `owner/name`; every project you may read when absent.")),
    responses((status = 200, description = "Oracle coverage, sources, authoring time, failure causes.", body = failpass_shared::api::oracles::OracleSummary))
)]
pub async fn oracles(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<failpass_shared::api::oracles::OracleSummary>> {
    Ok(ApiJson(crate::summaries::oracle_summary(state.storage.as_ref(), &viewer.scope(), query.iter()).await?))
}
