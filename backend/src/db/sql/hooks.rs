//! The SQL of outgoing webhooks, written once for both engines (see
//! `mod.rs`): hooks, deliveries, and [`Engine::tell_hooks`], which every
//! write that changes a verdict, a route or a status calls in its transaction.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use failpass_shared::api::hooks::{Hook, HookDelivery, HookEvent, HookFormat};

use super::{Db, Engine, Tx};
use crate::db::common;
use crate::db::dialect::Dialect;
use crate::db::hooks::*;
use crate::db::queue::NewJob;
use crate::db::rows::parse;
use crate::db::{ProjectScope, StorageError, StorageResult};

const HOOK_COLUMNS: &str = "h.id, p.slug, h.url, h.format, h.events, h.created_by, h.created_at, h.removed_at, \
     (SELECT COUNT(*) FROM hook_deliveries d WHERE d.hook_id = h.id AND d.state = 'delivered') AS delivered, \
     (SELECT COUNT(*) FROM hook_deliveries d WHERE d.hook_id = h.id AND d.state = 'pending') AS pending, \
     (SELECT COUNT(*) FROM hook_deliveries d WHERE d.hook_id = h.id AND d.state = 'failed') AS failed";

const DELIVERY_COLUMNS: &str = "id, hook_id, event, report_id, state, tries, status_code, error, response, duration_ms, \
     created_at, last_try_at, redelivery_of, body";

#[derive(sqlx::FromRow)]
struct HookRow {
    id: i64,
    slug: String,
    url: String,
    format: String,
    events: String,
    created_by: String,
    created_at: DateTime<Utc>,
    removed_at: Option<DateTime<Utc>>,
    delivered: i64,
    pending: i64,
    failed: i64,
}

fn parse_events(events: &str) -> StorageResult<Vec<HookEvent>> {
    events.split(',').filter(|e| !e.is_empty()).map(|e| parse(e, "hooks.events")).collect()
}

impl HookRow {
    fn into_hook(self) -> StorageResult<Hook> {
        Ok(Hook {
            id: self.id,
            project: self.slug,
            url: self.url,
            format: parse(&self.format, "hooks.format")?,
            events: parse_events(&self.events)?,
            secret: None,
            created_by: self.created_by,
            created_at: self.created_at,
            removed_at: self.removed_at,
            delivered: self.delivered,
            pending: self.pending,
            failed: self.failed,
        })
    }
}

#[derive(sqlx::FromRow)]
struct DeliveryRow {
    id: i64,
    hook_id: i64,
    event: String,
    report_id: Option<i64>,
    state: String,
    tries: i64,
    status_code: Option<i64>,
    error: Option<String>,
    response: Option<String>,
    duration_ms: Option<i64>,
    created_at: DateTime<Utc>,
    last_try_at: Option<DateTime<Utc>>,
    redelivery_of: Option<i64>,
    body: String,
}

impl DeliveryRow {
    fn into_delivery(self) -> StorageResult<HookDelivery> {
        Ok(HookDelivery {
            id: self.id,
            hook_id: self.hook_id,
            event: parse(&self.event, "hook_deliveries.event")?,
            report_id: self.report_id,
            state: parse(&self.state, "hook_deliveries.state")?,
            tries: self.tries,
            status_code: self.status_code,
            error: self.error,
            response: self.response,
            duration_ms: self.duration_ms,
            created_at: self.created_at,
            last_try_at: self.last_try_at,
            redelivery_of: self.redelivery_of,
            body: self.body,
        })
    }
}

/// A live hook of a changed report's project, with what a delivery names.
#[derive(sqlx::FromRow)]
struct Listener {
    hook_id: i64,
    format: String,
    events: String,
    report_id: i64,
    external_id: String,
    title: String,
    slug: String,
}

impl Engine {
    /// Queues a delivery (and its job) for each live hook of each change's
    /// project that takes the change's event, in the caller's transaction.
    /// One query when no hook listens.
    pub(in crate::db) async fn tell_hooks(tx: &mut Tx, changes: &[Change]) -> StorageResult<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let mut report_ids: Vec<i64> = changes.iter().map(|c| c.report_id).collect();
        report_ids.sort_unstable();
        report_ids.dedup();
        let mut listeners: Vec<Listener> = Vec::new();
        for chunk in report_ids.chunks(500) {
            let mut qb = sqlx::QueryBuilder::<Db>::new(
                "SELECT h.id AS hook_id, h.format, h.events, r.id AS report_id, r.external_id, r.title, p.slug \
                 FROM reports r JOIN projects p ON p.id = r.project_id JOIN hooks h ON h.project_id = r.project_id \
                 WHERE h.removed_at IS NULL AND r.id IN (",
            );
            let mut sep = qb.separated(", ");
            for id in chunk {
                sep.push_bind(*id);
            }
            qb.push(") ORDER BY h.id");
            listeners.extend(qb.build_query_as::<Listener>().fetch_all(&mut **tx).await?);
        }
        if listeners.is_empty() {
            return Ok(());
        }
        let now = common::now();
        for change in changes {
            for l in listeners.iter().filter(|l| l.report_id == change.report_id) {
                let events = parse_events(&l.events)?;
                if !events.contains(&change.event) {
                    continue;
                }
                let format: HookFormat = parse(&l.format, "hooks.format")?;
                let about = crate::hooks::About {
                    project: &l.slug,
                    report_id: l.report_id,
                    external_id: &l.external_id,
                    title: &l.title,
                };
                let body = crate::hooks::body(format, change, &about, now);
                Self::queue_delivery(tx, l.hook_id, change.event, Some(change.report_id), &body, None, now).await?;
            }
        }
        Ok(())
    }

    /// Writes one delivery and the job that posts it.
    async fn queue_delivery(
        tx: &mut Tx,
        hook_id: i64,
        event: HookEvent,
        report_id: Option<i64>,
        body: &str,
        redelivery_of: Option<i64>,
        now: DateTime<Utc>,
    ) -> StorageResult<i64> {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO hook_deliveries (hook_id, event, report_id, body, redelivery_of, state, tries, created_at) \
             VALUES ($1, $2, $3, $4, $5, 'pending', 0, $6) RETURNING id",
        )
        .bind(hook_id)
        .bind(event.as_str())
        .bind(report_id)
        .bind(body)
        .bind(redelivery_of)
        .bind(now)
        .fetch_one(&mut **tx)
        .await?;
        Self::enqueue_tx(tx, &NewJob::deliver(id, report_id), now).await?;
        Ok(id)
    }

    /// Of these reports, the statuses of those whose project has a live hook:
    /// read at the start of a live write's transaction and compared just
    /// before its commit ([`Self::tell_status_changes`]), so a write tells
    /// one change per report, whatever it went through on the way. Imports
    /// do not call it: they tell no one.
    pub(in crate::db) async fn watched_statuses(tx: &mut Tx, report_ids: &[i64]) -> StorageResult<Vec<(i64, String)>> {
        if report_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut qb = sqlx::QueryBuilder::<Db>::new(
            "SELECT r.id, r.status FROM reports r WHERE EXISTS (SELECT 1 FROM hooks h WHERE h.project_id = r.project_id \
             AND h.removed_at IS NULL) AND r.id IN (",
        );
        let mut sep = qb.separated(", ");
        for id in report_ids {
            sep.push_bind(*id);
        }
        qb.push(") ").push(Self::FOR_UPDATE);
        Ok(qb.build_query_as::<(i64, String)>().fetch_all(&mut **tx).await?)
    }

    /// Tells hooks of the statuses in `before` that the write changed.
    pub(in crate::db) async fn tell_status_changes(tx: &mut Tx, before: &[(i64, String)]) -> StorageResult<()> {
        if before.is_empty() {
            return Ok(());
        }
        let mut qb = sqlx::QueryBuilder::<Db>::new("SELECT id, status FROM reports WHERE id IN (");
        let mut sep = qb.separated(", ");
        for (id, _) in before {
            sep.push_bind(*id);
        }
        qb.push(")");
        let after: std::collections::HashMap<i64, String> =
            qb.build_query_as::<(i64, String)>().fetch_all(&mut **tx).await?.into_iter().collect();
        let changes: Vec<Change> = before
            .iter()
            .filter_map(|(id, old)| {
                let new = after.get(id)?;
                (new != old).then(|| Change {
                    event: HookEvent::Status,
                    report_id: *id,
                    attempt_id: None,
                    from: Some(old.clone()),
                    to: new.clone(),
                })
            })
            .collect();
        Self::tell_hooks(tx, &changes).await
    }
}

#[async_trait]
impl HookStore for Engine {
    async fn create_hook(&self, new: &NewHook, now: DateTime<Utc>) -> StorageResult<Hook> {
        let mut tx = self.write.begin().await?;
        let live: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM hooks WHERE project_id = $1 AND removed_at IS NULL")
            .bind(new.project_id)
            .fetch_one(&mut *tx)
            .await?;
        if live >= crate::hooks::MAX_HOOKS_PER_PROJECT {
            return Err(StorageError::invalid(
                "project",
                format!("it has {live} hooks, the most one project may have; remove one first"),
            ));
        }
        let events: Vec<&str> = new.events.iter().map(|e| e.as_str()).collect();
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO hooks (project_id, url, format, events, secret, created_by, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        )
        .bind(new.project_id)
        .bind(&new.url)
        .bind(new.format.as_str())
        .bind(events.join(","))
        .bind(&new.secret)
        .bind(&new.created_by)
        .bind(common::secs(now))
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        let mut hook = self.get_hook(id).await?.ok_or_else(|| StorageError::NotFound(format!("hook {id}")))?;
        hook.secret = Some(new.secret.clone());
        Ok(hook)
    }

    async fn list_hooks(&self, scope: &ProjectScope) -> StorageResult<Vec<Hook>> {
        let rows: Vec<HookRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {HOOK_COLUMNS} FROM hooks h JOIN projects p ON p.id = h.project_id WHERE {} \
             ORDER BY (CASE WHEN h.removed_at IS NULL THEN 0 ELSE 1 END), h.id DESC LIMIT 1000",
            scope.sql("p")
        )))
        .fetch_all(&self.read)
        .await?;
        rows.into_iter().map(HookRow::into_hook).collect()
    }

    async fn get_hook(&self, id: i64) -> StorageResult<Option<Hook>> {
        let row: Option<HookRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {HOOK_COLUMNS} FROM hooks h JOIN projects p ON p.id = h.project_id WHERE h.id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.write)
        .await?;
        row.map(HookRow::into_hook).transpose()
    }

    async fn remove_hook(&self, id: i64, now: DateTime<Utc>) -> StorageResult<bool> {
        let mut tx = self.write.begin().await?;
        let done = sqlx::query("UPDATE hooks SET removed_at = $1 WHERE id = $2 AND removed_at IS NULL")
            .bind(common::secs(now))
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "UPDATE hook_deliveries SET state = 'failed', error = 'the hook was removed' WHERE hook_id = $1 AND state = 'pending'",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    async fn hook_deliveries(&self, hook_id: i64, limit: i64) -> StorageResult<Vec<HookDelivery>> {
        let rows: Vec<DeliveryRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {DELIVERY_COLUMNS} FROM hook_deliveries WHERE hook_id = $1 ORDER BY id DESC LIMIT $2"
        )))
        .bind(hook_id)
        .bind(limit)
        .fetch_all(&self.read)
        .await?;
        rows.into_iter().map(DeliveryRow::into_delivery).collect()
    }

    async fn get_delivery(&self, id: i64) -> StorageResult<Option<HookDelivery>> {
        let row: Option<DeliveryRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {DELIVERY_COLUMNS} FROM hook_deliveries WHERE id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.write)
        .await?;
        row.map(DeliveryRow::into_delivery).transpose()
    }

    async fn redeliver(&self, id: i64, now: DateTime<Utc>) -> StorageResult<HookDelivery> {
        let mut tx = self.write.begin().await?;
        let row: Option<(i64, String, Option<i64>, String, Option<DateTime<Utc>>)> =
            sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT d.hook_id, d.event, d.report_id, d.body, h.removed_at FROM hook_deliveries d \
                 JOIN hooks h ON h.id = d.hook_id WHERE d.id = $1 {}",
                Self::FOR_UPDATE
            )))
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some((hook_id, event, report_id, body, removed)) = row else {
            return Err(StorageError::NotFound(format!("delivery {id}")));
        };
        if removed.is_some() {
            return Err(StorageError::invalid("delivery", format!("hook {hook_id} was removed: it is sent nothing")));
        }
        // Still being sent: a second copy now would arrive twice.
        let live: Option<i64> =
            sqlx::query_scalar("SELECT id FROM jobs WHERE dedup_key = $1 AND status IN ('queued', 'running')")
                .bind(format!("deliver:{id}"))
                .fetch_optional(&mut *tx)
                .await?;
        if let Some(job) = live {
            return Err(StorageError::Conflict(format!(
                "delivery {id} is still being sent (job {job}); send it again once it has ended"
            )));
        }
        let again: Option<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT id FROM hook_deliveries WHERE redelivery_of = $1 AND state = 'pending' LIMIT 1 {}",
            Self::FOR_UPDATE
        )))
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(again) = again {
            return Err(StorageError::Conflict(format!(
                "delivery {id} is being sent again already (delivery {again}); wait for it to end"
            )));
        }
        // Pending without a job: its job ended without a word (its worker died on the last try).
        sqlx::query(
            "UPDATE hook_deliveries SET state = 'failed', error = COALESCE(error, 'its job ended without an answer') \
             WHERE id = $1 AND state = 'pending'",
        )
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let event: HookEvent = parse(&event, "hook_deliveries.event")?;
        let new = Self::queue_delivery(&mut tx, hook_id, event, report_id, &body, Some(id), common::secs(now)).await?;
        tx.commit().await?;
        self.get_delivery(new).await?.ok_or_else(|| StorageError::NotFound(format!("delivery {new}")))
    }

    async fn send_test(&self, hook_id: i64, body: &str, now: DateTime<Utc>) -> StorageResult<HookDelivery> {
        let mut tx = self.write.begin().await?;
        let removed: Option<Option<DateTime<Utc>>> = sqlx::query_scalar("SELECT removed_at FROM hooks WHERE id = $1")
            .bind(hook_id)
            .fetch_optional(&mut *tx)
            .await?;
        match removed {
            None => return Err(StorageError::NotFound(format!("hook {hook_id}"))),
            Some(Some(_)) => {
                return Err(StorageError::invalid("hook", format!("hook {hook_id} was removed: it is sent nothing")));
            }
            Some(None) => {}
        }
        let id = Self::queue_delivery(&mut tx, hook_id, HookEvent::Test, None, body, None, common::secs(now)).await?;
        tx.commit().await?;
        self.get_delivery(id).await?.ok_or_else(|| StorageError::NotFound(format!("delivery {id}")))
    }

    async fn outgoing(&self, delivery_id: i64) -> StorageResult<Option<Outgoing>> {
        #[allow(clippy::type_complexity, reason = "one row, read once")]
        let row: Option<(i64, String, String, String, String, String, String, Option<DateTime<Utc>>)> = sqlx::query_as(
            "SELECT d.hook_id, h.url, h.format, h.secret, d.event, d.body, d.state, h.removed_at \
                 FROM hook_deliveries d JOIN hooks h ON h.id = d.hook_id WHERE d.id = $1",
        )
        .bind(delivery_id)
        .fetch_optional(&self.write)
        .await?;
        row.map(|(hook_id, url, format, secret, event, body, state, removed)| {
            Ok(Outgoing {
                delivery_id,
                hook_id,
                url,
                format: parse(&format, "hooks.format")?,
                secret,
                event: parse(&event, "hook_deliveries.event")?,
                body,
                state: parse(&state, "hook_deliveries.state")?,
                hook_removed: removed.is_some(),
            })
        })
        .transpose()
    }

    async fn record_try(&self, delivery_id: i64, outcome: &TryOutcome, now: DateTime<Utc>) -> StorageResult<()> {
        let mut tx = self.write.begin().await?;
        sqlx::query(
            "UPDATE hook_deliveries SET state = $1, tries = tries + 1, status_code = $2, error = $3, response = $4, \
             duration_ms = $5, last_try_at = $6 WHERE id = $7 AND state = 'pending'",
        )
        .bind(outcome.state.as_str())
        .bind(outcome.status_code)
        .bind(&outcome.error)
        .bind(&outcome.response)
        .bind(outcome.duration_ms)
        .bind(common::secs(now))
        .bind(delivery_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        // The hook keeps its newest KEPT_DELIVERIES ended deliveries. Apart
        // from the try's record, and best effort: a failure here must not
        // undo "delivered" (the body would be posted again).
        let trimmed = sqlx::query(
            "DELETE FROM hook_deliveries WHERE hook_id = (SELECT hook_id FROM hook_deliveries WHERE id = $1) \
             AND state <> 'pending' AND id < (SELECT MIN(k.id) FROM (SELECT d.id FROM hook_deliveries d \
             WHERE d.hook_id = (SELECT hook_id FROM hook_deliveries WHERE id = $1) AND d.state <> 'pending' \
             ORDER BY d.id DESC LIMIT $2) k)",
        )
        .bind(delivery_id)
        .bind(crate::hooks::KEPT_DELIVERIES)
        .execute(&self.write)
        .await;
        if let Err(e) = trimmed {
            tracing::warn!(delivery = delivery_id, error = %e, "could not trim the hook's old deliveries");
        }
        Ok(())
    }

    async fn tell(&self, changes: &[Change]) -> StorageResult<()> {
        let mut tx = self.write.begin().await?;
        Self::tell_hooks(&mut tx, changes).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn give_up_delivery(&self, delivery_id: i64, error: &str) -> StorageResult<()> {
        let error: String = error.chars().take(1000).collect();
        sqlx::query(
            "UPDATE hook_deliveries SET state = 'failed', error = COALESCE(error, $1) WHERE id = $2 AND state = 'pending'",
        )
        .bind(error)
        .bind(delivery_id)
        .execute(&self.write)
        .await?;
        Ok(())
    }
}
