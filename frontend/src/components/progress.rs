//! Live progress of one job, from its server-sent events.

use leptos::prelude::*;
use send_wrapper::SendWrapper;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// The `done` event's body, as far as the progress line reads it.
#[derive(serde::Deserialize)]
struct Done {
    attempt: DoneAttempt,
}

#[derive(serde::Deserialize)]
struct DoneAttempt {
    verdict: String,
}

/// Follows job `job_id` and says where it is; calls `on_done` once it ends.
#[component]
pub fn JobProgress(job_id: i64, on_done: Callback<()>) -> impl IntoView {
    let status = RwSignal::new(format!("job {job_id}: queued…"));
    let url = format!("/api/v1/jobs/{job_id}/events");
    if let Ok(es) = web_sys::EventSource::new(&url) {
        let es_done = es.clone();
        let on_job = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            if let Some(job) =
                e.data().as_string().and_then(|t| crate::api::decode::<failpass_shared::api::jobs::Job>(&t).ok())
            {
                status.set(match job.status.as_str() {
                    "running" => format!(
                        "job {job_id}: running (try {} of {}) on {}",
                        job.tries,
                        job.max_tries,
                        job.lease_owner.unwrap_or_default()
                    ),
                    "queued" if job.tries > 0 => {
                        format!("job {job_id}: waiting to retry ({})", job.last_error.unwrap_or_default())
                    }
                    other => format!("job {job_id}: {other}"),
                });
            }
        });
        let on_end = Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            let text = e.data().as_string().unwrap_or_default();
            let verdict = crate::api::decode::<Done>(&text).ok().map(|d| d.attempt.verdict.replace('_', " "));
            status.set(match verdict {
                Some(v) => format!("job {job_id}: done — verdict {v}"),
                None => format!("job {job_id}: finished"),
            });
            es_done.close();
            on_done.run(());
        });
        let es_err = es.clone();
        let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
            if es_err.ready_state() == web_sys::EventSource::CLOSED {
                status.update(|s| s.push_str(" (connection lost; the job continues on the server)"));
            }
        });
        let _ = es.add_event_listener_with_callback("job", on_job.as_ref().unchecked_ref());
        let _ = es.add_event_listener_with_callback("done", on_end.as_ref().unchecked_ref());
        let _ = es.add_event_listener_with_callback("error", on_error.as_ref().unchecked_ref());
        let keep = SendWrapper::new((es, on_job, on_end, on_error));
        on_cleanup(move || keep.0.close());
    } else {
        status.set(format!("job {job_id} queued (this browser cannot follow it live; reload to see the result)"));
    }
    view! { <p class="progress" role="status" aria-live="polite" data-testid="job-progress">{move || status.get()}</p> }
}
