//! `/api/v1/releases` (how a project builds its releases, and the index's
//! list of them) and a report's versions and bisect.

use axum::extract::State;
use axum::http::StatusCode;
use failpass_shared::api::jobs::Job;
use failpass_shared::api::query::FieldError;
use failpass_shared::api::releases::{
    BisectRequest, ProjectReleases, ReportVersions, SetReleaseTemplate, SetReportVersions,
};

use super::AppState;
use crate::auth::{Action, Viewer};
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult, QueryPairs};

/// `GET /api/v1/releases?project=owner/name`: the template and the index's releases.
#[utoipa::path(
    get, path = "/api/v1/releases", tag = "releases",
    params(("project" = String, Query, example = "pandas-dev/pandas", description = "The project, `owner/name`.")),
    responses((status = 200, description = "The release template and the releases the index lists, newest first.", body = ProjectReleases))
)]
pub async fn list_releases(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<ProjectReleases>> {
    let project = crate::summaries::project_param(query.iter())?
        .ok_or_else(|| ApiError::BadRequest("project: required (owner/name)".into()))?;
    crate::summaries::visible_project(state.storage.as_ref(), &viewer.scope(), &project).await?;
    let template = state.storage.release_template(&project).await?;
    let Some(t) = template.clone() else {
        return Ok(ApiJson(ProjectReleases {
            template,
            releases: Vec::new(),
            note: Some(format!(
                "project {project} has no release template; an admin sets one with POST /api/v1/releases"
            )),
        }));
    };
    match state.index.releases(&t.package, !t.setup.is_empty()).await {
        Ok(l) => Ok(ApiJson(ProjectReleases {
            template,
            releases: l.releases.iter().map(|r| r.info.clone()).collect(),
            note: l.stale.clone(),
        })),
        Err(e) => Ok(ApiJson(ProjectReleases { template, releases: Vec::new(), note: Some(e.to_string()) })),
    }
}

/// `POST /api/v1/releases`: sets how a project builds any of its releases.
#[utoipa::path(
    post, path = "/api/v1/releases", tag = "releases",
    request_body = SetReleaseTemplate,
    responses((status = 200, description = "Stored; the project's releases as the index lists them.", body = ProjectReleases),
              (status = 400, description = "A field is wrong (named in the message).", body = failpass_shared::error::ApiErrorBody))
)]
pub async fn set_template(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(req): ApiJson<SetReleaseTemplate>,
) -> ApiResult<ApiJson<ProjectReleases>> {
    if state.storage.get_project(&req.project, &viewer.scope()).await?.is_none() {
        return Err(ApiError::BadRequest(format!("project: `{}` does not exist", req.project)));
    }
    viewer.require(Action::ManageEnvironments, &req.project)?;
    if let Some(t) = &req.template {
        crate::releases::validate_template(t)?;
    }
    state.storage.set_release_template(&req.project, req.template.as_ref()).await?;
    tracing::info!(project = %req.project, by = %viewer.name(), "release template stored");
    let query = QueryPairs(vec![("project".into(), req.project.clone())]);
    list_releases(State(state), viewer, query).await
}

/// The report `id` if `viewer` may see it.
pub(super) async fn visible(
    state: &AppState,
    viewer: &Viewer,
    id: i64,
) -> ApiResult<failpass_shared::api::reports::Report> {
    state
        .storage
        .get_report(id, &viewer.scope())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("report {id} not found")))
}

/// `GET /api/v1/reports/{id}/versions`: the releases a report is graded on, where each came from, and its bisect.
#[utoipa::path(
    get, path = "/api/v1/reports/{id}/versions", tag = "releases",
    params(("id" = i64, Path, example = 1, description = "The report's id.")),
    responses((status = 200, description = "Its buggy and fixed releases, their sources and the newest bisect.", body = ReportVersions))
)]
pub async fn get_versions(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<ApiJson<ReportVersions>> {
    visible(&state, &viewer, id).await?;
    Ok(ApiJson(state.storage.report_versions(id).await?))
}

/// `POST /api/v1/reports/{id}/versions`: a maintainer sets the buggy or fixed release.
#[utoipa::path(
    post, path = "/api/v1/reports/{id}/versions", tag = "releases",
    params(("id" = i64, Path, example = 1, description = "The report's id.")),
    request_body = SetReportVersions,
    responses((status = 200, description = "The report's versions as stored.", body = ReportVersions),
              (status = 400, description = "A version is not a release of the project's package on the index.", body = failpass_shared::error::ApiErrorBody))
)]
pub async fn set_versions(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
    ApiJson(req): ApiJson<SetReportVersions>,
) -> ApiResult<ApiJson<ReportVersions>> {
    let report = visible(&state, &viewer, id).await?;
    viewer.require(Action::Review, &report.summary.project)?;
    let template = state.storage.release_template(&report.summary.project).await?.ok_or_else(|| {
        ApiError::BadRequest(format!(
            "project {} has no release template: versions cannot be checked",
            report.summary.project
        ))
    })?;
    let listing = state
        .index
        .releases(&template.package, !template.setup.is_empty())
        .await
        .map_err(|e| ApiError::Unavailable(format!("the package index: {e}")))?;
    let mut v = state.storage.report_versions(id).await?;
    let by = format!("set by {}", viewer.name());
    for (field, asked, slot, source) in [
        ("buggy", &req.buggy, &mut v.buggy, &mut v.buggy_source),
        ("fixed", &req.fixed, &mut v.fixed, &mut v.fixed_source),
    ] {
        match asked.as_deref().map(str::trim) {
            None => {}
            Some("") => (*slot, *source) = (None, None),
            Some(version) => {
                let r = crate::releases::resolve(&template, &listing, version, &state.index.url)
                    .map_err(|why| ApiError::from(FieldError::new(field, why)))?;
                (*slot, *source) = (Some(r.version), Some(by.clone()));
            }
        }
    }
    state.storage.set_report_versions(id, &v).await?;
    tracing::info!(report = id, buggy = ?v.buggy, fixed = ?v.fixed, by = %viewer.name(), "report versions set");
    Ok(ApiJson(v))
}

/// `POST /api/v1/reports/{id}/bisect`: runs a candidate on the releases
/// after the report's buggy one to find the first that passes (a job).
#[utoipa::path(
    post, path = "/api/v1/reports/{id}/bisect", tag = "releases",
    params(("id" = i64, Path, example = 1, description = "The report's id.")),
    request_body = BisectRequest,
    responses((status = 202, description = "The bisect job (or the one already waiting).", body = Job),
              (status = 400, description = "Nothing to bisect: no buggy release, no template, no candidate.", body = failpass_shared::error::ApiErrorBody))
)]
pub async fn bisect(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
    ApiJson(req): ApiJson<BisectRequest>,
) -> ApiResult<(StatusCode, ApiJson<Job>)> {
    let report = visible(&state, &viewer, id).await?;
    viewer.require(Action::Review, &report.summary.project)?;
    if state.storage.release_template(&report.summary.project).await?.is_none() {
        return Err(ApiError::BadRequest(format!(
            "project {} has no release template to bisect over",
            report.summary.project
        )));
    }
    if state.storage.report_versions(id).await?.buggy.is_none() {
        return Err(ApiError::from(FieldError::new("buggy", "the report names no buggy release: set one first")));
    }
    let attempt_id = match req.attempt_id {
        Some(a) => {
            let d = state.storage.get_attempt(a, &viewer.scope()).await?;
            match d {
                Some(d) if d.attempt.report_id == id && d.attempt.candidate.is_some() => a,
                Some(_) => {
                    return Err(ApiError::from(FieldError::new(
                        "attempt_id",
                        format!("attempt {a} is not a candidate for report {id}"),
                    )));
                }
                None => return Err(ApiError::NotFound(format!("attempt {a} not found"))),
            }
        }
        None => crate::runner::bisect::default_attempt(state.storage.as_ref(), &viewer.scope(), id).await?.ok_or_else(
            || {
                ApiError::from(FieldError::new(
                    "attempt_id",
                    format!("report {id} has no attempt with a candidate to run"),
                ))
            },
        )?,
    };
    let (job, _) = state.storage.enqueue(&crate::db::queue::NewJob::bisect(id, attempt_id), chrono::Utc::now()).await?;
    tracing::info!(report = id, attempt = attempt_id, job = job.id, by = %viewer.name(), "bisect queued");
    Ok((StatusCode::ACCEPTED, ApiJson(job)))
}
