//! Releases of a project's package and the versions a report names: how a
//! project builds any of its releases, which releases the index has, and
//! the buggy and fixed releases a report is graded on (with where each came
//! from), plus the bisect that finds the fixed one by running.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// How a project builds an environment for any of its releases
/// (`POST /api/v1/releases`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReleaseTemplate {
    /// The distribution's name on the package index (`pandas`, `scikit-learn`).
    pub package: String,
    /// The module a built environment must import (`sklearn`); defaults to
    /// the package name with `-` as `_`.
    #[serde(default)]
    pub import_name: Option<String>,
    /// Requirement lines with `{version}` (`pandas=={version}`, `pytz<2024`):
    /// names, extras, version specifiers and markers only (no URLs, no options).
    #[serde(default)]
    pub requirements: Vec<String>,
    /// For what is not a Python package: shell commands with `{version}`,
    /// run as an environment's setup (instead of `requirements`).
    #[serde(default)]
    pub setup: Vec<String>,
    /// Other names reports use for the package (`pd`, `sklearn`, `jaxlib`).
    #[serde(default)]
    pub aliases: Vec<String>,
}

impl ReleaseTemplate {
    /// The module a built environment must import.
    pub fn module(&self) -> String {
        self.import_name.clone().unwrap_or_else(|| self.package.replace('-', "_"))
    }
}

/// One release of the project's package on the index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReleaseInfo {
    /// The version as the index spells it.
    pub version: String,
    /// When its first file was uploaded.
    pub published: Option<DateTime<Utc>>,
    pub prerelease: bool,
    pub yanked: bool,
    /// Whether an environment can be built for it here (a wheel for this
    /// Python, or setup commands); `reason` says why not.
    pub buildable: bool,
    #[serde(default)]
    pub reason: Option<String>,
}

/// `GET /api/v1/releases?project=owner/name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProjectReleases {
    pub template: Option<ReleaseTemplate>,
    /// Newest first; empty when no template is set.
    pub releases: Vec<ReleaseInfo>,
    /// Why the list is empty or old: the index could not be reached.
    #[serde(default)]
    pub note: Option<String>,
}

/// The buggy and fixed releases a report is graded on, and the bisect's result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReportVersions {
    pub buggy: Option<String>,
    /// Where `buggy` came from: the report's line (`body: "pandas version: 2.0.0"`) or who set it.
    pub buggy_source: Option<String>,
    pub fixed: Option<String>,
    pub fixed_source: Option<String>,
    /// A version the report names that is not a release on the index, and why it was not taken.
    #[serde(default)]
    pub rejected: Option<String>,
    #[serde(default)]
    pub bisect: Option<Bisect>,
}

/// `POST /api/v1/reports/{id}/versions`: a maintainer sets either or both;
/// an empty string clears one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SetReportVersions {
    #[serde(default)]
    pub buggy: Option<String>,
    #[serde(default)]
    pub fixed: Option<String>,
}

/// A search over releases for the first one where a reproduction passes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Bisect {
    /// `running`, `found`, `still_fails`, `passes_on_buggy`, `error`.
    pub state: String,
    pub attempt_id: Option<i64>,
    /// The releases searched: from the buggy one to the newest.
    pub from: String,
    pub to: String,
    pub first_passing: Option<String>,
    pub last_failing: Option<String>,
    /// One sentence: "fixed in pandas 2.0.1", "still fails on 2.2.3".
    pub summary: String,
    pub steps: Vec<BisectStep>,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

/// One release the bisect ran the candidate on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BisectStep {
    pub version: String,
    /// `fails`, `passes` or `error` (the environment would not build, or the run was not decisive).
    pub outcome: String,
    pub detail: String,
    pub seconds: f64,
}

/// `POST /api/v1/releases`: sets (or, with no template, removes) how a project builds its releases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SetReleaseTemplate {
    pub project: String,
    #[serde(default)]
    pub template: Option<ReleaseTemplate>,
}

/// `POST /api/v1/reports/{id}/bisect`: the attempt whose candidate is run
/// (by default the report's newest reproduced attempt with a candidate).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BisectRequest {
    #[serde(default)]
    pub attempt_id: Option<i64>,
}

/// One environment the runner keeps built (`GET /api/v1/runners/environments`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CachedEnvironment {
    /// `pandas 2.0.0` for a release; `recipe <hash>` for a project's own recipe.
    pub label: String,
    /// The resolved recipe's hash: the cache's key.
    pub hash: String,
    pub size_bytes: u64,
    pub built_seconds: Option<f64>,
    /// When a run last used it (or it was built).
    pub last_used: Option<DateTime<Utc>>,
    /// Whether its build needed the index (false: all from the wheel cache).
    pub fetched: Option<bool>,
}

/// What this server's environment cache holds, most recently used first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EnvironmentCache {
    pub environments: Vec<CachedEnvironment>,
    /// Environments of projects the caller may not read: counted, not named.
    pub hidden: usize,
    /// Every environment's size, hidden ones included.
    pub total_bytes: u64,
    /// `--env-cache-gb`; none: no cap.
    pub cap_bytes: Option<u64>,
    /// The shared wheel cache (not counted against the cap: it rebuilds an
    /// evicted environment with no network).
    pub wheel_cache_bytes: u64,
}
