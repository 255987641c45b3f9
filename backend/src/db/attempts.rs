//! Attempts and their runs: creation (which queues the verification), the
//! list and detail, reviews, rerun selection, and the writer of a
//! verification's result (called by the job queue when a job completes).

use async_trait::async_trait;

use super::{ProjectScope, StorageError, StorageResult};
use failpass_shared::api::Page;
use failpass_shared::api::attempts::Signals;
use failpass_shared::api::attempts::{
    Attempt, AttemptDetail, AttemptListQuery, CreateAttemptRequest, CreateRunRequest, ReviewRequest,
};
use failpass_shared::api::import::Outcome;
use failpass_shared::api::reports::ReportFilter;
use failpass_shared::api::status::LatestVerdict;
use failpass_shared::grading::GradeRecord;
use failpass_shared::model::{FailureCause, Verdict};
use failpass_shared::model::{RunEnvironment, RunTrigger};

/// A run ready to store; output is already capped by the caller.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    pub attempt_id: i64,
    pub trigger: RunTrigger,
    pub environment: RunEnvironment,
    pub exit_status: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: i64,
    pub output: String,
    pub output_truncated: bool,
    pub output_bytes: i64,
    pub failing_tests: Vec<String>,
    pub passing_tests: Vec<String>,
    pub runner_id: Option<String>,
    /// When the run started; now if not given.
    pub started_at: Option<chrono::DateTime<chrono::Utc>>,
    /// The refine loop's iteration that ran it.
    pub iteration: Option<u32>,
    /// The release a re-check ran it on (its version, else the environment's name).
    pub release: Option<String>,
    /// What the sandbox gave it (`None`: not run here).
    pub isolation: Option<failpass_shared::api::attempts::Isolation>,
}

impl NewRun {
    /// The run a [`CreateRunRequest`] describes, once its attempt is known.
    pub fn from_request(attempt_id: i64, r: &CreateRunRequest) -> Self {
        Self {
            attempt_id,
            trigger: r.trigger,
            environment: r.environment,
            exit_status: r.exit_status,
            timed_out: r.timed_out,
            duration_ms: r.duration_ms,
            output: r.output.clone(),
            output_truncated: r.output_truncated,
            output_bytes: r.output_bytes.unwrap_or(r.output.len() as i64),
            failing_tests: r.failing_tests.clone(),
            passing_tests: r.passing_tests.clone(),
            runner_id: r.runner_id.clone(),
            started_at: r.started_at,
            iteration: None,
            release: None,
            isolation: None,
        }
    }
}

/// What grading an attempt found, written with the job's completion.
#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    pub attempt_id: i64,
    pub verdict: Verdict,
    pub failure_cause: Option<FailureCause>,
    pub signals: Signals,
    pub flaky: bool,
    /// The grading's counts, reason and signatures (stored as JSON, shown on the
    /// report page); a re-check's carries only its re-check.
    pub grade: GradeRecord,
    pub runs: Vec<NewRun>,
    /// Replace the attempt's verdict (an initial verification or a rerun);
    /// `false` for a re-check, which only adds runs and the re-check outcome.
    pub sets_verdict: bool,
    /// Set by the refine loop: the final candidate, the iterations it took,
    /// and their summed cost and time.
    pub refined: Option<Refined>,
    /// An attempt to create with the result (the refine loop's), in the same
    /// transaction as the job's completion; `attempt_id` and the runs'
    /// attempt ids are then placeholders.
    pub new_attempt: Option<CreateAttemptRequest>,
    /// A re-check's judgement of the whole report: regressed (`true`) or
    /// not (`false`); `None` leaves the report's state as it is.
    pub report_regressed: Option<bool>,
}

impl Verification {
    /// A verdict for `attempt_id` and nothing else: no signals, runs or
    /// grade yet, replacing the attempt's verdict.
    pub fn new(attempt_id: i64, verdict: Verdict) -> Self {
        Self {
            attempt_id,
            verdict,
            failure_cause: None,
            signals: Signals::default(),
            flaky: false,
            grade: Default::default(),
            runs: Vec::new(),
            sets_verdict: true,
            refined: None,
            new_attempt: None,
            report_regressed: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Refined {
    pub candidate: String,
    pub iterations: u32,
    pub cost_usd: f64,
    pub wall_seconds: f64,
    pub tokens_in: i64,
    pub tokens_out: i64,
}

/// Attempts and their runs: creation (which queues the verification),
/// detail and list, reviews, and the attempts a rerun selects. Every write
/// recomputes the touched reports' counters, status and spend in the same
/// transaction.
#[async_trait]
pub trait AttemptStore: Send + Sync {
    /// Stores an attempt and, in the same transaction, recomputes its report's
    /// counters, status, best verdict and spend. `NotFound` when the report
    /// does not exist; `Invalid` (field `verdict_source`) for a deterministic
    /// grade on a report without a deterministic oracle. When (agent, report,
    /// attempt_key) is taken: the stored attempt and `Unchanged` if it is the
    /// same attempt (a retry), `Conflict` if it differs.
    async fn create_attempt(&self, req: &CreateAttemptRequest) -> StorageResult<(Attempt, Outcome)>;

    /// The project (slug) of attempt `id`, or `None` when it does not exist or is outside `scope`.
    async fn attempt_project(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<String>>;

    /// Stores attempt `id`'s trajectory (its read steps as gzip-compressed
    /// JSON, `body`), replacing one sent before.
    async fn put_trajectory(&self, id: i64, format: &str, steps: i64, raw_bytes: i64, body: &[u8])
    -> StorageResult<()>;

    /// Attempt `id`'s stored trajectory (gzip-compressed JSON), if it has one
    /// and `scope` may see it.
    async fn get_trajectory(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<Vec<u8>>>;

    /// An attempt with its runs, or `None`.
    async fn get_attempt(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<AttemptDetail>>;

    /// The report of each of these attempts, as (attempt, report) pairs
    /// (attempts that do not exist are left out).
    async fn attempt_reports(&self, ids: &[i64]) -> StorageResult<Vec<(i64, i64)>>;

    /// Attempts matching the query, newest first, keyset-paged on id.
    async fn list_attempts(&self, query: &AttemptListQuery, scope: &ProjectScope) -> StorageResult<Page<Attempt>>;

    /// Stores one run of an attempt. `NotFound` when the attempt does not exist.
    /// Stores a run; an identical run of the same attempt is `Unchanged`.
    /// Returns the run's id either way.
    async fn create_run(&self, new: &NewRun) -> StorageResult<(i64, Outcome)>;

    /// The newest graded reproduction verdicts of project `project` (by
    /// slug), newest first, at most `limit`: the report's id upstream,
    /// title and link, the verdict and how it was graded. Callers decide
    /// whether the project may be shown (the status page shows public ones).
    async fn latest_verdicts(&self, project: &str, limit: usize) -> StorageResult<Vec<LatestVerdict>>;

    /// Attempts a rerun selects: those of one report or of the reports a
    /// filter selects, whose verdict is one of `verdicts`, and that
    /// `failpass_shared::grading::verifiable` lets run; oldest first, at most
    /// [`RERUN_LIMIT`].
    async fn rerun_targets(
        &self,
        report_id: Option<i64>,
        filter: Option<&ReportFilter>,
        verdicts: &[Verdict],
        scope: &ProjectScope,
    ) -> StorageResult<Vec<i64>>;

    /// A maintainer's review of an attempt, recorded under `origin`'s actor
    /// and in its report's timeline: an accepted lead becomes `confirmed`;
    /// counting and the report's status follow. `NotFound` when the attempt
    /// does not exist (or is outside `scope`).
    async fn review_attempt(
        &self,
        id: i64,
        req: &ReviewRequest,
        origin: &crate::db::Origin,
        scope: &ProjectScope,
    ) -> StorageResult<Attempt>;

    /// The attempts waiting for a person's review in `scope` (an LLM's lead,
    /// a reproduction of a vague report): how many in all, and the newest
    /// `limit` of them as (attempt, report).
    async fn awaiting_review(&self, scope: &ProjectScope, limit: usize) -> StorageResult<(u64, Vec<(i64, i64)>)>;
}

/// A deterministic grade needs something deterministic to grade by.
pub fn check_grading(req: &CreateAttemptRequest, report_has_oracle: bool) -> StorageResult<()> {
    use failpass_shared::model::{Verdict, VerdictSource};
    let graded_verdict =
        matches!(req.verdict, Verdict::Reproduced | Verdict::NotReproduced | Verdict::Resolved | Verdict::Unresolved);
    if req.verdict_source == VerdictSource::Deterministic && graded_verdict && !report_has_oracle {
        return Err(StorageError::invalid(
            "verdict_source",
            format!(
                "{} has no deterministic oracle, so nothing could grade `{}` deterministically (add an oracle, or use `human` if a person ran it)",
                describe_report_ref(req),
                req.verdict
            ),
        ));
    }
    Ok(())
}

pub fn describe_report_ref(req: &CreateAttemptRequest) -> String {
    match (&req.report_id, &req.report) {
        (Some(id), _) => format!("report {id}"),
        (None, Some(k)) => format!("report `{}` of project `{}`", k.external_id, k.project),
        (None, None) => "report (none named)".to_owned(),
    }
}

/// How a run names its attempt, for messages.
pub fn describe_attempt_ref(req: &CreateRunRequest) -> String {
    match (&req.attempt_id, &req.attempt) {
        (Some(id), _) => format!("attempt {id}"),
        (None, Some(k)) => {
            format!("attempt `{}` by `{}` on {}#{}", k.attempt_key, k.agent, k.report.project, k.report.external_id)
        }
        (None, None) => "attempt (none named)".to_owned(),
    }
}

/// `expr` (a verdict's text) as its rank, `Verdict::rank`'s, so SQL and Rust agree.
pub fn verdict_rank_sql(expr: &str) -> String {
    use failpass_shared::model::Verdict;
    let arms = Verdict::ALL.iter().map(|v| format!("WHEN '{}' THEN {}", v.as_str(), v.rank())).collect::<Vec<_>>();
    format!("CASE {expr} {} END", arms.join(" "))
}

/// `expr` (a rank) as its verdict's text: [`verdict_rank_sql`] undone.
pub fn rank_verdict_sql(expr: &str) -> String {
    use failpass_shared::model::Verdict;
    let arms = Verdict::ALL.iter().map(|v| format!("WHEN {} THEN '{}'", v.rank(), v.as_str())).collect::<Vec<_>>();
    format!("CASE {expr} {} END", arms.join(" "))
}

/// Per-report sums over attempts, to be completed with `) GROUP BY a.report_id`
/// after the bound ids, which `report_column` (`a.report_id`, or `+a.report_id`
/// where the attempts are narrowed by id and no index should serve the
/// report list) is tested against.
pub fn report_aggregate_sql(report_column: &str) -> String {
    let rank = verdict_rank_sql("a.verdict");
    format!(
        "SELECT a.report_id AS report_id, \
         COALESCE(SUM(CASE WHEN a.goal = 'reproduce' THEN 1 ELSE 0 END), 0) AS attempts, \
         COALESCE(SUM(CASE WHEN a.goal = 'reproduce' AND a.graded THEN 1 ELSE 0 END), 0) AS graded, \
         COALESCE(SUM(CASE WHEN a.goal = 'reproduce' AND a.counts THEN 1 ELSE 0 END), 0) AS counting, \
         COALESCE(SUM(CASE WHEN a.goal = 'reproduce' AND a.awaiting THEN 1 ELSE 0 END), 0) AS awaiting, \
         COALESCE(SUM(CASE WHEN a.goal = 'reproduce' THEN a.cost_usd ELSE 0.0 END), 0.0) AS cost, \
         CAST(MAX(CASE WHEN a.goal = 'reproduce' THEN {rank} END) AS BIGINT) AS best_rank, \
         MIN(CASE WHEN a.goal = 'reproduce' AND a.counts AND a.time_stated THEN COALESCE(a.ended_at, a.started_at) END) AS first_counting_at, \
         MIN(CASE WHEN a.goal = 'reproduce' AND a.time_stated THEN a.started_at END) AS first_attempt_at, \
         MAX(CASE WHEN a.goal = 'reproduce' AND a.graded AND a.time_stated THEN COALESCE(a.ended_at, a.started_at) END) AS last_graded_at \
         FROM attempts a WHERE {report_column} IN ("
    )
}
