//! One report: its routing explanation, oracle and attempts.

use failpass_shared::api::attempts::AttemptListQuery;
use failpass_shared::api::reports::Report;
use failpass_shared::format::{duration_secs, usd};
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::api::{self, ClientError};
use crate::components::{Badge, Empty, ErrorPanel, Loading};

#[component]
pub fn ReportPage() -> impl IntoView {
    let params = use_params_map();
    let id = Memo::new(move |_| params.with(|p| p.get("id").and_then(|v| v.parse::<i64>().ok())));
    let data = LocalResource::new(move || {
        let id = id.get();
        async move {
            let id = id.ok_or_else(|| ClientError::Input("the address has no valid report id".into()))?;
            let report = api::report(id).await?;
            let attempts = api::attempts(&AttemptListQuery { report_id: Some(id), limit: 200, ..Default::default() }).await?;
            Ok::<_, ClientError>((report, attempts.items))
        }
    });
    view! {
        <Transition fallback=|| view! { <Loading what="the report"/> }>
            {move || Suspend::new(async move {
                match data.await {
                    Err(e) => view! { <ErrorPanel error=e/> }.into_any(),
                    Ok((report, attempts)) => view! { <ReportView report=report attempts=attempts/> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn ReportView(report: Report, attempts: Vec<failpass_shared::api::attempts::Attempt>) -> impl IntoView {
    let s = report.summary.clone();
    view! {
        <article class="report">
            <p class="crumbs"><a href="/queue">"Triage queue"</a>" / "{s.project.clone()}" #"{s.external_id.clone()}</p>
            <h1>{s.title.clone()}</h1>
            <p class="meta">
                <Badge kind=s.route.as_str() text=s.route.as_str().replace('_', " ")/>
                {s.vague.then(|| view! { <Badge kind="flag" text="vague"/> })}
                {s.llm_only.then(|| view! { <Badge kind="flag" text="llm only"/> })}
                " status: "{s.status.as_str().replace('_', " ")}
                " · category: "{s.category.as_str().replace('_', " ")}
                " · filed "{s.filed_at.format("%Y-%m-%d").to_string()}
                // Only web addresses become links; anything else could run script.
                {s.url.clone().filter(|u| u.starts_with("https://") || u.starts_with("http://"))
                    .map(|u| view! { " · " <a href=u rel="noopener noreferrer">"original"</a> })}
            </p>
            <section class="panel">
                <h2>"Why this route"</h2>
                <table class="explanation" data-testid="explanation">
                    <thead><tr><th scope="col">"Rule"</th><th scope="col">"Fired"</th><th scope="col">"Evidence"</th></tr></thead>
                    <tbody>
                        {report.explanation.iter().map(|r| view! {
                            <tr class=if r.fired { "fired" } else { "" }>
                                <th scope="row">{r.rule.replace('_', " ")}</th>
                                <td>{if r.fired { "yes" } else { "no" }}</td>
                                <td>{r.evidence.clone()}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </section>
            <section class="panel">
                <h2>"Oracle"</h2>
                {match report.oracle.clone() {
                    None => view! { <p>"None: agent output on this report is a hypothesis until an oracle exists."</p> }.into_any(),
                    Some(o) => view! {
                        <dl class="oracle">
                            <dt>"Kind"</dt><dd>{o.kind.as_str().replace('_', " ")}</dd>
                            <dt>"Source"</dt><dd>{o.source.map(|s| s.as_str().replace('_', " ")).unwrap_or_else(|| "—".into())}</dd>
                            {o.signature.map(|sig| view! { <dt>"Signature"</dt><dd><code>{sig}</code></dd> })}
                            {(!o.fail_to_pass.is_empty()).then(|| view! { <dt>"Fail to pass"</dt><dd><code>{o.fail_to_pass.join(", ")}</code></dd> })}
                            {(!o.pass_to_pass.is_empty()).then(|| view! { <dt>"Pass to pass"</dt><dd><code>{o.pass_to_pass.join(", ")}</code></dd> })}
                        </dl>
                    }.into_any(),
                }}
            </section>
            <section class="panel">
                <h2>"Report"</h2>
                <pre class="body">{report.body.clone()}</pre>
                {report.environment.clone().map(|e| view! { <p class="env">"Environment: "{e}</p> })}
            </section>
            <section class="panel">
                <h2>"Attempts"</h2>
                {if attempts.is_empty() {
                    view! { <Empty message="No attempt yet."/> }.into_any()
                } else {
                    view! {
                        <div class="table-wrap">
                        <table class="attempts" data-testid="attempts">
                            <thead><tr>
                                <th scope="col">"Agent"</th><th scope="col">"Model"</th><th scope="col">"Goal"</th>
                                <th scope="col">"Verdict"</th><th scope="col">"Source"</th><th scope="col">"Review"</th>
                                <th scope="col">"Counts"</th><th scope="col" class="num">"Cost"</th><th scope="col" class="num">"Wall time"</th>
                            </tr></thead>
                            <tbody>
                                {attempts.into_iter().map(|a| view! {
                                    <tr>
                                        <td>{a.agent}</td>
                                        <td>{a.model.unwrap_or_default()}</td>
                                        <td>{a.goal.as_str()}</td>
                                        <td><Badge kind=a.verdict.as_str() text=a.verdict.as_str().replace('_', " ")/></td>
                                        <td>{a.verdict_source.as_str()}</td>
                                        <td>{a.review.map(|r| r.as_str()).unwrap_or("—")}</td>
                                        <td>{if a.counts { "yes" } else { "no" }}</td>
                                        <td class="num">{usd(Some(a.cost_usd))}</td>
                                        <td class="num">{duration_secs(a.wall_seconds)}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                        </div>
                    }.into_any()
                }}
            </section>
        </article>
    }
}
