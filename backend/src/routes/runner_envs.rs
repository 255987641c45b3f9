//! The environment cache, as the Runners page links it: what this server's
//! built-in workers keep built (each release's or recipe's environment, its
//! size, build time and last use), the cap it is held to and the wheel
//! cache beside it. Workers on other machines keep caches of their own.
//!
//! A release's environment is named (`pandas 2.0.0`) only to callers who
//! may read a project whose release template builds that package; the rest
//! are counted, not named, so a private project's package stays private.

use std::collections::HashSet;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use failpass_shared::api::releases::{CachedEnvironment, EnvironmentCache};
use failpass_shared::envinfo::normalize;
use maud::html;

use super::AppState;
use super::pages::page;
use crate::auth::Viewer;
use crate::error::{ApiError, ApiJson, ApiResult, QueryPairs};

/// What the caller may see of the cache.
async fn visible_cache(state: &AppState, viewer: &Viewer) -> ApiResult<EnvironmentCache> {
    let mut packages = HashSet::new();
    for p in state.storage.list_projects(&viewer.scope()).await? {
        if let Some(t) = state.storage.release_template(&p.slug).await? {
            packages.insert(normalize(&t.package));
        }
    }
    let envs = state.envs.clone();
    let (all, wheels) = tokio::task::spawn_blocking(move || {
        (crate::runner::env_evict::list(envs.root()), crate::runner::env_evict::dir_size(&envs.wheels))
    })
    .await
    .map_err(|e| ApiError::Internal(anyhow::anyhow!("listing the environment cache: {e}")))?;
    let total_bytes = all.iter().map(|e| e.size_bytes).sum();
    let (environments, hidden): (Vec<CachedEnvironment>, Vec<CachedEnvironment>) =
        all.into_iter().partition(|e| shown(e, &packages));
    Ok(EnvironmentCache {
        environments,
        hidden: hidden.len(),
        total_bytes,
        cap_bytes: state.envs.cap_bytes,
        wheel_cache_bytes: wheels,
    })
}

/// A project's own recipe (`recipe <hash>`) names nothing; a release is
/// shown when its package is one the caller's projects build.
fn shown(e: &CachedEnvironment, packages: &HashSet<String>) -> bool {
    match e.label.rsplit_once(' ') {
        Some(("recipe", _)) => true,
        Some((package, _)) => packages.contains(&normalize(package)),
        None => false,
    }
}

/// `GET /api/v1/runners/environments`.
#[utoipa::path(
    get, path = "/api/v1/runners/environments", tag = "jobs",
    responses((status = 200, description = "The environments this server's workers keep built, most recently used first.", body = EnvironmentCache))
)]
pub async fn environments(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<EnvironmentCache>> {
    if let Some((k, _)) = query.iter().next() {
        return Err(ApiError::BadRequest(format!("{k}: unknown query parameter `{k}`; this list takes none")));
    }
    Ok(ApiJson(visible_cache(&state, &viewer).await?))
}

/// `GET /runners/environments`: the same, as a page.
#[utoipa::path(
    get, path = "/runners/environments", tag = "pages",
    responses((status = 200, description = "The environment cache as a page.", content_type = "text/html", body = String))
)]
pub async fn environments_page(State(state): State<AppState>, viewer: Viewer) -> ApiResult<Response> {
    let c = visible_cache(&state, &viewer).await?;
    let cap = c.cap_bytes.map_or_else(|| "no cap (--env-cache-gb)".to_owned(), |b| format!("cap {}", size(b)));
    let body = html! {
        p.muted { a href="/runners" { "Runners" } " / environment cache" }
        h1 { "Environment cache" }
        p.lede { "The environments this server's workers keep built, most recently used first: one per release or recipe, "
            "built when a verification first needs it and removed least recently used first when the cache is over its cap. "
            "Workers on other machines keep their own." }
        section.panel data-testid="env-cache-totals" {
            dl.lifecycle {
                dt { "Held" } dd { (size(c.total_bytes)) " in " (c.environments.len() + c.hidden) " environments; " (cap) }
                dt { "Wheel cache" } dd { (size(c.wheel_cache_bytes)) " (not counted against the cap: it rebuilds an evicted environment with no network)" }
                @if c.hidden > 0 { dt { "Not shown" } dd { (c.hidden) " of projects you cannot read" } }
            }
        }
        @if c.environments.is_empty() {
            p.muted data-testid="env-cache-empty" { "Nothing is built yet: an environment is built when a verification first needs it." }
        } @else {
            div.table-scroll {
                table data-testid="env-cache" {
                    thead { tr { th { "Environment" } th.num { "Size" } th.num { "Built in" } th { "From" } th { "Last used" } } }
                    tbody { @for e in &c.environments { tr {
                        td { (e.label) }
                        td.num { (size(e.size_bytes)) }
                        td.num { (e.built_seconds.map(|s| format!("{s:.1} s")).unwrap_or_default()) }
                        td { (match e.fetched { Some(true) => "the index", Some(false) => "the wheel cache", None => "" }) }
                        td { (e.last_used.map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string()).unwrap_or_default()) }
                    } } }
                }
            }
        }
    };
    Ok(page(StatusCode::OK, "Environment cache", &viewer, body))
}

/// Bytes as people read them.
fn size(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.1} GB", b as f64 / f64::from(1u32 << 30)),
        b if b >= 1 << 20 => format!("{:.0} MB", b as f64 / f64::from(1u32 << 20)),
        b => format!("{} kB", b.div_ceil(1024)),
    }
}
