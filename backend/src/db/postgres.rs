//! PostgreSQL: the scale path, shared by workers on many machines. Sessions
//! run in UTC so dates and weeks mean the same as on SQLite.

use std::str::FromStr;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use super::StorageResult;

pub struct PgStorage {
    pub(super) read: PgPool,
    pub(super) write: PgPool,
}

// The SQL of every domain, in `sql/`, written once and compiled here for
// this engine as it is in `sqlite.rs`; where the engines differ is `Dialect`.
type Engine = PgStorage;
type Db = sqlx::Postgres;
type Tx = sqlx::Transaction<'static, Db>;
#[path = "sql/accounts.rs"]
#[allow(clippy::duplicate_mod, reason = "one SQL text, compiled once for each engine")]
mod accounts;
#[path = "sql/attempts.rs"]
#[allow(clippy::duplicate_mod, reason = "one SQL text, compiled once for each engine")]
mod attempts;
#[path = "sql/environments.rs"]
#[allow(clippy::duplicate_mod, reason = "one SQL text, compiled once for each engine")]
mod environments;
#[path = "sql/figures.rs"]
#[allow(clippy::duplicate_mod, reason = "one SQL text, compiled once for each engine")]
mod figures;
#[path = "sql/imports.rs"]
#[allow(clippy::duplicate_mod, reason = "one SQL text, compiled once for each engine")]
mod imports;
#[path = "sql/jobs.rs"]
#[allow(clippy::duplicate_mod, reason = "one SQL text, compiled once for each engine")]
mod jobs;
#[path = "sql/projects.rs"]
#[allow(clippy::duplicate_mod, reason = "one SQL text, compiled once for each engine")]
mod projects;
#[path = "sql/queue.rs"]
#[allow(clippy::duplicate_mod, reason = "one SQL text, compiled once for each engine")]
mod queue;
#[path = "sql/reports.rs"]
#[allow(clippy::duplicate_mod, reason = "one SQL text, compiled once for each engine")]
mod reports;
#[path = "sql/storage.rs"]
#[allow(clippy::duplicate_mod, reason = "one SQL text, compiled once for each engine")]
mod storage;

impl PgStorage {
    pub async fn connect(url: &str) -> StorageResult<Self> {
        let options = PgConnectOptions::from_str(url)?.options([("timezone", "UTC")]);
        let pool = PgPoolOptions::new()
            .max_connections(10)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await?;
        Ok(Self { read: pool.clone(), write: pool })
    }
}
