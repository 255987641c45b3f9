//! `GET /api/v1/charts/{name}`: the dashboard's charts as SVG, drawn with
//! plotters from the figures the JSON endpoints give for the same
//! parameters. Drawing here keeps plotters out of the dashboard's bundle,
//! and makes every chart a link a status page or an issue can embed.

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use failpass_shared::api::figures::{DistributionQuery, FigureRow, FiguresQuery, Metric, THROUGHPUT_CHART_WEEKS};
use failpass_shared::model::GroupBy;

use super::AppState;
use crate::auth::Viewer;
use crate::charts;
use crate::error::{ApiError, ApiResult, QueryPairs};
use crate::summaries::{distributions, figures, oracle_summary, throughput_of};

/// The charts there are, as the 404 for any other name lists them.
pub const CHARTS: &str =
    "rate, reports, throughput, cost-both-ways, spend, histogram, cdf, oracle-kinds, oracle-sources";

/// A chart's name in the OpenAPI document: one of [`CHARTS`].
pub struct ChartName;

impl utoipa::PartialSchema for ChartName {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::Type::String)
            .enum_values(Some(CHARTS.split(", ")))
            .into()
    }
}

impl utoipa::ToSchema for ChartName {}

/// Narrowest and widest drawing, in pixels (`width`).
const WIDTH: std::ops::RangeInclusive<u32> = 280..=1600;

/// Every chart takes its JSON twin's parameters plus `width`; `name` may end in `.svg`.
#[utoipa::path(
    get, path = "/api/v1/charts/{name}", tag = "figures",
    params(("name" = inline(ChartName), Path, description = "The chart (`.svg` may follow the name)."),
           ("width" = Option<u32>, Query, minimum = 280, maximum = 1600, description = "Width in pixels."),
           DistributionQuery),
    responses((status = 200, description = "The chart.", content_type = "image/svg+xml", body = String))
)]
#[tracing::instrument(skip_all, fields(chart = %name))]
pub async fn get_chart(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(name): Path<String>,
    query: QueryPairs,
) -> ApiResult<Response> {
    let scope = viewer.scope();
    let name = name.strip_suffix(".svg").unwrap_or(&name);
    let mut width = None;
    let mut pairs = Vec::new();
    for (k, v) in query.iter() {
        if k == "width" {
            // Empty is absent, as for every other parameter.
            width = if v.trim().is_empty() { None } else { Some(parse_width(v)?) };
        } else {
            pairs.push((k, v));
        }
    }
    let w = |preferred: u32| width.unwrap_or(preferred);
    let figures_query = |default: GroupBy| -> ApiResult<FiguresQuery> {
        let has_group = pairs.iter().any(|(k, _)| *k == "group_by");
        let mut q = FiguresQuery::from_pairs(pairs.iter().copied()).map_err(with_width)?;
        if !has_group {
            q.group_by = default;
        }
        Ok(q)
    };
    let svg = match name {
        "rate" => {
            let q = figures_query(GroupBy::Route)?;
            let (title, axis) = rate_labels(&q);
            let cutoff = q.dimensions().contains(&GroupBy::Cutoff);
            let rows = figures(state.storage.as_ref(), &scope, q).await?.rows;
            let rows = if cutoff { short_cutoffs(rows) } else { rows };
            charts::rate_bars(&title, &axis, &rows, w(560), if cutoff { 360 } else { 340 })
        }
        "reports" => {
            let q = figures_query(GroupBy::Route)?;
            let title = match q.dimensions()[..] {
                [GroupBy::Route] => "Route mix".to_owned(),
                _ => format!("Reports by {}", dims_named(&q, " × ")),
            };
            let axis = axis_label(&q);
            let rows: Vec<(String, i64)> = figures(state.storage.as_ref(), &scope, q)
                .await?
                .rows
                .into_iter()
                .map(|r| (r.key, r.reports as i64))
                .collect();
            charts::count_bars(&title, &axis, "Reports", &rows, w(560), 340)
        }
        "throughput" => {
            let flow =
                throughput_of(state.storage.as_ref(), &scope, pairs.iter().copied()).await.map_err(with_width)?;
            // The weeks up to the view's newest, every one of them: an empty
            // week is a gap, never skipped (the table lists them all).
            let newest = flow
                .weeks
                .iter()
                .filter_map(|w| chrono::NaiveDate::parse_from_str(&w.week, "%Y-%m-%d").ok())
                .max()
                .map_or_else(chrono::Utc::now, |d| d.and_time(chrono::NaiveTime::MIN).and_utc());
            let recent = failpass_shared::figures::recent_weeks(&flow.weeks, newest, THROUGHPUT_CHART_WEEKS);
            if recent.iter().all(|w| w.filed == 0 && w.finished == 0) {
                let why = if flow.reports > 0 {
                    "Nothing filed or finished on a known day in these weeks"
                } else {
                    "No report in the view"
                };
                return Ok(chart_response(charts::empty_chart("Weekly throughput", why, w(900), 340)));
            }
            let labels: Vec<String> = recent.iter().map(|w| w.week.clone()).collect();
            let series = [
                ("Filed", recent.iter().map(|w| w.filed as f64).collect()),
                ("Reached a final state", recent.iter().map(|w| w.finished as f64).collect()),
                ("Of which reproduced", recent.iter().map(|w| w.reproduced as f64).collect()),
            ];
            charts::grouped_bars(
                "Weekly throughput",
                "Week starting (UTC)",
                "Reports",
                &labels,
                &series,
                &charts::whole,
                w(900),
                340,
            )
        }
        "cost-both-ways" => {
            let q = figures_query(GroupBy::Agent)?;
            let axis = axis_label(&q);
            let rows = figures(state.storage.as_ref(), &scope, q).await?.rows;
            if rows.iter().all(|r| r.cost_per_reproduction_usd.is_none() && r.cost_mean_success_usd.is_none()) {
                let why = costless(&rows, "no reproduction with a known cost yet");
                return Ok(chart_response(charts::empty_chart("Cost per reproduction, two ways", &why, w(900), 340)));
            }
            let labels: Vec<String> = rows.iter().map(|r| r.key.clone()).collect();
            let both = [
                (
                    "All spend / reproductions",
                    rows.iter().map(|r| r.cost_per_reproduction_usd.unwrap_or(0.0)).collect(),
                ),
                ("Mean of successful attempts", rows.iter().map(|r| r.cost_mean_success_usd.unwrap_or(0.0)).collect()),
            ];
            charts::grouped_bars(
                "Cost per reproduction, two ways",
                &axis,
                "USD",
                &labels,
                &both,
                &|x| format!("${x:.2}"),
                w(900),
                340,
            )
        }
        "spend" => {
            let q = figures_query(GroupBy::Week)?;
            let month = match q.dimensions()[..] {
                [GroupBy::Week] => false,
                [GroupBy::Month] => true,
                _ => {
                    return Err(ApiError::BadRequest(
                        "group_by: spend is drawn by week or by month (group_by=week or group_by=month)".into(),
                    ));
                }
            };
            let rows = figures(state.storage.as_ref(), &scope, q).await?.rows;
            let (title, axis, bars) = if month {
                ("Spend per month, and in all", "Month attempts started (UTC)", "Spent in the month")
            } else {
                ("Spend per week, and in all", "Week attempts started (UTC)", "Spent in the week")
            };
            // Attempts that started on no known day are in no period.
            let dated: Vec<FigureRow> = rows.iter().filter(|r| r.key != "unknown").cloned().collect();
            if dated.iter().all(|r| r.cost_total_usd == 0.0) {
                let why = costless(&rows, "no spend recorded in the view");
                return Ok(chart_response(charts::empty_chart(title, &why, w(900), 320)));
            }
            let periods = contiguous(dated.into_iter().map(|r| (r.key, r.cost_total_usd)).collect(), month);
            charts::spend_chart(title, axis, bars, &periods, w(900), 320)
        }
        "histogram" => {
            let q = DistributionQuery::from_pairs(pairs.iter().copied()).map_err(with_width)?;
            if q.figures.group_by != GroupBy::None {
                return Err(ApiError::BadRequest(
                    "group_by: a histogram is drawn over every attempt in the view (group_by=none)".into(),
                ));
            }
            let (title, axis, money) = metric_labels(q.metric);
            let scale = unit_scale(q.metric);
            let metric = q.metric;
            let d = distributions(state.storage.as_ref(), &scope, q).await?;
            if d.groups.first().is_none_or(|g| g.n == 0) {
                return Ok(chart_response(charts::empty_chart(title, &unrecorded(metric), w(560), 320)));
            }
            let bins: Vec<(f64, f64, u64)> = d
                .groups
                .first()
                .map(|g| g.histogram.iter().map(|b| (b.low * scale, b.high * scale, b.count)).collect())
                .unwrap_or_default();
            charts::histogram_chart(title, axis, &bins, money, w(560), 320)
        }
        "cdf" => {
            let has_group = pairs.iter().any(|(k, _)| *k == "group_by");
            let mut q = DistributionQuery::from_pairs(pairs.iter().copied()).map_err(with_width)?;
            if !has_group {
                q.figures.group_by = GroupBy::Agent;
            }
            let (what, axis, money) = metric_labels(q.metric);
            let scale = unit_scale(q.metric);
            let title = match q.figures.group_by {
                GroupBy::None => format!("{what} (CDF)"),
                g => format!("{what}, by {g} (CDF)"),
            };
            // An agent's place among all agents is its style, whatever the filter.
            let order = match q.figures.group_by {
                GroupBy::Agent => state.storage.facets(&scope).await?.agents,
                GroupBy::Model => state.storage.facets(&scope).await?.models,
                _ => Vec::new(),
            };
            let metric = q.metric;
            let d = distributions(state.storage.as_ref(), &scope, q).await?;
            if d.groups.iter().all(|g| g.n == 0) {
                return Ok(chart_response(charts::empty_chart(&title, &unrecorded(metric), w(560), 320)));
            }
            let series: Vec<crate::charts::CdfSeries> = d
                .groups
                .into_iter()
                .enumerate()
                .map(|(i, g)| {
                    let style = order.iter().position(|a| *a == g.key).unwrap_or(order.len() + i);
                    (format!("{} (n={})", g.key, g.n), style, g.cdf.into_iter().map(|(x, y)| (x * scale, y)).collect())
                })
                .collect();
            charts::cdf_chart(&title, axis, &series, money, w(560), 320)
        }
        "oracle-kinds" => {
            let s = oracle_summary(state.storage.as_ref(), &scope, pairs.iter().copied()).await.map_err(with_width)?;
            oracle_kinds_svg(&s, w(640))
        }
        "oracle-sources" => {
            let s = oracle_summary(state.storage.as_ref(), &scope, pairs.iter().copied()).await.map_err(with_width)?;
            oracle_sources_svg(&s, w(640))
        }
        other => return Err(ApiError::NotFound(format!("no chart `{other}`; known: {CHARTS}"))),
    };
    if svg.is_empty() {
        return Err(anyhow::anyhow!("chart `{name}` could not be drawn").into());
    }
    Ok(chart_response(svg))
}

/// An SVG chart. Opened on its own, an SVG is a document: it may run
/// nothing and load nothing.
fn chart_response(svg: String) -> Response {
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, "default-src 'none'"),
        ],
        svg,
    )
        .into_response()
}

/// Why a cost chart is empty: how many attempts have no cost, if any.
fn costless(rows: &[FigureRow], otherwise: &str) -> String {
    let (attempts, without): (u64, u64) =
        rows.iter().fold((0, 0), |(a, w), r| (a + r.attempts, w + r.attempts_without_cost));
    match without {
        0 => otherwise.to_owned(),
        n if n == attempts => format!("Unknown: none of the {n} attempts has a cost"),
        n => format!("Unknown: {n} of the {attempts} attempts have no cost, and the rest spent nothing"),
    }
}

/// Why a distribution is empty.
fn unrecorded(m: Metric) -> String {
    match m {
        Metric::CostUsd => "Unknown: no attempt in the view has a cost".into(),
        Metric::WallSeconds => "Unknown: no attempt in the view has a time".into(),
    }
}

fn parse_width(v: &str) -> Result<u32, ApiError> {
    match v.trim().parse::<u32>() {
        Ok(w) if WIDTH.contains(&w) => Ok(w),
        _ => Err(ApiError::BadRequest(format!(
            "width: `{v}` is not a width in pixels from {} to {}",
            WIDTH.start(),
            WIDTH.end()
        ))),
    }
}

/// An unknown parameter's error, with `width` among the known ones.
fn with_width(e: impl Into<ApiError>) -> ApiError {
    match e.into() {
        ApiError::BadRequest(m) if m.contains("unknown query parameter") => ApiError::BadRequest(format!("{m}, width")),
        e => e,
    }
}

/// A dimension as an axis names it.
fn dim_label(g: GroupBy) -> &'static str {
    match g {
        GroupBy::None => "All reports",
        GroupBy::Project => "Project",
        GroupBy::Route => "Route",
        GroupBy::Agent => "Agent",
        GroupBy::Model => "Model",
        GroupBy::Category => "Category",
        GroupBy::Cutoff => "Filed",
        GroupBy::Week => "Week starting (UTC)",
        GroupBy::Month => "Month (UTC)",
        GroupBy::Vagueness => "Report",
    }
}

fn axis_label(q: &FiguresQuery) -> String {
    match q.dimensions()[..] {
        [GroupBy::Model, GroupBy::Cutoff] => "Model · filed".to_owned(),
        ref dims => dims.iter().map(|d| dim_label(*d)).collect::<Vec<_>>().join(" · "),
    }
}

fn dims_named(q: &FiguresQuery, sep: &str) -> String {
    q.dimensions().iter().map(|d| d.as_str()).collect::<Vec<_>>().join(sep)
}

/// A rate chart's title and axis for its grouping.
fn rate_labels(q: &FiguresQuery) -> (String, String) {
    let title = match q.dimensions()[..] {
        [GroupBy::None] => "Reproduction rate".to_owned(),
        [GroupBy::Category] => "Rate by category".to_owned(),
        [GroupBy::Vagueness] => "Rate by vagueness".to_owned(),
        [GroupBy::Model, GroupBy::Cutoff] => "Rate before and after each model's training cutoff".to_owned(),
        _ => format!("Reproduction rate by {}", dims_named(q, " × ")),
    };
    (title, axis_label(q))
}

fn metric_labels(m: Metric) -> (&'static str, &'static str, bool) {
    match m {
        // The values are read from bins (failpass_shared::figures::VALUES_NOTE).
        Metric::CostUsd => ("Cost per attempt", "Cost per attempt (USD; binned, within 2.2%)", true),
        Metric::WallSeconds => ("Wall time per attempt", "Wall time per attempt (minutes; binned, within 2.2%)", false),
    }
}

/// What a metric's values are multiplied by to be in its axis's unit: wall
/// time is drawn in minutes, as the Cost & time page's cards and table give it.
fn unit_scale(m: Metric) -> f64 {
    match m {
        Metric::CostUsd => 1.0,
        Metric::WallSeconds => 1.0 / 60.0,
    }
}

/// `before`/`after` for `before_cutoff`/`after_cutoff`, so the model's name keeps its room.
fn short_cutoffs(rows: Vec<FigureRow>) -> Vec<FigureRow> {
    rows.into_iter()
        .map(|r| FigureRow { key: r.key.replace("before_cutoff", "before").replace("after_cutoff", "after"), ..r })
        .collect()
}

/// Periods to draw spend over: every week (`YYYY-MM-DD` Mondays) or month
/// (`YYYY-MM`) from the first to the last with spend, the empty ones at
/// zero, so a quiet stretch shows as one; attempts without a start left out.
/// At most [`MAX_PERIODS`], the newest.
fn contiguous(rows: Vec<(String, f64)>, month: bool) -> Vec<(String, f64)> {
    use chrono::{Datelike, NaiveDate};
    let parse = |k: &str| {
        if month {
            NaiveDate::parse_from_str(&format!("{k}-01"), "%Y-%m-%d").ok()
        } else {
            NaiveDate::parse_from_str(k, "%Y-%m-%d").ok()
        }
    };
    let mut known: std::collections::BTreeMap<NaiveDate, f64> = std::collections::BTreeMap::new();
    for (k, v) in &rows {
        if let Some(d) = parse(k) {
            *known.entry(d).or_default() += v;
        }
    }
    let (Some(&first), Some(&last)) = (known.keys().next(), known.keys().next_back()) else {
        return Vec::new();
    };
    let step = |d: NaiveDate, n: u32| {
        if month {
            d.checked_add_months(chrono::Months::new(n))
        } else {
            d.checked_add_days(chrono::Days::new(7 * u64::from(n)))
        }
    };
    let back = |d: NaiveDate, n: u32| {
        if month {
            d.checked_sub_months(chrono::Months::new(n))
        } else {
            d.checked_sub_days(chrono::Days::new(7 * u64::from(n)))
        }
    };
    // At most MAX_PERIODS, the newest: start no earlier than that many back.
    let start = back(last, MAX_PERIODS as u32 - 1).map_or(first, |b| b.max(first));
    let mut out = Vec::new();
    let mut at = Some(start);
    while let Some(d) = at.filter(|d| *d <= last) {
        let spent = known.get(&d).copied().unwrap_or(0.0);
        let key = if month { format!("{:04}-{:02}", d.year(), d.month()) } else { d.format("%Y-%m-%d").to_string() };
        out.push((key, spent));
        at = step(d, 1);
    }
    out
}

/// The most periods a spend chart draws (ten years of weeks).
const MAX_PERIODS: usize = 520;

/// Reports by oracle kind, as bars (the chart `oracle-kinds`).
pub(crate) fn oracle_kinds_svg(s: &failpass_shared::api::oracles::OracleSummary, width: u32) -> String {
    let kinds: Vec<(String, i64)> = s.by_kind.iter().map(|k| (k.kind.as_str().to_owned(), k.reports)).collect();
    charts::count_bars("Reports by oracle kind", "Oracle kind", "Reports", &kinds, width, 300)
}

/// Each oracle source's share of all reports, with the in-patch reference
/// (the chart `oracle-sources`).
pub(crate) fn oracle_sources_svg(s: &failpass_shared::api::oracles::OracleSummary, width: u32) -> String {
    let shares: Vec<(String, f64, i64)> = s
        .by_source
        .iter()
        .map(|k| {
            let source = k.source.map(|s| s.as_str().to_owned()).unwrap_or_else(|| "not stated".into());
            (source, k.reports as f64 / s.reports.max(1) as f64, k.reports)
        })
        .collect();
    let reference = format!("in-patch reference {:.2}%", s.in_patch_reference * 100.0);
    charts::share_bars(
        "Share of all reports, by oracle source",
        "Oracle source",
        &shares,
        (s.in_patch_reference, &reference),
        width,
        300,
    )
}

#[cfg(test)]
mod tests {
    use super::contiguous;

    #[test]
    fn spend_periods_leave_no_stretch_out() {
        let weeks =
            contiguous(vec![("2026-01-19".into(), 2.0), ("unknown".into(), 9.0), ("2025-12-29".into(), 1.0)], false);
        let keys: Vec<&str> = weeks.iter().map(|w| w.0.as_str()).collect();
        assert_eq!(keys, ["2025-12-29", "2026-01-05", "2026-01-12", "2026-01-19"]);
        assert_eq!(weeks.iter().map(|w| w.1).sum::<f64>(), 3.0, "the unknown week is left out");
        let months = contiguous(vec![("2025-11".into(), 1.0), ("2026-02".into(), 4.0)], true);
        let keys: Vec<&str> = months.iter().map(|w| w.0.as_str()).collect();
        assert_eq!(keys, ["2025-11", "2025-12", "2026-01", "2026-02"]);
        assert!(contiguous(Vec::new(), true).is_empty());
        // a stray year-1 attempt costs no walk through the ages: the newest 520 weeks
        let far = contiguous(vec![("0001-01-01".into(), 1.0), ("2026-01-19".into(), 2.0)], false);
        assert_eq!(far.len(), super::MAX_PERIODS);
        assert_eq!(far.last().map(|p| p.0.as_str()), Some("2026-01-19"));
    }
}
