//! Database rows and their conversion into API types. Rows never leave `db`.

use std::str::FromStr;

use chrono::{DateTime, NaiveDate, Utc};
use failpass_shared::api::attempts::{Attempt, Run, Signals};
use failpass_shared::api::jobs::{Job, JobPayload};
use failpass_shared::api::projects::Project;
use failpass_shared::api::reports::{
    Activity, Oracle, Report, ReportFeatures, ReportRef, ReportSummary, ResolutionInfo, RouteCorrection, RuleOutcome,
    Upstream,
};
use failpass_shared::grading::GradeRecord;
use sqlx::types::Json;

use super::{StorageError, StorageResult};
use failpass_shared::api::import::AgentRecord;
use failpass_shared::figures::ReportFlow;

pub(crate) fn parse<T: FromStr>(value: &str, what: &str) -> StorageResult<T>
where
    T::Err: std::fmt::Display,
{
    value.parse().map_err(|e| StorageError::Corrupt(format!("{what}: {e}")))
}

pub(crate) fn parse_opt<T: FromStr>(value: Option<&str>, what: &str) -> StorageResult<Option<T>>
where
    T::Err: std::fmt::Display,
{
    value.map(|v| parse(v, what)).transpose()
}

#[derive(sqlx::FromRow)]
pub struct ProjectRow {
    pub id: i64,
    pub slug: String,
    pub name: String,
    pub description: Option<String>,
    pub public: bool,
    pub upstream_url: Option<String>,
    pub created_at: DateTime<Utc>,
    pub data_version: i64,
    pub benchmark: bool,
    pub reports: i64,
}

impl From<ProjectRow> for Project {
    fn from(r: ProjectRow) -> Self {
        Project {
            id: r.id,
            slug: r.slug,
            name: r.name,
            description: r.description,
            public: r.public,
            upstream_url: r.upstream_url,
            created_at: r.created_at,
            data_version: r.data_version,
            benchmark: r.benchmark,
            reports: r.reports,
        }
    }
}

#[derive(sqlx::FromRow)]
pub struct ReportSummaryRow {
    pub id: i64,
    pub project: String,
    pub external_id: String,
    pub url: Option<String>,
    pub title: String,
    pub labels: Json<Vec<String>>,
    pub filed_at: DateTime<Utc>,
    pub route: String,
    pub category: String,
    pub vague: bool,
    pub llm_only: bool,
    pub oracle_kind: String,
    pub status: String,
    pub best_verdict: Option<String>,
    pub attempts: i64,
    pub cost_usd: f64,
    pub created_at: DateTime<Utc>,
    pub route_check: bool,
    pub route_corrected: bool,
    pub upstream_state: Option<String>,
    pub assignee: Option<String>,
    pub last_activity_at: Option<DateTime<Utc>>,
    pub filed_at_stated: bool,
}

impl ReportSummaryRow {
    pub fn into_summary(self) -> StorageResult<ReportSummary> {
        Ok(ReportSummary {
            id: self.id,
            project: self.project,
            external_id: self.external_id,
            url: self.url,
            title: self.title,
            labels: self.labels.0,
            filed_at: self.filed_at,
            filed_at_stated: self.filed_at_stated,
            route: parse(&self.route, "reports.route")?,
            category: parse(&self.category, "reports.category")?,
            vague: self.vague,
            llm_only: self.llm_only,
            oracle_kind: parse(&self.oracle_kind, "reports.oracle_kind")?,
            status: parse(&self.status, "reports.status")?,
            best_verdict: parse_opt(self.best_verdict.as_deref(), "reports.best_verdict")?,
            attempts: self.attempts,
            cost_usd: self.cost_usd,
            created_at: self.created_at,
            route_check: self.route_check,
            route_corrected: self.route_corrected,
            upstream_state: parse_opt(self.upstream_state.as_deref(), "reports.upstream_state")?,
            assignee: self.assignee,
            last_activity_at: self.last_activity_at,
        })
    }
}

#[derive(sqlx::FromRow)]
pub struct ReportDetailRow {
    #[sqlx(flatten)]
    pub summary: ReportSummaryRow,
    pub body: String,
    pub reporter: Option<String>,
    pub environment: Option<String>,
    pub paths: Json<Vec<String>>,
    pub features: Json<ReportFeatures>,
    pub explanation: Json<Vec<RuleOutcome>>,
    pub route_correction: Option<Json<RouteCorrection>>,
    pub upstream_reason: Option<String>,
    pub upstream_locked: bool,
    pub upstream_type: Option<String>,
    pub resolution: Option<String>,
    pub resolution_by: Option<String>,
    pub duplicate_of: Option<i64>,
    pub duplicate_of_external: Option<String>,
}

impl ReportDetailRow {
    pub fn into_report(self, oracle: Option<Oracle>, activity: Vec<Activity>) -> StorageResult<Report> {
        let upstream = match self.summary.upstream_state.as_deref() {
            Some(state) => Some(Upstream {
                state: parse(state, "reports.upstream_state")?,
                reason: self.upstream_reason,
                locked: self.upstream_locked,
                kind: self.upstream_type,
                milestone: None,
            }),
            None => None,
        };
        let resolution = match (self.resolution.as_deref(), self.resolution_by) {
            (Some(r), Some(by)) if r != "reopened" => Some(ResolutionInfo {
                resolution: parse(r, "reports.resolution")?,
                by,
                duplicate_of: self
                    .duplicate_of
                    .zip(self.duplicate_of_external)
                    .map(|(id, external_id)| ReportRef { id, external_id }),
            }),
            _ => None,
        };
        let mut explanation = self.explanation.0;
        if self.route_correction.is_some() {
            failpass_shared::routing::mark_corrected(&mut explanation);
        }
        Ok(Report {
            summary: self.summary.into_summary()?,
            body: self.body,
            reporter: self.reporter,
            environment: self.environment,
            paths: self.paths.0,
            features: self.features.0,
            oracle,
            explanation,
            route_correction: self.route_correction.map(|c| c.0),
            body_html: String::new(),
            upstream,
            resolution,
            activity,
            lifecycle_html: String::new(),
        })
    }
}

#[derive(sqlx::FromRow)]
pub struct OracleRow {
    pub kind: String,
    pub source: Option<String>,
    pub command: Option<String>,
    pub fail_to_pass: Json<Vec<String>>,
    pub pass_to_pass: Json<Vec<String>>,
    pub signature: Option<String>,
    pub repeats: Option<i32>,
    pub authoring_minutes: Option<f64>,
}

impl OracleRow {
    pub fn into_oracle(self) -> StorageResult<Oracle> {
        Ok(Oracle {
            kind: parse(&self.kind, "oracles.kind")?,
            source: parse_opt(self.source.as_deref(), "oracles.source")?,
            command: self.command,
            fail_to_pass: self.fail_to_pass.0,
            pass_to_pass: self.pass_to_pass.0,
            signature: self.signature,
            repeats: self.repeats.map(|r| r.max(0) as u32),
            authoring_minutes: self.authoring_minutes,
        })
    }
}

#[derive(sqlx::FromRow)]
pub struct AttemptRow {
    pub id: i64,
    pub report_id: i64,
    pub project: String,
    pub goal: String,
    pub agent: String,
    pub model: Option<String>,
    pub model_cutoff: Option<NaiveDate>,
    pub started_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub wall_seconds: Option<f64>,
    pub cost_usd: f64,
    pub tokens_in: i64,
    pub tokens_out: i64,
    pub api_calls: Option<i64>,
    pub iterations: i32,
    pub candidate: Option<String>,
    pub signals: Json<Signals>,
    pub verdict: String,
    pub verdict_source: String,
    pub failure_cause: Option<String>,
    pub review: Option<String>,
    pub reviewer: Option<String>,
    pub review_comment: Option<String>,
    pub attempt_key: Option<String>,
    pub counts: bool,
    pub created_at: DateTime<Utc>,
    pub flaky: bool,
    pub grade: Option<Json<serde_json::Value>>,
    pub cost_known: bool,
    pub success_rank: Option<i32>,
    pub time_stated: bool,
}

impl AttemptRow {
    pub fn into_attempt(self) -> StorageResult<Attempt> {
        Ok(Attempt {
            id: self.id,
            report_id: self.report_id,
            project: self.project,
            goal: parse(&self.goal, "attempts.goal")?,
            agent: self.agent,
            model: self.model,
            model_cutoff: self.model_cutoff,
            started_at: self.started_at,
            ended_at: self.ended_at,
            wall_seconds: self.wall_seconds,
            cost_usd: self.cost_known.then_some(self.cost_usd),
            tokens_in: self.tokens_in,
            tokens_out: self.tokens_out,
            api_calls: self.api_calls,
            iterations: self.iterations.max(0) as u32,
            candidate: self.candidate,
            signals: self.signals.0,
            verdict: parse(&self.verdict, "attempts.verdict")?,
            verdict_source: parse(&self.verdict_source, "attempts.verdict_source")?,
            failure_cause: parse_opt(self.failure_cause.as_deref(), "attempts.failure_cause")?,
            review: parse_opt(self.review.as_deref(), "attempts.review")?,
            reviewer: self.reviewer,
            review_comment: self.review_comment,
            attempt_key: self.attempt_key,
            rank: self.success_rank.and_then(|k| u32::try_from(k).ok()),
            time_stated: self.time_stated,
            counts: self.counts,
            created_at: self.created_at,
            flaky: self.flaky,
            grade: self.grade.map(|g| read_grade(g.0)),
        })
    }
}

/// A stored grade. Every grade failpass wrote reads; one that does not (a
/// hand-edited row) says so instead of hiding the attempt.
fn read_grade(stored: serde_json::Value) -> GradeRecord {
    serde_json::from_value(stored)
        .unwrap_or_else(|e| GradeRecord::because(format!("the stored grade could not be read: {e}")))
}

#[derive(sqlx::FromRow)]
pub struct RunRow {
    pub id: i64,
    pub attempt_id: i64,
    pub trigger: String,
    pub environment: String,
    pub exit_status: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: i64,
    pub output: String,
    pub output_truncated: bool,
    pub output_bytes: i64,
    pub failing_tests: Json<Vec<String>>,
    pub passing_tests: Json<Vec<String>>,
    pub runner_id: Option<String>,
    pub started_at: DateTime<Utc>,
    pub iteration: Option<i32>,
    pub release: Option<String>,
    pub isolation: Option<Json<failpass_shared::api::attempts::Isolation>>,
}

impl RunRow {
    pub fn into_run(self) -> StorageResult<Run> {
        Ok(Run {
            id: self.id,
            attempt_id: self.attempt_id,
            trigger: parse(&self.trigger, "runs.trigger")?,
            environment: parse(&self.environment, "runs.environment")?,
            exit_status: self.exit_status,
            timed_out: self.timed_out,
            duration_ms: self.duration_ms,
            output: self.output,
            output_truncated: self.output_truncated,
            output_bytes: self.output_bytes,
            failing_tests: self.failing_tests.0,
            passing_tests: self.passing_tests.0,
            runner_id: self.runner_id,
            started_at: self.started_at,
            iteration: self.iteration.map(|i| i.max(0) as u32),
            release: self.release,
            isolation: self.isolation.map(|j| j.0),
        })
    }
}

#[derive(sqlx::FromRow)]
pub struct ContributionRow {
    pub key: String,
    pub key1: Option<String>,
    pub key2: Option<String>,
    pub det: bool,
    pub in_patch: bool,
    pub attempts: i64,
    pub graded: i64,
    pub counting: i64,
    pub leads: i64,
    pub errors: i64,
    pub awaiting: i64,
    pub cost: f64,
    pub cost_counting: f64,
    pub without_cost: i64,
    pub counting_without_cost: i64,
    pub api_calls: i64,
    pub with_api_calls: i64,
}

#[derive(sqlx::FromRow)]
pub struct FlowRow {
    pub filed_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub first_attempt_at: Option<DateTime<Utc>>,
    pub status: String,
    pub first_counting_at: Option<DateTime<Utc>>,
    pub last_graded_at: Option<DateTime<Utc>>,
    pub filed_at_stated: bool,
    pub benchmark: bool,
}

impl FlowRow {
    pub fn into_flow(self) -> StorageResult<ReportFlow> {
        Ok(ReportFlow {
            filed_at: self.filed_at,
            created_at: self.created_at,
            first_attempt_at: self.first_attempt_at,
            status: parse(&self.status, "reports.status")?,
            first_counting_at: self.first_counting_at,
            last_graded_at: self.last_graded_at,
            filed_stated: self.filed_at_stated,
            benchmark: self.benchmark,
        })
    }
}

#[derive(sqlx::FromRow)]
pub struct AgentRow {
    pub name: String,
    pub source: Option<String>,
    pub model: Option<String>,
    pub date: Option<String>,
    pub stated_rate: Option<f64>,
    pub stated_instances: Option<i64>,
    pub stated_cost_usd: Option<f64>,
    pub stated_instance_cost_usd: Option<f64>,
    pub stated_instance_calls: Option<f64>,
    pub notes: Option<String>,
}

impl From<AgentRow> for AgentRecord {
    fn from(r: AgentRow) -> Self {
        Self {
            name: r.name,
            source: r.source,
            model: r.model,
            date: r.date,
            stated_rate: r.stated_rate,
            stated_instances: r.stated_instances.map(|n| n.max(0) as u64),
            stated_cost_usd: r.stated_cost_usd,
            stated_instance_cost_usd: r.stated_instance_cost_usd,
            stated_instance_calls: r.stated_instance_calls,
            notes: r.notes,
        }
    }
}

#[derive(sqlx::FromRow)]
pub struct JobRow {
    pub id: i64,
    pub kind: String,
    pub payload: sqlx::types::Json<JobPayload>,
    pub status: String,
    pub priority: i32,
    pub attempts: i64,
    pub max_attempts: i64,
    pub run_after: DateTime<Utc>,
    pub lease_owner: Option<String>,
    pub lease_expires_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
}

pub const JOB_COLUMNS: &str = "id, kind, payload, status, priority, attempts, max_attempts, run_after, lease_owner, \
     lease_expires_at, last_error, created_at, started_at, finished_at";

impl JobRow {
    pub fn into_job(self) -> StorageResult<Job> {
        Ok(Job {
            id: self.id,
            kind: parse(&self.kind, "jobs.kind")?,
            payload: self.payload.0,
            status: parse(&self.status, "jobs.status")?,
            priority: self.priority,
            tries: self.attempts,
            max_tries: self.max_attempts,
            run_after: self.run_after,
            lease_owner: self.lease_owner,
            lease_expires_at: self.lease_expires_at,
            last_error: self.last_error,
            created_at: self.created_at,
            started_at: self.started_at,
            finished_at: self.finished_at,
        })
    }
}

impl ContributionRow {
    pub fn into_contribution(self) -> failpass_shared::figures::ReportContribution {
        failpass_shared::figures::ReportContribution {
            key: failpass_shared::figures::join_key_parts(self.key, self.key1, self.key2),
            has_deterministic_oracle: self.det,
            has_in_patch_test: self.in_patch,
            attempts: self.attempts.max(0) as u64,
            attempts_graded: self.graded.max(0) as u64,
            attempts_counting: self.counting.max(0) as u64,
            attempts_lead: self.leads.max(0) as u64,
            attempts_error: self.errors.max(0) as u64,
            attempts_awaiting_review: self.awaiting.max(0) as u64,
            cost_usd: self.cost,
            cost_counting_usd: self.cost_counting,
            attempts_without_cost: self.without_cost.max(0) as u64,
            attempts_counting_without_cost: self.counting_without_cost.max(0) as u64,
            api_calls: self.api_calls.max(0) as u64,
            attempts_with_api_calls: self.with_api_calls.max(0) as u64,
        }
    }
}
