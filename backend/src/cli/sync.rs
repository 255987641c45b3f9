//! `failpass sync github OWNER/NAME`: GitHub intake for teams that cannot
//! receive webhooks. It polls the REST API's "list repository issues"
//! (`state=all`, oldest change first, `since` the newest `updated_at` the
//! last sync stored), stores and routes each issue as a webhook delivery
//! would, and keeps where it ended:
//! - the first page is asked for with the last ETag of the same address, so
//!   a repository with no change answers 304 (which GitHub does not count
//!   against the rate limit);
//! - pages are followed by their `Link: rel="next"`, only on the API's own
//!   origin (the token is never sent elsewhere);
//! - a rate limit (403 or 429 with `x-ratelimit-remaining: 0` or
//!   `retry-after`) is waited out up to `max_wait`; beyond that the sync
//!   stops with what it has stored, and the next one resumes from there.

use std::fmt;
use std::time::Duration;

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use failpass_shared::api::import::Outcome;
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::routing::RoutingConfig;
use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::{StatusCode, Url};
use serde_json::Value;

use crate::db::projects::GithubSync;
use crate::db::reports::Origin;
use crate::db::{ProjectScope, Storage, StorageError};
use crate::import::github::{Intake, intake_issue};
use crate::triage::Models;

/// A page larger than this is refused (100 issues of GitHub's largest
/// bodies are about 7 MB).
const MAX_PAGE_BYTES: usize = 50 << 20;
/// Rate-limit waits in one sync before it gives up.
const MAX_WAITS: u32 = 5;

pub struct SyncOptions {
    /// `OWNER/NAME`.
    pub repo: String,
    /// The failpass project the issues go to.
    pub project: String,
    pub token: Option<String>,
    /// The REST API's base address, e.g. `https://api.github.com`.
    pub api_url: String,
    /// The longest single wait for a rate limit to reset.
    pub max_wait: Duration,
    /// Issues per page (GitHub allows up to 100).
    pub per_page: u32,
}

/// What one sync did.
#[derive(Debug, Default)]
pub struct SyncSummary {
    pub requests: u32,
    pub pages: u32,
    /// The first page answered 304: nothing changed since the last sync.
    pub not_modified: bool,
    pub created: u64,
    pub updated: u64,
    pub unchanged: u64,
    /// Pull requests (GitHub lists them with the issues).
    pub skipped: u64,
    /// Issues refused, each with its number and why.
    pub rejected: Vec<String>,
    /// Where the next sync starts.
    pub since: Option<String>,
    pub rate_remaining: Option<u64>,
    pub rate_limit: Option<u64>,
    pub rate_reset: Option<DateTime<Utc>>,
    /// Time spent waiting for rate limits.
    pub waited: Duration,
}

impl fmt::Display for SyncSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.not_modified {
            write!(f, "nothing changed (304)")?;
        } else {
            write!(
                f,
                "{} page(s): {} created, {} updated, {} unchanged, {} pull requests skipped, {} rejected",
                self.pages,
                self.created,
                self.updated,
                self.unchanged,
                self.skipped,
                self.rejected.len()
            )?;
        }
        write!(f, "; {} request(s)", self.requests)?;
        if !self.waited.is_zero() {
            write!(f, ", {} s waiting for the rate limit", self.waited.as_secs())?;
        }
        if let (Some(left), Some(limit)) = (self.rate_remaining, self.rate_limit) {
            write!(f, "; rate limit {left} of {limit} left")?;
            if let Some(reset) = self.rate_reset {
                write!(f, " (resets {})", reset.format("%H:%M:%S UTC"))?;
            }
        }
        if let Some(since) = &self.since {
            write!(f, "; next sync from {since}")?;
        }
        for r in &self.rejected {
            write!(f, "\n  rejected: {r}")?;
        }
        Ok(())
    }
}

/// `OWNER/NAME` as GitHub allows them (letters, digits, `-`, `_`, `.`).
pub fn check_repo(repo: &str) -> anyhow::Result<()> {
    let ok_part = |p: &str| {
        !p.is_empty()
            && p.len() <= 100
            && p != "."
            && p != ".."
            && p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    match repo.split_once('/') {
        Some((owner, name)) if ok_part(owner) && ok_part(name) => Ok(()),
        _ => bail!("repository `{repo}`: not OWNER/NAME (letters, digits, `-`, `_` and `.`)"),
    }
}

/// The address of `rel="next"` in a `Link` header.
pub fn next_link(link: &str) -> Option<&str> {
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        let is_next = params.split(';').any(|p| {
            p.trim().strip_prefix("rel=").is_some_and(|r| r.trim_matches('"').split_whitespace().any(|r| r == "next"))
        });
        is_next.then(|| url.trim().strip_prefix('<')?.strip_suffix('>')).flatten()
    })
}

fn header<T: std::str::FromStr>(headers: &HeaderMap, name: &str) -> Option<T> {
    headers.get(name)?.to_str().ok()?.trim().parse().ok()
}

/// How long GitHub asks to wait before the request is tried again, when the
/// answer is a rate limit; `None` when it is not one.
fn rate_limit_wait(status: StatusCode, headers: &HeaderMap, now: DateTime<Utc>) -> Option<Duration> {
    if status != StatusCode::FORBIDDEN && status != StatusCode::TOO_MANY_REQUESTS {
        return None;
    }
    if let Some(seconds) = header::<u64>(headers, "retry-after") {
        return Some(Duration::from_secs(seconds));
    }
    if header::<u64>(headers, "x-ratelimit-remaining") == Some(0) {
        let reset = header::<i64>(headers, "x-ratelimit-reset").unwrap_or(now.timestamp() + 60);
        // One second past the reset, as the clocks may differ by that much.
        return Some(Duration::from_secs((reset - now.timestamp()).max(0) as u64 + 1));
    }
    // A secondary limit without headers: GitHub asks for at least a minute.
    (status == StatusCode::TOO_MANY_REQUESTS).then(|| Duration::from_secs(60))
}

fn github_message(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned())
}

fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme() && a.host_str() == b.host_str() && a.port_or_known_default() == b.port_or_known_default()
}

/// A client for GitHub's REST API: its media type, API version and a user agent (GitHub requires one).
pub fn client() -> anyhow::Result<reqwest::Client> {
    let mut headers = HeaderMap::new();
    headers.insert("accept", HeaderValue::from_static("application/vnd.github+json"));
    headers.insert("x-github-api-version", HeaderValue::from_static("2022-11-28"));
    reqwest::Client::builder()
        .user_agent(concat!("failpass/", env!("CARGO_PKG_VERSION")))
        .default_headers(headers)
        .timeout(Duration::from_secs(60))
        .build()
        .context("making the HTTP client")
}

struct Page {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

async fn fetch(client: &reqwest::Client, url: &Url, token: Option<&str>, etag: Option<&str>) -> anyhow::Result<Page> {
    let mut req = client.get(url.clone());
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    if let Some(etag) = etag {
        req = req.header("if-none-match", etag);
    }
    let mut resp = req.send().await.with_context(|| format!("GET {url}"))?;
    let status = resp.status();
    let headers = resp.headers().clone();
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.with_context(|| format!("reading GET {url}"))? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_PAGE_BYTES {
            bail!("GET {url}: the answer is larger than {} MB", MAX_PAGE_BYTES >> 20);
        }
    }
    Ok(Page { status, headers, body })
}

/// One sync of `opts.repo` into `opts.project`.
pub async fn github(
    storage: &dyn Storage,
    models: &Models,
    cfg: &RoutingConfig,
    client: &reqwest::Client,
    opts: &SyncOptions,
) -> anyhow::Result<SyncSummary> {
    check_repo(&opts.repo)?;
    let base = Url::parse(opts.api_url.trim_end_matches('/'))
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
        .with_context(|| format!("--api-url `{}`: not an http(s) address", opts.api_url))?;
    if storage.get_project(&opts.project, &ProjectScope::All).await?.is_none() {
        let req = CreateProjectRequest {
            slug: opts.project.clone(),
            name: None,
            description: None,
            public: None,
            upstream_url: None,
            benchmark: None,
        };
        req.validate().map_err(|e| anyhow::anyhow!("project `{}`: {}: {}", opts.project, e.field, e.message))?;
        match storage.create_project(&req).await {
            Ok(_) | Err(StorageError::Conflict(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let mut state = storage.github_sync(&opts.project).await?.unwrap_or_default();
    if !state.repo.is_empty() && state.repo != opts.repo {
        // Another repository's cursor and ETag mean nothing here.
        state = GithubSync::default();
    }
    state.repo = opts.repo.clone();

    let mut first = Url::parse(&format!("{}/repos/{}/issues", base.as_str().trim_end_matches('/'), opts.repo))
        .context("building the issues address")?;
    {
        let mut q = first.query_pairs_mut();
        q.append_pair("state", "all").append_pair("sort", "updated").append_pair("direction", "asc");
        q.append_pair("per_page", &opts.per_page.clamp(1, 100).to_string());
        if let Some(since) = &state.since {
            q.append_pair("since", since);
        }
    }
    let mut summary = SyncSummary::default();
    let mut cursor: Option<DateTime<Utc>> =
        state.since.as_deref().and_then(|s| DateTime::parse_from_rfc3339(s).ok()).map(|t| t.with_timezone(&Utc));
    let mut next = Some(first.clone());
    let mut first_etag: Option<String> = None;
    let mut waits = 0;
    while let Some(url) = next.take() {
        let is_first = url == first;
        let etag =
            if is_first && state.etag_url.as_deref() == Some(first.as_str()) { state.etag.as_deref() } else { None };
        let page = fetch(client, &url, opts.token.as_deref(), etag).await?;
        summary.requests += 1;
        summary.rate_remaining = header(&page.headers, "x-ratelimit-remaining");
        summary.rate_limit = header(&page.headers, "x-ratelimit-limit");
        summary.rate_reset =
            header::<i64>(&page.headers, "x-ratelimit-reset").and_then(|t| DateTime::from_timestamp(t, 0));
        if let Some(wait) = rate_limit_wait(page.status, &page.headers, Utc::now()) {
            waits += 1;
            if wait > opts.max_wait || waits > MAX_WAITS {
                save(storage, opts, &mut state, cursor, None).await?;
                bail!(
                    "GitHub's rate limit: asked to wait {} s (more than the {} s allowed, or too many waits); {} stored so far, the next sync resumes from {}",
                    wait.as_secs(),
                    opts.max_wait.as_secs(),
                    summary.created + summary.updated,
                    state.since.as_deref().unwrap_or("the start")
                );
            }
            tracing::info!(seconds = wait.as_secs(), "waiting for GitHub's rate limit");
            tokio::time::sleep(wait).await;
            summary.waited += wait;
            next = Some(url);
            continue;
        }
        match page.status {
            StatusCode::NOT_MODIFIED if is_first => {
                summary.not_modified = true;
                break;
            }
            StatusCode::OK => {}
            StatusCode::UNAUTHORIZED => {
                bail!("GitHub refused the token (401: {}): check GITHUB_TOKEN or --token", github_message(&page.body))
            }
            StatusCode::NOT_FOUND => bail!(
                "repository {} not found (404), or not visible to the token: {}",
                opts.repo,
                github_message(&page.body)
            ),
            s => bail!("GET {url}: GitHub answered {s}: {}", github_message(&page.body)),
        }
        summary.pages += 1;
        if is_first {
            first_etag = page.headers.get("etag").and_then(|v| v.to_str().ok()).map(str::to_owned);
        }
        let items: Vec<Value> =
            serde_json::from_slice(&page.body).with_context(|| format!("GET {url}: not a JSON list of issues"))?;
        for item in &items {
            let number = item.get("number").map(Value::to_string).unwrap_or_else(|| "?".into());
            match intake_issue(storage, models, cfg, &opts.project, item, Origin::upstream("sync")).await? {
                Intake::Stored { outcome, .. } => match outcome {
                    Outcome::Created => summary.created += 1,
                    Outcome::Updated => summary.updated += 1,
                    Outcome::Unchanged => summary.unchanged += 1,
                },
                Intake::Skipped(_) => summary.skipped += 1,
                Intake::Rejected(field, message) => summary.rejected.push(format!("#{number}: {field}: {message}")),
            }
            let updated = item
                .get("updated_at")
                .and_then(Value::as_str)
                .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&Utc));
            cursor = cursor.max(updated);
        }
        // Stored page by page: a sync stopped half-way resumes here.
        save(storage, opts, &mut state, cursor, None).await?;
        if let Some(link) = page.headers.get("link").and_then(|v| v.to_str().ok()).and_then(next_link) {
            let link = Url::parse(link).with_context(|| format!("Link header: `{link}` is not an address"))?;
            if !same_origin(&link, &base) {
                bail!("Link header: the next page `{link}` is not on {base}; the token is not sent there");
            }
            if summary.rate_remaining == Some(0) {
                // The next request would be refused: wait for the reset first.
                let wait = summary
                    .rate_reset
                    .map(|r| Duration::from_secs((r - Utc::now()).num_seconds().max(0) as u64 + 1))
                    .unwrap_or(Duration::from_secs(60));
                if wait > opts.max_wait {
                    bail!(
                        "GitHub's rate limit is used up until {}; {} stored, the next sync resumes from {}",
                        summary.rate_reset.map(|r| r.to_rfc3339()).unwrap_or_default(),
                        summary.created + summary.updated,
                        state.since.as_deref().unwrap_or("the start")
                    );
                }
                tokio::time::sleep(wait).await;
                summary.waited += wait;
            }
            next = Some(link);
        }
    }
    let etag = if summary.not_modified { None } else { Some((first_etag, first.to_string())) };
    save(storage, opts, &mut state, cursor, etag).await?;
    summary.since = state.since.clone();
    Ok(summary)
}

/// Stores the cursor and, after a complete sync, the first page's ETag.
async fn save(
    storage: &dyn Storage,
    opts: &SyncOptions,
    state: &mut GithubSync,
    cursor: Option<DateTime<Utc>>,
    etag: Option<(Option<String>, String)>,
) -> anyhow::Result<()> {
    state.since = cursor.map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string()).or(state.since.take());
    if let Some((etag, url)) = etag {
        state.etag_url = etag.as_ref().map(|_| url);
        state.etag = etag;
    }
    storage.save_github_sync(&opts.project, state).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_links_are_read_from_github_link_headers() {
        let link = r#"<https://api.github.com/repositories/1/issues?page=2>; rel="next", <https://api.github.com/repositories/1/issues?page=9>; rel="last""#;
        assert_eq!(next_link(link), Some("https://api.github.com/repositories/1/issues?page=2"));
        let last = r#"<https://api.github.com/x?page=1>; rel="prev", <https://api.github.com/x?page=1>; rel="first""#;
        assert_eq!(next_link(last), None);
        assert_eq!(next_link("garbage"), None);
    }

    #[test]
    fn repositories_must_be_owner_and_name() {
        assert!(check_repo("huggingface/datasets").is_ok());
        assert!(check_repo("a.b/c-d_e").is_ok());
        for bad in ["datasets", "a/b/c", "../x", "a/..", "a/b?x=1", "/b", "a/"] {
            assert!(check_repo(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rate_limits_say_how_long_to_wait() {
        let now = DateTime::from_timestamp(1_000_000, 0).unwrap();
        let mut h = HeaderMap::new();
        assert_eq!(rate_limit_wait(StatusCode::FORBIDDEN, &h, now), None, "a plain 403 is a permission error");
        h.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
        h.insert("x-ratelimit-reset", HeaderValue::from_static("1000030"));
        assert_eq!(rate_limit_wait(StatusCode::FORBIDDEN, &h, now), Some(Duration::from_secs(31)));
        assert_eq!(rate_limit_wait(StatusCode::OK, &h, now), None);
        h.insert("retry-after", HeaderValue::from_static("5"));
        assert_eq!(rate_limit_wait(StatusCode::TOO_MANY_REQUESTS, &h, now), Some(Duration::from_secs(5)));
        assert_eq!(
            rate_limit_wait(StatusCode::TOO_MANY_REQUESTS, &HeaderMap::new(), now),
            Some(Duration::from_secs(60))
        );
    }
}
