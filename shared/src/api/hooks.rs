//! `/api/v1/hooks`: a project's outgoing webhooks and their deliveries.
//!
//! A hook is told of its project's verdict, route and status changes. The
//! `signed` format posts the change as JSON, signed with the hook's secret
//! (see `docs/agents.md`, "Webhooks"); `slack` and `discord` post one line of
//! text in the shape each chat's incoming webhooks take.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

crate::model::string_enum!(
    /// What a hook's deliveries look like.
    HookFormat, "hook format" {
        /// The change as JSON, signed (`X-Failpass-Signature`).
        Signed => "signed",
        /// `{"text": …}`, for a Slack incoming webhook.
        Slack => "slack",
        /// `{"content": …}`, for a Discord webhook.
        Discord => "discord",
    }
);

crate::model::string_enum!(
    /// What a hook is told of.
    HookEvent, "hook event" {
        /// An attempt's verdict changed (graded by the runner, or reviewed).
        Verdict => "verdict",
        /// A report was routed (live intake) or its route changed.
        Route => "route",
        /// A report's status changed.
        Status => "status",
        /// A test delivery, sent from the webhooks page to see the hook
        /// works; no hook subscribes to it.
        Test => "test",
    }
);

crate::model::string_enum!(
    /// Where a delivery stands.
    DeliveryState, "delivery state" {
        /// Waiting for its first try, or for a retry after a failed one.
        Pending => "pending",
        /// The receiver answered 2xx.
        Delivered => "delivered",
        /// Out of tries, or refused for good (a 4xx other than 408 and 429).
        Failed => "failed",
    }
);

/// `POST /api/v1/hooks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateHookRequest {
    /// `owner/name`.
    #[cfg_attr(feature = "openapi", schema(example = "pytorch/pytorch"))]
    pub project: String,
    /// Where deliveries are posted: `https://` (or `http://`), at most 2,000 characters.
    #[cfg_attr(feature = "openapi", schema(example = "https://hooks.example.org/failpass"))]
    pub url: String,
    /// `signed` when left out.
    #[serde(default)]
    pub format: Option<HookFormat>,
    /// Every event when left out.
    #[serde(default)]
    pub events: Option<Vec<HookEvent>>,
}

/// A hook. Its secret is shown once, in the answer that creates it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Hook {
    pub id: i64,
    pub project: String,
    pub url: String,
    pub format: HookFormat,
    pub events: Vec<HookEvent>,
    /// Only when the hook is created: failpass keeps it to sign with and never shows it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    /// Set when removed: it is told nothing more, and its log stays.
    pub removed_at: Option<DateTime<Utc>>,
    /// Its deliveries so far, by state.
    pub delivered: i64,
    pub pending: i64,
    pub failed: i64,
}

/// One delivery of one change to one hook, and how its last try went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HookDelivery {
    pub id: i64,
    pub hook_id: i64,
    pub event: HookEvent,
    pub report_id: Option<i64>,
    pub state: DeliveryState,
    /// Tries so far (a failed try is retried after 5 s, 10 s, 20 s …).
    pub tries: i64,
    /// The receiver's HTTP status on the last try; none when it could not be reached.
    pub status_code: Option<i64>,
    /// Why the last try failed.
    pub error: Option<String>,
    /// The start of the receiver's answer to the last try (at most 1,000 characters).
    pub response: Option<String>,
    pub duration_ms: Option<i64>,
    pub created_at: DateTime<Utc>,
    pub last_try_at: Option<DateTime<Utc>>,
    /// The delivery this one sends again.
    pub redelivery_of: Option<i64>,
    /// What was (or will be) posted.
    pub body: String,
}
