//! `/api/v1/jobs`, `/api/v1/runners`, `/api/v1/environments` and reruns.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::query::FieldError;
use crate::model::{EnvironmentRole, JobKind, JobStatus};

/// What a job carries. One shape for every kind; fields a kind does not use stay empty.
///
/// The dashboard's WebAssembly reads only the attempt and report it names
/// (so it skips the rest, and takes fields it does not know).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(not(target_arch = "wasm32"), serde(deny_unknown_fields))]
pub struct JobPayload {
    /// The attempt to verify or re-check.
    #[serde(default)]
    pub attempt_id: Option<i64>,
    /// The report to refine (on the queue's lists, also an attempt's report).
    #[serde(default)]
    pub report_id: Option<i64>,
    /// For a re-check: the environment (by name) to run against instead of fixed.
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub environment: Option<String>,
    /// The draft oracle to validate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub oracle_draft_id: Option<i64>,
    /// The environment to build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub environment_id: Option<i64>,
    /// The outgoing webhook delivery to post.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub delivery_id: Option<i64>,
    /// Manual (from a person) rather than bulk or automatic.
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub manual: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Job {
    pub id: i64,
    pub kind: JobKind,
    pub payload: JobPayload,
    pub status: JobStatus,
    /// Higher runs first: manual reruns 20, initial verification 10, bulk 0.
    pub priority: i32,
    pub tries: i64,
    pub max_tries: i64,
    // The dashboard does not show these: its WebAssembly skips them.
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub run_after: DateTime<Utc>,
    pub lease_owner: Option<String>,
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc"))]
    pub created_at: DateTime<Utc>,
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub started_at: Option<DateTime<Utc>>,
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub finished_at: Option<DateTime<Utc>>,
}

/// Priorities: manual reruns go before initial verification, which goes before bulk work.
pub const PRIORITY_MANUAL: i32 = 20;
pub const PRIORITY_INITIAL: i32 = 10;
pub const PRIORITY_BULK: i32 = 0;

/// A runner (a worker in `serve`, or a `failpass worker` process) and its heartbeat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Runner {
    pub id: String,
    pub host: String,
    pub pid: i64,
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub started_at: DateTime<Utc>,
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc"))]
    pub last_heartbeat: DateTime<Utc>,
    pub current_job: Option<i64>,
    pub jobs_done: i64,
}

/// `GET /api/v1/jobs`: waiting and running jobs, recent failures, the runners, and
/// an estimated wait for a new job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QueueOverview {
    pub queued: i64,
    pub running: i64,
    pub failed_last_day: i64,
    pub done_last_day: i64,
    /// Mean seconds a finished job ran (the last 200), if any finished.
    pub mean_job_seconds: Option<f64>,
    /// Seconds until a newly queued job would start: the work queued ahead
    /// spread over the live runners (`None` when no runner is alive).
    pub estimated_wait_seconds: Option<f64>,
    pub jobs: Vec<Job>,
    pub recent_failures: Vec<Job>,
    pub runners: Vec<Runner>,
}

/// `POST /api/v1/reruns`: what to rerun. Exactly one of the selectors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"report_id": 1})))]
pub struct RerunRequest {
    /// One attempt.
    #[serde(default)]
    pub attempt_id: Option<i64>,
    /// Every failed or errored attempt of this report.
    #[serde(default)]
    pub report_id: Option<i64>,
    /// Every failed or errored attempt of the reports this filter selects (the
    /// triage queue's `project`, `route`, `status`, `label`, `verdict`, `q`).
    #[serde(default)]
    pub filter: Option<super::reports::ReportFilter>,
    /// Re-check reproduced attempts against this environment (by name)
    /// instead of rerunning failures.
    #[serde(default)]
    pub recheck_environment: Option<String>,
}

impl RerunRequest {
    pub fn validate(&self) -> Result<(), FieldError> {
        let given =
            [self.attempt_id.is_some(), self.report_id.is_some(), self.filter.is_some()].iter().filter(|b| **b).count();
        if given != 1 {
            return Err(FieldError::new("attempt_id", "give exactly one of attempt_id, report_id or filter"));
        }
        if self.recheck_environment.as_ref().is_some_and(|e| e.trim().is_empty()) {
            return Err(FieldError::new("recheck_environment", "must name an environment"));
        }
        Ok(())
    }
}

/// `POST /api/v1/reruns` answers with the jobs queued (or already queued).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RerunResponse {
    pub queued: Vec<i64>,
    /// Attempts that already had a waiting or running job.
    pub already_queued: usize,
}

/// How an environment is made: a directory (copied in) and setup commands,
/// run once and cached by the recipe's hash.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    /// A directory whose contents are copied into the environment.
    #[serde(default)]
    pub dir: Option<String>,
    /// A git repository and revision to check out instead of `dir`.
    #[serde(default)]
    pub git: Option<GitSource>,
    /// Shell commands run in order in the environment's directory (`sh -c`);
    /// network allowed. A failing command fails the environment.
    #[serde(default)]
    pub setup: Vec<String>,
    /// Variables set for every run in this environment; `{env}` is replaced
    /// by the environment's directory (`PYTHONPATH = "{env}"`).
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// A version label shown on re-checks (`fastnum 0.3.1`).
    #[serde(default)]
    pub version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct GitSource {
    pub url: String,
    pub rev: String,
}

impl Recipe {
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.dir.is_some() && self.git.is_some() {
            return Err(FieldError::new("recipe", "give dir or git, not both"));
        }
        if self.setup.iter().any(|c| c.trim().is_empty()) {
            return Err(FieldError::new("setup", "holds an empty command"));
        }
        if self.setup.iter().any(|c| c.contains('\0')) {
            return Err(FieldError::new("setup", "a command holds a NUL byte"));
        }
        if self.env.keys().any(|k| k.is_empty() || k.contains('=') || k.contains('\0')) {
            return Err(FieldError::new("env", "variable names must be non-empty and hold no `=` or NUL"));
        }
        if self.env.values().any(|v| v.contains('\0')) {
            return Err(FieldError::new("env", "a value holds a NUL byte"));
        }
        if self.dir.as_ref().is_some_and(|d| d.trim().is_empty() || d.contains('\0')) {
            return Err(FieldError::new("dir", "must be a path"));
        }
        Ok(())
    }

    /// Stable hash of the recipe: the cache key of the built environment.
    pub fn hash(&self) -> String {
        crate::hash::content_hash(self)
    }
}

/// `POST /api/v1/projects/{owner}/{name}/environments`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateEnvironmentRequest {
    /// The project's slug (taken from the body on `POST /api/v1/environments`).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::api::projects::slug))]
    pub project: String,
    pub name: String,
    pub role: EnvironmentRole,
    pub recipe: Recipe,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Environment {
    pub id: i64,
    pub project: String,
    pub name: String,
    pub role: EnvironmentRole,
    pub recipe: Recipe,
    pub recipe_hash: String,
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc"))]
    pub created_at: DateTime<Utc>,
}

/// A build of an environment asked for on the set-up page (or
/// `POST /api/v1/environments/{id}/build`), with everything it printed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EnvironmentBuild {
    pub id: i64,
    pub environment_id: i64,
    pub job_id: Option<i64>,
    /// The recipe built (an edit since makes this build stale).
    pub recipe_hash: String,
    pub status: crate::model::BuildStatus,
    pub log: String,
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc"))]
    pub started_at: DateTime<Utc>,
    #[cfg_attr(target_arch = "wasm32", serde(default, deserialize_with = "crate::time::utc_opt"))]
    pub finished_at: Option<DateTime<Utc>>,
}

impl CreateEnvironmentRequest {
    pub fn validate(&self) -> Result<(), FieldError> {
        let n = self.name.trim();
        if n.is_empty() || n.len() > 100 || !n.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
            return Err(FieldError::new("name", "must be 1 to 100 characters of letters, digits, `.`, `_` or `-`"));
        }
        self.recipe.validate()
    }
}

/// `POST /api/v1/refine`: run the refine loop on an `agent_first` report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RefineRequest {
    pub report_id: i64,
}

/// `GET /api/v1/signatures`: graded attempts grouped by the normalised
/// failure signature they showed on buggy (most common first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SignatureGroup {
    pub signature: String,
    pub attempts: i64,
    pub reports: i64,
    /// Attempts in the group whose verdict is `reproduced`.
    pub reproduced: i64,
    /// Up to ten of the reports, lowest id first.
    pub report_ids: Vec<i64>,
    /// Their upstream numbers (external ids), in the same order.
    #[serde(default)]
    pub report_numbers: Vec<String>,
}
