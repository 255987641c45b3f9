//! Overview: the team lead's headline figures, weekly throughput and the
//! route mix, under the shared filters.

use failpass_shared::api::figures::{FigureRow, FiguresQuery, Throughput};
use failpass_shared::format::{interval, percent};
use failpass_shared::model::GroupBy;
use leptos::prelude::*;

use crate::api::{self, ClientError};
use crate::components::figures::{ChartSvg, Figure, chart_src, figure_exports, figures_query};
use crate::components::filters::FilterBar;
use crate::components::{Empty, ErrorPanel, Loading};
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
            let route_q = FiguresQuery { group_by: GroupBy::Route, ..q.clone() };
            // The requests in flight together: this page has a time budget.
            let (by_route, flow, glance) =
                futures_util::future::join3(api::figures(&route_q), api::throughput(&q.filter), api::glance(&q)).await;
            Ok::<_, ClientError>((by_route?.rows, flow?, q, glance?))
        }
    });

    view! {
        <section class="overview">
            <div class="page-head">
                <h1>"Overview"</h1>
            </div>
            <FilterBar path="/" pairs=pairs goal=true/>
            {figure_exports(pairs, "route")}
            <Transition fallback=|| view! { <Loading what="figures"/> }>
                {move || Suspend::new(async move {
                    match figures.get().await {
                        Err(e) => view! { <ErrorPanel error=e/> }.into_any(),
                        Ok((by_route, ..)) if by_route.is_empty() => view! { <Empty message="No reports in this view. Widen the filters, or submit one through the API (POST /api/v1/reports)."/> }.into_any(),
                        Ok((by_route, flow, q, glance)) => view! {
                            // The period's answer and the cards, rendered and escaped by the server.
                            <div inner_html=glance.html></div>
                            {(q.agent.is_some() || q.model.is_some()).then(|| view! {
                                <p class="hint" data-testid="report-level-hint">
                                    "The period's panel, weekly throughput and time to reproduction are report-level: the agent and model filters do not narrow them."
                                </p>
                            })}
                            <div inner_html=glance.cards_html></div>
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
