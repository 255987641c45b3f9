//! SQLite: the embedded default. One write connection (SQLite has a single
//! writer; funnelling writes through one connection avoids busy errors) and a
//! small read pool, all in WAL mode.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool};

use super::common::{ATTEMPT_INSERT, LABEL_INSERT, ORACLE_INSERT, PreparedAttempt, REPORT_INSERT, clean_labels, secs};
use super::reports::NewReport;
use super::write_queue::WriteQueue;
use super::{StorageError, StorageResult};

pub struct SqliteStorage {
    pub(super) read: SqlitePool,
    pub(super) write: SqlitePool,
    /// Live writes' group commit (`write_queue.rs`), on `write`.
    pub(super) writer: WriteQueue,
}

// The SQL of every domain (`sql/`), compiled for this engine; `postgres.rs`
// compiles the same text for the other. Where they differ is `Dialect`.
type Engine = SqliteStorage;
type Db = sqlx::Sqlite;
type Tx = sqlx::Transaction<'static, Db>;
#[path = "sql/mod.rs"]
#[allow(clippy::duplicate_mod, reason = "one SQL text, compiled once for each engine")]
mod sql;

/// Turns SQLite's memory statistics off, once per process, before its
/// first connection. With them on, every allocation and free inside SQLite
/// takes one process-wide mutex, and sqlx copies each row's values on its
/// worker thread and frees them on the reading task's: the two threads
/// contended for it on every row (at a million attempts, wrk on the
/// throughput went from 380 to 508 requests a second with them off). It
/// also turns the soft heap limit off, which only they enforce: each
/// connection's page cache is bounded by its own `cache_size` instead.
fn without_memory_statistics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: `sqlite3_config` is called with an option that takes one
        // int, as SQLite documents; before SQLite is initialised (the first
        // connection) it changes a global, and after it returns
        // SQLITE_MISUSE and changes nothing, which is logged. SQLite asks
        // that no other thread use it meanwhile: in failpass every
        // connection is opened through this function, which runs this once
        // before its first; the only other SQLite connections are tests'
        // own, opened after a storage was.
        let rc = unsafe { rusqlite::ffi::sqlite3_config(rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS, 0 as std::ffi::c_int) };
        if rc != rusqlite::ffi::SQLITE_OK {
            tracing::debug!(rc, "SQLite was initialised first: its memory statistics stay on");
        }
    });
}

impl SqliteStorage {
    /// Opens (creating if needed) the database file at `path`.
    pub async fn open(path: &Path) -> StorageResult<Self> {
        without_memory_statistics();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(sqlx::Error::Io)?;
        }
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10))
            // 16 MiB of page cache for the writer. A bulk import touches many
            // index pages, but the operating system keeps the file's pages
            // too: at 25,000 attempts a batch, 1M records took 30.7 s with
            // 64 MiB and 26.9 to 30.3 s with 16 MiB, whose peak was 50 MB lower.
            .pragma("cache_size", "-16384");
        let write = SqlitePoolOptions::new().max_connections(1).connect_with(options.clone()).await?;
        // The database is the worker's alone: sandboxed runs (as another
        // user) must not read it. SQLite gives the -wal and -shm files the
        // database file's mode.
        for suffix in ["", "-wal", "-shm"] {
            let mut file = path.as_os_str().to_owned();
            file.push(suffix);
            let file = std::path::PathBuf::from(file);
            if file.exists() {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600));
            }
        }
        // 4 MiB each for the four readers: the figures come from the rollups
        // (a few hundred rows to a few thousand), and the operating system
        // keeps the file's pages besides. 64 MiB apiece, filled by one scan,
        // kept the server at 650 MB at a million attempts; 8 MiB, at 128 MB
        // (issue 16's budget is 100 MB).
        // Rows come from sqlx's worker thread through a channel; a deep one
        // lets the worker run ahead instead of waking the reader for every
        // few rows (50 by default: the throughput's 1,251 rows, 3.6 to 2.6 ms).
        let read_options = options.read_only(true).pragma("cache_size", "-4096").row_buffer_size(4096);
        let read = SqlitePoolOptions::new().max_connections(4).connect_with(read_options).await?;
        let pool = write.clone();
        let writer = WriteQueue::start(Box::new(move |batch| Box::pin(Self::apply_batch(pool.clone(), batch))));
        Ok(Self { read, write, writer })
    }
}

impl SqliteStorage {
    /// Bulk imports bind rows one at a time through prepared statements on the
    /// transaction's own connection. sqlx hands every statement (and every
    /// returned row) to its worker thread and copies every argument first; at
    /// a million rows that cost more than SQLite's inserts themselves.
    pub(super) async fn with_raw<T>(
        tx: &mut sqlx::Transaction<'static, Sqlite>,
        f: impl FnOnce(&rusqlite::Connection) -> StorageResult<T>,
    ) -> StorageResult<T> {
        let mut handle = tx.lock_handle().await?;
        let db = handle.as_raw_handle();
        // SAFETY: the handle stays locked (sqlx's worker cannot touch the
        // connection) until `handle` drops, after the non-owning wrapper and
        // its statements are gone; there is no await in between, and
        // `from_handle` never closes the connection.
        let conn = unsafe { rusqlite::Connection::from_handle(db.as_ptr()) }?;
        let out = f(&conn);
        drop(conn);
        drop(handle);
        out
    }
}

/// The text sqlx writes for a time, so stored values compare alike.
fn time_text(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false)
}

fn json_text<T: serde::Serialize>(field: &str, value: &T) -> StorageResult<String> {
    serde_json::to_string(value).map_err(|e| StorageError::Corrupt(format!("{field}: {e}")))
}

pub(super) fn insert_reports_raw(
    conn: &rusqlite::Connection,
    rows: &[(i64, &NewReport, &str)],
) -> StorageResult<Vec<i64>> {
    use failpass_shared::model::ReportStatus;
    use rusqlite::params;
    let mut report = conn.prepare(REPORT_INSERT)?;
    let mut label = conn.prepare(LABEL_INSERT)?;
    let mut oracle = conn.prepare(ORACLE_INSERT)?;
    let now = time_text(super::common::now());
    let mut ids = Vec::with_capacity(rows.len());
    for (project_id, new, hash) in rows {
        let (req, d) = (&new.request, &new.decision);
        let labels = clean_labels(&req.labels);
        report
            .execute(params![
                project_id,
                req.external_id.trim(),
                req.url,
                req.title.trim(),
                req.body,
                json_text("labels", &labels)?,
                json_text("paths", &req.paths)?,
                req.filed_at.map(|t| time_text(secs(t))).unwrap_or_else(|| now.clone()),
                req.reporter,
                d.environment_for(req.environment.as_deref()),
                json_text("features", &d.features)?,
                d.category.as_str(),
                d.vague,
                d.llm_only,
                d.route.as_str(),
                json_text("explanation", &d.explanation)?,
                d.oracle_kind().as_str(),
                d.oracle.as_ref().and_then(|o| o.source).map(|s| s.as_str()),
                d.oracle.as_ref().is_some_and(|o| o.is_deterministic()),
                d.route_check,
                hash,
                ReportStatus::New.as_str(),
                now,
                new.filed_stated(),
            ])
            .map_err(|e| {
                unique_to_conflict(e, || {
                    format!("project `{}` already has a report `{}`", req.project, req.external_id.trim())
                })
            })?;
        let id = conn.last_insert_rowid();
        for l in &labels {
            label.execute(params![id, l])?;
        }
        if let Some(o) = &d.oracle {
            oracle.execute(params![
                id,
                o.kind.as_str(),
                o.source.map(|s| s.as_str()),
                o.command,
                json_text("fail_to_pass", &o.fail_to_pass)?,
                json_text("pass_to_pass", &o.pass_to_pass)?,
                o.signature,
                o.repeats.map(|r| r as i32),
                o.authoring_minutes,
                now,
            ])?;
        }
        ids.push(id);
    }
    Ok(ids)
}

fn unique_to_conflict(e: rusqlite::Error, message: impl FnOnce() -> String) -> StorageError {
    match e {
        rusqlite::Error::SqliteFailure(f, _) if f.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE => {
            StorageError::Conflict(message())
        }
        other => other.into(),
    }
}

pub(super) fn insert_attempts_raw(conn: &rusqlite::Connection, rows: &[PreparedAttempt<'_>]) -> StorageResult<()> {
    use rusqlite::params;
    let time = time_text;
    let sql =
        format!("{}VALUES ({})", ATTEMPT_INSERT, (1..=30).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", "));
    let mut stmt = conn.prepare(&sql)?;
    for p in rows {
        let r = &p.req;
        let inserted = stmt.execute(params![
            p.report_id,
            r.goal.as_str(),
            p.agent,
            r.model,
            r.model_cutoff.map(|d| d.format("%F").to_string()),
            time(p.started_at),
            r.ended_at.map(|t| time(secs(t))),
            r.effective_wall_seconds(),
            r.cost_usd.unwrap_or(0.0),
            r.tokens_in,
            r.tokens_out,
            r.api_calls,
            r.iterations.min(i32::MAX as u32) as i32,
            r.candidate,
            json_text("signals", &r.signals)?,
            r.verdict.as_str(),
            r.verdict_source.as_str(),
            r.failure_cause.map(|c| c.as_str()),
            r.review.map(|v| v.as_str()),
            r.reviewer,
            r.review_comment,
            p.attempt_key,
            p.graded,
            p.counts,
            p.awaiting,
            p.content_hash,
            time(p.created_at),
            r.cost_usd.is_some(),
            r.rank.map(|k| k as i64),
            p.time_stated,
        ]);
        inserted.map_err(|e| unique_to_conflict(e, || super::common::ATTEMPT_KEY_TAKEN.into()))?;
    }
    Ok(())
}
