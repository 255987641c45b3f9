//! The figure pages' frame: server-drawn charts inlined as SVG, a figure
//! with its caption and table, and the page frame (title, filter bar,
//! loading, error, empty, figures) that Overview, Regimes and Cost & time share.

use std::future::Future;

use failpass_shared::api::figures::FiguresQuery;
use leptos::prelude::*;

use crate::api::ClientError;
use crate::components::filters::FilterBar;
use crate::components::{Empty, ErrorPanel, Loading};
use crate::router::query_pairs;

pub use failpass_shared::nav::SHARED_FILTERS;

/// The figures query the address asks for (its shared filters only).
pub fn figures_query(pairs: &[(String, String)]) -> Result<FiguresQuery, ClientError> {
    FiguresQuery::from_pairs(
        pairs.iter().filter(|(k, _)| SHARED_FILTERS.contains(&k.as_str())).map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .map_err(|e| ClientError::Input(e.to_string()))
}

/// A chart's drawing width: its card's, so it fills the card and its text
/// is drawn at the size it shows (an SVG scaled down shrinks its labels).
/// The page is at most 1200 px with 1 rem padding; a card has 0.75 rem
/// padding and a border; a `preferred` width under 700 is half a
/// `.chart-pair`, which splits once the page has two 30 rem columns.
pub fn chart_width(preferred: u32) -> u32 {
    let viewport = web_sys::window().and_then(|w| w.inner_width().ok()).and_then(|v| v.as_f64()).unwrap_or(1280.0);
    let content = (viewport as u32).min(1200).saturating_sub(32);
    let card = if preferred < 700 && content >= 976 { (content - 16) / 2 } else { content };
    card.saturating_sub(40).clamp(280, 1600)
}

/// The address of chart `name` as the server draws it (`GET
/// /api/v1/charts/{name}`) for `pairs`, `preferred` pixels wide at most.
pub fn chart_src(name: &str, mut pairs: Vec<(&str, String)>, preferred: u32) -> String {
    pairs.push(("width", chart_width(preferred).to_string()));
    format!("/api/v1/charts/{name}?{}", failpass_shared::api::query::to_query_string(&pairs))
}

/// A server-drawn chart, inlined as SVG (so its text is the page's text);
/// while it loads, and if it fails, a line says so.
#[component]
pub fn ChartSvg(src: String) -> impl IntoView {
    let svg = crate::load::Load::new(move || crate::api::chart(src.clone()));
    view! {
        <Suspense fallback=|| view! { <p class="state state-loading chart-loading" role="status">"Drawing the chart…"</p> }>
            {move || Suspend::new(async move {
                match svg.get().await {
                    Ok(svg) => view! { <div class="chart-svg" inner_html=svg></div> }.into_any(),
                    Err(e) => view! { <p class="state state-error" role="alert">"The chart could not be drawn: " {e.to_string()} " (the table has its numbers)"</p> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// A figure: its chart (`chart_src`), what it shows, and the numbers as a table.
#[component]
pub fn Figure(
    #[prop(into)] testid: String,
    chart: String,
    #[prop(into)] caption: String,
    #[prop(optional)] children: Option<Children>,
) -> impl IntoView {
    view! {
        <figure class="chart" data-testid=testid>
            <ChartSvg src=chart/>
            <figcaption>{caption}</figcaption>
            {children.map(|c| view! { <div class="table-wrap">{c()}</div> })}
        </figure>
    }
}

/// What a figure page is: its title and address, what it loads for the
/// address's filters, and how it draws that (`None`: the view holds nothing).
pub struct FigurePage<T, Fut> {
    pub title: &'static str,
    pub path: &'static str,
    /// Named in the loading state: "Loading {what}…".
    pub what: &'static str,
    /// Said when `body` finds nothing to draw.
    pub empty: &'static str,
    pub fetch: fn(FiguresQuery) -> Fut,
    pub body: fn(T) -> Option<AnyView>,
    /// The grouping the page's figure table downloads by (`group_by`).
    pub export_by: &'static str,
}

impl<T, Fut> FigurePage<T, Fut>
where
    T: Clone + 'static,
    Fut: Future<Output = Result<T, ClientError>> + 'static,
{
    /// The page: title, the shared filter bar, then loading, error, empty
    /// or the figures, following the address.
    pub fn view(self) -> AnyView {
        let FigurePage { title, path, what, empty, fetch, body, export_by } = self;
        let pairs = query_pairs();
        let query = Memo::new(move |_| pairs.with(|p| figures_query(p)));
        let data = crate::load::Load::new(move || {
            let q = query.get();
            async move { fetch(q?).await }
        });
        view! {
            <div class="page-head"><h1>{title}</h1></div>
            <FilterBar path=path pairs=pairs goal=true/>
            {figure_exports(pairs, export_by)}
            <Transition fallback=move || view! { <Loading what=what/> }>
                {move || Suspend::new(async move {
                    match data.get().await.map(body) {
                        Err(e) => view! { <ErrorPanel error=e/> }.into_any(),
                        Ok(None) => view! { <Empty message=empty/> }.into_any(),
                        Ok(Some(v)) => v,
                    }
                })}
            </Transition>
        }
        .into_any()
    }
}

/// Download links for the figure table by `group_by` under the address's
/// shared filters (`GET /api/v1/export/figures`).
pub fn figure_exports(pairs: Memo<Vec<(String, String)>>, group_by: &'static str) -> impl IntoView {
    let href = move |format: &'static str| {
        pairs.with(|p| {
            let mut kept: Vec<(&str, String)> = p
                .iter()
                .filter(|(k, _)| SHARED_FILTERS.contains(&k.as_str()))
                .map(|(k, v)| (k.as_str(), v.clone()))
                .collect();
            kept.push(("group_by", group_by.to_owned()));
            kept.push(("format", format.to_owned()));
            format!("/api/v1/export/figures?{}", failpass_shared::api::query::to_query_string(&kept))
        })
    };
    view! {
        <p class="count" data-testid="figure-exports">{format!("Download the figures by {}: ", group_by.replace(',', " × "))}
            <a href=move || href("csv") download data-testid="export-figures-csv">"CSV"</a>" "
            <a href=move || href("json") download>"JSON"</a>" "
            <a href=move || href("ndjson") download>"NDJSON"</a>
        </p>
    }
}
