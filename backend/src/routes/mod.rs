//! HTTP routes: the JSON API under `/api/v1`, `/healthz`, and the dashboard.

mod attempts;
mod charts;
mod figures;
mod health;
mod import;
mod jobs;
mod projects;
mod reports;

use std::sync::Arc;

use axum::extract::OriginalUri;
use axum::extract::DefaultBodyLimit;
use axum::routing::{any, get, post};
use axum::Router;
use failpass_shared::routing::RoutingConfig;

use crate::db::Storage;
use crate::error::ApiError;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub storage: Arc<dyn Storage>,
    pub routing: Arc<RoutingConfig>,
}

pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/projects", get(projects::list_projects).post(projects::create_project))
        .route("/projects/{*slug}", get(projects::get_project))
        .route("/reports", get(reports::list_reports).post(reports::create_report))
        .route("/reports/{id}", get(reports::get_report))
        .route("/attempts", get(attempts::list_attempts).post(attempts::create_attempt))
        .route("/attempts/{id}", get(attempts::get_attempt))
        .route("/attempts/{id}/review", post(attempts::review_attempt))
        .route("/figures", get(figures::get_figures))
        .route("/agents", get(figures::list_agents))
        .route("/distributions", get(figures::get_distributions))
        .route("/throughput", get(figures::get_throughput))
        .route("/facets", get(figures::get_facets))
        .route("/charts/{name}", get(charts::get_chart))
        .route("/reruns", post(jobs::rerun))
        .route("/refine", post(jobs::refine))
        .route("/signatures", get(jobs::signatures))
        .route("/oracles", get(jobs::oracles))
        .route("/jobs", get(jobs::queue))
        .route("/jobs/{id}", get(jobs::get_job))
        .route("/jobs/{id}/events", get(jobs::job_events))
        .route("/environments", get(jobs::list_environments).post(jobs::create_environment))
        // Imports stream their body, so no size limit applies.
        .route("/import", post(import::import).layer(DefaultBodyLimit::disable()))
        .fallback(api_not_found)
        .method_not_allowed_fallback(method_not_allowed);
    Router::new()
        .route("/healthz", get(health::healthz))
        .nest("/api/v1", api)
        .route("/api", any(api_not_found))
        .route("/api/", any(api_not_found))
        .route("/api/v1/", any(api_not_found))
        .route("/api/{*rest}", any(api_not_found))
        .fallback(site_or_405)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// The dashboard answers GET and HEAD; any other method outside the API is a
/// mistake a client should hear about, not a 200 HTML page.
async fn site_or_405(method: axum::http::Method, uri: OriginalUri) -> axum::response::Response {
    use axum::response::IntoResponse;
    if method == axum::http::Method::GET || method == axum::http::Method::HEAD {
        crate::assets::serve_site(uri.0).await
    } else {
        method_not_allowed(method, uri).await.into_response()
    }
}

// `OriginalUri`: inside `nest` the plain `Uri` has lost its `/api/v1` prefix.
async fn api_not_found(OriginalUri(uri): OriginalUri) -> ApiError {
    ApiError::NotFound(format!("no API route `{}`", uri.path()))
}

async fn method_not_allowed(method: axum::http::Method, OriginalUri(uri): OriginalUri) -> ApiError {
    ApiError::MethodNotAllowed(format!("`{method}` is not allowed on `{}`", uri.path()))
}
