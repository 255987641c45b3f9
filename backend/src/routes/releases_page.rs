//! A report's releases, a page rendered on the server: the buggy and fixed
//! releases it is graded on and where each came from (the report's own
//! line, a maintainer, a bisect), a form to correct them, the bisect button
//! and the search as it goes (the page reloads while it runs), and the
//! releases the index lists with why any cannot be built here.

use axum::Form;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use failpass_shared::api::releases::{BisectRequest, SetReportVersions};
use failpass_shared::api::reports::Report;
use maud::html;
use serde::Deserialize;

use super::AppState;
use super::pages::page;
use super::releases::visible;
use crate::auth::{Action, Viewer};
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult};

async fn view(state: &AppState, viewer: &Viewer, report: &Report, error: Option<&str>) -> ApiResult<Response> {
    let s = &report.summary;
    let template = state.storage.release_template(&s.project).await?;
    let v = state.storage.report_versions(s.id).await?;
    let listing = match &template {
        Some(t) => Some(state.index.releases(&t.package, !t.setup.is_empty()).await.map_err(|e| e.to_string())),
        None => None,
    };
    let running = v.bisect.as_ref().is_some_and(|b| b.state == "running");
    let may_review = viewer.require(Action::Review, &s.project).is_ok();
    let action = format!("/reports/{}/releases", s.id);
    let body = html! {
        p.muted { a href=(format!("/reports/{}", s.id)) { (s.project) " #" (s.external_id) } " / releases" }
        h1 { "Releases for #" (s.external_id) ": " (s.title) }
        @if let Some(e) = error { p.state.state-error role="alert" data-testid="releases-error" { (e) } }
        @if running {
            meta http-equiv="refresh" content=(format!("3; url={action}"));
        }
        @match &template {
            None => p data-testid="releases-none" { "Project " (s.project) " grades on its buggy and fixed environments: it has no "
                "release template (an admin sets one with " code { "POST /api/v1/releases" } ")." },
            Some(t) => {
                section.panel {
                    h2 { "Graded on" }
                    dl.lifecycle {
                        dt { "Buggy" } dd data-testid="releases-buggy" {
                            @match &v.buggy { Some(b) => { strong { (t.package) " " (b) } " — " (v.buggy_source.as_deref().unwrap_or("")) }, None => "not named by the report" }
                        }
                        dt { "Fixed" } dd data-testid="releases-fixed" {
                            @match &v.fixed { Some(f) => { strong { (t.package) " " (f) } " — " (v.fixed_source.as_deref().unwrap_or("")) }, None => "not set: set it, or bisect" }
                        }
                    }
                    @if may_review {
                        form method="post" action=(action) {
                            input type="hidden" name="action" value="set";
                            label { "Buggy " input name="buggy" value=(v.buggy.as_deref().unwrap_or("")) size="12"; }
                            " "
                            label { "Fixed " input name="fixed" value=(v.fixed.as_deref().unwrap_or("")) size="12"; }
                            " "
                            button type="submit" data-testid="releases-set" { "Save" }
                        }
                    }
                }
                section.panel data-testid="bisect" {
                    h2 { "Bisect over releases" }
                    @match &v.bisect {
                        None => p.muted { "Runs a candidate on the releases from the buggy one to the newest and names the first where it passes." },
                        Some(b) => {
                            p role="status" data-testid="bisect-summary" { strong { (b.state.replace('_', " ")) } ": " (b.summary) }
                            table {
                                thead { tr { th { "Release" } th { "Outcome" } th { "Seconds" } th { "What it showed" } } }
                                tbody { @for st in &b.steps { tr { td { (st.version) } td { (st.outcome) } td { (format!("{:.1}", st.seconds)) } td { (st.detail) } } } }
                            }
                        }
                    }
                    @if may_review && !running {
                        form method="post" action=(action) {
                            input type="hidden" name="action" value="bisect";
                            button type="submit" data-testid="bisect-start" { "Bisect" }
                        }
                    }
                }
                section.panel {
                    h2 { "Releases of " (t.package) " on the index" }
                    @match &listing {
                        Some(Err(e)) => p.state.state-error { (e) },
                        Some(Ok(l)) => {
                            @if let Some(n) = &l.stale { p.muted { (n) } }
                            table data-testid="releases-list" {
                                thead { tr { th { "Release" } th { "Published" } th { "Buildable here" } } }
                                tbody { @for r in l.releases.iter().take(30) { tr {
                                    td { (r.info.version) }
                                    td { (r.info.published.map(|d| d.format("%Y-%m-%d").to_string()).unwrap_or_default()) }
                                    td { @if r.info.buildable { "yes" } @else { (r.info.reason.as_deref().unwrap_or("no")) } }
                                } } }
                            }
                        }
                        None => {}
                    }
                }
            }
        }
    };
    let status = if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    Ok(page(status, &format!("Releases · #{}", s.external_id), viewer, body))
}

/// `GET /reports/{id}/releases`.
#[utoipa::path(
    get, path = "/reports/{id}/releases", tag = "pages",
    params(("id" = i64, Path, example = 1, description = "The report's id.")),
    responses((status = 200, description = "The report's releases, their sources, the bisect and the index's list.", content_type = "text/html", body = String))
)]
pub async fn releases_page(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Response> {
    let report = visible(&state, &viewer, id).await?;
    view(&state, &viewer, &report, None).await
}

#[derive(Debug, Deserialize)]
pub struct ReleasesForm {
    action: String,
    #[serde(default)]
    buggy: Option<String>,
    #[serde(default)]
    fixed: Option<String>,
}

/// `POST /reports/{id}/releases`: set the releases, or start a bisect.
#[utoipa::path(
    post, path = "/reports/{id}/releases", tag = "pages",
    params(("id" = i64, Path, example = 1, description = "The report's id.")),
    responses((status = 303, description = "Done: back to the page."),
              (status = 400, description = "Refused: the page again, saying why.", content_type = "text/html", body = String))
)]
pub async fn releases_form(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
    form: Result<Form<ReleasesForm>, FormRejection>,
) -> ApiResult<Response> {
    let report = visible(&state, &viewer, id).await?;
    viewer.require(Action::Review, &report.summary.project)?;
    let form = match form {
        Ok(Form(f)) => f,
        Err(e) => return view(&state, &viewer, &report, Some(&format!("the form: {e}"))).await,
    };
    let result = match form.action.as_str() {
        "set" => {
            let req = SetReportVersions { buggy: form.buggy, fixed: form.fixed };
            super::releases::set_versions(State(state.clone()), viewer.clone(), ApiPath(id), ApiJson(req))
                .await
                .map(|_| ())
        }
        "bisect" => super::releases::bisect(
            State(state.clone()),
            viewer.clone(),
            ApiPath(id),
            ApiJson(BisectRequest::default()),
        )
        .await
        .map(|_| ()),
        other => Err(ApiError::BadRequest(format!("action: `{other}` is not one of set, bisect"))),
    };
    match result {
        Ok(()) => Ok(Redirect::to(&format!("/reports/{id}/releases")).into_response()),
        Err(e) => view(&state, &viewer, &report, Some(&e.to_string())).await,
    }
}
