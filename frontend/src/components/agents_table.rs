//! Agents: what a source states about an agent beside what its rows give,
//! with every discrepancy named (imported leaderboards contradict themselves).

use failpass_shared::api::import::AgentFigures;
use failpass_shared::format::{percent, usd};
use leptos::prelude::*;

use crate::api;
use crate::components::{Empty, ErrorPanel, Loading};

#[component]
pub fn AgentsTable() -> impl IntoView {
    let agents = crate::load::Load::new(api::agents);
    view! {
        <section class="panel agents">
            <h2>"Agents: stated against computed"</h2>
            <p class="hint">"Stated: from the source (a leaderboard entry); computed: from the attempts stored here, which is what failpass counts. All projects, all time: the filters do not narrow it."</p>
            <Transition fallback=|| view! { <Loading what="agents"/> }>
                {move || Suspend::new(async move {
                    match agents.get().await {
                        Err(e) => view! { <ErrorPanel error=e/> }.into_any(),
                        Ok(list) if list.is_empty() => view! { <Empty message="No agent records yet: import a leaderboard or send agent records."/> }.into_any(),
                        Ok(list) => view! { <AgentRows list=list/> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn AgentRows(list: Vec<AgentFigures>) -> impl IntoView {
    view! {
        <div class="table-wrap">
            <crate::components::AllColumns/>
            <table class="reports" data-testid="agents">
                <thead><tr>
                    <th scope="col">"Agent"</th><th scope="col" class="opt">"Source"</th>
                    <th scope="col" class="num">"Stated rate"</th><th scope="col" class="num">"Computed rate"</th>
                    <th scope="col" class="num opt">"Stated cost"</th><th scope="col" class="num opt">"Computed cost"</th>
                    <th scope="col">"Discrepancies"</th>
                </tr></thead>
                <tbody>
                    {list.into_iter().map(|a| {
                        let computed_rate = a.computed.as_ref().map(|c| {
                            let n = a.agent.stated_instances.unwrap_or(c.reports_graded);
                            let rate = if n > 0 { Some(c.reports_reproduced as f64 / n as f64) } else { None };
                            format!("{} ({} of {})", percent(rate), c.reports_reproduced, n)
                        }).unwrap_or_else(|| "—".into());
                        let computed_cost = usd(a.computed.as_ref().map(|c| c.cost_total_usd));
                        let flagged = !a.discrepancies.is_empty();
                        view! {
                            <tr data-testid="agent-row" data-agent=a.agent.name.clone() class=if flagged { "flagged" } else { "" }>
                                <th scope="row">{a.agent.name.clone()}</th>
                                <td class="opt">{a.agent.source.clone().unwrap_or_default()}</td>
                                <td class="num">{percent(a.agent.stated_rate)}</td>
                                <td class="num">{computed_rate}</td>
                                <td class="num opt">{usd(a.agent.stated_cost_usd)}</td>
                                <td class="num opt">{computed_cost}</td>
                                <td data-testid="agent-discrepancies">
                                    {if flagged {
                                        view! { <ul>{a.discrepancies.into_iter().map(|d| view! { <li>{d}</li> }).collect_view()}</ul> }.into_any()
                                    } else {
                                        view! { <span>"agree"</span> }.into_any()
                                    }}
                                </td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}
