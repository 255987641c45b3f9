//! Runners: jobs waiting and running, the runners and their heartbeats,
//! recent failures, and how long a new job would wait. Refreshes itself.

use failpass_shared::api::jobs::{Job, QueueOverview};
use failpass_shared::figures::runner_alive;
use failpass_shared::format::thousands;
use leptos::prelude::*;

use crate::api;
use crate::components::{AllColumns, Badge, Empty, ErrorPanel, Loading, Stat};

/// Seconds between refreshes.
const REFRESH_MS: u64 = 2000;

#[component]
pub fn RunnersPage() -> impl IntoView {
    let tick = RwSignal::new(0u32);
    let handle =
        set_interval_with_handle(move || tick.update(|t| *t += 1), std::time::Duration::from_millis(REFRESH_MS)).ok();
    on_cleanup(move || {
        if let Some(h) = handle {
            h.clear();
        }
    });
    let data = crate::load::Load::new(move || {
        tick.track();
        api::queue()
    });
    view! {
        <h1>"Runners"</h1>
        <p class="lede">"Jobs waiting and running, their workers and recent failures; updates every two seconds. "<a href="/runners/environments" target="_self">"Environment cache"</a></p>
        <Transition fallback=|| view! { <Loading what="the queue"/> }>
            {move || Suspend::new(async move {
                match data.get().await {
                    Err(e) => view! { <ErrorPanel error=e/> }.into_any(),
                    Ok(q) => view! { <QueueView q=q/> }.into_any(),
                }
            })}
        </Transition>
    }
}

/// The browser's clock (chrono's `Utc::now` has no clock on wasm32 without js bindings).
fn now() -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(js_sys::Date::now() as i64).unwrap_or_default()
}

fn ago(t: chrono::DateTime<chrono::Utc>) -> String {
    let s = (now() - t).num_seconds().max(0);
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

fn target(j: &Job) -> AnyView {
    match (j.payload.attempt_id, j.payload.report_id) {
        (Some(a), Some(r)) => view! { <a href=format!("/reports/{r}")>"attempt "{a}</a> }.into_any(),
        (Some(a), None) => view! { <span>"attempt "{a}</span> }.into_any(),
        (None, Some(r)) => view! { <a href=format!("/reports/{r}")>"report "{r}</a> }.into_any(),
        _ => view! { <span>"—"</span> }.into_any(),
    }
}

#[component]
fn QueueView(q: QueueOverview) -> impl IntoView {
    let alive = q.runners.iter().filter(|r| runner_alive(r, now())).count();
    view! {
        <section class="stats" aria-label="Queue figures">
            <Stat label="Waiting" value=thousands(q.queued) detail="jobs queued" testid="queue-waiting"/>
            <Stat label="Running" value=thousands(q.running) detail="jobs leased to a runner" testid="queue-running"/>
            <Stat label="Estimated wait" value=seconds(q.estimated_wait_seconds)
                detail=format!("mean job {} over {alive} live runner(s)", seconds(q.mean_job_seconds)) testid="queue-wait"/>
            <Stat label="Done, last 24 h" value=thousands(q.done_last_day) detail="jobs completed" testid="queue-done"/>
            <Stat label="Failed, last 24 h" value=thousands(q.failed_last_day) detail="out of tries or permanent" testid="queue-failed"/>
        </section>
        <section class="panel">
            <h2>"Jobs waiting and running"</h2>
            {if q.jobs.is_empty() {
                view! { <Empty message="Nothing is waiting: every job has run."/> }.into_any()
            } else {
                view! {
                    <div class="table-wrap"><AllColumns/><table class="grid-table" data-testid="jobs">
                        <thead><tr>
                            <th scope="col" class="num">"Job"</th><th scope="col">"Kind"</th><th scope="col">"Target"</th><th scope="col">"State"</th>
                            <th scope="col" class="num opt">"Priority"</th><th scope="col" class="num opt">"Tries"</th><th scope="col" class="opt">"Runner"</th><th scope="col" class="opt">"Queued"</th>
                        </tr></thead>
                        <tbody>
                            {q.jobs.iter().map(|j| view! {
                                <tr>
                                    <td class="num">{j.id}</td>
                                    <td>{j.kind.as_str()}</td>
                                    <td>{target(j)}</td>
                                    <td><Badge kind=j.status.as_str() text=j.status.as_str()/></td>
                                    <td class="num opt">{j.priority}</td>
                                    <td class="num opt">{format!("{} of {}", j.tries, j.max_tries)}</td>
                                    <td class="opt">{j.lease_owner.clone().unwrap_or_else(|| "—".into())}</td>
                                    <td class="opt">{ago(j.created_at)}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table></div>
                }.into_any()
            }}
        </section>
        <section class="panel">
            <h2>"Runners"</h2>
            {if q.runners.is_empty() {
                view! { <Empty message="No runner has reported yet. Start `failpass serve` with --workers, or `failpass worker`."/> }.into_any()
            } else {
                view! {
                    <div class="table-wrap"><AllColumns/><table class="grid-table" data-testid="runners">
                        <thead><tr>
                            <th scope="col">"Runner"</th><th scope="col" class="opt">"Host"</th><th scope="col" class="num opt">"PID"</th><th scope="col">"Heartbeat"</th>
                            <th scope="col">"State"</th><th scope="col">"Current job"</th><th scope="col" class="num opt">"Jobs done"</th>
                        </tr></thead>
                        <tbody>
                            {q.runners.iter().map(|r| {
                                let live = runner_alive(r, now());
                                view! {
                                    <tr>
                                        <td>{r.id.clone()}</td>
                                        <td class="opt">{r.host.clone()}</td>
                                        <td class="num opt">{r.pid}</td>
                                        <td>{ago(r.last_heartbeat)}</td>
                                        <td><Badge kind=if live { "live" } else { "stale" } text=if live { "live" } else { "no heartbeat" }/></td>
                                        <td>{r.current_job.map(|j| j.to_string()).unwrap_or_else(|| "idle".into())}</td>
                                        <td class="num opt">{r.jobs_done}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table></div>
                }.into_any()
            }}
        </section>
        <section class="panel">
            <h2>"Recent failures"</h2>
            {if q.recent_failures.is_empty() {
                view! { <Empty message="No job has failed."/> }.into_any()
            } else {
                view! {
                    <ul class="failures" data-testid="failures">
                        {q.recent_failures.iter().map(|j| view! {
                            <li><strong>{format!("job {} ({})", j.id, j.kind.as_str())}</strong>" "{target(j)}": "
                                {j.last_error.clone().unwrap_or_default()}</li>
                        }).collect_view()}
                    </ul>
                }.into_any()
            }}
        </section>
    }
}
