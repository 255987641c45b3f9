//! SQLite: the embedded default. One write connection (SQLite has a single
//! writer; funnelling writes through one connection avoids busy errors) and a
//! small read pool, all in WAL mode.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool};

use super::sql::impl_storage;
use super::{Backend, StorageResult};

pub struct SqliteStorage {
    pub(super) read: SqlitePool,
    pub(super) write: SqlitePool,
}

impl SqliteStorage {
    /// Opens (creating if needed) the database file at `path`.
    pub async fn open(path: &Path) -> StorageResult<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| sqlx::Error::Io(e))?;
        }
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10))
            // 64 MiB of page cache per connection: bulk imports touch many index pages.
            .pragma("cache_size", "-65536");
        let write = SqlitePoolOptions::new().max_connections(1).connect_with(options.clone()).await?;
        let read = SqlitePoolOptions::new().max_connections(4).connect_with(options.read_only(true)).await?;
        Ok(Self { read, write })
    }

    async fn run_migrations(&self) -> StorageResult<()> {
        sqlx::migrate!("../migrations/sqlite").run(&self.write).await?;
        Ok(())
    }

    /// Case-insensitive for ASCII, which is SQLite's LIKE.
    const LIKE: &'static str = "LIKE";
    /// Monday of the attempt's week (`weekday 0` moves to the next Sunday, or stays).
    const WEEK_KEY: &'static str = "COALESCE(strftime('%Y-%m-%d', a.started_at, 'weekday 0', '-6 days'), 'unknown')";
}

impl_storage!(SqliteStorage, Sqlite, Backend::Sqlite);
