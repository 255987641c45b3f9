//! Storage: one trait a domain, two engines (SQLite, PostgreSQL).
//!
//! Callers only see `Arc<dyn Storage>`, chosen from the database URL's
//! scheme, and call the domain traits it is made of: [`ProjectStore`],
//! [`ReportStore`], [`AttemptStore`], [`ImportStore`], [`FigureStore`],
//! [`JobStore`], [`EnvironmentStore`] and [`AccountStore`], each in its file
//! with every method's contract. Multi-step writes are single trait methods
//! so transactions never leak out.
//!
//! The SQL is written once a domain, in `sql/` (`sql/reports.rs` implements
//! `ReportStore`), and compiled once for each engine by `sqlite.rs` and
//! `postgres.rs`. Where the engines differ is the `Dialect` trait in
//! `dialect.rs`, both implementations side by side. Helpers every domain
//! shares (whole-second times, insert statements, the prepared attempt) are in
//! `common.rs`, row types in `rows.rs`. The contract suite
//! (`tests/api/storage.rs`) runs every case on both engines.

pub mod accounts;
pub mod attempts;
pub(crate) mod common;
mod dialect;
pub mod environments;
pub mod figures;
pub mod imports;
pub mod jobs;
mod postgres;
pub mod projects;
pub mod queue;
pub mod reports;
mod rows;
mod sqlite;

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

pub use accounts::AccountStore;
pub use attempts::{AttemptStore, NewRun};
pub use environments::EnvironmentStore;
pub use figures::FigureStore;
pub use imports::ImportStore;
pub use jobs::JobStore;
pub use postgres::PgStorage;
pub use projects::ProjectStore;
pub use reports::{NewReport, ReportStore};
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

/// Which database engine backs a [`Storage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Everything failpass stores, by domain. Callers hold an `Arc<dyn Storage>`;
/// the domain traits' methods are callable on it directly.
#[async_trait]
pub trait Storage:
    ProjectStore
    + ReportStore
    + AttemptStore
    + ImportStore
    + FigureStore
    + JobStore
    + EnvironmentStore
    + AccountStore
    + Send
    + Sync
    + 'static
{
    /// The engine behind this storage.
    fn backend(&self) -> Backend;

    /// Applies pending migrations. Idempotent; forward-only.
    async fn migrate(&self) -> StorageResult<()>;

    /// A round trip for `/healthz` that also writes (one row of `health`),
    /// so a full disk or a read-only database shows as unhealthy.
    async fn ping(&self) -> StorageResult<()>;

    /// True when no project exists yet (the demo only fills an empty database).
    async fn is_empty(&self) -> StorageResult<bool>;
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
