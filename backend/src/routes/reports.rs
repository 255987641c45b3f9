use axum::extract::State;
use axum::http::StatusCode;
use failpass_shared::api::Page;
use failpass_shared::api::query::FieldError;
use failpass_shared::api::reports::{
    AssignRequest, CommentRequest, CorrectRouteRequest, CreateReportRequest, Report, ReportListQuery, ReportSummary,
    RouteCorrection, SetStatusRequest,
};

use super::AppState;
use crate::auth::{Action, Viewer};
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
    let query = ReportListQuery::from_pairs(query.iter())?;
    Ok(ApiJson(state.storage.list_reports(&query, &viewer.scope()).await?))
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
    Ok((StatusCode::CREATED, ApiJson(with_html(report))))
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
    state
        .storage
        .get_report(id, &viewer.scope())
        .await?
        .map(|report| ApiJson(with_html(report)))
        .ok_or_else(|| ApiError::NotFound(format!("report {id} not found")))
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
    Ok(ApiJson(with_html(report)))
}

/// The report, when the viewer may review in its project.
async fn reviewable(state: &AppState, viewer: &Viewer, id: i64) -> ApiResult<Report> {
    let report = state
        .storage
        .get_report(id, &viewer.scope())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("report {id} not found")))?;
    viewer.require(Action::Review, &report.summary.project)?;
    Ok(report)
}

async fn reread(state: &AppState, viewer: &Viewer, id: i64) -> ApiResult<ApiJson<Report>> {
    let report = state.storage.get_report(id, &viewer.scope()).await?;
    Ok(ApiJson(with_html(report.ok_or_else(|| ApiError::NotFound(format!("report {id} not found")))?)))
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

/// The report as the API serves it: its body also as sanitised HTML.
fn with_html(mut report: Report) -> Report {
    report.body_html = crate::markdown::render(&report.body);
    report
}
