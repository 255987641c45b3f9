//! `/api/v1/reports`

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::query::FieldError;
use crate::model::{Category, OracleKind, OracleSource, ReportStatus, Resolution, Route, UpstreamState, Verdict};

mod filter;
pub use filter::*;

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
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::api::projects::slug))]
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
    /// Whether `filed_at` was stated (or the report came in live); false
    /// when a file import gave none and it is only when failpass took it in.
    // The dashboard's WebAssembly does not read it.
    #[serde(default = "crate::api::yes")]
    #[cfg(not(target_arch = "wasm32"))]
    pub filed_at_stated: bool,
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

#[cfg(test)]
mod tests {
    use super::*;

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
