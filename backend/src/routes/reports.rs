use axum::extract::State;
use axum::http::StatusCode;
use failpass_shared::api::Page;
use failpass_shared::api::query::FieldError;
use failpass_shared::api::reports::{
    Arrived, AssignRequest, CommentRequest, CorrectRouteRequest, CreateReportRequest, Report, ReportListQuery,
    ReportSummary, RouteCorrection, SetStatusRequest,
};

use super::AppState;
use crate::auth::{Action, Principal, Viewer};
use crate::db::NewReport;
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult, QueryPairs};

#[utoipa::path(
    get, path = "/api/v1/reports", tag = "reports",
    params(ReportListQuery),
    responses((status = 200, description = "One page of reports.", body = Page<ReportSummary>))
)]
#[tracing::instrument(skip_all)]
pub async fn list_reports(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<Page<ReportSummary>>> {
    let mut query = ReportListQuery::from_pairs(query.iter())?;
    mine(&state, &viewer, &mut query).await?;
    crate::summaries::known_project(state.storage.as_ref(), &viewer.scope(), query.filter.project.as_deref()).await?;
    Ok(ApiJson(state.storage.list_reports(&query, &viewer.scope()).await?))
}

/// `assignee=me` is the caller: their name, or a refusal naming the field
/// for a caller who is no member (anonymous, or a project token).
pub(crate) async fn mine(state: &AppState, viewer: &Viewer, q: &mut ReportListQuery) -> ApiResult<()> {
    if q.assignee.as_deref() == Some("me") {
        match viewer.me(false).user {
            Some(name) => q.assignee = Some(name),
            None => {
                return Err(ApiError::BadRequest(
                    "assignee: `me` is whoever signed in; sign in, or name the member".into(),
                ));
            }
        }
    }
    // `arrived=visit`: after the reader's previous visit ended (every report
    // on a first visit); `24h`: the storage reads it as the last 24 hours.
    if q.arrived == Some(Arrived::Visit) {
        let Principal::User { id, .. } = &viewer.principal else {
            return Err(ApiError::BadRequest(
                "arrived: `visit` is since your last visit, so it needs you signed in; or use `24h`".into(),
            ));
        };
        q.arrived_after = Some(state.storage.previous_visit(*id).await?.unwrap_or(chrono::DateTime::UNIX_EPOCH));
    }
    Ok(())
}

/// Routes the report by the triage rule, then stores it with its explanation.
#[utoipa::path(
    post, path = "/api/v1/reports", tag = "reports",
    request_body = CreateReportRequest,
    responses((status = 201, description = "Filed, routed, with the rule's explanation.", body = Report),
              (status = 409, description = "The project already has a report with this external id.", body = failpass_shared::error::ApiErrorBody))
)]
#[tracing::instrument(skip_all, fields(project = %req.project, external_id = %req.external_id))]
pub async fn create_report(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(mut req): ApiJson<CreateReportRequest>,
) -> ApiResult<(StatusCode, ApiJson<Report>)> {
    req.normalize();
    req.validate()?;
    // A project the caller cannot see is answered as a missing one.
    if state.storage.get_project(&req.project, &viewer.scope()).await?.is_none() {
        return Err(crate::db::common::no_project(&req.project).into());
    }
    viewer.require(Action::WriteReport, &req.project)?;
    let decision = state.models.decide(state.storage.as_ref(), &state.routing, &req).await?;
    let report = state.storage.create_report(&NewReport { request: req, decision, origin: viewer.origin() }).await?;
    Ok((StatusCode::CREATED, ApiJson(with_html(&state, report, &viewer).await?)))
}

#[utoipa::path(
    get, path = "/api/v1/reports/{id}", tag = "reports",
    params(("id" = i64, Path, example = 1, description = "The report's id.")),
    responses((status = 200, description = "The report.", body = Report))
)]
#[tracing::instrument(skip_all, fields(report_id = id))]
pub async fn get_report(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<ApiJson<Report>> {
    let report = state
        .storage
        .get_report(id, &viewer.scope())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("report {id} not found")))?;
    Ok(ApiJson(with_html(&state, report, &viewer).await?))
}

/// A maintainer sets the report's route and says why. The route sticks
/// through `failpass reroute`, and the project's classifier learns from it.
#[utoipa::path(
    post, path = "/api/v1/reports/{id}/route", tag = "reports",
    params(("id" = i64, Path, example = 1, description = "The report's id.")),
    request_body = CorrectRouteRequest,
    responses((status = 200, description = "The report with its corrected route.", body = Report))
)]
#[tracing::instrument(skip_all, fields(report_id = id))]
pub async fn correct_route(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
    ApiJson(req): ApiJson<CorrectRouteRequest>,
) -> ApiResult<ApiJson<Report>> {
    req.validate()?;
    let scope = viewer.scope();
    let not_found = || ApiError::NotFound(format!("report {id} not found"));
    let report = state.storage.get_report(id, &scope).await?.ok_or_else(not_found)?;
    viewer.require(Action::Review, &report.summary.project)?;
    if req.route == report.summary.route {
        let now = req.route.as_str().replace('_', " ");
        return Err(FieldError::new(
            "route",
            format!(
                "the report is already routed {now}: a correction changes the route (to say it is right, \
                 confirm it: POST /api/v1/reports/{id}/route/confirm)"
            ),
        )
        .into());
    }
    let correction = RouteCorrection {
        route: req.route,
        previous: report.summary.route,
        reason: req.reason.trim().to_owned(),
        by: viewer.name(),
        at: chrono::Utc::now(),
    };
    state.storage.correct_route(id, &correction, viewer.origin().via).await?;
    state.models.forget(&report.summary.project);
    let report = state.storage.get_report(id, &scope).await?.ok_or_else(not_found)?;
    Ok(ApiJson(with_html(&state, report, &viewer).await?))
}

/// The report, when the viewer may review in its project (`NotFound` as the API answers).
pub(super) async fn reviewable(state: &AppState, viewer: &Viewer, id: i64) -> ApiResult<Report> {
    let report = state
        .storage
        .get_report(id, &viewer.scope())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("report {id} not found")))?;
    viewer.require(Action::Review, &report.summary.project)?;
    Ok(report)
}

pub(super) async fn reread(state: &AppState, viewer: &Viewer, id: i64) -> ApiResult<ApiJson<Report>> {
    let report = state.storage.get_report(id, &viewer.scope()).await?;
    let report = report.ok_or_else(|| ApiError::NotFound(format!("report {id} not found")))?;
    Ok(ApiJson(with_html(state, report, viewer).await?))
}

/// `POST /api/v1/reports/{id}/route/confirm`: a maintainer says the route is right.
#[utoipa::path(
    post, path = "/api/v1/reports/{id}/route/confirm", tag = "reports",
    params(("id" = i64, Path, example = 1, description = "The report's id.")),
    request_body = failpass_shared::api::routing::ConfirmRouteRequest,
    responses((status = 200, description = "The report, its route confirmed and its route check cleared.", body = Report))
)]
#[tracing::instrument(skip_all, fields(report_id = id))]
pub async fn confirm_route(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
    ApiJson(req): ApiJson<failpass_shared::api::routing::ConfirmRouteRequest>,
) -> ApiResult<ApiJson<Report>> {
    req.validate()?;
    let report = reviewable(&state, &viewer, id).await?;
    let route = report.summary.route;
    if let Some(seen) = req.route.filter(|r| *r != route) {
        return Err(failpass_shared::api::query::FieldError::new(
            "route",
            format!(
                "the report is now routed {}, not {}: look at it again",
                route.as_str().replace('_', " "),
                seen.as_str().replace('_', " ")
            ),
        )
        .into());
    }
    let c = crate::db::routing::RouteConfirmation {
        route,
        by: viewer.name(),
        at: chrono::Utc::now(),
        reason: req.reason.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty()),
    };
    state.storage.confirm_route(id, &c, viewer.origin().via).await?;
    reread(&state, &viewer, id).await
}

/// A maintainer closes a report, marks it a duplicate (of another report of
/// the project, by its upstream number), won't fix or not a bug, or reopens
/// it. A member's resolution stands over what upstream says; reopening
/// returns the report to what its attempts say.
#[utoipa::path(
    post, path = "/api/v1/reports/{id}/status", tag = "reports",
    params(("id" = i64, Path, example = 1, description = "The report's id.")),
    request_body = SetStatusRequest,
    responses((status = 200, description = "The report with its new status and the change in its activity.", body = Report))
)]
#[tracing::instrument(skip_all, fields(report_id = id))]
pub async fn set_status(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
    ApiJson(req): ApiJson<SetStatusRequest>,
) -> ApiResult<ApiJson<Report>> {
    req.validate()?;
    let report = reviewable(&state, &viewer, id).await?;
    let resolution = req.resolution()?;
    let duplicate_of = match req.duplicate_of.as_deref().map(|d| d.trim().trim_start_matches('#').trim()) {
        None => None,
        Some(number) => {
            let project = &report.summary.project;
            let other = state.storage.find_report(project, number).await?.ok_or_else(|| {
                ApiError::from(FieldError::new("duplicate_of", format!("{project} has no report #{number}")))
            })?;
            if other == id {
                return Err(FieldError::new("duplicate_of", "a report is not a duplicate of itself").into());
            }
            Some(other)
        }
    };
    state.storage.set_resolution(id, resolution, duplicate_of, req.reason.as_deref(), &viewer.origin()).await?;
    reread(&state, &viewer, id).await
}

/// Assigns a report to a member of its project (or an admin), or to nobody.
#[utoipa::path(
    post, path = "/api/v1/reports/{id}/assign", tag = "reports",
    params(("id" = i64, Path, example = 1, description = "The report's id.")),
    request_body = AssignRequest,
    responses((status = 200, description = "The report with its assignee.", body = Report))
)]
#[tracing::instrument(skip_all, fields(report_id = id))]
pub async fn assign(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
    ApiJson(req): ApiJson<AssignRequest>,
) -> ApiResult<ApiJson<Report>> {
    let report = reviewable(&state, &viewer, id).await?;
    let assignee = req.assignee.as_deref().map(str::trim).filter(|a| !a.is_empty());
    if let Some(name) = assignee {
        let project = &report.summary.project;
        let not_member =
            || ApiError::from(FieldError::new("assignee", format!("`{name}` is not a member of {project}")));
        let user = state.storage.user_by_name(name).await?.ok_or_else(not_member)?;
        if !user.admin && !state.storage.memberships(user.id).await?.iter().any(|m| &m.project == project) {
            return Err(not_member());
        }
    }
    state.storage.assign_report(id, assignee, &viewer.origin()).await?;
    reread(&state, &viewer, id).await
}

/// Adds a comment to a report's activity.
#[utoipa::path(
    post, path = "/api/v1/reports/{id}/comments", tag = "reports",
    params(("id" = i64, Path, example = 1, description = "The report's id.")),
    request_body = CommentRequest,
    responses((status = 200, description = "The report with the comment in its activity.", body = Report))
)]
#[tracing::instrument(skip_all, fields(report_id = id))]
pub async fn comment(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
    ApiJson(req): ApiJson<CommentRequest>,
) -> ApiResult<ApiJson<Report>> {
    req.validate()?;
    reviewable(&state, &viewer, id).await?;
    state.storage.comment_report(id, &req.text, &viewer.origin()).await?;
    reread(&state, &viewer, id).await
}

/// The life-cycle form the report page posts (`application/x-www-form-urlencoded`).
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
pub struct LifecycleForm {
    /// `status`, `route`, `assign` or `comment`.
    pub action: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub duplicate_of: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub assignee: String,
    #[serde(default)]
    pub text: String,
    /// For `route`: `human_first`, `agent_first` or `hypothesis` (the reason is `reason`).
    #[serde(default)]
    pub route: String,
}

/// The report page's life-cycle form (server-rendered in `lifecycle_html`,
/// so the dashboard's WebAssembly carries no form code): the change is made
/// as the JSON routes make it, then the browser goes back to the report, with
/// `?error=…` when the change was refused.
#[utoipa::path(
    post, path = "/reports/{id}/lifecycle", tag = "pages",
    params(("id" = i64, Path, example = 1, description = "The report's id.")),
    request_body(content = LifecycleForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 303, description = "Back to the report page (`?error=…` when refused)."))
)]
pub async fn lifecycle_form(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
    form: Result<axum::extract::Form<LifecycleForm>, axum::extract::rejection::FormRejection>,
) -> ApiResult<axum::response::Redirect> {
    use axum::response::Redirect;
    let back = |error: Option<String>| match error {
        None => Redirect::to(&format!("/reports/{id}")),
        Some(e) => {
            Redirect::to(&format!("/reports/{id}?{}", failpass_shared::api::query::to_query_string(&[("error", e)])))
        }
    };
    let axum::extract::Form(form) = match form {
        Ok(f) => f,
        Err(e) => return Ok(back(Some(format!("the form did not arrive whole: {}", e.body_text())))),
    };
    let opt = |v: &str| Some(v.trim().to_owned()).filter(|v| !v.is_empty());
    let state2 = State(state.clone());
    let done = match form.action.as_str() {
        "status" => {
            let req = SetStatusRequest {
                status: form.status.clone(),
                duplicate_of: opt(&form.duplicate_of),
                reason: opt(&form.reason),
            };
            set_status(state2, viewer, ApiPath(id), ApiJson(req)).await.map(|_| ())
        }
        "assign" => assign(state2, viewer, ApiPath(id), ApiJson(AssignRequest { assignee: opt(&form.assignee) }))
            .await
            .map(|_| ()),
        "comment" => {
            comment(state2, viewer, ApiPath(id), ApiJson(CommentRequest { text: form.text.clone() })).await.map(|_| ())
        }
        "route" => match form.route.parse::<failpass_shared::model::Route>() {
            Ok(route) => {
                let req = CorrectRouteRequest { route, reason: form.reason.clone() };
                correct_route(state2, viewer, ApiPath(id), ApiJson(req)).await.map(|_| ())
            }
            Err(e) => Err(ApiError::BadRequest(format!("route: {e}"))),
        },
        "confirm_route" => {
            let route = form.route.parse().ok();
            let req = failpass_shared::api::routing::ConfirmRouteRequest { route, reason: opt(&form.reason) };
            confirm_route(state2, viewer, ApiPath(id), ApiJson(req)).await.map(|_| ())
        }
        other => Err(ApiError::BadRequest(format!(
            "action: `{other}` is not one of status, route, confirm_route, assign, comment"
        ))),
    };
    match done {
        Ok(()) => Ok(back(None)),
        // Who may not change it is answered as the API answers.
        Err(e @ (ApiError::Unauthorized(_) | ApiError::Forbidden(_) | ApiError::NotFound(_))) => Err(e),
        Err(e) => Ok(back(Some(e.to_string()))),
    }
}

/// The report as the API serves it: its body also as sanitised HTML, and
/// its life cycle as the report page shows it (with the form for those who
/// may change it).
async fn with_html(state: &AppState, mut report: Report, viewer: &Viewer) -> ApiResult<Report> {
    report.body_html = crate::markdown::render(&report.body);
    let may_change = viewer.role_in(&report.summary.project).may(Action::Review);
    let releases = match state.storage.release_template(&report.summary.project).await? {
        Some(t) => Some((t.package, state.storage.report_versions(report.summary.id).await?)),
        None => None,
    };
    // Assignment picks from the project's members (those who may assign see them).
    let members: Vec<String> = if may_change {
        state.storage.project_members(&report.summary.project).await?.into_iter().map(|(n, _)| n).collect()
    } else {
        Vec::new()
    };
    report.lifecycle_html = lifecycle_html(&report, may_change, releases.as_ref(), &members);
    Ok(report)
}

/// Upstream state, resolution, assignee, the maintainers' form and the
/// activity timeline (newest first), escaped by maud.
fn lifecycle_html(
    report: &Report,
    may_change: bool,
    releases: Option<&(String, failpass_shared::api::releases::ReportVersions)>,
    members: &[String],
) -> String {
    let s = &report.summary;
    let words = |t: &str| t.replace('_', " ");
    let action = format!("/reports/{}/lifecycle", s.id);
    maud::html! {
        dl.lifecycle data-testid="lifecycle" {
            dt { "Status" } dd data-testid="lifecycle-status" { (words(s.status.as_str())) }
            @if let Some(r) = &report.resolution {
                dt { "Resolution" }
                dd {
                    (words(r.resolution.as_str())) " (" (r.by) ")"
                    @if let Some(d) = &r.duplicate_of { " of " a href=(format!("/reports/{}", d.id)) { "#" (d.external_id) } }
                }
            }
            dt { "Upstream" }
            dd data-testid="lifecycle-upstream" {
                @match &report.upstream {
                    None => "not known",
                    Some(u) => {
                        (u.state.as_str())
                        @if let Some(reason) = &u.reason { " (" (words(reason)) ")" }
                        @if u.locked { ", locked" }
                        @if let Some(kind) = &u.kind { ", type " (kind) }
                    }
                }
            }
            dt { "Assignee" } dd data-testid="lifecycle-assignee" { (s.assignee.as_deref().unwrap_or("nobody")) }
            // Graded on the report's own releases: which, and the page to correct them and bisect.
            @if let Some((package, v)) = releases {
                dt { "Releases" }
                dd data-testid="lifecycle-releases" {
                    "buggy " (v.buggy.as_deref().map(|b| format!("{package} {b}")).unwrap_or_else(|| "not named".into()))
                    ", fixed " (v.fixed.as_deref().map(|f| format!("{package} {f}")).unwrap_or_else(|| "not set".into()))
                    @if let Some(b) = &v.bisect { "; bisect: " (b.summary) }
                    " · " a href=(format!("/reports/{}/releases", s.id)) target="_self" { "releases and bisect" }
                }
            }
            // The report's attempts as a download (what the caller may read).
            dt { "Attempts" }
            dd data-testid="attempt-exports" {
                @for (format, words) in [("csv", "CSV"), ("json", "JSON"), ("ndjson", "NDJSON")] {
                    a href=(format!("/api/v1/export/attempts?report_id={}&format={format}", s.id)) download target="_self" { (words) } " "
                }
            }
        }
        @if may_change && !report.oracle.as_ref().is_some_and(|o| o.is_deterministic()) {
            p data-testid="write-oracle" {
                "No deterministic oracle yet: " a href=(format!("/reports/{}/oracle", s.id)) target="_self" { "write one" }
                " (failpass validates it on buggy and fixed, then routes the report again)."
            }
        }
        @if may_change {
            form.review method="post" action=(action) data-testid="status-form" {
                input type="hidden" name="action" value="status";
                label.field { span { "Status" }
                    select name="status" data-testid="status-choice" {
                        option value="closed" { "Close" }
                        option value="duplicate" { "Duplicate" }
                        option value="wont_fix" { "Won't fix" }
                        option value="not_a_bug" { "Not a bug" }
                        option value="reopen" { "Reopen" }
                    }
                }
                label.field { span { "Duplicate of #" } input name="duplicate_of" size="8" data-testid="duplicate-of"; }
                label.field.field-grow { span { "Why" } input name="reason" placeholder="optional" data-testid="status-reason"; }
                button type="submit" data-testid="set-status" { "Set status" }
            }
            // A correction offers only the other routes; "route is right"
            // confirms the one it has. The browser keeps what was chosen and
            // typed: it checks the reason as the server does before sending.
            form.review method="post" action=(action) data-testid="route-form" {
                input type="hidden" name="action" value="route";
                label.field { span { "Route" }
                    select name="route" data-testid="route-choice" {
                        @for (value, label) in [("human_first", "Human first"), ("agent_first", "Agent first"), ("hypothesis", "Hypothesis")] {
                            @if s.route.as_str() != value { option value=(value) { (label) } }
                        }
                    }
                }
                label.field.field-grow { span { "Why" } input name="reason" placeholder="required" required maxlength="2000" pattern=".*\\S.*" title="say why, in 1 to 2000 characters" data-testid="route-reason"; }
                button type="submit" data-testid="set-route" { "Correct route" }
            }
            form.review method="post" action=(action) data-testid="confirm-route-form" {
                input type="hidden" name="action" value="confirm_route";
                input type="hidden" name="route" value=(s.route.as_str());
                span { "Routed " (words(s.route.as_str())) }
                " "
                button type="submit" data-testid="confirm-route" { "Route is right" }
                " " a href=(format!("/routing/{}", s.project)) target="_self" { "routing health" }
            }
            form.review method="post" action=(action) {
                input type="hidden" name="action" value="assign";
                label.field { span { "Assignee" }
                    input name="assignee" value=(s.assignee.as_deref().unwrap_or("")) placeholder="member, or empty"
                        list="project-members" autocomplete="off" data-testid="assignee";
                }
                datalist #project-members data-testid="member-choices" { @for m in members { option value=(m) {} } }
                button type="submit" data-testid="assign" { "Assign" }
            }
            form.review method="post" action=(action) {
                input type="hidden" name="action" value="comment";
                label.field.field-grow { span { "Comment" } textarea name="text" rows="2" required data-testid="comment" {} }
                button type="submit" data-testid="post-comment" { "Comment" }
            }
        }
        ol.activity data-testid="activity" reversed {
            @for a in report.activity.iter().rev() {
                li.(format!("activity-{}", a.kind)) {
                    time datetime=(a.at.to_rfc3339()) { (a.at.format("%Y-%m-%d %H:%M")) }
                    " " b { (a.actor) } " "
                    span.via { "via " (a.via) } ": "
                    // A comment reads as the report's body does: sanitised markdown.
                    @if a.kind == "comment" {
                        div.comment-body data-testid="comment-body" { (maud::PreEscaped(crate::markdown::render(&a.text))) }
                    } @else { (a.text) }
                }
            }
        }
    }
    .into_string()
}
