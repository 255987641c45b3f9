//! The environment cache's size cap (`--env-cache-gb`): after a build, the
//! least recently used environments are removed until the cache fits. An
//! environment used in the last half hour is never removed (a run may be in
//! it), nor one being built (its lock is held); the wheel cache is not
//! counted, since it is what rebuilds an evicted environment with no network.
//! The cache's own records (`meta.json`, sizes) are here too: the bottom of
//! the cache, which imports none of its users.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use failpass_shared::api::releases::CachedEnvironment;

/// What the cache records beside a built environment (`meta.json`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct EnvMeta {
    pub label: String,
    pub hash: String,
    pub built_seconds: f64,
    pub size_bytes: u64,
    /// `uv pip freeze`: what the requirement lines resolved to.
    #[serde(default)]
    pub resolved: Vec<String>,
    /// Whether the install needed the index (false: all from the wheel cache).
    #[serde(default)]
    pub fetched: bool,
}

/// Bytes of the files under `dir` (links not followed).
pub fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map(|m| m.len()).unwrap_or(0),
            _ => 0,
        })
        .sum()
}

/// What the cache at `root` holds, most recently used first.
pub fn list(root: &Path) -> Vec<CachedEnvironment> {
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    let mut out: Vec<CachedEnvironment> =
        entries.flatten().filter(|e| e.path().join(".built").exists()).map(|e| describe(&e.path())).collect();
    out.sort_by_key(|e| std::cmp::Reverse(e.last_used));
    out
}

fn describe(dir: &Path) -> CachedEnvironment {
    let meta: Option<EnvMeta> = std::fs::read(dir.join("meta.json")).ok().and_then(|b| serde_json::from_slice(&b).ok());
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

/// Removes least recently used environments of the cache at `root` (never
/// `keep`) until it is under `cap` bytes; what it removed, by label.
pub fn evict(root: &Path, cap: Option<u64>, keep: &str) -> Vec<String> {
    let Some(cap) = cap else { return Vec::new() };
    let mut envs = list(root);
    let mut total: u64 = envs.iter().map(|e| e.size_bytes).sum();
    let mut removed = Vec::new();
    let recent = SystemTime::now() - Duration::from_secs(1800);
    while total > cap {
        let Some(e) = envs.pop() else { break };
        let dir = root.join(&e.hash);
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
