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

// The SQL of every domain (`sql/`), compiled for this engine; `sqlite.rs`
// compiles the same text for the other. Where they differ is `Dialect`.
type Engine = PgStorage;
type Db = sqlx::Postgres;
type Tx = sqlx::Transaction<'static, Db>;
#[path = "sql/mod.rs"]
#[allow(clippy::duplicate_mod, reason = "one SQL text, compiled once for each engine")]
mod sql;

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
