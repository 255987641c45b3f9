//! PostgreSQL: the scale path, shared by workers on many machines. Sessions
//! run in UTC so dates and weeks mean the same as on SQLite.

use std::str::FromStr;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use super::StorageResult;
use super::write_queue::WriteQueue;

pub struct PgStorage {
    pub(super) read: PgPool,
    pub(super) write: PgPool,
    /// Live writes' group commit (`write_queue.rs`), on `write`.
    pub(super) writer: WriteQueue,
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
        // Custom plans always: a prepared statement's generic plan cannot see
        // its parameters, and for the bulk `external_id IN ($2, …, $501)`
        // lookups it chose a scan of the project's every report (490 ms a
        // batch at 42,000 reports, so imports slowed with the table's size).
        // Planning each execution costs well under a millisecond.
        // No JIT: the figures' per-report statements are estimated costly
        // enough to compile, and compiling took 209 ms of a 230 ms statement
        // (7 ms without), once per import batch.
        // Parallel workers only for large scans: the figures read a few
        // thousand rollup rows, and starting two workers for them took 6 of
        // a 9 ms statement at a million attempts (serial: 2 to 4 ms). Ten
        // times the default setup cost keeps them for the exact figures'
        // scans of every attempt.
        let options = PgConnectOptions::from_str(url)?.options([
            ("timezone", "UTC"),
            ("plan_cache_mode", "force_custom_plan"),
            ("jit", "off"),
            ("parallel_setup_cost", "10000"),
        ]);
        let pool = PgPoolOptions::new()
            .max_connections(10)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await?;
        let write = pool.clone();
        let writer = WriteQueue::start(Box::new(move |batch| Box::pin(Self::apply_batch(write.clone(), batch))));
        Ok(Self { read: pool.clone(), write: pool, writer })
    }
}
