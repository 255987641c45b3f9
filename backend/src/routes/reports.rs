use axum::extract::State;
use axum::http::StatusCode;
use failpass_shared::api::Page;
use failpass_shared::api::reports::{
    CorrectRouteRequest, CreateReportRequest, Report, ReportListQuery, ReportSummary, RouteCorrection,
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
    let report = state.storage.create_report(&NewReport { request: req, decision }).await?;
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
    state.storage.correct_route(id, &correction).await?;
    state.models.forget(&report.summary.project);
    let report = state.storage.get_report(id, &scope).await?.ok_or_else(not_found)?;
    Ok(ApiJson(with_html(report)))
}

/// The report as the API serves it: its body also as sanitised HTML.
fn with_html(mut report: Report) -> Report {
    report.body_html = crate::markdown::render(&report.body);
    report
}
