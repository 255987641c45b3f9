//! `GET /api/v1/signatures`: graded failures grouped by normalised signature.

use axum::extract::State;

use super::AppState;
use crate::auth::Viewer;
use crate::error::{ApiJson, ApiResult, QueryPairs};

/// `GET /api/v1/signatures?project=owner/name`: failures grouped by normalised signature.
pub async fn signatures(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<Vec<failpass_shared::api::jobs::SignatureGroup>>> {
    let project = crate::summaries::project_param(query.iter())?;
    Ok(ApiJson(state.storage.signature_groups(project.as_deref(), &viewer.scope()).await?))
}
