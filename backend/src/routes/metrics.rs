//! `GET /metrics`: Prometheus' text format (see `crate::metrics`).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::AppState;

#[utoipa::path(
    get, path = "/metrics", tag = "service",
    security((), ("metrics_token" = [])),
    responses((status = 200, description = "Prometheus' text format.", content_type = "text/plain", body = String),
              (status = 401, description = "A metrics token is set and was not sent.", content_type = "text/plain", body = String))
)]
pub async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(token) = &state.security.metrics_token {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        // Compared as digests, so the time taken says nothing about the token.
        if Sha256::digest(given.as_bytes()) != Sha256::digest(token.as_bytes()) {
            return (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer realm=\"metrics\"")],
                "/metrics needs the metrics token: Authorization: Bearer TOKEN (see --metrics-token)\n",
            )
                .into_response();
        }
    }
    let body = crate::metrics::render(&state.storage, &state.status).await;
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8"), (header::CACHE_CONTROL, "no-store")], body)
        .into_response()
}
