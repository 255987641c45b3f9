use axum::extract::State;
use failpass_shared::api::figures::{FiguresQuery, FiguresResponse};
use failpass_shared::figures::figure_rows;

use super::AppState;
use crate::auth::Viewer;
use crate::error::{ApiJson, ApiResult, QueryPairs};

/// `GET /api/v1/figures`: one row per group, every figure as DOMAIN.md defines it.
#[tracing::instrument(skip_all)]
pub async fn get_figures(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<FiguresResponse>> {
    let query = FiguresQuery::from_pairs(query.iter())?;
    let contributions = state.storage.figure_contributions(&query, &viewer.scope()).await?;
    Ok(ApiJson(FiguresResponse { group_by: query.group_by, goal: query.goal, rows: figure_rows(contributions) }))
}
