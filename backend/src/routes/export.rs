//! `GET /api/v1/export/{reports,attempts,figures}`: a list or a figure
//! table, with the page's filters, as CSV, JSON or NDJSON, streamed as it is
//! read.

use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::Response;
use failpass_shared::api::attempts::AttemptListQuery;
use failpass_shared::api::reports::ReportListQuery;

use super::AppState;
use crate::auth::Viewer;
use crate::error::{ApiError, ApiResult, QueryPairs};
use crate::export::ExportFormat;

/// `format` taken out of the query; the rest are the list's filters.
fn split_format(query: &QueryPairs) -> ApiResult<(ExportFormat, Vec<(&str, &str)>)> {
    let mut format = ExportFormat::Csv;
    let mut rest = Vec::new();
    for (k, v) in query.iter() {
        if k == "format" {
            format = ExportFormat::parse(v)?;
        } else {
            rest.push((k, v));
        }
    }
    Ok((format, rest))
}

/// Streams what `write` writes as the response body, named `name.EXT` for download.
fn stream<F, Fut>(format: ExportFormat, name: &str, write: F) -> ApiResult<Response>
where
    F: FnOnce(tokio::io::DuplexStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<u64, crate::export::ExportError>> + Send + 'static,
{
    let (writer, reader) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        // A failure half-way ends the body early; it is logged.
        if let Err(e) = write(writer).await {
            tracing::warn!(error = %e, "export stopped");
        }
    });
    Response::builder()
        .header(header::CONTENT_TYPE, format.content_type())
        .header(header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}.{}\"", format.extension()))
        .body(Body::from_stream(tokio_util::io::ReaderStream::new(reader)))
        .map_err(|e| ApiError::Internal(e.into()))
}

/// Every report matching the reports list's filters (`project`, `route`,
/// `status`, `label`, `q`, dates, `sort`, `order`…), every page. CSV has one
/// row per report; JSON is the list's objects; NDJSON is failpass's import
/// format (each project's record first), so an export imports back.
#[utoipa::path(
    get, path = "/api/v1/export/reports", tag = "export",
    params(("format" = Option<String>, Query, example = "csv", description = "`csv` (the default), `json` or `ndjson`."), ReportListQuery),
    responses((status = 200, description = "The reports, as a download.", content_type = "text/csv", body = String))
)]
pub async fn reports(State(state): State<AppState>, viewer: Viewer, query: QueryPairs) -> ApiResult<Response> {
    let (format, rest) = split_format(&query)?;
    let mut q = ReportListQuery::from_pairs(rest)?;
    super::reports::mine(&state, &viewer, &mut q).await?;
    let scope = viewer.scope();
    crate::summaries::known_project(state.storage.as_ref(), &scope, q.filter.project.as_deref()).await?;
    stream(format, "failpass-reports", move |mut w| async move {
        crate::export::reports(state.storage.as_ref(), &q, &scope, format, &mut w).await
    })
}

/// Every attempt matching the attempts list's filters (`project`,
/// `report_id`, `agent`, `model`, `verdict`, `goal`), every page. NDJSON
/// names each attempt's report by project and number, as the import reads it.
#[utoipa::path(
    get, path = "/api/v1/export/attempts", tag = "export",
    params(("format" = Option<String>, Query, example = "csv", description = "`csv` (the default), `json` or `ndjson`."), AttemptListQuery),
    responses((status = 200, description = "The attempts, as a download.", content_type = "text/csv", body = String))
)]
pub async fn attempts(State(state): State<AppState>, viewer: Viewer, query: QueryPairs) -> ApiResult<Response> {
    let (format, rest) = split_format(&query)?;
    let q = AttemptListQuery::from_pairs(rest)?;
    let scope = viewer.scope();
    crate::summaries::known_project(state.storage.as_ref(), &scope, q.project.as_deref()).await?;
    stream(format, "failpass-attempts", move |mut w| async move {
        crate::export::attempts(state.storage.as_ref(), &q, &scope, format, &mut w).await
    })
}

/// A figure table: the rows `GET /api/v1/figures` gives for the same
/// parameters (`group_by`, filters), a column per figure in CSV.
#[utoipa::path(
    get, path = "/api/v1/export/figures", tag = "export",
    params(("format" = Option<String>, Query, example = "csv", description = "`csv` (the default), `json` or `ndjson`."), failpass_shared::api::figures::FiguresQuery),
    responses((status = 200, description = "The figure rows, as a download.", content_type = "text/csv", body = String))
)]
pub async fn figures(State(state): State<AppState>, viewer: Viewer, query: QueryPairs) -> ApiResult<Response> {
    let (format, rest) = split_format(&query)?;
    let q = failpass_shared::api::figures::FiguresQuery::from_pairs(rest)?;
    let rows = crate::summaries::figures(state.storage.as_ref(), &viewer.scope(), q).await?.rows;
    stream(format, "failpass-figures", move |mut w| async move { crate::export::table(&rows, format, &mut w).await })
}

/// The tables an Oracles page shows, by `table`.
pub const ORACLE_TABLES: &str = "kinds, sources, causes, authoring";

/// One of the Oracles page's tables for `project` (every readable project
/// without): oracle `kinds`, deterministic oracle `sources`, failure
/// `causes`, or `authoring` (oracles written in the dashboard, by category
/// and route).
#[utoipa::path(
    get, path = "/api/v1/export/oracles", tag = "export", operation_id = "export_oracles",
    params(("table" = String, Query, example = "kinds", description = "`kinds`, `sources`, `causes` or `authoring`."),
           ("format" = Option<String>, Query, example = "csv", description = "`csv` (the default), `json` or `ndjson`."),
           ("project" = Option<String>, Query, example = "pytorch/pytorch", description = "Only this project, `owner/name`.")),
    responses((status = 200, description = "The table, as a download.", content_type = "text/csv", body = String))
)]
pub async fn oracles(State(state): State<AppState>, viewer: Viewer, query: QueryPairs) -> ApiResult<Response> {
    let (format, rest) = split_format(&query)?;
    let mut table = None;
    let mut pairs = Vec::new();
    for (k, v) in rest {
        if k == "table" {
            table = Some(v.to_owned());
        } else {
            pairs.push((k, v));
        }
    }
    let table = table.ok_or_else(|| ApiError::BadRequest(format!("table: which table? one of {ORACLE_TABLES}")))?;
    let scope = viewer.scope();
    let project = crate::summaries::project_param(pairs.iter().copied())?;
    let summary = crate::summaries::oracle_summary(state.storage.as_ref(), &scope, pairs.iter().copied()).await?;
    let rows: Vec<serde_json::Value> = match table.as_str() {
        "kinds" => summary.by_kind.iter().map(serde_json::to_value).collect::<Result<_, _>>(),
        "sources" => summary.by_source.iter().map(serde_json::to_value).collect::<Result<_, _>>(),
        "causes" => summary.failure_causes.iter().map(serde_json::to_value).collect::<Result<_, _>>(),
        "authoring" => state
            .storage
            .authoring_rows(project.as_deref(), &scope)
            .await?
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>(),
        other => return Err(ApiError::BadRequest(format!("table: `{other}` is not one of {ORACLE_TABLES}"))),
    }
    .map_err(|e| ApiError::Internal(e.into()))?;
    let name = format!("failpass-oracle-{table}");
    stream(format, &name, move |mut w| async move { crate::export::table(&rows, format, &mut w).await })
}

/// The weekly throughput (`GET /api/v1/throughput`'s weeks: filed, reached
/// a final state, reproduced) for the report filters, every week.
#[utoipa::path(
    get, path = "/api/v1/export/throughput", tag = "export",
    params(("format" = Option<String>, Query, example = "csv", description = "`csv` (the default), `json` or `ndjson`."), failpass_shared::api::reports::ReportFilter),
    responses((status = 200, description = "The weeks, as a download.", content_type = "text/csv", body = String))
)]
pub async fn throughput(State(state): State<AppState>, viewer: Viewer, query: QueryPairs) -> ApiResult<Response> {
    let (format, rest) = split_format(&query)?;
    let flow = crate::summaries::throughput_of(state.storage.as_ref(), &viewer.scope(), rest.into_iter()).await?;
    let weeks = flow.weeks;
    stream(
        format,
        "failpass-throughput",
        move |mut w| async move { crate::export::table(&weeks, format, &mut w).await },
    )
}
