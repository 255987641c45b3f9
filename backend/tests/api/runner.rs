//! The verification runner end to end, on real processes: the fastnum demo
//! graded by in-process workers, reruns with live progress, re-checks, a
//! failed setup, and a `failpass worker` process killed with SIGKILL.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, spawn_app_with_workers};

/// Waits until no job is queued or running.
pub async fn drain(app: &TestApp, limit: Duration) -> Value {
    let start = Instant::now();
    loop {
        let q = app.get("/api/v1/jobs").await.body;
        if q["queued"] == 0 && q["running"] == 0 {
            return q;
        }
        assert!(start.elapsed() < limit, "the queue did not drain in {limit:?}: {q}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn attempts_by_key(app: &TestApp) -> HashMap<String, Value> {
    let page = app.get("/api/v1/attempts?project=fastnum/fastnum&limit=100").await.body;
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["attempt_key"].as_str().unwrap().trim_start_matches("fastnum-").to_owned(), a.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_is_graded_by_running_it() {
    let app = spawn_app_with_workers(true, 2).await;
    let q = drain(&app, Duration::from_secs(180)).await;
    assert_eq!(q["failed_last_day"], 0, "{q}");
    assert!(q["done_last_day"].as_i64().unwrap() >= 10);
    assert!(!q["runners"].as_array().unwrap().is_empty(), "the workers report heartbeats: {q}");
    let by_key = attempts_by_key(&app).await;
    // (verdict, failure cause) for every deterministic candidate.
    let table = [
        ("101-good", "reproduced", None),
        ("101-small-logits", "not_reproduced", Some("no_failure")),
        ("101-wrong-error", "not_reproduced", Some("wrong_failure")),
        ("102-good", "reproduced", None),
        ("102-syntax", "not_reproduced", Some("other")),
        ("103-good", "reproduced", None),
        ("104-good", "reproduced", None),
        ("104-wrong-expectation", "not_reproduced", Some("wrong_failure")),
        ("105-loop", "reproduced", None),
    ];
    for (key, verdict, cause) in table {
        let a = &by_key[key];
        assert_eq!(a["verdict"], verdict, "{key}: {}", a["grade"]);
        assert_eq!(a["verdict_source"], "deterministic", "{key}");
        assert_eq!(a["failure_cause"].as_str(), cause, "{key}: {}", a["grade"]);
    }
    assert!(by_key["101-wrong-error"]["grade"]["reason"].as_str().unwrap().contains("not with the reported failure"));
    assert_eq!(by_key["101-good"]["signals"]["failure_behaviour"]["passed"], true);
    assert_eq!(by_key["101-wrong-error"]["signals"]["failure_behaviour"]["passed"], false);
    assert_eq!(by_key["102-syntax"]["signals"]["syntax"]["passed"], false);
    assert!(by_key["102-syntax"]["signals"]["syntax"]["detail"].as_str().unwrap().contains("SyntaxError"));
    assert_eq!(by_key["101-good"]["signals"]["syntax"]["source"], "static");
    assert_eq!(by_key["101-good"]["signals"]["relevance"]["source"], "deterministic");
    // pyflakes (installed by `cargo xtask test`) lints the candidate: the quality signal.
    assert_eq!(by_key["101-good"]["signals"]["quality"]["passed"], true, "{}", by_key["101-good"]["signals"]);
    assert_eq!(by_key["101-good"]["signals"]["quality"]["source"], "static");
    // The intermittent bug: five repeats a side; flaky exactly when the buggy side split.
    let g = &by_key["105-good"]["grade"];
    let (failed, runs) = (g["buggy_failed"].as_i64().unwrap(), g["buggy_runs"].as_i64().unwrap());
    assert_eq!(runs, 5);
    assert_eq!(by_key["105-good"]["flaky"], json!(failed > 0 && failed < 5), "{g}");
    assert_eq!(by_key["105-good"]["verdict"], if failed == 5 { "reproduced" } else { "not_reproduced" });
    // Runs were stored with the grade: one a side, five a side for repeats, none for a candidate that does not parse.
    for (key, n) in [("101-good", 2), ("105-good", 10), ("102-syntax", 0)] {
        let id = by_key[key]["id"].as_i64().unwrap();
        let detail = app.get(&format!("/api/v1/attempts/{id}")).await.body;
        assert_eq!(detail["runs"].as_array().unwrap().len(), n, "{key}");
    }
    let good = app.get(&format!("/api/v1/attempts/{}", by_key["101-good"]["id"])).await.body;
    assert_eq!(good["runs"][0]["environment"], "buggy");
    assert!(good["runs"][0]["output"].as_str().unwrap().contains("AssertionError: probabilities contain nan"));
    assert_eq!(good["runs"][1]["exit_status"], 0);
    // Failures group by normalised signature: the three candidates that reproduce
    // the softmax nan (the demo's good one and the refine loop's) form one group.
    let groups = app.get("/api/v1/signatures?project=fastnum/fastnum").await.body;
    let nan = groups
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["signature"] == "AssertionError: probabilities contain nan: [nan, nan]")
        .expect("the softmax group");
    assert_eq!((nan["reports"].as_i64(), nan["reproduced"].as_i64()), (Some(1), Some(2)), "{nan}");
    // Reports are named by their upstream number (the softmax report is #101), beside their id.
    assert_eq!(nan["report_numbers"], json!(["101"]), "{nan}");
    assert_eq!(nan["report_ids"].as_array().unwrap().len(), 1);
    let column = groups
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["signature"].as_str().unwrap().starts_with("AssertionError: expected <n> column means"))
        .expect("numbers are masked");
    assert_eq!(column["reproduced"], column["attempts"], "{column}");
    assert_error(&app.get("/api/v1/signatures?projet=x").await, 400, "bad_request", "projet");

    // The reports follow: reproduced where a candidate reproduced.
    let report = app.get(&format!("/api/v1/reports/{}", good["report_id"])).await.body;
    assert_eq!(report["status"], "reproduced", "{report}");

    // The refine loop ran offline (`snippet`) on every agent_first report with an oracle.
    let loops: Vec<&Value> = by_key.iter().filter(|(k, _)| k.starts_with("refine:")).map(|(_, v)| v).collect();
    assert_eq!(loops.len(), 5, "{:?}", by_key.keys().collect::<Vec<_>>());
    let by_report: HashMap<i64, &Value> = loops.iter().map(|a| (a["report_id"].as_i64().unwrap(), *a)).collect();
    let softmax = by_report[&good["report_id"].as_i64().unwrap()];
    assert_eq!(softmax["verdict"], "reproduced", "{}", softmax["grade"]);
    assert_eq!(softmax["grade"]["refine"]["stop"], "reproduced");
    assert_eq!(softmax["iterations"], 1);
    assert_eq!(softmax["agent"], "snippet");
    let quantize = by_report[&by_key["104-good"]["report_id"].as_i64().unwrap()];
    assert_eq!(quantize["verdict"], "not_reproduced", "printing the result shows no failure: {}", quantize["grade"]);
    assert_eq!(quantize["failure_cause"], "stuck_in_loop");
    assert_eq!(quantize["grade"]["refine"]["stop"], "stuck_in_loop");
    assert_eq!(quantize["iterations"], 2, "the second proposal repeated the first");
    assert_eq!(quantize["grade"]["refine"]["iterations"][1]["repeated"], "candidate");

    // A manual rerun of one attempt, followed live.
    let target = by_key["101-small-logits"]["id"].as_i64().unwrap();
    let r = app.post("/api/v1/reruns", &json!({ "attempt_id": target })).await;
    assert_eq!(r.status, 202, "{}", r.body);
    let job = r.body["queued"][0].as_i64().unwrap();
    let events = app.client.get(format!("{}/api/v1/jobs/{job}/events", app.base)).send().await.unwrap();
    assert_eq!(events.headers()["content-type"], "text/event-stream");
    let text = tokio::time::timeout(Duration::from_secs(60), events.text())
        .await
        .expect("the event stream ends when the job does")
        .unwrap();
    assert!(text.contains("event: job"), "{text}");
    assert!(text.contains("event: done"), "{text}");
    assert!(text.contains("\"status\":\"done\""), "{text}");
    let detail = app.get(&format!("/api/v1/attempts/{target}")).await.body;
    let triggers: Vec<&str> =
        detail["runs"].as_array().unwrap().iter().map(|r| r["trigger"].as_str().unwrap()).collect();
    assert_eq!(triggers, ["initial", "initial", "rerun", "rerun"]);

    // A refine job grades no attempt it names, and its stream still ends with
    // `done` (the report page refetches on it: the new attempt shows in place).
    let r = app.post("/api/v1/refine", &json!({ "report_id": good["report_id"] })).await;
    assert_eq!(r.status, 202, "{}", r.body);
    let job = r.body["id"].as_i64().unwrap();
    let events = app.client.get(format!("{}/api/v1/jobs/{job}/events", app.base)).send().await.unwrap();
    let text = tokio::time::timeout(Duration::from_secs(60), events.text()).await.expect("the stream ends").unwrap();
    let done = text.split("event: done").nth(1).unwrap_or_else(|| panic!("a done event: {text}"));
    assert!(done.contains("\"attempt\":null") && done.contains("\"kind\":\"refine\""), "{done}");

    // Bulk: every failed or errored attempt of a report.
    let r = app.post("/api/v1/reruns", &json!({ "report_id": good["report_id"] })).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.body["queued"].as_array().unwrap().len(), 2, "small-logits and wrong-error: {}", r.body);
    // A re-check of the reproduced attempts against the newer release.
    let r = app
        .post(
            "/api/v1/reruns",
            &json!({ "filter": { "project": "fastnum/fastnum" }, "recheck_environment": "fastnum-0.4.0" }),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert!(r.body["queued"].as_array().unwrap().len() >= 5, "{}", r.body);
    drain(&app, Duration::from_secs(120)).await;
    let after = attempts_by_key(&app).await;
    let recheck = &after["101-good"]["grade"]["recheck"];
    assert_eq!(recheck["outcome"], "no_longer_reproduces", "{recheck}");
    assert_eq!(recheck["version"], "fastnum 0.4.0");
    assert_eq!(after["101-good"]["verdict"], "reproduced", "a re-check keeps the verdict");

    // The schedule re-checks every reproduced attempt against the newest release.
    let queued = failpass::runner::schedule::enqueue_rechecks(app.storage.as_ref(), None).await.unwrap();
    let reproduced = after.values().filter(|a| a["verdict"] == "reproduced" && a["candidate"].is_string()).count();
    assert_eq!(queued, reproduced, "one re-check per reproduced attempt");
    let q = app.get("/api/v1/jobs").await.body;
    assert!(
        q["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|j| j["kind"] == "recheck" && j["payload"]["environment"] == "fastnum-0.4.0"),
        "{q}"
    );
    assert_eq!(
        failpass::runner::schedule::enqueue_rechecks(app.storage.as_ref(), None).await.unwrap(),
        0,
        "already waiting: nothing new"
    );
    drain(&app, Duration::from_secs(120)).await;

    // Wrong input is named.
    assert_error(&app.post("/api/v1/reruns", &json!({})).await, 400, "bad_request", "exactly one");
    assert_error(
        &app.post("/api/v1/reruns", &json!({ "attempt_id": 999999 })).await,
        404,
        "not_found",
        "attempt 999999",
    );
    assert_error(
        &app.post("/api/v1/reruns", &json!({ "attempt_id": good["id"], "recheck_environment": "fastnum-9" })).await,
        400,
        "bad_request",
        "fastnum-9",
    );
    assert_error(
        &app.post("/api/v1/reruns", &json!({ "attempt_id": target, "recheck_environment": "fastnum-0.4.0" })).await,
        400,
        "bad_request",
        "only reproduced",
    );
    assert_error(
        &app.post("/api/v1/reruns", &json!({ "filter": {}, "recheck_environment": "fastnum-0.4.0" })).await,
        400,
        "bad_request",
        "one project",
    );
    assert_error(
        &app.post("/api/v1/reruns", &json!({ "attempt_id": good["id"], "recheck_environment": "fastnum-0.3.0" })).await,
        400,
        "bad_request",
        "buggy environment",
    );
    // Recorded history in projects with nowhere to run is never rerun into `error`.
    let recorded = app.get("/api/v1/attempts?project=pytorch/pytorch&limit=1").await.body["items"][0].clone();
    assert_error(
        &app.post("/api/v1/reruns", &json!({ "attempt_id": recorded["id"] })).await,
        400,
        "bad_request",
        "no buggy and fixed environment",
    );
    let r = app.post("/api/v1/reruns", &json!({ "filter": { "project": "pytorch/pytorch" } })).await;
    assert_eq!((r.status, r.body["queued"].as_array().map(|q| q.len())), (202, Some(0)), "{}", r.body);
    assert_error(&app.post("/api/v1/reruns", &json!({ "filter": { "bogus": 1 } })).await, 400, "bad_request", "bogus");
    assert_error(
        &app.post("/api/v1/reruns", &json!({ "filter": { "project": "nope/nope" } })).await,
        404,
        "not_found",
        "nope/nope",
    );
    let pytorch_report = recorded["report_id"].as_i64().unwrap();
    let r = app.post("/api/v1/attempts", &json!({ "report_id": pytorch_report, "agent": "x", "verdict": "hypothesis", "verdict_source": "llm", "candidate": "pass", "verify": true })).await;
    assert_eq!(r.status, 400, "{}", r.body);
    // A verify without the candidate its oracle's command runs.
    let r = app.post("/api/v1/attempts", &json!({ "report_id": by_key["102-good"]["report_id"], "agent": "x", "verdict": "hypothesis", "verdict_source": "llm", "verify": true })).await;
    assert_error(&r, 400, "bad_request", "runs the candidate");
    // One buggy environment per project; an existing name is replaced (200).
    let second = json!({ "project": "fastnum/fastnum", "name": "shadow", "role": "buggy", "recipe": {} });
    assert_error(&app.post("/api/v1/environments", &second).await, 409, "conflict", "fastnum-0.3.0");
    let envs = app.get("/api/v1/environments?project=fastnum/fastnum").await.body;
    let buggy = envs.as_array().unwrap().iter().find(|e| e["role"] == "buggy").unwrap().clone();
    let same =
        json!({ "project": "fastnum/fastnum", "name": buggy["name"], "role": "buggy", "recipe": buggy["recipe"] });
    let r = app.post("/api/v1/environments", &same).await;
    assert_eq!((r.status, &r.body["recipe_hash"]), (200, &buggy["recipe_hash"]), "{}", r.body);
    let vague = app.get("/api/v1/reports?project=fastnum/fastnum&q=look%20wrong").await.body["items"][0]["id"]
        .as_i64()
        .unwrap();
    let r = app.post("/api/v1/attempts", &json!({ "report_id": vague, "agent": "x", "verdict": "hypothesis", "verdict_source": "llm", "candidate": "print(1)", "verify": true })).await;
    assert_error(&r, 400, "bad_request", "no deterministic oracle");
    let r = app.post("/api/v1/attempts", &json!({ "report_id": vague, "agent": "x", "verdict": "reproduced", "verdict_source": "human", "verify": true })).await;
    assert_error(&r, 400, "bad_request", "hypothesis");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_setup_is_an_error_verdict_with_its_log() {
    let app = spawn_app_with_workers(false, 1).await;
    app.project("a/lib").await;
    for (name, role, setup) in [
        ("old", "buggy", "echo installing somelib==2.1; echo 'No matching distribution' >&2; exit 3"),
        ("new", "fixed", "true"),
    ] {
        let r = app
            .post(
                "/api/v1/environments",
                &json!({ "project": "a/lib", "name": name, "role": role, "recipe": { "setup": [setup] } }),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let report = app
        .report(json!({ "project": "a/lib", "external_id": "1", "title": "crash",
        "oracle": { "kind": "fail_to_pass", "source": "authored", "command": "python3 candidate.py" } }))
        .await;
    let a = app.attempt(json!({ "report_id": report, "agent": "x", "verdict": "hypothesis", "verdict_source": "llm", "candidate": "raise SystemExit(1)", "verify": true })).await;
    drain(&app, Duration::from_secs(60)).await;
    let a = app.get(&format!("/api/v1/attempts/{}", a["id"])).await.body;
    assert_eq!(a["verdict"], "error", "never not_reproduced: {a}");
    assert_eq!(a["failure_cause"], "env_setup");
    let log = a["grade"]["detail"]["setup_log"].as_str().unwrap();
    assert!(log.contains("installing somelib==2.1") && log.contains("No matching distribution"), "{log}");
    assert!(a["grade"]["reason"].as_str().unwrap().contains("exited with status 3"), "{}", a["grade"]);
    // Bad environment requests are named.
    let bad = app
        .post("/api/v1/environments", &json!({ "project": "a/lib", "name": "x y", "role": "buggy", "recipe": {} }))
        .await;
    assert_error(&bad, 400, "bad_request", "name");
    let bad = app
        .post("/api/v1/environments", &json!({ "project": "a/lib", "name": "z", "role": "sideways", "recipe": {} }))
        .await;
    assert_error(&bad, 400, "bad_request", "role");
    let bad = app
        .post("/api/v1/environments", &json!({ "project": "no/such", "name": "z", "role": "buggy", "recipe": {} }))
        .await;
    assert_error(&bad, 400, "bad_request", "no/such");
    let bad = app
        .post(
            "/api/v1/environments",
            &json!({ "project": "a/lib", "name": "z", "role": "buggy", "recipe": { "env": { "A": "x\u{0}y" } } }),
        )
        .await;
    assert_error(&bad, 400, "bad_request", "NUL");
}

/// `failpass worker` processes on PostgreSQL: one is killed with SIGKILL in
/// the middle of a run; once its lease expires another takes the job over,
/// and exactly one result is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_run_leaves_exactly_one_result() {
    use failpass_shared::api::jobs::{CreateEnvironmentRequest, Recipe};
    use failpass_shared::model::{EnvironmentRole, JobStatus};

    let pg = crate::helpers::pg_storage().await;
    let s = pg.storage.clone();
    let data = tempfile::tempdir().unwrap();
    s.create_project(&serde_json::from_value(json!({ "slug": "a/lib" })).unwrap()).await.unwrap();
    for (name, role, mode) in [("b", EnvironmentRole::Buggy, "buggy"), ("f", EnvironmentRole::Fixed, "fixed")] {
        let recipe = Recipe { env: [("MODE".to_owned(), mode.to_owned())].into_iter().collect(), ..Default::default() };
        s.create_environment(
            "a/lib",
            &CreateEnvironmentRequest { project: "a/lib".into(), name: name.into(), role, recipe },
        )
        .await
        .unwrap();
    }
    // A marker on the command line tells this test's runs from any other test's.
    let marker = format!("kill-test-{}", uuid::Uuid::new_v4().simple());
    let request: failpass_shared::api::reports::CreateReportRequest = serde_json::from_value(json!({
        "project": "a/lib", "external_id": "1", "title": "slow crash",
        "oracle": { "kind": "fail_to_pass", "source": "authored", "command": format!("python3 candidate.py {marker}") } })).unwrap();
    let decision = failpass_shared::routing::decide(
        &Default::default(),
        &failpass_shared::routing::RoutingInput::from_request(&request),
    );
    let report =
        s.create_report(&failpass::db::NewReport { request, decision, origin: Default::default() }).await.unwrap();
    // Runs write nowhere but their own directory: the marker on the command line says a run is underway.
    let candidate =
        "import os, time\ntime.sleep(3)\nraise SystemExit(1 if os.environ['MODE'] == 'buggy' else 0)\n".to_owned();
    let (attempt, _) = s
        .create_attempt(
            &serde_json::from_value(json!({ "report_id": report.summary.id, "agent": "x", "verdict": "hypothesis",
            "verdict_source": "llm", "candidate": candidate, "verify": true }))
            .unwrap(),
        )
        .await
        .unwrap();
    let job_id = s.queue_overview(chrono::Utc::now(), &failpass::db::ProjectScope::All).await.unwrap().jobs[0].id;
    let worker = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_failpass"))
            .args(["worker", "--database-url", &pg.url, "--lease-seconds", "2", "--data-dir"])
            .arg(data.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut first = worker();
    // Wait until the first worker's run is underway.
    let start = Instant::now();
    while crate::sandbox::processes_with(&marker).is_empty() {
        assert!(start.elapsed() < Duration::from_secs(60), "the first worker never started the run");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let held = s.get_job(job_id, &failpass::db::ProjectScope::All).await.unwrap().unwrap();
    assert_eq!(held.status, JobStatus::Running);
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    if failpass::runner::sandbox::pid_isolation_available() {
        assert!(crate::sandbox::processes_with(&marker).is_empty(), "the killed worker's run died with it");
    }
    let mut second = worker();
    let start = Instant::now();
    let job = loop {
        let job = s.get_job(job_id, &failpass::db::ProjectScope::All).await.unwrap().unwrap();
        if job.status == JobStatus::Done || job.status == JobStatus::Failed {
            break job;
        }
        assert!(start.elapsed() < Duration::from_secs(90), "the job was not taken over: {job:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    second.kill().unwrap();
    second.wait().unwrap();
    assert_eq!((job.status, job.tries), (JobStatus::Done, 2), "{job:?}");
    assert_ne!(job.lease_owner, held.lease_owner, "another worker finished it");
    let detail = s.get_attempt(attempt.id, &failpass::db::ProjectScope::All).await.unwrap().unwrap();
    assert_eq!(detail.runs.len(), 2, "exactly one result: one buggy and one fixed run");
    assert_eq!(detail.attempt.verdict, failpass_shared::model::Verdict::Reproduced);
    pg.drop_now().await;
}

/// An agent command that fails (here: exits 2) is the agent's own failure,
/// `other`, not a poor decision about a candidate; and its error is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_fails_is_recorded_as_other() {
    let generator = failpass::runner::refine::Generator::Command {
        name: "broken-agent".into(),
        command: "echo 'no API key' >&2; exit 2".into(),
        timeout: Duration::from_secs(30),
        env: vec![],
        files: vec![],
    };
    let app = crate::helpers::spawn_with(true, 2, generator).await;
    drain(&app, Duration::from_secs(180)).await;
    let by_key = attempts_by_key(&app).await;
    let a = by_key.values().find(|a| a["agent"] == "broken-agent").expect("the agent's loop attempt");
    assert_eq!(a["verdict"], "error", "{}", a["grade"]);
    assert_eq!(a["failure_cause"], "other", "{}", a["grade"]);
    let its = a["grade"]["refine"]["iterations"].as_array().unwrap();
    assert!(its[0]["error"].as_str().unwrap().contains("no API key"), "{its:?}");
}

/// The refine loop with an agent command: it reads the report and the
/// feedback on stdin; its first candidate misses, its second (told why)
/// reproduces. Costs add up across iterations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refine_loop_feeds_verification_back_to_an_agent_command() {
    // The agent runs sandboxed (its own user, a private /tmp): its script
    // comes in a variable, passed as `--agent-env` passes one.
    let script = r#"import json, sys
req = json.load(sys.stdin)
assert req["report"]["title"].startswith("softmax"), req
history = req["history"]
if not history:
    code = "import fastnum\nprint(fastnum.softmax([1.0, 1.0]))\n"
else:
    assert history[-1]["verdict"] == "not_reproduced" and "does not fail" in history[-1]["reason"], history
    code = "import math, fastnum\nassert not any(math.isnan(p) for p in fastnum.softmax([1000.0, 1000.0])), 'probabilities contain nan: [nan, nan]'\n"
print(json.dumps({"candidate": code, "cost_usd": 0.25, "tokens_in": 1000, "tokens_out": 50, "model": "test-model"}))
"#;
    let generator = failpass::runner::refine::Generator::Command {
        name: "test-agent".into(),
        command: "python3 -c \"$AGENT_PY\"".into(),
        timeout: Duration::from_secs(30),
        env: vec![("AGENT_PY".into(), script.into())],
        files: vec![],
    };
    let app = crate::helpers::spawn_with(true, 2, generator).await;
    drain(&app, Duration::from_secs(180)).await;
    let by_key = attempts_by_key(&app).await;
    let softmax_report = by_key["101-good"]["report_id"].as_i64().unwrap();
    let a = by_key
        .values()
        .find(|a| a["agent"] == "test-agent" && a["report_id"] == softmax_report)
        .expect("the agent's loop attempt");
    assert_eq!(a["verdict"], "reproduced", "{}", a["grade"]);
    assert_eq!(a["iterations"], 2);
    assert_eq!(a["model"], "test-model", "the model the agent reported is the attempt's");
    assert_eq!(a["cost_usd"], 0.5);
    assert_eq!(a["tokens_in"], 2000);
    assert!(a["candidate"].as_str().unwrap().contains("1000.0"), "the successful candidate is kept");
    let its = a["grade"]["refine"]["iterations"].as_array().unwrap();
    assert_eq!((its[0]["verdict"].as_str(), its[1]["verdict"].as_str()), (Some("not_reproduced"), Some("reproduced")));
    let runs = app.get(&format!("/api/v1/attempts/{}", a["id"])).await.body["runs"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 4, "both iterations' runs are kept");
    // Each run says which iteration ran it.
    let iterations: Vec<i64> = runs.iter().map(|r| r["iteration"].as_i64().unwrap()).collect();
    assert_eq!(iterations, [1, 1, 2, 2], "{runs:?}");
    // Only agent_first reports with an oracle can be refined.
    let vague = app.get("/api/v1/reports?project=fastnum/fastnum&q=look%20wrong").await.body["items"][0]["id"]
        .as_i64()
        .unwrap();
    assert_error(&app.post("/api/v1/refine", &json!({ "report_id": vague })).await, 400, "bad_request", "agent_first");
    assert_error(&app.post("/api/v1/refine", &json!({ "report_id": 99999 })).await, 404, "not_found", "99999");
    let r = app.post("/api/v1/refine", &json!({ "report_id": softmax_report })).await;
    assert_eq!(r.status, 202, "{}", r.body);
}

/// NDJSON carries environments and `verify` attempts: an import queues the
/// verification in the transaction that stores the attempts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_attempts_with_verify_are_graded() {
    let app = spawn_app_with_workers(false, 1).await;
    let lines = [
        json!({"kind": "project", "slug": "a/lib"}),
        json!({"kind": "environment", "project": "a/lib", "name": "v1", "role": "buggy", "recipe": {"env": {"MODE": "buggy"}}}),
        json!({"kind": "environment", "project": "a/lib", "name": "v2", "role": "fixed", "recipe": {"env": {"MODE": "fixed"}}}),
        json!({"kind": "report", "project": "a/lib", "external_id": "1", "title": "mode bug",
               "oracle": {"kind": "fail_to_pass", "source": "authored", "command": "python3 candidate.py"}}),
        json!({"kind": "report", "project": "a/lib", "external_id": "2", "title": "no oracle here"}),
        json!({"kind": "attempt", "report": {"project": "a/lib", "external_id": "1"}, "agent": "x", "attempt_key": "a",
               "verdict": "hypothesis", "verdict_source": "llm", "verify": true,
               "candidate": "import os\nraise SystemExit(1 if os.environ['MODE'] == 'buggy' else 0)\n"}),
        json!({"kind": "attempt", "report": {"project": "a/lib", "external_id": "2"}, "agent": "x", "attempt_key": "b",
               "verdict": "hypothesis", "verdict_source": "llm", "verify": true, "candidate": "pass\n"}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let post = || async { app.import_ndjson(body.clone()).await.json::<Value>().await.unwrap() };
    let first = post().await;
    assert_eq!((first["created"].as_i64(), first["rejected"].as_i64()), (Some(6), Some(1)), "{first}");
    assert_eq!(first["rejections"][0]["record"], 7);
    assert_eq!(first["rejections"][0]["field"], "verify");
    drain(&app, Duration::from_secs(60)).await;
    let a = &app.get("/api/v1/attempts?project=a/lib").await.body["items"][0];
    assert_eq!((a["attempt_key"].as_str(), a["verdict"].as_str()), (Some("a"), Some("reproduced")), "{a}");
    let again = post().await;
    assert_eq!((again["created"].as_i64(), again["unchanged"].as_i64()), (Some(0), Some(6)), "{again}");
    assert_eq!(app.get("/api/v1/jobs").await.body["queued"], 0, "an unchanged attempt queues nothing");
}

/// Environments from a recipe: a virtual environment with `somelib==2.1`
/// for buggy and `==2.0` for fixed, built once and reused; re-checks against
/// newer releases say `no longer reproduces`, then `regressed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn venv_environments_are_built_once_and_rechecks_find_a_regression() {
    let app = spawn_app_with_workers(false, 1).await;
    let pkgs = tempfile::tempdir().unwrap();
    for (version, bug) in [("2.0", false), ("2.1", true), ("2.2", false), ("2.3", true)] {
        let dir = pkgs.path().join(version);
        std::fs::create_dir_all(dir.join("somelib")).unwrap();
        std::fs::write(
            dir.join("somelib/__init__.py"),
            format!("VERSION = {version:?}\nBUG = {}\n", if bug { "True" } else { "False" }),
        )
        .unwrap();
        std::fs::write(
            dir.join("setup.py"),
            format!("from setuptools import setup\nsetup(name='somelib', version={version:?}, packages=['somelib'])\n"),
        )
        .unwrap();
    }
    app.project("a/venv").await;
    for (name, role, version) in [
        ("somelib-2.1", "buggy", "2.1"),
        ("somelib-2.0", "fixed", "2.0"),
        ("somelib-2.2", "release", "2.2"),
        ("somelib-2.3", "release", "2.3"),
    ] {
        let recipe = json!({
            "dir": pkgs.path().join(version),
            "setup": ["python3 -m venv venv", "venv/bin/pip install --quiet --no-index --no-build-isolation ."],
            "env": { "PATH": "{env}/venv/bin:/usr/bin:/bin" },
            "version": format!("somelib {version}"),
        });
        let r = app
            .post("/api/v1/environments", &json!({ "project": "a/venv", "name": name, "role": role, "recipe": recipe }))
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let report = app
        .report(json!({ "project": "a/venv", "external_id": "9", "title": "BUG is set",
        "oracle": { "kind": "fail_to_pass", "source": "authored",
            // The venv's own scripts must work where it was built (absolute shebangs).
            "command": "pip --version > /dev/null && python candidate.py" } }))
        .await;
    let candidate = "import somelib\nassert not somelib.BUG, f'somelib {somelib.VERSION} has the bug'\n";
    let mut ids = Vec::new();
    for key in ["one", "two"] {
        let a = app.attempt(json!({ "report_id": report, "agent": "x", "attempt_key": key, "verdict": "hypothesis", "verdict_source": "llm",
            "candidate": candidate, "verify": true })).await;
        ids.push(a["id"].as_i64().unwrap());
        drain(&app, Duration::from_secs(120)).await; // one after the other: the second finds the cache
    }
    let first = app.get(&format!("/api/v1/attempts/{}", ids[0])).await.body;
    let second = app.get(&format!("/api/v1/attempts/{}", ids[1])).await.body;
    for a in [&first, &second] {
        assert_eq!(a["verdict"], "reproduced", "{}", a["grade"]);
    }
    assert!(first["runs"][0]["output"].as_str().unwrap().contains("somelib 2.1 has the bug"), "{}", first["runs"][0]);
    assert_eq!(first["grade"]["environments"]["buggy"]["built_now"], true);
    assert_eq!(second["grade"]["environments"]["buggy"]["built_now"], false, "built once, then reused");
    assert_eq!(
        first["grade"]["environments"]["buggy"]["recipe_hash"],
        second["grade"]["environments"]["buggy"]["recipe_hash"]
    );

    for (env, outcome) in [("somelib-2.2", "no_longer_reproduces"), ("somelib-2.3", "regressed")] {
        let r = app.post("/api/v1/reruns", &json!({ "attempt_id": ids[0], "recheck_environment": env })).await;
        assert_eq!(r.status, 202, "{}", r.body);
        drain(&app, Duration::from_secs(120)).await;
        let a = app.get(&format!("/api/v1/attempts/{}", ids[0])).await.body;
        assert_eq!(a["grade"]["recheck"]["outcome"], outcome, "{}", a["grade"]);
        assert_eq!(a["grade"]["recheck"]["version"], format!("somelib {}", &env[8..]));
        assert_eq!(a["verdict"], "reproduced");
        // Each release run names the release it ran on.
        let release_runs: Vec<&Value> =
            a["runs"].as_array().unwrap().iter().filter(|r| r["environment"] == "release").collect();
        assert!(!release_runs.is_empty());
        let named: Vec<&str> = release_runs.iter().map(|r| r["release"].as_str().unwrap()).collect();
        assert!(named.contains(&format!("somelib {}", &env[8..]).as_str()), "{named:?}");
    }
    // Found fixed on 2.2 and failing on 2.3: the report is regressed, and
    // stays so when 2.3 is re-checked again (it used to read "still reproduces").
    let path = format!("/api/v1/reports/{report}");
    let status = || async { app.get(&path).await.body["status"].as_str().unwrap().to_owned() };
    assert_eq!(status().await, "regressed");
    let r = app.post("/api/v1/reruns", &json!({ "attempt_id": ids[0], "recheck_environment": "somelib-2.3" })).await;
    assert_eq!(r.status, 202, "{}", r.body);
    drain(&app, Duration::from_secs(120)).await;
    let a = app.get(&format!("/api/v1/attempts/{}", ids[0])).await.body;
    assert_eq!(a["grade"]["recheck"]["outcome"], "regressed", "{}", a["grade"]);
    let history: Vec<(&str, &str)> = a["grade"]["rechecks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["environment"].as_str().unwrap(), h["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(history, [("somelib-2.2", "no_longer_reproduces"), ("somelib-2.3", "regressed")], "kept per release");
    assert_eq!(status().await, "regressed");
    let listed = app.get("/api/v1/reports?project=a/venv&status=regressed").await.body;
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
    // A re-check that finds it fixed on the newest release ends the regression.
    let r = app.post("/api/v1/reruns", &json!({ "attempt_id": ids[0], "recheck_environment": "somelib-2.2" })).await;
    assert_eq!(r.status, 202, "{}", r.body);
    drain(&app, Duration::from_secs(120)).await;
    assert_eq!(status().await, "regressed", "2.2 is older than 2.3: the 2.3 result still stands");
    let data = app.data_dir().join("envs");
    let entries: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries.len(), 4, "one built environment per recipe, no half-built leftovers: {entries:?}");
}

/// The data directory itself only root's (0700) and its parent too: runs
/// still grade, since each run's root gets its environment bound by root
/// whatever the host's modes on the way (it used to be retried for ever
/// with "cannot read the environment cache").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_data_directory_is_no_obstacle_to_grading() {
    use std::os::unix::fs::PermissionsExt;
    if !failpass::runner::sandbox::pid_isolation_available() {
        eprintln!("no namespaces here: runs see the host's file system and its modes");
        return;
    }
    let app = spawn_app_with_workers(false, 1).await;
    let data = app.data_dir();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    app.project("a/lib").await;
    for (name, role) in [("b", "buggy"), ("f", "fixed")] {
        app.post("/api/v1/environments", &json!({ "project": "a/lib", "name": name, "role": role, "recipe": {} }))
            .await;
    }
    let report = app
        .report(json!({ "project": "a/lib", "external_id": "1", "title": "t",
        "oracle": { "kind": "fail_to_pass", "source": "authored", "command": "python3 candidate.py" } }))
        .await;
    let a = app.attempt(json!({ "report_id": report, "agent": "x", "verdict": "hypothesis", "verdict_source": "llm", "candidate": "pass\n", "verify": true })).await;
    let queue = drain(&app, Duration::from_secs(60)).await;
    assert_eq!(queue["failed_last_day"], 0, "no job failed on the way: {queue}");
    let graded = app.get(&format!("/api/v1/attempts/{}", a["id"])).await.body;
    assert_eq!(graded["verdict"], "not_reproduced", "graded at once: {}", graded["grade"]);
}

/// An LLM's lead rerun by the oracle is regraded in place; the LLM's verdict
/// is kept, so LLM-verdict precision scores it (right once, wrong once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leads_regraded_in_place_score_llm_precision() {
    let app = spawn_app_with_workers(false, 1).await;
    app.project("l/lib").await;
    for (name, role) in [("v1", "buggy"), ("v2", "fixed")] {
        let r = app
            .post(
                "/api/v1/environments",
                &json!({"project": "l/lib", "name": name, "role": role, "recipe": {"env": {"MODE": role}}}),
            )
            .await;
        assert!(r.status < 300, "{}", r.body);
    }
    let report = app
        .report(json!({"project": "l/lib", "external_id": "1", "title": "mode bug",
        "oracle": {"kind": "fail_to_pass", "source": "authored", "command": "python3 candidate.py"}}))
        .await;
    let fails_on_buggy = "import os\nraise SystemExit(1 if os.environ['MODE'] == 'buggy' else 0)\n";
    let mut ids = Vec::new();
    for (agent, candidate) in [("right", fails_on_buggy), ("wrong", "pass\n")] {
        let a = app.attempt(json!({"report_id": report, "agent": agent, "verdict": "lead", "verdict_source": "llm", "candidate": candidate})).await;
        ids.push(a["id"].as_i64().unwrap());
    }
    let before = app.get("/api/v1/oracles?project=l/lib").await.body;
    assert_eq!(before["llm_precision"]["of"], 0, "nothing checked yet: {before}");
    for id in &ids {
        let r = app.post("/api/v1/reruns", &json!({"attempt_id": id})).await;
        assert!(r.status < 300, "{}", r.body);
    }
    drain(&app, Duration::from_secs(60)).await;
    let right = app.get(&format!("/api/v1/attempts/{}", ids[0])).await.body;
    assert_eq!(
        (right["verdict"].as_str(), right["verdict_source"].as_str()),
        (Some("reproduced"), Some("deterministic")),
        "{right}"
    );
    let after = app.get("/api/v1/oracles?project=l/lib").await.body;
    assert_eq!(
        (after["llm_precision"]["count"].as_i64(), after["llm_precision"]["of"].as_i64()),
        (Some(1), Some(2)),
        "{after}"
    );
}

/// Setup commands run as a sandbox user of their own (never root), with
/// outbound network (package installs) but not the host's loopback, and say
/// so in the build's log; the built tree then belongs to root, so no
/// candidate can change what others are graded in.
#[tokio::test]
async fn setup_runs_unprivileged_with_the_network_and_runs_cannot_change_the_built_tree() {
    use std::os::unix::fs::MetadataExt;
    assert!(failpass::runner::sandbox::switches_user(), "runner tests run as root, as runners do");
    assert!(failpass::runner::sandbox::net::outbound_available(), "slirp4netns is installed by `cargo xtask test`");
    // Listening on every address: the host's loopback must stay out of reach, its other addresses not.
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let host = crate::escape::host_address().expect("a non-loopback address on this machine");
    let data = tempfile::tempdir().unwrap();
    let mut cache = failpass::runner::env::EnvCache::new(data.path().join("envs"));
    // As `--run-allow-network HOST/32` allows it: the host's own addresses are fenced off otherwise.
    cache.allow_networks = vec![ipnet::IpNet::from(host)];
    let probe = format!(
        "python3 - > net.txt <<'PY'\n{}PY",
        crate::escape::connect_probe(&[
            ("loopback", "127.0.0.1", port),
            ("gateway", "10.0.2.2", port),
            ("host", &host.to_string(), port),
        ])
    );
    let recipe = failpass_shared::api::jobs::Recipe {
        setup: vec!["id -u > uid.txt".into(), probe, "echo graded-in > lib.txt".into()],
        ..Default::default()
    };
    let built = cache.get(&recipe, data.path()).await.unwrap();
    let uid: u32 = std::fs::read_to_string(built.dir.join("uid.txt")).unwrap().trim().parse().unwrap();
    assert_ne!(uid, 0, "setup ran as root");
    let net = std::fs::read_to_string(built.dir.join("net.txt")).unwrap();
    assert!(net.contains("host connected"), "setup has outbound network: {net}");
    assert!(net.contains("loopback refused") && net.contains("gateway refused"), "but not the host's loopback: {net}");
    let log = std::fs::read_to_string(built.dir.parent().unwrap().join(".built")).unwrap();
    assert!(
        log.starts_with(&format!("# setup runs as uid {uid} (not root) in a root of its own, with outbound network")),
        "{log}"
    );
    for f in ["lib.txt", "uid.txt"] {
        let meta = std::fs::metadata(built.dir.join(f)).unwrap();
        assert_eq!((meta.uid(), meta.mode() & 0o022), (0, 0), "{f}: root's, and nobody else may write it");
        assert_eq!(meta.mode() & 0o004, 0o004, "{f}: everyone may read it");
    }
    // Another project's environment in the same cache.
    let other = failpass_shared::api::jobs::Recipe {
        setup: vec!["echo another-projects-secret > secret.txt".into()],
        ..Default::default()
    };
    let other = cache.get(&other, data.path()).await.unwrap();
    // A candidate with its environment bound in and the cache hidden, as verification runs it.
    let script = "cat \"$ENV/lib.txt\"; echo tampered >> \"$ENV/lib.txt\" 2>&1; rm -f \"$ENV/lib.txt\" 2>&1; ls \"$CACHE\"; cat \"$OTHER/secret.txt\" 2>&1; echo done";
    let mut c = failpass::runner::sandbox::Command::new("/bin/sh", ["-c", script]);
    c.env.push(("ENV".into(), built.dir.to_string_lossy().into_owned()));
    c.env.push(("CACHE".into(), cache.root().to_string_lossy().into_owned()));
    c.env.push(("OTHER".into(), other.dir.to_string_lossy().into_owned()));
    c.binds.push((built.dir.clone(), false));
    let r = failpass::runner::sandbox::run(&c, None).await.unwrap();
    assert!(r.output.starts_with("graded-in\n"), "the run reads its environment: {}", r.output);
    assert!(r.output.contains("Read-only file system"), "{}", r.output);
    assert_eq!(
        std::fs::read_to_string(built.dir.join("lib.txt")).unwrap(),
        "graded-in\n",
        "the environment is unchanged"
    );
    assert!(
        !r.output.contains("secret") || r.output.contains("No such file"),
        "another project's environment is out of sight: {}",
        r.output
    );
    assert!(
        !r.output.contains(&format!("\n{}\n", other.hash)),
        "the cache lists only the run's own environment: {}",
        r.output
    );
    assert!(r.output.contains(&format!("\n{}\n", built.hash)), "{}", r.output);
}

/// The refine loop's agent command: a user of its own, and at its timeout
/// everything it started dies, not only the shell that started it.
#[tokio::test]
async fn the_agent_command_runs_unprivileged_and_its_whole_tree_dies_at_the_timeout() {
    let scratch = tempfile::tempdir().unwrap();
    let input = json!({"report": {"title": "t"}, "iteration": 1, "history": []});
    let p = failpass::runner::refine::agent_command(
        "id -u",
        &input,
        Duration::from_secs(10),
        &[],
        scratch.path(),
        &[],
        &[],
    )
    .await
    .unwrap();
    assert_ne!(p.candidate.trim(), "0", "the agent ran as root");
    let key = format!("{}.{}", 61, rand_digits());
    let started = Instant::now();
    let e = failpass::runner::refine::agent_command(
        &format!("sleep {key} & sleep {key}; echo late"),
        &input,
        Duration::from_secs(1),
        &[],
        scratch.path(),
        &[],
        &[],
    )
    .await
    .unwrap_err();
    assert!(e.contains("took longer than 1 s"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(crate::sandbox::processes_with(&key).is_empty(), "the agent's children outlived its timeout");
    // Variables are the ones passed, nothing of the server's.
    let p = failpass::runner::refine::agent_command(
        "echo \"${API_KEY:-none} ${CARGO_MANIFEST_DIR:-none}\"",
        &input,
        Duration::from_secs(10),
        &[("API_KEY".into(), "k".into())],
        scratch.path(),
        &[],
        &[],
    )
    .await
    .unwrap();
    assert_eq!(p.candidate.trim(), "k none");
}

fn rand_digits() -> String {
    uuid::Uuid::new_v4().as_u128().to_string()[..8].to_owned()
}
