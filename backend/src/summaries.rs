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

use failpass_shared::figures::{FlowCounts, FlowKind, ValueBins, bin_edges_of, distribution_of, rows_from_totals};

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

/// Days without activity after which an open report is stuck, unless the
/// caller says otherwise (`stuck_days`).
pub const STUCK_DAYS: u32 = 14;

/// A period's answer for the reports `pairs` filter (report filters, a
/// `period`, by default this month, or days, and `stuck_days`), at `now`.
pub async fn glance<'a>(
    storage: &dyn Storage,
    scope: &ProjectScope,
    pairs: impl Iterator<Item = (&'a str, &'a str)>,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<failpass_shared::api::figures::Glance> {
    use failpass_shared::api::reports::{Dated, Period, ReportListQuery};
    let mut filter = ReportFilter::default();
    let mut stuck_days = STUCK_DAYS;
    for (k, v) in pairs {
        if k == "stuck_days" {
            stuck_days = match v.trim().parse::<u32>() {
                Ok(n) if (1..=3650).contains(&n) => n,
                _ => {
                    return Err(ApiError::BadRequest(format!(
                        "stuck_days: `{v}` is not a whole number of days from 1 to 3650"
                    )));
                }
            };
        } else if !filter.take(k, v)? {
            return Err(unknown_parameter(k, &format!("{}, stuck_days", ReportFilter::PARAMETERS)).into());
        }
    }
    filter.check_window()?;
    if filter.dated != Dated::Filed {
        return Err(ApiError::BadRequest(
            "dated: the glance gives every date of its period at once (reproduced, spent, filed)".into(),
        ));
    }
    known_project(storage, scope, filter.project.as_deref()).await?;
    let today = now.date_naive();
    // A period (this month by default), or days: `since` to today, or the
    // 30 days ending on `until`.
    let (period, (from, to)) = match (filter.period, filter.since, filter.until) {
        (None, Some(s), u) => (None, (s, u.unwrap_or(today))),
        (None, None, Some(u)) => (None, (u - chrono::Duration::days(29), u)),
        (p, ..) => {
            let p = p.unwrap_or(Period::ThisMonth);
            (Some(p), p.days(today))
        }
    };
    // The period as days, so every count below is of the same days, at `now`.
    let windowed = ReportFilter { since: Some(from), until: Some(to), period: None, ..filter.clone() };
    // The page's own filters, window included, for its downloads.
    let asked = filter.pairs();
    let base = ReportFilter { period: None, since: None, until: None, ..filter };
    // Whole days, as the counts keep them.
    let counts = flow_counts(storage, scope, &base, &failpass_shared::figures::glance_read(from, to)).await?;
    let reproduced = counts.within(FlowKind::Counted, from, to);
    let not_reproduced = counts.within(FlowKind::NotReproduced, from, to);
    // Filed in the period, as the throughput and the period's list count it.
    let filed = counts.within(FlowKind::Filed, from, to);
    let backlog = counts.total(FlowKind::Backlog);
    let spend_usd = failpass_shared::figures::tidy(storage.spend_usd(&windowed, scope).await?);
    let stuck = storage
        .count_reports(
            &ReportListQuery { filter: base.clone(), stuck_days: Some(stuck_days), ..Default::default() },
            scope,
        )
        .await? as u64;
    let finished = reproduced + not_reproduced;
    let mut g = failpass_shared::api::figures::Glance {
        period,
        from,
        to,
        reproduced,
        spend_usd,
        cost_per_reproduction_usd: (reproduced > 0).then(|| spend_usd / reproduced as f64),
        filed,
        finished,
        backlog_change: filed as i64 - finished as i64,
        backlog,
        stuck,
        stuck_days,
        html: String::new(),
    };
    // Projects whose routing sends too much to a human, or is corrected too often.
    let alarms: Vec<(String, String)> = crate::routing_health::alarms(storage, scope, now)
        .await?
        .into_iter()
        .filter(|(p, _)| base.project.as_deref().is_none_or(|f| f == p))
        .collect();
    g.html = glance_html(&g, &base, &asked, &alarms);
    Ok(g)
}

/// The glance as the Overview shows it: four figures, each linking to the
/// list behind it with the same filters.
fn glance_html(
    g: &failpass_shared::api::figures::Glance,
    filter: &ReportFilter,
    asked: &[(&'static str, String)],
    alarms: &[(String, String)],
) -> String {
    use failpass_shared::api::query::to_query_string;
    use failpass_shared::format::{thousands, usd};
    let link = |path: &str, extra: &[(&'static str, String)]| {
        let mut pairs = filter.pairs();
        pairs.extend(extra.iter().cloned());
        format!("{path}?{}", to_query_string(&pairs))
    };
    let window: Vec<(&'static str, String)> = match g.period {
        Some(p) => vec![("period", p.as_str().to_owned())],
        None => vec![("since", g.from.to_string()), ("until", g.to.to_string())],
    };
    let dated = |d: &str| window.iter().cloned().chain([("dated", d.to_owned())]).collect::<Vec<_>>();
    let reproduced = link("/queue", &dated("reproduced"));
    let spent = link("/cost", &dated("spent"));
    let stuck = link(
        "/queue",
        &[("stuck_days", g.stuck_days.to_string()), ("sort", "last_activity".into()), ("order", "asc".into())],
    );
    let change = match g.backlog_change {
        0 => "no change".to_owned(),
        c if c > 0 => format!("+{c}"),
        c => c.to_string(),
    };
    let weekly = format!("/api/v1/export/throughput?{}", to_query_string(asked));
    maud::html! {
        @for (project, why) in alarms {
            p.state.state-error role="alert" data-testid="routing-alarm" {
                strong { "Routing alarm, " (project) ": " } (why) " "
                a href=(format!("/routing/{project}")) { "routing health" }
            }
        }
        section.panel.glance data-testid="glance" aria-labelledby="glance-title" {
            h2 #glance-title {
                @if let Some(p) = g.period { (p.label()) ": " }
                (g.from) " to " (g.to)
            }
            div.stats {
                div.stat {
                    div.stat-label { "Reproduced" }
                    div.stat-value data-testid="glance-reproduced" { (thousands(g.reproduced as i64)) }
                    div.stat-detail { "first counting reproduction in the period · " a href=(reproduced) { "the reports" } }
                }
                div.stat {
                    div.stat-label { "Spent" }
                    div.stat-value data-testid="glance-spend" { (usd(Some(g.spend_usd))) }
                    div.stat-detail {
                        "on attempts started in the period · "
                        (usd(g.cost_per_reproduction_usd)) " per reproduction · "
                        a href=(spent) { "cost & time" }
                    }
                }
                div.stat {
                    div.stat-label { "Backlog change" }
                    div.stat-value data-testid="glance-backlog" { (change) }
                    div.stat-detail {
                        (thousands(g.filed as i64)) " came in, " (thousands(g.finished as i64)) " reached a verdict; "
                        (thousands(g.backlog as i64)) " open now"
                    }
                }
                div.stat {
                    div.stat-label { "Stuck" }
                    div.stat-value data-testid="glance-stuck" { (thousands(g.stuck as i64)) }
                    div.stat-detail {
                        "open, no activity for " (g.stuck_days) " days · "
                        a href=(stuck) data-testid="glance-stuck-link" { "the list, oldest first" }
                    }
                }
            }
            p.count {
                "The weekly throughput under the Overview's filters, all weeks: "
                a href=(weekly) download data-testid="export-throughput" { "CSV" }
            }
            p.count data-testid="flow-resolution" { (failpass_shared::figures::RESOLUTION_NOTE) }
        }
    }
    .into_string()
}
