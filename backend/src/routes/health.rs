use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;

use super::AppState;
use crate::db::Backend;
use crate::error::{ApiError, ApiResult};

/// A health answer is reused this long: the check writes, and `/healthz`
/// is open to anyone, so a flood of probes must not queue behind SQLite's
/// one writer.
const FRESH: Duration = Duration::from_secs(1);

/// The last check of one server: when, and the unhealthy cause if it failed.
pub type LastCheck = std::sync::Arc<Mutex<Option<(Instant, Option<String>)>>>;

/// `/healthz`'s answer when the database is healthy.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Health {
    /// Always `ok` (an unhealthy server answers 503 with the error shape).
    #[schema(example = "ok")]
    status: &'static str,
    /// `sqlite` or `postgres`.
    database: &'static str,
    /// failpass's version.
    version: &'static str,
}

/// `GET /healthz`: 200 when the database answers and takes a write, 503
/// naming why otherwise (full disk, read-only, not answering).
#[utoipa::path(
    get, path = "/healthz", tag = "service",
    responses((status = 200, description = "The database answers and takes a write.", body = Health),
              (status = 503, description = "The database is unhealthy; the message names why.", body = failpass_shared::error::ApiErrorBody))
)]
pub async fn healthz(State(state): State<AppState>) -> ApiResult<Json<Health>> {
    let database = match state.storage.backend() {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    let cached = state.health.lock().unwrap_or_else(|p| p.into_inner()).clone().filter(|(at, _)| at.elapsed() < FRESH);
    let outcome = match cached {
        Some((_, outcome)) => outcome,
        None => {
            let outcome = state.storage.ping().await.err().map(|e| {
                tracing::warn!(error.cause_chain = ?e, "health check failed");
                let cause = e.unavailable().map(str::to_owned).unwrap_or_else(|| format!("it fails: {e}"));
                format!("{database} is unhealthy: {cause}")
            });
            *state.health.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), outcome.clone()));
            outcome
        }
    };
    match outcome {
        Some(unhealthy) => Err(ApiError::Unavailable(unhealthy)),
        None => Ok(Json(Health { status: "ok", database, version: env!("CARGO_PKG_VERSION") })),
    }
}
