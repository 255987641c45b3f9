//! Triage queue: reports with their route, flags, best verdict and spend,
//! filtered and paged through the URL (every view is a link).

use failpass_shared::api::reports::{Order, ReportListQuery, ReportSort};
use failpass_shared::model::{ReportStatus, Verdict};
use leptos::prelude::*;

use crate::api::{self, ClientError};
use crate::components::filters::{FilterBar, choice};
use crate::components::{Empty, ErrorPanel, Loading};
use crate::router::{query_pairs, with_param};

fn parse(pairs: &[(String, String)]) -> Result<ReportListQuery, ClientError> {
    ReportListQuery::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(|e| ClientError::Input(e.to_string()))
}

#[component]
pub fn QueuePage() -> impl IntoView {
    let pairs = query_pairs();
    let query = Memo::new(move |_| pairs.with(|p| parse(p)));
    let reports = crate::load::Load::new(move || {
        let q = query.get();
        async move { api::report_table(&q?).await }
    });
    let navigate_to = move |pairs: &[(&'static str, String)]| {
        crate::router::navigate(&format!("/queue?{}", failpass_shared::api::query::to_query_string(pairs)));
    };
    let go = move |key: &'static str, value: String| {
        let current = query.get_untracked().map(|q| q.pairs()).unwrap_or_default();
        crate::router::navigate(&format!("/queue?{}", with_param(&current, key, &value)));
    };
    let current = move || query.get().unwrap_or_default();
    let search: NodeRef<leptos::html::Input> = NodeRef::new();

    let on_search = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        // The label is the filter bar's; the search applies on submit.
        let mut pairs = query.get_untracked().map(|q| q.pairs()).unwrap_or_default();
        pairs.retain(|(k, _)| !matches!(*k, "q" | "cursor"));
        if let Some(v) = search.get().map(|i| i.value()).filter(|v| !v.trim().is_empty()) {
            pairs.push(("q", v.trim().to_owned()));
        }
        navigate_to(&pairs);
    };
    let go_status = go;
    let go_verdict = go;
    let go_sort = go;
    let go_order = go;

    view! {
        <section class="queue">
            <div class="page-head">
                <h1>"Triage queue"</h1>
            </div>
            // The filters every page shares (project, window, route, agent, model).
            <FilterBar path="/queue" pairs=pairs/>
            <form class="filters" role="search" on:submit=on_search>
                {choice("Status", "status", "Any", options(["open"].into_iter().chain(ReportStatus::ALL.iter().map(|r| r.as_str()))), pairs, go_status)}
                {choice("Best verdict", "verdict", "Any", options(Verdict::ALL.iter().map(|r| r.as_str())), pairs, go_verdict)}
                {choice("Assignee", "assignee", "Anyone", vec![("me".into(), "assigned to me".into()), ("none".into(), "unassigned".into())], pairs, go)}
                {choice("Arrived", "arrived", "Any time", vec![("24h".into(), "in the last 24 hours".into()), ("visit".into(), "since my last visit".into())], pairs, go)}
                <label class="field">
                    <span>"Sort by"</span>
                    <select data-testid="sort" on:change=move |ev| go_sort("sort", event_target_value(&ev))>
                        {ReportSort::ALL.iter().map(|s| {
                            let s = *s;
                            view! { <option value=s.as_str() selected=move || current().sort == s>{s.as_str().replace('_', " ")}</option> }
                        }).collect_view()}
                    </select>
                </label>
                <label class="field">
                    <span>"Order"</span>
                    <select data-testid="order" on:change=move |ev| go_order("order", event_target_value(&ev))>
                        <option value="desc" selected=move || current().order == Order::Desc>"descending"</option>
                        <option value="asc" selected=move || current().order == Order::Asc>"ascending"</option>
                    </select>
                </label>
                <label class="field field-grow">
                    <span>"Search"</span>
                    <input type="search" node_ref=search data-testid="filter-q" placeholder="title, body or issue id"
                        prop:value=move || current().filter.q.unwrap_or_default()/>
                </label>
                <button type="submit">"Search"</button>
            </form>
            // A filter the bar has no control for is shown, with a way out.
            {move || current().stuck_days.map(|n| view! {
                <p class="state" data-testid="stuck-filter">
                    {format!("Showing stuck reports only: open, no activity for {n} days. ")}
                    <a href=move || format!("/queue?{}", with_param(&current().pairs(), "stuck_days", ""))>"Show every report"</a>
                </p>
            })}
            <Transition fallback=|| view! { <Loading what="reports"/> }>
                {move || Suspend::new(async move {
                    match reports.get().await {
                        Err(e) => view! { <ErrorPanel error=e/> }.into_any(),
                        Ok(page) if page.total == 0 => view! { <Empty message="No report matches these filters."/> }.into_any(),
                        Ok(page) => {
                            let next = page.next_cursor.clone();
                            let q = query.get_untracked().unwrap_or_default();
                            let paged = q.cursor.is_some();
                            let next_href = next.map(|c| format!("/queue?{}", failpass_shared::api::query::to_query_string(&{
                                let mut p = q.pairs();
                                p.retain(|(k, _)| *k != "cursor");
                                p.push(("cursor", c));
                                p
                            })));
                            let first_href = format!("/queue?{}", with_param(&q.pairs(), "cursor", ""));
                            // Every report the filters select, not only this page.
                            let export = |format: &str| format!("/api/v1/export/reports?{}", with_param(&q.pairs(), "format", format));
                            view! {
                                <p class="count" data-testid="queue-count">{format!("{} reports", page.total)}
                                    {q.stuck_days.map(|n| format!(" stuck: open, no activity for {n} days"))}
                                    " · "
                                    <a href=format!("/settings/views?{}", failpass_shared::api::query::to_query_string(&[("address", format!("/queue?{}", with_param(&q.pairs(), "cursor", "")))])) data-testid="save-view">"Save this view"</a>
                                    " · export all: "
                                    <a href=export("csv") download data-testid="export-csv">"CSV"</a>" "
                                    <a href=export("json") download>"JSON"</a>" "
                                    <a href=export("ndjson") download>"NDJSON"</a>
                                </p>
                                <ReportTable html=page.html/>
                                <nav class="pager" aria-label="Pages">
                                    {paged.then(|| view! { <a href=first_href data-testid="first-page">"First page"</a> })}
                                    {next_href.map(|h| view! { <a href=h data-testid="next-page">"Next page"</a> })}
                                </nav>
                            }.into_any()
                        }
                    }
                })}
            </Transition>
        </section>
    }
}

/// A `choice`'s options for enum values: the value, and it in words.
fn options(values: impl Iterator<Item = &'static str>) -> Vec<(String, String)> {
    values.map(|v| (v.to_owned(), v.replace('_', " "))).collect()
}

/// The server's table (escaped there), with j / k to move and Enter to open.
#[component]
fn ReportTable(html: String) -> impl IntoView {
    let selected = RwSignal::new(None::<u32>);
    let rows = || web_sys::window()?.document()?.query_selector_all("[data-testid=queue-row]").ok();
    let keys = window_event_listener(leptos::ev::keydown, move |ev| {
        let typing = ev
            .target()
            .and_then(|t| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(t).ok())
            .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA" | "BUTTON"));
        let Some(list) = rows() else { return };
        let count = list.length();
        if typing || ev.ctrl_key() || ev.meta_key() || ev.alt_key() || count == 0 {
            return;
        }
        let row = |i: u32| list.item(i).and_then(|n| wasm_bindgen::JsCast::dyn_into::<web_sys::Element>(n).ok());
        match ev.key().as_str() {
            "j" => selected.update(|s| *s = Some(s.map_or(0, |i| (i + 1).min(count - 1)))),
            "k" => selected.update(|s| *s = Some(s.map_or(0, |i| i.saturating_sub(1)))),
            "Enter" => {
                if let Some(id) = selected.get_untracked().and_then(row).and_then(|r| r.get_attribute("data-id")) {
                    ev.prevent_default();
                    crate::router::navigate(&format!("/reports/{id}"));
                }
                return;
            }
            _ => return,
        }
        // Mark the selected row, keep it in view and say which one it is.
        for i in 0..count {
            if let Some(el) = row(i) {
                let on = selected.get_untracked() == Some(i);
                let _ = el.class_list().toggle_with_force("selected", on);
                let _ = el.set_attribute("aria-selected", if on { "true" } else { "false" });
                if on {
                    el.scroll_into_view_with_bool(false);
                }
            }
        }
    });
    on_cleanup(move || keys.remove());
    view! {
        <p class="hint keys">"Keys: j / k move, Enter opens."</p>
        <div inner_html=html></div>
    }
}
