//! HTTP routes: the JSON API under `/api/v1`, `/healthz`, the sign-in and
//! token pages, and the dashboard.
//!
//! Every route is registered through [`Routes::add`], which looks it up in
//! `auth::access::ROUTES` (and panics at start-up without an entry) and puts
//! the route's access check in front of its handler: who the caller is, the
//! `--require-sign-in` switch, whether the caller may ever take the route's
//! action, and the body's declared content type. Handlers then check the
//! project at hand with `Viewer::require`.

pub(crate) mod agents;
pub(crate) mod attempts;
pub(crate) mod authoring;
pub(crate) mod charts;
pub(crate) mod environments;
pub(crate) mod export;
pub(crate) mod facets;
pub(crate) mod figures;
pub(crate) mod frame;
pub mod health;
pub(crate) mod hooks;
pub(crate) mod import;
pub(crate) mod inbox;
pub(crate) mod jobs;
pub(crate) mod members;
pub(crate) mod metrics;
pub(crate) mod oracles;
pub(crate) mod oracles_page;
pub mod pages;
pub(crate) mod projects;
pub(crate) mod reference;
pub(crate) mod refine;
pub(crate) mod releases;
pub(crate) mod releases_page;
pub(crate) mod reports;
pub(crate) mod reruns;
pub(crate) mod routing_health;
pub(crate) mod runner_envs;
pub(crate) mod runners_page;
pub(crate) mod setup;
pub(crate) mod signatures;
pub(crate) mod status;
pub(crate) mod views;
pub(crate) mod webhooks;
pub(crate) mod worklist;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::{OriginalUri, Request, State};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, any, get, post, put};
use failpass_shared::routing::RoutingConfig;

use crate::auth::Viewer;
use crate::auth::access::{Action, Body, RouteSpec};
use crate::db::Storage;
use crate::error::ApiError;
use crate::security::Security;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub storage: Arc<dyn Storage>,
    pub routing: Arc<RoutingConfig>,
    /// Each project's trained routing classifier, dropped on a correction.
    pub models: Arc<crate::triage::Models>,
    pub security: Arc<Security>,
    /// `/healthz`'s last answer, reused for a second.
    pub health: health::LastCheck,
    /// Public projects' computed statuses, reused for a minute.
    pub status: crate::status::StatusCache,
    /// The package index, for projects' releases and the versions reports name.
    pub index: crate::releases::index::PackageIndex,
    /// The built-in workers' environment cache, as the Runners page shows it.
    pub envs: crate::runner::env::EnvCache,
}

/// The router, and the routes it registered (for the authorization matrix test).
pub fn router(state: AppState) -> (Router, Vec<&'static RouteSpec>) {
    let r = Routes { router: Router::new(), state: state.clone(), registered: Vec::new() }
        .add("GET", "/healthz", get(health::healthz))
        .add("GET", "/signin", get(pages::signin_page))
        .add("POST", "/signin", post(pages::sign_in))
        .add("POST", "/signout", post(pages::sign_out))
        .add("GET", "/settings/tokens", get(pages::tokens_page))
        .add("POST", "/settings/tokens", post(pages::create_token))
        .add("POST", "/settings/tokens/{id}/revoke", post(pages::revoke_token))
        .add("GET", "/settings/hooks", get(hooks::hooks_page))
        .add("POST", "/settings/hooks", post(hooks::create_hook_form))
        .add("GET", "/settings/hooks/{id}", get(hooks::hook_log_page))
        .add("POST", "/settings/hooks/{id}/remove", post(hooks::remove_hook_form))
        .add("POST", "/settings/hooks/{id}/test", post(hooks::test_hook_form))
        .add("POST", "/settings/deliveries/{id}/redeliver", post(hooks::redeliver_form))
        .add("GET", "/settings/projects", get(setup::projects_page))
        .add("POST", "/settings/projects", post(setup::create_project))
        .add("GET", "/settings/projects/{owner}/{name}", get(setup::project_page))
        .add("POST", "/settings/projects/{owner}/{name}", post(setup::update_project))
        .add("POST", "/settings/projects/{owner}/{name}/environments", post(setup::save_environment))
        .add("POST", "/settings/projects/{owner}/{name}/environments/{id}/build", post(setup::build_environment))
        .add("POST", "/settings/projects/{owner}/{name}/members", post(members::add_member))
        .add("POST", "/settings/projects/{owner}/{name}/members/remove", post(members::remove_member))
        .add("GET", "/settings/users", get(members::users_page))
        .add("POST", "/settings/users", post(members::create_user))
        .add("GET", "/settings/views", get(views::views_page))
        .add("POST", "/settings/views", post(views::save_view))
        .add("POST", "/settings/views/{id}/remove", post(views::forget_view))
        .add("GET", "/inbox", get(inbox::inbox_page))
        .add("POST", "/inbox/{id}/review", post(inbox::review))
        .add("GET", "/settings/import", get(setup::import_page))
        // Uploads are spooled to a temporary file, so a large export fits.
        .add("POST", "/settings/import", post(setup::import_upload).layer(DefaultBodyLimit::max(setup::UPLOAD_LIMIT)))
        .add("GET", "/api/v1/session", get(pages::session))
        .add("GET", "/api/v1/openapi.json", get(crate::openapi::openapi_json))
        .add("GET", "/docs/api", get(crate::openapi::api_reference))
        .add("GET", "/api/v1/projects", get(projects::list_projects))
        .add("POST", "/api/v1/projects", post(projects::create_project))
        .add("GET", "/api/v1/projects/{*slug}", get(projects::get_project))
        .add("PATCH", "/api/v1/projects/{*slug}", axum::routing::patch(projects::update_project))
        .add("GET", "/api/v1/reports", get(reports::list_reports))
        .add("POST", "/api/v1/reports", post(reports::create_report))
        .add("GET", "/api/v1/reports/table", get(worklist::report_table))
        .add("GET", "/api/v1/reports/{id}", get(reports::get_report))
        .add("POST", "/api/v1/reports/{id}/route", post(reports::correct_route))
        .add("POST", "/api/v1/reports/{id}/route/confirm", post(reports::confirm_route))
        .add("GET", "/api/v1/routing/{owner}/{name}", get(routing_health::routing_health))
        .add("GET", "/routing/{owner}/{name}", get(routing_health::routing_page))
        .add("POST", "/api/v1/reports/{id}/status", post(reports::set_status))
        .add("POST", "/api/v1/reports/{id}/assign", post(reports::assign))
        .add("POST", "/api/v1/reports/{id}/comments", post(reports::comment))
        .add("POST", "/reports/{id}/lifecycle", post(reports::lifecycle_form))
        .add("GET", "/reports/{id}/oracle", get(authoring::oracle_page))
        .add("GET", "/reports/{id}/releases", get(releases_page::releases_page))
        .add("POST", "/reports/{id}/releases", post(releases_page::releases_form))
        .add("POST", "/reports/{id}/oracle", post(authoring::oracle_form))
        .add("POST", "/queue/bulk", post(worklist::bulk))
        .add("GET", "/api/v1/export/reports", get(export::reports))
        .add("GET", "/api/v1/export/attempts", get(export::attempts))
        .add("GET", "/api/v1/export/figures", get(export::figures))
        .add("GET", "/api/v1/export/oracles", get(export::oracles))
        .add("GET", "/api/v1/export/throughput", get(export::throughput))
        .add("POST", "/api/v1/webhooks/github", post(webhooks::github))
        .add("GET", "/api/v1/hooks", get(hooks::list_hooks))
        .add("POST", "/api/v1/hooks", post(hooks::create_hook))
        .add("DELETE", "/api/v1/hooks/{id}", axum::routing::delete(hooks::remove_hook))
        .add("GET", "/api/v1/hooks/{id}/deliveries", get(hooks::hook_deliveries))
        .add("POST", "/api/v1/deliveries/{id}/redeliver", post(hooks::redeliver))
        .add("GET", "/api/v1/attempts", get(attempts::list_attempts))
        .add("POST", "/api/v1/attempts", post(attempts::create_attempt))
        .add("GET", "/api/v1/attempts/{id}", get(attempts::get_attempt))
        .add("GET", "/api/v1/attempts/{id}/events", get(jobs::attempt_events))
        .add(
            "PUT",
            "/api/v1/attempts/{id}/trajectory",
            put(attempts::put_trajectory).layer(DefaultBodyLimit::max(attempts::TRAJECTORY_LIMIT)),
        )
        .add("GET", "/api/v1/attempts/{id}/trajectory", get(attempts::get_trajectory))
        .add("POST", "/api/v1/attempts/{id}/review", post(attempts::review_attempt))
        .add("GET", "/api/v1/figures", get(figures::get_figures))
        .add("GET", "/api/v1/agents", get(agents::list_agents))
        .add("GET", "/api/v1/distributions", get(figures::get_distributions))
        .add("GET", "/api/v1/throughput", get(figures::get_throughput))
        .add("GET", "/api/v1/glance", get(figures::get_glance))
        .add("GET", "/api/v1/ranks", get(figures::get_ranks))
        .add("GET", "/api/v1/facets", get(facets::get_facets))
        .add("GET", "/api/v1/charts/{name}", get(charts::get_chart))
        .add("POST", "/api/v1/reruns", post(reruns::rerun))
        .add("POST", "/api/v1/refine", post(refine::refine))
        .add("GET", "/api/v1/signatures", get(signatures::signatures))
        .add("GET", "/api/v1/oracles", get(oracles::oracles))
        .add("GET", "/api/v1/jobs", get(jobs::queue))
        .add("GET", "/api/v1/runners/environments", get(runner_envs::environments))
        .add("GET", "/runners/environments", get(runner_envs::environments_page))
        .add("GET", "/oracles", get(oracles_page::oracles_page))
        .add("GET", "/runners", get(runners_page::runners_page))
        .add("GET", "/api/v1/jobs/{id}", get(jobs::get_job))
        .add("GET", "/api/v1/jobs/{id}/events", get(jobs::job_events))
        .add("GET", "/api/v1/releases", get(releases::list_releases))
        .add("POST", "/api/v1/releases", post(releases::set_template))
        .add("GET", "/api/v1/reports/{id}/versions", get(releases::get_versions))
        .add("POST", "/api/v1/reports/{id}/versions", post(releases::set_versions))
        .add("POST", "/api/v1/reports/{id}/bisect", post(releases::bisect))
        .add("GET", "/api/v1/environments", get(environments::list_environments))
        .add("POST", "/api/v1/environments", post(environments::create_environment))
        .add("POST", "/api/v1/environments/{id}/build", post(environments::build_environment))
        .add("GET", "/api/v1/environments/{id}/build", get(environments::latest_build))
        .add("GET", "/metrics", get(metrics::metrics))
        .add("GET", "/api/v1/status/{owner}/{name}", get(status::status_json))
        .add("GET", "/status", get(status::status_index))
        .add("GET", "/status/{owner}/{name}", get(status::status_page))
        .add("GET", "/status/{owner}/{name}/trend.svg", get(status::status_trend))
        .add("GET", "/status/{owner}/{name}/trend.png", get(status::status_trend_png))
        .add("GET", "/badge/{owner}/{name}/{file}", get(status::badge))
        // Imports stream their body, so no size limit applies (lines are capped instead).
        .add("POST", "/api/v1/import", post(import::import).layer(DefaultBodyLimit::disable()));
    let router = r
        .router
        .route("/api", any(api_not_found))
        .route("/api/", any(api_not_found))
        .route("/api/v1", any(api_not_found))
        .route("/api/v1/", any(api_not_found))
        .route("/api/{*rest}", any(api_not_found))
        .fallback(site_or_405)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(state.clone(), frame::header_frame))
        .with_state(state);
    (router, r.registered)
}

/// Handlers take the caller as an argument; it is worked out once per request.
impl axum::extract::FromRequestParts<AppState> for Viewer {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Viewer::resolve(parts, state.storage.as_ref()).await
    }
}

struct Routes {
    router: Router<AppState>,
    state: AppState,
    registered: Vec<&'static RouteSpec>,
}

impl Routes {
    /// Registers `method path` behind its access check. Panics (at start-up,
    /// and in every test) when `auth::access::ROUTES` has no entry for it.
    fn add(mut self, method: &'static str, path: &'static str, handler: MethodRouter<AppState>) -> Self {
        let spec = crate::auth::access::spec(method, path).unwrap_or_else(|| {
            panic!("route {method} {path} has no entry in auth::access::ROUTES: say who may use it")
        });
        let guarded = handler.route_layer(from_fn_with_state((self.state.clone(), spec), access));
        self.router = self.router.route(path, guarded);
        self.registered.push(spec);
        self
    }
}

/// The route-level check in front of every handler.
async fn access(State((state, spec)): State<(AppState, &'static RouteSpec)>, req: Request, next: Next) -> Response {
    // Prometheus' door: the metrics token alone (its handler checks it).
    if spec.action == Action::Scrape {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let viewer = match Viewer::resolve(&mut parts, state.storage.as_ref()).await {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    let page = !spec.path.starts_with("/api/") && spec.path != "/healthz";
    let denied = if state.security.require_sign_in && viewer.is_anonymous() && spec.action != Action::Open {
        Some(ApiError::Unauthorized(
            "this failpass shows nothing without signing in; sign in, or send an API token".into(),
        ))
    } else {
        viewer.check_route(spec.action).err()
    };
    if let Some(e) = denied {
        // A page sends an anonymous visitor to sign in and come back, and
        // tells a signed-in one why not, as a page.
        if page && spec.method == "GET" {
            if viewer.is_anonymous() {
                return pages::to_sign_in(parts.uri.path()).into_response();
            }
            return pages::refused(&viewer, &e);
        }
        return e.into_response();
    }
    if spec.body != Body::None {
        let accepted = spec.body.content_types();
        let sent = crate::security::content_type(&parts.headers);
        if !sent.as_deref().is_some_and(|t| accepted.contains(&t)) {
            return ApiError::UnsupportedMediaType(format!(
                "send the body with `Content-Type: {}`{}",
                accepted.join("` or `"),
                match sent {
                    Some(t) => format!(", not `{t}`"),
                    None => String::new(),
                }
            ))
            .into_response();
        }
    }
    next.run(Request::from_parts(parts, body)).await
}

/// The dashboard answers GET and HEAD; any other method outside the API is a
/// mistake a client should hear about, not a 200 HTML page. With
/// `--require-sign-in`, an anonymous visitor's page is the sign-in page
/// (assets still load, so that page has its styles).
async fn site_or_405(
    State(state): State<AppState>,
    method: axum::http::Method,
    uri: OriginalUri,
    req: Request,
) -> Response {
    if method == axum::http::Method::GET || method == axum::http::Method::HEAD {
        if state.security.require_sign_in && !uri.path().rsplit('/').next().unwrap_or_default().contains('.') {
            let (mut parts, _) = req.into_parts();
            match Viewer::resolve(&mut parts, state.storage.as_ref()).await {
                Ok(v) if v.is_anonymous() => return pages::to_sign_in(uri.path()).into_response(),
                Ok(_) => {}
                Err(e) => return e.into_response(),
            }
        }
        crate::assets::serve_site(uri.0).await
    } else {
        method_not_allowed(method, uri).await.into_response()
    }
}

// `OriginalUri`: inside `nest` the plain `Uri` has lost its prefix.
async fn api_not_found(OriginalUri(uri): OriginalUri) -> ApiError {
    ApiError::NotFound(format!("no API route `{}`", uri.path()))
}

async fn method_not_allowed(method: axum::http::Method, OriginalUri(uri): OriginalUri) -> Response {
    let path = uri.path();
    // A visit to a form's address (a reload after a post, a bookmark) is
    // answered as a page that leads to the form's own page, never as JSON.
    if !path.starts_with("/api/") && (method == axum::http::Method::GET || method == axum::http::Method::HEAD) {
        let page = frame::form_page(path);
        let body = maud::html! {
            section.panel.narrow data-testid="form-address" {
                h1 { "This address takes a form" }
                p { "It is where a form on failpass's pages posts; visited, it has nothing to show. "
                    a href=(page) data-testid="form-page" { "Go to the form's page" } "." }
            }
        };
        return pages::page(
            axum::http::StatusCode::METHOD_NOT_ALLOWED,
            "A form's address",
            &crate::auth::Viewer::anonymous(),
            body,
        );
    }
    ApiError::MethodNotAllowed(format!("`{method}` is not allowed on `{path}`")).into_response()
}
