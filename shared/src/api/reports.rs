//! `/api/v1/reports`

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use super::query::{FieldError, non_empty, parse_field};
use super::{DEFAULT_LIMIT, MAX_LIMIT};
use crate::model::{Category, OracleKind, OracleSource, ReportStatus, Resolution, Route, UpstreamState, Verdict};

/// How a candidate is graded for one report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Oracle {
    pub kind: OracleKind,
    /// Required for deterministic kinds; absent for `llm_judge` and `none`.
    #[serde(default)]
    pub source: Option<OracleSource>,
    /// The command a runner executes (script or test invocation).
    #[serde(default)]
    pub command: Option<String>,
    /// Test ids that must fail on buggy and pass on fixed.
    #[serde(default)]
    pub fail_to_pass: Vec<String>,
    /// Test ids that must keep passing on fixed.
    #[serde(default)]
    pub pass_to_pass: Vec<String>,
    /// For `crash_signature`: exception type and message pattern.
    #[serde(default)]
    pub signature: Option<String>,
    /// Repeats per environment for nondeterministic failures (default 1).
    #[serde(default)]
    pub repeats: Option<u32>,
    /// Maintainer minutes spent authoring it (source `authored`).
    #[serde(default)]
    pub authoring_minutes: Option<f64>,
}

impl Oracle {
    pub fn is_deterministic(&self) -> bool {
        self.kind.is_deterministic()
    }

    /// What `grading::verifiable` asks of an oracle: its kind and command.
    pub fn kind_and_command(&self) -> (OracleKind, Option<&str>) {
        (self.kind, self.command.as_deref())
    }

    pub fn validate(&self) -> Result<(), FieldError> {
        let has_command = self.command.as_deref().is_some_and(|c| !c.trim().is_empty());
        match self.kind {
            OracleKind::FailToPass if self.fail_to_pass.is_empty() && !has_command => {
                return Err(FieldError::new(
                    "oracle.fail_to_pass",
                    "a `fail_to_pass` oracle needs test ids or a command",
                ));
            }
            OracleKind::CrashSignature if self.signature.as_deref().is_none_or(|s| s.trim().is_empty()) => {
                return Err(FieldError::new(
                    "oracle.signature",
                    "a `crash_signature` oracle needs the signature it expects",
                ));
            }
            OracleKind::LlmJudge | OracleKind::None if self.source.is_some() => {
                return Err(FieldError::new(
                    "oracle.source",
                    format!("a `{}` oracle has no source: only deterministic oracles do", self.kind),
                ));
            }
            _ => {}
        }
        if self.kind.is_deterministic() && self.source.is_none() {
            return Err(FieldError::new(
                "oracle.source",
                format!("a `{}` oracle needs a source (in_patch_test, authored, reporter or derived)", self.kind),
            ));
        }
        if let Some(r) = self.repeats
            && !(1..=100).contains(&r)
        {
            return Err(FieldError::new("oracle.repeats", "must be between 1 and 100"));
        }
        if let Some(m) = self.authoring_minutes
            && !(m.is_finite() && (0.0..=100_000.0).contains(&m))
        {
            return Err(FieldError::new("oracle.authoring_minutes", "must be between 0 and 100000"));
        }
        let tests = self.fail_to_pass.iter().chain(&self.pass_to_pass);
        if self.fail_to_pass.len() + self.pass_to_pass.len() > 100_000
            || tests.map(String::len).sum::<usize>() > 10_000_000
        {
            return Err(FieldError::new("oracle", "too many test ids"));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({
    "project": "pytorch/pytorch",
    "external_id": "120000",
    "url": "https://github.com/pytorch/pytorch/issues/120000",
    "title": "torch.logsumexp returns NaN instead of inf for large inputs in float16",
    "body": "```python\nimport torch\ntorch.logsumexp(torch.tensor([70000.0], dtype=torch.float16), 0)\n```\nreturns `nan`.",
    "labels": ["bug", "module: numerical-stability"],
    "filed_at": "2026-11-30T09:12:00Z",
    "oracle": {"kind": "fail_to_pass", "source": "in_patch_test", "fail_to_pass": ["test/test_reductions.py::test_logsumexp_fp16"]}
})))]
pub struct CreateReportRequest {
    /// The project's slug.
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::api::openapi::slug))]
    pub project: String,
    /// Issue number or benchmark instance id; unique within the project.
    pub external_id: String,
    #[serde(default)]
    pub url: Option<String>,
    pub title: String,
    /// Markdown.
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub labels: Vec<String>,
    /// When the reporter filed it; intake time when absent.
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc_opt"))]
    pub filed_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub reporter: Option<String>,
    /// Framework and versions, hardware.
    #[serde(default)]
    pub environment: Option<String>,
    /// File paths the report or its fix touches (help categorise it).
    #[serde(default)]
    pub paths: Vec<String>,
    #[serde(default)]
    pub oracle: Option<Oracle>,
    /// Its state in the upstream tracker: a report closed there, or whose
    /// type or labels say it is not a bug, leaves the backlog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<Upstream>,
}

/// A report's state in its upstream tracker, as the tracker says it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Upstream {
    pub state: UpstreamState,
    /// Why it was closed, in the tracker's words (GitHub: `completed`, `not_planned`, `duplicate`).
    #[serde(default)]
    pub reason: Option<String>,
    /// Conversation locked upstream.
    #[serde(default)]
    pub locked: bool,
    /// The tracker's own type of the issue (GitHub issue types: `Bug`, `Feature`, `Task`).
    #[serde(default)]
    pub kind: Option<String>,
    /// The milestone it was closed in (GitHub's `milestone.title`, `2.0.1`):
    /// for a project that builds releases, a closed, completed report's
    /// fixed release when it is a version. Read when the report is taken in
    /// and kept as that fixed release, not on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub milestone: Option<String>,
}

impl Upstream {
    pub fn validate(&self) -> Result<(), FieldError> {
        for (field, v) in
            [("upstream.reason", &self.reason), ("upstream.kind", &self.kind), ("upstream.milestone", &self.milestone)]
        {
            if v.as_ref().is_some_and(|v| v.trim().is_empty() || v.len() > 100) {
                return Err(FieldError::new(field, "must be 1 to 100 characters"));
            }
        }
        Ok(())
    }
}

impl CreateReportRequest {
    /// Trims the identifying text and drops repeated labels, so the routing
    /// rule sees exactly what is stored (a re-route then finds nothing to change).
    pub fn normalize(&mut self) {
        self.external_id = self.external_id.trim().to_owned();
        self.title = self.title.trim().to_owned();
        let mut labels: Vec<String> = Vec::with_capacity(self.labels.len());
        for l in self.labels.drain(..) {
            let l = l.trim().to_owned();
            if !labels.contains(&l) {
                labels.push(l);
            }
        }
        self.labels = labels;
    }

    pub fn validate(&self) -> Result<(), FieldError> {
        let id = self.external_id.trim();
        if id.is_empty() || id.len() > 200 {
            return Err(FieldError::new("external_id", "must be 1 to 200 characters"));
        }
        if self.title.trim().is_empty() || self.title.len() > 500 {
            return Err(FieldError::new("title", "must be 1 to 500 characters"));
        }
        super::query::check_time("filed_at", self.filed_at.as_ref())?;
        if let Some(url) = &self.url {
            let scheme_ok = url.starts_with("https://") || url.starts_with("http://");
            if !scheme_ok || url.len() > 2000 || url.chars().any(char::is_whitespace) {
                return Err(FieldError::new(
                    "url",
                    "must be an http(s) address without spaces, at most 2000 characters",
                ));
            }
        }
        for (field, v, max) in
            [("reporter", self.reporter.as_ref(), 200), ("environment", self.environment.as_ref(), 10_000)]
        {
            if v.is_some_and(|v| v.len() > max) {
                return Err(FieldError::new(field, format!("is longer than {max} bytes")));
            }
        }
        if self.paths.len() > 10_000 || self.paths.iter().any(|p| p.len() > 1000) {
            return Err(FieldError::new("paths", "at most 10000 paths of at most 1000 bytes"));
        }
        if self.body.len() > 1_000_000 {
            return Err(FieldError::new("body", "is longer than 1,000,000 bytes"));
        }
        if self.labels.len() > 100 {
            return Err(FieldError::new("labels", "more than 100 labels"));
        }
        if let Some(i) = self.labels.iter().position(|l| l.trim().is_empty() || l.len() > 100) {
            return Err(FieldError::new(format!("labels[{i}]"), "must be 1 to 100 characters"));
        }
        if let Some(o) = &self.oracle {
            o.validate()?;
        }
        if let Some(u) = &self.upstream {
            u.validate()?;
        }
        Ok(())
    }
}

/// Report features derived on intake.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReportFeatures {
    pub has_code_block: bool,
    pub has_traceback: bool,
    pub has_versions: bool,
    pub has_expected_actual: bool,
    /// Characters in title and body.
    pub length: u32,
}

/// One rule of the triage decision: whether it fired, and on what evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RuleOutcome {
    pub rule: String,
    pub fired: bool,
    pub evidence: String,
}

/// The list view of a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReportSummary {
    pub id: i64,
    pub project: String,
    pub external_id: String,
    pub url: Option<String>,
    pub title: String,
    pub labels: Vec<String>,
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc"))]
    pub filed_at: DateTime<Utc>,
    pub route: Route,
    pub category: Category,
    pub vague: bool,
    pub llm_only: bool,
    pub oracle_kind: OracleKind,
    pub status: ReportStatus,
    /// The best verdict among its reproduction attempts (`reproduced` over
    /// `confirmed` over … `error`); status and this follow goal `reproduce` only.
    pub best_verdict: Option<Verdict>,
    /// Reproduction attempts.
    pub attempts: i64,
    /// Spend on reproduction attempts (fix attempts are counted under goal `fix` in the figures).
    pub cost_usd: f64,
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc"))]
    pub created_at: DateTime<Utc>,
    /// The rule was unsure of the route (confidence under `min_confidence`):
    /// a human should look at it.
    #[serde(default)]
    pub route_check: bool,
    /// A maintainer corrected the route; re-routing keeps it.
    #[serde(default)]
    pub route_corrected: bool,
    /// Its state in the upstream tracker, when the intake said.
    #[serde(default)]
    pub upstream_state: Option<UpstreamState>,
    /// The member working on it.
    #[serde(default)]
    pub assignee: Option<String>,
    /// The last change to it or its attempts.
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc_opt"))]
    pub last_activity_at: Option<DateTime<Utc>>,
}

/// A maintainer's correction of a report's route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RouteCorrection {
    /// The route it has now.
    pub route: Route,
    /// The route it had before (the rule's, or an earlier correction).
    pub previous: Route,
    pub reason: String,
    /// Who corrected it.
    pub by: String,
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc"))]
    pub at: DateTime<Utc>,
}

/// `POST /api/v1/reports/{id}/route`: a maintainer sets the route, saying why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({
    "route": "human_first",
    "reason": "the crash is in the launcher's environment handling, not in the op"
})))]
pub struct CorrectRouteRequest {
    pub route: Route,
    /// Why: shown on the report, and kept with the correction.
    pub reason: String,
}

impl CorrectRouteRequest {
    pub fn validate(&self) -> Result<(), FieldError> {
        let n = self.reason.trim().chars().count();
        if n == 0 || n > 2000 {
            return Err(FieldError::new("reason", "must say why, in 1 to 2000 characters"));
        }
        Ok(())
    }
}

/// The full report, with its routing explanation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Report {
    #[serde(flatten)]
    pub summary: ReportSummary,
    /// Markdown, as filed.
    pub body: String,
    /// `body` rendered to sanitised HTML: raw HTML shown as text, only
    /// http(s), mailto and in-site links, images as links.
    #[serde(default)]
    pub body_html: String,
    pub reporter: Option<String>,
    pub environment: Option<String>,
    pub paths: Vec<String>,
    pub features: ReportFeatures,
    pub oracle: Option<Oracle>,
    pub explanation: Vec<RuleOutcome>,
    /// The maintainer's correction of the route, if any.
    #[serde(default)]
    pub route_correction: Option<RouteCorrection>,
    /// Its state in the upstream tracker, when the intake said.
    #[serde(default)]
    pub upstream: Option<Upstream>,
    /// Why it left the backlog without a verdict, and who said so.
    #[serde(default)]
    pub resolution: Option<ResolutionInfo>,
    /// What happened to it, oldest first: intake, upstream changes, status,
    /// assignment, route and comments, each with who, when and through what.
    #[serde(default)]
    pub activity: Vec<Activity>,
    /// Its upstream state, resolution, assignee and activity as HTML (every
    /// text escaped), as the report page shows them.
    #[serde(default)]
    pub lifecycle_html: String,
}

/// A report's resolution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResolutionInfo {
    pub resolution: Resolution,
    /// `upstream` when read from the tracker, else the member who set it.
    pub by: String,
    /// For a duplicate: the report it duplicates (id and upstream number).
    #[serde(default)]
    pub duplicate_of: Option<ReportRef>,
}

/// Another report, by id and by its upstream number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReportRef {
    pub id: i64,
    pub external_id: String,
}

/// One entry of a report's activity timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Activity {
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc"))]
    pub at: DateTime<Utc>,
    /// A member's name, a token's owner, `upstream` or `import`.
    pub actor: String,
    /// Through what: `ui`, `api`, `import`, `webhook`, `sync`, `cli`.
    pub via: String,
    /// `created`, `upstream`, `status`, `assigned`, `route`, `comment`.
    pub kind: String,
    /// What changed, in words (`new → duplicate of #5641`), or the comment.
    pub text: String,
}

/// `POST /api/v1/reports/{id}/status`: a maintainer closes, marks or reopens a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SetStatusRequest {
    /// `closed`, `duplicate`, `wont_fix`, `not_a_bug`, or `reopen` (back to
    /// what its attempts say, whatever upstream says).
    pub status: String,
    /// For `duplicate`: the other report of the project, by its upstream
    /// number (`5641` or `#5641`).
    #[serde(default)]
    pub duplicate_of: Option<String>,
    /// Why (optional); kept in the activity.
    #[serde(default)]
    pub reason: Option<String>,
}

impl SetStatusRequest {
    /// The resolution asked for; `None` for `reopen`.
    pub fn resolution(&self) -> Result<Option<Resolution>, FieldError> {
        let s = self.status.trim();
        if s == "reopen" {
            return Ok(None);
        }
        match s.parse::<Resolution>() {
            Ok(Resolution::ClosedUpstream) | Err(_) => Err(FieldError::new(
                "status",
                format!("`{s}` is not one of closed, duplicate, wont_fix, not_a_bug, reopen"),
            )),
            Ok(r) => Ok(Some(r)),
        }
    }

    pub fn validate(&self) -> Result<(), FieldError> {
        let r = self.resolution()?;
        match (r, self.duplicate_of.as_deref().map(str::trim)) {
            (Some(Resolution::Duplicate), None | Some("" | "#")) => {
                return Err(FieldError::new("duplicate_of", "a duplicate names the report it duplicates"));
            }
            (Some(Resolution::Duplicate), Some(d)) if d.len() > 200 => {
                return Err(FieldError::new("duplicate_of", "is longer than 200 characters"));
            }
            (Some(Resolution::Duplicate), _) => {}
            (_, Some(_)) => return Err(FieldError::new("duplicate_of", "only a duplicate names another report")),
            _ => {}
        }
        if self.reason.as_ref().is_some_and(|r| r.chars().count() > 2000) {
            return Err(FieldError::new("reason", "is longer than 2000 characters"));
        }
        Ok(())
    }
}

/// `POST /api/v1/reports/{id}/assign`: who works on it (a member of its project), or nobody.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AssignRequest {
    /// An account name; null (or absent) unassigns.
    #[serde(default)]
    pub assignee: Option<String>,
}

/// `POST /api/v1/reports/{id}/comments`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CommentRequest {
    /// Plain text, 1 to 10,000 characters.
    pub text: String,
}

impl CommentRequest {
    pub fn validate(&self) -> Result<(), FieldError> {
        let n = self.text.trim().chars().count();
        if n == 0 || n > 10_000 {
            return Err(FieldError::new("text", "must be 1 to 10000 characters"));
        }
        Ok(())
    }
}

/// Filters shared by the reports list and the figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReportFilter {
    /// Project slug.
    pub project: Option<String>,
    pub route: Option<Route>,
    pub status: Option<ReportStatus>,
    /// Reports carrying this label.
    pub label: Option<String>,
    /// Reports whose best verdict is this.
    pub verdict: Option<Verdict>,
    /// Free text over title, body and external id (case-insensitive).
    pub q: Option<String>,
    /// Reports filed on or after this day (UTC).
    #[cfg_attr(target_arch = "wasm32", serde(default, deserialize_with = "crate::time::date_opt"))]
    pub since: Option<NaiveDate>,
    /// Reports filed on or before this day (UTC).
    #[cfg_attr(target_arch = "wasm32", serde(default, deserialize_with = "crate::time::date_opt"))]
    pub until: Option<NaiveDate>,
    /// Reports whose route the rule was unsure of (`true`), or sure of (`false`).
    pub route_check: Option<bool>,
    /// A window relative to today (this month, the last 30 days…), instead
    /// of `since` and `until`.
    #[serde(default)]
    pub period: Option<Period>,
    /// Which date the window (`since`/`until` or `period`) is of: filing
    /// (the default), the first counting reproduction, or spend (attempts
    /// started in it; the figures then count only those attempts).
    #[serde(default)]
    pub dated: Dated,
}

crate::model::string_enum!(
    /// A window relative to today (UTC); weeks start on Monday.
    Period, "period" {
        ThisWeek => "this_week",
        LastWeek => "last_week",
        Last30Days => "last_30_days",
        ThisMonth => "this_month",
        LastMonth => "last_month",
        Last90Days => "last_90_days",
        ThisQuarter => "this_quarter",
        LastQuarter => "last_quarter",
        ThisYear => "this_year",
    }
);

impl Period {
    /// The period's days as `[first, last]`, on the day `today`.
    pub fn days(self, today: NaiveDate) -> (NaiveDate, NaiveDate) {
        use chrono::{Datelike, Duration};
        let month_start = |y: i32, m: u32| NaiveDate::from_ymd_opt(y, m, 1).unwrap_or(today);
        let monday = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
        let this_month = month_start(today.year(), today.month());
        let quarter = month_start(today.year(), (today.month() - 1) / 3 * 3 + 1);
        let months_back = |d: NaiveDate, n: u32| d.checked_sub_months(chrono::Months::new(n)).unwrap_or(d);
        let day_before = |d: NaiveDate| d.pred_opt().unwrap_or(d);
        match self {
            Period::ThisWeek => (monday, today),
            Period::LastWeek => (monday - Duration::days(7), monday - Duration::days(1)),
            Period::Last30Days => (today - Duration::days(29), today),
            Period::ThisMonth => (this_month, today),
            Period::LastMonth => (months_back(this_month, 1), day_before(this_month)),
            Period::Last90Days => (today - Duration::days(89), today),
            Period::ThisQuarter => (quarter, today),
            Period::LastQuarter => (months_back(quarter, 3), day_before(quarter)),
            Period::ThisYear => (month_start(today.year(), 1), today),
        }
    }

    /// The period in words, as a page's heading says it.
    pub fn label(self) -> String {
        let s = self.as_str().replace('_', " ");
        s[..1].to_uppercase() + &s[1..]
    }
}

crate::model::string_enum!(
    /// Which date a filter's window is of.
    #[derive(Default)]
    Dated, "dated" {
        /// When the report was filed.
        #[default]
        Filed => "filed",
        /// When its first counting reproduction ended.
        Reproduced => "reproduced",
        /// When money was spent on it: attempts started in the window.
        Spent => "spent",
    }
);

impl ReportFilter {
    /// Its query parameters, as error messages list them.
    pub const PARAMETERS: &'static str =
        "project, route, status, label, verdict, q, since, until, period, dated, route_check";

    /// Takes `key=value` if it is one of the filter's parameters.
    /// `Ok(false)` means the key is not a filter parameter.
    pub fn take(&mut self, key: &str, value: &str) -> Result<bool, FieldError> {
        let v = non_empty(value);
        match key {
            "project" => self.project = v.map(str::to_owned),
            "route" => self.route = v.map(|v| parse_field(key, v)).transpose()?,
            "status" => self.status = v.map(|v| parse_field(key, v)).transpose()?,
            "label" => self.label = v.map(str::to_owned),
            "verdict" => self.verdict = v.map(|v| parse_field(key, v)).transpose()?,
            "q" => {
                if v.is_some_and(|v| v.len() > 200) {
                    return Err(FieldError::new("q", "is longer than 200 characters"));
                }
                self.q = v.map(str::to_owned)
            }
            "since" => self.since = v.map(|v| parse_day(key, v)).transpose()?,
            "until" => self.until = v.map(|v| parse_day(key, v)).transpose()?,
            "period" => self.period = v.map(|v| parse_field(key, v)).transpose()?,
            "dated" => self.dated = v.map(|v| parse_field(key, v)).transpose()?.unwrap_or_default(),
            "route_check" => {
                self.route_check = v
                    .map(|v| match v {
                        "true" => Ok(true),
                        "false" => Ok(false),
                        _ => Err(FieldError::new(key, format!("`{v}` is not true or false"))),
                    })
                    .transpose()?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(v) = &self.project {
            out.push(("project", v.clone()));
        }
        if let Some(v) = self.route {
            out.push(("route", v.to_string()));
        }
        if let Some(v) = self.status {
            out.push(("status", v.to_string()));
        }
        if let Some(v) = &self.label {
            out.push(("label", v.clone()));
        }
        if let Some(v) = self.verdict {
            out.push(("verdict", v.to_string()));
        }
        if let Some(v) = &self.q {
            out.push(("q", v.clone()));
        }
        if let Some(v) = self.since {
            out.push(("since", v.to_string()));
        }
        if let Some(v) = self.until {
            out.push(("until", v.to_string()));
        }
        if let Some(v) = self.period {
            out.push(("period", v.to_string()));
        }
        if self.dated != Dated::Filed {
            out.push(("dated", self.dated.to_string()));
        }
        if let Some(v) = self.route_check {
            out.push(("route_check", v.to_string()));
        }
        out
    }

    /// A window that ends before it starts is a mistake worth naming.
    pub fn check_window(&self) -> Result<(), FieldError> {
        if self.period.is_some() && (self.since.is_some() || self.until.is_some()) {
            return Err(FieldError::new("period", "give a period or since and until, not both"));
        }
        match (self.since, self.until) {
            (Some(s), Some(u)) if s > u => {
                Err(FieldError::new("since", format!("{s} is after until ({u}): the window holds no day")))
            }
            _ => Ok(()),
        }
    }

    /// The time window as instants, on the day `today` (for a `period`):
    /// `[since 00:00, until+1 00:00)` UTC.
    pub fn window(&self, today: NaiveDate) -> (Option<DateTime<Utc>>, Option<DateTime<Utc>>) {
        let start = |d: NaiveDate| d.and_hms_opt(0, 0, 0).map(|t| t.and_utc());
        let (since, until) = match self.period {
            Some(p) => {
                let (first, last) = p.days(today);
                (Some(first), Some(last))
            }
            None => (self.since, self.until),
        };
        (since.and_then(start), until.and_then(|d| d.succ_opt()).and_then(start))
    }
}

/// A day as `YYYY-MM-DD`, naming the parameter when it is anything else.
pub fn parse_day(field: &str, value: &str) -> Result<NaiveDate, FieldError> {
    // By hand: chrono's general format parser would weigh on the dashboard's bundle.
    let mut parts = value.split('-');
    let mut num = |len: usize| {
        parts
            .next()
            .filter(|p| p.len() == len && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<u32>().ok())
    };
    let day = match (num(4), num(2), num(2), parts.next()) {
        (Some(y), Some(m), Some(d), None) => NaiveDate::from_ymd_opt(y as i32, m, d),
        _ => None,
    };
    day.filter(|d| (1970..=9999).contains(&d.year()))
        .ok_or_else(|| FieldError::new(field, format!("`{value}` is not a day: expected YYYY-MM-DD, e.g. 2026-11-30")))
}

crate::model::string_enum!(
    /// What the reports list can be ordered by; ties break on id.
    ReportSort, "sort" {
        FiledAt => "filed_at",
        CreatedAt => "created_at",
        Cost => "cost",
        Attempts => "attempts",
        /// The last change to the report or its attempts (`last_activity_at`).
        LastActivity => "last_activity",
    }
);

// `string_enum!` derives no `Default`: the default variant is named here.
#[allow(clippy::derivable_impls)]
impl Default for ReportSort {
    fn default() -> Self {
        ReportSort::FiledAt
    }
}

crate::model::string_enum!(
    /// `asc` or `desc`.
    Order, "order" {
        Asc => "asc",
        Desc => "desc",
    }
);

// `string_enum!` derives no `Default`: the default variant is named here.
#[allow(clippy::derivable_impls)]
impl Default for Order {
    fn default() -> Self {
        Order::Desc
    }
}

/// `GET /api/v1/reports` parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReportListQuery {
    pub filter: ReportFilter,
    /// Reports with an attempt by this agent.
    pub agent: Option<String>,
    /// Reports with an attempt by this model.
    pub model: Option<String>,
    /// Stuck reports: not in a final state, and nothing happened to them
    /// (no change, no attempt) for this many days.
    pub stuck_days: Option<u32>,
    pub sort: ReportSort,
    pub order: Order,
    pub limit: u32,
    pub cursor: Option<String>,
}

impl Default for ReportListQuery {
    fn default() -> Self {
        Self {
            filter: ReportFilter::default(),
            agent: None,
            model: None,
            stuck_days: None,
            sort: ReportSort::default(),
            order: Order::default(),
            limit: DEFAULT_LIMIT,
            cursor: None,
        }
    }
}

impl ReportListQuery {
    /// Parses query pairs; an unknown parameter is an error so typos do not
    /// silently widen a list.
    pub fn from_pairs<'a, I>(pairs: I) -> Result<Self, FieldError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut q = Self::default();
        for (k, v) in pairs {
            if q.filter.take(k, v)? {
                continue;
            }
            let val = non_empty(v);
            match k {
                "sort" => q.sort = val.map(|v| parse_field(k, v)).transpose()?.unwrap_or_default(),
                "order" => q.order = val.map(|v| parse_field(k, v)).transpose()?.unwrap_or_default(),
                "limit" => q.limit = val.map(parse_limit).transpose()?.unwrap_or(DEFAULT_LIMIT),
                "cursor" => q.cursor = val.map(str::to_owned),
                "agent" => q.agent = val.map(str::to_owned),
                "model" => q.model = val.map(str::to_owned),
                "stuck_days" => {
                    q.stuck_days = val
                        .map(|v| {
                            v.parse::<u32>().ok().filter(|d| (1..=3650).contains(d)).ok_or_else(|| {
                                FieldError::new(k, format!("`{v}` is not a number of days from 1 to 3650"))
                            })
                        })
                        .transpose()?
                }
                _ => {
                    return Err(unknown_parameter(
                        k,
                        &format!("{}, agent, model, stuck_days, sort, order, limit, cursor", ReportFilter::PARAMETERS),
                    ));
                }
            }
        }
        q.filter.check_window()?;
        Ok(q)
    }

    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut out = self.filter.pairs();
        for (k, v) in [("agent", &self.agent), ("model", &self.model)] {
            if let Some(v) = v {
                out.push((k, v.clone()));
            }
        }
        if let Some(v) = self.stuck_days {
            out.push(("stuck_days", v.to_string()));
        }
        if self.sort != ReportSort::default() {
            out.push(("sort", self.sort.as_str().to_owned()));
        }
        if self.order != Order::default() {
            out.push(("order", self.order.as_str().to_owned()));
        }
        if self.limit != DEFAULT_LIMIT {
            out.push(("limit", self.limit.to_string()));
        }
        if let Some(c) = &self.cursor {
            out.push(("cursor", c.clone()));
        }
        out
    }
}

/// `limit`: 1 to [`MAX_LIMIT`].
pub fn parse_limit(v: &str) -> Result<u32, FieldError> {
    match v.parse::<u32>() {
        Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        _ => Err(FieldError::new("limit", format!("`{v}` is not a whole number between 1 and {MAX_LIMIT}"))),
    }
}

pub fn unknown_parameter(key: &str, known: &str) -> FieldError {
    FieldError::new(key, format!("unknown query parameter `{key}`; known: {known}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_days_relative_to_today() {
        let day = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        let today = day("2026-12-03"); // a Thursday
        let cases = [
            (Period::ThisWeek, "2026-11-30", "2026-12-03"),
            (Period::LastWeek, "2026-11-23", "2026-11-29"),
            (Period::Last30Days, "2026-11-04", "2026-12-03"),
            (Period::ThisMonth, "2026-12-01", "2026-12-03"),
            (Period::LastMonth, "2026-11-01", "2026-11-30"),
            (Period::ThisQuarter, "2026-10-01", "2026-12-03"),
            (Period::LastQuarter, "2026-07-01", "2026-09-30"),
            (Period::ThisYear, "2026-01-01", "2026-12-03"),
            (Period::Last90Days, "2026-09-05", "2026-12-03"),
        ];
        for (p, first, last) in cases {
            assert_eq!(p.days(today), (day(first), day(last)), "{p}");
        }
        assert_eq!(Period::LastMonth.days(day("2026-01-15")), (day("2025-12-01"), day("2025-12-31")));
        // a week starts on Monday, on a Monday and on a Sunday alike
        assert_eq!(Period::ThisWeek.days(day("2026-11-30")), (day("2026-11-30"), day("2026-11-30")));
        assert_eq!(Period::ThisWeek.days(day("2026-12-06")), (day("2026-11-30"), day("2026-12-06")));
        assert_eq!(Period::LastWeek.days(day("2026-12-06")), (day("2026-11-23"), day("2026-11-29")));
        assert_eq!(Period::LastQuarter.days(day("2026-02-01")), (day("2025-10-01"), day("2025-12-31")));
        assert_eq!(Period::Last30Days.label(), "Last 30 days");
    }

    #[test]
    fn a_period_and_a_dated_window_parse_and_round_trip() {
        let mut f = ReportFilter::default();
        assert!(f.take("period", "this_month").unwrap());
        assert!(f.take("dated", "reproduced").unwrap());
        assert_eq!((f.period, f.dated), (Some(Period::ThisMonth), Dated::Reproduced));
        assert_eq!(f.pairs(), [("period", "this_month".to_owned()), ("dated", "reproduced".to_owned())]);
        assert_eq!(f.take("period", "fortnight").unwrap_err().field, "period");
        assert_eq!(f.take("dated", "closed").unwrap_err().field, "dated");
        f.since = NaiveDate::from_ymd_opt(2026, 1, 1);
        assert!(f.check_window().unwrap_err().message.contains("not both"));
        let (from, to) = ReportFilter { period: Some(Period::LastWeek), ..Default::default() }
            .window(NaiveDate::from_ymd_opt(2026, 12, 3).unwrap());
        assert_eq!(from.unwrap().to_rfc3339(), "2026-11-23T00:00:00+00:00");
        assert_eq!(to.unwrap().to_rfc3339(), "2026-11-30T00:00:00+00:00");
    }

    #[test]
    fn days_parse_strictly() {
        assert_eq!(parse_day("since", "2026-02-28").unwrap().to_string(), "2026-02-28");
        for bad in [
            "2026-02-30",
            "2026-2-28",
            "26-02-28",
            "2026-02-28x",
            "2026-02-28-01",
            "",
            "1969-12-31",
            "+202-01-01",
            "2026-0a-01",
        ] {
            let e = parse_day("since", bad).unwrap_err();
            assert_eq!(e.field, "since", "{bad}");
        }
    }

    #[test]
    fn list_query_round_trips() {
        let q = ReportListQuery::from_pairs([
            ("route", "agent_first"),
            ("q", "nan"),
            ("sort", "cost"),
            ("order", "asc"),
            ("limit", "10"),
            ("status", ""),
        ])
        .unwrap();
        assert_eq!(q.filter.route, Some(Route::AgentFirst));
        assert_eq!(q.filter.status, None);
        assert_eq!(q.sort, ReportSort::Cost);
        let pairs = q.pairs();
        let back = ReportListQuery::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str()))).unwrap();
        assert_eq!(back, q);
    }

    #[test]
    fn bad_parameters_name_the_field() {
        let e = ReportListQuery::from_pairs([("route", "robot")]).unwrap_err();
        assert_eq!(e.field, "route");
        assert!(e.message.contains("human_first"), "{}", e.message);
        assert_eq!(ReportListQuery::from_pairs([("limit", "0")]).unwrap_err().field, "limit");
        assert_eq!(ReportListQuery::from_pairs([("limit", "9999")]).unwrap_err().field, "limit");
        assert_eq!(ReportListQuery::from_pairs([("rout", "x")]).unwrap_err().field, "rout");
        assert_eq!(ReportListQuery::from_pairs([("sort", "title")]).unwrap_err().field, "sort");
    }

    #[test]
    fn deterministic_oracle_needs_source() {
        let mut o = Oracle {
            kind: OracleKind::FailToPass,
            source: None,
            command: None,
            fail_to_pass: vec!["t::a".into()],
            pass_to_pass: vec![],
            signature: None,
            repeats: None,
            authoring_minutes: None,
        };
        assert_eq!(o.validate().unwrap_err().field, "oracle.source");
        o.source = Some(OracleSource::Authored);
        o.fail_to_pass.clear();
        assert_eq!(o.validate().unwrap_err().field, "oracle.fail_to_pass", "an empty oracle checks nothing");
        o.command = Some("python repro.py".into());
        assert!(o.validate().is_ok());
        o.kind = OracleKind::CrashSignature;
        assert_eq!(o.validate().unwrap_err().field, "oracle.signature");
        o.kind = OracleKind::LlmJudge;
        assert_eq!(o.validate().unwrap_err().field, "oracle.source");
    }
}

/// `GET /api/v1/reports/table`: one page of the reports list as the triage
/// queue shows it (a table rendered and escaped by the server), with the
/// number of reports the filters select and the next page's cursor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkList {
    pub total: i64,
    pub next_cursor: Option<String>,
    pub html: String,
}
