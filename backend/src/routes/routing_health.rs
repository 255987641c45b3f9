//! Routing health: a project's panel (JSON and a page rendered on the
//! server) and a maintainer's "route is right" confirmation of a report.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use failpass_shared::api::routing::{ALARM_CORRECTED_SHARE, ALARM_HUMAN_SHARE, ALARM_MIN_ROUTED, RoutingHealth};
use maud::html;

use super::AppState;
use super::pages::page;
use crate::auth::Viewer;
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult};

async fn readable(state: &AppState, viewer: &Viewer, owner: &str, name: &str) -> ApiResult<RoutingHealth> {
    let slug = format!("{owner}/{name}");
    if state.storage.get_project(&slug, &viewer.scope()).await?.is_none() {
        return Err(ApiError::NotFound(format!("project {slug} not found")));
    }
    Ok(crate::routing_health::health(state.storage.as_ref(), &slug, chrono::Utc::now()).await?)
}

/// `GET /api/v1/routing/{owner}/{name}`.
#[utoipa::path(
    get, path = "/api/v1/routing/{owner}/{name}", tag = "reports",
    params(("owner" = String, Path, example = "pytorch"), ("name" = String, Path, example = "pytorch")),
    responses((status = 200, description = "The project's routing health over the last 30 days, its weekly route mix and its learned boilerplate.", body = RoutingHealth))
)]
pub async fn routing_health(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath((owner, name)): ApiPath<(String, String)>,
) -> ApiResult<ApiJson<RoutingHealth>> {
    Ok(ApiJson(readable(&state, &viewer, &owner, &name).await?))
}

/// `GET /routing/{owner}/{name}`: the same, as a page.
#[utoipa::path(
    get, path = "/routing/{owner}/{name}", tag = "pages",
    params(("owner" = String, Path, example = "pytorch"), ("name" = String, Path, example = "pytorch")),
    responses((status = 200, description = "The project's routing health as a page.", content_type = "text/html", body = String))
)]
pub async fn routing_page(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath((owner, name)): ApiPath<(String, String)>,
) -> ApiResult<Response> {
    let h = readable(&state, &viewer, &owner, &name).await?;
    let pct =
        |n: u64| if h.routed == 0 { "—".to_owned() } else { format!("{:.0}%", 100.0 * n as f64 / h.routed as f64) };
    let queue = |extra: &str| format!("/queue?project={}{extra}", h.project);
    let body = html! {
        p.muted { a href=(queue("")) { (h.project) } " / routing" }
        h1 { "Routing health of " (h.project) }
        p.lede { "Who looks at " (h.project) "'s reports first, over the last " (h.window_days) " days, and how often maintainers "
            "agreed. The rule reads the title, the problem's own prose, code and tracebacks, and the labels; issue-template "
            "headings, environment sections and dumps, and the boilerplate below are not evidence." }
        @if let Some(a) = &h.alarm {
            section.panel.state-error role="alert" data-testid="routing-alarm" {
                h2 { "Alarm" }
                p { (a) }
                @if !h.top_evidence.is_empty() {
                    p { "The evidence that sent most of them to a human:" }
                    ul { @for e in &h.top_evidence { li { (e.evidence) " — " (e.reports) " reports" } } }
                }
                p.muted { "Correct the routes that are wrong on each report's page: corrections train the project's classifier; "
                    "lines every report carries are learned as boilerplate by " code { "failpass reroute" } "." }
            }
        }
        section.panel data-testid="routing-mix" {
            h2 { "Last " (h.window_days) " days" }
            dl.lifecycle {
                dt { "Routed" } dd data-testid="routing-routed" { (h.routed) " reports" }
                dt { "Human first" } dd data-testid="routing-human" { (h.human_first) " (" (pct(h.human_first)) ")" }
                dt { "Agent first" } dd { (h.agent_first) " (" (pct(h.agent_first)) ")" }
                dt { "Hypothesis" } dd { (h.hypothesis) " (" (pct(h.hypothesis)) ")" }
                dt { "Route check" } dd { a href=(queue("&route_check=true")) { (h.route_check) } " unsure, not yet reviewed (" (pct(h.route_check)) ")" }
                dt { "Corrected" } dd data-testid="routing-corrected" { (h.corrected) " (" (pct(h.corrected)) ")" }
                dt { "Confirmed" } dd data-testid="routing-confirmed" { (h.confirmed) }
            }
            p.muted { "The alarm sounds over at least " (ALARM_MIN_ROUTED) " reports when more than "
                (format!("{:.0}%", ALARM_HUMAN_SHARE * 100.0)) " go to a human first or more than "
                (format!("{:.0}%", ALARM_CORRECTED_SHARE * 100.0)) " are corrected." }
        }
        section.panel {
            h2 { "Precision from reviews" }
            @if h.reviewed.is_empty() {
                p { "No route reviewed yet: confirm or correct routes on the reports' pages." }
            } @else {
                table data-testid="routing-reviewed" {
                    thead { tr { th scope="col" { "Rule's route" } th scope="col" class="num" { "Confirmed" } th scope="col" class="num" { "Corrected" } th scope="col" class="num" { "Precision" } } }
                    tbody { @for r in &h.reviewed { tr {
                        th scope="row" { (r.route.as_str().replace('_', " ")) }
                        td.num { (r.confirmed) } td.num { (r.corrected) }
                        td.num { (r.precision.map_or("—".to_owned(), |p| format!("{p:.2}"))) }
                    } } }
                }
            }
        }
        section.panel {
            h2 { "Route mix by week" }
            div.table-wrap { table data-testid="routing-weeks" {
                thead { tr { th scope="col" { "Week of" } th scope="col" class="num" { "Human first" } th scope="col" class="num" { "Agent first" }
                    th scope="col" class="num" { "Hypothesis" } th scope="col" class="num" { "Route check" } th scope="col" class="num" { "Corrected" } } }
                tbody { @for w in &h.weeks { tr {
                    td { (w.week) } td.num { (w.human_first) } td.num { (w.agent_first) } td.num { (w.hypothesis) }
                    td.num { (w.route_check) } td.num { (w.corrected) }
                } } }
            } }
        }
        section.panel data-testid="routing-boilerplate" {
            h2 { "Boilerplate" }
            @if h.boilerplate.is_empty() {
                p { "None learned yet: " code { "failpass reroute" } " learns the lines a quarter of a project's reports share "
                    "(its template, signatures, checklists) once it has ten." }
            } @else {
                p { (h.boilerplate.len()) " lines, learned from " (h.boilerplate_reports) " reports"
                    @if let Some(at) = h.boilerplate_learned_at { " on " (at.date_naive()) } ", left out of the evidence:" }
                ul.boilerplate { @for l in h.boilerplate.iter().take(60) { li { code { (l.line) } " — " (l.reports) " reports" } } }
            }
        }
    };
    Ok(page(StatusCode::OK, &format!("Routing health · {}", h.project), &viewer, body))
}
