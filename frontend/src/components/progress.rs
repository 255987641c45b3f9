//! Live progress of one job, from its server-sent events.

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

/// The `done` event's body, as far as the progress line reads it.
#[derive(serde::Deserialize)]
struct Done {
    job: failpass_shared::api::jobs::Job,
    attempt: Option<DoneAttempt>,
}

#[derive(serde::Deserialize)]
struct DoneAttempt {
    verdict: String,
}

/// An open subscription to one job's events; it holds the handlers the
/// browser calls, and `close` ends it.
pub struct Follow {
    source: web_sys::EventSource,
    _handlers: (OnMessage, OnMessage, Closure<dyn FnMut(web_sys::Event)>),
}

type OnMessage = Closure<dyn FnMut(web_sys::MessageEvent)>;

impl Follow {
    pub fn close(&self) {
        self.source.close();
    }
}

/// Follows job `job_id`, writing where it is into `status`, and calls
/// `on_done` once it ends. `None` where the browser cannot follow it.
pub fn follow(job_id: i64, status: RwSignal<String>, on_done: Callback<()>) -> Option<Follow> {
    let Ok(source) = web_sys::EventSource::new(&format!("/api/v1/jobs/{job_id}/events")) else {
        status.set(format!("job {job_id} queued (this browser cannot follow it live; reload to see the result)"));
        return None;
    };
    let on_job = OnMessage::new(move |e: web_sys::MessageEvent| {
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
    let done_source = source.clone();
    let on_end = OnMessage::new(move |e: web_sys::MessageEvent| {
        let text = e.data().as_string().unwrap_or_default();
        status.set(match crate::api::decode::<Done>(&text) {
            Ok(Done { job, .. }) if job.status.as_str() != "done" => {
                format!("job {job_id}: {} — {}", job.status, job.last_error.unwrap_or_default())
            }
            Ok(Done { attempt: Some(a), .. }) => {
                format!("job {job_id}: done — verdict {}", a.verdict.replace('_', " "))
            }
            _ => format!("job {job_id}: done"),
        });
        done_source.close();
        on_done.run(());
    });
    let error_source = source.clone();
    let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
        if error_source.ready_state() == web_sys::EventSource::CLOSED {
            status.update(|s| s.push_str(" (connection lost; the job continues on the server)"));
        }
    });
    let _ = source.add_event_listener_with_callback("job", on_job.as_ref().unchecked_ref());
    let _ = source.add_event_listener_with_callback("done", on_end.as_ref().unchecked_ref());
    let _ = source.add_event_listener_with_callback("error", on_error.as_ref().unchecked_ref());
    Some(Follow { source, _handlers: (on_job, on_end, on_error) })
}

/// One job's progress line.
pub fn line(status: RwSignal<String>) -> impl IntoView {
    view! { <p class="progress" role="status" aria-live="polite" data-testid="job-progress">{move || status.get()}</p> }
}
