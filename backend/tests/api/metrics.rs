//! `/metrics`: Prometheus' text format, open or behind a token.

use serde_json::json;

use crate::helpers::{spawn_app_with_demo, spawn_configured};

/// The value of the sample `line_start` (`name{labels}`) in `text`.
fn sample(text: &str, line_start: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(line_start)?.trim().parse().ok())
}

#[tokio::test]
async fn metrics_show_requests_jobs_imports_and_public_figures() {
    let app = spawn_app_with_demo().await;
    let r = app.post("/api/v1/projects", &json!({"slug": "vault/secret", "public": false})).await;
    assert_eq!(r.status, 201);
    app.report(json!({"project": "vault/secret", "external_id": "1", "title": "t"})).await;
    let imported = app
        .import_ndjson(
            r#"{"kind":"report","project":"pytorch/pytorch","external_id":"metrics-1","title":"from an import"}"#,
        )
        .await;
    assert_eq!(imported.status(), 200);
    let status: serde_json::Value =
        app.anon.get(format!("{}/api/v1/status/pytorch/pytorch", app.base)).send().await.unwrap().json().await.unwrap();

    let r = app.anon.get(format!("{}/metrics", app.base)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/plain; version=0.0.4"));
    let text = r.text().await.unwrap();

    // Requests by route template and status, with a latency histogram.
    assert!(
        text.contains(
            r#"failpass_http_requests_total{method="GET",route="/api/v1/status/{owner}/{name}",status="200"}"#
        ),
        "{text}"
    );
    assert!(text.contains("failpass_http_request_duration_seconds_bucket{"), "{text}");
    // The queue by state (the demo queues its verification jobs; no worker runs them here).
    let queued = sample(&text, r#"failpass_jobs{state="queued"}"#).expect("queued jobs");
    assert!(queued > 0.0, "{text}");
    assert!(sample(&text, r#"failpass_jobs{state="running"}"#).is_some());
    assert!(sample(&text, "failpass_runners_alive").is_some());
    // Imports by outcome (the process's total: other tests import too).
    assert!(sample(&text, r#"failpass_import_records_total{outcome="created"}"#).unwrap_or(0.0) >= 1.0, "{text}");
    // Each public project's headline figures equal its status.
    let reports = sample(&text, r#"failpass_project_reports{project="pytorch/pytorch"}"#).unwrap();
    assert_eq!(reports, status["reports"].as_f64().unwrap());
    let rate = sample(&text, r#"failpass_project_reproduction_rate{project="pytorch/pytorch"}"#).unwrap();
    assert!((rate - status["rate"].as_f64().unwrap()).abs() < 1e-9);
    assert!(text.contains("# TYPE failpass_project_backlog gauge"));
    // A private project is never a label.
    assert!(!text.contains("vault"), "a private project leaked into /metrics");
}

#[tokio::test]
async fn a_metrics_token_closes_metrics_to_others() {
    let security = failpass::security::SecurityConfig { metrics_token: Some("s3cret".into()), ..Default::default() };
    let app = spawn_configured(false, 0, failpass::runner::refine::Generator::Snippet, security).await;
    let url = format!("{}/metrics", app.base);
    let none = app.anon.get(&url).send().await.unwrap();
    assert_eq!(none.status(), 401);
    assert!(none.headers().contains_key("www-authenticate"));
    assert!(none.text().await.unwrap().contains("--metrics-token"));
    let wrong = app.anon.get(&url).bearer_auth("s3cre").send().await.unwrap();
    assert_eq!(wrong.status(), 401);
    // An admin's API token is not the metrics token.
    assert_eq!(app.client.get(&url).send().await.unwrap().status(), 401);
    let right = app.anon.get(&url).bearer_auth("s3cret").send().await.unwrap();
    assert_eq!(right.status(), 200);
    assert!(right.text().await.unwrap().contains("failpass_jobs"));
}

#[test]
fn the_grafana_dashboard_uses_metrics_failpass_exports() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let dashboard = std::fs::read_to_string(format!("{root}/docs/grafana-dashboard.json")).unwrap();
    let source = std::fs::read_to_string(format!("{root}/backend/src/metrics.rs")).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&dashboard).expect("the dashboard is JSON");
    assert!(parsed["panels"].as_array().is_some_and(|p| p.len() >= 8));
    let mut names: Vec<&str> = dashboard
        .match_indices("failpass_")
        .map(|(i, _)| {
            let rest = &dashboard[i..];
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            rest[..end].trim_end_matches("_bucket")
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    assert!(names.len() >= 10, "{names:?}");
    for name in names {
        assert!(source.contains(&format!("\"{name}\"")), "the dashboard uses {name}, which failpass does not export");
    }
}
