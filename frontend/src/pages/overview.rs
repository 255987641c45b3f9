//! Overview: the team lead's headline figures and the rate by route.

use failpass_shared::api::figures::{FigureRow, FiguresQuery};
use failpass_shared::format::{interval, percent, thousands, usd};
use failpass_shared::model::GroupBy;
use leptos::prelude::*;
use leptos_router::hooks::use_navigate;

use super::{query_pairs, with_param};
use crate::api::{self, ClientError};
use crate::components::charts::rate_bars;
use crate::components::{Empty, ErrorPanel, Loading, ProjectSelect, Stat};

fn parse(pairs: &[(String, String)]) -> Result<FiguresQuery, ClientError> {
    FiguresQuery::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|e| ClientError::Input(e.to_string()))
}

#[component]
pub fn OverviewPage() -> impl IntoView {
    let pairs = query_pairs();
    let query = Memo::new(move |_| pairs.with(|p| parse(p)));
    let figures = LocalResource::new(move || {
        let q = query.get();
        async move {
            let mut q = q?;
            q.group_by = GroupBy::None;
            let total = api::figures(&q).await?;
            q.group_by = GroupBy::Route;
            let by_route = api::figures(&q).await?;
            Ok::<_, ClientError>((total.rows.into_iter().next(), by_route.rows))
        }
    });
    let projects = LocalResource::new(api::projects);
    let navigate = use_navigate();
    let on_project = move |slug: String| {
        let current = query.get_untracked().map(|q| q.filter.pairs()).unwrap_or_default();
        navigate(&format!("/?{}", with_param(&current, "project", &slug)), Default::default());
    };

    view! {
        <section class="overview">
            <div class="page-head">
                <h1>"Overview"</h1>
                <Suspense fallback=|| ()>
                    {move || {
                        let on_project = on_project.clone();
                        Suspend::new(async move {
                            let selected = query.get_untracked().ok().and_then(|q| q.filter.project);
                            match projects.await {
                                Ok(list) => view! { <ProjectSelect projects=list selected=selected on_change=on_project/> }.into_any(),
                                Err(_) => ().into_any(),
                            }
                        })
                    }}
                </Suspense>
            </div>
            <Transition fallback=|| view! { <Loading what="figures"/> }>
                {move || Suspend::new(async move {
                    match figures.await {
                        Err(e) => view! { <ErrorPanel error=e/> }.into_any(),
                        Ok((None, _)) => view! { <Empty message="No reports yet. Submit one through the API (POST /api/v1/reports)."/> }.into_any(),
                        Ok((Some(total), by_route)) => view! { <Headline total=total/> <RouteChart rows=by_route/> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn Headline(total: FigureRow) -> impl IntoView {
    let t = &total;
    view! {
        <div class="stats" data-testid="headline">
            <Stat label="Reports" value=thousands(t.reports as i64) testid="headline-reports"
                detail=format!("{} graded, {} with a deterministic oracle", t.reports_graded, t.reports_with_oracle)/>
            <Stat label="Reproduction rate" value=percent(t.rate) testid="headline-rate"
                detail=format!("{} of {} graded reports · 95% {}", t.reports_reproduced, t.reports_graded, interval(t.rate_low, t.rate_high))/>
            <Stat label="Reproduced" value=thousands(t.reports_reproduced as i64) testid="headline-reproduced"
                detail=format!("{} counting attempts of {} graded · {} LLM {} (not counted)", t.attempts_counting, t.attempts_graded, t.attempts_lead, if t.attempts_lead == 1 { "lead" } else { "leads" })/>
            <Stat label="Cost per reproduction" value=usd(t.cost_per_reproduction_usd) testid="headline-cost-per-reproduction"
                detail=format!("all spend {} over {} reproductions", usd(Some(t.cost_total_usd)), t.reports_reproduced)/>
            <Stat label="Mean cost of a success" value=usd(t.cost_mean_success_usd) testid="headline-cost-mean-success"
                detail=match t.cost_ratio { Some(r) => format!("successful attempts only; all-in is {r:.1}× this"), None => "no successful attempt yet".to_owned() }/>
            <Stat label="Oracle coverage" value=percent(t.oracle_coverage) testid="headline-oracle-coverage"
                detail=format!("{} of {} reports · in-patch tests {} (reference 47.11%)", t.reports_with_oracle, t.reports, percent(t.in_patch_test_share))/>
            <Stat label="Attempts" value=thousands(t.attempts as i64) testid="headline-attempts"
                detail=format!("{} graded · {} errors · per-attempt success {}", t.attempts_graded, t.attempts_error, percent(t.attempt_rate))/>
        </div>
    }
}

#[component]
fn RouteChart(rows: Vec<FigureRow>) -> impl IntoView {
    let svg = rate_bars("Reproduction rate by route", &rows, crate::components::charts::chart_width(720), 340);
    view! {
        <figure class="chart" data-testid="chart-route">
            <div class="chart-svg" inner_html=svg></div>
            <figcaption>
                "Reports with at least one reproduced or confirmed attempt, over reports with a graded attempt, per route. Whiskers: Wilson 95% interval."
            </figcaption>
            <div class="table-wrap">
            <table class="chart-table">
                <caption class="visually-hidden">"The chart's numbers"</caption>
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
            </div>
        </figure>
    }
}
