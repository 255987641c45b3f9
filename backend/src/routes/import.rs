use axum::body::Body;
use axum::extract::State;
use failpass_shared::api::import::ImportSummary;
use futures_util::TryStreamExt;
use tokio::io::BufReader;
use tokio_util::io::StreamReader;

use super::AppState;
use crate::auth::Viewer;
use crate::db::StorageError;
use crate::error::{ApiError, ApiJson, ApiResult, QueryPairs};
use crate::import::{Format, ImportOptions, Importer, run};

/// `POST /api/v1/import?format=ndjson`: the body is streamed record by record;
/// the answer is the closing summary (rejected records listed with their line).
#[utoipa::path(
    post, path = "/api/v1/import", tag = "import",
    params(("format" = Option<String>, Query, description = "`ndjson` (default), `swebench-instances`, `swebench-leaderboard`, `github-issues` or `junit` (`csv` and `json` need a mapping file: command line only)."),
           ("project" = Option<String>, Query, example = "pytorch/pytorch", description = "JUnit: the project the runs belong to (`owner/name`)."),
           ("attempt" = Option<i64>, Query, description = "JUnit: the attempt the runs belong to."),
           ("environment" = Option<failpass_shared::model::EnvironmentRole>, Query, description = "JUnit: which environment the runs ran in.")),
    request_body(description = "NDJSON records (one `ImportRecord` per line), or a JUnit XML report.",
        content((failpass_shared::api::import::ImportRecord = "application/x-ndjson"), (String = "application/xml"))),
    responses((status = 200, description = "What was stored and what was rejected, line by line.", body = ImportSummary))
)]
#[tracing::instrument(skip_all)]
pub async fn import(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
    body: Body,
) -> ApiResult<ApiJson<ImportSummary>> {
    let mut format = Format::Ndjson;
    let mut options = ImportOptions::default();
    for (k, v) in query.iter() {
        match k {
            "format" => format = v.parse().map_err(|e: String| ApiError::BadRequest(format!("format: {e}")))?,
            "project" => {
                failpass_shared::api::projects::validate_slug(v)
                    .map_err(|e| ApiError::BadRequest(format!("project: {}", e.message)))?;
                options.project = Some(v.to_owned());
            }
            "attempt" => {
                options.attempt =
                    Some(v.parse().map_err(|_| ApiError::BadRequest(format!("attempt: `{v}` is not an attempt id")))?)
            }
            "environment" => {
                options.environment = Some(v.parse().map_err(|e: failpass_shared::error::ParseEnumError| {
                    ApiError::BadRequest(format!("environment: {e}"))
                })?)
            }
            other => {
                return Err(ApiError::BadRequest(format!(
                    "{other}: unknown query parameter `{other}`; known: format, project, attempt, environment"
                )));
            }
        }
    }
    if matches!(format, Format::Csv | Format::Json) {
        return Err(ApiError::BadRequest(
            "format: csv and json read their columns through a mapping file, which only the command line takes \
             (`failpass import --format csv --mapping FILE.toml`); over HTTP, send NDJSON"
                .into(),
        ));
    }
    let stream = body.into_data_stream().map_err(std::io::Error::other);
    let input = BufReader::with_capacity(1 << 20, StreamReader::new(stream));
    let mut importer = Importer::new(state.storage.as_ref(), &state.routing)
        .in_server()
        .as_viewer(viewer)
        .private_by_default(state.security.private_by_default);
    if let Err(e) = run(&mut importer, format, input, &options).await {
        return Err(match e.downcast::<StorageError>() {
            Ok(storage) => storage.into(),
            Err(other) => ApiError::BadRequest(format!("body: {other:#}")),
        });
    }
    Ok(ApiJson(importer.finish().await?))
}
