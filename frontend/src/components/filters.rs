//! The filter bar the pages share: project, time window (of filing,
//! reproduction or spend; a period relative to today, or days), route, agent
//! and model, all kept in the address so every view is a link.

use failpass_shared::api::reports::Period;
use failpass_shared::model::Route;
use leptos::prelude::*;

use crate::api;

/// The address `path` with `key` set to `value` (removed when empty); any
/// paging cursor is dropped, since it belongs to the old filters.
/// A period and days (`since`, `until`) are two ways to say the window: setting
/// one drops the other.
pub fn href_with(path: &str, pairs: &[(String, String)], key: &str, value: &str) -> String {
    let other: &[&str] = match key {
        "period" => &["since", "until"],
        "since" | "until" => &["period"],
        _ => &[],
    };
    let kept: Vec<(String, String)> = pairs.iter().filter(|(k, _)| !other.contains(&k.as_str())).cloned().collect();
    let q = crate::router::with_param(&kept, key, value);
    if q.is_empty() { path.to_owned() } else { format!("{path}?{q}") }
}

fn value_of(pairs: &[(String, String)], key: &str) -> String {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone()).unwrap_or_default()
}

/// A labelled `<select>` whose first option means "any". Its selection
/// follows the address (Back, or "Clear filters" on the same page).
pub fn choice(
    label: &'static str,
    key: &'static str,
    any: &'static str,
    options: Vec<(String, String)>,
    pairs: Memo<Vec<(String, String)>>,
    go: impl Fn(&'static str, String) + Clone + 'static,
) -> AnyView {
    let current = move || pairs.with(|p| value_of(p, key));
    view! {
        <label class="field">
            <span>{label}</span>
            <select data-testid=format!("filter-{key}") on:change=move |ev| go(key, event_target_value(&ev))>
                <option value="" prop:selected=move || current().is_empty()>{any}</option>
                {options
                    .into_iter()
                    .map(|(value, text)| {
                        let v = value.clone();
                        view! { <option value=value prop:selected=move || current() == v>{text}</option> }
                    })
                    .collect_view()}
            </select>
        </label>
    }
    .into_any()
}

/// Project, filed since/until, route, agent, model and label for the page at
/// `path`; the goal (reproduce or fix) too on the figure pages (`goal`).
#[component]
pub fn FilterBar(
    path: &'static str,
    pairs: Memo<Vec<(String, String)>>,
    #[prop(optional)] goal: bool,
) -> impl IntoView {
    let options = crate::load::Load::new(|| async {
        let projects = api::projects().await.unwrap_or_default();
        let facets = api::facets().await.unwrap_or_default();
        (projects, facets)
    });
    let go = move |key: &'static str, value: String| {
        let href = pairs.with_untracked(|p| href_with(path, p, key, &value));
        crate::router::navigate(&href);
    };
    let input = move |kind: &'static str, label: &'static str, key: &'static str| {
        view! {
            <label class="field">
                <span>{label}</span>
                <input type=kind data-testid=format!("filter-{key}") prop:value=move || pairs.with(|p| value_of(p, key))
                    on:change=move |ev| go(key, event_target_value(&ev).trim().to_owned())/>
            </label>
        }
    };
    view! {
        <form class="filters" aria-label="Filters" on:submit=|ev| ev.prevent_default()>
            <Suspense fallback=|| view! { <span class="hint">"Loading filters…"</span> }>
                {move || Suspend::new(async move {
                    let (projects, facets) = options.get().await;
                    let projects = projects
                        .into_iter()
                        .map(|p| {
                            let text = if p.public { p.slug.clone() } else { format!("{} (private)", p.slug) };
                            (p.slug, text)
                        })
                        .collect();
                    let routes = Route::ALL.iter().map(|r| (r.to_string(), r.to_string().replace('_', " "))).collect();
                    let pairs_of = |v: Vec<String>| v.into_iter().map(|a| (a.clone(), a)).collect::<Vec<_>>();
                    let periods = Period::ALL.iter().map(|p| (p.to_string(), p.to_string().replace('_', " "))).collect();
                    let dates = vec![("reproduced".to_owned(), "reproduced".to_owned()), ("spent".to_owned(), "spent".to_owned())];
                    view! {
                        {choice("Project", "project", "All projects", projects, pairs, go)}
                        {choice("Dates of", "dated", "filing", dates, pairs, go)}
                        {choice("Period", "period", "Any time", periods, pairs, go)}
                        {input("date", "Since", "since")}
                        {input("date", "Until", "until")}
                        {choice("Route", "route", "All routes", routes, pairs, go)}
                        {choice("Agent", "agent", "All agents", pairs_of(facets.agents), pairs, go)}
                        {choice("Model", "model", "All models", pairs_of(facets.models), pairs, go)}
                        {input("search", "Label", "label")}
                        {goal.then(|| choice("Goal", "goal", "reproduce", vec![("fix".to_owned(), "fix".to_owned())], pairs, go))}
                        <a class="clear-filters" href=path data-testid="filter-clear">"Clear filters"</a>
                    }
                })}
            </Suspense>
        </form>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_replaces_and_drops_parameters() {
        let pairs = vec![("project".to_owned(), "a/b".to_owned()), ("cursor".into(), "x".into())];
        assert_eq!(href_with("/cost", &pairs, "agent", "repgen"), "/cost?project=a%2Fb&agent=repgen");
        assert_eq!(href_with("/cost", &pairs, "project", ""), "/cost");
        assert_eq!(href_with("/", &pairs, "project", "c/d"), "/?project=c%2Fd");
        // a period replaces days, and days a period
        let days = vec![("since".to_owned(), "2026-01-01".to_owned()), ("agent".into(), "x".into())];
        assert_eq!(href_with("/", &days, "period", "this_month"), "/?agent=x&period=this_month");
        let period = vec![("period".to_owned(), "this_month".to_owned())];
        assert_eq!(href_with("/", &period, "until", "2026-02-01"), "/?until=2026-02-01");
    }
}
