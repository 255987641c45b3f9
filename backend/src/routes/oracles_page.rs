//! `GET /oracles`: the Oracles page, drawn by the server (it needs no
//! interactivity, so it costs the dashboard's bundle nothing): coverage by
//! kind and source, the in-patch share against the published reference,
//! authoring time, failure causes and failure signature groups, for every
//! project the viewer sees or the one the address names.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use failpass_shared::api::jobs::SignatureGroup;
use failpass_shared::api::oracles::{OracleSummary, Share};
use failpass_shared::api::projects::Project;
use failpass_shared::format::{interval, percent, thousands};
use maud::{Markup, PreEscaped, html};

use super::AppState;
use super::pages::page;
use crate::auth::Viewer;
use crate::error::{ApiResult, QueryPairs};

/// Widths the charts are drawn at: one for a wide screen, one for a phone
/// (the page shows the one that fits, so their text is drawn at its size).
const WIDE: u32 = 900;
const NARROW: u32 = 310;

#[utoipa::path(
    get, path = "/oracles", tag = "pages",
    params(("project" = Option<String>, Query, example = "fastnum/fastnum", description = "Only this project's figures.")),
    responses((status = 200, description = "The Oracles page.", content_type = "text/html", body = String),
              (status = 404, description = "No such project (or not yours to see): said on the page.", content_type = "text/html", body = String))
)]
pub async fn oracles_page(State(state): State<AppState>, viewer: Viewer, query: QueryPairs) -> ApiResult<Response> {
    let project =
        query.iter().find(|(k, _)| *k == "project").map(|(_, v)| v.trim().to_owned()).filter(|p| !p.is_empty());
    let projects = state.storage.list_projects(&viewer.scope()).await?;
    let figures = match super::oracles::summary(&state, &viewer, &query).await {
        Ok(s) => {
            let groups = state.storage.signature_groups(project.as_deref(), &viewer.scope()).await?;
            Ok((s, groups))
        }
        Err(e) => Err(e),
    };
    let status = figures.as_ref().err().map_or(StatusCode::OK, |e| e.status());
    let body = html! {
        section.oracles {
            div.page-head {
                h1 { "Oracles" }
                (project_form(&projects, project.as_deref()))
            }
            @match &figures {
                Err(e) => p.state.state-error role="alert" data-testid="oracles-error" { (e.to_string()) },
                Ok((s, _)) if s.reports == 0 => p.state.state-empty { "No report yet in this view." },
                Ok((s, groups)) => (view(s, groups)),
            }
        }
    };
    Ok(page(status, "Oracles", &viewer, body))
}

/// The project choice, a form that reloads the page (at once with a script).
fn project_form(projects: &[Project], selected: Option<&str>) -> Markup {
    html! {
        form.inline-form method="get" action="/oracles" {
            label.field {
                span { "Project" }
                select name="project" data-testid="filter-project" data-autosubmit {
                    option value="" selected[selected.is_none()] { "All projects" }
                    @for p in projects {
                        option value=(p.slug) selected[selected == Some(p.slug.as_str())] {
                            (p.slug) @if !p.public { " (private)" }
                        }
                    }
                }
            }
            button type="submit" { "Show" }
        }
    }
}

fn share_detail(s: &Share, what: &str) -> String {
    format!("{} of {} {what}; 95% {}", thousands(s.count), thousands(s.of), interval(s.low, s.high))
}

fn stat(label: &str, value: String, detail: String, testid: &str) -> Markup {
    html! {
        div.stat {
            div.stat-label { (label) }
            div.stat-value data-testid=(testid) { (value) }
            div.stat-detail { (detail) }
        }
    }
}

/// A chart drawn twice, for a wide screen and a phone; the page shows one.
fn chart(testid: &str, draw: impl Fn(u32) -> String) -> Markup {
    html! {
        div.chart-sized data-testid=(testid) {
            div.chart-wide { (PreEscaped(draw(WIDE))) }
            div.chart-narrow { (PreEscaped(draw(NARROW))) }
        }
    }
}

fn view(s: &OracleSummary, groups: &[SignatureGroup]) -> Markup {
    let reference = format!("published reference {:.2}% (AgentBug-Smith)", s.in_patch_reference * 100.0);
    let precision = match s.llm_precision.rate {
        Some(p) => format!(
            "{} of {} LLM leads later graded deterministically were reproduced; 95% {}; false-positive rate {}",
            s.llm_precision.count,
            s.llm_precision.of,
            interval(s.llm_precision.low, s.llm_precision.high),
            percent(Some(1.0 - p))
        ),
        None => "no LLM lead has been graded deterministically yet".to_owned(),
    };
    let median = s.authoring_minutes_median.map_or_else(|| "—".into(), |m| format!("{m:.1} min"));
    html! {
        section.stats aria-label="Oracle figures" {
            (stat("Oracle coverage", percent(s.coverage.rate), share_detail(&s.coverage, "reports have a deterministic oracle"), "oracle-coverage"))
            (stat("In-patch test share", percent(s.in_patch.rate), format!("{}; {reference}", share_detail(&s.in_patch, "reports")), "oracle-in-patch"))
            (stat("Authoring minutes", format!("{:.0}", s.authoring_minutes_total),
                format!("total over {} authored oracles; median {median}", s.authored_oracles), "oracle-minutes"))
            (stat("LLM-verdict precision", percent(s.llm_precision.rate), precision, "oracle-llm-precision"))
        }
        // Escaped when it was drawn: authored oracles by category and route.
        (PreEscaped(&s.authoring_html))
        section.panel {
            h2 { "Oracle kinds" }
            (chart("chart-oracle-kinds", |w| super::charts::oracle_kinds_svg(s, w)))
            table.chart-table data-testid="oracle-kinds" {
                thead { tr { th scope="col" { "Kind" } th.num scope="col" { "Reports" } th.num scope="col" { "Share" } } }
                tbody { @for k in &s.by_kind {
                    tr data-kind=(k.kind.as_str()) {
                        th scope="row" { (k.kind.as_str().replace('_', " ")) }
                        td.num { (thousands(k.reports)) }
                        td.num { (percent(Some(k.reports as f64 / s.reports.max(1) as f64))) }
                    }
                } }
            }
        }
        section.panel {
            h2 { "Deterministic oracles by source" }
            (chart("chart-oracle-sources", |w| super::charts::oracle_sources_svg(s, w)))
            table.chart-table data-testid="oracle-sources" {
                thead { tr { th scope="col" { "Source" } th.num scope="col" { "Reports" } } }
                tbody { @for k in &s.by_source {
                    tr {
                        th scope="row" { (k.source.map(|s| s.as_str().replace('_', " ")).unwrap_or_else(|| "not stated".into())) }
                        td.num { (thousands(k.reports)) }
                    }
                } }
            }
        }
        section.panel {
            h2 { "Failure causes" }
            @if s.failure_causes.is_empty() {
                p.state.state-empty { "No failed reproduction attempt has a cause recorded." }
            } @else {
                table.chart-table data-testid="failure-causes" {
                    thead { tr { th scope="col" { "Cause" } th.num scope="col" { "Attempts" } } }
                    tbody { @for c in &s.failure_causes {
                        tr { th scope="row" { (c.cause.as_str().replace('_', " ")) } td.num { (thousands(c.attempts)) } }
                    } }
                }
            }
        }
        section.panel {
            h2 { "Failure signature groups" }
            @if groups.is_empty() {
                p.state.state-empty { "No graded run showed a failure signature yet." }
            } @else {
                div.table-wrap { table.chart-table data-testid="signature-groups" {
                    thead { tr { th scope="col" { "Signature (normalised)" } th.num scope="col" { "Attempts" }
                        th.num scope="col" { "Reports" } th.num scope="col" { "Reproduced" } th scope="col" { "First reports" } } }
                    tbody { @for g in groups {
                        tr {
                            td { code { (g.signature) } }
                            td.num { (g.attempts) } td.num { (g.reports) } td.num { (g.reproduced) }
                            td { @for (id, n) in g.report_ids.iter().zip(&g.report_numbers) {
                                a href=(format!("/reports/{id}")) { "#" (n) } " "
                            } }
                        }
                    } }
                } }
            }
        }
    }
}
