//! What the figures are computed from: per-report contributions, metric
//! values, report flows, facets and oracle counts. Storage returns counts and
//! rows; `failpass_shared::figures` computes every figure from them.

use async_trait::async_trait;

use super::{ProjectScope, StorageResult};
use failpass_shared::api::figures::{DistributionQuery, Facets, FiguresQuery};
use failpass_shared::api::oracles::OracleSummary;
use failpass_shared::api::reports::ReportFilter;
use failpass_shared::figures::{FlowCounts, FlowRead, GroupTotals, ReportContribution, ReportFlow, ValueBins};
use failpass_shared::model::GroupBy;

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

    /// The metric's values per group key, of every attempt in the query's
    /// scope that recorded it.
    async fn metric_values(
        &self,
        query: &DistributionQuery,
        scope: &ProjectScope,
    ) -> StorageResult<std::collections::BTreeMap<String, Vec<f64>>>;

    /// The totals per group of [`Self::figure_contributions`], folded as
    /// the rows stream in (memory for the groups, not for every report).
    async fn figure_fold(
        &self,
        query: &FiguresQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Vec<(String, GroupTotals)>>;

    /// The totals per group `query` asks for, read from the figures'
    /// rollups (maintained in every write's transaction); `None` when the
    /// query needs what they do not keep, and [`Self::figure_contributions`]
    /// answers it exactly.
    async fn figure_totals(
        &self,
        query: &FiguresQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Option<Vec<(String, GroupTotals)>>>;

    /// Compares the rollups with a rebuild from the raw rows, and keeps the
    /// rebuild when they differ and `repair` is set.
    async fn check_figures(&self, repair: bool) -> StorageResult<FigureCheck>;

    /// What the reproduction attempts started in `filter`'s spend window
    /// cost, on the reports the rest of `filter` selects (the figures'
    /// `cost_total_usd` with `dated=spent`, read from the window's attempts).
    async fn spend_usd(&self, filter: &ReportFilter, scope: &ProjectScope) -> StorageResult<f64>;

    /// Distinct agents and models with attempts visible in `scope`.
    async fn facets(&self, scope: &ProjectScope) -> StorageResult<Facets>;

    /// Per (agent, report) the filter selects, the best rank among the
    /// agent's counting reproduction attempts there that carry a rank.
    async fn first_ranks(&self, filter: &ReportFilter, scope: &ProjectScope) -> StorageResult<Vec<(String, u32)>>;

    /// Every report the filter selects, with the times its reproduction
    /// attempts reached a verdict (for throughput and time to reproduction).
    async fn report_flows(&self, filter: &ReportFilter, scope: &ProjectScope) -> StorageResult<Vec<ReportFlow>>;

    /// The throughput counts `read` names (each kind whole, or on some days)
    /// of the reports the filter selects, from the maintained rollups; `None` when the filter needs what they do not
    /// keep (a status, label, verdict, text or date window).
    async fn flow_totals(
        &self,
        filter: &ReportFilter,
        scope: &ProjectScope,
        read: &FlowRead,
    ) -> StorageResult<Option<FlowCounts>>;

    /// The distribution's bins per group, from the maintained rollups;
    /// `None` when the query needs what they do not keep.
    async fn value_totals(
        &self,
        query: &DistributionQuery,
        scope: &ProjectScope,
    ) -> StorageResult<Option<std::collections::BTreeMap<String, ValueBins>>>;
}

/// The result of comparing the maintained figures with a recomputation.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureCheck {
    /// Groups and cells stored before the check.
    pub groups: usize,
    pub cells: i64,
    /// What differed, one line per group (at most 20 shown).
    pub differences: Vec<String>,
    /// How many groups differed in all.
    pub differing: usize,
    /// Whether the rollups were rebuilt.
    pub repaired: bool,
}

/// `level`'s bits in the figures' rollups: the attempt dimensions a group keeps.
pub(crate) const AGENT: u8 = 1;
pub(crate) const MODEL: u8 = 2;
pub(crate) const CUTOFF: u8 = 4;

/// Whether `f` narrows the reports by what no rollup keeps: a status,
/// label, best verdict or text.
pub(crate) fn narrows_reports(f: &ReportFilter) -> bool {
    !f.status.is_empty() || f.label.is_some() || f.verdict.is_some() || f.q.is_some()
}

/// Whether `f` has a window of days (`since`, `until` or a `period`).
pub(crate) fn has_window(f: &ReportFilter) -> bool {
    f.since.is_some() || f.until.is_some() || f.period.is_some()
}

/// The level of groups that answers `query`, or `None` when the rollups do
/// not keep what it needs.
pub fn rollup_level(query: &FiguresQuery) -> Option<u8> {
    let f = &query.filter;
    let narrowed = narrows_reports(f) || f.route_check.is_some() || has_window(f);
    // The exact path's model filter never matches an attempt without a
    // model, which the rollups keep as `unknown`.
    if narrowed || query.model.as_deref() == Some("unknown") {
        return None;
    }
    let mut level = 0;
    for d in query.dimensions() {
        level |= match d {
            GroupBy::Agent => AGENT,
            GroupBy::Model => MODEL,
            GroupBy::Cutoff => CUTOFF,
            GroupBy::Week | GroupBy::Month => return None,
            _ => 0,
        };
    }
    if query.agent.is_some() {
        level |= AGENT;
    }
    if query.model.is_some() {
        level |= MODEL;
    }
    Some(level)
}

/// Filing days `[from, to)`, as days since 1970-01-01 (UTC); an end left
/// open is `None`.
pub type FiledDays = (Option<i64>, Option<i64>);

/// The level of figure groups that answers `query` and, when it has a
/// window of filing dates (`since`, `until` or a `period`, `dated=filed`),
/// the filing days of that window (as of `today`); `None` when the rollups
/// do not keep what it needs. Figure groups keep the filing day (each
/// report has one), so their windows sum exactly; distributions and flows
/// keep no window ([`rollup_level`]).
pub fn figure_level(query: &FiguresQuery, today: chrono::NaiveDate) -> Option<(u8, Option<FiledDays>)> {
    use failpass_shared::api::reports::Dated;
    if !has_window(&query.filter) {
        return rollup_level(query).map(|level| (level, None));
    }
    let (since, until) = query.filter.window(today);
    let dated = if since.is_none() && until.is_none() { Dated::Filed } else { query.filter.dated };
    if dated != Dated::Filed {
        return None;
    }
    let mut unwindowed = query.clone();
    (unwindowed.filter.since, unwindowed.filter.until, unwindowed.filter.period) = (None, None, None);
    let level = rollup_level(&unwindowed)?;
    let day = |t: chrono::DateTime<chrono::Utc>| t.timestamp().div_euclid(86_400);
    let days = (since.map(day), until.map(day));
    Some((level, (days != (None, None)).then_some(days)))
}
