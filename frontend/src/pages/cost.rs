//! Cost and time: the spread of cost and wall time per attempt, cost per
//! reproduction both ways per agent, and cumulative spend.

use failpass_shared::api::figures::{DistributionQuery, DistributionResponse, FigureRow, FiguresQuery, Metric};
use failpass_shared::format::{duration_secs, usd};
use failpass_shared::model::GroupBy;
use leptos::prelude::*;

use super::{Figure, FigurePage};
use crate::api::{self, ClientError};
use crate::components::charts::{cdf_chart, chart_width, grouped_bars, histogram_chart, line_chart};
use crate::components::Stat;

#[derive(Clone)]
struct Views {
    total: Option<FigureRow>,
    agents: Vec<FigureRow>,
    weeks: Vec<FigureRow>,
    cost: DistributionResponse,
    cost_by_agent: DistributionResponse,
    wall: DistributionResponse,
    wall_by_agent: DistributionResponse,
    /// Every agent, sorted: an agent's place here is its style in the charts.
    all_agents: Vec<String>,
}

async fn fetch(q: FiguresQuery) -> Result<Views, ClientError> {
    let by = |g: GroupBy| FiguresQuery { group_by: g, ..q.clone() };
    let dist = |metric: Metric, g: GroupBy| DistributionQuery { metric, figures: by(g) };
    Ok(Views {
        total: api::figures(&by(GroupBy::None)).await?.rows.into_iter().next(),
        agents: api::figures(&by(GroupBy::Agent)).await?.rows,
        weeks: api::figures(&by(GroupBy::Week)).await?.rows,
        cost: api::distributions(&dist(Metric::CostUsd, GroupBy::None)).await?,
        cost_by_agent: api::distributions(&dist(Metric::CostUsd, GroupBy::Agent)).await?,
        wall: api::distributions(&dist(Metric::WallSeconds, GroupBy::None)).await?,
        wall_by_agent: api::distributions(&dist(Metric::WallSeconds, GroupBy::Agent)).await?,
        all_agents: api::facets().await?.agents,
    })
}

#[component]
pub fn CostPage() -> impl IntoView {
    let page = FigurePage {
        title: "Cost & time",
        path: "/cost",
        what: "cost and time",
        empty: "No attempts in this view. Widen the filters.",
        fetch,
        body,
    };
    view! { <section class="cost">{page.view()}</section> }
}

fn bins(d: &DistributionResponse) -> Vec<(f64, f64, u64)> {
    d.groups.first().map(|g| g.histogram.iter().map(|b| (b.low, b.high, b.count)).collect()).unwrap_or_default()
}

fn cdfs(d: &DistributionResponse, agents: &[String]) -> Vec<(String, usize, Vec<(f64, f64)>)> {
    d.groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let style = agents.iter().position(|a| *a == g.key).unwrap_or(agents.len() + i);
            (format!("{} (n={})", g.key, g.n), style, g.cdf.clone())
        })
        .collect()
}

fn body(v: Views) -> Option<AnyView> {
    let t = v.total.clone().filter(|t| t.attempts > 0)?;
    let width = chart_width(560);
    let cost_all = v.cost.groups.first().cloned();
    let wall_all = v.wall.groups.first().cloned();
    let labels: Vec<String> = v.agents.iter().map(|r| r.key.clone()).collect();
    let both = [
        ("All spend / reproductions", v.agents.iter().map(|r| r.cost_per_reproduction_usd.unwrap_or(0.0)).collect()),
        ("Mean of successful attempts", v.agents.iter().map(|r| r.cost_mean_success_usd.unwrap_or(0.0)).collect()),
    ];
    let both_svg = grouped_bars("Cost per reproduction, two ways", "Agent", "USD", &labels, &both, &|x| format!("${x:.2}"), chart_width(900), 340);
    let mut running = 0.0;
    let cumulative: Vec<f64> = v.weeks.iter().map(|w| { running += w.cost_total_usd; running }).collect();
    let week_labels: Vec<String> = v.weeks.iter().map(|w| w.key.clone()).collect();
    let spend_svg = line_chart("Cumulative spend", "Week starting (UTC)", "USD", &week_labels, &cumulative, &|x| format!("${x:.0}"), chart_width(900), 320);
    let wall_by_agent = v.wall_by_agent.groups.clone();
    let agents = v.agents.clone();
    let spend_caption = format!("Spend on attempts started each week, summed up: {} in all over {} weeks.", usd(cumulative.last().copied()), v.weeks.len());
    let page = view! {
        <div class="stats" data-testid="cost-headline">
            <Stat label="Cost per reproduction" value=usd(t.cost_per_reproduction_usd) testid="cost-per-reproduction"
                detail=format!("all spend {} (failed and errored attempts included) over {} reproduced reports", usd(Some(t.cost_total_usd)), t.reports_reproduced)/>
            <Stat label="Mean cost of a success" value=usd(t.cost_mean_success_usd) testid="cost-mean-success"
                detail=match t.cost_ratio { Some(r) => format!("{} successful attempts alone; the all-in figure is {r:.1}× this", t.attempts_counting), None => "no successful attempt yet".into() }/>
            <Stat label="Cost per attempt" value=usd(cost_all.as_ref().and_then(|c| c.median)) testid="cost-median"
                detail=format!("median of n={} · mean {} · p90 {}", cost_all.as_ref().map_or(0, |c| c.n), usd(cost_all.as_ref().and_then(|c| c.mean)), usd(cost_all.as_ref().and_then(|c| c.p90)))/>
            <Stat label="Wall time per attempt" value=duration_secs(wall_all.as_ref().and_then(|c| c.median)) testid="wall-median"
                detail=format!("median of n={} with a time recorded · p90 {}", wall_all.as_ref().map_or(0, |c| c.n), duration_secs(wall_all.as_ref().and_then(|c| c.p90)))/>
        </div>
        <div class="chart-pair">
            <Figure testid="chart-cost-histogram" svg=histogram_chart("Cost per attempt", "Cost per attempt (USD)", &bins(&v.cost), true, width, 320)
                caption="How many attempts cost how much, over 20 equal bins.">
            </Figure>
            <Figure testid="chart-cost-cdf" svg=cdf_chart("Cost per attempt, by agent (CDF)", "Cost per attempt (USD)", &cdfs(&v.cost_by_agent, &v.all_agents), true, width, 320)
                caption="Share of each agent's attempts costing at most the amount on the x axis.">
            </Figure>
        </div>
        <div class="chart-pair">
            <Figure testid="chart-wall-histogram" svg=histogram_chart("Wall time per attempt", "Wall time per attempt (seconds)", &bins(&v.wall), false, width, 320)
                caption="How many attempts took how long, over 20 equal bins.">
            </Figure>
            <Figure testid="chart-wall-cdf" svg=cdf_chart("Wall time per attempt, by agent (CDF)", "Wall time per attempt (seconds)", &cdfs(&v.wall_by_agent, &v.all_agents), false, width, 320)
                caption="Share of each agent's attempts finished within the time on the x axis.">
            </Figure>
        </div>
        <Figure testid="chart-cost-both-ways" svg=both_svg
            caption="Per agent: all spend (failed and errored attempts included) over reports reproduced, beside the mean cost of the successful attempts alone, the figure papers usually quote. Reference: LTGDroid about $0.27 per successful reproduction.">
            <table class="chart-table" data-testid="cost-table">
                <thead><tr>
                    <th scope="col">"Agent"</th><th scope="col" class="num">"Attempts"</th><th scope="col" class="num">"Spend"</th>
                    <th scope="col" class="num">"Reproduced"</th><th scope="col" class="num">"Per reproduction"</th>
                    <th scope="col" class="num">"Mean success"</th><th scope="col" class="num">"Ratio"</th>
                    <th scope="col" class="num">"Median wall"</th><th scope="col" class="num">"p90 wall"</th>
                </tr></thead>
                <tbody>
                    {agents.iter().map(|r| {
                        let wall = wall_by_agent.iter().find(|g| g.key == r.key);
                        view! {
                            <tr data-testid="cost-row" data-agent=r.key.clone()>
                                <th scope="row">{r.key.clone()}</th><td class="num">{r.attempts}</td>
                                <td class="num">{usd(Some(r.cost_total_usd))}</td><td class="num">{r.reports_reproduced}</td>
                                <td class="num" data-testid="cost-per-reproduction-cell">{usd(r.cost_per_reproduction_usd)}</td>
                                <td class="num">{usd(r.cost_mean_success_usd)}</td>
                                <td class="num">{r.cost_ratio.map(|x| format!("{x:.1}×")).unwrap_or_else(|| "—".into())}</td>
                                <td class="num">{duration_secs(wall.and_then(|w| w.median))}</td>
                                <td class="num">{duration_secs(wall.and_then(|w| w.p90))}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </Figure>
        <Figure testid="chart-spend" svg=spend_svg
            caption=spend_caption>
        </Figure>
    }
    .into_any();
    Some(page)
}
