//! Pages whose full versions come next; each says what it will show and
//! links the API figures that already exist for it.

use leptos::prelude::*;

#[component]
fn Planned(title: &'static str, what: &'static str, links: Vec<(&'static str, &'static str)>) -> impl IntoView {
    view! {
        <section class="panel planned">
            <h1>{title}</h1>
            <p>{what}</p>
            <p>"This page is being built. The figures behind it are already in the API:"</p>
            <ul>
                {links.into_iter().map(|(href, label)| view! { <li><a href=href>{label}</a></li> }).collect_view()}
            </ul>
        </section>
    }
}

#[component]
pub fn RegimesPage() -> impl IntoView {
    view! {
        <Planned title="Regimes"
            what="Reproduction rate by route, agent and model, harness against patch logic, vague against clear, and reports filed before against after each model's training cutoff."
            links=vec![("/api/v1/figures?group_by=agent", "rate by agent"), ("/api/v1/figures?group_by=model", "rate by model"),
                       ("/api/v1/figures?group_by=category", "harness against patch logic"), ("/api/v1/figures?group_by=cutoff", "contamination split")]/>
        <super::agents::AgentsTable/>
    }
}

#[component]
pub fn CostPage() -> impl IntoView {
    view! { <Planned title="Cost & time"
        what="Cost and wall time per attempt, cost per reproduction including failures against successes only, and spend over time."
        links=vec![("/api/v1/figures?group_by=agent", "cost per reproduction by agent"), ("/api/v1/figures?group_by=week", "spend by week")]/> }
}

