//! Where the two engines differ, and nowhere else.
//!
//! Both engines take `$N` parameters, `RETURNING`, `ON CONFLICT` and
//! `TRUE`/`FALSE`, so the SQL of every domain (`projects.rs`, `reports.rs`,
//! `attempts.rs`, …) is written once. What differs is named here, as the
//! [`Dialect`] trait, with both implementations side by side: a method that
//! needs a difference uses the named piece (`Self::LIKE`), and a new engine
//! must supply every piece or it does not compile.
//!
//! The SQL itself is in `sql/`, a file a domain (`sql/reports.rs` implements
//! `ReportStore`, …). `sqlite.rs` and `postgres.rs` each compile every file
//! there as a module of their own, where `Engine` is that engine's storage
//! type, `Db` its sqlx database and `Tx` a write transaction: one text, two
//! compiled implementations, each checked by the compiler and by the
//! contract suite.

use sqlx::{Postgres, Sqlite, Transaction};

use super::common::PreparedAttempt;
use super::reports::NewReport;
use super::{Backend, PgStorage, SqliteStorage, StorageResult};

/// The pieces of SQL and the code paths that differ between engines.
pub(crate) trait Dialect {
    type Db: sqlx::Database;

    const BACKEND: Backend;

    /// A query giving the database's clock (see `JobStore::clock`).
    const NOW: &'static str;

    /// Appended to the claim's `SELECT`: the row lock that lets workers on
    /// many machines claim at once without taking the same job.
    const SKIP_LOCKED: &'static str;

    /// The case-insensitive match operator (for ASCII at least).
    const LIKE: &'static str;

    /// An expression giving the Monday of `a.started_at`'s week as
    /// `YYYY-MM-DD` (`unknown` without a start).
    const WEEK_KEY: &'static str;

    /// An expression giving `a.started_at`'s month (UTC) as `YYYY-MM`
    /// (`unknown` without a start).
    const MONTH_KEY: &'static str;

    /// The day (UTC) an attempt `a` started, as `YYYY-MM-DD`.
    const DAY_KEY: &'static str;

    /// The day (UTC) report `r` was filed, as days since 1970-01-01.
    const FILED_DAY: &'static str;

    /// Taken by a transaction before it moves the figures' rollups: on
    /// PostgreSQL a transaction-scoped advisory lock, so writers on many
    /// machines move them one at a time; SQLite has one writer already.
    const FIGURES_LOCK: &'static str;

    /// Applies the engine's pending migrations.
    async fn run_migrations(&self) -> StorageResult<()>;

    /// Inserts an import batch's new attempts (already prepared) in `tx`.
    async fn bulk_insert_attempts(
        tx: &mut Transaction<'static, Self::Db>,
        rows: &[PreparedAttempt],
    ) -> StorageResult<()>;

    /// Inserts an import batch's new reports (project id, report, content
    /// hash) with their labels and oracles in `tx`; returns their ids in order.
    async fn bulk_insert_reports(
        tx: &mut Transaction<'static, Self::Db>,
        rows: &[(i64, &NewReport, &str)],
    ) -> StorageResult<Vec<i64>>;
}

impl Dialect for SqliteStorage {
    type Db = Sqlite;

    const BACKEND: Backend = Backend::Sqlite;

    const NOW: &'static str = "SELECT strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')";

    /// None: SQLite has one writer, and the claim runs on it.
    const SKIP_LOCKED: &'static str = "";

    /// SQLite's `LIKE` ignores ASCII case.
    const LIKE: &'static str = "LIKE";

    /// `weekday 0` moves to the next Sunday (or stays); six days back is Monday.
    const WEEK_KEY: &'static str = "COALESCE(strftime('%Y-%m-%d', a.started_at, 'weekday 0', '-6 days'), 'unknown')";

    const MONTH_KEY: &'static str = "COALESCE(strftime('%Y-%m', a.started_at), 'unknown')";

    const DAY_KEY: &'static str = "COALESCE(strftime('%Y-%m-%d', a.started_at), 'unknown')";

    const FILED_DAY: &'static str = "CAST(CAST(strftime('%s', r.filed_at) AS INTEGER) / 86400 AS INTEGER)";

    const FIGURES_LOCK: &'static str = "SELECT 1";

    async fn run_migrations(&self) -> StorageResult<()> {
        sqlx::migrate!("../migrations/sqlite").run(&self.write).await?;
        Ok(())
    }

    /// Through rusqlite's prepared statements on the transaction's own
    /// connection (see `SqliteStorage::with_raw`).
    async fn bulk_insert_attempts(
        tx: &mut Transaction<'static, Sqlite>,
        rows: &[PreparedAttempt],
    ) -> StorageResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        Self::with_raw(tx, |conn| super::sqlite::insert_attempts_raw(conn, rows)).await
    }

    async fn bulk_insert_reports(
        tx: &mut Transaction<'static, Sqlite>,
        rows: &[(i64, &NewReport, &str)],
    ) -> StorageResult<Vec<i64>> {
        Self::with_raw(tx, |conn| super::sqlite::insert_reports_raw(conn, rows)).await
    }
}

impl Dialect for PgStorage {
    type Db = Postgres;

    const BACKEND: Backend = Backend::Postgres;

    const NOW: &'static str = "SELECT now()";

    /// Concurrent claimers skip rows another transaction holds.
    const SKIP_LOCKED: &'static str = "FOR UPDATE SKIP LOCKED";

    const LIKE: &'static str = "ILIKE";

    const WEEK_KEY: &'static str =
        "COALESCE(to_char(date_trunc('week', a.started_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD'), 'unknown')";

    const MONTH_KEY: &'static str = "COALESCE(to_char(a.started_at AT TIME ZONE 'UTC', 'YYYY-MM'), 'unknown')";

    const DAY_KEY: &'static str = "COALESCE(to_char(a.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD'), 'unknown')";

    const FILED_DAY: &'static str = "CAST(FLOOR(EXTRACT(EPOCH FROM r.filed_at) / 86400) AS BIGINT)";

    /// The key is failpass's own ("figures"), held until commit.
    const FIGURES_LOCK: &'static str = "SELECT pg_advisory_xact_lock(7046617)";

    async fn run_migrations(&self) -> StorageResult<()> {
        sqlx::migrate!("../migrations/postgres").run(&self.write).await?;
        Ok(())
    }

    /// Multi-row inserts of `ATTEMPT_INSERT_CHUNK` rows.
    async fn bulk_insert_attempts(
        tx: &mut Transaction<'static, Postgres>,
        rows: &[PreparedAttempt],
    ) -> StorageResult<()> {
        for chunk in rows.chunks(super::common::ATTEMPT_INSERT_CHUNK) {
            Self::insert_attempts(tx, chunk, false).await?;
        }
        Ok(())
    }

    /// Multi-row statements of a thousand reports.
    async fn bulk_insert_reports(
        tx: &mut Transaction<'static, Postgres>,
        rows: &[(i64, &NewReport, &str)],
    ) -> StorageResult<Vec<i64>> {
        Self::insert_reports_multi(tx, rows).await
    }
}
