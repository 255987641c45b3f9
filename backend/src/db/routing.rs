//! Routing health: each project's learned boilerplate, maintainers'
//! confirmations of routes, and what the health panel counts.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use failpass_shared::api::reports::{RouteCorrection, RuleOutcome};
use failpass_shared::model::Route;
use failpass_shared::routing::sections::LearnedLine;
use serde::{Deserialize, Serialize};

use super::StorageResult;

/// A maintainer's word that a report's route is right.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteConfirmation {
    pub route: Route,
    pub by: String,
    pub at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A project's boilerplate as `reroute` last learned it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LearnedBoilerplate {
    pub lines: Vec<LearnedLine>,
    /// How many reports it was learned from.
    pub reports: u64,
    pub learned_at: Option<DateTime<Utc>>,
}

/// One routed report, as the health panel reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutedReport {
    pub filed_at: DateTime<Utc>,
    pub route: Route,
    pub route_check: bool,
    pub correction: Option<RouteCorrection>,
    pub confirmation: Option<RouteConfirmation>,
    /// The harness rule's outcome (its evidence names the words that fired).
    pub harness: Option<RuleOutcome>,
}

#[async_trait]
pub trait RoutingStore: Send + Sync {
    /// The project's learned boilerplate (empty when never learned).
    async fn project_boilerplate(&self, project: &str) -> StorageResult<LearnedBoilerplate>;

    /// Replaces it. `Invalid` (field `project`) when the project does not exist.
    async fn set_project_boilerplate(&self, project: &str, learned: &LearnedBoilerplate) -> StorageResult<()>;

    /// The bodies of the project's newest `limit` reports, to learn from.
    async fn report_bodies(&self, project: &str, limit: i64) -> StorageResult<Vec<String>>;

    /// Records that a maintainer confirmed the report's route: clears its
    /// route check and adds a line to its timeline, in one transaction.
    async fn confirm_route(&self, report_id: i64, c: &RouteConfirmation, via: &'static str) -> StorageResult<()>;

    /// Per project in `scope` with reports filed since `since`: how many,
    /// how many are routed `human_first`, and how many were corrected.
    async fn routing_counts(
        &self,
        scope: &super::ProjectScope,
        since: DateTime<Utc>,
    ) -> StorageResult<Vec<(String, u64, u64, u64)>>;

    /// The project's reports filed since `since`, oldest first.
    async fn routed_reports(&self, project: &str, since: DateTime<Utc>) -> StorageResult<Vec<RoutedReport>>;
}
