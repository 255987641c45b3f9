//! `failpass submit`, the real binary, against a served failpass whose
//! worker grades by running the candidate: the exit code is the verdict
//! the runs gave, a retry stores nothing twice, and every refusal is exit 2
//! with the server's reason.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::helpers::*;
use serde_json::Value;

/// The demo's softmax report (fastnum #101): a candidate that fails on
/// 0.3.0 and passes on 0.3.1, and one that never fails.
const GOOD: &str = "import math\nimport fastnum\n\nprobs = fastnum.softmax([1000.0, 1000.0])\n\
    assert not any(math.isnan(p) for p in probs), f\"probabilities contain nan: {probs}\"\nprint(probs)\n";
const SMALL: &str = "import fastnum\n\nprobs = fastnum.softmax([1.0, 1.0])\nassert abs(sum(probs) - 1.0) < 1e-9\n";

/// A CI token of the demo project, as `failpass token create` makes one.
async fn ci_token(app: &TestApp) -> String {
    let project = app.storage.get_project("fastnum/fastnum", &failpass::db::ProjectScope::All).await.unwrap().unwrap();
    let req = failpass::auth::tokens::TokenRequest {
        name: "ci".into(),
        scope: failpass_shared::model::TokenScope::Ci,
        project_id: Some(project.id),
        user_id: None,
        created_by: "tests".into(),
        expires_in_days: None,
    };
    failpass::auth::tokens::create(app.storage.as_ref(), req).await.unwrap().0
}

/// Runs `failpass submit ARGS` with the token in `FAILPASS_TOKEN`.
async fn submit(server: &str, token: &str, args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_failpass"))
        .arg("submit")
        .args(args)
        .env("FAILPASS_SERVER", server)
        .env("FAILPASS_TOKEN", token)
        .env("FAILPASS_LOG", "warn")
        .output()
        .await
        .unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submit_waits_for_the_runs_verdict_and_exits_with_it() {
    // Its receiver listens on this machine's loopback, which hooks may post to only where allowed.
    let app = crate::helpers::spawn_configured(
        true,
        1,
        failpass::runner::refine::Generator::Snippet,
        crate::helpers::loopback_hooks(),
    )
    .await;
    let token = ci_token(&app).await;
    let dir = tempfile::tempdir().unwrap();
    let (good, small) = (write(dir.path(), "good.py", GOOD), write(dir.path(), "small.py", SMALL));
    let attempt = |candidate: &Path, extra: &[&str]| {
        let mut a: Vec<String> = [
            "attempt",
            "--project",
            "fastnum/fastnum",
            "--report",
            "101",
            "--agent",
            "ci-agent",
            "--model",
            "m-1",
            "--cost-usd",
            "0.12",
            "--tokens-in",
            "900",
            "--wall-seconds",
            "31",
            "--candidate",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.push(candidate.to_string_lossy().into_owned());
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |args: Vec<String>| {
        let (base, token) = (app.base.clone(), token.clone());
        async move { submit(&base, &token, &args.iter().map(String::as_str).collect::<Vec<_>>()).await }
    };

    // Reproduced: exit 0, and --json prints the graded attempt.
    let out = run(attempt(&good, &["--wait", "--json", "--timeout", "240"])).await;
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    let graded: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (graded["verdict"].as_str(), graded["verdict_source"].as_str()),
        (Some("reproduced"), Some("deterministic"))
    );
    assert_eq!((graded["cost_usd"].as_f64(), graded["tokens_in"].as_i64()), (Some(0.12), Some(900)));
    let id = graded["id"].as_i64().unwrap();

    // Not reproduced: exit 1, the verdict and its cause on stdout.
    let out = run(attempt(&small, &["--wait", "--timeout", "240"])).await;
    assert_eq!(out.status.code(), Some(1), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("not_reproduced (no_failure)"), "{}", text(&out.stdout));

    // The same command again (a CI retry) is the same attempt: its key is
    // a hash of everything it says, so it is stored once and its verdict
    // answers at once. One that says something else is another attempt; a
    // key given again with something else changed is refused, not stored.
    let out = run(attempt(&good, &["--wait"])).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&format!("attempt {id} already stored")), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&format!("attempt {id}: reproduced")), "{}", text(&out.stdout));
    let plain = run(attempt(&good, &["--attempt-key", "k-1"])).await;
    assert_eq!(plain.status.code(), Some(0), "{}", text(&plain.stderr));
    let out = run(attempt(&good, &["--attempt-key", "k-1", "--tokens-out", "5"])).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("409 Conflict"), "{}", text(&out.stderr));
    let count = || async {
        let mine = app.get("/api/v1/attempts?project=fastnum%2Ffastnum&agent=ci-agent").await.body;
        mine["items"].as_array().unwrap().len()
    };
    assert_eq!(count().await, 3);
    // The attempt sent without verification has nothing to follow.
    let unverified = text(&plain.stdout);
    let unverified: i64 = unverified.split_whitespace().nth(1).unwrap().parse().unwrap();
    let r = app.get(&format!("/api/v1/attempts/{unverified}/events")).await;
    assert_error(&r, 404, "not_found", "has no verification");
    assert_error(&app.get("/api/v1/attempts/999999/events").await, 404, "not_found", "attempt 999999 not found");

    // CI's test results for the attempt: a run in the buggy environment.
    let junit = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pytest-junit.xml");
    let before = app.get(&format!("/api/v1/attempts/{id}")).await.body["runs"].as_array().unwrap().len();
    let id_text = id.to_string();
    let out = submit(
        &app.base,
        &token,
        &["junit", &junit.to_string_lossy(), "--attempt", &id_text, "--environment", "buggy"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("1 runs stored"), "{}", text(&out.stdout));
    let runs = app.get(&format!("/api/v1/attempts/{id}")).await.body["runs"].as_array().unwrap().len();
    assert_eq!(runs, before + 1);

    // The agent's trajectory travels with the attempt.
    let traj = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/trajectories/swe-agent.traj");
    let traj = traj.to_string_lossy().into_owned();
    let out = run(attempt(&good, &["--attempt-key", "with-trajectory", "--trajectory", &traj])).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("trajectory of 11 steps stored; 1 loop(s)"), "{}", text(&out.stderr));
    assert_eq!(count().await, 4);

    // Refusals: exit 2 with the server's reason, nothing stored.
    let out = run(attempt(&good, &["--attempt-key", "no-trajectory", "--trajectory", "/nonexistent.traj"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--trajectory: /nonexistent.traj"), "{}", text(&out.stderr));
    let elsewhere = attempt(&good, &[]).into_iter().map(|a| if a == "fastnum/fastnum" { "no/such".into() } else { a });
    let out = run(elsewhere.collect()).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("does not exist"), "{}", text(&out.stderr));
    let out =
        submit(&app.base, "fp_not_a_token", &attempt(&good, &[]).iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("401"), "{}", text(&out.stderr));
    let out = run(attempt(&good, &["--verdict", "reproduced-ish"])).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--verdict"), "{}", text(&out.stderr));
    let out = run(attempt(&dir.path().join("missing.py"), &[])).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("missing.py"), "{}", text(&out.stderr));
    assert_eq!(count().await, 4, "refused attempts are not stored");

    // The example agent, end to end (docs/agents.md, "A complete session"):
    // it reads #101, submits its candidate with its trajectory, waits, exits
    // with the verdict; the example receiver, behind a signed hook, hears it.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let hook = app
        .post(
            "/api/v1/hooks",
            &serde_json::json!({"project": "fastnum/fastnum", "url": format!("http://127.0.0.1:{port}/"), "events": ["verdict"]}),
        )
        .await;
    assert_eq!(hook.status, 201, "{}", hook.body);
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut receiver = tokio::process::Command::new("python3")
        .arg(examples.join("hook_receiver.py"))
        .args(["--port", &port.to_string()])
        .env("FAILPASS_HOOK_SECRET", hook.body["secret"].as_str().unwrap())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // The agent on #101: its exit code, and what it said (stdout and stderr).
    let agent = || async {
        let out = tokio::process::Command::new("python3")
            .arg(examples.join("agent.py"))
            .args(["101", "--server", &app.base])
            .env("FAILPASS_TOKEN", &token)
            .env("FAILPASS_BIN", env!("CARGO_BIN_EXE_failpass"))
            .env("FAILPASS_LOG", "warn")
            .output()
            .await
            .unwrap();
        (out.status.code(), format!("{}{}", text(&out.stdout), text(&out.stderr)))
    };
    let (code, said) = agent().await;
    assert_eq!(code, Some(0), "{said}");
    let line = said.lines().find(|l| l.starts_with("attempt ") && l.ends_with(": reproduced")).expect("the verdict");
    let id: i64 = line["attempt ".len()..line.find(':').unwrap()].parse().unwrap();
    // Run again: the same attempt, its trajectory kept, its verdict at once.
    let (code, said) = agent().await;
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains(&format!("attempt {id}: its trajectory was sent with it before; kept")), "{said}");
    let steps = app.get(&format!("/api/v1/attempts/{id}/trajectory")).await;
    assert_eq!(steps.status, 200, "{}", steps.body);
    assert_eq!(steps.body["steps"].as_array().map(Vec::len), Some(3), "{}", steps.body);
    // The receiver prints each delivery whose signature held; the demo's
    // own gradings are told too, so look for this attempt's.
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(receiver.stdout.take().unwrap()).lines();
    let heard = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Some(l) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&l).unwrap();
            if v["attempt_id"] == id {
                return v;
            }
        }
        panic!("the receiver stopped")
    })
    .await
    .expect("the receiver heard the agent's verdict");
    assert_eq!((heard["event"].as_str(), heard["to"].as_str()), (Some("verdict"), Some("reproduced")), "{heard}");
}

/// A server that cannot be reached is tried `--tries` times, then exit 2.
#[tokio::test]
async fn an_unreachable_server_is_retried_then_refused() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.py", GOOD);
    let started = std::time::Instant::now();
    let out = submit(
        &format!("http://127.0.0.1:{port}"),
        "t",
        &[
            "attempt",
            "--tries",
            "3",
            "--project",
            "a/b",
            "--report",
            "1",
            "--agent",
            "x",
            "--candidate",
            &good.to_string_lossy(),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert_eq!(err.matches("trying again").count(), 2, "{err}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(1500), "waited 0.5 s, then 1 s");
    let out =
        submit("ftp://x", "t", &["attempt", "--project", "a/b", "--report", "1", "--agent", "x", "--candidate", "-"])
            .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--server"), "{}", text(&out.stderr));
}

/// A server that answers 503 (then 429 with `Retry-After`) before it
/// stores the attempt: the client tries again and succeeds, sending the
/// same body, key included, each time.
#[tokio::test]
async fn a_busy_server_is_tried_again_with_the_same_attempt() {
    use axum::http::StatusCode;
    use std::sync::{Arc, Mutex};
    let bodies: Arc<Mutex<Vec<Value>>> = Arc::default();
    let seen = bodies.clone();
    let router = axum::Router::new().route(
        "/api/v1/attempts",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
            let seen = seen.clone();
            async move {
                let n = {
                    let mut b = seen.lock().unwrap();
                    b.push(body);
                    b.len()
                };
                let reply = serde_json::json!({"id": 7, "verdict": "hypothesis"});
                match n {
                    1 => (StatusCode::SERVICE_UNAVAILABLE, [("retry-after", "0")], axum::Json(reply)),
                    2 => (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "1")], axum::Json(reply)),
                    3 => (StatusCode::CREATED, [("retry-after", "0")], axum::Json(reply)),
                    _ => (StatusCode::INTERNAL_SERVER_ERROR, [("retry-after", "0")], axum::Json(reply)),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.py", GOOD);
    let args = ["attempt", "--project", "a/b", "--report", "1", "--agent", "x", "--candidate", &good.to_string_lossy()];
    let out = submit(&base, "t", &args).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("503 Service Unavailable") && err.contains("429 Too Many Requests"), "{err}");
    assert!(text(&out.stdout).contains("attempt 7 stored"), "{}", text(&out.stdout));
    {
        let bodies = bodies.lock().unwrap();
        assert_eq!(bodies.len(), 3);
        assert!(bodies.iter().all(|b| *b == bodies[0]), "every try sends the same attempt");
        assert!(bodies[0]["attempt_key"].as_str().unwrap().starts_with("submit:"));
    }
    // Out of tries (the server answers 500 from now on): exit 2 naming the answer.
    let out = submit(&base, "t", &[&args[..], &["--tries", "2"]].concat()).await;
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("trying again") && err.contains("answered 500 Internal Server Error"), "{err}");
    assert_eq!(bodies.lock().unwrap().len(), 5);
}

/// `--timeout` holds though the stream stays alive: a verification that
/// never ends (no worker) gives exit 2 at the timeout, keep-alives or not.
#[tokio::test]
async fn waiting_gives_up_at_the_timeout_though_the_stream_stays_alive() {
    use axum::response::sse::{Event, KeepAlive, Sse};
    use std::convert::Infallible;
    use std::time::{Duration, Instant};
    let router = axum::Router::new()
        .route(
            "/api/v1/attempts",
            axum::routing::post(|| async {
                (axum::http::StatusCode::CREATED, axum::Json(serde_json::json!({"id": 9, "verdict": "hypothesis"})))
            }),
        )
        .route(
            "/api/v1/attempts/9/events",
            axum::routing::get(|| async {
                let never = futures_util::stream::pending::<Result<Event, Infallible>>();
                Sse::new(never).keep_alive(KeepAlive::new().interval(Duration::from_millis(200)))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.py", GOOD);
    let started = Instant::now();
    let out = submit(
        &base,
        "t",
        &[
            "attempt",
            "--project",
            "a/b",
            "--report",
            "1",
            "--agent",
            "x",
            "--wait",
            "--timeout",
            "2",
            "--candidate",
            &good.to_string_lossy(),
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("no verdict before the timeout"), "{}", text(&out.stderr));
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(10), "{took:?}");
}
