//! A small client-side router: the address is one signal, links inside the
//! app change it through the History API, and the back button restores it.
//!
//! It stands in for `leptos_router`, whose general route matching cost the
//! bundle more than the seven fixed paths here need.

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

/// Path and query string (without `?`) of the current address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Address {
    pub path: String,
    pub query: String,
}

fn read_address() -> Address {
    let loc = web_sys::window().map(|w| w.location());
    let path = loc.as_ref().and_then(|l| l.pathname().ok()).unwrap_or_else(|| "/".into());
    let search = loc.as_ref().and_then(|l| l.search().ok()).unwrap_or_default();
    Address { path, query: search.trim_start_matches('?').to_owned() }
}

thread_local! {
    // The address signal, reachable from event listeners that run outside
    // any reactive owner (the document's click handler, popstate).
    static ADDRESS: std::cell::OnceCell<RwSignal<Address>> = const { std::cell::OnceCell::new() };
}

/// Installs the router: the address signal, the back/forward listener and the
/// click handler that keeps same-origin links inside the app.
pub fn provide_router() {
    let address = RwSignal::new(read_address());
    if ADDRESS.with(|a| a.set(address)).is_err() {
        return; // installed once per page load
    }
    let Some(window) = web_sys::window() else { return };
    let on_pop = Closure::<dyn Fn(web_sys::Event)>::new(move |_| address.set(read_address()));
    let _ = window.add_event_listener_with_callback("popstate", on_pop.as_ref().unchecked_ref());
    on_pop.forget();
    let on_click = Closure::<dyn Fn(web_sys::MouseEvent)>::new(move |ev: web_sys::MouseEvent| {
        if ev.default_prevented()
            || ev.button() != 0
            || ev.ctrl_key()
            || ev.meta_key()
            || ev.shift_key()
            || ev.alt_key()
        {
            return;
        }
        let Some(link) = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|e| e.closest("a[href]").ok().flatten())
        else {
            return;
        };
        if link.has_attribute("target") || link.has_attribute("download") {
            return;
        }
        let href = link.get_attribute("href").unwrap_or_default();
        // The app's own pages only: the API, static files and the server's
        // account pages (sign-in, tokens) load for real.
        let own = href.starts_with('/') && !href.starts_with("//") && !href.contains('\\');
        if !own
            || [
                "/api/",
                "/pkg/",
                "/signin",
                "/settings/",
                "/status",
                "/badge/",
                "/docs/",
                "/inbox",
                "/oracles",
                "/runners",
            ]
            .iter()
            .any(|p| href.starts_with(p))
        {
            return;
        }
        ev.prevent_default();
        navigate(&href);
    });
    if let Some(doc) = window.document() {
        let _ = doc.add_event_listener_with_callback("click", on_click.as_ref().unchecked_ref());
    }
    on_click.forget();
}

fn router() -> RwSignal<Address> {
    ADDRESS.with(|a| *a.get_or_init(|| RwSignal::new(read_address())))
}

/// Goes to `href` (a path with an optional query), adding a history entry.
pub fn navigate(href: &str) {
    let Some(window) = web_sys::window() else { return };
    if let Ok(history) = window.history() {
        let _ = history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(href));
    }
    let next = read_address();
    let address = router();
    if address.with_untracked(|a| a.path != next.path) {
        window.scroll_to_with_x_and_y(0.0, 0.0);
    }
    address.set(next);
}

/// The current path; pages re-render only when it changes.
pub fn use_path() -> Memo<String> {
    let address = router();
    Memo::new(move |_| address.with(|a| a.path.clone()))
}

/// The current query as decoded pairs, in order.
pub fn use_query() -> Memo<Vec<(String, String)>> {
    let address = router();
    Memo::new(move |_| address.with(|a| failpass_shared::api::query::parse_query_string(&a.query)))
}

/// The current URL's query as owned pairs (the same parameters as the API's).
pub fn query_pairs() -> Memo<Vec<(String, String)>> {
    use_query()
}

/// `pairs` with `key` set to `value` (dropped when empty) and any cursor removed.
pub fn with_param<K: AsRef<str>>(pairs: &[(K, String)], key: &str, value: &str) -> String {
    let mut out: Vec<(&str, String)> =
        pairs.iter().map(|(k, v)| (k.as_ref(), v.clone())).filter(|(k, _)| *k != key && *k != "cursor").collect();
    if !value.trim().is_empty() {
        out.push((key, value.trim().to_owned()));
    }
    failpass_shared::api::query::to_query_string(&out)
}
