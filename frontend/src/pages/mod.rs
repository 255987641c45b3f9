pub mod agents;
pub mod cost;
pub mod oracles;
pub mod overview;
pub mod queue;
pub mod regimes;
pub mod report;
pub mod runners;

use failpass_shared::api::figures::FiguresQuery;
use leptos::prelude::*;

use crate::api::ClientError;

/// The filters the figure pages share, kept in the address and carried by
/// the navigation links.
pub const SHARED_FILTERS: &[&str] = &["project", "since", "until", "route", "agent", "model"];

/// The current URL's query as owned pairs (the same parameters as the API's).
pub fn query_pairs() -> Memo<Vec<(String, String)>> {
    crate::router::use_query()
}

/// The figures query the address asks for (its shared filters only).
pub fn figures_query(pairs: &[(String, String)]) -> Result<FiguresQuery, ClientError> {
    FiguresQuery::from_pairs(
        pairs.iter().filter(|(k, _)| SHARED_FILTERS.contains(&k.as_str())).map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .map_err(|e| ClientError::Input(e.to_string()))
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

/// A figure: its chart, what it shows, and the numbers as a table.
#[component]
pub fn Figure(
    #[prop(into)] testid: String,
    svg: String,
    #[prop(into)] caption: String,
    #[prop(optional)] children: Option<Children>,
) -> impl IntoView {
    view! {
        <figure class="chart" data-testid=testid>
            <div class="chart-svg" inner_html=svg></div>
            <figcaption>{caption}</figcaption>
            {children.map(|c| view! { <div class="table-wrap">{c()}</div> })}
        </figure>
    }
}
