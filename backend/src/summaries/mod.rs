//! What the figure routes and the charts both serve, computed once: figures,
//! distributions, throughput and oracle summaries in a caller's scope.
//! Storage returns the raw contributions; `failpass_shared::figures` does
//! the math; this module puts the two together for one request.

use failpass_shared::api::figures::{
    DistributionQuery, DistributionResponse, FigureRow, FiguresQuery, FiguresResponse, KEY_SEPARATOR, Throughput,
};
use failpass_shared::api::oracles::OracleSummary;
use failpass_shared::api::reports::{ReportFilter, unknown_parameter};
use std::collections::BTreeMap;

use failpass_shared::figures::{FlowCounts, ValueBins, bin_edges_of, distribution_of, rows_from_totals};

use crate::db::{ProjectScope, Storage};
use crate::error::{ApiError, ApiResult};

/// Bars in a distribution's histogram.
pub const HISTOGRAM_BINS: usize = 20;

/// A project filter names a project the caller may read, or the answer is
/// `NotFound` (as for a missing one), never an empty page that looks like
/// "nothing here".
pub async fn known_project(storage: &dyn Storage, scope: &ProjectScope, project: Option<&str>) -> ApiResult<()> {
    match project.map(str::trim).filter(|p| !p.is_empty()) {
        Some(p) => visible_project(storage, scope, p).await,
        None => Ok(()),
    }
}

/// The figures `query` asks for, in `scope`.
pub async fn figures(storage: &dyn Storage, scope: &ProjectScope, query: FiguresQuery) -> ApiResult<FiguresResponse> {
    known_project(storage, scope, query.filter.project.as_deref()).await?;
    let mut rows = rows_of(storage, scope, &query).await?;
    if !query.then_by.is_empty() {
        for row in &mut rows {
            row.keys = row.key.split(failpass_shared::figures::KEY_PARTS).map(str::to_owned).collect();
            row.key = row.keys.join(KEY_SEPARATOR);
        }
    }
    Ok(FiguresResponse { group_by: query.group_by, then_by: query.then_by, goal: query.goal, rows })
}

/// The figure rows of `query` (its project already checked): from the
/// maintained rollups where they keep what the query needs, else the exact
/// fold of every report's contribution.
pub async fn rows_of(storage: &dyn Storage, scope: &ProjectScope, query: &FiguresQuery) -> ApiResult<Vec<FigureRow>> {
    Ok(match storage.figure_totals(query, scope).await? {
        Some(totals) => rows_from_totals(totals),
        None => rows_from_totals(storage.figure_fold(query, scope).await?),
    })
}

/// The distribution `query` asks for, in `scope`: per group, a histogram
/// over bins shared by every group, the CDF, mean, median and p90, read
/// from value bins (`failpass_shared::figures::VALUES_NOTE` says how close).
pub async fn distributions(
    storage: &dyn Storage,
    scope: &ProjectScope,
    query: DistributionQuery,
) -> ApiResult<DistributionResponse> {
    known_project(storage, scope, query.figures.filter.project.as_deref()).await?;
    let metric = query.metric;
    let groups = match storage.value_totals(&query, scope).await? {
        Some(groups) => groups,
        // Every value binned as the rollups bin it.
        None => {
            let mut groups = BTreeMap::new();
            for (key, values) in storage.metric_values(&query, scope).await? {
                let bins: &mut ValueBins = groups.entry(key).or_default();
                values.into_iter().for_each(|v| bins.add(metric, v));
            }
            groups
        }
    };
    let all: Vec<&ValueBins> = groups.values().collect();
    let edges = bin_edges_of(metric, &all, HISTOGRAM_BINS);
    Ok(DistributionResponse {
        metric,
        unit: metric.unit().to_owned(),
        group_by: query.figures.group_by,
        groups: groups.iter().map(|(key, bins)| distribution_of(key.clone(), metric, bins, &edges)).collect(),
    })
}

/// The throughput of the reports the report filters in `pairs` select.
pub async fn throughput_of<'a>(
    storage: &dyn Storage,
    scope: &ProjectScope,
    pairs: impl Iterator<Item = (&'a str, &'a str)>,
) -> ApiResult<Throughput> {
    let mut filter = ReportFilter::default();
    for (k, v) in pairs {
        if !filter.take(k, v)? {
            return Err(unknown_parameter(k, ReportFilter::PARAMETERS).into());
        }
    }
    filter.check_window()?;
    known_project(storage, scope, filter.project.as_deref()).await?;
    let counts = flow_counts(storage, scope, &filter, &failpass_shared::figures::throughput_read()).await?;
    Ok(failpass_shared::figures::throughput_of(&counts, chrono::Utc::now()))
}

/// The throughput counts `read` names of the reports `filter` selects:
/// from the maintained rollups where they keep what it needs, else every
/// report's flow folded into the same counts (all of them).
pub async fn flow_counts(
    storage: &dyn Storage,
    scope: &ProjectScope,
    filter: &ReportFilter,
    read: &failpass_shared::figures::FlowRead,
) -> ApiResult<FlowCounts> {
    Ok(match storage.flow_totals(filter, scope, read).await? {
        Some(counts) => counts,
        None => FlowCounts::from(storage.report_flows(filter, scope).await?.as_slice()),
    })
}

/// The oracle figures of the project `pairs` names (or of every project in scope).
pub async fn oracle_summary<'a>(
    storage: &dyn Storage,
    scope: &ProjectScope,
    pairs: impl Iterator<Item = (&'a str, &'a str)>,
) -> ApiResult<OracleSummary> {
    let project = project_param(pairs)?;
    if let Some(p) = &project {
        visible_project(storage, scope, p).await?;
    }
    Ok(storage.oracle_summary(project.as_deref(), scope).await?)
}

/// The one query parameter a per-project list takes, `project=owner/name`;
/// empty means every project. Any other parameter is named and refused.
pub fn project_param<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> Result<Option<String>, ApiError> {
    let mut project = None;
    for (k, v) in pairs {
        match k {
            "project" => project = (!v.trim().is_empty()).then(|| v.trim().to_owned()),
            other => {
                return Err(ApiError::BadRequest(format!(
                    "{other}: unknown query parameter `{other}`; known: project"
                )));
            }
        }
    }
    Ok(project)
}

/// Fails with a 404 (as for a missing project) unless `project` is in `scope`.
pub async fn visible_project(storage: &dyn Storage, scope: &ProjectScope, project: &str) -> ApiResult<()> {
    storage
        .get_project(project, scope)
        .await?
        .map(|_| ())
        .ok_or_else(|| ApiError::NotFound(format!("project `{project}` not found")))
}

mod cards;
mod glance;
pub use glance::{STUCK_DAYS, glance};
