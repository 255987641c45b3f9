//! `GET /api/v1/oracles`: oracle coverage, sources, authoring time, failure causes.

use axum::extract::State;
use failpass_shared::api::oracles::{OracleSummary, Share};

use super::AppState;
use crate::auth::Viewer;
use crate::error::{ApiJson, ApiResult, QueryPairs};

/// `GET /api/v1/oracles?project=owner/name`: oracle coverage, sources, authoring time, failure causes.
#[utoipa::path(
    get, path = "/api/v1/oracles", tag = "figures",
    params(("project" = Option<String>, Query, example = "pytorch/pytorch", description = "Only this project, `owner/name`; every project you may read when absent.")),
    responses((status = 200, description = "Oracle coverage, sources, authoring time, failure causes.", body = failpass_shared::api::oracles::OracleSummary))
)]
pub async fn oracles(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<OracleSummary>> {
    Ok(ApiJson(summary(&state, &viewer, &query).await?))
}

/// The figures of `GET /api/v1/oracles` (and of the Oracles page).
pub(crate) async fn summary(state: &AppState, viewer: &Viewer, query: &QueryPairs) -> ApiResult<OracleSummary> {
    let scope = viewer.scope();
    let project = crate::summaries::project_param(query.iter())?;
    let mut summary = crate::summaries::oracle_summary(state.storage.as_ref(), &scope, query.iter()).await?;
    let rows = state.storage.authoring_rows(project.as_deref(), &scope).await?;
    summary.authoring = rows;
    let started: i64 = summary.authoring.iter().map(|g| g.started).sum();
    summary.validated_within_hour =
        (started > 0).then(|| Share::new(summary.authoring.iter().map(|g| g.within_hour).sum(), started));
    summary.authoring_html = authoring_html(&summary, project.as_deref());
    Ok(summary)
}

/// The Oracles page's authoring table: the rule's "can one be written in
/// under an hour?" answered from the project's own history.
fn authoring_html(s: &OracleSummary, project: Option<&str>) -> String {
    let minutes = |m: Option<f64>| m.map_or_else(|| "—".to_owned(), |m| format!("{m:.0} min"));
    let download = |table: &str| {
        let mut pairs = vec![("table", table.to_owned())];
        pairs.extend(project.map(|p| ("project", p.to_owned())));
        format!("/api/v1/export/oracles?{}", failpass_shared::api::query::to_query_string(&pairs))
    };
    maud::html! {
        // Every table of the page as CSV (JSON and NDJSON with `format=`).
        p.count data-testid="oracle-exports" {
            "Download the tables (CSV): "
            @for (table, words) in [("kinds", "oracle kinds"), ("sources", "sources"), ("causes", "failure causes"), ("authoring", "authoring")] {
                a href=(download(table)) download data-testid=(format!("export-oracle-{table}")) { (words) } " "
            }
        }
        section.panel data-testid="authoring" {
            h2 { "Oracles written in the dashboard" }
            @match &s.validated_within_hour {
                None => p.state.state-empty { "No maintainer has written an oracle here yet (the report page's \"write one\")." },
                Some(share) => {
                    p data-testid="within-hour" {
                        strong { (share.count) " of " (share.of) }
                        " reports a maintainer started an oracle for got a validated one within an hour of authoring time"
                        @if let (Some(lo), Some(hi)) = (share.low, share.high) {
                            " (95% interval " (format!("{:.0}–{:.0}%", lo * 100.0, hi * 100.0)) ")"
                        }
                        "."
                    }
                    div.table-scroll { table {
                        thead { tr {
                            th scope="col" { "Category" } th scope="col" { "Route when started" } th scope="col" .num { "Started" }
                            th scope="col" .num { "Validated" } th scope="col" .num { "Within an hour" }
                            th scope="col" .num { "Median time" } th scope="col" .num { "Mean tries" }
                        } }
                        tbody { @for g in &s.authoring { tr {
                            td { (g.category.replace('_', " ")) } td { (g.route.replace('_', " ")) } td.num { (g.started) }
                            td.num { (g.validated) } td.num { (g.within_hour) } td.num { (minutes(g.median_minutes)) }
                            td.num { (g.mean_tries.map_or_else(|| "—".to_owned(), |t| format!("{t:.1}"))) }
                        } } }
                    } }
                }
            }
        }
    }
    .into_string()
}
