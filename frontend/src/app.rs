//! Routes and the page frame.

use leptos::prelude::*;

use crate::components::figures::SHARED_FILTERS;
use crate::me::MeSignal;
use crate::pages::cost::CostPage;
use crate::pages::oracles::OraclesPage;
use crate::pages::overview::OverviewPage;
use crate::pages::queue::QueuePage;
use crate::pages::regimes::RegimesPage;
use crate::pages::report::ReportPage;
use crate::pages::runners::RunnersPage;
use crate::router::{provide_router, use_path, use_query};

/// Each page, and which of the shared filters it understands (and so keeps).
const NAV: &[(&str, &str, &[&str])] = &[
    ("/", "Overview", SHARED_FILTERS),
    ("/queue", "Triage queue", crate::components::figures::QUEUE_FILTERS),
    ("/regimes", "Regimes", SHARED_FILTERS),
    ("/cost", "Cost & time", SHARED_FILTERS),
    ("/oracles", "Oracles", &["project"]),
    ("/runners", "Runners", &[]),
];

#[component]
pub fn App() -> impl IntoView {
    provide_router();
    let path = use_path();
    let query = use_query();
    let me: MeSignal = RwSignal::new(Default::default());
    provide_context(me);
    leptos::task::spawn_local(async move {
        if let Ok(m) = crate::api::me().await {
            me.set(m);
        }
    });
    // The filters pages share travel with the navigation links, so a team
    // lead who picked a project and a window keeps them page to page.
    let carried = move |keys: &[&str]| {
        query.with(|q| {
            let kept: Vec<(&str, String)> =
                q.iter().filter(|(k, _)| keys.contains(&k.as_str())).map(|(k, v)| (k.as_str(), v.clone())).collect();
            failpass_shared::api::query::to_query_string(&kept)
        })
    };
    // The tab says which page this is (history and bookmarks too).
    Effect::new(move |_| {
        let title = path.with(|p| {
            NAV.iter()
                .find(|(href, _, _)| href == p)
                .map(|(_, label, _)| *label)
                .or_else(|| p.starts_with("/reports/").then_some("Report"))
                .unwrap_or("Not found")
        });
        if let Some(doc) = web_sys::window().and_then(|w| w.document()) {
            doc.set_title(&format!("{title} · failpass"));
        }
    });
    let page = move || {
        let p = path.get();
        match p.as_str() {
            "/" => OverviewPage().into_any(),
            "/queue" => QueuePage().into_any(),
            "/regimes" => RegimesPage().into_any(),
            "/cost" => CostPage().into_any(),
            "/oracles" => OraclesPage().into_any(),
            "/runners" => RunnersPage().into_any(),
            p if p.starts_with("/reports/") => ReportPage().into_any(),
            _ => NotFound().into_any(),
        }
    };
    view! {
        <a class="skip-link" href="#main">"Skip to content"</a>
        <header class="topbar">
            <a class="brand" href="/">"failpass"</a>
            <nav class="nav" aria-label="Main">
                {NAV
                    .iter()
                    .map(|&(href, label, keys)| {
                        let current = move || {
                            path.with(|p| p == href || (href == "/queue" && p.starts_with("/reports/")))
                        };
                        let link = move || {
                            let q = carried(keys);
                            if q.is_empty() { href.to_owned() } else { format!("{href}?{q}") }
                        };
                        view! {
                            <a href=link aria-current=move || current().then_some("page")>{label}</a>
                        }
                    })
                    .collect_view()}
            </nav>
            <div class="account">
                <a href="/status" data-testid="status-link">"Status pages"</a>
                <a href="/docs/api" data-testid="api-link">"API"</a>
                {move || me.with(|m| match &m.user {
                    Some(name) => view! {
                        <span class="account-name" data-testid="signed-in-as">{name.clone()}{m.admin.then_some(" (admin)")}</span>
                        {m.maintains_any().then(|| view! {
                            <a href="/inbox" data-testid="inbox-link">"Inbox " <span class="badge" data-testid="inbox-count">{m.inbox}</span></a>
                            <a href="/settings/projects" data-testid="setup-link">"Set-up"</a>
                        })}
                        <form class="inline" method="post" action="/signout"><button class="link-button" type="submit">"Sign out"</button></form>
                    }.into_any(),
                    None => view! {
                        <a data-testid="sign-in" href=move || format!("/signin?{}", failpass_shared::api::query::to_query_string(&[("next", path.get())]))>"Sign in"</a>
                    }.into_any(),
                })}
            </div>
        </header>
        <main class="page" id="main" tabindex="-1">{page}</main>
    }
}

#[component]
fn NotFound() -> impl IntoView {
    view! {
        <section class="panel">
            <h1>"Page not found"</h1>
            <p>"There is no page at this address. " <a href="/">"Back to the overview"</a>"."</p>
        </section>
    }
}
