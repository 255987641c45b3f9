//! `/api/v1/attempts`

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use super::DEFAULT_LIMIT;
use super::query::{FieldError, non_empty, parse_field};
use super::reports::{parse_limit, unknown_parameter};
use crate::model::{FailureCause, Goal, Review, RunEnvironment, RunTrigger, SignalSource, Verdict, VerdictSource};

/// One verification signal and where its value came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Signal {
    pub passed: bool,
    pub source: SignalSource,
    #[serde(default)]
    pub detail: Option<String>,
}

/// The four signals (after RepGen). Absent means not computed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Signals {
    #[serde(default)]
    pub syntax: Option<Signal>,
    #[serde(default)]
    pub quality: Option<Signal>,
    #[serde(default)]
    pub relevance: Option<Signal>,
    #[serde(default)]
    pub failure_behaviour: Option<Signal>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({
    "report": {"project": "pytorch/pytorch", "external_id": "120000"},
    "agent": "repgen",
    "model": "gpt-5",
    "cost_usd": 0.42,
    "wall_seconds": 310.0,
    "candidate": "import torch\nassert not torch.logsumexp(torch.tensor([70000.0], dtype=torch.float16), 0).isnan()",
    "verdict": "lead",
    "verdict_source": "llm"
})))]
pub struct CreateAttemptRequest {
    /// The report, by failpass id…
    #[serde(default)]
    pub report_id: Option<i64>,
    /// …or by its natural key (project slug and external id). Give exactly one.
    #[serde(default)]
    pub report: Option<ReportKey>,
    #[serde(default)]
    pub goal: Goal,
    /// Agent name, or `human` for a person.
    pub agent: String,
    #[serde(default)]
    pub model: Option<String>,
    /// The model's training cutoff (for the contamination split).
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::date_opt"))]
    pub model_cutoff: Option<NaiveDate>,
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc_opt"))]
    pub started_at: Option<DateTime<Utc>>,
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc_opt"))]
    pub ended_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub wall_seconds: Option<f64>,
    /// What the attempt cost, in US dollars; absent (or null) when unknown,
    /// which is not $0: cost figures leave it out and count it apart.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    #[serde(default)]
    pub tokens_in: i64,
    #[serde(default)]
    pub tokens_out: i64,
    /// Model API calls the attempt made.
    #[serde(default)]
    pub api_calls: Option<i64>,
    #[serde(default = "one")]
    pub iterations: u32,
    #[serde(default)]
    pub candidate: Option<String>,
    #[serde(default)]
    pub signals: Signals,
    pub verdict: Verdict,
    pub verdict_source: VerdictSource,
    #[serde(default)]
    pub failure_cause: Option<FailureCause>,
    #[serde(default)]
    pub review: Option<Review>,
    #[serde(default)]
    pub reviewer: Option<String>,
    #[serde(default)]
    pub review_comment: Option<String>,
    /// Natural key for idempotent imports (agent + report + key).
    #[serde(default)]
    pub attempt_key: Option<String>,
    /// Where the first candidate that reproduced ranked among those the
    /// agent offered (1: its first choice); a study's ranking, kept with the
    /// attempt. Absent when not ranked.
    // The dashboard's WebAssembly does not send it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub rank: Option<u32>,
    /// Grade the candidate by execution: a verification job is queued with
    /// the attempt, and its verdict is replaced by what the runs show.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub verify: bool,
}

fn one() -> u32 {
    1
}

/// The largest cost one attempt may report, in US dollars.
pub const MAX_COST_USD: f64 = 100_000.0;
/// About 115 days.
pub const MAX_WALL_SECONDS: f64 = 10_000_000.0;
/// For tokens and API calls.
pub const MAX_COUNT: i64 = 1_000_000_000_000;
pub const MAX_ITERATIONS: u32 = 10_000;
/// The largest rank an attempt may carry.
pub const MAX_RANK: u32 = 100_000;

/// A report's natural key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReportKey {
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::api::projects::slug))]
    pub project: String,
    pub external_id: String,
}

/// An attempt's natural key: its report, agent and attempt key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AttemptKey {
    pub report: ReportKey,
    pub agent: String,
    pub attempt_key: String,
}

/// Captured output kept per run, in bytes.
pub const MAX_RUN_OUTPUT: usize = 1 << 20;

/// One execution of an attempt's candidate in one environment
/// (`{"kind": "run", …}` in NDJSON). Runs are facts: an identical run of the
/// same attempt is `unchanged`, any other is a new run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateRunRequest {
    /// The attempt, by failpass id…
    #[serde(default)]
    pub attempt_id: Option<i64>,
    /// …or by its natural key. Give exactly one.
    #[serde(default)]
    pub attempt: Option<AttemptKey>,
    #[serde(default)]
    pub trigger: RunTrigger,
    pub environment: RunEnvironment,
    #[serde(default)]
    pub exit_status: Option<i32>,
    #[serde(default)]
    pub timed_out: bool,
    #[serde(default)]
    pub duration_ms: i64,
    #[serde(default)]
    pub output: String,
    #[serde(default)]
    pub output_truncated: bool,
    /// Bytes the run wrote in all (defaults to the kept output's length).
    #[serde(default)]
    pub output_bytes: Option<i64>,
    #[serde(default)]
    pub failing_tests: Vec<String>,
    #[serde(default)]
    pub passing_tests: Vec<String>,
    #[serde(default)]
    pub runner_id: Option<String>,
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc_opt"))]
    pub started_at: Option<DateTime<Utc>>,
}

impl CreateRunRequest {
    pub fn validate(&self) -> Result<(), FieldError> {
        match (&self.attempt_id, &self.attempt) {
            (Some(_), None) | (None, Some(_)) => {}
            (None, None) => {
                return Err(FieldError::new("attempt_id", "give attempt_id or attempt {report, agent, attempt_key}"));
            }
            (Some(_), Some(_)) => return Err(FieldError::new("attempt", "give attempt_id or attempt, not both")),
        }
        if !(0..=(MAX_WALL_SECONDS as i64) * 1000).contains(&self.duration_ms) {
            return Err(FieldError::new(
                "duration_ms",
                format!("must be between 0 and {}", (MAX_WALL_SECONDS as i64) * 1000),
            ));
        }
        if self.output.len() > MAX_RUN_OUTPUT {
            return Err(FieldError::new(
                "output",
                format!("is longer than {MAX_RUN_OUTPUT} bytes; keep the first part and set output_truncated"),
            ));
        }
        if self.output_bytes.is_some_and(|b| b < self.output.len() as i64 || b > MAX_COUNT) {
            return Err(FieldError::new("output_bytes", "must be at least the kept output's length"));
        }
        for (field, tests) in [("failing_tests", &self.failing_tests), ("passing_tests", &self.passing_tests)] {
            if tests.len() > 100_000 || tests.iter().any(|t| t.trim().is_empty() || t.len() > 2_000) {
                return Err(FieldError::new(field, "holds at most 100,000 test ids of 1 to 2,000 bytes"));
            }
        }
        if self.runner_id.as_ref().is_some_and(|r| r.len() > 200) {
            return Err(FieldError::new("runner_id", "is longer than 200 bytes"));
        }
        super::query::check_time("started_at", self.started_at.as_ref())?;
        Ok(())
    }
}

impl CreateAttemptRequest {
    /// An attempt at report `report_id` by `agent`, with `verdict` said by
    /// `verdict_source`; the rest as an API caller who leaves it out gets it
    /// (goal `reproduce`, one iteration, no cost, no candidate).
    pub fn new(report_id: i64, agent: impl Into<String>, verdict: Verdict, verdict_source: VerdictSource) -> Self {
        Self {
            report_id: Some(report_id),
            report: None,
            goal: Goal::default(),
            agent: agent.into(),
            model: None,
            model_cutoff: None,
            started_at: None,
            ended_at: None,
            wall_seconds: None,
            cost_usd: None,
            tokens_in: 0,
            tokens_out: 0,
            api_calls: None,
            iterations: one(),
            candidate: None,
            signals: Signals::default(),
            verdict,
            verdict_source,
            failure_cause: None,
            review: None,
            reviewer: None,
            review_comment: None,
            attempt_key: None,
            rank: None,
            verify: false,
        }
    }

    /// The same, naming the report by its natural key.
    pub fn for_key(report: ReportKey, agent: impl Into<String>, verdict: Verdict, source: VerdictSource) -> Self {
        Self { report_id: None, report: Some(report), ..Self::new(0, agent, verdict, source) }
    }

    /// Checks what the verdict rules of docs/domain.md forbid.
    pub fn validate(&self) -> Result<(), FieldError> {
        match (&self.report_id, &self.report) {
            (Some(_), None) | (None, Some(_)) => {}
            (None, None) => {
                return Err(FieldError::new("report_id", "give report_id or report {project, external_id}"));
            }
            (Some(_), Some(_)) => return Err(FieldError::new("report", "give report_id or report, not both")),
        }
        if self.agent.trim().is_empty() || self.agent.len() > 200 {
            return Err(FieldError::new("agent", "must be 1 to 200 characters"));
        }
        for (field, t) in [("started_at", &self.started_at), ("ended_at", &self.ended_at)] {
            super::query::check_time(field, t.as_ref())?;
        }
        super::query::check_time(
            "model_cutoff",
            self.model_cutoff.and_then(|d| d.and_hms_opt(0, 0, 0)).map(|d| d.and_utc()).as_ref(),
        )?;
        if !self.verdict.allowed_for(self.goal) {
            return Err(FieldError::new(
                "verdict",
                format!("`{}` is not a verdict for goal `{}`", self.verdict, self.goal),
            ));
        }
        if self.verdict_source == VerdictSource::Llm && matches!(self.verdict, Verdict::Reproduced | Verdict::Resolved)
        {
            return Err(FieldError::new(
                "verdict",
                "an LLM's verdict is a lead until a human accepts it: use `lead` (or `confirmed` with review `accepted`)",
            ));
        }
        if self.verdict == Verdict::Confirmed && self.review != Some(Review::Accepted) {
            return Err(FieldError::new("review", "a `confirmed` verdict needs review `accepted`"));
        }
        if let Some(rank) = self.rank
            && !(1..=MAX_RANK).contains(&rank)
        {
            return Err(FieldError::new(
                "rank",
                format!("must be between 1 and {MAX_RANK} (1 is the first candidate)"),
            ));
        }
        // Bounds keep sums far from overflow: a million attempts at the cap still add up.
        if let Some(cost) = self.cost_usd
            && !(cost.is_finite() && (0.0..=MAX_COST_USD).contains(&cost))
        {
            return Err(FieldError::new("cost_usd", format!("must be between 0 and {MAX_COST_USD} (US dollars)")));
        }
        if let Some(w) = self.wall_seconds
            && !(w.is_finite() && (0.0..=MAX_WALL_SECONDS).contains(&w))
        {
            return Err(FieldError::new("wall_seconds", format!("must be between 0 and {MAX_WALL_SECONDS}")));
        }
        for (field, v) in
            [("tokens_in", Some(self.tokens_in)), ("tokens_out", Some(self.tokens_out)), ("api_calls", self.api_calls)]
        {
            if v.is_some_and(|v| !(0..=MAX_COUNT).contains(&v)) {
                return Err(FieldError::new(field, format!("must be between 0 and {MAX_COUNT}")));
            }
        }
        if !(1..=MAX_ITERATIONS).contains(&self.iterations) {
            return Err(FieldError::new("iterations", format!("must be between 1 and {MAX_ITERATIONS}")));
        }
        // The verdict rules of docs/domain.md: who may say what.
        match (self.verdict, self.verdict_source) {
            (Verdict::Lead, s) if s != VerdictSource::Llm => {
                return Err(FieldError::new(
                    "verdict_source",
                    "a `lead` is an LLM's verdict: use verdict_source `llm`",
                ));
            }
            (Verdict::Hypothesis, VerdictSource::Deterministic) => {
                return Err(FieldError::new(
                    "verdict_source",
                    "a `hypothesis` is ungraded, so it cannot be `deterministic`",
                ));
            }
            _ => {}
        }
        if self.verdict == Verdict::Lead && self.review == Some(Review::Accepted) {
            return Err(FieldError::new("verdict", "an accepted lead is `confirmed`: send verdict `confirmed`"));
        }
        if self.failure_cause.is_some() && self.verdict.is_success_for(self.goal) {
            return Err(FieldError::new("failure_cause", format!("a `{}` attempt did not fail", self.verdict)));
        }
        for (field, v, max) in [
            ("agent", Some(&self.agent), 200),
            ("model", self.model.as_ref(), 200),
            ("attempt_key", self.attempt_key.as_ref(), 500),
            ("reviewer", self.reviewer.as_ref(), 200),
            ("review_comment", self.review_comment.as_ref(), 20_000),
            ("candidate", self.candidate.as_ref(), 1_000_000),
        ] {
            if v.is_some_and(|v| v.len() > max) {
                return Err(FieldError::new(field, format!("is longer than {max} bytes")));
            }
        }
        if let (Some(s), Some(e)) = (self.started_at, self.ended_at)
            && e < s
        {
            return Err(FieldError::new("ended_at", "is before started_at"));
        }
        if self.verify && self.goal != Goal::Reproduce {
            return Err(FieldError::new("verify", "grading by execution is for `reproduce` attempts"));
        }
        if self.verify && self.verdict != Verdict::Hypothesis {
            return Err(FieldError::new(
                "verdict",
                "with `verify`, grading sets the verdict: send `hypothesis` until it is graded",
            ));
        }
        Ok(())
    }

    /// Wall seconds as given, else from start and end.
    pub fn effective_wall_seconds(&self) -> Option<f64> {
        self.wall_seconds.or_else(|| match (self.started_at, self.ended_at) {
            (Some(s), Some(e)) => Some((e - s).num_milliseconds() as f64 / 1000.0),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Attempt {
    pub id: i64,
    pub report_id: i64,
    pub project: String,
    pub goal: Goal,
    pub agent: String,
    pub model: Option<String>,
    #[cfg_attr(target_arch = "wasm32", serde(default, deserialize_with = "crate::time::date_opt"))]
    pub model_cutoff: Option<NaiveDate>,
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc"))]
    pub started_at: DateTime<Utc>,
    #[cfg_attr(target_arch = "wasm32", serde(default, deserialize_with = "crate::time::utc_opt"))]
    pub ended_at: Option<DateTime<Utc>>,
    pub wall_seconds: Option<f64>,
    /// `null` when the attempt's cost is unknown.
    pub cost_usd: Option<f64>,
    pub tokens_in: i64,
    pub tokens_out: i64,
    pub api_calls: Option<i64>,
    pub iterations: u32,
    pub candidate: Option<String>,
    pub signals: Signals,
    pub verdict: Verdict,
    pub verdict_source: VerdictSource,
    pub failure_cause: Option<FailureCause>,
    pub review: Option<Review>,
    pub reviewer: Option<String>,
    pub review_comment: Option<String>,
    pub attempt_key: Option<String>,
    /// Whether its times were stated (or it happened live); false when a
    /// file import gave none and `started_at` is only when it came in.
    // The dashboard's WebAssembly does not read it.
    #[serde(default = "crate::api::yes")]
    #[cfg(not(target_arch = "wasm32"))]
    pub time_stated: bool,
    /// Where its first success ranked among the candidates (1: the first).
    // The dashboard's WebAssembly does not read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub rank: Option<u32>,
    /// Whether it counts towards the figures (docs/domain.md's counting rule).
    pub counts: bool,
    /// Repeated runs disagreed (see `grade` for the counts).
    #[serde(default)]
    pub flaky: bool,
    /// What grading by execution found: counts, reason, failure signatures,
    /// environments, and the latest re-check. `None` until a runner graded it.
    #[serde(default)]
    pub grade: Option<crate::grading::GradeRecord>,
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc"))]
    pub created_at: DateTime<Utc>,
}

/// One execution of a candidate in one environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Run {
    pub id: i64,
    pub attempt_id: i64,
    pub trigger: RunTrigger,
    pub environment: RunEnvironment,
    pub exit_status: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: i64,
    /// Captured output, up to the cap.
    pub output: String,
    /// Whether output was cut at the cap, and how many bytes there were.
    pub output_truncated: bool,
    pub output_bytes: i64,
    pub failing_tests: Vec<String>,
    pub passing_tests: Vec<String>,
    pub runner_id: Option<String>,
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc"))]
    pub started_at: DateTime<Utc>,
    /// The refine loop's iteration that ran it.
    #[serde(default)]
    pub iteration: Option<u32>,
    /// The release a re-check ran it on.
    #[serde(default)]
    pub release: Option<String>,
    /// What the sandbox gave it; `None` for imported runs and runs graded
    /// before failpass recorded it. (The dashboard does not read it.)
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(skip_deserializing))]
    pub isolation: Option<Isolation>,
}

/// The isolation one run had, as the runner gave it (README, "Security model").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Isolation {
    /// It ran as a user id of its own, never root (the worker is root).
    pub own_user: bool,
    /// Its own PID namespace: everything it started died with it.
    pub pid_namespace: bool,
    /// A root built for it (the mounts the README lists); `false`: it saw
    /// the host's file system.
    pub built_root: bool,
    pub network: NetworkAccess,
    /// The system-call filter was installed before it started.
    pub syscall_filter: bool,
    /// A pids cgroup of its own besides `RLIMIT_NPROC`.
    pub pids_cgroup: bool,
}

/// The network a run had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum NetworkAccess {
    /// None: an empty network namespace.
    #[default]
    None,
    /// Outbound through user-mode networking, without the host's loopback.
    Outbound,
    /// The host's own network (no namespaces: the worker is not root).
    Host,
}

/// An attempt with its runs (`GET /api/v1/attempts/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttemptDetail {
    #[serde(flatten)]
    pub attempt: Attempt,
    pub runs: Vec<Run>,
}

/// `GET /api/v1/attempts` parameters; newest first, keyset-paged on id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttemptListQuery {
    pub report_id: Option<i64>,
    pub project: Option<String>,
    pub agent: Option<String>,
    pub model: Option<String>,
    pub verdict: Option<Verdict>,
    pub goal: Option<Goal>,
    pub limit: u32,
    pub cursor: Option<String>,
}

impl Default for AttemptListQuery {
    /// No filter, the default page size (a zero limit would be an empty page).
    fn default() -> Self {
        Self {
            report_id: None,
            project: None,
            agent: None,
            model: None,
            verdict: None,
            goal: None,
            limit: DEFAULT_LIMIT,
            cursor: None,
        }
    }
}

impl AttemptListQuery {
    pub fn from_pairs<'a, I>(pairs: I) -> Result<Self, FieldError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut q = Self::default();
        for (k, v) in pairs {
            let val = non_empty(v);
            match k {
                "report_id" => q.report_id = val.map(|v| parse_field(k, v)).transpose()?,
                "project" => q.project = val.map(str::to_owned),
                "agent" => q.agent = val.map(str::to_owned),
                "model" => q.model = val.map(str::to_owned),
                "verdict" => q.verdict = val.map(|v| parse_field(k, v)).transpose()?,
                "goal" => q.goal = val.map(|v| parse_field(k, v)).transpose()?,
                "limit" => q.limit = val.map(parse_limit).transpose()?.unwrap_or(DEFAULT_LIMIT),
                "cursor" => q.cursor = val.map(str::to_owned),
                _ => {
                    return Err(unknown_parameter(k, "report_id, project, agent, model, verdict, goal, limit, cursor"));
                }
            }
        }
        Ok(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(verdict: Verdict, source: VerdictSource) -> CreateAttemptRequest {
        serde_json::from_value(serde_json::json!({
            "report_id": 1, "agent": "a", "verdict": verdict, "verdict_source": source
        }))
        .unwrap()
    }

    #[test]
    fn the_constructor_gives_what_the_api_defaults_to() {
        for (verdict, source) in [(Verdict::Lead, VerdictSource::Llm), (Verdict::Error, VerdictSource::Deterministic)] {
            assert_eq!(CreateAttemptRequest::new(1, "a", verdict, source), request(verdict, source));
        }
        let key = ReportKey { project: "p".into(), external_id: "7".into() };
        let by_key = CreateAttemptRequest::for_key(key.clone(), "a", Verdict::Lead, VerdictSource::Llm);
        assert_eq!((by_key.report_id, by_key.report), (None, Some(key)));
    }

    #[test]
    fn llm_cannot_reproduce_on_its_own() {
        assert_eq!(request(Verdict::Reproduced, VerdictSource::Llm).validate().unwrap_err().field, "verdict");
        assert!(request(Verdict::Lead, VerdictSource::Llm).validate().is_ok());
        assert_eq!(request(Verdict::Confirmed, VerdictSource::Llm).validate().unwrap_err().field, "review");
    }

    #[test]
    fn fix_goal_takes_fix_verdicts() {
        let mut r = request(Verdict::Reproduced, VerdictSource::Deterministic);
        r.goal = Goal::Fix;
        assert_eq!(r.validate().unwrap_err().field, "verdict");
        r.verdict = Verdict::Resolved;
        assert!(r.validate().is_ok());
    }

    #[test]
    fn numbers_are_checked() {
        let mut r = request(Verdict::Error, VerdictSource::Deterministic);
        r.cost_usd = Some(1e308);
        assert_eq!(r.validate().unwrap_err().field, "cost_usd");
        r.cost_usd = Some(-1.0);
        assert_eq!(r.validate().unwrap_err().field, "cost_usd");
        r.cost_usd = Some(f64::NAN);
        assert_eq!(r.validate().unwrap_err().field, "cost_usd");
    }

    #[test]
    fn contradictory_verdicts_are_refused() {
        assert_eq!(
            request(Verdict::Lead, VerdictSource::Deterministic).validate().unwrap_err().field,
            "verdict_source"
        );
        assert_eq!(
            request(Verdict::Hypothesis, VerdictSource::Deterministic).validate().unwrap_err().field,
            "verdict_source"
        );
        let mut r = request(Verdict::Lead, VerdictSource::Llm);
        r.review = Some(Review::Accepted);
        assert_eq!(r.validate().unwrap_err().field, "verdict");
        let mut r = request(Verdict::Reproduced, VerdictSource::Deterministic);
        r.failure_cause = Some(FailureCause::Timeout);
        assert_eq!(r.validate().unwrap_err().field, "failure_cause");
        let mut r = request(Verdict::Error, VerdictSource::Deterministic);
        r.iterations = 0;
        assert_eq!(r.validate().unwrap_err().field, "iterations");
        r.iterations = 3;
        r.tokens_in = i64::MAX;
        assert_eq!(r.validate().unwrap_err().field, "tokens_in");
    }

    #[test]
    fn report_is_named_exactly_once() {
        let mut r = request(Verdict::Error, VerdictSource::Deterministic);
        r.report = Some(ReportKey { project: "a/b".into(), external_id: "1".into() });
        assert_eq!(r.validate().unwrap_err().field, "report");
        r.report_id = None;
        assert!(r.validate().is_ok());
        r.report = None;
        assert_eq!(r.validate().unwrap_err().field, "report_id");
    }

    #[test]
    fn defaults() {
        let r = request(Verdict::Error, VerdictSource::Deterministic);
        assert_eq!(r.goal, Goal::Reproduce);
        assert_eq!(r.iterations, 1);
    }
}

/// `POST /api/v1/attempts/{id}/review`: a maintainer accepts or rejects an
/// attempt (an LLM's lead becomes `confirmed` when accepted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"review": "accepted", "comment": "Fails on 2.5.1, passes with the fix."})))]
pub struct ReviewRequest {
    pub review: Review,
    /// Why; the reviewer is the signed-in user, never a field.
    #[serde(default)]
    pub comment: Option<String>,
}

impl ReviewRequest {
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.comment.as_ref().is_some_and(|c| c.len() > 20_000) {
            return Err(FieldError::new("comment", "is longer than 20000 bytes"));
        }
        Ok(())
    }
}
