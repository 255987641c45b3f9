//! PostgreSQL: the scale path, shared by workers on many machines. Sessions
//! run in UTC so dates and weeks mean the same as on SQLite.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{PgPool, Postgres};

use super::sql::impl_storage;
use super::{Backend, StorageResult};

pub struct PgStorage {
    pub(super) read: PgPool,
    pub(super) write: PgPool,
}

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

    async fn run_migrations(&self) -> StorageResult<()> {
        sqlx::migrate!("../migrations/postgres").run(&self.write).await?;
        Ok(())
    }

    /// The database's clock (see `JobStore::clock`).
    const NOW: &'static str = "SELECT now()";

    /// The claim's row lock (SQLite has one writer, so none is needed).
    const SKIP_LOCKED: &'static str = "FOR UPDATE SKIP LOCKED";

    const LIKE: &'static str = "ILIKE";
    const WEEK_KEY: &'static str =
        "COALESCE(to_char(date_trunc('week', a.started_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD'), 'unknown')";
}

super::jobs::impl_jobs!(PgStorage, Postgres);
super::accounts::impl_accounts!(PgStorage, Postgres);
impl_storage!(PgStorage, Postgres, Backend::Postgres);

impl PgStorage {
    /// Bulk imports: multi-row inserts of `ATTEMPT_INSERT_CHUNK` rows.
    async fn bulk_insert_attempts(
        tx: &mut sqlx::Transaction<'static, Postgres>,
        rows: &[super::sql::PreparedAttempt],
    ) -> StorageResult<()> {
        for chunk in rows.chunks(super::sql::ATTEMPT_INSERT_CHUNK) {
            Self::insert_attempts(tx, chunk, false).await?;
        }
        Ok(())
    }

    /// New reports of an import batch, one at a time; returns their ids in order.
    async fn bulk_insert_reports(
        tx: &mut sqlx::Transaction<'static, Postgres>,
        rows: &[(i64, &super::NewReport, &str)],
    ) -> StorageResult<Vec<i64>> {
        let mut ids = Vec::with_capacity(rows.len());
        for (project_id, new, hash) in rows {
            ids.push(Self::write_report(tx, None, *project_id, new, hash).await?);
        }
        Ok(ids)
    }
}
