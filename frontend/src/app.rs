//! Routes and the page frame.

use leptos::prelude::*;
use leptos_router::components::{Route, Router, Routes, A};
use leptos_router::path;

use crate::pages::overview::OverviewPage;
use crate::pages::oracles::OraclesPage;
use crate::pages::planned::{CostPage, RegimesPage};
use crate::pages::runners::RunnersPage;
use crate::pages::queue::QueuePage;
use crate::pages::report::ReportPage;

#[component]
pub fn App() -> impl IntoView {
    view! {
        <Router>
            <a class="skip-link" href="#main">"Skip to content"</a>
            <header class="topbar">
                <a class="brand" href="/">"failpass"</a>
                <nav class="nav" aria-label="Main">
                    <A href="/" exact=true>"Overview"</A>
                    <A href="/queue">"Triage queue"</A>
                    <A href="/regimes">"Regimes"</A>
                    <A href="/cost">"Cost & time"</A>
                    <A href="/oracles">"Oracles"</A>
                    <A href="/runners">"Runners"</A>
                </nav>
            </header>
            <main class="page" id="main" tabindex="-1">
                <Routes fallback=|| view! { <NotFound/> }>
                    <Route path=path!("/") view=OverviewPage/>
                    <Route path=path!("/queue") view=QueuePage/>
                    <Route path=path!("/reports/:id") view=ReportPage/>
                    <Route path=path!("/regimes") view=RegimesPage/>
                    <Route path=path!("/cost") view=CostPage/>
                    <Route path=path!("/oracles") view=OraclesPage/>
                    <Route path=path!("/runners") view=RunnersPage/>
                </Routes>
            </main>
        </Router>
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
