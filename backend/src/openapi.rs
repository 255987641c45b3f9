//! The OpenAPI 3.1 document, `/api/v1/openapi.json`.
//!
//! Each handler describes itself with `#[utoipa::path]` (its parameters, body
//! and success responses); the schemas are derived from the API types in
//! `failpass-shared` (feature `openapi`). What every route shares is added
//! here from the access table, `auth::access::ROUTES`, so it is said once:
//! the summary, who may call it, how to authenticate, and the error answers
//! in their one shape, `{code, message}`.

use std::sync::OnceLock;

use utoipa::OpenApi;
use utoipa::openapi::path::{HttpMethod, Operation};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{Content, Ref, RefOr, Response, ResponseBuilder};

use crate::auth::access::{Action, Body, ROUTES, RouteSpec};
use crate::routes::{
    agents, attempts, authoring, charts, environments, export, facets, figures, health, hooks, import, inbox, jobs,
    members, metrics, oracles, oracles_page, pages, projects, refine, releases, releases_page, reports, reruns,
    routing_health, runner_envs, runners_page, setup, signatures, status, views, webhooks, worklist,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "failpass",
        description = "Triage and verification of agent-generated bug reproductions. Every error answers \
                       `{code, message}`: `code` is stable, `message` names the offending field. Private projects \
                       answer exactly as missing ones to anyone who may not read them.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(
        health::healthz,
        pages::signin_page, pages::sign_in, pages::sign_out, pages::tokens_page, pages::create_token,
        pages::revoke_token, inbox::inbox_page, inbox::review, members::add_member, members::remove_member, members::users_page, members::create_user, views::views_page, views::save_view, views::forget_view, setup::projects_page, setup::create_project, setup::project_page, setup::update_project,
        setup::save_environment, setup::build_environment, setup::import_page, setup::import_upload, pages::session, api_reference, openapi_json,
        projects::list_projects, projects::create_project, projects::get_project, projects::update_project,
        reports::list_reports, reports::create_report, reports::get_report, reports::correct_route, reports::set_status, reports::assign, reports::comment, reports::lifecycle_form, authoring::oracle_page, authoring::oracle_form, releases_page::releases_page, releases_page::releases_form, worklist::report_table, worklist::bulk, webhooks::github, export::reports, export::attempts, export::figures, export::oracles, export::throughput,
        attempts::list_attempts, attempts::create_attempt, attempts::get_attempt, attempts::review_attempt, attempts::put_trajectory, attempts::get_trajectory,
        figures::get_figures, figures::get_distributions, figures::get_throughput, figures::get_glance, figures::get_ranks, agents::list_agents,
        facets::get_facets, charts::get_chart, reruns::rerun, refine::refine, signatures::signatures,
        oracles::oracles, jobs::queue, jobs::get_job, jobs::job_events, jobs::attempt_events,
        environments::list_environments, environments::create_environment, environments::build_environment, environments::latest_build, import::import,
        releases::list_releases, releases::set_template, releases::get_versions, releases::set_versions, releases::bisect,
        runner_envs::environments, runner_envs::environments_page, oracles_page::oracles_page, runners_page::runners_page,
        routing_health::routing_health, routing_health::routing_page, reports::confirm_route,
        metrics::metrics, status::status_json, status::status_index, status::status_page, status::status_trend, status::status_trend_png,
        status::badge,
        hooks::list_hooks, hooks::create_hook, hooks::remove_hook, hooks::hook_deliveries, hooks::redeliver,
        hooks::hooks_page, hooks::create_hook_form, hooks::hook_log_page, hooks::remove_hook_form, hooks::test_hook_form, hooks::redeliver_form,
    ),
    components(schemas(
        failpass_shared::error::ApiErrorBody,
        // Named by parameters (which utoipa does not collect).
        failpass_shared::api::status::BadgeStyle,
        failpass_shared::model::EnvironmentRole,
    )),
    modifiers(&FromAccessTable),
    tags(
        (name = "service", description = "Health and metrics."),
        (name = "session", description = "Who the caller is."),
        (name = "pages", description = "Server-rendered pages: sign-in, API tokens, this reference."),
        (name = "projects"), (name = "reports"), (name = "attempts"),
        (name = "figures", description = "Figures, distributions, throughput, oracle coverage and charts."),
        (name = "jobs", description = "The verification queue: reruns, refine, events."),
        (name = "environments", description = "Recipes the runner builds (admins write, maintainers read)."),
        (name = "releases", description = "Real releases: how a project builds any of them, the versions a report is graded on, bisect."),
        (name = "import", description = "Bulk NDJSON, and JUnit results of one attempt."),
        (name = "export", description = "Lists as CSV, JSON or NDJSON (the import's format), with their filters."),
        (name = "status", description = "Public projects' status pages, their JSON and badges."),
        (name = "hooks", description = "Outgoing webhooks on verdict, route and status changes, signed; their delivery log (admins)."),
    ),
)]
pub struct ApiDoc;

/// The document as served (built once).
pub fn document() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| ApiDoc::openapi().to_pretty_json().expect("the OpenAPI document serialises"))
}

/// `GET /docs/api`: the reference page, drawn from this document.
#[utoipa::path(
    get, path = "/docs/api", tag = "pages",
    responses((status = 200, description = "The API reference, from the OpenAPI document.", content_type = "text/html", body = String))
)]
pub async fn api_reference() -> axum::response::Response {
    use axum::http::header;
    use axum::response::{Html, IntoResponse};
    static PAGE: OnceLock<String> = OnceLock::new();
    let page = PAGE.get_or_init(|| crate::routes::reference::render(&ApiDoc::openapi()).into_string());
    ([(header::CACHE_CONTROL, "public, max-age=300")], Html(page.as_str())).into_response()
}

/// `GET /api/v1/openapi.json`
#[utoipa::path(
    get, path = "/api/v1/openapi.json", tag = "service",
    responses((status = 200, description = "This document (OpenAPI 3.1).", content_type = "application/json", body = Object))
)]
pub async fn openapi_json() -> axum::response::Response {
    use axum::http::header;
    use axum::response::IntoResponse;
    ([(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "public, max-age=300")], document())
        .into_response()
}

/// The OpenAPI path of an axum route: `{*slug}` is `{slug}`.
pub fn openapi_path(axum_path: &str) -> String {
    axum_path.replace("{*", "{")
}

/// The operation `method path` in `doc`, if documented.
pub fn operation_mut<'a>(doc: &'a mut utoipa::openapi::OpenApi, method: &str, path: &str) -> Option<&'a mut Operation> {
    let item = doc.paths.paths.get_mut(&openapi_path(path))?;
    match method {
        "GET" => item.get.as_mut(),
        "POST" => item.post.as_mut(),
        "PUT" => item.put.as_mut(),
        "PATCH" => item.patch.as_mut(),
        "DELETE" => item.delete.as_mut(),
        _ => None,
    }
}

/// The HTTP methods documented for `path`.
pub fn documented_methods(doc: &utoipa::openapi::OpenApi, path: &str) -> Vec<HttpMethod> {
    let Some(item) = doc.paths.paths.get(&openapi_path(path)) else { return Vec::new() };
    [
        (item.get.is_some(), HttpMethod::Get),
        (item.post.is_some(), HttpMethod::Post),
        (item.put.is_some(), HttpMethod::Put),
        (item.patch.is_some(), HttpMethod::Patch),
        (item.delete.is_some(), HttpMethod::Delete),
    ]
    .into_iter()
    .filter_map(|(has, m)| has.then_some(m))
    .collect()
}

/// Adds what the access table knows to every operation.
struct FromAccessTable;

const TOKEN: &str = "token";
const SESSION: &str = "session";
const METRICS_TOKEN: &str = "metrics_token";

impl utoipa::Modify for FromAccessTable {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            TOKEN,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API token (`failpass token create`, or the tokens page): agent, ci and read tokens act \
                         in their project, personal tokens as their user.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            SESSION,
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::auth::sessions::COOKIE,
                "The dashboard's session, from `POST /signin`.",
            ))),
        );
        components.add_security_scheme(
            METRICS_TOKEN,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("`--metrics-token`, when set; `/metrics` is open otherwise."))
                    .build(),
            ),
        );
        for spec in ROUTES {
            if let Some(op) = operation_mut(doc, spec.method, spec.path) {
                describe(op, spec);
            }
        }
    }
}

fn describe(op: &mut Operation, spec: &RouteSpec) {
    let mut what = spec.what.to_owned();
    if let Some(first) = what.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    op.summary = Some(what);
    let who = who_may(spec.action);
    op.description = Some(match op.description.take().filter(|d| !d.trim().is_empty()) {
        Some(d) => format!("{d}\n\n**Who may:** {who}"),
        None => format!("**Who may:** {who}"),
    });
    if spec.action != Action::Scrape && spec.action != Action::Open {
        let mut requirements = Vec::new();
        if spec.action == Action::Read {
            // Public projects need no credentials.
            requirements.push(SecurityRequirement::default());
        }
        requirements.push(SecurityRequirement::new(TOKEN, Vec::<String>::new()));
        requirements.push(SecurityRequirement::new(SESSION, Vec::<String>::new()));
        op.security = Some(requirements);
    }
    let page = !spec.path.starts_with("/api/") && spec.path != "/healthz" && spec.path != "/metrics";
    let mut add = |status: &str, description: &str| {
        op.responses.responses.entry(status.to_owned()).or_insert_with(|| error_response(description, page));
    };
    let takes_input =
        spec.body != Body::None || spec.path.contains('{') || op.parameters.as_ref().is_some_and(|p| !p.is_empty());
    if takes_input {
        add("400", "A parameter or the body is not usable; the message names which and why.");
    }
    if spec.action != Action::Open && spec.action != Action::Scrape {
        add("401", "No credentials, or they are not valid (or the server requires signing in).");
        if spec.action != Action::Read {
            add("403", "Signed in, but this role may not do this; the message names who may.");
        }
    }
    if spec.path.contains('{') || spec.action != Action::Open {
        add("404", "Not found, or a private project the caller may not read (they answer alike).");
    }
    if spec.body != Body::None {
        add("413", "The body is larger than this route takes.");
        add("415", "The body's `Content-Type` is not one this route takes; the message names which.");
    }
    add("default", "Any other error (405, 421 for a foreign `Host`, 500, 503), in the same shape.");
}

/// An error answer: the JSON error shape (and, for pages, an HTML page).
fn error_response(description: &str, page: bool) -> RefOr<Response> {
    let mut r = ResponseBuilder::new()
        .description(description)
        .content("application/json", Content::new(Some(Ref::from_schema_name("ApiErrorBody"))));
    if page {
        r = r.content(
            "text/html",
            Content::new(Some(utoipa::openapi::schema::Object::with_type(utoipa::openapi::Type::String))),
        );
    }
    r.build().into()
}

/// Who may take `action`, in a sentence.
fn who_may(action: Action) -> String {
    use crate::auth::access::Role;
    match action {
        Action::Open => "anyone.".into(),
        Action::Scrape => "anyone, or only holders of the metrics token when one is set.".into(),
        Action::Read => {
            "anyone for public projects; for private ones, members and the project's tokens (lists show only what \
             the caller may read)."
                .into()
        }
        other => {
            let roles: Vec<&str> = Role::ALL.iter().filter(|r| r.may(other)).map(|r| r.as_str()).collect();
            format!("{} (in the project at hand).", roles.join(", "))
        }
    }
}
