//! The package index: a package's releases as the index lists them (the
//! Simple API's JSON form, PEP 691 and 700, as pip and uv read it), with
//! when each was published and whether it installs here. Never a hand-kept
//! list. The last listing of each package is kept on disk, so grading on
//! releases already built goes on when the index cannot be reached.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use failpass_shared::api::releases::ReleaseInfo;
use pep440_rs::{Version, VersionSpecifiers};
use serde::{Deserialize, Serialize};

use super::wheels;

/// The index's default address (`--package-index`).
pub const DEFAULT_INDEX: &str = "https://pypi.org/simple";
/// How long a listing is used before the index is asked again.
const FRESH_FOR: Duration = Duration::from_secs(600);

/// One release, with what building it needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Release {
    pub info: ReleaseInfo,
    /// The newest upload among its files: dependencies resolve as of the day after.
    pub last_upload: Option<DateTime<Utc>>,
}

impl Release {
    pub fn version(&self) -> Option<Version> {
        Version::from_str(&self.info.version).ok()
    }
}

/// A package's releases, newest first, and when they were listed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Listing {
    pub package: String,
    pub releases: Vec<Release>,
    pub listed_at: DateTime<Utc>,
    /// Set when the index could not be reached and this is the last listing kept.
    #[serde(default)]
    pub stale: Option<String>,
}

/// Why a listing could not be had.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct IndexError(pub String);

/// Listings in memory, by package, with when they were fetched.
type Fresh = HashMap<String, (Instant, Arc<Listing>)>;

#[derive(Clone)]
pub struct PackageIndex {
    pub url: String,
    client: reqwest::Client,
    /// Where the last listing of each package is kept.
    dir: Option<PathBuf>,
    fresh: Arc<Mutex<Fresh>>,
}

impl PackageIndex {
    pub fn new(url: &str, dir: Option<PathBuf>) -> Self {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .user_agent(concat!("failpass/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        Self { url: url.trim_end_matches('/').to_owned(), client, dir, fresh: Arc::default() }
    }

    /// The package's releases (`setup_only`: the project builds with setup
    /// commands, so every release is buildable whatever its files).
    pub async fn releases(&self, package: &str, setup_only: bool) -> Result<Arc<Listing>, IndexError> {
        let name = failpass_shared::envinfo::normalize(package);
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(IndexError(format!("`{package}` is not a package name")));
        }
        let key = format!("{name}{}", if setup_only { "+setup" } else { "" });
        if let Some((at, l)) = self.fresh.lock().unwrap_or_else(|p| p.into_inner()).get(&key)
            && at.elapsed() < FRESH_FOR
        {
            return Ok(l.clone());
        }
        let listing = match self.fetch(&name, setup_only).await {
            Ok(l) => {
                self.keep(&key, &l);
                l
            }
            Err(e) => match self.kept(&key) {
                Some(mut l) => {
                    l.stale =
                        Some(format!("the index could not be reached ({e}); releases as listed at {}", l.listed_at));
                    l
                }
                None => return Err(e),
            },
        };
        let listing = Arc::new(listing);
        self.fresh.lock().unwrap_or_else(|p| p.into_inner()).insert(key, (Instant::now(), listing.clone()));
        Ok(listing)
    }

    async fn fetch(&self, name: &str, setup_only: bool) -> Result<Listing, IndexError> {
        let url = format!("{}/{name}/", self.url);
        let fail = |e: reqwest::Error| IndexError(format!("asking {url}: {e}"));
        let resp =
            self.client.get(&url).header("Accept", "application/vnd.pypi.simple.v1+json").send().await.map_err(fail)?;
        if resp.status() == reqwest::StatusCode::NOT_FOUND {
            return Err(IndexError(format!("the index has no package `{name}` ({url})")));
        }
        if !resp.status().is_success() {
            return Err(IndexError(format!("{url} answered {}", resp.status())));
        }
        let page: SimplePage = resp.json().await.map_err(fail)?;
        Ok(Listing {
            package: name.to_owned(),
            releases: releases(&page, setup_only),
            listed_at: Utc::now(),
            stale: None,
        })
    }

    fn keep(&self, key: &str, listing: &Listing) {
        let Some(dir) = &self.dir else { return };
        let _ = std::fs::create_dir_all(dir);
        if let Ok(json) = serde_json::to_vec(listing) {
            let tmp = dir.join(format!(".{key}.json.tmp"));
            if std::fs::write(&tmp, json).is_ok() {
                let _ = std::fs::rename(&tmp, dir.join(format!("{key}.json")));
            }
        }
    }

    fn kept(&self, key: &str) -> Option<Listing> {
        let bytes = std::fs::read(self.dir.as_ref()?.join(format!("{key}.json"))).ok()?;
        serde_json::from_slice(&bytes).ok()
    }
}

#[derive(Debug, Deserialize)]
struct SimplePage {
    #[serde(default)]
    files: Vec<SimpleFile>,
    #[serde(default)]
    versions: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct SimpleFile {
    filename: String,
    #[serde(default, rename = "upload-time")]
    upload_time: Option<DateTime<Utc>>,
    #[serde(default, rename = "requires-python")]
    requires_python: Option<String>,
    /// `false`, `true` or the reason as a string.
    #[serde(default)]
    yanked: serde_json::Value,
}

impl SimpleFile {
    fn yanked(&self) -> bool {
        !matches!(self.yanked, serde_json::Value::Bool(false) | serde_json::Value::Null)
    }

    fn admits_python(&self) -> bool {
        let Some(spec) = self.requires_python.as_deref().filter(|s| !s.trim().is_empty()) else { return true };
        let here = Version::new([wheels::PYTHON.0, wheels::PYTHON.1, 0]);
        // A specifier the parser cannot read does not make a release unbuildable; the installer decides.
        VersionSpecifiers::from_str(spec).map_or(true, |s| s.contains(&here))
    }
}

/// The version a file of the index holds: `name-1.2.3-…whl`, `name-1.2.3.tar.gz`.
fn file_version(filename: &str) -> Option<&str> {
    if let Some(stem) = filename.strip_suffix(".whl") {
        return stem.split('-').nth(1);
    }
    let stem = [".tar.gz", ".zip", ".tar.bz2", ".tgz"].iter().find_map(|s| filename.strip_suffix(s))?;
    stem.rsplit_once('-').map(|(_, v)| v)
}

/// The page's files grouped into releases, newest first.
fn releases(page: &SimplePage, setup_only: bool) -> Vec<Release> {
    let mut by: BTreeMap<Version, (String, Vec<&SimpleFile>)> = BTreeMap::new();
    for v in &page.versions {
        if let Ok(parsed) = Version::from_str(v) {
            by.entry(parsed).or_insert_with(|| (v.clone(), Vec::new()));
        }
    }
    for f in &page.files {
        let Some(v) = file_version(&f.filename) else { continue };
        let Ok(parsed) = Version::from_str(v) else { continue };
        by.entry(parsed).or_insert_with(|| (v.to_owned(), Vec::new())).1.push(f);
    }
    let mut out: Vec<Release> = by
        .into_iter()
        .map(|(parsed, (spelled, files))| {
            let published = files.iter().filter_map(|f| f.upload_time).min();
            let yanked = !files.is_empty() && files.iter().all(|f| f.yanked());
            let wheels: Vec<&&SimpleFile> = files
                .iter()
                .filter(|f| !f.yanked() && wheels::installs_here(&f.filename) && f.admits_python())
                .collect();
            let reason = if setup_only {
                None
            } else if files.is_empty() {
                Some("the index lists no files for it".to_owned())
            } else if yanked {
                Some("yanked from the index".to_owned())
            } else if wheels.is_empty() {
                let only_sdist = files.iter().all(|f| !f.filename.ends_with(".whl"));
                Some(if only_sdist {
                    "only a source distribution: no wheel to install on CPython 3.11 (sources are not compiled here)"
                        .to_owned()
                } else {
                    "no wheel for CPython 3.11 on Linux x86_64 among its files".to_owned()
                })
            } else {
                None
            };
            let last_upload = wheels.iter().filter_map(|f| f.upload_time).max().or(published);
            Release {
                info: ReleaseInfo {
                    version: spelled,
                    published,
                    prerelease: parsed.any_prerelease(),
                    yanked,
                    buildable: reason.is_none(),
                    reason,
                },
                last_upload,
            }
        })
        .collect();
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_simple_page_becomes_releases() {
        let page: SimplePage = serde_json::from_str(
            r#"{"files": [
              {"filename": "einops-0.6.0-py3-none-any.whl", "upload-time": "2022-10-11T08:00:00Z", "yanked": false},
              {"filename": "einops-0.6.0.tar.gz", "upload-time": "2022-10-11T07:59:00Z", "yanked": false},
              {"filename": "einops-0.5.0.tar.gz", "upload-time": "2022-09-01T00:00:00Z", "yanked": false},
              {"filename": "einops-0.7.0rc1-py3-none-any.whl", "upload-time": "2023-08-01T00:00:00Z", "yanked": false},
              {"filename": "einops-0.4.0-py3-none-any.whl", "upload-time": "2022-01-01T00:00:00Z", "yanked": "broken"},
              {"filename": "einops-0.3.0-py3-none-any.whl", "upload-time": "2021-01-01T00:00:00Z", "requires-python": "<3.10"}
            ], "versions": ["0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0rc1"]}"#,
        )
        .unwrap();
        let r = releases(&page, false);
        let names: Vec<_> = r.iter().map(|r| r.info.version.as_str()).collect();
        assert_eq!(names, ["0.7.0rc1", "0.6.0", "0.5.0", "0.4.0", "0.3.0"]);
        assert!(r[0].info.prerelease && r[0].info.buildable);
        assert!(r[1].info.buildable);
        assert_eq!(r[1].last_upload.unwrap().to_rfc3339(), "2022-10-11T08:00:00+00:00");
        assert!(!r[2].info.buildable && r[2].info.reason.as_deref().unwrap().contains("source distribution"));
        assert!(r[3].info.yanked && !r[3].info.buildable);
        assert!(!r[4].info.buildable, "requires-python <3.10 does not admit 3.11");
        assert!(releases(&page, true).iter().all(|r| r.info.buildable));
        assert_eq!(file_version("scikit_learn-1.3.0.tar.gz"), Some("1.3.0"));
    }
}
