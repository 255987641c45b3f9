//! `GET /api/v1/facets`: the agents and models the dashboard's filters offer.

use axum::extract::State;
use failpass_shared::api::figures::Facets;

use super::AppState;
use crate::auth::Viewer;
use crate::error::{ApiJson, ApiResult};

/// `GET /api/v1/facets`: the agents and models the filters can pick.
#[utoipa::path(
    get, path = "/api/v1/facets", tag = "figures",
    responses((status = 200, description = "The values each filter can take.", body = Facets))
)]
#[tracing::instrument(skip_all)]
pub async fn get_facets(State(state): State<AppState>, viewer: Viewer) -> ApiResult<ApiJson<Facets>> {
    Ok(ApiJson(state.storage.facets(&viewer.scope()).await?))
}
