pub mod agents;
pub mod oracles;
pub mod overview;
pub mod planned;
pub mod queue;
pub mod report;
pub mod runners;

use leptos_router::hooks::use_query_map;
use leptos::prelude::*;

/// The current URL's query as owned pairs (the same parameters as the API's).
pub fn query_pairs() -> Memo<Vec<(String, String)>> {
    let map = use_query_map();
    Memo::new(move |_| {
        map.with(|m| m.latest_values().map(|(k, v)| (k.to_string(), v.to_owned())).collect())
    })
}

/// `pairs` with `key` set to `value` (dropped when empty) and any cursor removed.
pub fn with_param(pairs: &[(&'static str, String)], key: &'static str, value: &str) -> String {
    let mut out: Vec<(&str, String)> =
        pairs.iter().filter(|(k, _)| *k != key && *k != "cursor").cloned().collect();
    if !value.trim().is_empty() {
        out.push((key, value.trim().to_owned()));
    }
    failpass_shared::api::query::to_query_string(&out)
}
