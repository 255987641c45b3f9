//! Prometheus metrics, through the `metrics` facade and its Prometheus
//! exporter (rendered at `/metrics`, no listener of its own).
//!
//! Recorded as things happen: HTTP requests by route template and status
//! with a latency histogram ([`track_http`]), job durations by kind and
//! outcome (the worker), import records by outcome (the importer). Read
//! from storage when scraped ([`render`]): jobs by state, runners' last
//! heartbeats, and each public project's headline figures. Labels never name
//! a private project: route labels are templates (`/api/v1/reports/{id}`),
//! and per-project gauges cover public projects only.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use metrics::{counter, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::db::{ProjectScope, Storage};
use crate::status::StatusCache;

/// Latency buckets (seconds) for HTTP requests and jobs.
const HTTP_BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];
const JOB_BUCKETS: &[f64] = &[0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process's recorder, installed on first use (tests start many apps in
/// one process; they share it).
pub fn handle() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full("failpass_http_request_duration_seconds".into()), HTTP_BUCKETS)
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full("failpass_job_duration_seconds".into()), JOB_BUCKETS))
            .expect("bucket lists are not empty")
            .build_recorder();
        let handle = recorder.handle();
        // Another recorder (a test harness's) already installed: ours still renders, empty of facade metrics.
        let _ = metrics::set_global_recorder(recorder);
        describe();
        handle
    })
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!("failpass_http_requests_total", "HTTP requests by method, route template and status.");
    describe_histogram!("failpass_http_request_duration_seconds", "HTTP request latency by method and route template.");
    describe_histogram!("failpass_job_duration_seconds", "Verification job run time by kind and outcome.");
    describe_counter!("failpass_import_records_total", "Imported records by outcome.");
    describe_histogram!(
        "failpass_live_write_batch_size",
        "Live writes (attempts, runs, reviews, comments) committed together, per transaction."
    );
    describe_gauge!("failpass_jobs", "Jobs by state (failed: in the last day).");
    describe_gauge!("failpass_runner_last_heartbeat_seconds", "Each runner's last heartbeat, Unix seconds.");
    describe_gauge!("failpass_runners_alive", "Runners that sent a heartbeat within the liveness window.");
}

/// Counts a request and times it, labelled by the route template that
/// matched (`unmatched` otherwise, so stray paths cannot grow the label set).
pub async fn track_http(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().as_str().to_owned();
    let route = req.extensions().get::<MatchedPath>().map_or("unmatched", |p| p.as_str()).to_owned();
    let response = next.run(req).await;
    let status = response.status().as_u16().to_string();
    counter!("failpass_http_requests_total", "method" => method.clone(), "route" => route.clone(), "status" => status)
        .increment(1);
    histogram!("failpass_http_request_duration_seconds", "method" => method, "route" => route)
        .record(started.elapsed().as_secs_f64());
    response
}

/// A job's run time, by kind and how it ended (`done`, `failed`, `lost`).
pub fn job_finished(kind: &str, outcome: &'static str, seconds: f64) {
    histogram!("failpass_job_duration_seconds", "kind" => kind.to_owned(), "outcome" => outcome).record(seconds);
}

/// An import's records by outcome.
pub fn imported(summary: &failpass_shared::api::import::ImportSummary) {
    for (outcome, n) in [
        ("created", summary.created),
        ("updated", summary.updated),
        ("unchanged", summary.unchanged),
        ("rejected", summary.rejected),
        ("skipped", summary.skipped),
    ] {
        if n > 0 {
            counter!("failpass_import_records_total", "outcome" => outcome).increment(n);
        }
    }
}

/// The exposition text: what was recorded, and the gauges read now.
pub async fn render(storage: &Arc<dyn Storage>, status: &StatusCache) -> String {
    let handle = handle();
    let now = storage.clock().await.unwrap_or_else(|_| chrono::Utc::now());
    match storage.queue_overview(now, &ProjectScope::All).await {
        Ok(q) => {
            gauge!("failpass_jobs", "state" => "queued").set(q.queued as f64);
            gauge!("failpass_jobs", "state" => "running").set(q.running as f64);
            gauge!("failpass_jobs", "state" => "failed").set(q.failed_last_day as f64);
            let alive = q.runners.iter().filter(|r| failpass_shared::figures::runner_alive(r, now)).count();
            gauge!("failpass_runners_alive").set(alive as f64);
            for r in &q.runners {
                gauge!("failpass_runner_last_heartbeat_seconds", "runner" => r.id.clone())
                    .set(r.last_heartbeat.timestamp() as f64);
            }
        }
        Err(e) => tracing::warn!(error = %crate::telemetry::cause_chain(&e), "metrics: the queue could not be read"),
    }
    handle.run_upkeep();
    let mut out = handle.render();
    out.push_str(&project_gauges(storage, status).await);
    out
}

/// Each public project's headline figures, written at scrape time (not kept
/// in the registry: a project made private leaves with the next scrape).
async fn project_gauges(storage: &Arc<dyn Storage>, status: &StatusCache) -> String {
    let projects = match storage.list_projects(&ProjectScope::PublicOnly).await {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = %crate::telemetry::cause_chain(&e), "metrics: projects could not be read");
            return String::new();
        }
    };
    let mut snapshots = Vec::with_capacity(projects.len());
    for p in projects {
        if let Ok(snap) = status.of(storage, p).await {
            snapshots.push(snap);
        }
    }
    type Figure = fn(&failpass_shared::api::status::ProjectStatus) -> Option<f64>;
    let figures: [(&str, &str, Figure); 6] = [
        ("failpass_project_reports", "A public project's reports.", |s| Some(s.reports as f64)),
        ("failpass_project_reports_reproduced", "A public project's reproduced reports.", |s| {
            Some(s.reports_reproduced as f64)
        }),
        ("failpass_project_reproduction_rate", "A public project's reproduction rate (0 to 1).", |s| s.rate),
        ("failpass_project_backlog", "A public project's reports not yet in a final state.", |s| {
            Some(s.backlog as f64)
        }),
        ("failpass_project_oracle_coverage", "A public project's oracle coverage (0 to 1).", |s| {
            s.oracle_coverage.rate
        }),
        (
            "failpass_project_time_to_reproduction_median_hours",
            "A public project's median time from intake to its first counting verdict.",
            |s| s.time_to_reproduction_median_hours,
        ),
    ];
    let mut out = String::new();
    for (name, help, value) in figures {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} gauge\n"));
        for snap in &snapshots {
            if let Some(v) = value(&snap.status) {
                out.push_str(&format!("{name}{{project=\"{}\"}} {v}\n", label_value(&snap.status.project)));
            }
        }
    }
    out
}

/// A label value as the exposition format escapes it.
fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}
