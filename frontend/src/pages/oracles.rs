//! Oracles: coverage by kind and source, the in-patch share against the
//! published reference, authoring time, failure causes and failure
//! signature groups. The project filter lives in the URL.

use failpass_shared::api::oracles::{OracleSummary, Share};
use failpass_shared::format::{interval, percent, thousands};
use leptos::prelude::*;

use crate::api::{self, ClientError};
use crate::components::figures::{ChartSvg, chart_src};
use crate::components::{Empty, ErrorPanel, Loading, ProjectSelect, Stat};
use crate::router::query_pairs;

#[component]
pub fn OraclesPage() -> impl IntoView {
    let pairs = query_pairs();
    let project = Memo::new(move |_| pairs.with(|p| p.iter().find(|(k, _)| k == "project").map(|(_, v)| v.clone())));
    let data = crate::load::Load::new(move || {
        let project = project.get();
        async move {
            let summary = api::oracles(project.as_deref()).await?;
            let groups = api::signatures(project.as_deref()).await?;
            Ok::<_, ClientError>((summary, groups))
        }
    });
    let projects = crate::load::Load::new(api::projects);
    let on_project = move |slug: String| {
        let q = failpass_shared::api::query::to_query_string(&[("project", slug.clone())]);
        crate::router::navigate(&if slug.is_empty() { "/oracles".to_owned() } else { format!("/oracles?{q}") });
    };
    view! {
        <section class="oracles">
            <div class="page-head">
                <h1>"Oracles"</h1>
                <Suspense fallback=|| ()>
                    {move || {
                        let on_project = on_project;
                        Suspend::new(async move {
                            match projects.get().await {
                                Ok(list) => view! { <ProjectSelect projects=list selected=project.get_untracked() on_change=on_project/> }.into_any(),
                                Err(_) => ().into_any(),
                            }
                        })
                    }}
                </Suspense>
            </div>
            <Transition fallback=|| view! { <Loading what="oracle figures"/> }>
                {move || Suspend::new(async move {
                    match data.get().await {
                        Err(e) => view! { <ErrorPanel error=e/> }.into_any(),
                        Ok((s, _)) if s.reports == 0 => view! { <Empty message="No report yet in this view."/> }.into_any(),
                        Ok((s, groups)) => view! { <OracleView s=s groups=groups project=project.get_untracked()/> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

fn share_detail(s: &Share, what: &str) -> String {
    format!("{} of {} {what}; 95% {}", thousands(s.count), thousands(s.of), interval(s.low, s.high))
}

#[component]
fn OracleView(
    s: OracleSummary,
    groups: Vec<failpass_shared::api::jobs::SignatureGroup>,
    project: Option<String>,
) -> impl IntoView {
    let chart = |name: &str| chart_src(name, project.iter().map(|p| ("project", p.clone())).collect(), 900);
    let reference = format!("published reference {:.2}% (AgentBug-Smith)", s.in_patch_reference * 100.0);
    view! {
        <section class="stats" aria-label="Oracle figures">
            <Stat label="Oracle coverage" value=percent(s.coverage.rate) detail=share_detail(&s.coverage, "reports have a deterministic oracle") testid="oracle-coverage"/>
            <Stat label="In-patch test share" value=percent(s.in_patch.rate) detail=format!("{}; {reference}", share_detail(&s.in_patch, "reports")) testid="oracle-in-patch"/>
            <Stat label="Authoring minutes" value=format!("{:.0}", s.authoring_minutes_total)
                detail=format!("total over {} authored oracles; median {}", s.authored_oracles,
                    s.authoring_minutes_median.map(|m| format!("{m:.1} min")).unwrap_or_else(|| "—".into())) testid="oracle-minutes"/>
            <Stat label="LLM-verdict precision" value=percent(s.llm_precision.rate) testid="oracle-llm-precision"
                detail=match s.llm_precision.rate {
                    Some(p) => format!("{} of {} LLM leads later graded deterministically were reproduced; 95% {}; false-positive rate {}",
                        s.llm_precision.count, s.llm_precision.of, interval(s.llm_precision.low, s.llm_precision.high), percent(Some(1.0 - p))),
                    None => "no LLM lead has been graded deterministically yet".to_owned(),
                }/>
        </section>
        // Rendered and escaped by the server: authored oracles by category and route.
        <div inner_html=s.authoring_html.clone()></div>
        <section class="panel">
            <h2>"Oracle kinds"</h2>
            <div data-testid="chart-oracle-kinds"><ChartSvg src=chart("oracle-kinds")/></div>
            <table class="chart-table" data-testid="oracle-kinds">
                <thead><tr><th scope="col">"Kind"</th><th scope="col" class="num">"Reports"</th><th scope="col" class="num">"Share"</th></tr></thead>
                <tbody>
                    {s.by_kind.iter().map(|k| view! {
                        <tr data-kind=k.kind.as_str()><th scope="row">{k.kind.as_str().replace('_', " ")}</th><td class="num">{thousands(k.reports)}</td>
                            <td class="num">{percent(Some(k.reports as f64 / s.reports.max(1) as f64))}</td></tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
        <section class="panel">
            <h2>"Deterministic oracles by source"</h2>
            <div data-testid="chart-oracle-sources"><ChartSvg src=chart("oracle-sources")/></div>
            <table class="chart-table" data-testid="oracle-sources">
                <thead><tr><th scope="col">"Source"</th><th scope="col" class="num">"Reports"</th></tr></thead>
                <tbody>
                    {s.by_source.iter().map(|k| view! {
                        <tr><th scope="row">{k.source.map(|s| s.as_str().replace('_', " ")).unwrap_or_else(|| "not stated".into())}</th><td class="num">{thousands(k.reports)}</td></tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
        <section class="panel">
            <h2>"Failure causes"</h2>
            {if s.failure_causes.is_empty() {
                view! { <Empty message="No failed reproduction attempt has a cause recorded."/> }.into_any()
            } else {
                view! {
                    <table class="chart-table" data-testid="failure-causes">
                        <thead><tr><th scope="col">"Cause"</th><th scope="col" class="num">"Attempts"</th></tr></thead>
                        <tbody>
                            {s.failure_causes.iter().map(|c| view! {
                                <tr><th scope="row">{c.cause.as_str().replace('_', " ")}</th><td class="num">{thousands(c.attempts)}</td></tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
        </section>
        <section class="panel">
            <h2>"Failure signature groups"</h2>
            {if groups.is_empty() {
                view! { <Empty message="No graded run showed a failure signature yet."/> }.into_any()
            } else {
                view! {
                    <div class="table-wrap"><table class="chart-table" data-testid="signature-groups">
                        <thead><tr><th scope="col">"Signature (normalised)"</th><th scope="col" class="num">"Attempts"</th>
                            <th scope="col" class="num">"Reports"</th><th scope="col" class="num">"Reproduced"</th><th scope="col">"First reports"</th></tr></thead>
                        <tbody>
                            {groups.into_iter().map(|g| view! {
                                <tr><td><code>{g.signature}</code></td><td class="num">{g.attempts}</td><td class="num">{g.reports}</td><td class="num">{g.reproduced}</td>
                                    <td>{g.report_ids.into_iter().zip(g.report_numbers).map(|(id, n)| view! { <a href=format!("/reports/{id}")>{format!("#{n}")}</a>" " }).collect_view()}</td></tr>
                            }).collect_view()}
                        </tbody>
                    </table></div>
                }.into_any()
            }}
        </section>
    }
}
