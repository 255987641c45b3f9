//! The dashboard's pages as its header lists them, and the filters each one
//! keeps. The server draws the header (one fragment for every page); the
//! dashboard keeps its links' filters and current page as the address changes.

/// The filters the figure pages share, kept in the address and carried by
/// the navigation links.
pub const SHARED_FILTERS: &[&str] =
    &["project", "since", "until", "period", "dated", "route", "agent", "model", "label", "goal"];

/// The shared filters the queue understands: all but the goal (last).
pub const QUEUE_FILTERS: &[&str] = SHARED_FILTERS.split_at(SHARED_FILTERS.len() - 1).0;

/// Each dashboard page: its address, its name in the header, the filters it keeps.
pub const PAGES: &[(&str, &str, &[&str])] = &[
    ("/", "Overview", SHARED_FILTERS),
    ("/queue", "Triage queue", QUEUE_FILTERS),
    ("/regimes", "Regimes", SHARED_FILTERS),
    ("/cost", "Cost & time", SHARED_FILTERS),
    ("/oracles", "Oracles", &["project"]),
    ("/runners", "Runners", &[]),
];

/// Whether the header link to `page` is the current one at `path` (a report
/// belongs to the queue).
pub fn is_current(page: &str, path: &str) -> bool {
    page == path || (page == "/queue" && path.starts_with("/reports/"))
}

/// The link to `page` carrying the filters of `query` it keeps.
pub fn link(page: &str, keep: &str, query: &[(String, String)]) -> String {
    let kept: Vec<(&str, String)> =
        query.iter().filter(|(k, _)| keep.split(',').any(|w| w == k)).map(|(k, v)| (k.as_str(), v.clone())).collect();
    let q = crate::api::query::to_query_string(&kept);
    if q.is_empty() { page.to_owned() } else { format!("{page}?{q}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_keep_only_their_filters() {
        let q = vec![("project".to_owned(), "a/b".to_owned()), ("goal".to_owned(), "fix".to_owned())];
        assert_eq!(link("/queue", &QUEUE_FILTERS.join(","), &q), "/queue?project=a%2Fb");
        assert_eq!(link("/", &SHARED_FILTERS.join(","), &q), "/?project=a%2Fb&goal=fix");
        assert_eq!(link("/runners", "", &q), "/runners");
        assert!(is_current("/queue", "/reports/3") && !is_current("/", "/queue"));
    }
}
