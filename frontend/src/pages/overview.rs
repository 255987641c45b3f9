//! Overview: the team lead's headline figures, weekly throughput and the
//! route mix, under the shared filters.

use failpass_shared::api::figures::{FigureRow, FiguresQuery, Throughput};
use failpass_shared::format::{hours, interval, percent, thousands, usd};
use failpass_shared::model::GroupBy;
use leptos::prelude::*;

use crate::api::{self, ClientError};
use crate::components::figures::{ChartSvg, Figure, chart_src, figure_exports, figures_query};
use crate::components::filters::FilterBar;
use crate::components::{Empty, ErrorPanel, Loading, Stat};
use crate::router::query_pairs;

use failpass_shared::api::figures::THROUGHPUT_CHART_WEEKS as CHART_WEEKS;

#[component]
pub fn OverviewPage() -> impl IntoView {
    let pairs = query_pairs();
    let query = Memo::new(move |_| pairs.with(|p| figures_query(p)));
    let figures = crate::load::Load::new(move || {
        let q = query.get();
        async move {
            let q = q?;
            let total_q = FiguresQuery { group_by: GroupBy::None, ..q.clone() };
            let route_q = FiguresQuery { group_by: GroupBy::Route, ..q.clone() };
            // The requests in flight together: this page has a time budget.
            let (total, by_route, flow, glance) = futures_util::future::join4(
                api::figures(&total_q),
                api::figures(&route_q),
                api::throughput(&q.filter),
                api::glance(&q.filter),
            )
            .await;
            Ok::<_, ClientError>((total?.rows.into_iter().next(), by_route?.rows, flow?, q, glance?))
        }
    });

    view! {
        <section class="overview">
            <div class="page-head">
                <h1>"Overview"</h1>
            </div>
            <FilterBar path="/" pairs=pairs/>
            {figure_exports(pairs, "route")}
            <Transition fallback=|| view! { <Loading what="figures"/> }>
                {move || Suspend::new(async move {
                    match figures.get().await {
                        Err(e) => view! { <ErrorPanel error=e/> }.into_any(),
                        Ok((None, ..)) => view! { <Empty message="No reports in this view. Widen the filters, or submit one through the API (POST /api/v1/reports)."/> }.into_any(),
                        Ok((Some(total), by_route, flow, q, glance)) => view! {
                            // The period's answer, rendered and escaped by the server.
                            <div inner_html=glance></div>
                            {(q.agent.is_some() || q.model.is_some()).then(|| view! {
                                <p class="hint" data-testid="report-level-hint">
                                    "Backlog, weekly throughput and time to reproduction are report-level: the agent and model filters do not narrow them."
                                </p>
                            })}
                            <Headline total=total flow=flow.clone()/>
                            <ThroughputChart flow=flow chart=chart_src("throughput", q.filter.pairs(), 900)/>
                            <RouteChart rows=by_route q=q/>
                        }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn Headline(total: FigureRow, flow: Throughput) -> impl IntoView {
    let t = &total;
    let finished: u64 = flow.weeks.iter().map(|w| w.finished).sum();
    view! {
        <div class="stats" data-testid="headline">
            <Stat label="Reports in" value=thousands(t.reports as i64) testid="headline-reports"
                detail=format!("{} triaged to a route · {} graded · {} with a deterministic oracle", t.reports, t.reports_graded, t.reports_with_oracle)/>
            <Stat label="Reproduction rate" value=percent(t.rate) testid="headline-rate"
                detail=format!("{} of {} graded reports · 95% {}{}", t.reports_reproduced, t.reports_graded, interval(t.rate_low, t.rate_high), awaiting(t.reports_awaiting_review))/>
            <Stat label="Reproduced" value=thousands(t.reports_reproduced as i64) testid="headline-reproduced"
                detail=format!("{} of {} graded · {} (not counted)", plural(t.attempts_counting, "counting attempt"), t.attempts_graded, plural(t.attempts_lead, "LLM lead"))/>
            <Stat label="Backlog" value=thousands(flow.backlog as i64) testid="headline-backlog"
                detail=format!("not yet final · oldest {} · median age {} · {} reached a final state", hours(flow.backlog_oldest_days.map(|d| d * 24.0)), hours(flow.backlog_median_days.map(|d| d * 24.0)), finished)/>
            <Stat label="Median time to reproduction" value=hours(flow.time_to_reproduction_median_hours) testid="headline-time-to-reproduction"
                detail=format!("intake to first counting verdict · n={} of {} · p90 {}", flow.time_to_reproduction_n, t.reports_reproduced, hours(flow.time_to_reproduction_p90_hours))/>
            <Stat label="Cost per reproduction" value=usd(t.cost_per_reproduction_usd) testid="headline-cost-per-reproduction"
                detail=failpass_shared::format::spend_detail(t.cost_total_usd, t.reports_reproduced, t.attempts_without_cost)/>
            <Stat label="Mean cost of a success" value=usd(t.cost_mean_success_usd) testid="headline-cost-mean-success"
                detail=failpass_shared::format::success_cost_detail(t.attempts_counting, t.cost_ratio)/>
            <Stat label="Oracle coverage" value=percent(t.oracle_coverage) testid="headline-oracle-coverage"
                detail=format!("{} of {} reports · in-patch tests {} (reference 47.11%)", t.reports_with_oracle, t.reports, percent(t.in_patch_test_share))/>
            <Stat label="Attempts" value=thousands(t.attempts as i64) testid="headline-attempts"
                detail=format!("{} graded · {} · per-attempt success {}", t.attempts_graded, plural(t.attempts_error, "error"), percent(t.attempt_rate))/>
        </div>
    }
}

#[component]
fn ThroughputChart(flow: Throughput, chart: String) -> impl IntoView {
    view! {
        <Figure testid="chart-throughput" chart=chart
            caption=format!("Reports filed, and reports reaching a final state (reproduced, or graded and not reproduced), per week; the last {CHART_WEEKS} weeks with activity are drawn, every week is in the table.")>
            <details>
                <summary>"Every week's numbers"</summary>
                <table class="chart-table">
                    <thead><tr><th scope="col">"Week of"</th><th scope="col" class="num">"Filed"</th><th scope="col" class="num">"Final"</th><th scope="col" class="num">"Reproduced"</th></tr></thead>
                    <tbody>
                        {flow.weeks.iter().rev().map(|w| view! {
                            <tr data-testid="week-row"><th scope="row">{w.week.clone()}</th><td class="num">{w.filed}</td><td class="num">{w.finished}</td><td class="num">{w.reproduced}</td></tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </details>
        </Figure>
    }
}

#[component]
fn RouteChart(rows: Vec<FigureRow>, q: FiguresQuery) -> impl IntoView {
    let route_q = FiguresQuery { group_by: GroupBy::Route, then_by: Vec::new(), ..q };
    view! {
        <div class="chart-pair">
            <div class="chart" data-testid="chart-route-mix">
                <ChartSvg src=chart_src("reports", route_q.pairs(), 560)/>
            </div>
            <Figure testid="chart-route" chart=chart_src("rate", route_q.pairs(), 560)
                caption="Left: reports per route. Right: reports with at least one reproduced or confirmed attempt, over reports with a graded attempt, per route. Whiskers: Wilson 95% interval.">
                <table class="chart-table">
                    <caption class="visually-hidden">"The charts' numbers"</caption>
                    <thead><tr><th scope="col">"Route"</th><th scope="col">"Reports"</th><th scope="col">"Graded"</th><th scope="col">"Reproduced"</th><th scope="col">"Rate"</th><th scope="col">"95% interval"</th></tr></thead>
                    <tbody>
                        {rows.iter().map(|r| view! {
                            <tr data-testid="route-row" data-route=r.key.clone()>
                                <th scope="row">{r.key.replace('_', " ")}</th>
                                <td>{r.reports}</td>
                                <td>{r.reports_graded}</td>
                                <td>{r.reports_reproduced}</td>
                                <td>{percent(r.rate)}</td>
                                <td>{interval(r.rate_low, r.rate_high)}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </Figure>
        </div>
    }
}

/// `1 error`, `2 errors`.
fn plural(n: u64, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

/// What waits for a person beside the rate it would change (empty when nothing does).
fn awaiting(reports: u64) -> String {
    match reports {
        0 => String::new(),
        1 => " · 1 report awaits review".to_owned(),
        n => format!(" · {n} reports await review"),
    }
}
