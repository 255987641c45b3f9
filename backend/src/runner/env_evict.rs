//! The environment cache's size cap (`--env-cache-gb`): after a build, the
//! least recently used environments are removed until the cache fits. An
//! environment used in the last half hour is never removed (a run may be in
//! it), nor one being built (its lock is held); the wheel cache is not
//! counted, since it is what rebuilds an evicted environment with no network.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use failpass_shared::api::releases::CachedEnvironment;

use super::env::EnvCache;
use super::release_env::dir_size;

/// What the cache holds, most recently used first.
pub fn list(cache: &EnvCache) -> Vec<CachedEnvironment> {
    let Ok(entries) = std::fs::read_dir(cache.root()) else { return Vec::new() };
    let mut out: Vec<CachedEnvironment> =
        entries.flatten().filter(|e| e.path().join(".built").exists()).map(|e| describe(&e.path())).collect();
    out.sort_by_key(|e| std::cmp::Reverse(e.last_used));
    out
}

fn describe(dir: &Path) -> CachedEnvironment {
    let meta: Option<super::release_env::EnvMeta> =
        std::fs::read(dir.join("meta.json")).ok().and_then(|b| serde_json::from_slice(&b).ok());
    let hash = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let label = meta.as_ref().map(|m| m.label.clone()).unwrap_or_else(|| format!("recipe {hash}"));
    let size_bytes = meta.as_ref().map(|m| m.size_bytes).unwrap_or_else(|| dir_size(dir));
    CachedEnvironment {
        hash,
        label,
        size_bytes,
        built_seconds: meta.as_ref().map(|m| m.built_seconds),
        last_used: used_at(dir).map(chrono::DateTime::from),
        fetched: meta.map(|m| m.fetched),
    }
}

fn used_at(dir: &Path) -> Option<SystemTime> {
    let m = |p: PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    m(dir.join(".used")).or_else(|| m(dir.join(".built")))
}

/// Removes least recently used environments (never `keep`) until the cache
/// is under its cap; what it removed, by label.
pub fn evict(cache: &EnvCache, keep: &str) -> Vec<String> {
    let Some(cap) = cache.cap_bytes else { return Vec::new() };
    let mut envs = list(cache);
    let mut total: u64 = envs.iter().map(|e| e.size_bytes).sum();
    let mut removed = Vec::new();
    let recent = SystemTime::now() - Duration::from_secs(1800);
    while total > cap {
        let Some(e) = envs.pop() else { break };
        let dir = cache.root().join(&e.hash);
        if e.hash == keep || used_at(&dir).is_some_and(|t| t > recent) {
            continue;
        }
        // The marker goes first: a half-removed environment is rebuilt, never used.
        if std::fs::remove_file(dir.join(".built")).is_ok() && std::fs::remove_dir_all(&dir).is_ok() {
            tracing::info!(environment = %e.label, bytes = e.size_bytes, "evicted from the environment cache (least recently used)");
            total = total.saturating_sub(e.size_bytes);
            removed.push(e.label);
        }
    }
    if total > cap {
        tracing::warn!(
            total,
            cap,
            "the environment cache is over its cap: what it holds was used in the last half hour"
        );
    }
    removed
}
