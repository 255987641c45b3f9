//! Cost and time: the spread of cost and wall time per attempt, cost per
//! reproduction both ways per agent, and cumulative spend.

use failpass_shared::api::figures::{DistributionQuery, DistributionResponse, FigureRow, FiguresQuery, Metric};
use failpass_shared::format::{minutes, spend, usd};
use failpass_shared::model::GroupBy;
use leptos::prelude::*;

use crate::api::{self, ClientError};
use crate::components::Stat;
use crate::components::figures::{Figure, FigurePage, chart_src};

#[derive(Clone)]
struct Views {
    total: Option<FigureRow>,
    agents: Vec<FigureRow>,
    cost: DistributionResponse,
    wall: DistributionResponse,
    wall_by_agent: DistributionResponse,
    /// The filters, for the charts the server draws.
    query: FiguresQuery,
}

async fn fetch(q: FiguresQuery) -> Result<Views, ClientError> {
    let by = |g: GroupBy| FiguresQuery { group_by: g, ..q.clone() };
    let dist = |metric: Metric, g: GroupBy| DistributionQuery { metric, figures: by(g) };
    Ok(Views {
        total: api::figures(&by(GroupBy::None)).await?.rows.into_iter().next(),
        agents: api::figures(&by(GroupBy::Agent)).await?.rows,
        cost: api::distributions(&dist(Metric::CostUsd, GroupBy::None)).await?,
        wall: api::distributions(&dist(Metric::WallSeconds, GroupBy::None)).await?,
        wall_by_agent: api::distributions(&dist(Metric::WallSeconds, GroupBy::Agent)).await?,
        query: q,
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
        export_by: "agent",
    };
    view! { <section class="cost">{page.view()}</section> }
}

fn body(v: Views) -> Option<AnyView> {
    let t = v.total.clone().filter(|t| t.attempts > 0)?;
    let cost_all = v.cost.groups.first().cloned();
    let wall_all = v.wall.groups.first().cloned();
    let chart = |name: &str, metric: Option<Metric>, g: GroupBy, preferred: u32| {
        let q = FiguresQuery { group_by: g, ..v.query.clone() };
        let pairs = match metric {
            Some(metric) => DistributionQuery { metric, figures: q }.pairs(),
            None => q.pairs(),
        };
        chart_src(name, pairs, preferred)
    };
    let wall_by_agent = v.wall_by_agent.groups.clone();
    let agents = v.agents.clone();
    let spend_caption = format!(
        "Spend on attempts started each week (bars), and in all (line): {}.",
        spend(t.cost_total_usd, t.attempts, t.attempts_without_cost)
    );
    let page = view! {
        <div class="stats" data-testid="cost-headline">
            <Stat label="Cost per reproduction" value=usd(t.cost_per_reproduction_usd) testid="cost-per-reproduction"
                detail=failpass_shared::format::spend_detail(t.cost_total_usd, t.attempts, t.reports_reproduced, t.attempts_without_cost)/>
            <Stat label="Mean cost of a success" value=usd(t.cost_mean_success_usd) testid="cost-mean-success"
                detail=failpass_shared::format::success_cost_detail(t.attempts_counting, t.cost_mean_success_usd, t.cost_ratio)/>
            <Stat label="Cost per attempt" value=usd(cost_all.as_ref().and_then(|c| c.median)) testid="cost-median"
                detail=format!("median of n={} · mean {} · p90 {}", cost_all.as_ref().map_or(0, |c| c.n), usd(cost_all.as_ref().and_then(|c| c.mean)), usd(cost_all.as_ref().and_then(|c| c.p90)))/>
            <Stat label="Wall time per attempt" value=minutes(wall_all.as_ref().and_then(|c| c.median)) testid="wall-median"
                detail=format!("median of n={} with a time recorded · p90 {}", wall_all.as_ref().map_or(0, |c| c.n), minutes(wall_all.as_ref().and_then(|c| c.p90)))/>
        </div>
        <div class="chart-pair">
            <Figure testid="chart-cost-histogram" chart=chart("histogram", Some(Metric::CostUsd), GroupBy::None, 560)
                caption="How many attempts cost how much, over 20 equal bins.">
            </Figure>
            <Figure testid="chart-cost-cdf" chart=chart("cdf", Some(Metric::CostUsd), GroupBy::Agent, 560)
                caption="Share of each agent's attempts costing at most the amount on the x axis.">
            </Figure>
        </div>
        <div class="chart-pair">
            <Figure testid="chart-wall-histogram" chart=chart("histogram", Some(Metric::WallSeconds), GroupBy::None, 560)
                caption="How many attempts took how long, over 20 equal bins.">
            </Figure>
            <Figure testid="chart-wall-cdf" chart=chart("cdf", Some(Metric::WallSeconds), GroupBy::Agent, 560)
                caption="Share of each agent's attempts finished within the time on the x axis.">
            </Figure>
        </div>
        <Figure testid="chart-cost-both-ways" chart=chart("cost-both-ways", None, GroupBy::Agent, 900)
            caption="Per agent: all spend (failed attempts too) over reports reproduced, beside the mean cost of successes alone (what papers quote). Reference: LTGDroid about $0.27 per success.">
            <crate::components::AllColumns/>
            <table class="chart-table" data-testid="cost-table">
                <thead><tr>
                    <th scope="col">"Agent"</th><th scope="col" class="num opt">"Attempts"</th><th scope="col" class="num opt">"Spend"</th>
                    <th scope="col" class="num opt">"Reproduced"</th><th scope="col" class="num">"Per reproduction"</th>
                    <th scope="col" class="num">"Mean success"</th><th scope="col" class="num opt">"Ratio"</th>
                    <th scope="col" class="num">"Median wall"</th><th scope="col" class="num opt">"p90 wall"</th>
                </tr></thead>
                <tbody>
                    {agents.iter().map(|r| {
                        let wall = wall_by_agent.iter().find(|g| g.key == r.key);
                        view! {
                            <tr data-testid="cost-row" data-agent=r.key.clone()>
                                <th scope="row">{r.key.clone()}</th><td class="num opt">{r.attempts}</td>
                                <td class="num opt">{spend(r.cost_total_usd, r.attempts, r.attempts_without_cost)}</td><td class="num opt">{r.reports_reproduced}</td>
                                <td class="num" data-testid="cost-per-reproduction-cell">{usd(r.cost_per_reproduction_usd)}</td>
                                <td class="num">{usd(r.cost_mean_success_usd)}</td>
                                <td class="num opt">{r.cost_ratio.map(|x| format!("{x:.1}×")).unwrap_or_else(|| "—".into())}</td>
                                <td class="num">{minutes(wall.and_then(|w| w.median))}</td>
                                <td class="num opt">{minutes(wall.and_then(|w| w.p90))}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </Figure>
        <div class="chart-pair">
            <Figure testid="chart-spend" chart=chart("spend", None, GroupBy::Week, 560)
                caption=spend_caption>
            </Figure>
            <Figure testid="chart-spend-month" chart=chart("spend", None, GroupBy::Month, 560)
                caption="Spend on attempts started each month (bars), and in all (line).">
            </Figure>
        </div>
    }
    .into_any();
    Some(page)
}
