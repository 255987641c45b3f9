use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::{assert_error, spawn_app, spawn_app_with_demo};

#[tokio::test]
async fn healthz_reports_the_database() {
    let app = spawn_app().await;
    let r = app.get("/healthz").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["status"], "ok");
    assert_eq!(r.body["database"], "sqlite");
}

#[tokio::test]
async fn unknown_api_routes_and_methods_are_json_errors() {
    let app = spawn_app().await;
    assert_error(&app.get("/api/v1/nothing").await, 404, "not_found", "/api/v1/nothing");
    assert_error(&app.get("/api/v2/reports").await, 404, "not_found", "/api/v2/reports");
    let r = app.client.delete(format!("{}/api/v1/reports", app.base)).send().await.unwrap();
    assert_eq!(r.status(), 405);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["code"], "method_not_allowed");
    assert!(body["message"].as_str().unwrap().contains("/api/v1/reports"), "{body}");
    // outside /api/v1 too: JSON, and never the dashboard's 200 for a non-GET
    for (method, path, status) in [
        ("POST", "/api/v1", 404),
        ("POST", "/api/", 404),
        ("DELETE", "/api/v1/nope", 404),
        ("POST", "/attempts", 405),
        ("POST", "/healthz", 405),
        ("GET", "/api/", 404),
    ] {
        let r = app.client.request(method.parse().unwrap(), format!("{}{path}", app.base)).send().await.unwrap();
        assert_eq!(r.status(), status, "{method} {path}");
        let body: serde_json::Value = r.json().await.unwrap_or_else(|_| panic!("{method} {path}: not JSON"));
        assert!(body["code"].is_string(), "{method} {path}: {body}");
    }
}

/// Issue 35 item 5: a visit to a form's address (a reload after a post)
/// is a page leading to the form's page, never a JSON error.
#[tokio::test]
async fn visiting_a_forms_address_is_a_page_that_leads_to_the_form() {
    let app = spawn_app().await;
    for (path, page) in [
        ("/settings/projects/o/n/environments", "/settings/projects/o/n"),
        ("/settings/projects/o/n/members/remove", "/settings/projects/o/n"),
        ("/inbox/12/review", "/inbox"),
        ("/settings/hooks/3/remove", "/settings/hooks"),
        ("/settings/tokens/4/revoke", "/settings/tokens"),
        ("/queue/bulk", "/queue"),
    ] {
        let r = app.client.get(format!("{}{path}", app.base)).send().await.unwrap();
        assert_eq!(r.status(), 405, "{path}");
        assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"), "{path}");
        let html = r.text().await.unwrap();
        assert!(html.contains(&format!(r#"href="{page}" data-testid="form-page""#)), "{path}: {html}");
    }
}

#[tokio::test]
async fn oversized_bodies_get_413_naming_the_limit() {
    let app = spawn_app().await;
    let big = format!("{{\"slug\": \"a/b\", \"description\": \"{}\"}}", "x".repeat(5 << 20));
    let r = app.post_raw("/api/v1/projects", Some("application/json"), &big).await;
    assert_error(&r, 413, "payload_too_large", "MiB limit");
    assert_error(&app.get("/api/v1/reports/abc").await, 400, "bad_request", "`abc` is not a number");
}

#[tokio::test]
async fn client_routes_fall_back_to_the_dashboard_and_missing_assets_are_404() {
    let app = spawn_app().await;
    for path in ["/", "/queue", "/reports/12"] {
        let r = app.client.get(format!("{}{path}", app.base)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"), "{path}");
        assert!(r.text().await.unwrap().contains("failpass"));
    }
    let r = app.client.get(format!("{}/pkg/nothing-here.wasm", app.base)).send().await.unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn demo_fills_an_empty_database_once() {
    let app = spawn_app_with_demo().await;
    let projects = app.get("/api/v1/projects").await;
    assert!(projects.body.as_array().unwrap().len() >= 4);
    let figures = app.get("/api/v1/figures").await.body;
    let all = &figures["rows"][0];
    assert!(all["reports"].as_u64().unwrap() >= 30);
    // every verdict appears in the demo
    for verdict in
        ["reproduced", "confirmed", "lead", "not_reproduced", "hypothesis", "error", "resolved", "unresolved"]
    {
        let page = app.get(&format!("/api/v1/attempts?verdict={verdict}&limit=1")).await;
        assert_eq!(page.body["items"].as_array().unwrap().len(), 1, "demo has no `{verdict}` attempt");
    }
    // all three routes
    let routes = app.get("/api/v1/figures?group_by=route").await.body;
    let keys: Vec<_> =
        routes["rows"].as_array().unwrap().iter().map(|r| r["key"].as_str().unwrap().to_owned()).collect();
    assert_eq!(keys, ["agent_first", "human_first", "hypothesis"]);
    // seeding again changes nothing
    let before = app.storage.list_reports(&Default::default(), &failpass::db::ProjectScope::All).await.unwrap();
    let again =
        failpass::demo::seed_if_empty(app.storage.as_ref(), &Default::default(), std::path::Path::new("unused"), false)
            .await
            .unwrap();
    assert!(again.is_none());
    let after = app.storage.list_reports(&Default::default(), &failpass::db::ProjectScope::All).await.unwrap();
    assert_eq!(before, after);
}

/// The real binary: `serve --demo` prints its URL, answers, and exits 0 on Ctrl-C (SIGINT).
#[test]
fn binary_serves_and_shuts_down_cleanly_on_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_failpass"))
        .args(["serve", "--demo", "--bind", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env("FAILPASS_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("failpass is running at http://127.0.0.1:"), "{line}");
    let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap().to_owned();
    let body = reqwest::blocking_get(&format!("{url}healthz"));
    assert!(body.contains("\"ok\""), "{body}");
    assert!(dir.path().join("failpass.db").exists(), "the SQLite file lives in the data dir");

    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "exit status {status}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "failpass did not stop within 15 s of SIGINT");
        std::thread::sleep(Duration::from_millis(50));
    }
}

mod reqwest {
    /// A tiny blocking GET over a runtime of its own (the test above is sync).
    pub fn blocking_get(url: &str) -> String {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async { ::reqwest::get(url).await.unwrap().text().await.unwrap() })
    }
}
