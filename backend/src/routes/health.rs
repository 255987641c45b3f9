use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::AppState;
use crate::db::Backend;
use crate::error::{ApiError, ApiResult};

/// `GET /healthz`: 200 when the database answers and takes a write, 503
/// naming why otherwise (full disk, read-only, not answering).
pub async fn healthz(State(state): State<AppState>) -> ApiResult<Json<Value>> {
    let database = match state.storage.backend() {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    state.storage.ping().await.map_err(|e| {
        tracing::warn!(error.cause_chain = ?e, "health check failed");
        let cause = e.unavailable().map(str::to_owned).unwrap_or_else(|| format!("it fails: {e}"));
        ApiError::Unavailable(format!("{database} is unhealthy: {cause}"))
    })?;
    Ok(Json(json!({ "status": "ok", "database": database, "version": env!("CARGO_PKG_VERSION") })))
}
