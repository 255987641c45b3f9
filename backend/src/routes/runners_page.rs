//! `GET /runners`: the Runners page, drawn by the server: jobs waiting and
//! running, the runners and their heartbeats, recent failures, and how long
//! a new job would wait. Where a script runs, its figures are fetched again
//! every two seconds (`/frame.js`, `data-refresh`); without one, the page is
//! as of its loading.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use chrono::{DateTime, Utc};
use failpass_shared::api::jobs::{Job, QueueOverview};
use failpass_shared::figures::runner_alive;
use failpass_shared::format::thousands;
use maud::{Markup, html};

use super::AppState;
use super::pages::page;
use crate::auth::Viewer;
use crate::error::ApiResult;

/// Milliseconds between the page's refreshes of its figures.
const REFRESH_MS: u32 = 2000;

#[utoipa::path(
    get, path = "/runners", tag = "pages",
    responses((status = 200, description = "The Runners page.", content_type = "text/html", body = String))
)]
pub async fn runners_page(State(state): State<AppState>, viewer: Viewer) -> ApiResult<Response> {
    let q = super::jobs::overview(&state, &viewer).await?;
    let body = html! {
        h1 { "Runners" }
        p.lede { "Jobs waiting and running, their workers and recent failures; updates every two seconds. "
            a href="/runners/environments" { "Environment cache" } }
        div #runners-live data-refresh=(REFRESH_MS) { (view(&q, Utc::now())) }
    };
    Ok(page(StatusCode::OK, "Runners", &viewer, body))
}

fn ago(now: DateTime<Utc>, t: DateTime<Utc>) -> String {
    let s = (now - t).num_seconds().max(0);
    match s {
        0..60 => format!("{s} s ago"),
        60..3600 => format!("{} min ago", s / 60),
        _ => format!("{} h ago", s / 3600),
    }
}

fn seconds(v: Option<f64>) -> String {
    match v {
        None => "—".into(),
        Some(s) if s < 60.0 => format!("{s:.1} s"),
        Some(s) => format!("{:.1} min", s / 60.0),
    }
}

fn target(j: &Job) -> Markup {
    html! {
        @match (j.payload.attempt_id, j.payload.report_id) {
            (Some(a), Some(r)) => a href=(format!("/reports/{r}")) { "attempt " (a) },
            (Some(a), None) => span { "attempt " (a) },
            (None, Some(r)) => a href=(format!("/reports/{r}")) { "report " (r) },
            _ => span { "—" },
        }
    }
}

fn stat(label: &str, value: String, detail: String, testid: &str) -> Markup {
    html! {
        div.stat {
            div.stat-label { (label) }
            div.stat-value data-testid=(testid) { (value) }
            div.stat-detail { (detail) }
        }
    }
}

fn badge(kind: &str, text: &str) -> Markup {
    html! { span class=(format!("badge badge-{kind}")) { (text) } }
}

fn view(q: &QueueOverview, now: DateTime<Utc>) -> Markup {
    let alive = q.runners.iter().filter(|r| runner_alive(r, now)).count();
    html! {
        section.stats aria-label="Queue figures" {
            (stat("Waiting", thousands(q.queued), "jobs queued".into(), "queue-waiting"))
            (stat("Running", thousands(q.running), "jobs leased to a runner".into(), "queue-running"))
            (stat("Estimated wait", seconds(q.estimated_wait_seconds),
                format!("mean job {} over {alive} live runner(s)", seconds(q.mean_job_seconds)), "queue-wait"))
            (stat("Done, last 24 h", thousands(q.done_last_day), "jobs completed".into(), "queue-done"))
            (stat("Failed, last 24 h", thousands(q.failed_last_day), "out of tries or permanent".into(), "queue-failed"))
        }
        section.panel {
            h2 { "Jobs waiting and running" }
            @if q.jobs.is_empty() {
                p.state.state-empty { "Nothing is waiting: every job has run." }
            } @else {
                div.table-wrap {
                    details.all-columns { summary { "Every column" } }
                    table.grid-table data-testid="jobs" {
                        thead { tr {
                            th.num scope="col" { "Job" } th scope="col" { "Kind" } th scope="col" { "Target" } th scope="col" { "State" }
                            th.num.opt scope="col" { "Priority" } th.num.opt scope="col" { "Tries" } th.opt scope="col" { "Runner" } th.opt scope="col" { "Queued" }
                        } }
                        tbody { @for j in &q.jobs {
                            tr {
                                td.num { (j.id) }
                                td { (j.kind.as_str()) }
                                td { (target(j)) }
                                td { (badge(j.status.as_str(), j.status.as_str())) }
                                td.num.opt { (j.priority) }
                                td.num.opt { (j.tries) " of " (j.max_tries) }
                                td.opt { (j.lease_owner.as_deref().unwrap_or("—")) }
                                td.opt { (ago(now, j.created_at)) }
                            }
                        } }
                    }
                }
            }
        }
        section.panel {
            h2 { "Runners" }
            @if q.runners.is_empty() {
                p.state.state-empty { "No runner has reported yet. Start `failpass serve` with --workers, or `failpass worker`." }
            } @else {
                div.table-wrap {
                    details.all-columns { summary { "Every column" } }
                    table.grid-table data-testid="runners" {
                        thead { tr {
                            th scope="col" { "Runner" } th.opt scope="col" { "Host" } th.num.opt scope="col" { "PID" } th scope="col" { "Heartbeat" }
                            th scope="col" { "State" } th scope="col" { "Current job" } th.num.opt scope="col" { "Jobs done" }
                        } }
                        tbody { @for r in &q.runners {
                            @let live = runner_alive(r, now);
                            tr {
                                td { (r.id) }
                                td.opt { (r.host) }
                                td.num.opt { (r.pid) }
                                td { (ago(now, r.last_heartbeat)) }
                                td { (if live { badge("live", "live") } else { badge("stale", "no heartbeat") }) }
                                td { (r.current_job.map_or_else(|| "idle".to_owned(), |j| j.to_string())) }
                                td.num.opt { (r.jobs_done) }
                            }
                        } }
                    }
                }
            }
        }
        section.panel {
            h2 { "Recent failures" }
            @if q.recent_failures.is_empty() {
                p.state.state-empty { "No job has failed." }
            } @else {
                ul.failures data-testid="failures" {
                    @for j in &q.recent_failures {
                        li { strong { "job " (j.id) " (" (j.kind.as_str()) ")" } " " (target(j)) ": " (j.last_error.as_deref().unwrap_or("")) }
                    }
                }
            }
        }
    }
}
