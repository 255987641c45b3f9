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
pub mod hooks;
pub mod imports;
pub mod jobs;
pub mod oracle_drafts;
mod postgres;
pub mod projects;
pub mod queue;
pub mod releases;
pub mod reports;
pub mod routing;
mod rows;
mod sqlite;
pub(crate) mod write_queue;

use std::sync::Arc;

use async_trait::async_trait;

pub use accounts::AccountStore;
pub use attempts::{AttemptStore, NewRun};
pub use environments::EnvironmentStore;
pub use figures::{FigureCheck, FigureStore, FiledDays, figure_level, rollup_level};
pub use hooks::HookStore;
pub use imports::ImportStore;
pub use jobs::JobStore;
pub use oracle_drafts::OracleDraftStore;
pub use postgres::PgStorage;
pub use projects::ProjectStore;
pub use releases::ReleaseStore;
pub use reports::{NewReport, Origin, ReportStore};
pub use routing::RoutingStore;
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
    + OracleDraftStore
    + HookStore
    + ReleaseStore
    + RoutingStore
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

    /// Refreshes the planner's statistics of the tables a bulk import grows
    /// (PostgreSQL's `ANALYZE`; nothing on SQLite, whose planner keeps none
    /// unless asked). A long import outruns autovacuum: planned on the
    /// statistics of an empty table, its key lookups scanned the project.
    /// The rollups' tables are among them: a server without autovacuum had
    /// never learned `value_cells`, and a batch's delete of its reports'
    /// cells scanned all 1.4 million (60 ms a batch at a million attempts).
    async fn refresh_statistics(&self) -> StorageResult<()>;

    /// True when no project exists yet (the demo only fills an empty database).
    async fn is_empty(&self) -> StorageResult<bool>;

    /// SQLite: writes a consistent copy of the database to `path` while it
    /// serves (`VACUUM INTO`: one read transaction's snapshot, compacted, a
    /// file to serve from as it is). PostgreSQL's are `pg_dump`'s
    /// (`failpass backup` runs it): an error here.
    async fn backup_into(&self, path: &std::path::Path) -> StorageResult<()>;

    /// When the periodic task `name` last ran, if ever.
    async fn task_last_run(&self, name: &str) -> StorageResult<Option<chrono::DateTime<chrono::Utc>>>;

    /// Records that the periodic task `name` ran at `at`.
    async fn set_task_last_run(&self, name: &str, at: chrono::DateTime<chrono::Utc>) -> StorageResult<()>;
}

/// Whether `url` names a PostgreSQL database (else a SQLite file).
pub fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// Opens the storage a URL names: `postgres://…` (or `postgresql://…`) for
/// PostgreSQL, `sqlite://PATH` or a plain file path for SQLite. Does not migrate.
pub async fn connect(url: &str) -> StorageResult<Arc<dyn Storage>> {
    if is_postgres(url) {
        Ok(Arc::new(PgStorage::connect(url).await?))
    } else {
        let target = sqlite_target(url)?;
        if !target.create && !target.path.exists() {
            return Err(StorageError::Invalid {
                field: "database-url".into(),
                message: format!(
                    "{} does not exist (`mode=rw` does not create it; `mode=rwc` does)",
                    target.path.display()
                ),
            });
        }
        Ok(Arc::new(SqliteStorage::open(&target.path).await?))
    }
}

/// A SQLite database URL, read as sqlx reads one.
#[derive(Debug, PartialEq, Eq)]
pub struct SqliteTarget {
    pub path: std::path::PathBuf,
    /// Create the file when missing (`mode=rwc`, the default).
    pub create: bool,
}

/// `sqlite://PATH`, `sqlite:PATH` or a plain path, with sqlx's query
/// parameters: `mode=rwc` (the default) or `rw`; `ro` and `memory` are
/// refused (failpass writes, and keeps what it writes), as is any other
/// parameter. `%XX` in the path is decoded.
pub fn sqlite_target(url: &str) -> StorageResult<SqliteTarget> {
    let invalid = |message: String| StorageError::Invalid { field: "database-url".into(), message };
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"));
    let (path, query) = match rest {
        // Only a URL has a query; a plain path may hold a `?`.
        Some(rest) => rest.split_once('?').unwrap_or((rest, "")),
        None => (url, ""),
    };
    let path = match rest {
        Some(_) => failpass_shared::api::query::decode_component(&path.replace('+', "%2B")),
        None => path.to_owned(),
    };
    if path.is_empty() || path == ":memory:" {
        return Err(invalid(format!(
            "`{url}` names no file; failpass keeps its data, so give a path (`sqlite:///var/lib/failpass/failpass.db`)"
        )));
    }
    let mut create = true;
    for (k, v) in failpass_shared::api::query::parse_query_string(query) {
        match (k.as_str(), v.as_str()) {
            ("mode", "rwc") => create = true,
            ("mode", "rw") => create = false,
            ("mode", "ro") => {
                return Err(invalid("`mode=ro`: failpass writes to its database; use `rw` or `rwc`".into()));
            }
            ("mode", "memory") => {
                return Err(invalid("`mode=memory`: failpass keeps its data; give a file with `rw` or `rwc`".into()));
            }
            ("mode", other) => return Err(invalid(format!("`mode={other}`: expected `rwc` or `rw`"))),
            (other, _) => {
                return Err(invalid(format!(
                    "`{other}` is not a parameter failpass reads from a SQLite URL; it takes `mode=rwc` or `mode=rw`"
                )));
            }
        }
    }
    Ok(SqliteTarget { path: path.into(), create })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> (String, bool) {
        let t = sqlite_target(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        (t.path.to_string_lossy().into_owned(), t.create)
    }

    fn refused(url: &str) -> String {
        sqlite_target(url).expect_err(url).to_string()
    }

    #[test]
    fn sqlite_urls_read_as_sqlx_reads_them() {
        assert_eq!(target("sqlite:///tmp/x.db?mode=rwc"), ("/tmp/x.db".into(), true));
        assert_eq!(target("sqlite:///tmp/x.db?mode=rw"), ("/tmp/x.db".into(), false));
        assert_eq!(target("sqlite:data/x.db"), ("data/x.db".into(), true));
        assert_eq!(target("sqlite:///tmp/a%20b+c.db"), ("/tmp/a b+c.db".into(), true));
        // A plain path is a path, `?` and all.
        assert_eq!(target("/tmp/odd?name.db"), ("/tmp/odd?name.db".into(), true));
        assert!(refused("sqlite:///tmp/x.db?mode=ro").contains("mode=ro"));
        assert!(refused("sqlite::memory:").contains("names no file"));
        assert!(refused("sqlite:///tmp/x.db?mode=memory").contains("keeps its data"));
        assert!(refused("sqlite:///tmp/x.db?cache=shared").contains("`cache` is not a parameter"));
        assert!(refused("sqlite:///tmp/x.db?mode=rwx").contains("expected `rwc` or `rw`"));
    }

    #[tokio::test]
    async fn a_sqlite_url_opens_the_file_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("x.db");
        connect(&format!("sqlite://{}?mode=rwc", file.display())).await.unwrap();
        assert!(file.exists(), "the file is named without its query");
        assert!(!dir.path().join("x.db?mode=rwc").exists());
        let missing = dir.path().join("missing.db");
        let err = connect(&format!("sqlite://{}?mode=rw", missing.display())).await.err().expect("refused");
        assert!(err.to_string().contains("does not exist"), "{err}");
        assert!(!missing.exists());
    }
}
