//! What the figures are computed from: per-report contributions, metric
//! values, report flows, facets and oracle counts. Storage returns counts and
//! rows; `failpass_shared::figures` computes every figure from them.

use async_trait::async_trait;

use super::{ProjectScope, StorageResult};
use failpass_shared::api::figures::{DistributionQuery, Facets, FiguresQuery};
use failpass_shared::api::oracles::OracleSummary;
use failpass_shared::api::reports::ReportFilter;
use failpass_shared::figures::{ReportContribution, ReportFlow};

/// The rows and counts figures are computed from. Storage selects and
/// counts; `failpass_shared::figures` does the arithmetic, so the API, the
/// charts and the dashboard agree.
#[async_trait]
pub trait FigureStore: Send + Sync {
    /// Oracle coverage, sources, authoring time and failure causes (optionally one project's).
    async fn oracle_summary(&self, project: Option<&str>, scope: &ProjectScope) -> StorageResult<OracleSummary>;

    /// One contribution per (group key, report) for the figures: the report's
    /// attempts of the query's goal (and agent/model) within that group summed
    /// up. Report-level groupings include reports with no attempt; per-attempt
    /// groupings only reports with an attempt in the group.
    async fn figure_contributions(
        &self,
        query: &FiguresQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Vec<ReportContribution>>;

    /// `(group key, value)` of the metric for every attempt in the query's
    /// scope that recorded it.
    async fn metric_values(&self, query: &DistributionQuery, scope: &ProjectScope)
    -> StorageResult<Vec<(String, f64)>>;

    /// Distinct agents and models with attempts visible in `scope`.
    async fn facets(&self, scope: &ProjectScope) -> StorageResult<Facets>;

    /// Every report the filter selects, with the times its reproduction
    /// attempts reached a verdict (for throughput and time to reproduction).
    async fn report_flows(&self, filter: &ReportFilter, scope: &ProjectScope) -> StorageResult<Vec<ReportFlow>>;
}
