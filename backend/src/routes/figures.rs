use axum::extract::State;
use failpass_shared::api::figures::{
    DistributionQuery, DistributionResponse, Facets, FiguresQuery, FiguresResponse, KEY_SEPARATOR, Throughput,
};
use failpass_shared::api::reports::{ReportFilter, unknown_parameter};
use failpass_shared::figures::{bin_edges, distribution, figure_rows, throughput};

use super::AppState;
use crate::auth::Viewer;
use crate::db::ProjectScope;
use crate::error::{ApiJson, ApiResult, QueryPairs};

/// `GET /api/v1/figures`: one row per group, every figure as docs/domain.md defines it.
#[tracing::instrument(skip_all)]
pub async fn get_figures(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<FiguresResponse>> {
    let query = FiguresQuery::from_pairs(query.iter())?;
    Ok(ApiJson(figures(&state, &viewer.scope(), query).await?))
}

/// The figures `query` asks for, in the viewer's scope (also drawn by the charts).
pub(super) async fn figures(state: &AppState, scope: &ProjectScope, query: FiguresQuery) -> ApiResult<FiguresResponse> {
    let contributions = state.storage.figure_contributions(&query, scope).await?;
    let mut rows = figure_rows(contributions);
    if !query.then_by.is_empty() {
        for row in &mut rows {
            row.keys = row.key.split(failpass_shared::figures::KEY_PARTS).map(str::to_owned).collect();
            row.key = row.keys.join(KEY_SEPARATOR);
        }
    }
    Ok(FiguresResponse { group_by: query.group_by, then_by: query.then_by, goal: query.goal, rows })
}

/// `GET /api/v1/agents`: each agent's stated figures beside its computed ones.
#[tracing::instrument(skip_all)]
pub async fn list_agents(
    State(state): State<AppState>,
    viewer: Viewer,
) -> ApiResult<ApiJson<Vec<failpass_shared::api::import::AgentFigures>>> {
    use failpass_shared::api::import::{AgentFigures, discrepancies};
    use failpass_shared::model::{Goal, GroupBy};
    let scope = viewer.scope();
    let mut computed = std::collections::HashMap::new();
    for goal in [Goal::Reproduce, Goal::Fix] {
        let q = FiguresQuery { group_by: GroupBy::Agent, goal, ..Default::default() };
        for row in figure_rows(state.storage.figure_contributions(&q, &scope).await?) {
            // Fix figures win where an agent has both: leaderboards grade fixes.
            if goal == Goal::Fix || !computed.contains_key(&row.key) {
                computed.insert(row.key.clone(), (goal, row));
            }
        }
    }
    let agents = state.storage.list_agents().await?;
    Ok(ApiJson(
        agents
            .into_iter()
            .map(|agent| {
                let (goal, row) = match computed.remove(&agent.name) {
                    Some((g, r)) => (g, Some(r)),
                    None => (Goal::Fix, None),
                };
                AgentFigures { discrepancies: discrepancies(&agent, row.as_ref()), agent, goal, computed: row }
            })
            .collect(),
    ))
}

/// Bars in a distribution's histogram.
const HISTOGRAM_BINS: usize = 20;

/// `GET /api/v1/distributions`: per group, the spread of cost or wall time
/// per attempt (histogram over shared bins, CDF, mean, median, p90).
#[tracing::instrument(skip_all)]
pub async fn get_distributions(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<DistributionResponse>> {
    let query = DistributionQuery::from_pairs(query.iter())?;
    Ok(ApiJson(distributions(&state, &viewer.scope(), query).await?))
}

/// The distribution `query` asks for, in the viewer's scope.
pub(super) async fn distributions(
    state: &AppState,
    scope: &ProjectScope,
    query: DistributionQuery,
) -> ApiResult<DistributionResponse> {
    let values = state.storage.metric_values(&query, scope).await?;
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

/// `GET /api/v1/throughput`: reports reaching a final state per week, the
/// backlog and its age, and time to reproduction (report filters only).
#[tracing::instrument(skip_all)]
pub async fn get_throughput(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<Throughput>> {
    Ok(ApiJson(throughput_of(&state, &viewer.scope(), query.iter()).await?))
}

/// The throughput of the reports the report filters in `pairs` select.
pub(super) async fn throughput_of<'a>(
    state: &AppState,
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
    let flows = state.storage.report_flows(&filter, scope).await?;
    Ok(throughput(&flows, chrono::Utc::now()))
}

/// `GET /api/v1/facets`: the agents and models the filters can pick.
#[tracing::instrument(skip_all)]
pub async fn get_facets(State(state): State<AppState>, viewer: Viewer) -> ApiResult<ApiJson<Facets>> {
    Ok(ApiJson(state.storage.facets(&viewer.scope()).await?))
}
