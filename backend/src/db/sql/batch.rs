//! The writer's side of group commit (`db/write_queue.rs`), written once for
//! both engines: a batch of live writes in one transaction, each inside a
//! savepoint of its own, then one recount of the touched reports, one move
//! of the figures' rollups and one commit.

use std::collections::HashMap;

use crate::db::attempts::{rank_verdict_sql, report_aggregate_sql, verdict_rank_sql};
use crate::db::common::{ATTEMPT_COLUMNS, PreparedAttempt};
use crate::db::hooks::Change;
use crate::db::queue::NewJob;
use crate::db::rows::AttemptRow;
use crate::db::write_queue::{Answer, Queued, Write};
use crate::db::{NewRun, Origin, ProjectScope, StorageError, StorageResult, common};
use failpass_shared::api::attempts::{Attempt, CreateAttemptRequest, ReviewRequest};
use failpass_shared::api::hooks::HookEvent;
use failpass_shared::api::import::Outcome;
use failpass_shared::api::jobs::PRIORITY_INITIAL;
use failpass_shared::hash;
use failpass_shared::model::{Goal, Verdict, VerdictSource};

use super::{Db, Engine, Tx};

/// What one write did inside its savepoint: its answer, short of the attempt
/// rows that are read once the batch's recount is done, and the report whose
/// counters and figures it moved.
enum Done {
    Attempt(i64, Outcome),
    Run(i64, Outcome),
    Reviewed(i64),
    Commented,
}

/// What a write asks of its report's counters and figures.
enum Touch {
    /// Nothing (a run, a comment, a retry answered with what is stored).
    None,
    /// Recounted from all its attempts (a review changed one).
    Full(i64),
    /// Moved by a new attempt alone (report, attempt).
    Appended(i64, i64),
}

/// Why a batch's transaction failed as a whole, and whether at its commit.
struct Failed {
    error: StorageError,
    at_commit: bool,
}

impl Engine {
    /// Applies a batch and answers each write. When the batch's shared part
    /// (the recount) fails, each write is tried again alone, so one write's
    /// trouble is its own error and never its batch-mates'. A failed commit
    /// is told to every write of the batch, not tried again.
    pub(in crate::db) async fn apply_batch(pool: sqlx::Pool<Db>, batch: Vec<Queued>) {
        metrics::histogram!("failpass_live_write_batch_size").record(batch.len() as f64);
        let writes: Vec<&Write> = batch.iter().map(|q| &q.write).collect();
        match Self::commit_batch(&pool, &writes).await {
            Ok(answers) => {
                for (q, answer) in batch.into_iter().zip(answers) {
                    let _ = q.reply.send(answer);
                }
            }
            // A lone write's failure is its own; and a failed commit may
            // still have committed (a connection lost after COMMIT was
            // sent), so its writes are not made again: each is told.
            Err(Failed { error, at_commit }) if batch.len() == 1 || at_commit => {
                let message = error.to_string();
                let mut error = Some(error);
                for q in batch {
                    let e =
                        error.take().unwrap_or_else(|| StorageError::Database(sqlx::Error::Protocol(message.clone())));
                    let _ = q.reply.send(Err(e));
                }
            }
            Err(Failed { error: e, .. }) => {
                tracing::warn!(writes = batch.len(), error = %e, "a batch failed as a whole; its writes are tried one by one");
                for q in batch {
                    let answer = match Self::commit_batch(&pool, &[&q.write]).await {
                        Ok(mut answers) => {
                            answers.pop().unwrap_or_else(|| Err(StorageError::Corrupt("no answer".into())))
                        }
                        Err(failed) => Err(failed.error),
                    };
                    let _ = q.reply.send(answer);
                }
            }
        }
    }

    /// One transaction for `writes`: each one's answer (its own refusal
    /// included), or the error that failed the transaction as a whole.
    async fn commit_batch(pool: &sqlx::Pool<Db>, writes: &[&Write]) -> Result<Vec<StorageResult<Answer>>, Failed> {
        let (tx, done) = Self::stage_batch(pool, writes).await.map_err(|error| Failed { error, at_commit: false })?;
        tx.commit().await.map_err(|e| Failed { error: e.into(), at_commit: true })?;
        Ok(done)
    }

    /// `writes` applied in a transaction left open for the commit, with each one's answer.
    async fn stage_batch(pool: &sqlx::Pool<Db>, writes: &[&Write]) -> StorageResult<(Tx, Vec<StorageResult<Answer>>)> {
        let mut tx = pool.begin().await?;
        let (mut full, mut appended) = (Vec::new(), Vec::new());
        let mut record = |touch: &Touch| match touch {
            Touch::None => {}
            Touch::Full(report) => full.push(*report),
            Touch::Appended(report, attempt) => appended.push((*report, *attempt)),
        };
        // New attempts that queue no job (what agents send most) are written
        // as a set: their reports read at once, their keys checked at once,
        // one insert. The rest, each in a savepoint of its own.
        let together: Vec<(usize, &CreateAttemptRequest)> = writes
            .iter()
            .enumerate()
            .filter_map(|(i, w)| match w {
                Write::Attempt(req) if !req.verify => Some((i, req.as_ref())),
                _ => None,
            })
            .collect();
        let mut done: Vec<Option<StorageResult<Done>>> = (0..writes.len()).map(|_| None).collect();
        let reqs: Vec<&CreateAttemptRequest> = together.iter().map(|(_, r)| *r).collect();
        for ((i, _), answer) in together.iter().zip(Self::write_attempts_together(&mut tx, &reqs).await?) {
            done[*i] = Some(answer.map(|(d, touch)| {
                record(&touch);
                d
            }));
        }
        let alone: Vec<usize> = (0..writes.len()).filter(|i| done[*i].is_none()).collect();
        for i in alone {
            let write = writes[i];
            sqlx::query("SAVEPOINT live_write").execute(&mut *tx).await?;
            match Self::apply_write(&mut tx, write).await {
                Ok((d, touch)) => {
                    sqlx::query("RELEASE SAVEPOINT live_write").execute(&mut *tx).await?;
                    record(&touch);
                    done[i] = Some(Ok(d));
                }
                Err(e) => {
                    sqlx::query("ROLLBACK TO SAVEPOINT live_write").execute(&mut *tx).await?;
                    sqlx::query("RELEASE SAVEPOINT live_write").execute(&mut *tx).await?;
                    done[i] = Some(Err(e));
                }
            }
        }
        let done: Vec<StorageResult<Done>> = done.into_iter().flatten().collect();
        full.sort_unstable();
        full.dedup();
        // A report recounted in full needs no appending besides.
        appended.retain(|(report, _)| full.binary_search(report).is_err());
        let mut touched: Vec<i64> = full.iter().copied().chain(appended.iter().map(|(r, _)| *r)).collect();
        touched.sort_unstable();
        touched.dedup();
        // One recount and one rollup move for every report the batch touched;
        // hooks hear of each report's status change once.
        // Every report row is written before the figures' lock is taken (as
        // every other writer does), or a PostgreSQL writer holding the lock
        // and a verification holding a row would wait on each other.
        let watched = Self::watched_statuses(&mut tx, &touched).await?;
        let appended_to = Self::append_report_rows(&mut tx, &appended).await?;
        Self::refresh_reports(&mut tx, &full).await?;
        if let Some((reports, attempts)) = appended_to {
            Self::append_figures(&mut tx, &reports, &attempts).await?;
        }
        Self::tell_status_changes(&mut tx, &watched).await?;
        let wanted: Vec<i64> = done
            .iter()
            .filter_map(|d| match d {
                Ok(Done::Attempt(id, _) | Done::Reviewed(id)) => Some(*id),
                _ => None,
            })
            .collect();
        let rows = Self::attempts_by_id(&mut tx, &wanted).await?;
        let answers = done
            .into_iter()
            .map(|d| {
                // Two writes of a batch may answer with one attempt (a retry beside its first try).
                let take =
                    |id: i64| rows.get(&id).cloned().ok_or_else(|| StorageError::NotFound(format!("attempt {id}")));
                Ok(match d? {
                    Done::Attempt(id, outcome) => Answer::Attempt(take(id)?, outcome),
                    Done::Reviewed(id) => Answer::Reviewed(take(id)?),
                    Done::Run(id, outcome) => Answer::Run(id, outcome),
                    Done::Commented => Answer::Commented,
                })
            })
            .collect();
        Ok((tx, answers))
    }

    /// One write's own statements, inside its savepoint, and what it asks of its report.
    async fn apply_write(tx: &mut Tx, write: &Write) -> StorageResult<(Done, Touch)> {
        match write {
            Write::Attempt(req) => Self::write_attempt(tx, req).await,
            Write::Run(new) => Ok((Self::write_run(tx, new).await?, Touch::None)),
            Write::Review { id, req, origin, scope } => Self::write_review(tx, *id, req, origin, scope).await,
            Write::Comment { report_id, text, origin } => {
                let found: Option<i64> = sqlx::query_scalar("SELECT id FROM reports WHERE id = $1")
                    .bind(report_id)
                    .fetch_optional(&mut **tx)
                    .await?;
                if found.is_none() {
                    return Err(StorageError::NotFound(format!("report {report_id}")));
                }
                Self::add_activity(tx, *report_id, origin, "comment", text.trim()).await?;
                Ok((Done::Commented, Touch::None))
            }
        }
    }

    /// New attempts (none of them queueing a job) written as a set, each
    /// answered as [`Self::write_attempt`] would: the stored attempt again
    /// for a retry (also of an attempt earlier in the set), a conflict for a
    /// taken key with other content, its own error for a report it cannot
    /// name or grade.
    async fn write_attempts_together(
        tx: &mut Tx,
        reqs: &[&CreateAttemptRequest],
    ) -> StorageResult<Vec<StorageResult<(Done, Touch)>>> {
        use std::collections::HashMap;
        if reqs.is_empty() {
            return Ok(Vec::new());
        }
        let resolved = Self::resolve_reports(tx, reqs).await?;
        let rows: Vec<StorageResult<PreparedAttempt>> = reqs
            .iter()
            .zip(resolved)
            .map(|(req, r)| {
                r.map(|(report, vague, _)| PreparedAttempt::new(req, report, vague, req.attempt_key.clone()))
            })
            .collect();
        // The keys already taken, in one read.
        type Key = (String, i64, String);
        let mut taken: HashMap<Key, (i64, Option<String>)> = HashMap::new();
        let keyed: Vec<&PreparedAttempt> =
            rows.iter().filter_map(|r| r.as_ref().ok()).filter(|p| p.attempt_key.is_some()).collect();
        for chunk in keyed.chunks(300) {
            // All three key columns narrowed, so the key's own index answers
            // (by report alone it read every attempt of a busy report).
            let mut qb = sqlx::QueryBuilder::<Db>::new(
                "SELECT agent, report_id, attempt_key, id, content_hash FROM attempts WHERE agent IN (",
            );
            let mut sep = qb.separated(", ");
            for p in chunk {
                sep.push_bind(p.agent.clone());
            }
            qb.push(") AND report_id IN (");
            let mut sep = qb.separated(", ");
            for p in chunk {
                sep.push_bind(p.report_id);
            }
            qb.push(") AND attempt_key IN (");
            let mut sep = qb.separated(", ");
            for p in chunk {
                sep.push_bind(p.attempt_key.clone());
            }
            qb.push(")");
            type Row = (String, i64, String, i64, Option<String>);
            for (agent, report, key, id, hash) in qb.build_query_as::<Row>().fetch_all(&mut **tx).await? {
                taken.insert((agent, report, key), (id, hash));
            }
        }
        // What each write becomes: inserted (its index among the inserts), a
        // retry of a stored attempt or of an insert, or its error.
        enum Fate {
            Insert(usize),
            Stored(i64),
            SameAs(usize),
            Refused(StorageError),
        }
        let mut fresh: HashMap<Key, (usize, String)> = HashMap::new();
        let mut inserts: Vec<PreparedAttempt> = Vec::new();
        let mut fates = Vec::with_capacity(rows.len());
        for row in rows {
            let p = match row {
                Ok(p) => p,
                Err(e) => {
                    fates.push(Fate::Refused(e));
                    continue;
                }
            };
            if let Some(key) = p.attempt_key.clone() {
                let k: Key = (p.agent.clone(), p.report_id, key.clone());
                let clash = || {
                    StorageError::Conflict(format!(
                        "agent `{}` already has a different attempt `{key}` on report {}",
                        p.agent, p.report_id
                    ))
                };
                if let Some((id, hash)) = taken.get(&k) {
                    fates.push(if hash.as_deref() == Some(p.content_hash.as_str()) {
                        Fate::Stored(*id)
                    } else {
                        Fate::Refused(clash())
                    });
                    continue;
                }
                if let Some((at, hash)) = fresh.get(&k) {
                    fates.push(if *hash == p.content_hash { Fate::SameAs(*at) } else { Fate::Refused(clash()) });
                    continue;
                }
                fresh.insert(k, (inserts.len(), p.content_hash.clone()));
            }
            fates.push(Fate::Insert(inserts.len()));
            inserts.push(p);
        }
        let mut ids = Vec::with_capacity(inserts.len());
        for chunk in inserts.chunks(crate::db::common::ATTEMPT_INSERT_CHUNK) {
            // One insert numbers its rows in the order of its values, but
            // RETURNING may hand them back in any order: sorted, they line up.
            let mut chunk_ids = Self::insert_attempts(tx, chunk, true).await?;
            chunk_ids.sort_unstable();
            ids.extend(chunk_ids);
        }
        Ok(fates
            .into_iter()
            .map(|fate| match fate {
                Fate::Insert(n) => {
                    let (p, id) = (&inserts[n], ids[n]);
                    Ok((Done::Attempt(id, Outcome::Created), Self::touch(p.req, p.report_id, id)))
                }
                Fate::Stored(id) => Ok((Done::Attempt(id, Outcome::Unchanged), Touch::None)),
                Fate::SameAs(n) => Ok((Done::Attempt(ids[n], Outcome::Unchanged), Touch::None)),
                Fate::Refused(e) => Err(e),
            })
            .collect())
    }

    /// What a new attempt asks of its report: a deterministic grade can
    /// make earlier LLM leads checked ones, so its report's oracle figures
    /// are counted again in full; anything else moves them by itself.
    fn touch(req: &CreateAttemptRequest, report_id: i64, id: i64) -> Touch {
        let grades = req.goal == Goal::Reproduce
            && req.verdict_source == VerdictSource::Deterministic
            && matches!(req.verdict, Verdict::Reproduced | Verdict::NotReproduced);
        if grades { Touch::Full(report_id) } else { Touch::Appended(report_id, id) }
    }

    async fn write_attempt(tx: &mut Tx, req: &CreateAttemptRequest) -> StorageResult<(Done, Touch)> {
        let (report_id, vague, _) = Self::resolve_report(tx, req).await?;
        let row = PreparedAttempt::new(req, report_id, vague, req.attempt_key.clone());
        if let Some(key) = &req.attempt_key {
            let taken: Option<(i64, Option<String>)> = sqlx::query_as(
                "SELECT id, content_hash FROM attempts WHERE agent = $1 AND report_id = $2 AND attempt_key = $3",
            )
            .bind(&row.agent)
            .bind(report_id)
            .bind(key)
            .fetch_optional(&mut **tx)
            .await?;
            match taken {
                // The same attempt again (a retry): answered with what is stored.
                Some((id, Some(hash))) if hash == row.content_hash => {
                    return Ok((Done::Attempt(id, Outcome::Unchanged), Touch::None));
                }
                Some(_) => {
                    return Err(StorageError::Conflict(format!(
                        "agent `{}` already has a different attempt `{key}` on report {report_id}",
                        row.agent
                    )));
                }
                None => {}
            }
        }
        if req.verify {
            Self::check_verifiable(tx, req, report_id).await?;
        }
        let id = Self::insert_attempts(tx, std::slice::from_ref(&row), true).await?[0];
        if req.verify {
            // Queued in the same transaction: no attempt without its job, no job without its attempt.
            Self::enqueue_tx(tx, &NewJob::verify(id, PRIORITY_INITIAL, false), common::now()).await?;
        }
        Ok((Done::Attempt(id, Outcome::Created), Self::touch(req, report_id, id)))
    }

    async fn write_run(tx: &mut Tx, new: &NewRun) -> StorageResult<Done> {
        let exists: Option<i64> = sqlx::query_scalar("SELECT id FROM attempts WHERE id = $1")
            .bind(new.attempt_id)
            .fetch_optional(&mut **tx)
            .await?;
        if exists.is_none() {
            return Err(StorageError::NotFound(format!("attempt {}", new.attempt_id)));
        }
        let hash = hash::content_hash(&(
            new.trigger.as_str(),
            new.environment.as_str(),
            new.exit_status,
            new.timed_out,
            new.duration_ms,
            &new.output,
            new.output_truncated,
            new.output_bytes,
            &new.failing_tests,
            &new.passing_tests,
            &new.runner_id,
            new.started_at,
        ));
        Ok(match Self::insert_run_tx(tx, new, common::now(), Some(&hash)).await? {
            Some(id) => Done::Run(id, Outcome::Created),
            None => {
                let id: i64 = sqlx::query_scalar("SELECT id FROM runs WHERE attempt_id = $1 AND content_hash = $2")
                    .bind(new.attempt_id)
                    .bind(&hash)
                    .fetch_one(&mut **tx)
                    .await?;
                Done::Run(id, Outcome::Unchanged)
            }
        })
    }

    async fn write_review(
        tx: &mut Tx,
        id: i64,
        req: &ReviewRequest,
        origin: &Origin,
        scope: &ProjectScope,
    ) -> StorageResult<(Done, Touch)> {
        use crate::db::rows::parse;
        use failpass_shared::model::{Review, attempt_awaits_review, attempt_counts};
        let row: Option<(i64, String, String, String, bool)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT a.report_id, a.goal, a.verdict, a.verdict_source, r.vague FROM attempts a JOIN reports r ON r.id = a.report_id \
             JOIN projects p ON p.id = r.project_id WHERE a.id = $1 AND {}",
            scope.sql("p")
        )))
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?;
        let Some((report_id, goal, verdict, source, vague)) = row else {
            return Err(StorageError::NotFound(format!("attempt {id}")));
        };
        let goal: Goal = parse(&goal, "attempts.goal")?;
        let mut verdict: Verdict = parse(&verdict, "attempts.verdict")?;
        let source: VerdictSource = parse(&source, "attempts.verdict_source")?;
        let before = verdict;
        // The verdict rules: an accepted lead is confirmed; a rejected confirmation is a lead again.
        match (verdict, req.review) {
            (Verdict::Lead, Review::Accepted) => verdict = Verdict::Confirmed,
            (Verdict::Confirmed, Review::Rejected) => verdict = Verdict::Lead,
            (Verdict::Hypothesis | Verdict::Error, _) => {
                return Err(StorageError::invalid(
                    "review",
                    format!(
                        "attempt {id} is `{verdict}`: nothing was judged to accept or reject; grade it first (verify or rerun)"
                    ),
                ));
            }
            _ => {}
        }
        sqlx::query(
            "UPDATE attempts SET verdict = $1, review = $2, reviewer = $3, review_comment = $4, graded = $5, counts = $6, awaiting = $7 WHERE id = $8",
        )
        .bind(verdict.as_str())
        .bind(req.review.as_str())
        .bind(origin.actor.as_str())
        .bind(&req.comment)
        .bind(verdict.is_graded())
        .bind(attempt_counts(goal, verdict, source, Some(req.review), vague))
        .bind(attempt_awaits_review(goal, verdict, source, Some(req.review), vague))
        .bind(id)
        .execute(&mut **tx)
        .await?;
        if verdict != before {
            let change = Change {
                event: HookEvent::Verdict,
                report_id,
                attempt_id: Some(id),
                from: Some(before.as_str().to_owned()),
                to: verdict.as_str().to_owned(),
            };
            Self::tell_hooks(tx, &[change]).await?;
        }
        // The review in the report's timeline, with what it changed and why.
        let moved = if verdict != before { format!(" ({before} → {verdict})") } else { String::new() };
        let why = req.comment.as_deref().map(|c| format!(": {}", c.trim())).unwrap_or_default();
        let text = format!("{} attempt {id}{moved}{why}", req.review.as_str());
        Self::add_activity(tx, report_id, origin, "review", &text).await?;
        Ok((Done::Reviewed(id), Touch::Full(report_id)))
    }

    /// [`Self::refresh_reports`]' row part for reports whose only change is
    /// the new attempts `appended` (report, attempt): their counters, spend,
    /// best verdict and times move by those attempts' aggregate, read from
    /// them alone; then their status.
    /// Returns the reports and the attempts (ids, comma-separated) for
    /// [`Self::append_figures`], which the caller runs once every report row
    /// of the batch is written.
    async fn append_report_rows(tx: &mut Tx, appended: &[(i64, i64)]) -> StorageResult<Option<(Vec<i64>, String)>> {
        if appended.is_empty() {
            return Ok(None);
        }
        let mut reports: Vec<i64> = appended.iter().map(|(r, _)| *r).collect();
        reports.sort_unstable();
        reports.dedup();
        let list = |ids: &[i64]| ids.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
        let attempts = list(&appended.iter().map(|(_, a)| *a).collect::<Vec<_>>());
        let stored_rank = verdict_rank_sql("reports.best_verdict");
        let best = rank_verdict_sql("agg.best_rank");
        // The earlier (`<`) or later (`>`) of a stored time and the new attempts'.
        let pick = |column: &str, op: &str| {
            format!(
                "{column} = CASE WHEN agg.{column} IS NOT NULL AND (reports.{column} IS NULL OR agg.{column} {op} reports.{column}) \
                 THEN agg.{column} ELSE reports.{column} END"
            )
        };
        for chunk in reports.chunks(500) {
            let sql = format!(
                "UPDATE reports SET attempts = reports.attempts + agg.attempts, \
                 attempts_graded = reports.attempts_graded + agg.graded, \
                 attempts_counting = reports.attempts_counting + agg.counting, \
                 attempts_awaiting = reports.attempts_awaiting + agg.awaiting, \
                 best_verdict = CASE WHEN agg.best_rank IS NOT NULL AND ({stored_rank} IS NULL OR agg.best_rank > {stored_rank}) \
                 THEN {best} ELSE reports.best_verdict END, \
                 cost_usd = reports.cost_usd + agg.cost, {}, {}, {}, last_activity_at = $1 \
                 FROM ({}{}) AND a.id IN ({attempts}) GROUP BY a.report_id) agg WHERE reports.id = agg.report_id",
                pick("first_counting_at", "<"),
                pick("first_attempt_at", "<"),
                pick("last_graded_at", ">"),
                // Read by attempt id, not by report (see `on_attempts_of`).
                report_aggregate_sql("+a.report_id"),
                list(chunk),
            );
            sqlx::query(sqlx::AssertSqlSafe(sql)).bind(common::now()).execute(&mut **tx).await?;
            Self::set_status(tx, chunk).await?;
        }
        Ok(Some((reports, attempts)))
    }

    /// The attempts `ids` as they stand in the transaction, by id.
    async fn attempts_by_id(tx: &mut Tx, ids: &[i64]) -> StorageResult<HashMap<i64, Attempt>> {
        let mut out = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let mut qb = sqlx::QueryBuilder::<Db>::new(format!(
                "SELECT {ATTEMPT_COLUMNS} FROM attempts a JOIN reports r ON r.id = a.report_id \
                 JOIN projects p ON p.id = r.project_id WHERE a.id IN ("
            ));
            let mut sep = qb.separated(", ");
            for id in chunk {
                sep.push_bind(*id);
            }
            qb.push(")");
            for row in qb.build_query_as::<AttemptRow>().fetch_all(&mut **tx).await? {
                let attempt = row.into_attempt()?;
                out.insert(attempt.id, attempt);
            }
        }
        Ok(out)
    }
}
