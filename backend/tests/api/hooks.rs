//! Outgoing webhooks end to end, on SQLite and on PostgreSQL: hooks made
//! through the API, real changes (a report taken in, its route corrected, an
//! LLM's lead accepted, the report closed) delivered by a real worker to a
//! local receiver that checks every signature the way docs/agents.md tells
//! receivers to; retries after a 503, a 404 refused for good, the delivery
//! log, redelivery, removal, and an import that tells no one.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use failpass::hooks::{DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, verify};
use failpass::runner::executors::{ByKind, RunnerConfig};
use failpass::runner::worker::{WorkerOptions, spawn_pool};
use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, loopback_hooks, spawn_app, spawn_configured, spawn_pg_app};

/// What the receiver got: the path, the headers, the body.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<(String, HeaderMap, Bytes)>>>);

impl Received {
    fn at(&self, path: &str) -> Vec<(HeaderMap, Value)> {
        self.raw(path).into_iter().map(|(h, b)| (h, serde_json::from_slice(&b).unwrap())).collect()
    }

    /// The bytes as they arrived (what a signature is checked against).
    fn raw(&self, path: &str) -> Vec<(HeaderMap, Bytes)> {
        let all = self.0.lock().unwrap();
        all.iter().filter(|(p, ..)| p == path).map(|(_, h, b)| (h.clone(), b.clone())).collect()
    }
}

/// `/flaky` answers 503 to its first delivery, `/gone` 404 to all; the rest 200.
async fn receive(State(got): State<Received>, Path(path): Path<String>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let mut all = got.0.lock().unwrap();
    let before = all.iter().filter(|(p, ..)| *p == path).count();
    all.push((path.clone(), headers, body));
    match (path.as_str(), before) {
        ("flaky", 0) => StatusCode::SERVICE_UNAVAILABLE,
        ("gone", _) => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

async fn receiver() -> (String, Received) {
    let got = Received::default();
    let app = axum::Router::new().route("/{path}", axum::routing::post(receive)).with_state(got.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, got)
}

/// Polls until `done` holds (at most 40 s: one retry waits 5 s).
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..400 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

async fn hook(app: &TestApp, url: String, format: &str, events: Value) -> Value {
    let r = app
        .post("/api/v1/hooks", &json!({"project": "hooks/demo", "url": url, "format": format, "events": events}))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(r.body["secret"].as_str().unwrap().starts_with("whsec_"), "{}", r.body);
    r.body
}

async fn deliveries(app: &TestApp, hook: i64) -> Vec<Value> {
    let r = app.get(&format!("/api/v1/hooks/{hook}/deliveries")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body.as_array().unwrap().clone()
}

/// Checks a signed delivery as a receiver would (on the bytes received),
/// and returns its body.
fn checked(secret: &str, headers: &HeaderMap, raw: &[u8]) -> Value {
    let signature = headers.get(SIGNATURE_HEADER).expect("signed").to_str().unwrap();
    let now = chrono::Utc::now().timestamp();
    verify(secret, signature, raw, now).expect("the signature holds");
    assert!(verify("whsec_wrong", signature, raw, now).is_err());
    let mut altered = raw.to_vec();
    altered.push(b' ');
    assert!(verify(secret, signature, &altered, now).is_err());
    let body: Value = serde_json::from_slice(raw).unwrap();
    assert!(headers.get(DELIVERY_HEADER).is_some());
    assert_eq!(headers.get(EVENT_HEADER).unwrap().to_str().unwrap(), body["event"].as_str().unwrap());
    body
}

/// One worker for an app, as `failpass serve` runs them; stopped when dropped
/// (told to stop: a dropped channel alone would leave it polling).
struct Workers {
    stop: tokio::sync::watch::Sender<bool>,
    _data: tempfile::TempDir,
}

impl Workers {
    /// Workers that may post to the loopback (`--hook-allow-network 127.0.0.0/8`), or not.
    fn start(app: &TestApp, loopback: bool) -> Self {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let data = tempfile::tempdir().unwrap();
        let networks = if loopback { loopback_hooks().hook_networks } else { Default::default() };
        let config = RunnerConfig { hook_networks: Arc::new(networks), ..Default::default() };
        let executor = Arc::new(ByKind::new(app.storage.clone(), data.path(), config));
        let options = WorkerOptions { poll: Duration::from_millis(100), ..Default::default() };
        spawn_pool(executor, app.storage.clone(), 1, options, stopped);
        Self { stop, _data: data }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

async fn case(app: &TestApp) {
    let (base, got) = receiver().await;
    let _workers = Workers::start(app, true);
    app.project("hooks/demo").await;

    // Wrong input, each named.
    let bad = |body: Value| async move { app.post("/api/v1/hooks", &body).await };
    let r = bad(json!({"project": "hooks/demo", "url": "ftp://example.org/x"})).await;
    assert_error(&r, 400, "bad_request", "not http or https");
    let r = bad(json!({"project": "hooks/demo", "url": format!("{base}/x"), "events": []})).await;
    assert_error(&r, 400, "bad_request", "events: empty");
    let r = bad(json!({"project": "nobody/here", "url": format!("{base}/x")})).await;
    assert_error(&r, 400, "bad_request", "`nobody/here` does not exist");
    let r = bad(json!({"project": "hooks", "url": format!("{base}/x")})).await;
    assert_error(&r, 400, "bad_request", "(projects are named owner/name)");
    // Who may not is told who may.
    let member =
        crate::helpers::client_with_token(&crate::helpers::user_token(app.storage.as_ref(), "no-admin", false).await);
    let r = member.get(format!("{}/api/v1/hooks", app.base)).send().await.unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.text().await.unwrap().contains("may not manage projects in any project; an admin may"));
    // A path's bad id is named, wherever it stands in the path.
    let r = app.post("/api/v1/deliveries/abc/redeliver", &json!({})).await;
    assert_error(&r, 400, "bad_request", "`abc` is not a number");
    let r = bad(json!({"project": "hooks/demo", "url": "http://169.254.169.254/latest/meta-data"})).await;
    assert_error(&r, 400, "bad_request", "link-local");
    let r = bad(json!({"project": "hooks/demo", "url": format!("{base}/x"), "format": "teams"})).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().contains("teams"), "{}", r.body);

    let signed = hook(app, format!("{base}/signed"), "signed", json!(["verdict", "route", "status"])).await;
    let secret = signed["secret"].as_str().unwrap().to_owned();
    let slack = hook(app, format!("{base}/slack"), "slack", json!(["status"])).await;
    let flaky = hook(app, format!("{base}/flaky"), "discord", json!(["route"])).await;
    let gone = hook(app, format!("{base}/gone"), "signed", json!(["route"])).await;
    // Nothing listens on port 1: no answer, retried later.
    let refused = hook(app, "http://127.0.0.1:1/refused-path".into(), "signed", json!(["route"])).await;
    // The secret is shown once: listed, it is not.
    let listed = app.get("/api/v1/hooks").await;
    assert_eq!(listed.body.as_array().unwrap().len(), 5, "{}", listed.body);
    assert!(!listed.body.to_string().contains("whsec_"), "{}", listed.body);

    // Four changes, each through its real path.
    let report = app
        .report(json!({"project": "hooks/demo", "external_id": "7", "title": "grad <wrong> & @everyone",
                       "body": "torch.sum returns 3, expected 4; run `python repro.py`"}))
        .await;
    let r = app
        .post(&format!("/api/v1/reports/{report}/route"), &json!({"route": "human_first", "reason": "the launcher"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let attempt = app
        .attempt(json!({"report_id": report, "agent": "a1", "verdict": "lead", "verdict_source": "llm"}))
        .await["id"]
        .as_i64()
        .unwrap();
    let r = app.post(&format!("/api/v1/attempts/{attempt}/review"), &json!({"review": "accepted"})).await;
    assert_eq!((r.status, r.body["verdict"].as_str()), (200, Some("confirmed")), "{}", r.body);
    let r =
        app.post(&format!("/api/v1/reports/{report}/status"), &json!({"status": "closed", "reason": "fixed"})).await;
    assert_eq!(r.status, 200, "{}", r.body);

    // The signed hook hears every change, each signed; in order.
    until("the signed hook's deliveries", || got.at("signed").iter().any(|(_, b)| b["to"] == "closed")).await;
    let bodies: Vec<Value> = got.raw("signed").iter().map(|(h, b)| checked(&secret, h, b)).collect();
    let said: Vec<(String, String)> = bodies
        .iter()
        .map(|b| (b["event"].as_str().unwrap().to_owned(), b["to"].as_str().unwrap().to_owned()))
        .collect();
    let routed = bodies.iter().find(|b| b["event"] == "route" && b["from"].is_null()).expect("taken in");
    assert_eq!(routed["report"]["external_id"], "7");
    assert_eq!(routed["project"], "hooks/demo");
    assert!(said.contains(&("route".into(), "human_first".into())), "{said:?}");
    assert_ne!(routed["to"], "human_first", "a correction that changes the route: {said:?}");
    let verdict = bodies.iter().find(|b| b["event"] == "verdict").expect("the verdict change");
    assert_eq!((verdict["from"].as_str(), verdict["to"].as_str()), (Some("lead"), Some("confirmed")));
    assert_eq!(verdict["attempt_id"], attempt);
    assert_eq!(said.last().unwrap(), &("status".to_owned(), "closed".to_owned()), "{said:?}");

    // Slack: status changes only, as text, escaped.
    until("the slack hook", || got.at("slack").iter().any(|(_, b)| b["text"].as_str().unwrap().contains("closed")))
        .await;
    for (_, b) in got.at("slack") {
        let text = b["text"].as_str().unwrap();
        assert!(text.starts_with("hooks/demo #7 “grad &lt;wrong&gt; &amp; @everyone”: status "), "{text}");
    }
    let log = deliveries(app, slack["id"].as_i64().unwrap()).await;
    assert_eq!(log.len(), got.at("slack").len(), "one delivery a status change: {log:?}");
    assert!(!log.is_empty() && log.iter().all(|d| d["event"] == "status"), "{log:?}");

    // Discord behind a 503: retried (5 s later) and delivered; its log says so.
    let flaky_id = flaky["id"].as_i64().unwrap();
    until("the retry", || got.at("flaky").len() >= 3).await;
    let mut log = Vec::new();
    for _ in 0..100 {
        log = deliveries(app, flaky_id).await;
        if log.iter().all(|d| d["state"] == "delivered") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(log.len(), 2, "taken in, then corrected: {log:?}");
    let retried = log.iter().find(|d| d["tries"] == 2).expect("one delivery took two tries");
    assert_eq!(
        (retried["state"].as_str(), retried["status_code"].as_i64()),
        (Some("delivered"), Some(200)),
        "{retried}"
    );
    assert_eq!(got.at("flaky")[0].1["allowed_mentions"]["parse"], json!([]));

    // 404: refused for good after one try.
    let gone_id = gone["id"].as_i64().unwrap();
    until("the refusals", || got.at("gone").len() >= 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let log = deliveries(app, gone_id).await;
    assert!(log.iter().all(|d| d["state"] == "failed" && d["tries"] == 1 && d["status_code"] == 404), "{log:?}");
    assert!(log[0]["error"].as_str().unwrap().contains("404"), "{log:?}");

    // No answer: tried, waiting for its retry, the error without the address
    // (a chat hook's address is its credential; job errors are shown to readers).
    let refused_id = refused["id"].as_i64().unwrap();
    let mut log = Vec::new();
    for _ in 0..100 {
        log = deliveries(app, refused_id).await;
        if log.first().is_some_and(|d| d["tries"] == 1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let first_try = &log[0];
    assert_eq!((first_try["state"].as_str(), first_try["status_code"].as_i64()), (Some("pending"), None), "{log:?}");
    let error = first_try["error"].as_str().unwrap();
    assert!(!error.contains("refused-path"), "{error}");
    let r = app.post(&format!("/api/v1/deliveries/{}/redeliver", first_try["id"]), &json!({})).await;
    assert_error(&r, 409, "conflict", "still being sent");
    app.client.delete(format!("{}/api/v1/hooks/{refused_id}", app.base)).send().await.unwrap();

    // Redelivery: the same body, a new delivery id, signed afresh.
    let signed_id = signed["id"].as_i64().unwrap();
    let first = deliveries(app, signed_id).await.last().cloned().unwrap();
    let heard = got.at("signed").len();
    let r = app.post(&format!("/api/v1/deliveries/{}/redeliver", first["id"]), &json!({})).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.body["redelivery_of"], first["id"]);
    until("the redelivery", || got.at("signed").len() > heard).await;
    let (headers, raw) = got.raw("signed").pop().unwrap();
    checked(&secret, &headers, &raw);
    assert_eq!(raw, first["body"].as_str().unwrap().as_bytes());
    assert_eq!(headers.get(DELIVERY_HEADER).unwrap().to_str().unwrap(), r.body["id"].to_string());
    assert_error(
        &app.post("/api/v1/deliveries/999999/redeliver", &json!({})).await,
        404,
        "not_found",
        "delivery 999999",
    );

    // An import tells no one: no delivery is written with it.
    let before = deliveries(app, signed_id).await.len();
    let line = json!({"kind": "report", "project": "hooks/demo", "external_id": "8", "title": "imported",
                      "body": "an old report"});
    let r = app.import_ndjson(format!("{line}\n")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(deliveries(app, signed_id).await.len(), before);
    // Nor does one that closes it upstream (its status changes, quietly).
    let slack_log = deliveries(app, slack["id"].as_i64().unwrap()).await.len();
    let line = json!({"kind": "report", "project": "hooks/demo", "external_id": "8", "title": "imported",
                      "body": "an old report", "upstream": {"state": "closed", "reason": "not_planned"}});
    let r = app.import_ndjson(format!("{line}\n")).await;
    assert_eq!(r.status(), 200);
    let listed = app.get("/api/v1/reports?project=hooks/demo&status=closed_upstream").await;
    assert_eq!(listed.body["items"].as_array().map(Vec::len), Some(1), "{}", listed.body);
    assert_eq!(deliveries(app, signed_id).await.len(), before);
    assert_eq!(deliveries(app, slack["id"].as_i64().unwrap()).await.len(), slack_log);

    // Removed: told nothing more, its log kept, nothing sent again.
    let r = app.client.delete(format!("{}/api/v1/hooks/{signed_id}", app.base)).send().await.unwrap();
    assert_eq!(r.status(), 204);
    let slack_id = slack["id"].as_i64().unwrap();
    let slack_before = deliveries(app, slack_id).await.len();
    let r = app.post(&format!("/api/v1/reports/{report}/status"), &json!({"status": "reopen"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(deliveries(app, signed_id).await.len(), before);
    // The reopening was a change: the hooks still live heard of it.
    assert_eq!(deliveries(app, slack_id).await.len(), slack_before + 1);
    let r = app.post(&format!("/api/v1/deliveries/{}/redeliver", first["id"]), &json!({})).await;
    assert_error(&r, 400, "bad_request", "was removed");
    let r = app.client.delete(format!("{}/api/v1/hooks/999999", app.base)).send().await.unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_hear_changes_signed_with_retries_and_a_log_on_both_engines() {
    let app = spawn_configured(false, 0, failpass::runner::refine::Generator::Snippet, loopback_hooks()).await;
    case(&app).await;
    let (app, pg) = spawn_pg_app(loopback_hooks()).await;
    case(&app).await;
    drop(app);
    pg.drop_now().await;
}

#[tokio::test]
async fn the_cli_adds_lists_logs_redelivers_and_removes_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    let url = db.to_str().unwrap().to_owned();
    let storage = failpass::db::connect(&url).await.unwrap();
    storage.migrate().await.unwrap();
    let req = failpass_shared::api::projects::CreateProjectRequest {
        slug: "cli/hooks".into(),
        name: None,
        description: None,
        public: None,
        upstream_url: None,
        benchmark: None,
    };
    storage.create_project(&req).await.unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_failpass"))
            .arg("hook")
            .args(args)
            .args(["--database-url", &url])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, err) =
        run(&["add", "--project", "cli/hooks", "--url", "https://h.example.org/x", "--format", "teams"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("--format") && err.contains("teams"), "{err}");
    let (code, _, err) =
        run(&["add", "--project", "cli/hooks", "--url", "https://h.example.org/x", "--events", "verdict,nope"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("--events") && err.contains("nope"), "{err}");
    let (code, _, err) = run(&["add", "--project", "cli/hooks", "--url", "http://169.254.169.254/"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("link-local"), "{err}");
    // A private network only with the operator's allow-list, named when refused.
    let (code, _, err) = run(&["add", "--project", "cli/hooks", "--url", "http://10.0.0.1/x"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("private address") && err.contains("--hook-allow-network"), "{err}");
    let (code, _, err) =
        run(&["add", "--project", "cli/hooks", "--url", "http://10.0.0.1/x", "--hook-allow-network", "10.0.0.0/33"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("`10.0.0.0/33` is not a network"), "{err}");
    let (code, _, err) = run(&["add", "--project", "no/such", "--url", "https://h.example.org/x"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("project `no/such` does not exist"), "{err}");
    let (code, out, err) = run(&[
        "add",
        "--project",
        "cli/hooks",
        "--url",
        "https://h.example.org/x",
        "--format",
        "slack",
        "--events",
        "status,verdict",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let secret = out.trim();
    assert!(secret.starts_with("whsec_") && secret.len() == 70, "the secret alone on standard output: {out}");
    assert!(err.contains("hook 1 of cli/hooks posts slack deliveries of verdict, status"), "{err}");
    let (_, out, _) = run(&["list"]);
    assert!(out.starts_with("1\tcli/hooks\tslack\tverdict,status\thttps://h.example.org/x\t0 delivered"), "{out}");
    assert!(!out.contains(secret), "{out}");

    // A change, told: the log shows its delivery, waiting for a worker.
    use failpass_shared::routing::{RoutingConfig, RoutingInput, decide};
    let request: failpass_shared::api::reports::CreateReportRequest =
        serde_json::from_value(json!({"project": "cli/hooks", "external_id": "1", "title": "t", "body": "b"})).unwrap();
    let decision = decide(&RoutingConfig::default(), &RoutingInput::from_request(&request));
    let report = storage
        .create_report(&failpass::db::NewReport { request, decision, origin: Default::default() })
        .await
        .unwrap();
    let change = failpass::db::hooks::Change {
        event: failpass_shared::api::hooks::HookEvent::Status,
        report_id: report.summary.id,
        attempt_id: None,
        from: Some("new".into()),
        to: "closed".into(),
    };
    storage.tell(&[change]).await.unwrap();
    let (_, out, _) = run(&["log", "1"]);
    assert!(out.starts_with("1\t") && out.contains("\tstatus\tpending\ttries 0\t-"), "{out}");
    assert!(out.contains("status new → closed"), "the log shows the body: {out}");
    let (code, _, err) = run(&["redeliver", "1"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("still being sent"), "{err}");
    let (code, out, err) = run(&["remove", "1"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("hook 1 removed"), "{out}");
    let (_, out, _) = run(&["log", "1"]);
    assert!(out.contains("\tfailed\t") && out.contains("the hook was removed"), "{out}");
    let (code, _, err) = run(&["remove", "9"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("hook 9 does not exist"), "{err}");
}

/// `examples/hook_receiver.py`, the receiver docs/agents.md points to, takes
/// failpass's real deliveries and refuses a forged one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_receiver_checks_real_deliveries() {
    let app = spawn_configured(false, 0, failpass::runner::refine::Generator::Snippet, loopback_hooks()).await;
    let _workers = Workers::start(&app, true);
    app.project("hooks/demo").await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let hook = hook(&app, format!("http://127.0.0.1:{port}/"), "signed", json!(["verdict"])).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/hook_receiver.py");
    let receiver = tokio::process::Command::new("python3")
        .args([script, "--port", &port.to_string(), "--until", "verdict", "--timeout", "60"])
        .env("FAILPASS_HOOK_SECRET", hook["secret"].as_str().unwrap())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let client = reqwest::Client::new();
    let forged = || client.post(format!("http://127.0.0.1:{port}/")).header(SIGNATURE_HEADER, "t=1,v1=00").body("{}");
    let mut answered = None;
    for _ in 0..100 {
        if let Ok(r) = forged().send().await {
            answered = Some(r.status().as_u16());
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(answered, Some(401), "a forged delivery is refused");
    let report = app.report(json!({"project": "hooks/demo", "external_id": "1", "title": "t", "body": "b"})).await;
    let attempt =
        app.attempt(json!({"report_id": report, "agent": "a", "verdict": "lead", "verdict_source": "llm"})).await;
    let r = app.post(&format!("/api/v1/attempts/{}/review", attempt["id"]), &json!({"review": "accepted"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let out = tokio::time::timeout(Duration::from_secs(60), receiver.wait_with_output()).await.unwrap().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stderr.contains("refused delivery None: the signature is"), "{stderr}");
    let line: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_eq!((line["event"].as_str(), line["to"].as_str()), (Some("verdict"), Some("confirmed")), "{stdout}");
    assert_eq!(line["attempt_id"], attempt["id"]);
}

/// Without the operator's allow-list, hooks never post into private
/// networks: loopback, RFC 1918, CGNAT and ULA addresses are refused when a
/// hook is made (the refusal names the flag), and a name that resolves to
/// one is refused at delivery, after the lookup and before any connection
/// (a listener on this machine's loopback hears nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_refuse_loopback_and_private_networks_without_the_allow_list() {
    let app = spawn_app().await;
    let _workers = Workers::start(&app, false);
    app.project("hooks/demo").await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    for url in [
        format!("http://127.0.0.1:{port}/"),
        "http://10.0.0.1/hook".into(),
        "http://172.16.0.9/hook".into(),
        "http://192.168.1.20/hook".into(),
        "http://100.64.3.4/hook".into(),
        "http://[::1]/hook".into(),
        "http://[fd00::1]/hook".into(),
        "http://[::ffff:10.0.0.1]/hook".into(),
        "http://2130706433/hook".into(), // 127.0.0.1 written as a number
    ] {
        let r = app.post("/api/v1/hooks", &json!({"project": "hooks/demo", "url": url})).await;
        assert_error(&r, 400, "bad_request", "--hook-allow-network");
        assert!(r.body["message"].as_str().unwrap().contains("private address"), "{url}: {}", r.body);
    }
    // The Webhooks page says the same.
    let form = app
        .client
        .post(format!("{}/settings/hooks", app.base))
        .header("origin", &app.base)
        .form(&[
            ("project", "hooks/demo"),
            ("url", "http://10.0.0.1/hook"),
            ("format", "signed"),
            ("events", "verdict"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 400);
    assert!(form.text().await.unwrap().contains("--hook-allow-network"));
    // A name is checked once it resolves, on every delivery.
    let named = hook(&app, format!("http://localhost:{port}/"), "signed", json!(["route"])).await;
    app.report(json!({"project": "hooks/demo", "external_id": "1", "title": "t", "body": "b"})).await;
    let id = named["id"].as_i64().unwrap();
    // The page's Remove asks first: a box to tick before the form goes.
    let page = app.get("/settings/hooks").await.body.as_str().unwrap_or_default().to_owned();
    assert!(page.contains(r#"name="confirm" value="yes" required"#), "{page}");
    let mut log = Vec::new();
    for _ in 0..300 {
        log = deliveries(&app, id).await;
        if log.first().is_some_and(|d| d["state"] == "failed") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let error = log[0]["error"].as_str().unwrap_or_default();
    assert_eq!(log[0]["state"], "failed", "{log:?}");
    assert!(error.contains("localhost resolves to 127.0.0.1") && error.contains("--hook-allow-network"), "{error}");
    assert!(log[0]["status_code"].is_null(), "never connected: {log:?}");
    let heard = tokio::time::timeout(Duration::from_millis(300), listener.accept()).await;
    assert!(heard.is_err(), "the loopback listener was connected to");
}

/// A hook is sent a test delivery from its page (issue 35 item 6): signed
/// like any delivery, in the hook's format, in its log with the answer; a
/// removed hook is sent nothing, and no hook subscribes to tests.
async fn test_case(app: &TestApp) {
    let (base, got) = receiver().await;
    let _workers = Workers::start(app, true);
    app.project("hooks/demo").await;
    let signed = hook(app, format!("{base}/test-signed"), "signed", json!(["verdict"])).await;
    let slack = hook(app, format!("{base}/test-slack"), "slack", json!(["status"])).await;
    for h in [&signed, &slack] {
        let id = h["id"].as_i64().unwrap();
        let (status, html, location) = crate::setup::form(app, &format!("/settings/hooks/{id}/test"), &[]).await;
        assert_eq!((status, location.as_deref()), (200, Some(format!("/settings/hooks/{id}").as_str())), "{html}");
        assert!(html.contains("send-test"), "the log page offers it again");
    }
    until("both tests to arrive", || got.raw("test-signed").len() == 1 && got.raw("test-slack").len() == 1).await;
    let (headers, raw) = got.raw("test-signed").remove(0);
    let body = checked(signed["secret"].as_str().unwrap(), &headers, &raw);
    assert_eq!((body["event"].as_str(), body["hook"].as_i64()), (Some("test"), signed["id"].as_i64()), "{body}");
    assert!(body["text"].as_str().unwrap().contains("this hook works"), "{body}");
    let (_, text) = got.at("test-slack").remove(0);
    assert!(text["text"].as_str().unwrap().starts_with("failpass test delivery from hook #"), "{text}");
    let id = signed["id"].as_i64().unwrap();
    // The log has it, with the receiver's answer once the worker records it.
    let mut log = deliveries(app, id).await;
    for _ in 0..100 {
        if log[0]["state"] == "delivered" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        log = deliveries(app, id).await;
    }
    assert_eq!((log[0]["event"].as_str(), log[0]["report_id"].as_i64()), (Some("test"), None), "{log:?}");
    assert_eq!((log[0]["state"].as_str(), log[0]["status_code"].as_i64()), (Some("delivered"), Some(200)), "{log:?}");

    // A removed hook: its log says so, and nothing is sent.
    assert_eq!(app.client.delete(format!("{}/api/v1/hooks/{id}", app.base)).send().await.unwrap().status(), 204);
    let (status, html, _) = crate::setup::form(app, &format!("/settings/hooks/{id}/test"), &[]).await;
    assert!(status == 409 && html.contains("was removed: it is sent nothing"), "{status} {html}");
    assert_eq!(deliveries(app, id).await.len(), log.len());
    // Tests are sent, not subscribed to.
    let r = app
        .post("/api/v1/hooks", &json!({"project": "hooks/demo", "url": format!("{base}/x"), "events": ["test"]}))
        .await;
    assert_error(&r, 400, "bad_request", "events: `test` is not subscribed to");
    // A hook made without naming events hears every change, not tests.
    let all = hook(app, format!("{base}/all"), "signed", Value::Null).await;
    assert_eq!(all["events"], json!(["verdict", "route", "status"]), "{all}");
}

#[tokio::test]
async fn a_hook_is_sent_a_test_from_its_page_on_both_engines() {
    let app = spawn_configured(false, 0, failpass::runner::refine::Generator::Snippet, loopback_hooks()).await;
    test_case(&app).await;
    let (app, pg) = spawn_pg_app(loopback_hooks()).await;
    test_case(&app).await;
    drop(app);
    pg.drop_now().await;
}
