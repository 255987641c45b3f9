//! The only HTTP caller. Every request goes to the same origin's `/api/v1`.

use failpass_shared::api::Page;
use failpass_shared::api::attempts::{Attempt, AttemptListQuery};
use failpass_shared::api::figures::{FiguresQuery, FiguresResponse};
use failpass_shared::api::projects::Project;
use failpass_shared::api::query::to_query_string;
use failpass_shared::api::reports::{Report, ReportListQuery, ReportSummary};
use failpass_shared::error::ApiErrorBody;
use serde::de::DeserializeOwned;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach the failpass server ({0})")]
    Network(String),
    #[error("{message}")]
    Api { status: u16, code: String, message: String },
    #[error("unexpected response from the server: {0}")]
    Decode(String),
    #[error("{0}")]
    Input(String),
}

async fn get_text(url: &str) -> Result<String, ClientError> {
    let resp = gloo_net::http::Request::get(url).send().await.map_err(|e| ClientError::Network(e.to_string()))?;
    read_text(resp, url).await
}

/// JSON text as `T`: parsed by the browser's `JSON.parse`, then read by
/// serde-wasm-bindgen, so the bundle carries no JSON parser of its own and
/// only a map visitor per type (serde_json's instantiates a sequence one too).
pub fn decode<T: DeserializeOwned>(text: &str) -> Result<T, ClientError> {
    let value = js_sys::JSON::parse(text).map_err(|_| ClientError::Decode("the body is not JSON".into()))?;
    serde_wasm_bindgen::from_value(value).map_err(|e| ClientError::Decode(e.to_string()))
}

async fn get_json<T: DeserializeOwned>(url: &str) -> Result<T, ClientError> {
    decode(&get_text(url).await?)
}

/// A 2xx answer's body read twice, as `A` and as `B`: for the API's
/// flattened shapes (a report is its summary's fields plus its own), which
/// serde would otherwise buffer through a second, generic deserializer the
/// bundle pays for.
async fn get_json_two<A: DeserializeOwned, B: DeserializeOwned>(url: &str) -> Result<(A, B), ClientError> {
    let text = get_text(url).await?;
    Ok((decode(&text)?, decode(&text)?))
}

/// The body of a 2xx answer, or the API's `{code, message}` error.
async fn read_json<T: DeserializeOwned>(resp: gloo_net::http::Response, url: &str) -> Result<T, ClientError> {
    decode(&read_text(resp, url).await?)
}

/// The text of a 2xx answer, or the API's `{code, message}` error.
async fn read_text(resp: gloo_net::http::Response, url: &str) -> Result<String, ClientError> {
    if !resp.ok() {
        let status = resp.status();
        let body = resp.text().await.ok();
        return Err(match body.as_deref().map(decode::<ApiErrorBody>) {
            Some(Ok(body)) => ClientError::Api { status, code: body.code, message: body.message },
            _ => ClientError::Api { status, code: "http".into(), message: format!("HTTP {status} from {url}") },
        });
    }
    resp.text().await.map_err(|e| ClientError::Network(e.to_string()))
}

async fn post_json<B: serde::Serialize, T: DeserializeOwned>(url: &str, body: &B) -> Result<T, ClientError> {
    let resp = gloo_net::http::Request::post(url)
        .json(body)
        .map_err(|e| ClientError::Input(e.to_string()))?
        .send()
        .await
        .map_err(|e| ClientError::Network(e.to_string()))?;
    read_json(resp, url).await
}

/// A chart's SVG, drawn by the server (`src` from `components::figures::chart_src`).
pub async fn chart(src: String) -> Result<String, ClientError> {
    get_text(&src).await
}

/// Who the dashboard's user is and what they may do.
pub async fn me() -> Result<failpass_shared::api::session::Me, ClientError> {
    get_json("/api/v1/session").await
}

/// An attempt's runs, beside its own fields in `GET /api/v1/attempts/{id}`.
#[derive(serde::Deserialize)]
struct Runs {
    runs: Vec<failpass_shared::api::attempts::Run>,
}

pub async fn attempt(id: i64) -> Result<failpass_shared::api::attempts::AttemptDetail, ClientError> {
    let (attempt, Runs { runs }) = get_json_two(&format!("/api/v1/attempts/{id}")).await?;
    Ok(failpass_shared::api::attempts::AttemptDetail { attempt, runs })
}

/// An attempt's trajectory as the browser parsed it (404 when it has
/// none); `components::trajectory` reads its fields row by row.
pub async fn trajectory(id: i64) -> Result<wasm_bindgen::JsValue, ClientError> {
    let text = get_text(&format!("/api/v1/attempts/{id}/trajectory")).await?;
    js_sys::JSON::parse(&text).map_err(|_| ClientError::Decode("the trajectory is not JSON".into()))
}

pub async fn rerun(
    req: &failpass_shared::api::jobs::RerunRequest,
) -> Result<failpass_shared::api::jobs::RerunResponse, ClientError> {
    post_json("/api/v1/reruns", req).await
}

pub async fn review(
    id: i64,
    req: &failpass_shared::api::attempts::ReviewRequest,
) -> Result<failpass_shared::api::attempts::Attempt, ClientError> {
    post_json(&format!("/api/v1/attempts/{id}/review"), req).await
}

pub async fn refine(report_id: i64) -> Result<failpass_shared::api::jobs::Job, ClientError> {
    post_json("/api/v1/refine", &failpass_shared::api::jobs::RefineRequest { report_id }).await
}

pub async fn environments(project: &str) -> Result<Vec<failpass_shared::api::jobs::Environment>, ClientError> {
    get_json(&format!("/api/v1/environments?{}", to_query_string(&[("project", project.to_owned())]))).await
}

pub async fn projects() -> Result<Vec<Project>, ClientError> {
    get_json("/api/v1/projects").await
}

pub async fn agents() -> Result<Vec<failpass_shared::api::import::AgentFigures>, ClientError> {
    get_json("/api/v1/agents").await
}

pub async fn facets() -> Result<failpass_shared::api::figures::Facets, ClientError> {
    get_json("/api/v1/facets").await
}

pub async fn throughput(
    filter: &failpass_shared::api::reports::ReportFilter,
) -> Result<failpass_shared::api::figures::Throughput, ClientError> {
    get_json(&format!("/api/v1/throughput?{}", to_query_string(&filter.pairs()))).await
}

/// The Overview's figures as the server renders them (escaped there): the
/// period's panel and the cards.
#[derive(Clone, serde::Deserialize)]
pub struct Glance {
    pub html: String,
    pub cards_html: String,
}

/// The Overview's glance for the query's reports over its window (this
/// month by default), and the cards of the same filters.
pub async fn glance(query: &FiguresQuery) -> Result<Glance, ClientError> {
    let mut pairs = query.pairs();
    pairs.retain(|(k, _)| *k != "group_by");
    get_json(&format!("/api/v1/glance?{}", to_query_string(&pairs))).await
}

pub async fn distributions(
    query: &failpass_shared::api::figures::DistributionQuery,
) -> Result<failpass_shared::api::figures::DistributionResponse, ClientError> {
    get_json(&format!("/api/v1/distributions?{}", to_query_string(&query.pairs()))).await
}

pub async fn figures(query: &FiguresQuery) -> Result<FiguresResponse, ClientError> {
    get_json(&format!("/api/v1/figures?{}", to_query_string(&query.pairs()))).await
}

/// One page of the queue as the server renders it, with the total.
pub async fn report_table(query: &ReportListQuery) -> Result<failpass_shared::api::reports::WorkList, ClientError> {
    get_json(&format!("/api/v1/reports/table?{}", to_query_string(&query.pairs()))).await
}

/// A report's own fields, beside its summary's in `GET /api/v1/reports/{id}`.
#[derive(serde::Deserialize)]
struct ReportOwn {
    body: String,
    #[serde(default)]
    body_html: String,
    reporter: Option<String>,
    environment: Option<String>,
    paths: Vec<String>,
    features: failpass_shared::api::reports::ReportFeatures,
    oracle: Option<failpass_shared::api::reports::Oracle>,
    explanation: Vec<failpass_shared::api::reports::RuleOutcome>,
    #[serde(default)]
    route_correction: Option<failpass_shared::api::reports::RouteCorrection>,
    #[serde(default)]
    lifecycle_html: String,
}

pub async fn report(id: i64) -> Result<Report, ClientError> {
    let (summary, own): (ReportSummary, ReportOwn) = get_json_two(&format!("/api/v1/reports/{id}")).await?;
    Ok(Report {
        summary,
        body: own.body,
        body_html: own.body_html,
        reporter: own.reporter,
        environment: own.environment,
        paths: own.paths,
        features: own.features,
        oracle: own.oracle,
        explanation: own.explanation,
        route_correction: own.route_correction,
        // Not read here: the page shows the server's rendering of the activity.
        upstream: None,
        resolution: None,
        activity: Vec::new(),
        lifecycle_html: own.lifecycle_html,
    })
}

pub async fn attempts(query: &AttemptListQuery) -> Result<Page<Attempt>, ClientError> {
    let mut pairs = Vec::new();
    if let Some(id) = query.report_id {
        pairs.push(("report_id", id.to_string()));
    }
    pairs.push(("limit", query.limit.to_string()));
    get_json(&format!("/api/v1/attempts?{}", to_query_string(&pairs))).await
}
