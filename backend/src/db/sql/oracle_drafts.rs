//! The SQL of oracle drafts, written once for both engines (see `mod.rs`).

use async_trait::async_trait;
use failpass_shared::routing::RoutingDecision;

use super::Engine;
use crate::db::common;
use crate::db::oracle_drafts::*;
use crate::db::queue::NewJob;
use crate::db::reports::Origin;
use crate::db::{ProjectScope, StorageError, StorageResult};
use failpass_shared::api::jobs::Job;

const DRAFT_COLUMNS: &str = "id, report_id, author, route_before, category, kind, command, script, pass_to_pass, \
     signature, repeats, queue_agents, status, started_at, resumed_at, active_seconds, tries, last_result, validated_at";

#[async_trait]
impl OracleDraftStore for Engine {
    async fn open_oracle_draft(&self, report_id: i64, author: &str) -> StorageResult<Option<OracleDraft>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {DRAFT_COLUMNS} FROM oracle_drafts WHERE report_id = $1 AND author = $2 \
             AND status IN ('open', 'validating') ORDER BY id DESC LIMIT 1"
        )))
        .bind(report_id)
        .bind(author)
        .fetch_optional(&self.write)
        .await?)
    }

    async fn start_oracle_draft(
        &self,
        report_id: i64,
        author: &str,
        since: chrono::DateTime<chrono::Utc>,
    ) -> StorageResult<OracleDraft> {
        if let Some(d) = self.open_oracle_draft(report_id, author).await? {
            return Ok(d);
        }
        let now = common::secs(since);
        // Two starts at once (two tabs) meet at the unique index of open drafts: the second reads the first's.
        let inserted: Result<Option<i64>, _> = sqlx::query_scalar(
            "INSERT INTO oracle_drafts (report_id, author, route_before, category, status, started_at, resumed_at) \
             SELECT id, $2, route, category, 'open', $3, $3 FROM reports WHERE id = $1 RETURNING id",
        )
        .bind(report_id)
        .bind(author)
        .bind(now)
        .fetch_optional(&self.write)
        .await;
        match inserted.map_err(common::conflict_on_unique("an open oracle draft".to_owned())) {
            Ok(None) => Err(StorageError::NotFound(format!("report {report_id}"))),
            Ok(Some(_)) | Err(StorageError::Conflict(_)) => self
                .open_oracle_draft(report_id, author)
                .await?
                .ok_or_else(|| StorageError::NotFound(format!("oracle draft of report {report_id}"))),
            Err(e) => Err(e),
        }
    }

    async fn oracle_draft(&self, id: i64) -> StorageResult<Option<OracleDraft>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {DRAFT_COLUMNS} FROM oracle_drafts WHERE id = $1")))
            .bind(id)
            .fetch_optional(&self.write)
            .await?)
    }

    async fn latest_oracle_draft(&self, report_id: i64) -> StorageResult<Option<OracleDraft>> {
        Ok(sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {DRAFT_COLUMNS} FROM oracle_drafts WHERE report_id = $1 ORDER BY id DESC LIMIT 1"
        )))
        .bind(report_id)
        .fetch_optional(&self.write)
        .await?)
    }

    async fn abandon_oracle_draft(&self, id: i64) -> StorageResult<()> {
        let paused = self.pause_oracle_draft(id, true).await?;
        sqlx::query("UPDATE oracle_drafts SET status = 'abandoned' WHERE id = $1 AND status IN ('open', 'validating')")
            .bind(paused.id)
            .execute(&self.write)
            .await?;
        Ok(())
    }

    async fn save_oracle_draft(&self, id: i64, f: &DraftFields) -> StorageResult<OracleDraft> {
        let mut tx = self.write.begin().await?;
        Self::write_draft_fields(&mut tx, id, f).await?;
        tx.commit().await?;
        self.oracle_draft(id).await?.ok_or_else(|| StorageError::NotFound(format!("oracle draft {id}")))
    }

    async fn start_oracle_validation(
        &self,
        id: i64,
        f: &DraftFields,
        job: &NewJob,
    ) -> StorageResult<(OracleDraft, Job)> {
        let mut tx = self.write.begin().await?;
        Self::write_draft_fields(&mut tx, id, f).await?;
        sqlx::query(
            "UPDATE oracle_drafts SET status = 'validating', tries = tries + 1, resumed_at = COALESCE(resumed_at, $1) \
             WHERE id = $2",
        )
        .bind(common::now())
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let (job, _) = Self::enqueue_tx(&mut tx, job, chrono::Utc::now()).await?;
        tx.commit().await?;
        let draft = self.oracle_draft(id).await?.ok_or_else(|| StorageError::NotFound(format!("oracle draft {id}")))?;
        Ok((draft, job))
    }

    async fn pause_oracle_draft(&self, id: i64, pause: bool) -> StorageResult<OracleDraft> {
        let mut tx = self.write.begin().await?;
        let draft: Option<OracleDraft> =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {DRAFT_COLUMNS} FROM oracle_drafts WHERE id = $1")))
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
        let draft = draft.ok_or_else(|| StorageError::NotFound(format!("oracle draft {id}")))?;
        let now = common::now();
        match (pause, draft.resumed_at) {
            (true, Some(_)) => {
                sqlx::query("UPDATE oracle_drafts SET active_seconds = $1, resumed_at = NULL WHERE id = $2")
                    .bind(draft.seconds_at(now))
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            (false, None) if draft.status != "validated" => {
                sqlx::query("UPDATE oracle_drafts SET resumed_at = $1 WHERE id = $2")
                    .bind(now)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            _ => {}
        }
        tx.commit().await?;
        self.oracle_draft(id).await?.ok_or_else(|| StorageError::NotFound(format!("oracle draft {id}")))
    }

    async fn finish_oracle_validation(
        &self,
        id: i64,
        try_no: Option<i32>,
        result: &DraftResult,
        validated: Option<&RoutingDecision>,
    ) -> StorageResult<Option<f64>> {
        let mut text = serde_json::to_string(result).map_err(|e| StorageError::Corrupt(e.to_string()))?;
        let mut tx = self.write.begin().await?;
        let draft: Option<OracleDraft> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {DRAFT_COLUMNS} FROM oracle_drafts WHERE id = $1 AND status = 'validating' \
             AND ($2 IS NULL OR tries = $2)"
        )))
        .bind(id)
        .bind(try_no)
        .fetch_optional(&mut *tx)
        .await?;
        // A later try, or a draft closed meanwhile, keeps what it has.
        let Some(draft) = draft else { return Ok(None) };
        let Some(decision) = validated else {
            sqlx::query("UPDATE oracle_drafts SET status = 'open', last_result = $1 WHERE id = $2")
                .bind(&text)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            return Ok(None);
        };
        // The report may have gained an oracle since (an import, another
        // maintainer's draft): it keeps that one. The guard takes the report's row.
        let free: Option<i64> = sqlx::query_scalar(
            "UPDATE reports SET has_det_oracle = has_det_oracle WHERE id = $1 AND has_det_oracle = $2 RETURNING id",
        )
        .bind(draft.report_id)
        .bind(false)
        .fetch_optional(&mut *tx)
        .await?;
        if free.is_none() {
            let superseded = DraftResult {
                reason: "validated, but the report gained an oracle meanwhile, which it keeps".into(),
                ..result.clone()
            };
            text = serde_json::to_string(&superseded).map_err(|e| StorageError::Corrupt(e.to_string()))?;
            sqlx::query(
                "UPDATE oracle_drafts SET status = 'superseded', last_result = $1, resumed_at = NULL WHERE id = $2",
            )
            .bind(&text)
            .bind(id)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            return Ok(None);
        }
        // The clock up to now, by the same clock that started it.
        let now = common::now();
        let seconds = draft.seconds_at(now);
        let minutes = seconds / 60.0;
        let mut decision = decision.clone();
        if let Some(o) = decision.oracle.as_mut() {
            o.authoring_minutes = Some((minutes * 100.0).round() / 100.0);
        }
        sqlx::query(
            "UPDATE oracle_drafts SET status = 'validated', last_result = $1, active_seconds = $2, \
             resumed_at = NULL, validated_at = $3 WHERE id = $4",
        )
        .bind(&text)
        .bind(seconds)
        .bind(now)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let origin = Origin { actor: draft.author.clone(), via: "ui" };
        let watched = Self::watched_statuses(&mut tx, &[draft.report_id]).await?;
        Self::route_report(&mut tx, draft.report_id, &decision, &origin, true).await?;
        Self::tell_status_changes(&mut tx, &watched).await?;
        let tries = draft.tries;
        let what = format!(
            "wrote a {} oracle, validated (fails on buggy, passes on fixed) after {tries} {} and {minutes:.0} min; route {}",
            decision.oracle.as_ref().map_or("", |o| o.kind.as_str()),
            if tries == 1 { "try" } else { "tries" },
            decision.route
        );
        Self::add_activity(&mut tx, draft.report_id, &origin, "oracle", &what).await?;
        if draft.queue_agents && decision.route == failpass_shared::model::Route::AgentFirst {
            let refine = NewJob::refine(draft.report_id, failpass_shared::api::jobs::PRIORITY_MANUAL, true);
            Self::enqueue_tx(&mut tx, &refine, chrono::Utc::now()).await?;
        }
        tx.commit().await?;
        Ok(Some(minutes))
    }

    async fn authoring_rows(
        &self,
        project: Option<&str>,
        scope: &ProjectScope,
    ) -> StorageResult<Vec<failpass_shared::api::oracles::AuthoringGroup>> {
        // Per report, its first draft's category and route, and whether (and how fast) one was validated.
        type Row = (i64, String, String, String, f64, i32);
        let rows: Vec<Row> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT d.report_id, d.category, d.route_before, d.status, d.active_seconds, d.tries FROM oracle_drafts d \
             JOIN reports r ON r.id = d.report_id JOIN projects p ON p.id = r.project_id \
             WHERE {} AND ($1 IS NULL OR p.slug = $1) AND d.status <> 'abandoned' ORDER BY d.report_id, d.id",
            scope.sql("p")
        )))
        .bind(project)
        .fetch_all(&self.read)
        .await?;
        let mut by_report: std::collections::BTreeMap<i64, (String, String, Option<(f64, i32)>)> = Default::default();
        for (report, category, route, status, seconds, tries) in rows {
            let e = by_report.entry(report).or_insert((category, route, None));
            if status == "validated" && e.2.is_none() {
                e.2 = Some((seconds / 60.0, tries));
            }
        }
        let mut groups: std::collections::BTreeMap<(String, String), Vec<Option<(f64, i32)>>> = Default::default();
        for (_, (category, route, done)) in by_report {
            groups.entry((category, route)).or_default().push(done);
        }
        Ok(groups
            .into_iter()
            .map(|((category, route), reports)| {
                let mut minutes: Vec<f64> = reports.iter().flatten().map(|(m, _)| *m).collect();
                minutes.sort_by(f64::total_cmp);
                let tries: Vec<f64> = reports.iter().flatten().map(|(_, t)| f64::from(*t)).collect();
                let median = match minutes.len() {
                    0 => None,
                    n if n % 2 == 1 => Some(minutes[n / 2]),
                    n => Some((minutes[n / 2 - 1] + minutes[n / 2]) / 2.0),
                };
                failpass_shared::api::oracles::AuthoringGroup {
                    category,
                    route,
                    started: reports.len() as i64,
                    validated: minutes.len() as i64,
                    within_hour: minutes.iter().filter(|m| **m <= 60.0).count() as i64,
                    median_minutes: median,
                    mean_tries: (!tries.is_empty()).then(|| tries.iter().sum::<f64>() / tries.len() as f64),
                }
            })
            .collect())
    }
}

impl Engine {
    /// Writes the form's fields onto an open draft. `Conflict` while a validation runs.
    async fn write_draft_fields(tx: &mut super::Tx, id: i64, f: &DraftFields) -> StorageResult<()> {
        let done = sqlx::query(
            "UPDATE oracle_drafts SET kind = $1, command = $2, script = $3, pass_to_pass = $4, signature = $5, \
             repeats = $6, queue_agents = $7 WHERE id = $8 AND status = 'open'",
        )
        .bind(f.kind.as_str())
        .bind(&f.command)
        .bind(&f.script)
        .bind(&f.pass_to_pass)
        .bind(&f.signature)
        .bind(f.repeats)
        .bind(f.queue_agents)
        .bind(id)
        .execute(&mut **tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StorageError::Conflict(format!(
                "oracle draft {id} is being validated (or is closed): wait for the result, then change it"
            )));
        }
        Ok(())
    }
}
