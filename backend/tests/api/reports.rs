use std::collections::HashSet;

use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, spawn_app};

const CRASH_BODY: &str = "On torch 2.4.1:\n```python\nimport torch\ntorch.logsumexp(torch.full((3,), 1e4, dtype=torch.half), 0)\n```\nTraceback (most recent call last):\n  File \"r.py\", line 2\nRuntimeError: value cannot be converted to type at::Half without overflow\n";

pub async fn seed_reports(app: &TestApp) -> Vec<i64> {
    app.project("pytorch/pytorch").await;
    app.project("jax-ml/jax").await;
    let mut ids = Vec::new();
    for i in 0..7 {
        ids.push(
            app.report(json!({
                "project": "pytorch/pytorch", "external_id": format!("{}", 100 + i),
                "title": format!("logsumexp overflow case {i}"), "body": CRASH_BODY,
                "labels": ["bug", "module: numerical"], "filed_at": format!("2026-0{}-0{}T10:00:00Z", 1 + i % 3, 1 + i),
            }))
            .await,
        );
    }
    ids.push(
        app.report(json!({
            "project": "pytorch/pytorch", "external_id": "200", "title": "DDP hangs with torchrun on two nodes",
            "body": "Works on one node.", "labels": ["oncall: distributed"], "filed_at": "2026-02-15T08:00:00Z",
        }))
        .await,
    );
    ids.push(
        app.report(json!({
            "project": "jax-ml/jax", "external_id": "300", "title": "pmap slow", "body": "It is slow.",
            "filed_at": "2026-03-01T08:00:00Z",
        }))
        .await,
    );
    ids
}

#[tokio::test]
async fn created_reports_are_routed_with_an_explanation() {
    let app = spawn_app().await;
    let ids = seed_reports(&app).await;
    let crash = app.get(&format!("/api/v1/reports/{}", ids[0])).await.body;
    assert_eq!(crash["route"], "agent_first");
    assert_eq!(crash["category"], "patch_logic");
    assert_eq!(crash["oracle_kind"], "crash_signature");
    assert_eq!(crash["oracle"]["source"], "derived");
    assert_eq!(crash["status"], "new");
    assert_eq!(crash["features"]["has_traceback"], true);
    let rules: Vec<_> = crash["explanation"].as_array().unwrap().iter().map(|r| r["rule"].as_str().unwrap()).collect();
    assert_eq!(
        rules,
        ["harness_or_plumbing", "route_check", "deterministic_oracle", "no_oracle", "vague", "llm_only", "not_a_bug"]
    );

    let harness = app.get(&format!("/api/v1/reports/{}", ids[7])).await.body;
    assert_eq!(harness["route"], "human_first");
    let ev = harness["explanation"][0]["evidence"].as_str().unwrap();
    assert!(ev.contains("ddp") && ev.contains("oncall: distributed"), "{ev}");

    let vague = app.get(&format!("/api/v1/reports/{}", ids[8])).await.body;
    assert_eq!(vague["route"], "hypothesis");
    assert_eq!(vague["vague"], true);
}

#[tokio::test]
async fn bad_report_input_names_the_field_and_keeps_what_is_stored() {
    let app = spawn_app().await;
    let ids = seed_reports(&app).await;
    assert_error(
        &app.post("/api/v1/reports", &json!({"project": "nobody/x", "external_id": "1", "title": "t"})).await,
        400,
        "bad_request",
        "project: no project `nobody/x`",
    );
    assert_error(
        &app.post("/api/v1/reports", &json!({"project": "pytorch/pytorch", "external_id": "100", "title": "dup"}))
            .await,
        409,
        "conflict",
        "already has a report `100`",
    );
    assert_error(
        &app.post("/api/v1/reports", &json!({"project": "pytorch/pytorch", "external_id": " ", "title": "t"})).await,
        400,
        "bad_request",
        "external_id",
    );
    assert_error(
        &app.post(
            "/api/v1/reports",
            &json!({"project": "pytorch/pytorch", "external_id": "9", "title": "t", "labels": ["ok", ""]}),
        )
        .await,
        400,
        "bad_request",
        "labels[1]",
    );
    assert_error(
        &app.post(
            "/api/v1/reports",
            &json!({"project": "pytorch/pytorch", "external_id": "9", "title": "t", "filed_at": "yesterday"}),
        )
        .await,
        400,
        "bad_request",
        "filed_at",
    );
    assert_error(
        &app.post("/api/v1/reports", &json!({"project": "pytorch/pytorch", "external_id": "9", "title": "t", "oracle": {"kind": "fail_to_pass", "fail_to_pass": ["t::x"]}})).await,
        400, "bad_request", "oracle.source",
    );
    assert_error(
        &app.post(
            "/api/v1/reports",
            &json!({"project": "pytorch/pytorch", "external_id": "9", "title": "t", "oracle": {"kind": "magic"}}),
        )
        .await,
        400,
        "bad_request",
        "unknown variant `magic`",
    );
    assert_error(
        &app.post(
            "/api/v1/reports",
            &json!({"project": "pytorch/pytorch", "external_id": "9", "title": "t", "url": "javascript:alert(1)"}),
        )
        .await,
        400,
        "bad_request",
        "url",
    );
    assert_error(&app.post("/api/v1/reports", &json!({"project": "pytorch/pytorch", "external_id": "9", "title": "t", "oracle": {"kind": "fail_to_pass", "source": "authored"}})).await, 400, "bad_request", "oracle.fail_to_pass");
    // the duplicate did not overwrite the original
    let original = app.get(&format!("/api/v1/reports/{}", ids[0])).await.body;
    assert_eq!(original["title"], "logsumexp overflow case 0");
    assert_eq!(app.get("/api/v1/reports?limit=500").await.body["items"].as_array().unwrap().len(), 9);
    assert_error(&app.get("/api/v1/reports/999999").await, 404, "not_found", "report 999999");
    assert_error(&app.get("/api/v1/reports/x1").await, 400, "bad_request", "x1");
}

fn ids(page: &Value) -> Vec<i64> {
    page["items"].as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect()
}

#[tokio::test]
async fn list_filters_each_narrow_the_list() {
    let app = spawn_app().await;
    seed_reports(&app).await;
    let n = |q: &str| {
        let q = q.to_owned();
        let app = &app;
        async move { app.get(&format!("/api/v1/reports?{q}")).await.body["items"].as_array().unwrap().len() }
    };
    assert_eq!(n("").await, 9);
    assert_eq!(n("project=jax-ml/jax").await, 1);
    assert_eq!(n("route=human_first").await, 1);
    assert_eq!(n("route=agent_first").await, 7);
    assert_eq!(n("status=new").await, 9);
    assert_eq!(n("label=oncall:%20distributed").await, 1);
    assert_eq!(n("label=bug").await, 7);
    assert_eq!(n("q=TORCHRUN").await, 1, "free text is case-insensitive");
    assert_eq!(n("q=case%205").await, 1);
    assert_eq!(n("q=100%25").await, 0, "% is matched literally");
    assert_eq!(n("verdict=reproduced").await, 0);
    assert_eq!(n("route=agent_first&project=jax-ml/jax").await, 0);
    assert_eq!(n("route=").await, 9, "an empty value means any");
}

#[tokio::test]
async fn keyset_pages_cover_every_report_once_in_each_order() {
    let app = spawn_app().await;
    let all = seed_reports(&app).await;
    for (sort, order) in
        [("filed_at", "desc"), ("filed_at", "asc"), ("created_at", "asc"), ("cost", "desc"), ("attempts", "asc")]
    {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let mut url = format!("/api/v1/reports?sort={sort}&order={order}&limit=2");
            if let Some(c) = &cursor {
                url.push_str(&format!("&cursor={}", failpass_shared::api::query::encode_component(c)));
            }
            let page = app.get(&url).await;
            assert_eq!(page.status, 200, "{}", page.body);
            seen.extend(ids(&page.body));
            pages += 1;
            match page.body["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(pages, 5, "{sort} {order}");
        let unique: HashSet<_> = seen.iter().collect();
        assert_eq!(seen.len(), all.len(), "{sort} {order}: {seen:?}");
        assert_eq!(unique.len(), all.len(), "{sort} {order}");
    }
    // filed_at desc is newest first
    let page = app.get("/api/v1/reports?limit=3").await.body;
    let filed: Vec<_> =
        page["items"].as_array().unwrap().iter().map(|r| r["filed_at"].as_str().unwrap().to_owned()).collect();
    let mut sorted = filed.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(filed, sorted);
}

#[tokio::test]
async fn bad_list_parameters_are_400s_naming_the_parameter() {
    let app = spawn_app().await;
    seed_reports(&app).await;
    assert_error(&app.get("/api/v1/reports?route=robot").await, 400, "bad_request", "route: unknown route `robot`");
    assert_error(&app.get("/api/v1/reports?status=done").await, 400, "bad_request", "status");
    assert_error(&app.get("/api/v1/reports?verdict=yes").await, 400, "bad_request", "verdict");
    assert_error(&app.get("/api/v1/reports?limit=-1").await, 400, "bad_request", "limit");
    assert_error(
        &app.get("/api/v1/reports?limit=501").await,
        400,
        "bad_request",
        "limit: `501` is not a whole number between 1 and 500",
    );
    assert_error(&app.get("/api/v1/reports?limit=2&limit=3").await, 400, "bad_request", "limit: given more than once");
    assert_error(&app.get("/api/v1/reports?sort=title").await, 400, "bad_request", "sort");
    assert_error(&app.get("/api/v1/reports?order=up").await, 400, "bad_request", "order");
    assert_error(
        &app.get("/api/v1/reports?rout=agent_first").await,
        400,
        "bad_request",
        "unknown query parameter `rout`",
    );
    assert_error(&app.get("/api/v1/reports?cursor=nonsense").await, 400, "bad_request", "cursor");
    let page = app.get("/api/v1/reports?limit=2").await.body;
    let c = page["next_cursor"].as_str().unwrap();
    assert_error(
        &app.get(&format!("/api/v1/reports?sort=cost&cursor={c}")).await,
        400,
        "bad_request",
        "another ordering",
    );
}

#[tokio::test]
async fn report_bodies_come_back_as_sanitised_html() {
    let app = crate::helpers::spawn_app().await;
    app.project("m/d").await;
    let body = "Crash in `f`:\n\n```python\nf(1 < 2)\n```\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) ![i](https://t.example/p.png)";
    let created = app
        .post("/api/v1/reports", &serde_json::json!({"project": "m/d", "external_id": "7", "title": "t", "body": body}))
        .await
        .body;
    let got = app.get(&format!("/api/v1/reports/{}", created["id"])).await.body;
    assert_eq!(got["body"], body, "the markdown is kept as filed");
    let html = got["body_html"].as_str().unwrap();
    assert!(html.contains("<pre><code class=\"language-python\">f(1 &lt; 2)"), "{html}");
    assert!(html.contains("&lt;script&gt;") && !html.contains("<script"), "{html}");
    assert!(!html.contains("href=\"javascript"), "{html}");
    assert!(!html.contains("<img"), "{html}");
    assert_eq!(created["body_html"], got["body_html"], "creation answers with the same rendering");
}

#[tokio::test]
async fn a_maintainer_corrects_a_route_with_a_reason_and_unsure_routes_are_flagged() {
    let app = spawn_app().await;
    let ids = seed_reports(&app).await;
    let path = format!("/api/v1/reports/{}/route", ids[0]);
    let r = app.post(&path, &json!({"route": "human_first", "reason": "  the launcher sets the wrong device  "})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["route"], "human_first");
    assert_eq!(r.body["category"], "harness");
    assert_eq!(r.body["route_corrected"], true);
    let c = &r.body["route_correction"];
    assert_eq!(c["previous"], "agent_first");
    assert_eq!(c["reason"], "the launcher sets the wrong device");
    assert!(c["by"].as_str().is_some_and(|b| !b.is_empty()), "{c}");
    // The list says it too, and route filters follow the correction.
    let list = app.get("/api/v1/reports?route=human_first&project=pytorch/pytorch").await.body;
    let corrected: Vec<_> = list["items"].as_array().unwrap().iter().filter(|i| i["route_corrected"] == true).collect();
    assert_eq!(corrected.len(), 1);
    assert_eq!(corrected[0]["id"], ids[0]);

    // Wrong input is named.
    assert_error(
        &app.post(&path, &json!({"route": "human_first", "reason": "  "})).await,
        400,
        "bad_request",
        "reason",
    );
    assert_error(&app.post(&path, &json!({"route": "humans", "reason": "x"})).await, 400, "bad_request", "route");
    assert_error(&app.post(&path, &json!({"route": "human_first"})).await, 400, "bad_request", "reason");
    assert_error(
        &app.post("/api/v1/reports/999999/route", &json!({"route": "hypothesis", "reason": "x"})).await,
        404,
        "not_found",
        "report 999999",
    );

    // A correction to the route it has is refused, naming the confirmation instead.
    let r = app.post(&path, &json!({"route": "human_first", "reason": "still the launcher"})).await;
    assert_error(&r, 400, "bad_request", "already routed human first");
    assert!(r.body["message"].as_str().unwrap().contains("/route/confirm"), "{}", r.body);
    // Corrected away from harness, the category is the library's logic, never unknown.
    let r = app.post(&path, &json!({"route": "agent_first", "reason": "the crash is in logsumexp after all"})).await;
    assert_eq!((r.body["route"].as_str(), r.body["category"].as_str()), (Some("agent_first"), Some("patch_logic")));
    // Every correction is in the timeline.
    let timeline: Vec<String> =
        r.body["activity"].as_array().unwrap().iter().map(|a| a["text"].as_str().unwrap().to_owned()).collect();
    assert!(
        timeline.iter().any(|t| t == "route agent first → human first: the launcher sets the wrong device"),
        "{timeline:?}"
    );
    assert!(timeline.iter().any(|t| t.starts_with("route human first → agent first")), "{timeline:?}");

    // A keyword and a half-weight hint near the threshold: routed, and flagged for a human look.
    let unsure = app
        .report(json!({"project": "jax-ml/jax", "external_id": "301", "title": "matmul wrong",
            "body": "only with the new driver\nand only on the gpu"}))
        .await;
    let flagged = app.get("/api/v1/reports?route_check=true").await.body;
    let ids_flagged: Vec<i64> =
        flagged["items"].as_array().unwrap().iter().map(|i| i["id"].as_i64().unwrap()).collect();
    assert_eq!(ids_flagged, [unsure]);
    let r = app.get(&format!("/api/v1/reports/{unsure}")).await.body;
    let check = r["explanation"].as_array().unwrap().iter().find(|o| o["rule"] == "route_check").unwrap().clone();
    assert_eq!(check["fired"], true, "{check}");
    assert_error(&app.get("/api/v1/reports?route_check=maybe").await, 400, "bad_request", "route_check");
    // Correcting it clears the flag.
    let r = app
        .post(
            &format!("/api/v1/reports/{unsure}/route"),
            &json!({"route": "human_first", "reason": "the driver install"}),
        )
        .await;
    assert_eq!(r.body["route_check"], false, "{}", r.body);
    let check = r.body["explanation"].as_array().unwrap().iter().find(|o| o["rule"] == "route_check").unwrap().clone();
    assert_eq!(check["fired"], false, "{check}");
    assert!(check["evidence"].as_str().unwrap().ends_with("a maintainer set the route"), "{check}");
    assert!(app.get("/api/v1/reports?route_check=true").await.body["items"].as_array().unwrap().is_empty());
}

/// An unknown (or unreadable) project in a filter is an error naming it on
/// every list and figure, never an empty answer that reads as "nothing here".
#[tokio::test]
async fn a_filter_on_an_unknown_or_private_project_is_a_not_found_naming_it() {
    let app = spawn_app().await;
    app.project("o/known").await;
    let r = app.post("/api/v1/projects", &json!({"slug": "o/private", "public": false})).await;
    assert_eq!(r.status, 201);
    for path in [
        "/api/v1/reports",
        "/api/v1/attempts",
        "/api/v1/figures",
        "/api/v1/distributions",
        "/api/v1/throughput",
        "/api/v1/oracles",
        "/api/v1/export/reports",
        "/api/v1/export/attempts",
        "/api/v1/charts/reports",
    ] {
        let r = app.get(&format!("{path}?project=no%2Fsuch")).await;
        assert_error(&r, 404, "not_found", "project `no/such` not found");
        assert_eq!(app.get(&format!("{path}?project=o%2Fknown")).await.status, 200, "{path}");
        // A private project is, to an outsider, a missing one.
        let anon = app.anon.get(format!("{}{path}?project=o%2Fprivate", app.base)).send().await.unwrap();
        assert_eq!(anon.status(), 404, "{path}");
    }
}

/// The queue's jobs for an attempt name its report, so the Runners page links it.
#[tokio::test]
async fn queued_attempt_jobs_name_their_report() {
    let app = crate::helpers::spawn_app_with_demo().await;
    let q = app.get("/api/v1/jobs").await.body;
    let jobs: Vec<&Value> =
        q["jobs"].as_array().unwrap().iter().filter(|j| j["payload"]["attempt_id"].is_i64()).collect();
    assert!(!jobs.is_empty(), "the demo queues its verifications: {q}");
    for job in jobs.iter().take(5) {
        let attempt = app.get(&format!("/api/v1/attempts/{}", job["payload"]["attempt_id"])).await.body;
        assert_eq!(job["payload"]["report_id"], attempt["report_id"], "{job}");
    }
}
