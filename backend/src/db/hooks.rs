//! Outgoing webhooks: a project's hooks, their deliveries, and what the
//! delivery job reads and records.
//!
//! A change (a verdict, a route, a status) is written as one delivery per
//! hook that takes it, with the job that posts it, in the transaction of
//! the change itself: a change that commits is told, one that rolls back is
//! not. Bulk imports tell no one (they would flood a chat with history).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use failpass_shared::api::hooks::{DeliveryState, Hook, HookDelivery, HookEvent, HookFormat};

use super::{ProjectScope, StorageResult};

/// A hook to create; its secret is made by the caller.
#[derive(Debug, Clone)]
pub struct NewHook {
    pub project_id: i64,
    pub url: String,
    pub format: HookFormat,
    pub events: Vec<HookEvent>,
    pub secret: String,
    pub created_by: String,
}

/// What the delivery job needs to post one delivery.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub delivery_id: i64,
    pub hook_id: i64,
    pub url: String,
    pub format: HookFormat,
    pub secret: String,
    pub event: HookEvent,
    pub body: String,
    pub state: DeliveryState,
    /// The hook was removed after the change: the delivery is dropped.
    pub hook_removed: bool,
}

/// How one try went.
#[derive(Debug, Clone, PartialEq)]
pub struct TryOutcome {
    pub state: DeliveryState,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    pub response: Option<String>,
    pub duration_ms: i64,
}

/// One change to tell a report's project's hooks of.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub event: HookEvent,
    pub report_id: i64,
    pub attempt_id: Option<i64>,
    /// The value before (`None`: a report routed for the first time).
    pub from: Option<String>,
    pub to: String,
}

#[async_trait]
pub trait HookStore: Send + Sync {
    async fn create_hook(&self, new: &NewHook, now: DateTime<Utc>) -> StorageResult<Hook>;

    /// Hooks of the projects in `scope`, removed ones last, newest first.
    async fn list_hooks(&self, scope: &ProjectScope) -> StorageResult<Vec<Hook>>;

    /// A hook, removed or not.
    async fn get_hook(&self, id: i64) -> StorageResult<Option<Hook>>;

    /// Removes a hook: it is told nothing more; its pending deliveries are
    /// dropped (failed, "hook removed"); its log stays. `false` when already removed.
    async fn remove_hook(&self, id: i64, now: DateTime<Utc>) -> StorageResult<bool>;

    /// A hook's deliveries, newest first, at most `limit`.
    async fn hook_deliveries(&self, hook_id: i64, limit: i64) -> StorageResult<Vec<HookDelivery>>;

    /// One delivery.
    async fn get_delivery(&self, id: i64) -> StorageResult<Option<HookDelivery>>;

    /// Sends a delivery's body again: a new delivery and its job, now.
    /// `Invalid` when the hook was removed.
    async fn redeliver(&self, id: i64, now: DateTime<Utc>) -> StorageResult<HookDelivery>;

    /// Queues a test delivery of `body` to hook `hook_id`, with its job.
    /// `Invalid` when the hook was removed.
    async fn send_test(&self, hook_id: i64, body: &str, now: DateTime<Utc>) -> StorageResult<HookDelivery>;

    /// What the delivery job posts.
    async fn outgoing(&self, delivery_id: i64) -> StorageResult<Option<Outgoing>>;

    /// Records a try (counted) and where the delivery stands after it.
    async fn record_try(&self, delivery_id: i64, outcome: &TryOutcome, now: DateTime<Utc>) -> StorageResult<()>;

    /// Tells hooks of changes written before, in a transaction of its own
    /// (the GitHub intake's, whose write is the bulk import's).
    async fn tell(&self, changes: &[Change]) -> StorageResult<()>;

    /// Ends a delivery whose job failed for good, unless it already ended.
    async fn give_up_delivery(&self, delivery_id: i64, error: &str) -> StorageResult<()>;
}
