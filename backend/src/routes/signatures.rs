//! `GET /api/v1/signatures`: graded failures grouped by normalised signature.

use axum::extract::State;

use super::AppState;
use crate::auth::Viewer;
use crate::error::{ApiJson, ApiResult, QueryPairs};

/// `GET /api/v1/signatures?project=owner/name`: failures grouped by normalised signature.
#[utoipa::path(
    get, path = "/api/v1/signatures", tag = "figures",
    params(("project" = Option<String>, Query, example = "pytorch/pytorch", description = "Only this project, `owner/name`; every project you may read when absent.")),
    responses((status = 200, description = "Graded failures grouped by normalised signature.", body = Vec<failpass_shared::api::jobs::SignatureGroup>))
)]
pub async fn signatures(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<Vec<failpass_shared::api::jobs::SignatureGroup>>> {
    let project = crate::summaries::project_param(query.iter())?;
    Ok(ApiJson(state.storage.signature_groups(project.as_deref(), &viewer.scope()).await?))
}
