//! What every domain's SQL shares: the clock's whole seconds, the unique-key
//! mapping, the column lists and insert statements both the per-row and the
//! bulk paths use, and an attempt prepared for insertion.

use chrono::{DateTime, SubsecRound, Utc};

use super::StorageError;
use failpass_shared::api::attempts::CreateAttemptRequest;
use failpass_shared::hash;

/// Whole seconds, so SQLite's text timestamps sort as time.
pub fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(0)
}

pub fn secs(t: DateTime<Utc>) -> DateTime<Utc> {
    t.trunc_subsecs(0)
}

/// What a new attempt under a taken (agent, report, attempt key) is refused with.
pub const ATTEMPT_KEY_TAKEN: &str = "an attempt with the same agent, report and attempt_key exists";

/// Maps a unique-constraint violation to `Conflict` with `message`.
pub fn conflict_on_unique(message: impl Into<String>) -> impl FnOnce(sqlx::Error) -> StorageError {
    let message = message.into();
    move |e| match &e {
        sqlx::Error::Database(db) if db.is_unique_violation() => StorageError::Conflict(message),
        _ => StorageError::Database(e),
    }
}

/// Labels trimmed, without duplicates, in first-seen order.
pub fn clean_labels(labels: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(labels.len());
    for l in labels {
        let l = l.trim();
        if !out.iter().any(|o| o == l) {
            out.push(l.to_owned());
        }
    }
    out
}

pub const REPORT_SUMMARY_COLUMNS: &str = "r.id, p.slug AS project, r.external_id, r.url, r.title, r.labels, r.filed_at, \
     r.route, r.category, r.vague, r.llm_only, r.oracle_kind, r.status, r.best_verdict, r.attempts, r.cost_usd, r.created_at, \
     r.route_check, r.route_override IS NOT NULL AS route_corrected, r.upstream_state, r.assignee, r.last_activity_at, \
     r.filed_at_stated";

/// A report's status from its counters, its regression flag and its
/// resolution. A member's resolution stands over everything (`reopened`
/// clears it); one read from upstream stands only while failpass has neither
/// reproduced the report nor graded it not reproduced.
pub const STATUS_EXPR: &str = "CASE \
     WHEN resolution IS NOT NULL AND resolution_by <> 'upstream' AND resolution <> 'reopened' THEN resolution \
     WHEN regressed THEN 'regressed' \
     WHEN attempts_counting > 0 THEN 'reproduced' \
     WHEN attempts_awaiting = 0 AND attempts_graded > 0 THEN 'not_reproduced' \
     WHEN resolution IS NOT NULL AND resolution_by = 'upstream' THEN resolution \
     WHEN attempts = 0 THEN 'new' \
     WHEN attempts_awaiting > 0 THEN 'needs_review' \
     ELSE 'in_progress' END";

pub const ATTEMPT_COLUMNS: &str = "a.id, a.report_id, p.slug AS project, a.goal, a.agent, a.model, a.model_cutoff, \
     a.started_at, a.ended_at, a.wall_seconds, a.cost_usd, a.tokens_in, a.tokens_out, a.api_calls, a.iterations, a.candidate, \
     a.signals, a.verdict, a.verdict_source, a.failure_cause, a.review, a.reviewer, a.review_comment, a.attempt_key, \
     a.counts, a.created_at, a.flaky, a.grade, a.cost_known, a.success_rank, a.time_stated";

pub const PROJECT_COLUMNS: &str = "p.id, p.slug, p.name, p.description, p.public, p.upstream_url, p.created_at, p.data_version, p.benchmark, \
     (SELECT COUNT(*) FROM reports r WHERE r.project_id = p.id) AS reports";

/// Multi-row attempt inserts: 30 parameters a row stays under SQLite's and
/// PostgreSQL's bind limits.
pub const ATTEMPT_INSERT_CHUNK: usize = 1000;

/// A new report: status `new` and its creation time are `$22`, `$23`.
pub const REPORT_INSERT: &str = "INSERT INTO reports (project_id, external_id, url, title, body, labels, paths, filed_at, reporter, \
     environment, features, category, vague, llm_only, route, explanation, oracle_kind, oracle_source, \
     has_det_oracle, route_check, content_hash, status, created_at, filed_at_stated) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)";

/// Updating a report's routing keeps a maintainer's corrected route: the
/// route, its category and the flag follow the correction while there is one.
/// A maintainer's confirmation holds while the route stays the one confirmed
/// (no route check), and is dropped when the route changes. `$route`,
/// `$category`, `$check` are the rule's; every right-hand side reads the row
/// as it was.
pub fn routing_assignments(route: &str, category: &str, check: &str) -> String {
    format!(
        "route = COALESCE(route_override, {route}), \
         category = CASE WHEN route_override IS NULL THEN {category} WHEN route_override = 'human_first' THEN 'harness' \
         WHEN {category} = 'harness' THEN 'patch_logic' ELSE {category} END, \
         route_check = CASE WHEN route_override IS NOT NULL THEN FALSE \
         WHEN route_confirmation IS NOT NULL AND {route} = route THEN FALSE ELSE {check} END, \
         route_confirmation = CASE WHEN COALESCE(route_override, {route}) = route THEN route_confirmation ELSE NULL END"
    )
}

pub const ORACLE_INSERT: &str = "INSERT INTO oracles (report_id, kind, source, command, fail_to_pass, pass_to_pass, signature, \
     repeats, authoring_minutes, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

pub const LABEL_INSERT: &str = "INSERT INTO report_labels (report_id, label) VALUES ($1, $2)";

/// Marks a report queued for creation later in the same batch.
pub const PENDING_ID: i64 = -1;

pub const ATTEMPT_INSERT: &str = "INSERT INTO attempts (report_id, goal, agent, model, model_cutoff, started_at, ended_at, \
     wall_seconds, cost_usd, tokens_in, tokens_out, api_calls, iterations, candidate, signals, verdict, verdict_source, \
     failure_cause, review, reviewer, review_comment, attempt_key, graded, counts, awaiting, content_hash, created_at, \
     cost_known, success_rank, time_stated) ";

/// An attempt with everything derived that storage writes beside it.
/// It borrows its request: an import batch holds 25,000 of them, and a copy
/// of each request doubled the batch's memory.
#[derive(Debug, Clone)]
pub struct PreparedAttempt<'a> {
    pub req: &'a CreateAttemptRequest,
    pub report_id: i64,
    pub agent: String,
    pub attempt_key: Option<String>,
    pub started_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub graded: bool,
    pub counts: bool,
    pub awaiting: bool,
    pub content_hash: String,
    /// Its time was stated (or it happened live); false for an import that
    /// gave none, whose `started_at` is only when it came in.
    pub time_stated: bool,
}

impl<'a> PreparedAttempt<'a> {
    pub fn new(req: &'a CreateAttemptRequest, report_id: i64, report_vague: bool, attempt_key: Option<String>) -> Self {
        use failpass_shared::model::{attempt_awaits_review, attempt_counts};
        let now = now();
        Self {
            report_id,
            agent: req.agent.trim().to_owned(),
            attempt_key,
            // An attempt that says only when it ended started then, less its wall time.
            started_at: req
                .started_at
                .or_else(|| {
                    req.ended_at
                        .map(|e| e - chrono::Duration::milliseconds((req.wall_seconds.unwrap_or(0.0) * 1000.0) as i64))
                })
                .map(secs)
                .unwrap_or(now),
            created_at: now,
            graded: req.verdict.is_graded(),
            counts: attempt_counts(req.goal, req.verdict, req.verdict_source, req.review, report_vague),
            awaiting: attempt_awaits_review(req.goal, req.verdict, req.verdict_source, req.review, report_vague),
            content_hash: hash::content_hash(req),
            time_stated: true,
            req,
        }
    }
}

pub fn no_project(slug: &str) -> StorageError {
    StorageError::invalid("project", format!("no project `{slug}`; create it first (POST /api/v1/projects)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_cleaned() {
        let l = clean_labels(&[" bug".into(), "bug".into(), "module: nn".into()]);
        assert_eq!(l, ["bug", "module: nn"]);
    }
}
