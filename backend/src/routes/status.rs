//! The public face: `/status` (the public projects), `/status/{owner}/{name}`
//! (a project's status page, plain HTML and CSS rendered here), its JSON and
//! trend chart, and badges. Public projects only; a private project answers
//! exactly as a missing one. Every answer carries an ETag, `Last-Modified`
//! and `Cache-Control`, and a matching `If-None-Match` gets a 304.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use failpass_shared::api::status::{
    BadgeFace, BadgeMetric, BadgeStyle, ProjectStatus, STATUS_TTL_SECONDS, ShieldsEndpoint, StatusIndex,
};
use failpass_shared::format;
use maud::{DOCTYPE, Markup, html};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::AppState;
use crate::error::{ApiError, ApiPath, ApiResult};

/// `GET /status`
#[utoipa::path(
    get, path = "/status", tag = "status",
    responses((status = 200, description = "The public projects, as a page.", content_type = "text/html", body = String),
              (status = 304, description = "Not modified."))
)]
pub async fn status_index(State(state): State<AppState>, headers: HeaderMap) -> Response {
    match state.status.index(&state.storage).await {
        Ok(snap) => {
            let body = index_page(&snap.index).into_string();
            conditional(&headers, "text/html; charset=utf-8", body, snap.updated_at)
        }
        Err(e) => error_page(&e),
    }
}

/// `GET /status/{owner}/{name}`
#[utoipa::path(
    get, path = "/status/{owner}/{name}", tag = "status",
    params(("owner" = String, Path, example = "pytorch", description = "The project's owner, as in `owner/name`."), ("name" = String, Path, example = "pytorch", description = "The project's name.")),
    responses((status = 200, description = "The project's status page.", content_type = "text/html", body = String),
              (status = 304, description = "Not modified."))
)]
pub async fn status_page(
    State(state): State<AppState>,
    ApiPath((owner, name)): ApiPath<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let slug = format!("{owner}/{name}");
    match state.status.project(&state.storage, &slug).await {
        Ok(snap) => {
            let base = base_url(&state, &headers);
            let body = project_page(&snap.status, snap.serial, &base).into_string();
            conditional(&headers, "text/html; charset=utf-8", body, snap.status.updated_at)
        }
        Err(e) => error_page(&e),
    }
}

/// `GET /api/v1/status/{owner}/{name}`: what the status page is built from.
#[utoipa::path(
    get, path = "/api/v1/status/{owner}/{name}", tag = "status",
    params(("owner" = String, Path, example = "pytorch", description = "The project's owner, as in `owner/name`."), ("name" = String, Path, example = "pytorch", description = "The project's name.")),
    responses((status = 200, description = "What the status page is built from.", body = failpass_shared::api::status::ProjectStatus),
              (status = 304, description = "Not modified since `If-None-Match` / `If-Modified-Since`."))
)]
pub async fn status_json(
    State(state): State<AppState>,
    ApiPath((owner, name)): ApiPath<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let snap = state.status.project(&state.storage, &format!("{owner}/{name}")).await?;
    let body = serde_json::to_string(&snap.status).map_err(|e| ApiError::Internal(e.into()))?;
    Ok(conditional(&headers, "application/json", body, snap.status.updated_at))
}

/// `GET /status/{owner}/{name}/trend.svg`: the page's chart and its Open Graph image.
#[utoipa::path(
    get, path = "/status/{owner}/{name}/trend.svg", tag = "status",
    params(("owner" = String, Path, example = "pytorch", description = "The project's owner, as in `owner/name`."), ("name" = String, Path, example = "pytorch", description = "The project's name."),
           ("v" = Option<u64>, Query, description = "The snapshot a status page was built from: its chart and badges ask for it, so they agree with the page (the current one when it is gone or absent).")),
    responses((status = 200, description = "The 90-day trend chart.", content_type = "image/svg+xml", body = String),
              (status = 304, description = "Not modified."))
)]
pub async fn status_trend(
    State(state): State<AppState>,
    ApiPath((owner, name)): ApiPath<(String, String)>,
    pin: Result<Query<Pin>, axum::extract::rejection::QueryRejection>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let snap = state.status.pinned(&state.storage, &format!("{owner}/{name}"), pinned(pin)?).await?;
    Ok(conditional(&headers, "image/svg+xml", snap.trend_svg.clone(), snap.status.updated_at))
}

/// `GET /status/{owner}/{name}/trend.png`: the trend as a PNG, the page's
/// Open Graph image (link previews take no SVG).
#[utoipa::path(
    get, path = "/status/{owner}/{name}/trend.png", tag = "status",
    params(("owner" = String, Path, example = "pytorch", description = "The project's owner, as in `owner/name`."), ("name" = String, Path, example = "pytorch", description = "The project's name."),
           ("v" = Option<u64>, Query, description = "The snapshot a status page was built from: its chart and badges ask for it, so they agree with the page (the current one when it is gone or absent).")),
    responses((status = 200, description = "The link preview, 1200×630 (the page's Open Graph image): the 90-day trend under the headline figures and their sample size.", content_type = "image/png", body = Vec<u8>),
              (status = 304, description = "Not modified."))
)]
pub async fn status_trend_png(
    State(state): State<AppState>,
    ApiPath((owner, name)): ApiPath<(String, String)>,
    pin: Result<Query<Pin>, axum::extract::rejection::QueryRejection>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let snap = state.status.pinned(&state.storage, &format!("{owner}/{name}"), pinned(pin)?).await?;
    let updated = snap.status.updated_at;
    // Drawn once per snapshot, off the request threads.
    let png = tokio::task::spawn_blocking(move || snap.trend_png().map(<[u8]>::to_vec))
        .await
        .map_err(|e| ApiError::Internal(e.into()))?
        .map_err(|e| ApiError::Internal(anyhow::anyhow!("the trend could not be drawn as PNG: {e}")))?;
    Ok(conditional(&headers, "image/png", png, updated))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BadgeQuery {
    style: Option<String>,
    label: Option<String>,
    v: Option<u64>,
}

/// `?v=`: the snapshot a status page was built from (its images ask for it).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    v: Option<u64>,
}

fn pinned(pin: Result<Query<Pin>, axum::extract::rejection::QueryRejection>) -> ApiResult<Option<u64>> {
    pin.map(|Query(p)| p.v).map_err(|e| {
        ApiError::BadRequest(format!("{}; this takes only v= (the snapshot a status page shows)", e.body_text()))
    })
}

/// Longest `?label=` a badge takes.
const MAX_LABEL: usize = 60;

/// `GET /badge/{owner}/{name}/{metric}.svg` (or `.json`, shields.io's endpoint format).
#[utoipa::path(
    get, path = "/badge/{owner}/{name}/{file}", tag = "status",
    params(("owner" = String, Path, example = "pytorch", description = "The project's owner, as in `owner/name`."), ("name" = String, Path, example = "pytorch", description = "The project's name."),
           ("file" = String, Path, example = "reproduction-rate.svg", description = "`METRIC.svg` or `METRIC.json` (shields.io's endpoint format); METRIC is `reproduction-rate`, `oracle-coverage`, `backlog` or `median-time`."),
           ("style" = Option<failpass_shared::api::status::BadgeStyle>, Query, description = "`flat` (default) or `flat-square`."),
           ("label" = Option<String>, Query, max_length = 60, description = "The left-hand text (at most 60 characters, no control characters)."),
           ("v" = Option<u64>, Query, description = "The snapshot a status page was built from: its chart and badges ask for it, so they agree with the page (the current one when it is gone or absent).")),
    responses((status = 200, description = "The badge.", content((String = "image/svg+xml"), (failpass_shared::api::status::ShieldsEndpoint = "application/json"))),
              (status = 304, description = "Not modified."),
              (status = 404, description = "No such public project: a grey badge saying so (so an embed shows why), in the format asked for; an unknown metric or file name: the error shape.",
               content((String = "image/svg+xml"), (failpass_shared::api::status::ShieldsEndpoint = "application/json"), (failpass_shared::error::ApiErrorBody = "application/json"))))
)]
pub async fn badge(
    State(state): State<AppState>,
    ApiPath((owner, name, file)): ApiPath<(String, String, String)>,
    query: Result<Query<BadgeQuery>, axum::extract::rejection::QueryRejection>,
    headers: HeaderMap,
) -> Response {
    let (metric, svg) = match (file.strip_suffix(".svg"), file.strip_suffix(".json")) {
        (Some(m), _) => (m, true),
        (_, Some(m)) => (m, false),
        _ => {
            return ApiError::NotFound(format!(
                "`{file}`: a badge is METRIC.svg or METRIC.json, METRIC one of {}",
                metric_names()
            ))
            .into_response();
        }
    };
    let Ok(metric) = metric.parse::<BadgeMetric>() else {
        return ApiError::NotFound(format!("no badge `{metric}`; badges: {}", metric_names())).into_response();
    };
    let Query(q) = match query {
        Ok(q) => q,
        Err(e) => {
            return ApiError::BadRequest(format!("{}; a badge takes style=, label= and v=", e.body_text()))
                .into_response();
        }
    };
    let style = match q.style.as_deref().map(str::parse::<BadgeStyle>).transpose() {
        Ok(s) => s.unwrap_or(BadgeStyle::Flat),
        Err(_) => return ApiError::BadRequest("style: one of flat, flat-square".to_owned()).into_response(),
    };
    let label = q.label.as_deref().map(str::trim);
    if let Some(l) = label
        && (l.chars().count() > MAX_LABEL || l.chars().any(char::is_control))
    {
        return ApiError::BadRequest(format!("label: at most {MAX_LABEL} characters, none of them control characters"))
            .into_response();
    }
    let (face, updated, status) = match state.status.pinned(&state.storage, &format!("{owner}/{name}"), q.v).await {
        Ok(snap) => (metric.face(&snap.status, label), snap.status.updated_at, StatusCode::OK),
        Err(ApiError::NotFound(_)) => (
            BadgeFace {
                label: label.unwrap_or(metric.default_label()).to_owned(),
                message: "no such public project".to_owned(),
                color: "lightgrey".to_owned(),
            },
            Utc::now(),
            StatusCode::NOT_FOUND,
        ),
        Err(e) => return e.into_response(),
    };
    let (content_type, body) = if svg {
        ("image/svg+xml", badge_svg(&face, style))
    } else {
        ("application/json", serde_json::to_string(&ShieldsEndpoint::from(face)).unwrap_or_default())
    };
    let mut response = conditional(&headers, content_type, body, updated);
    if status == StatusCode::NOT_FOUND {
        *response.status_mut() = status;
    }
    response
}

fn metric_names() -> String {
    BadgeMetric::ALL.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ")
}

/// A badge in shields.io's look (the `shields` crate draws it byte for byte as
/// shields.io does and escapes the text).
pub fn badge_svg(face: &BadgeFace, style: BadgeStyle) -> String {
    let style = match style {
        BadgeStyle::Flat => shields::BadgeStyle::Flat,
        BadgeStyle::FlatSquare => shields::BadgeStyle::FlatSquare,
    };
    shields::render_badge_svg(&shields::BadgeParams {
        style,
        message_color: Some(&face.color),
        ..shields::BadgeParams::new(&face.label, &face.message)
    })
}

/// `scheme://host` the caller reached this server at (the Host header is
/// already checked to be this server's), for absolute links in snippets.
fn base_url(state: &AppState, headers: &HeaderMap) -> String {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
    format!("{}://{host}", if state.security.https { "https" } else { "http" })
}

/// A 200 with validators and caching headers, or a 304 when the caller's
/// copy (`If-None-Match`, else `If-Modified-Since`) is still current.
fn conditional(headers: &HeaderMap, content_type: &str, body: impl Into<Vec<u8>>, updated: DateTime<Utc>) -> Response {
    let body: Vec<u8> = body.into();
    let digest = Sha256::digest(&body);
    let etag = format!("\"{}\"", digest.iter().take(10).map(|b| format!("{b:02x}")).collect::<String>());
    let last_modified = updated.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    let fresh = match headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) {
        Some(tags) => {
            tags.split(',').map(str::trim).any(|t| t == etag || t == "*" || t.strip_prefix("W/") == Some(&etag))
        }
        None => headers
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| DateTime::parse_from_rfc2822(v).ok())
            .is_some_and(|since| since.timestamp() >= updated.timestamp()),
    };
    let cache = format!("public, max-age={STATUS_TTL_SECONDS}");
    let mut response = if fresh { StatusCode::NOT_MODIFIED.into_response() } else { body.into_response() };
    let h = response.headers_mut();
    let set = |h: &mut HeaderMap, name, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            h.insert(name, v);
        }
    };
    if !fresh {
        set(h, header::CONTENT_TYPE, content_type);
    }
    set(h, header::ETAG, &etag);
    set(h, header::LAST_MODIFIED, &last_modified);
    set(h, header::CACHE_CONTROL, &cache);
    response
}

/// An HTML page for a status error: 404 for a missing or private project
/// (the same page for both), else the error's own status.
fn error_page(e: &ApiError) -> Response {
    let status = e.status();
    let (title, text) = match e {
        ApiError::NotFound(_) => ("Not found", "There is no public project here.".to_owned()),
        ApiError::Internal(cause) => {
            tracing::error!(error.cause_chain = ?cause, "status page");
            ("Unavailable", "The figures could not be computed; the server log has the cause.".to_owned())
        }
        other => ("Unavailable", other.to_string()),
    };
    let body = frame(
        title,
        None,
        html! {
            section.panel {
                h1 { (title) }
                p data-testid="status-error" { (text) }
                p { a href="/status" { "All public projects" } }
            }
        },
    );
    (status, [(header::CACHE_CONTROL, "no-store")], axum::response::Html(body.into_string())).into_response()
}

/// Open Graph and description tags for link previews.
pub(super) struct Meta<'a> {
    description: String,
    url: &'a str,
    image: String,
}

pub(super) fn frame(title: &str, meta: Option<Meta<'_>>, main: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · failpass" }
                @if let Some(m) = &meta {
                    meta name="description" content=(m.description);
                    meta property="og:type" content="website";
                    meta property="og:title" content=(title);
                    meta property="og:description" content=(m.description);
                    meta property="og:url" content=(m.url);
                    meta property="og:image" content=(m.image);
                    meta property="og:image:type" content="image/png";
                    meta property="og:image:width" content=(crate::status::OG_WIDTH);
                    meta property="og:image:height" content=(crate::status::OG_HEIGHT);
                    meta property="og:image:alt" content=(m.description);
                    meta name="twitter:image" content=(m.image);
                    meta name="twitter:card" content="summary_large_image";
                }
                link rel="stylesheet" href="/style.css";
            }
            body.status-page {
                a.skip-link href="#main" { "Skip to the figures" }
                header.status-top {
                    a.brand href="/status" { "failpass status" }
                    nav aria-label="Status" { a href="/status" { "Public projects" } " · " a href="/" { "Dashboard" } }
                }
                main #main { (main) }
                footer.status-foot {
                    p.muted { "Figures by failpass: a reproduction counts only when a deterministic check or a person graded it." }
                }
            }
        }
    }
}

fn index_page(index: &StatusIndex) -> Markup {
    frame(
        "Public projects",
        None,
        html! {
            section.panel {
                h1 { "Public projects" }
                @if index.projects.is_empty() {
                    p.muted data-testid="status-index-empty" { "No project is public yet." }
                } @else {
                    ul.status-list data-testid="status-index" {
                        @for p in &index.projects {
                            li {
                                a href=(format!("/status/{}", p.project)) { (p.project) }
                                " · " (format::thousands(p.reports as i64)) " reports"
                                @if !p.description.is_empty() { br; span.muted { (p.description) } }
                            }
                        }
                    }
                }
            }
        },
    )
}

fn figure(testid: &str, label: &str, value: String, detail: String) -> Markup {
    html! {
        div.status-figure data-testid=(testid) {
            span.status-label { (label) }
            span.status-value data-testid=(format!("{testid}-value")) { (value) }
            span.status-detail { (detail) }
        }
    }
}

/// The page of one snapshot (`serial`): its chart and badges ask for that
/// snapshot, so nothing on it disagrees with the rest.
fn project_page(s: &ProjectStatus, serial: u64, base: &str) -> Markup {
    let page_url = format!("{base}/status/{}", s.project);
    let description = format!(
        "{}: {} reports in, {} reproduced ({} of those graded), oracle coverage {}.",
        s.project,
        format::thousands(s.reports as i64),
        format::thousands(s.reports_reproduced as i64),
        format::percent(s.rate),
        format::percent(s.oracle_coverage.rate),
    );
    let meta = Meta { description, url: &page_url, image: format!("{page_url}/trend.png?v={serial}") };
    let coverage = &s.oracle_coverage;
    frame(
        &s.project,
        Some(meta),
        html! {
            section.panel aria-labelledby="status-title" {
                h1 #status-title data-testid="status-project" { (s.project) }
                @if !s.description.is_empty() { p.muted { (s.description) } }
                p.muted {
                    "Updated " time datetime=(s.updated_at.to_rfc3339()) data-testid="status-updated" { (s.updated_at.format("%Y-%m-%d %H:%M UTC")) }
                    " · " a href=(format!("/api/v1/status/{}", s.project)) data-testid="status-json-link" { "the figures as JSON" }
                }
            }
            section.panel aria-labelledby="headline" {
                h2 #headline { "Headline figures" }
                div.status-figures {
                    (figure("status-reports", "Reports in", format::thousands(s.reports as i64), "every report filed".to_owned()))
                    (figure("status-rate", "Reproduction rate", format::percent(s.rate),
                        format!("{} of {} graded reports; 95% interval {}", format::thousands(s.reports_reproduced as i64),
                            format::thousands(s.reports_graded as i64), format::interval(s.rate_low, s.rate_high))))
                    (figure("status-reproduced", "Reports reproduced", format::thousands(s.reports_reproduced as i64),
                        "by a deterministic check or a person".to_owned()))
                    (figure("status-backlog", "Backlog", format::thousands(s.backlog as i64),
                        format!("oldest {}, median {}", days(s.backlog_oldest_days), days(s.backlog_median_days))))
                    (figure("status-median-time", "Median time to reproduction", format::hours(s.time_to_reproduction_median_hours),
                        timed(s.time_to_reproduction_n, s.reports_reproduced)))
                    (figure("status-oracle-coverage", "Oracle coverage", format::percent(coverage.rate),
                        format!("{} of {} reports have a deterministic check; 95% interval {}; in-patch reference {}",
                            format::thousands(coverage.count), format::thousands(coverage.of),
                            format::interval(coverage.low, coverage.high), format::percent(Some(s.in_patch_reference)))))
                }
                p.muted data-testid="status-resolution" { (failpass_shared::figures::RESOLUTION_NOTE) }
            }
            section.panel aria-labelledby="routes" {
                h2 #routes { "How reports are routed" }
                div.table-scroll {
                    table data-testid="status-routes" {
                        caption.visually-hidden { "Reports by route" }
                        thead { tr { th scope="col" { "Route" } th scope="col" { "Reports" } th scope="col" { "Share" } th scope="col" { "What it means" } } }
                        tbody {
                            @for r in &s.routes {
                                tr {
                                    th scope="row" { (r.route.as_str().replace('_', " ")) }
                                    td { (format::thousands(r.reports as i64)) }
                                    td { (format::percent(r.share)) }
                                    td.wrap { (r.meaning) }
                                }
                            }
                        }
                    }
                }
            }
            section.panel aria-labelledby="trend" {
                h2 #trend { "The last 90 days" }
                img.status-trend src=(format!("/status/{}/trend.svg?v={serial}", s.project)) width="720" height="300"
                    alt=(trend_alt(s)) data-testid="status-trend";
            }
            section.panel aria-labelledby="latest" {
                h2 #latest { "Latest verdicts" }
                @if s.latest.is_empty() && s.reports_graded > 0 {
                    p.muted data-testid="status-latest-empty" {
                        (format::thousands(s.reports_graded as i64)) " reports are graded, none on a known date: they came in without one."
                    }
                } @else if s.latest.is_empty() {
                    p.muted data-testid="status-latest-empty" { "No graded reproduction yet." }
                } @else {
                    div.table-scroll {
                        table data-testid="status-latest" {
                            caption.visually-hidden { "The newest graded reproduction verdicts" }
                            thead { tr { th scope="col" { "Report" } th scope="col" { "Verdict" } th scope="col" { "Graded by" } th scope="col" { "When" } } }
                            tbody {
                                @for v in &s.latest {
                                    tr {
                                        td.wrap {
                                            @match v.url.as_deref().filter(|u| u.starts_with("https://") || u.starts_with("http://")) {
                                                Some(url) => a href=(url) rel="nofollow noopener" { (v.title) },
                                                None => (v.title),
                                            }
                                        }
                                        td { (v.verdict.as_str().replace('_', " ")) }
                                        td { (v.graded_by.label()) }
                                        td { time datetime=(v.at.to_rfc3339()) { (v.at.format("%Y-%m-%d")) } }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            section.panel aria-labelledby="badges" {
                h2 #badges { "Badges" }
                p.muted { "Copy a badge into a README. Add " code { "?style=flat-square" } " or " code { "?label=…" } " to change its look." }
                @for m in BadgeMetric::ALL {
                    @let src = format!("{base}/badge/{}/{}.svg", s.project, m.as_str());
                    div.status-badge data-testid=(format!("badge-{}", m.as_str())) {
                        img src=(format!("/badge/{}/{}.svg?v={serial}", s.project, m.as_str())) alt=(format!("{} badge", m.default_label())) height="20";
                        label { span { "Markdown" }
                            input type="text" readonly value=(format!("[![{}]({src})]({page_url})", m.default_label())); }
                        label { span { "HTML" }
                            input type="text" readonly value=(format!("<a href=\"{page_url}\"><img alt=\"{}\" src=\"{src}\"></a>", m.default_label())); }
                    }
                }
            }
        },
    )
}

/// Over how many reproductions the median is, and for how many it is
/// unknown (imported without the times it needs).
fn timed(n: u64, reproduced: u64) -> String {
    format!("over {} reproduced reports{}", format::thousands(n as i64), format::unknown_times(n, reproduced))
}

fn days(d: Option<f64>) -> String {
    d.map_or_else(|| "—".to_owned(), |d| format!("{d:.0} d"))
}

/// The trend chart in words, for screen readers and for when images are off.
fn trend_alt(s: &ProjectStatus) -> String {
    let filed: u64 = s.weeks.iter().map(|w| w.filed).sum();
    let finished: u64 = s.weeks.iter().map(|w| w.finished).sum();
    let reproduced: u64 = s.weeks.iter().map(|w| w.reproduced).sum();
    format!(
        "Weekly bars over the last {} weeks: {filed} reports filed, {finished} reached a final state, {reproduced} of them reproduced.",
        s.weeks.len()
    )
}
