//! Storage: one domain-level trait, two implementations (SQLite, PostgreSQL).
//!
//! Callers only see `Arc<dyn Storage>`, chosen from the database URL's
//! scheme. Multi-step writes are single trait methods so transactions never
//! leak out. Both implementations share their SQL through `sql.rs`'s macro
//! and differ only in a few dialect fragments, the pool set-up and the
//! migrations; the contract suite (`tests/api/storage.rs`) runs every case on
//! both.

pub mod accounts;
pub mod jobs;
mod postgres;
mod rows;
pub(crate) mod sql;
mod sqlite;

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use failpass_shared::api::Page;
use failpass_shared::api::attempts::{Attempt, AttemptDetail, AttemptListQuery, CreateAttemptRequest};
use failpass_shared::api::figures::FiguresQuery;
use failpass_shared::api::import::{AgentRecord, Outcome};
use failpass_shared::api::projects::{CreateProjectRequest, Project};
use failpass_shared::api::reports::{CreateReportRequest, Report, ReportListQuery, ReportSummary};
use failpass_shared::figures::ReportContribution;
use failpass_shared::model::{RunEnvironment, RunTrigger};
use failpass_shared::routing::RoutingDecision;

pub use postgres::PgStorage;
pub use sql::describe_report_ref as sql_describe_report_ref;
pub use sqlite::SqliteStorage;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The named thing does not exist (`report 42`).
    #[error("{0} not found")]
    NotFound(String),
    /// A uniqueness rule would be broken; the message names the key.
    #[error("{0}")]
    Conflict(String),
    /// Input that only storage can judge (a project slug that does not exist).
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// A stored value that does not parse: a bug or a hand-edited database.
    #[error("corrupt stored value: {0}")]
    Corrupt(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// From the raw SQLite path bulk imports take.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error(transparent)]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

impl StorageError {
    pub(crate) fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::Invalid { field: field.to_owned(), message: message.into() }
    }

    /// When the database cannot take the request at all (its disk is full,
    /// it is read-only, it does not answer), what to tell the caller; `None`
    /// for errors that are this request's own.
    pub fn unavailable(&self) -> Option<&'static str> {
        let say = Some;
        match self {
            StorageError::Database(sqlx::Error::Database(db)) => {
                let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
                // SQLite: the primary result code is the extended code's low byte.
                let sqlite = code.parse::<i32>().ok().map(|c| c & 0xff);
                match (sqlite, code.as_str()) {
                    (Some(13), _) | (_, "53100") => say("its disk is full"),
                    (Some(8), _) | (_, "25006") => say("it is read-only"),
                    (Some(10), _) | (Some(14), _) | (Some(26), _) | (_, "58030") => {
                        say("it cannot read or write its files")
                    }
                    (_, c) if c.starts_with("53") || c.starts_with("57P") || c.starts_with("08") => {
                        say("it refuses connections or is out of resources")
                    }
                    _ => None,
                }
            }
            StorageError::Database(
                sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Tls(_),
            ) => say("it does not answer"),
            StorageError::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => match e.code {
                rusqlite::ErrorCode::DiskFull => say("its disk is full"),
                rusqlite::ErrorCode::ReadOnly => say("it is read-only"),
                rusqlite::ErrorCode::SystemIoFailure | rusqlite::ErrorCode::CannotOpen => {
                    say("it cannot read or write its files")
                }
                _ => None,
            },
            _ => None,
        }
    }
}

pub type StorageResult<T> = Result<T, StorageError>;

/// Most attempts one bulk rerun queues.
pub const RERUN_LIMIT: usize = 10_000;

/// Which projects a caller may see. Every list and figure query takes one,
/// so authorisation narrows queries in SQL rather than after the fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectScope {
    /// Every project (the local operator, an admin).
    All,
    /// Public projects only (anonymous visitors).
    PublicOnly,
    /// Public projects and these (by id): a user's memberships, a token's project.
    PublicAnd(Vec<i64>),
    /// Only these projects (where a caller may write), public or not.
    Only(Vec<i64>),
}

impl ProjectScope {
    /// The SQL condition that a row of `projects` aliased `p` is in scope.
    /// Ids are integers formatted in, so the text is safe to splice.
    pub fn sql(&self, p: &str) -> String {
        match self {
            ProjectScope::All => "TRUE".to_owned(),
            ProjectScope::PublicAnd(ids) if !ids.is_empty() => {
                let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
                format!("({p}.public = TRUE OR {p}.id IN ({}))", ids.join(", "))
            }
            ProjectScope::PublicOnly | ProjectScope::PublicAnd(_) => format!("{p}.public = TRUE"),
            ProjectScope::Only(ids) if ids.is_empty() => "FALSE".to_owned(),
            ProjectScope::Only(ids) => {
                let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
                format!("{p}.id IN ({})", ids.join(", "))
            }
        }
    }

    /// The SQL condition that a column holding a project id is in scope.
    pub fn sql_project_id(&self, column: &str) -> String {
        match self {
            ProjectScope::All => "TRUE".to_owned(),
            _ => format!("{column} IN (SELECT sp.id FROM projects sp WHERE {})", self.sql("sp")),
        }
    }
}

/// A report ready to store: the request plus the routing rule's decision.
#[derive(Debug, Clone)]
pub struct NewReport {
    pub request: CreateReportRequest,
    pub decision: RoutingDecision,
}

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
}

impl NewRun {
    /// The run a [`CreateRunRequest`] describes, once its attempt is known.
    pub fn from_request(attempt_id: i64, r: &failpass_shared::api::attempts::CreateRunRequest) -> Self {
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
        }
    }
}

/// Which database engine backs a [`Storage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

#[async_trait]
pub trait Storage: jobs::JobStore + accounts::AccountStore + Send + Sync + 'static {
    /// The engine behind this storage.
    fn backend(&self) -> Backend;

    /// Applies pending migrations. Idempotent; forward-only.
    async fn migrate(&self) -> StorageResult<()>;

    /// A round trip for `/healthz` that also writes (one row of `health`),
    /// so a full disk or a read-only database shows as unhealthy.
    async fn ping(&self) -> StorageResult<()>;

    /// True when no project exists yet (the demo only fills an empty database).
    async fn is_empty(&self) -> StorageResult<bool>;

    /// Creates a project (public unless `public` says otherwise). `Conflict` when the slug is taken.
    async fn create_project(&self, req: &CreateProjectRequest) -> StorageResult<Project>;

    /// Projects visible in `scope`, by slug.
    async fn list_projects(&self, scope: &ProjectScope) -> StorageResult<Vec<Project>>;

    /// A project by slug, or `None` when it does not exist or is outside `scope`.
    async fn get_project(&self, slug: &str, scope: &ProjectScope) -> StorageResult<Option<Project>>;

    /// Stores a report with its labels, oracle and routing in one transaction.
    /// `Invalid` (field `project`) when the project does not exist; `Conflict`
    /// when the project already has a report with that external id.
    async fn create_report(&self, new: &NewReport) -> StorageResult<Report>;

    /// A report with its explanation, or `None` (also when outside `scope`).
    async fn get_report(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<Report>>;

    /// Reports matching the query's filters, in its order, one keyset page at a
    /// time. `Invalid` (field `cursor`) for a cursor that does not parse or was
    /// made for another ordering.
    async fn list_reports(&self, query: &ReportListQuery, scope: &ProjectScope) -> StorageResult<Page<ReportSummary>>;

    /// Stores an attempt and, in the same transaction, recomputes its report's
    /// counters, status, best verdict and spend. `NotFound` when the report
    /// does not exist; `Invalid` (field `verdict_source`) for a deterministic
    /// grade on a report without a deterministic oracle. When (agent, report,
    /// attempt_key) is taken: the stored attempt and `Unchanged` if it is the
    /// same attempt (a retry), `Conflict` if it differs.
    async fn create_attempt(&self, req: &CreateAttemptRequest) -> StorageResult<(Attempt, Outcome)>;

    /// Upserts projects by slug: created (public unless the record or
    /// `default_public` says otherwise), updated (name, description or
    /// visibility changed; a field left out keeps its value) or unchanged.
    async fn import_projects(&self, reqs: &[CreateProjectRequest], default_public: bool)
    -> StorageResult<Vec<Outcome>>;

    /// Upserts reports by (project, external id) in one transaction, compared
    /// by content hash; a changed report is rewritten with its labels and
    /// oracle, and its attempts' counting re-derived. A missing project is
    /// that record's `Invalid` error.
    async fn import_reports(&self, news: &[NewReport]) -> StorageResult<Vec<StorageResult<Outcome>>>;

    /// Upserts agents (with their stated figures) by name.
    async fn import_agents(&self, agents: &[AgentRecord]) -> StorageResult<Vec<Outcome>>;

    /// Replaces a report's derived routing (route, flags, category, features,
    /// explanation and a derived oracle) in one transaction and re-derives
    /// its attempts' counting. `NotFound` when the report does not exist.
    async fn update_routing(&self, report_id: i64, decision: &RoutingDecision) -> StorageResult<()>;

    /// The project (slug) of report `id`, or `None` when it does not exist or is outside `scope`.
    async fn report_project(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<String>>;

    /// The project (slug) of attempt `id`, or `None` when it does not exist or is outside `scope`.
    async fn attempt_project(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<String>>;

    /// A report's id by its natural key, or `None`.
    async fn find_report(&self, project: &str, external_id: &str) -> StorageResult<Option<i64>>;

    /// Every agent record, by name.
    async fn list_agents(&self) -> StorageResult<Vec<AgentRecord>>;

    /// Stores a batch of attempts in one transaction, idempotently: an attempt
    /// is identified by (agent, report, attempt_key), and a keyless one by its
    /// content hash. Each request gets its own outcome: created, updated (same
    /// key, other content), unchanged, or an error (`NotFound` for a report
    /// that does not exist). The reports touched are recomputed once.
    async fn import_attempts(&self, reqs: &[CreateAttemptRequest]) -> StorageResult<Vec<StorageResult<Outcome>>>;

    /// An attempt with its runs, or `None`.
    async fn get_attempt(&self, id: i64, scope: &ProjectScope) -> StorageResult<Option<AttemptDetail>>;

    /// Attempts matching the query, newest first, keyset-paged on id.
    async fn list_attempts(&self, query: &AttemptListQuery, scope: &ProjectScope) -> StorageResult<Page<Attempt>>;

    /// Stores one run of an attempt. `NotFound` when the attempt does not exist.
    /// Stores a run; an identical run of the same attempt is `Unchanged`.
    /// Returns the run's id either way.
    async fn create_run(&self, new: &NewRun) -> StorageResult<(i64, Outcome)>;

    /// Attempts a rerun selects: those of one report or of the reports a
    /// filter selects, whose verdict is one of `verdicts`, and that
    /// `failpass_shared::grading::verifiable` lets run; oldest first, at most
    /// [`RERUN_LIMIT`].
    async fn rerun_targets(
        &self,
        report_id: Option<i64>,
        filter: Option<&failpass_shared::api::reports::ReportFilter>,
        verdicts: &[failpass_shared::model::Verdict],
        scope: &ProjectScope,
    ) -> StorageResult<Vec<i64>>;

    /// Oracle coverage, sources, authoring time and failure causes (optionally one project's).
    async fn oracle_summary(
        &self,
        project: Option<&str>,
        scope: &ProjectScope,
    ) -> StorageResult<failpass_shared::api::oracles::OracleSummary>;

    /// A maintainer's review of an attempt, recorded under `reviewer`: an
    /// accepted lead becomes `confirmed`; counting and the report's status
    /// follow. `NotFound` when the attempt does not exist (or is outside `scope`).
    async fn review_attempt(
        &self,
        id: i64,
        req: &failpass_shared::api::attempts::ReviewRequest,
        reviewer: &str,
        scope: &ProjectScope,
    ) -> StorageResult<failpass_shared::api::attempts::Attempt>;

    /// A run from an import record: its attempt by id or natural key.
    async fn import_run(&self, req: &failpass_shared::api::attempts::CreateRunRequest) -> StorageResult<Outcome>;

    /// One contribution per (group key, report) for the figures: the report's
    /// attempts of the query's goal (and agent/model) within that group summed
    /// up. Report-level groupings include reports with no attempt; per-attempt
    /// groupings only reports with an attempt in the group.
    async fn figure_contributions(
        &self,
        query: &FiguresQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Vec<ReportContribution>>;

    /// `(group key, value)` of the metric for every attempt in the query's
    /// scope that recorded it.
    async fn metric_values(
        &self,
        query: &failpass_shared::api::figures::DistributionQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Vec<(String, f64)>>;

    /// Distinct agents and models with attempts visible in `scope`.
    async fn facets(&self, scope: &ProjectScope) -> StorageResult<failpass_shared::api::figures::Facets>;

    /// Every report the filter selects, with the times its reproduction
    /// attempts reached a verdict (for throughput and time to reproduction).
    async fn report_flows(
        &self,
        filter: &failpass_shared::api::reports::ReportFilter,
        scope: &ProjectScope,
    ) -> StorageResult<Vec<failpass_shared::figures::ReportFlow>>;
}

/// Opens the storage a URL names: `postgres://…` (or `postgresql://…`) for
/// PostgreSQL, `sqlite://PATH` or a plain file path for SQLite. Does not migrate.
pub async fn connect(url: &str) -> StorageResult<Arc<dyn Storage>> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        Ok(Arc::new(PgStorage::connect(url).await?))
    } else {
        let path = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")).unwrap_or(url);
        Ok(Arc::new(SqliteStorage::open(Path::new(path)).await?))
    }
}
