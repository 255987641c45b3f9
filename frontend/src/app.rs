//! Routes, and keeping the server's header in step with the address.

use leptos::prelude::*;

use crate::me::MeSignal;
use crate::pages::cost::CostPage;
use crate::pages::overview::OverviewPage;
use crate::pages::queue::QueuePage;
use crate::pages::regimes::RegimesPage;
use crate::pages::report::ReportPage;
use crate::router::{provide_router, use_path, use_query};
use failpass_shared::nav;
use wasm_bindgen::JsCast;

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
    // The header is the server's (the same on every page); as the address
    // changes here, its page links keep the filters their page understands
    // (a team lead's project and window travel page to page), the current
    // one is marked, and the tab is named after it.
    Effect::new(move |_| {
        let p = path.get();
        let q = query.get();
        let Some(doc) = web_sys::window().and_then(|w| w.document()) else { return };
        let mut title = "Not found".to_owned();
        if let Ok(links) = doc.query_selector_all(".topbar a[data-page]") {
            for i in 0..links.length() {
                let Some(a) = links.item(i).and_then(|n| n.dyn_into::<web_sys::Element>().ok()) else { continue };
                let page = a.get_attribute("data-page").unwrap_or_default();
                let keep = a.get_attribute("data-keep").unwrap_or_default();
                let _ = a.set_attribute("href", &nav::link(&page, &keep, &q));
                if nav::is_current(&page, &p) {
                    let _ = a.set_attribute("aria-current", "page");
                    title =
                        if p.starts_with("/reports/") { "Report".into() } else { a.text_content().unwrap_or_default() };
                } else {
                    let _ = a.remove_attribute("aria-current");
                }
            }
        }
        if let Ok(Some(a)) = doc.query_selector(".topbar [data-testid=sign-in]") {
            let next = failpass_shared::api::query::to_query_string(&[("next", p.clone())]);
            let _ = a.set_attribute("href", &format!("/signin?{next}"));
        }
        doc.set_title(&format!("{title} · failpass"));
    });
    move || match path.get().as_str() {
        "/" => OverviewPage().into_any(),
        "/queue" => QueuePage().into_any(),
        "/regimes" => RegimesPage().into_any(),
        "/cost" => CostPage().into_any(),
        p if p.starts_with("/reports/") => ReportPage().into_any(),
        _ => NotFound().into_any(),
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
