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
use super::{Backend, PgStorage, SqliteStorage, StorageError, StorageResult};

/// The pieces of SQL and the code paths that differ between engines.
pub(crate) trait Dialect {
    type Db: sqlx::Database;

    const BACKEND: Backend;

    /// A query giving the database's clock (see `JobStore::clock`).
    const NOW: &'static str;

    /// Appended to the claim's `SELECT`: the row lock that lets workers on
    /// many machines claim at once without taking the same job.
    const SKIP_LOCKED: &'static str;

    /// Appended to a `SELECT` of rows a write will compare after it changed
    /// them: the lock that keeps a concurrent write from reading the same
    /// "before" (hooks would be told one change twice).
    const FOR_UPDATE: &'static str;

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

    /// The year (UTC) an attempt `a` started, as `YYYY` (`unknown` without a start).
    const YEAR_KEY: &'static str;

    /// The day (UTC) report `r` was filed, as days since 1970-01-01
    /// ([`failpass_shared::figures::NO_DAY`] when nobody stated it).
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
        rows: &[PreparedAttempt<'_>],
    ) -> StorageResult<()>;

    /// Inserts an import batch's new reports (project id, report, content
    /// hash) with their labels and oracles in `tx`; returns their ids in order.
    async fn bulk_insert_reports(
        tx: &mut Transaction<'static, Self::Db>,
        rows: &[(i64, &NewReport, &str)],
    ) -> StorageResult<Vec<i64>>;

    /// Runs `sql` in `tx` and hands its rows to `each` as they are read,
    /// in order. A bulk import reads 25,000 attempts a batch to bin their
    /// values: on SQLite this reads them through rusqlite on the
    /// transaction's own connection, strings in place; on PostgreSQL it
    /// streams them.
    async fn each_row(
        tx: &mut Transaction<'static, Self::Db>,
        sql: &str,
        each: &mut (dyn FnMut(&dyn ReadRow) -> StorageResult<()> + Send),
    ) -> StorageResult<()>;

    /// Writes rows into `table` in `tx`: `INSERT INTO table (columns) …
    /// conflict`, where `values` holds the rows one after another, each
    /// `columns.len()` values, every row's values of a column of one kind;
    /// `conflict` is empty or an `ON CONFLICT …` clause. The rollups' cells
    /// and group moves, thousands of rows per write, go this way.
    async fn write_rows(
        tx: &mut Transaction<'static, Self::Db>,
        table: &str,
        columns: &[&str],
        conflict: &str,
        values: &[Param<'_>],
    ) -> StorageResult<()>;
}

/// A value of a row [`Dialect::write_rows`] writes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Param<'a> {
    Int(i64),
    /// An integer or `NULL`; a column may mix it with [`Param::Int`].
    MaybeInt(Option<i64>),
    Real(f64),
    Text(&'a str),
}

/// A row [`Dialect::each_row`] hands over, its columns read by position.
pub(crate) trait ReadRow {
    fn int(&self, column: usize) -> StorageResult<i64>;
    /// A text column, read in place.
    fn text(&self, column: usize) -> StorageResult<&str>;
    fn real(&self, column: usize) -> StorageResult<Option<f64>>;
}

impl ReadRow for rusqlite::Row<'_> {
    fn int(&self, column: usize) -> StorageResult<i64> {
        Ok(self.get(column)?)
    }

    fn text(&self, column: usize) -> StorageResult<&str> {
        let value = self.get_ref(column)?;
        value.as_str().map_err(|e| StorageError::Corrupt(format!("column {column}: {e}")))
    }

    fn real(&self, column: usize) -> StorageResult<Option<f64>> {
        Ok(self.get(column)?)
    }
}

impl ReadRow for sqlx::postgres::PgRow {
    fn int(&self, column: usize) -> StorageResult<i64> {
        Ok(sqlx::Row::try_get(self, column)?)
    }

    fn text(&self, column: usize) -> StorageResult<&str> {
        Ok(sqlx::Row::try_get(self, column)?)
    }

    fn real(&self, column: usize) -> StorageResult<Option<f64>> {
        Ok(sqlx::Row::try_get(self, column)?)
    }
}

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Param::Int(n) | Param::MaybeInt(Some(n)) => ValueRef::Integer(*n),
            Param::MaybeInt(None) => ValueRef::Null,
            Param::Real(x) => ValueRef::Real(*x),
            Param::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

/// Rows of [`Dialect::write_rows`] per PostgreSQL statement.
const ROWS_PER_STATEMENT: usize = 5000;
/// Rows from which [`Dialect::write_rows`] copies them into PostgreSQL
/// instead (a `COPY` without a conflict clause).
const COPY_MIN_ROWS: usize = 1000;

impl Dialect for SqliteStorage {
    type Db = Sqlite;

    const BACKEND: Backend = Backend::Sqlite;

    const NOW: &'static str = "SELECT strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')";

    /// None: SQLite has one writer, and the claim runs on it.
    const SKIP_LOCKED: &'static str = "";

    /// None: SQLite's one writer holds the whole database.
    const FOR_UPDATE: &'static str = "";

    /// SQLite's `LIKE` ignores ASCII case.
    const LIKE: &'static str = "LIKE";

    /// `weekday 0` moves to the next Sunday (or stays); six days back is Monday.
    const WEEK_KEY: &'static str = "COALESCE(strftime('%Y-%m-%d', CASE WHEN a.time_stated THEN a.started_at END, 'weekday 0', '-6 days'), 'unknown')";

    const MONTH_KEY: &'static str =
        "COALESCE(strftime('%Y-%m', CASE WHEN a.time_stated THEN a.started_at END), 'unknown')";

    const DAY_KEY: &'static str =
        "COALESCE(strftime('%Y-%m-%d', CASE WHEN a.time_stated THEN a.started_at END), 'unknown')";

    const YEAR_KEY: &'static str = "COALESCE(strftime('%Y', CASE WHEN a.time_stated THEN a.started_at END), 'unknown')";

    const FILED_DAY: &'static str = "CASE WHEN r.filed_at_stated THEN CAST(CAST(strftime('%s', r.filed_at) AS INTEGER) / 86400 AS INTEGER) ELSE -1000000000 END";

    const FIGURES_LOCK: &'static str = "SELECT 1";

    async fn run_migrations(&self) -> StorageResult<()> {
        sqlx::migrate!("../migrations/sqlite").run(&self.write).await?;
        Ok(())
    }

    /// Through rusqlite's prepared statements on the transaction's own
    /// connection (see `SqliteStorage::with_raw`).
    async fn bulk_insert_attempts(
        tx: &mut Transaction<'static, Sqlite>,
        rows: &[PreparedAttempt<'_>],
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

    /// Through rusqlite on the transaction's own connection.
    async fn each_row(
        tx: &mut Transaction<'static, Sqlite>,
        sql: &str,
        each: &mut (dyn FnMut(&dyn ReadRow) -> StorageResult<()> + Send),
    ) -> StorageResult<()> {
        Self::with_raw(tx, |conn| {
            let mut stmt = conn.prepare(sql)?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                each(row)?;
            }
            Ok(())
        })
        .await
    }

    /// One statement of one row, prepared once and run per row on the
    /// transaction's own connection: SQLite runs in this process, so a
    /// statement costs its work and no round trip, and a multi-row
    /// statement's thousands of parameters cost more to bind than they save.
    async fn write_rows(
        tx: &mut Transaction<'static, Sqlite>,
        table: &str,
        columns: &[&str],
        conflict: &str,
        values: &[Param<'_>],
    ) -> StorageResult<()> {
        if values.is_empty() {
            return Ok(());
        }
        let marks = (1..=columns.len()).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ");
        let sql = format!("INSERT INTO {table} ({}) VALUES ({marks}) {conflict}", columns.join(", "));
        Self::with_raw(tx, |conn| {
            let mut stmt = conn.prepare(&sql)?;
            for row in values.chunks(columns.len()) {
                stmt.execute(rusqlite::params_from_iter(row))?;
            }
            Ok(())
        })
        .await
    }
}

/// Sends `text` to a `COPY … FROM STDIN` (`statement`) in `tx`.
async fn copy_in(tx: &mut Transaction<'static, Postgres>, statement: &str, text: String) -> Result<(), sqlx::Error> {
    let mut copy = tx.copy_in_raw(statement).await?;
    copy.send(text.into_bytes()).await?;
    copy.finish().await?;
    Ok(())
}

impl Dialect for PgStorage {
    type Db = Postgres;

    const BACKEND: Backend = Backend::Postgres;

    const NOW: &'static str = "SELECT now()";

    /// Concurrent claimers skip rows another transaction holds.
    const SKIP_LOCKED: &'static str = "FOR UPDATE SKIP LOCKED";

    const FOR_UPDATE: &'static str = "FOR UPDATE";

    const LIKE: &'static str = "ILIKE";

    const WEEK_KEY: &'static str = "COALESCE(to_char(date_trunc('week', (CASE WHEN a.time_stated THEN a.started_at END) AT TIME ZONE 'UTC'), 'YYYY-MM-DD'), 'unknown')";

    const MONTH_KEY: &'static str =
        "COALESCE(to_char((CASE WHEN a.time_stated THEN a.started_at END) AT TIME ZONE 'UTC', 'YYYY-MM'), 'unknown')";

    const DAY_KEY: &'static str = "COALESCE(to_char((CASE WHEN a.time_stated THEN a.started_at END) AT TIME ZONE 'UTC', 'YYYY-MM-DD'), 'unknown')";

    const YEAR_KEY: &'static str =
        "COALESCE(to_char((CASE WHEN a.time_stated THEN a.started_at END) AT TIME ZONE 'UTC', 'YYYY'), 'unknown')";

    const FILED_DAY: &'static str = "CASE WHEN r.filed_at_stated THEN CAST(FLOOR(EXTRACT(EPOCH FROM r.filed_at) / 86400) AS BIGINT) ELSE -1000000000 END";

    /// The key is failpass's own ("figures"), held until commit.
    const FIGURES_LOCK: &'static str = "SELECT pg_advisory_xact_lock(7046617)";

    async fn run_migrations(&self) -> StorageResult<()> {
        sqlx::migrate!("../migrations/postgres").run(&self.write).await?;
        Ok(())
    }

    /// One `COPY` (`postgres::attempts_copy_text`): 200,000 attempts took
    /// 14.8 s as multi-row inserts. Multi-row inserts of
    /// `ATTEMPT_INSERT_CHUNK` rows when a value has no faithful text.
    async fn bulk_insert_attempts(
        tx: &mut Transaction<'static, Postgres>,
        rows: &[PreparedAttempt<'_>],
    ) -> StorageResult<()> {
        if rows.is_empty() {
            return Ok(());
        }
        if let Some(text) = super::postgres::attempts_copy_text(rows)? {
            let conflict = super::common::conflict_on_unique(super::common::ATTEMPT_KEY_TAKEN);
            // Each row's foreign-key check is a cached plan of its own. The
            // sessions force custom plans (see `PgStorage::connect`),
            // which planned that check again for every row: 38% of the
            // server's time in an import. For the COPY the server chooses,
            // and it keeps the check's one generic plan.
            sqlx::query("SET LOCAL plan_cache_mode = auto").execute(&mut **tx).await?;
            copy_in(tx, &super::postgres::attempts_copy_statement(), text).await.map_err(conflict)?;
            sqlx::query("SET LOCAL plan_cache_mode = force_custom_plan").execute(&mut **tx).await?;
            return Ok(());
        }
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

    /// Streamed through sqlx.
    async fn each_row(
        tx: &mut Transaction<'static, Postgres>,
        sql: &str,
        each: &mut (dyn FnMut(&dyn ReadRow) -> StorageResult<()> + Send),
    ) -> StorageResult<()> {
        use futures_util::TryStreamExt;
        let mut rows = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned())).fetch(&mut **tx);
        while let Some(row) = rows.try_next().await? {
            each(&row)?;
        }
        Ok(())
    }

    /// A statement per [`ROWS_PER_STATEMENT`] rows, each column bound as
    /// one array and the rows read back with `UNNEST`: a handful of
    /// parameters instead of one per value, and one statement text whatever
    /// the number of rows, so its plan is prepared once.
    async fn write_rows(
        tx: &mut Transaction<'static, Postgres>,
        table: &str,
        columns: &[&str],
        conflict: &str,
        values: &[Param<'_>],
    ) -> StorageResult<()> {
        let width = columns.len();
        // New rows in number (an import's cells) go in by one `COPY`: the
        // 1.47 million value cells of a million attempts took 6.3 s of
        // `UNNEST` inserts here.
        if conflict.is_empty()
            && values.len() >= width * COPY_MIN_ROWS
            && let Some(text) = super::postgres::params_copy_text(values, width)
        {
            copy_in(tx, &format!("COPY {table} ({}) FROM STDIN", columns.join(", ")), text).await?;
            return Ok(());
        }
        for chunk in values.chunks(width * ROWS_PER_STATEMENT) {
            let mut qb = sqlx::QueryBuilder::<Postgres>::new(format!(
                "INSERT INTO {table} ({}) SELECT * FROM UNNEST(",
                columns.join(", ")
            ));
            for c in 0..width {
                if c > 0 {
                    qb.push(", ");
                }
                let column = chunk.iter().skip(c).step_by(width);
                let mixed = || StorageError::Corrupt(format!("{table}.{}: values of more than one kind", columns[c]));
                match chunk[c] {
                    Param::Int(_) | Param::MaybeInt(_) => {
                        let v: Option<Vec<Option<i64>>> = column
                            .map(|p| match p {
                                Param::Int(n) => Some(Some(*n)),
                                Param::MaybeInt(n) => Some(*n),
                                _ => None,
                            })
                            .collect();
                        qb.push_bind(v.ok_or_else(mixed)?).push("::int8[]");
                    }
                    Param::Real(_) => {
                        let v: Option<Vec<f64>> =
                            column.map(|p| if let Param::Real(x) = p { Some(*x) } else { None }).collect();
                        qb.push_bind(v.ok_or_else(mixed)?).push("::float8[]");
                    }
                    Param::Text(_) => {
                        let v: Option<Vec<&str>> =
                            column.map(|p| if let Param::Text(s) = p { Some(*s) } else { None }).collect();
                        qb.push_bind(v.ok_or_else(mixed)?).push("::text[]");
                    }
                }
            }
            qb.push(format!(") {conflict}"));
            qb.build().persistent(true).execute(&mut **tx).await?;
        }
        Ok(())
    }
}
