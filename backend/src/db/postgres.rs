//! PostgreSQL: the scale path, shared by workers on many machines. Sessions
//! run in UTC so dates and weeks mean the same as on SQLite.

use std::str::FromStr;
use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use chrono::{DateTime, Utc};

use super::common::{self, ATTEMPT_INSERT, PreparedAttempt};
use super::dialect::Param;
use super::write_queue::WriteQueue;
use super::{StorageError, StorageResult};

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

/// An import batch's new attempts as the text of `COPY attempts (…) FROM
/// STDIN` (PostgreSQL's text format: a row a line, columns split by tabs,
/// `\N` for `NULL`), in the columns of `ATTEMPT_INSERT`. A multi-row `INSERT`
/// binds thirty parameters a row and PostgreSQL plans a statement of
/// 30,000 for every thousand rows: 74 µs a row, most of an import's time.
/// `None` when a value has no text the server reads back as the bound
/// value would be: a float that is not finite, a date outside years 1 to
/// 9999, a string holding NUL (which PostgreSQL refuses either way); the
/// caller then inserts the rows with bound parameters.
pub(super) fn attempts_copy_text(rows: &[PreparedAttempt<'_>]) -> StorageResult<Option<String>> {
    use chrono::{Datelike, SecondsFormat};
    use std::fmt::Write;
    let mut out = String::with_capacity(rows.len() * 256);
    let time =
        |t: DateTime<Utc>| (1..=9999).contains(&t.year()).then(|| t.to_rfc3339_opts(SecondsFormat::Micros, true));
    for p in rows {
        let r = &p.req;
        let floats = [r.effective_wall_seconds(), Some(r.cost_usd.unwrap_or(0.0))];
        if floats.iter().flatten().any(|x| !x.is_finite()) {
            return Ok(None);
        }
        let cutoff = match r.model_cutoff {
            Some(d) if !(1..=9999).contains(&d.year()) => return Ok(None),
            d => d.map(|d| d.format("%F").to_string()),
        };
        let (Some(started), Some(created)) = (time(p.started_at), time(p.created_at)) else { return Ok(None) };
        let ended = match r.ended_at.map(|t| time(common::secs(t))) {
            Some(None) => return Ok(None),
            e => e.flatten(),
        };
        let signals = serde_json::to_string(&r.signals).map_err(|e| StorageError::Corrupt(format!("signals: {e}")))?;
        let num = |n: Option<i64>| n.map(|n| n.to_string());
        let float = |x: Option<f64>| x.map(|x| x.to_string());
        let flag = |b: bool| Some(if b { "t" } else { "f" }.to_owned());
        let text = |s: Option<&str>| s.map(str::to_owned);
        let row: [Option<String>; 30] = [
            num(Some(p.report_id)),
            text(Some(r.goal.as_str())),
            text(Some(&p.agent)),
            r.model.clone(),
            cutoff,
            Some(started),
            ended,
            float(r.effective_wall_seconds()),
            float(Some(r.cost_usd.unwrap_or(0.0))),
            num(Some(r.tokens_in)),
            num(Some(r.tokens_out)),
            num(r.api_calls),
            num(Some(i64::from(r.iterations.min(i32::MAX as u32)))),
            r.candidate.clone(),
            Some(signals),
            text(Some(r.verdict.as_str())),
            text(Some(r.verdict_source.as_str())),
            text(r.failure_cause.map(|c| c.as_str())),
            text(r.review.map(|v| v.as_str())),
            r.reviewer.clone(),
            r.review_comment.clone(),
            p.attempt_key.clone(),
            flag(p.graded),
            flag(p.counts),
            flag(p.awaiting),
            Some(p.content_hash.clone()),
            Some(created),
            flag(r.cost_usd.is_some()),
            num(r.rank.map(i64::from)),
            flag(p.time_stated),
        ];
        for (i, value) in row.iter().enumerate() {
            if i > 0 {
                out.push('\t');
            }
            match value {
                None => out.push_str("\\N"),
                Some(v) => {
                    if !push_copy_field(&mut out, v) {
                        return Ok(None);
                    }
                }
            }
        }
        let _ = writeln!(out);
    }
    Ok(Some(out))
}

/// Appends `v` as a field of `COPY`'s text format: the backslash and the
/// characters the format splits on escaped. `false` (nothing written) for a
/// string holding NUL, which PostgreSQL's text refuses.
fn push_copy_field(out: &mut String, v: &str) -> bool {
    if v.contains('\0') {
        return false;
    }
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    true
}

/// Rows of `width` values (`Dialect::write_rows`' order) as the text of a
/// `COPY … FROM STDIN`, or `None` when a value has no text read back as
/// its bound value would be (a float that is not finite, a string with NUL).
/// A float is written as Rust's shortest text that reads back to it, which
/// PostgreSQL's `float8` input reads back exactly.
pub(super) fn params_copy_text(values: &[Param<'_>], width: usize) -> Option<String> {
    use std::fmt::Write;
    let mut out = String::with_capacity(values.len() * 12);
    for row in values.chunks(width) {
        for (i, value) in row.iter().enumerate() {
            if i > 0 {
                out.push('\t');
            }
            match value {
                Param::Int(n) | Param::MaybeInt(Some(n)) => {
                    let _ = write!(out, "{n}");
                }
                Param::MaybeInt(None) => out.push_str("\\N"),
                Param::Real(x) if x.is_finite() => {
                    let _ = write!(out, "{x}");
                }
                Param::Real(_) => return None,
                Param::Text(s) => {
                    if !push_copy_field(&mut out, s) {
                        return None;
                    }
                }
            }
        }
        out.push('\n');
    }
    Some(out)
}

/// The `COPY` of [`attempts_copy_text`]: the columns of `ATTEMPT_INSERT`.
pub(super) fn attempts_copy_statement() -> String {
    let columns = ATTEMPT_INSERT.trim().trim_start_matches("INSERT INTO attempts ").trim();
    format!("COPY attempts {columns} FROM STDIN")
}

#[cfg(test)]
mod tests {
    use super::*;
    use failpass_shared::api::attempts::CreateAttemptRequest;

    fn prepared(req: &CreateAttemptRequest) -> PreparedAttempt<'_> {
        PreparedAttempt::new(req, 7, false, Some("k\t1".into()))
    }

    #[test]
    fn copy_text_escapes_what_the_format_splits_on_and_writes_null_as_backslash_n() {
        let req: CreateAttemptRequest = serde_json::from_value(serde_json::json!({
            "report_id": 7, "agent": "a", "candidate": "line 1\nline\t2 \\ end\r", "verdict": "lead",
            "verdict_source": "llm", "cost_usd": 0.1
        }))
        .unwrap();
        let text = attempts_copy_text(&[prepared(&req)]).unwrap().unwrap();
        assert_eq!(text.matches('\n').count(), 1, "one line: {text}");
        let columns: Vec<&str> = text.trim_end_matches('\n').split('\t').collect();
        assert_eq!(columns.len(), 30);
        assert_eq!(columns[0], "7");
        assert_eq!(columns[3], "\\N", "no model");
        assert_eq!(columns[8], "0.1");
        assert_eq!(columns[13], "line 1\\nline\\t2 \\\\ end\\r");
        assert_eq!(columns[21], "k\\t1");
        assert_eq!(columns[27], "t", "the cost was stated");
        assert!(attempts_copy_statement().starts_with("COPY attempts (report_id, goal, agent,"));
        assert!(attempts_copy_statement().ends_with("time_stated) FROM STDIN"));
    }

    #[test]
    fn rows_copy_as_lines_of_fields_and_fall_back_when_a_value_has_no_faithful_text() {
        let row = [Param::Int(-3), Param::MaybeInt(None), Param::Real(0.1 + 0.2), Param::Text("a\tb\\c\nd")];
        let text = params_copy_text(&[row, row].concat(), 4).unwrap();
        assert_eq!(text, "-3\t\\N\t0.30000000000000004\ta\\tb\\\\c\\nd\n".repeat(2));
        let read_back: f64 = text.split('\t').nth(2).unwrap().parse().unwrap();
        assert_eq!(read_back, 0.1 + 0.2, "the shortest text reads back to the same float");
        assert!(params_copy_text(&[Param::Real(f64::NAN)], 1).is_none());
        assert!(params_copy_text(&[Param::Real(f64::INFINITY)], 1).is_none());
        assert!(params_copy_text(&[Param::Text("nul \u{0}")], 1).is_none());
    }

    #[test]
    fn a_value_with_no_faithful_text_leaves_the_batch_to_bound_parameters() {
        let req: CreateAttemptRequest = serde_json::from_value(serde_json::json!({
            "report_id": 7, "agent": "a", "candidate": "nul \u{0} here", "verdict": "lead", "verdict_source": "llm"
        }))
        .unwrap();
        assert!(attempts_copy_text(&[prepared(&req)]).unwrap().is_none());
    }
}
