//! What the figure routes and the charts both serve, computed once: figures,
//! distributions, throughput and oracle summaries in a caller's scope.
//! Storage returns the raw contributions; `failpass_shared::figures` does
//! the math; this module puts the two together for one request.

use failpass_shared::api::figures::{
    DistributionQuery, DistributionResponse, FiguresQuery, FiguresResponse, KEY_SEPARATOR, Throughput,
};
use failpass_shared::api::oracles::OracleSummary;
use failpass_shared::api::reports::{ReportFilter, unknown_parameter};
use failpass_shared::figures::{bin_edges, distribution, figure_rows, throughput};

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
    let contributions = storage.figure_contributions(&query, scope).await?;
    let mut rows = figure_rows(contributions);
    if !query.then_by.is_empty() {
        for row in &mut rows {
            row.keys = row.key.split(failpass_shared::figures::KEY_PARTS).map(str::to_owned).collect();
            row.key = row.keys.join(KEY_SEPARATOR);
        }
    }
    Ok(FiguresResponse { group_by: query.group_by, then_by: query.then_by, goal: query.goal, rows })
}

/// The distribution `query` asks for, in `scope`: per group, a histogram
/// over bins shared by every group, the CDF, mean, median and p90.
pub async fn distributions(
    storage: &dyn Storage,
    scope: &ProjectScope,
    query: DistributionQuery,
) -> ApiResult<DistributionResponse> {
    known_project(storage, scope, query.figures.filter.project.as_deref()).await?;
    let values = storage.metric_values(&query, scope).await?;
    let mut groups: std::collections::BTreeMap<String, Vec<f64>> = std::collections::BTreeMap::new();
    for (key, v) in values {
        groups.entry(key).or_default().push(v);
    }
    let all: Vec<&[f64]> = groups.values().map(Vec::as_slice).collect();
    let edges = bin_edges(&all, HISTOGRAM_BINS);
    Ok(DistributionResponse {
        metric: query.metric,
        unit: query.metric.unit().to_owned(),
        group_by: query.figures.group_by,
        groups: groups.into_iter().map(|(key, values)| distribution(key, values, &edges)).collect(),
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
    let flows = storage.report_flows(&filter, scope).await?;
    Ok(throughput(&flows, chrono::Utc::now()))
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
