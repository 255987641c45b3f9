//! `GET /api/v1/figures`, `/distributions` and `/throughput`: the figures of
//! the reports a query selects, in the caller's scope.

use axum::extract::State;
use failpass_shared::api::figures::{
    DistributionQuery, DistributionResponse, FiguresQuery, FiguresResponse, Throughput,
};

use super::AppState;
use crate::auth::Viewer;
use crate::error::{ApiJson, ApiResult, QueryPairs};
use crate::summaries;

/// `GET /api/v1/figures`: one row per group, every figure as docs/domain.md defines it.
#[utoipa::path(
    get, path = "/api/v1/figures", tag = "figures",
    params(FiguresQuery),
    responses((status = 200, description = "Figures per group, with sample sizes and intervals.", body = FiguresResponse))
)]
#[tracing::instrument(skip_all)]
pub async fn get_figures(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<FiguresResponse>> {
    let query = FiguresQuery::from_pairs(query.iter())?;
    Ok(ApiJson(summaries::figures(state.storage.as_ref(), &viewer.scope(), query).await?))
}

/// `GET /api/v1/distributions`: per group, the spread of cost or wall time
/// per attempt (histogram over shared bins, CDF, mean, median, p90). Counts
/// and means are exact; the rest reads each value from a bin a sixteenth of
/// a doubling wide, within 2.2% of it (half a hundredth of a cent, or
/// 0.05 s, below those), whether the maintained rollups or the raw rows answer.
#[utoipa::path(
    get, path = "/api/v1/distributions", tag = "figures",
    params(DistributionQuery),
    responses((status = 200, description = "Per group: histogram, CDF, mean, median, p90. Counts and means are exact; \
        medians, p90, maxima, CDF points and bars read each value from a bin a sixteenth of a doubling wide (within 2.2%).",
        body = DistributionResponse))
)]
#[tracing::instrument(skip_all)]
pub async fn get_distributions(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<DistributionResponse>> {
    let query = DistributionQuery::from_pairs(query.iter())?;
    Ok(ApiJson(summaries::distributions(state.storage.as_ref(), &viewer.scope(), query).await?))
}

/// `GET /api/v1/throughput`: reports reaching a final state per week, the
/// backlog and its age, and time to reproduction (report filters only).
#[utoipa::path(
    get, path = "/api/v1/throughput", tag = "figures",
    params(failpass_shared::api::reports::ReportFilter),
    responses((status = 200, description = "Weekly flow of the reports the filters select.", body = Throughput))
)]
#[tracing::instrument(skip_all)]
pub async fn get_throughput(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<Throughput>> {
    Ok(ApiJson(summaries::throughput_of(state.storage.as_ref(), &viewer.scope(), query.iter()).await?))
}

/// `GET /api/v1/glance`: a period's answer in one look (the Overview's top).
#[utoipa::path(
    get, path = "/api/v1/glance", tag = "figures",
    params(failpass_shared::api::reports::ReportFilter,
           ("stuck_days" = Option<u32>, Query, minimum = 1, maximum = 3650, description = "Days without activity after which an open report is stuck (14)."),
           ("agent" = Option<String>, Query, description = "The cards only: the attempts of this agent."),
           ("model" = Option<String>, Query, description = "The cards only: the attempts of this model."),
           ("goal" = Option<failpass_shared::model::Goal>, Query, description = "The cards only: `reproduce` (the default) or `fix`.")),
    responses((status = 200, description = "The period (`period`, this month by default; or `since` to today, or the 30 days ending `until`) by event date and by filing date side by side, the backlog, its change and the stuck count; \
        and the cards of the reports the filters select (`dated`, `agent`, `model` and `goal` narrow the cards only).", body = failpass_shared::api::figures::Glance))
)]
#[tracing::instrument(skip_all)]
pub async fn get_glance(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<failpass_shared::api::figures::Glance>> {
    let now = chrono::Utc::now();
    Ok(ApiJson(summaries::glance(state.storage.as_ref(), &viewer.scope(), query.iter(), now).await?))
}

/// `GET /api/v1/ranks`: success by rank, per agent: reports reproduced by
/// its first candidate, and within its first k (`within=1,3,5,10` by
/// default), over every report the filters select (a study's full set).
#[utoipa::path(
    get, path = "/api/v1/ranks", tag = "figures",
    params(failpass_shared::api::reports::ReportFilter,
           ("within" = Option<String>, Query, example = "1,3,5,10", description = "The ranks k to count within, comma-separated whole numbers from 1 (1,3,5,10).")),
    responses((status = 200, description = "Per agent with a ranked counting attempt: reports reproduced within each k, over the reports selected, with Wilson intervals.",
        body = failpass_shared::api::figures::RankFigures))
)]
#[tracing::instrument(skip_all)]
pub async fn get_ranks(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<failpass_shared::api::figures::RankFigures>> {
    use failpass_shared::api::reports::{ReportFilter, ReportListQuery};
    let mut filter = ReportFilter::default();
    let mut within: Vec<u32> = failpass_shared::figures::DEFAULT_WITHIN.to_vec();
    for (k, v) in query.iter() {
        if k == "within" {
            within = parse_within(v)?;
        } else if !filter.take(k, v)? {
            return Err(failpass_shared::api::reports::unknown_parameter(
                k,
                &format!("{}, within", ReportFilter::PARAMETERS),
            )
            .into());
        }
    }
    filter.check_window()?;
    let (storage, scope) = (state.storage.as_ref(), viewer.scope());
    summaries::known_project(storage, &scope, filter.project.as_deref()).await?;
    let reports =
        storage.count_reports(&ReportListQuery { filter: filter.clone(), ..Default::default() }, &scope).await? as u64;
    let firsts = storage.first_ranks(&filter, &scope).await?;
    Ok(ApiJson(failpass_shared::figures::rank_figures(reports, &firsts, &within)))
}

/// `within=1,3,5`: up to ten ranks, each a whole number from 1.
fn parse_within(v: &str) -> ApiResult<Vec<u32>> {
    use failpass_shared::api::attempts::MAX_RANK;
    let bad = || {
        crate::error::ApiError::BadRequest(format!(
            "within: `{v}` is not up to ten comma-separated whole numbers from 1 to {MAX_RANK} (1,3,5,10)"
        ))
    };
    let mut ks: Vec<u32> = v
        .split(',')
        .map(|k| k.trim().parse::<u32>().ok().filter(|k| (1..=MAX_RANK).contains(k)))
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    ks.sort_unstable();
    ks.dedup();
    if ks.is_empty() || ks.len() > 10 {
        return Err(bad());
    }
    Ok(ks)
}
