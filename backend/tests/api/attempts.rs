use serde_json::json;

use crate::helpers::{assert_error, spawn_app};
use crate::reports::seed_reports;

#[tokio::test]
async fn an_attempt_updates_its_report_in_the_same_write() {
    let app = spawn_app().await;
    let ids = seed_reports(&app).await;
    let r = ids[0];
    let a = app
        .attempt(json!({"report_id": r, "agent": "repgen", "model": "gpt-4o", "cost_usd": 0.5,
        "verdict": "not_reproduced", "verdict_source": "deterministic", "failure_cause": "wrong_failure"}))
        .await;
    assert_eq!(a["counts"], false);
    assert_eq!(a["goal"], "reproduce");
    let report = app.get(&format!("/api/v1/reports/{r}")).await.body;
    assert_eq!(report["status"], "not_reproduced");
    assert_eq!(report["best_verdict"], "not_reproduced");

    let b = app.attempt(json!({"report_id": r, "agent": "repgen", "cost_usd": 1.25, "verdict": "reproduced",
        "verdict_source": "deterministic", "started_at": "2026-05-01T10:00:00Z", "ended_at": "2026-05-01T10:05:00Z",
        "signals": {"syntax": {"passed": true, "source": "static"}, "failure_behaviour": {"passed": true, "source": "deterministic", "detail": "matched"}}})).await;
    assert_eq!(b["counts"], true);
    assert_eq!(b["wall_seconds"], 300.0, "wall time from start and end");
    assert_eq!(b["signals"]["failure_behaviour"]["detail"], "matched");
    let report = app.get(&format!("/api/v1/reports/{r}")).await.body;
    assert_eq!(report["status"], "reproduced");
    assert_eq!(report["best_verdict"], "reproduced");
    assert_eq!(report["attempts"], 2);
    assert_eq!(report["cost_usd"], 1.75);

    // a later worse verdict does not lower the best one
    app.attempt(json!({"report_id": r, "agent": "x", "verdict": "error", "verdict_source": "deterministic"})).await;
    assert_eq!(app.get(&format!("/api/v1/reports/{r}")).await.body["best_verdict"], "reproduced");

    let detail = app.get(&format!("/api/v1/attempts/{}", b["id"])).await.body;
    assert_eq!(detail["id"], b["id"]);
    assert_eq!(detail["runs"].as_array().unwrap().len(), 0);
}

#[tokio::test]
async fn vague_reports_count_only_after_a_human_accepts() {
    let app = spawn_app().await;
    seed_reports(&app).await;
    let vague = app.report(json!({"project": "jax-ml/jax", "external_id": "301", "title": "pmap wrong", "body": "Wrong.",
        "oracle": {"kind": "fail_to_pass", "source": "authored", "command": "python repro.py", "authoring_minutes": 20}})).await;
    assert_eq!(app.get(&format!("/api/v1/reports/{vague}")).await.body["vague"], true);
    let a = app
        .attempt(json!({"report_id": vague, "agent": "a", "verdict": "reproduced", "verdict_source": "deterministic"}))
        .await;
    assert_eq!(a["counts"], false);
    assert_eq!(app.get(&format!("/api/v1/reports/{vague}")).await.body["status"], "needs_review");
    // The figures say what waits for review beside the rate it would change.
    let figures = "/api/v1/figures?project=jax-ml/jax&q=pmap";
    let row = app.get(figures).await.body["rows"][0].clone();
    assert_eq!(
        (row["reports_reproduced"].as_u64(), row["reports_awaiting_review"].as_u64()),
        (Some(0), Some(1)),
        "{row}"
    );
    assert_eq!(row["attempts_awaiting_review"], 1, "{row}");
    let b = app.attempt(json!({"report_id": vague, "agent": "a", "verdict": "reproduced", "verdict_source": "deterministic", "review": "accepted", "reviewer": "m"})).await;
    assert_eq!(b["counts"], true);
    assert_eq!(
        b["reviewer"],
        crate::helpers::TEST_ADMIN,
        "a review sent with an attempt is the caller's, whatever `reviewer` says"
    );
    assert_eq!(app.get(&format!("/api/v1/reports/{vague}")).await.body["status"], "reproduced");
    let row = app.get(figures).await.body["rows"][0].clone();
    assert_eq!(
        (row["reports_reproduced"].as_u64(), row["reports_awaiting_review"].as_u64()),
        (Some(1), Some(0)),
        "{row}"
    );
}

#[tokio::test]
async fn bad_attempts_are_rejected_and_change_nothing() {
    let app = spawn_app().await;
    let ids = seed_reports(&app).await;
    let r = ids[1];
    assert_error(
        &app.post(
            "/api/v1/attempts",
            &json!({"report_id": r, "agent": "a", "verdict": "reproduced", "verdict_source": "llm"}),
        )
        .await,
        400,
        "bad_request",
        "lead",
    );
    assert_error(
        &app.post(
            "/api/v1/attempts",
            &json!({"report_id": r, "agent": "a", "verdict": "confirmed", "verdict_source": "llm"}),
        )
        .await,
        400,
        "bad_request",
        "review",
    );
    assert_error(&app.post("/api/v1/attempts", &json!({"report_id": r, "agent": "a", "goal": "fix", "verdict": "reproduced", "verdict_source": "deterministic"})).await, 400, "bad_request", "goal `fix`");
    assert_error(&app.post("/api/v1/attempts", &json!({"report_id": r, "agent": "a", "verdict": "error", "verdict_source": "deterministic", "cost_usd": -2})).await, 400, "bad_request", "cost_usd");
    assert_error(
        &app.post(
            "/api/v1/attempts",
            &json!({"report_id": r, "agent": "a", "verdict": "maybe", "verdict_source": "deterministic"}),
        )
        .await,
        400,
        "bad_request",
        "unknown variant `maybe`",
    );
    assert_error(
        &app.post(
            "/api/v1/attempts",
            &json!({"report_id": 424242, "agent": "a", "verdict": "error", "verdict_source": "deterministic"}),
        )
        .await,
        400,
        "bad_request",
        "report_id",
    );
    assert_error(&app.post("/api/v1/attempts", &json!({"report_id": r, "agent": "a", "verdict": "error", "verdict_source": "deterministic", "started_at": "2026-01-02T00:00:00Z", "ended_at": "2026-01-01T00:00:00Z"})).await, 400, "bad_request", "ended_at");
    assert_error(
        &app.post(
            "/api/v1/attempts",
            &json!({"report_id": ids[8], "agent": "a", "verdict": "reproduced", "verdict_source": "deterministic"}),
        )
        .await,
        400,
        "bad_request",
        "no deterministic oracle",
    );
    assert_error(
        &app.post(
            "/api/v1/attempts",
            &json!({"report_id": r, "agent": "a", "verdict": "lead", "verdict_source": "deterministic"}),
        )
        .await,
        400,
        "bad_request",
        "verdict_source",
    );
    assert_error(&app.post("/api/v1/attempts", &json!({"report_id": r, "agent": "a", "verdict": "error", "verdict_source": "deterministic", "cost_usd": 1e308})).await, 400, "bad_request", "cost_usd");
    let first = app.attempt(json!({"report_id": r, "agent": "a", "verdict": "error", "verdict_source": "deterministic", "attempt_key": "k1", "cost_usd": 0.1})).await;
    let retry = app.post("/api/v1/attempts", &json!({"report_id": r, "agent": "a", "verdict": "error", "verdict_source": "deterministic", "attempt_key": "k1", "cost_usd": 0.1})).await;
    assert_eq!(retry.status, 200, "an identical retry is answered with the stored attempt: {}", retry.body);
    assert_eq!(retry.body["id"], first["id"]);
    assert_error(&app.post("/api/v1/attempts", &json!({"report_id": r, "agent": "a", "verdict": "error", "verdict_source": "deterministic", "attempt_key": "k1", "cost_usd": 5.0})).await, 409, "conflict", "k1");
    let report = app.get(&format!("/api/v1/reports/{r}")).await.body;
    assert_eq!(report["attempts"], 1, "only the one good attempt was stored");
    assert_eq!(report["cost_usd"], 0.1);
    assert_error(&app.get("/api/v1/attempts/99999").await, 404, "not_found", "attempt 99999");
}

#[tokio::test]
async fn attempts_list_pages_newest_first() {
    let app = spawn_app().await;
    let ids = seed_reports(&app).await;
    for i in 0..5 {
        app.attempt(json!({"report_id": ids[i % 2], "agent": if i % 2 == 0 { "even" } else { "odd" }, "verdict": "not_reproduced", "verdict_source": "deterministic"})).await;
    }
    let p1 = app.get("/api/v1/attempts?limit=3").await.body;
    let got: Vec<i64> = p1["items"].as_array().unwrap().iter().map(|a| a["id"].as_i64().unwrap()).collect();
    assert_eq!(got, [5, 4, 3]);
    let p2 = app.get(&format!("/api/v1/attempts?limit=3&cursor={}", p1["next_cursor"].as_str().unwrap())).await.body;
    assert_eq!(p2["items"].as_array().unwrap().len(), 2);
    assert!(p2["next_cursor"].is_null());
    assert_eq!(app.get("/api/v1/attempts?agent=odd").await.body["items"].as_array().unwrap().len(), 2);
    assert_eq!(
        app.get(&format!("/api/v1/attempts?report_id={}", ids[0])).await.body["items"].as_array().unwrap().len(),
        3
    );
    assert_error(&app.get("/api/v1/attempts?report_id=abc").await, 400, "bad_request", "report_id");
    assert_error(&app.get("/api/v1/attempts?cursor=abc").await, 400, "bad_request", "cursor");
}

#[tokio::test]
async fn a_human_review_turns_a_lead_into_a_confirmation_and_back() {
    let app = crate::helpers::spawn_app().await;
    app.project("r/one").await;
    let report = app
        .report(serde_json::json!({"project": "r/one", "external_id": "1", "title": "loss is nan",
        "oracle": {"kind": "llm_judge"}}))
        .await;
    let lead = app
        .attempt(serde_json::json!({"report_id": report, "agent": "x", "verdict": "lead", "verdict_source": "llm"}))
        .await;
    let id = lead["id"].as_i64().unwrap();
    assert_eq!(lead["counts"], false, "a lead does not count");
    assert_eq!(app.get(&format!("/api/v1/reports/{report}")).await.body["status"], "needs_review");
    let r = app
        .post(
            &format!("/api/v1/attempts/{id}/review"),
            &serde_json::json!({"review": "accepted", "comment": "ran it myself"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!((r.body["verdict"].as_str(), r.body["counts"].as_bool()), (Some("confirmed"), Some(true)));
    assert_eq!(r.body["review_comment"], "ran it myself");
    assert_eq!(r.body["reviewer"], crate::helpers::TEST_ADMIN, "the reviewer is who signed in, not a field");
    assert_eq!(app.get(&format!("/api/v1/reports/{report}")).await.body["status"], "reproduced");
    let r = app.post(&format!("/api/v1/attempts/{id}/review"), &serde_json::json!({"review": "rejected"})).await;
    assert_eq!((r.body["verdict"].as_str(), r.body["counts"].as_bool()), (Some("lead"), Some(false)), "{}", r.body);
    assert_ne!(app.get(&format!("/api/v1/reports/{report}")).await.body["status"], "reproduced");
    // Wrong input is named.
    let h = app
        .attempt(
            serde_json::json!({"report_id": report, "agent": "y", "verdict": "hypothesis", "verdict_source": "llm"}),
        )
        .await;
    crate::helpers::assert_error(
        &app.post(&format!("/api/v1/attempts/{}/review", h["id"]), &serde_json::json!({"review": "accepted"})).await,
        400,
        "bad_request",
        "hypothesis",
    );
    crate::helpers::assert_error(
        &app.post("/api/v1/attempts/99999/review", &serde_json::json!({"review": "accepted"})).await,
        404,
        "not_found",
        "99999",
    );
    crate::helpers::assert_error(
        &app.post(&format!("/api/v1/attempts/{id}/review"), &serde_json::json!({"review": "maybe"})).await,
        400,
        "bad_request",
        "review",
    );
    crate::helpers::assert_error(
        &app.post(
            &format!("/api/v1/attempts/{id}/review"),
            &serde_json::json!({"review": "accepted", "reviewer": "someone else"}),
        )
        .await,
        400,
        "bad_request",
        "unknown field `reviewer`",
    );
}

/// An attempt without a cost is unknown, not $0: null in the API, left out
/// of the cost figures and distributions, and counted apart.
#[tokio::test]
async fn an_unknown_cost_stays_unknown() {
    let app = crate::helpers::spawn_app().await;
    app.project("c/cost").await;
    let report = app.report(serde_json::json!({"project": "c/cost", "external_id": "1", "title": "t"})).await;
    let known = app
        .attempt(serde_json::json!({"report_id": report, "agent": "a", "attempt_key": "k", "verdict": "reproduced",
            "verdict_source": "human", "cost_usd": 2.0}))
        .await;
    assert_eq!(known["cost_usd"], 2.0);
    let unknown = app
        .attempt(serde_json::json!({"report_id": report, "agent": "b", "verdict": "not_reproduced",
            "verdict_source": "human"}))
        .await;
    assert!(unknown["cost_usd"].is_null(), "{unknown}");
    let explicit_null = app
        .attempt(serde_json::json!({"report_id": report, "agent": "c", "verdict": "not_reproduced",
            "verdict_source": "human", "cost_usd": null}))
        .await;
    assert!(explicit_null["cost_usd"].is_null(), "{explicit_null}");
    let f = app.get("/api/v1/figures?project=c/cost").await.body;
    let all = &f["rows"][0];
    assert_eq!(all["attempts"], 3, "{all}");
    assert_eq!(all["attempts_without_cost"], 2, "{all}");
    assert_eq!(all["cost_mean_attempt_usd"], 2.0, "the mean is over the attempt with a cost: {all}");
    assert_eq!(all["cost_per_reproduction_usd"], 2.0, "{all}");
    let d = app.get("/api/v1/distributions?metric=cost_usd&project=c/cost").await.body;
    assert_eq!(d["groups"][0]["n"], 1, "unknown costs are not $0 points: {d}");
    // Only unknown costs: no cost figure at all.
    app.project("c/none").await;
    let r2 = app.report(serde_json::json!({"project": "c/none", "external_id": "1", "title": "t"})).await;
    app.attempt(serde_json::json!({"report_id": r2, "agent": "a", "verdict": "reproduced", "verdict_source": "human"}))
        .await;
    let all = &app.get("/api/v1/figures?project=c/none").await.body["rows"][0];
    assert!(all["cost_per_reproduction_usd"].is_null() && all["cost_mean_attempt_usd"].is_null(), "{all}");
    assert!(all["cost_mean_success_usd"].is_null(), "{all}");
}

/// An agent's trajectory: read in any of the three shapes, stored
/// compressed, served step by step with its loop and the candidate's step;
/// sent again it is replaced; what is not a trajectory is refused with why.
#[tokio::test]
async fn a_trajectory_is_read_stored_and_served_step_by_step() {
    let app = spawn_app().await;
    app.project("fastnum/fastnum").await;
    let report = app.report(json!({"project": "fastnum/fastnum", "external_id": "101", "title": "softmax nan"})).await;
    let candidate = "import math\nimport fastnum\n\nprobs = fastnum.softmax([1000.0, 1000.0])\n\
        assert not any(math.isnan(p) for p in probs), f\"probabilities contain nan: {probs}\"\n";
    let a = app
        .attempt(json!({"report_id": report, "agent": "swe-agent", "verdict": "hypothesis", "verdict_source": "llm", "candidate": candidate}))
        .await;
    let id = a["id"].as_i64().unwrap();
    let fixture = |name: &str| {
        std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/trajectories").join(name),
        )
        .unwrap()
    };
    let put = |body: String, ct: &'static str, query: &'static str| {
        let (client, base) = (app.client.clone(), app.base.clone());
        async move {
            let r = client
                .put(format!("{base}/api/v1/attempts/{id}/trajectory{query}"))
                .header("content-type", ct)
                .body(body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let (status, text) = put(fixture("swe-agent.traj"), "application/json", "").await;
    assert_eq!(status, 200, "{text}");
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!((summary["format"].as_str(), summary["steps"].as_i64()), (Some("swe_agent"), Some(11)));
    assert_eq!(summary["loops"], json!([{"first": 3, "last": 6, "repeats": 4, "action": "python"}]));
    assert_eq!(
        (summary["proposed_cause"].as_str(), summary["candidate_step"].as_i64()),
        (Some("stuck_in_loop"), Some(8))
    );
    assert!(summary["stored_bytes"].as_i64().unwrap() < summary["raw_bytes"].as_i64().unwrap(), "{summary}");
    let t = app.get(&format!("/api/v1/attempts/{id}/trajectory")).await;
    assert_eq!(t.status, 200);
    assert_eq!(t.body["steps"].as_array().unwrap().len(), 11);
    assert_eq!(t.body["steps"][8]["action"], "edit");
    assert_eq!(t.body["cost_usd"], 0.4213);

    // Sent again in another shape: replaced.
    let (status, text) = put(fixture("openhands-events.json"), "application/json", "?format=open_hands").await;
    assert_eq!(status, 200, "{text}");
    let t = app.get(&format!("/api/v1/attempts/{id}/trajectory")).await;
    assert_eq!(t.body["format"], "open_hands");
    assert_eq!(t.body["steps"].as_array().unwrap().len(), 5);
    assert_eq!(t.body["candidate_step"], 2);

    // 10,000 steps of JSON Lines.
    let many: String = (0..10_000)
        .map(|i| format!("{{\"action\": \"bash\", \"input\": \"step {i}\", \"output\": \"ok\"}}\n"))
        .collect();
    let (status, text) = put(many, "application/x-ndjson", "").await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(
        app.get(&format!("/api/v1/attempts/{id}/trajectory")).await.body["steps"].as_array().unwrap().len(),
        10_000
    );

    // Refusals, each naming what is wrong; the stored trajectory stays.
    let (status, text) = put("hello".into(), "application/json", "").await;
    assert_eq!(status, 400);
    assert!(text.contains("not a trajectory"), "{text}");
    let (status, text) = put("{\"action\": \"bash\"}\n{\"action\": 3}\n".into(), "application/x-ndjson", "").await;
    assert_eq!(status, 400);
    assert!(text.contains("line 2"), "{text}");
    let (status, text) = put(fixture("steps.jsonl"), "application/x-ndjson", "?format=swe").await;
    assert_eq!(status, 400);
    assert!(text.contains("unknown trajectory format `swe`"), "{text}");
    let (status, text) = put(fixture("steps.jsonl"), "text/plain", "").await;
    assert_eq!(status, 415, "{text}");
    assert_eq!(
        app.get(&format!("/api/v1/attempts/{id}/trajectory")).await.body["steps"].as_array().unwrap().len(),
        10_000
    );
    assert_error(&app.get("/api/v1/attempts/99999/trajectory").await, 404, "not_found", "no trajectory");
    let big = "x".repeat((64 << 20) + 1);
    let (status, text) = put(big, "application/x-ndjson", "").await;
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("payload_too_large") && text.contains("at most 64 MiB"), "{text}");
    // A project's token adds a trajectory, and may not replace one.
    let project = app.storage.get_project("fastnum/fastnum", &failpass::db::ProjectScope::All).await.unwrap().unwrap();
    let (token, _) = failpass::auth::tokens::create(
        app.storage.as_ref(),
        failpass::auth::tokens::TokenRequest {
            name: "agent".into(),
            scope: failpass_shared::model::TokenScope::Agent,
            project_id: Some(project.id),
            user_id: None,
            created_by: "tests".into(),
            expires_in_days: None,
        },
    )
    .await
    .unwrap();
    let agent_put = |attempt: i64| {
        let (token, base) = (token.clone(), app.base.clone());
        async move {
            reqwest::Client::new()
                .put(format!("{base}/api/v1/attempts/{attempt}/trajectory"))
                .bearer_auth(token)
                .header("content-type", "application/x-ndjson")
                .body("{\"action\": \"bash\", \"input\": \"ls\"}\n")
                .send()
                .await
                .unwrap()
        }
    };
    let fresh = app
        .attempt(json!({"report_id": report, "agent": "fresh", "verdict": "hypothesis", "verdict_source": "llm"}))
        .await;
    assert_eq!(agent_put(fresh["id"].as_i64().unwrap()).await.status(), 200);
    let refused = agent_put(id).await;
    assert_eq!(refused.status(), 409);
    assert!(refused.text().await.unwrap().contains("a maintainer may replace it"));
    assert_eq!(
        app.get(&format!("/api/v1/attempts/{id}/trajectory")).await.body["steps"].as_array().unwrap().len(),
        10_000
    );
    let other = app
        .attempt(json!({"report_id": report, "agent": "other", "verdict": "hypothesis", "verdict_source": "llm"}))
        .await;
    assert_error(
        &app.get(&format!("/api/v1/attempts/{}/trajectory", other["id"])).await,
        404,
        "not_found",
        "no trajectory",
    );
}
