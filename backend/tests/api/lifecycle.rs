//! A report's life cycle (issue 15): upstream state on intake, a member's
//! status changes, assignment and comments, each in the activity timeline,
//! and what they do to the status, the filters and the throughput figures.

use std::sync::Arc;

use failpass::db::Storage;
use failpass::db::reports::Origin;
use failpass_shared::api::reports::{CreateReportRequest, ReportListQuery, Upstream};
use failpass_shared::model::{ReportStatus, Resolution, UpstreamState};
use failpass_shared::routing::{RoutingConfig, RoutingInput, decide};
use serde_json::json;

use crate::helpers::{TEST_ADMIN, assert_error, run_storage_test, spawn_app};

fn request(external_id: &str, labels: &[&str], upstream: Option<Upstream>) -> CreateReportRequest {
    CreateReportRequest {
        project: "o/n".into(),
        external_id: external_id.into(),
        url: None,
        title: format!("report {external_id}"),
        body: String::new(),
        labels: labels.iter().map(|l| (*l).to_owned()).collect(),
        filed_at: None,
        reporter: None,
        environment: None,
        paths: Vec::new(),
        oracle: None,
        upstream,
    }
}

fn closed(reason: &str) -> Option<Upstream> {
    Some(Upstream {
        state: UpstreamState::Closed,
        reason: Some(reason.into()),
        locked: false,
        kind: None,
        milestone: None,
    })
}

async fn intake(s: &dyn Storage, req: CreateReportRequest) -> i64 {
    let decision = decide(&RoutingConfig::default(), &RoutingInput::from_request(&req));
    let new = failpass::db::NewReport { request: req.clone(), decision, origin: Origin::upstream("sync") };
    s.import_reports(&[new]).await.unwrap().pop().unwrap().unwrap();
    s.find_report("o/n", &req.external_id).await.unwrap().unwrap()
}

/// The project every test here files its reports in, `o/n`.
async fn project_on(s: &dyn Storage) {
    s.create_project(&failpass_shared::api::projects::CreateProjectRequest {
        slug: "o/n".into(),
        name: None,
        description: None,
        public: None,
        upstream_url: None,
        benchmark: None,
    })
    .await
    .unwrap();
}

async fn status(s: &dyn Storage, id: i64) -> ReportStatus {
    s.get_report(id, &failpass::db::ProjectScope::All).await.unwrap().unwrap().summary.status
}

#[tokio::test]
async fn upstream_state_and_labels_take_reports_out_of_the_backlog_until_evidence_or_a_member_says_otherwise() {
    run_storage_test(|s: Arc<dyn Storage>| async move {
        project_on(s.as_ref()).await;
        let open = intake(s.as_ref(), request("1", &["bug"], None)).await;
        let done = intake(s.as_ref(), request("2", &["bug"], closed("completed"))).await;
        let feature = intake(s.as_ref(), request("3", &["Enhancement"], None)).await;
        assert_eq!(status(s.as_ref(), open).await, ReportStatus::New);
        assert_eq!(status(s.as_ref(), done).await, ReportStatus::ClosedUpstream);
        assert_eq!(status(s.as_ref(), feature).await, ReportStatus::NotABug, "labels are matched case-insensitively");
        let r = s.get_report(feature, &failpass::db::ProjectScope::All).await.unwrap().unwrap();
        let rule = r.explanation.iter().find(|e| e.rule == "not_a_bug").unwrap();
        assert!(rule.fired && rule.evidence.contains("\"Enhancement\" matches \"enhancement\""), "{rule:?}");
        assert_eq!(
            r.resolution.as_ref().map(|x| (x.resolution, x.by.as_str())),
            Some((Resolution::NotABug, "upstream"))
        );
        assert_eq!(r.activity[0].kind, "created");
        assert_eq!((r.activity[0].actor.as_str(), r.activity[0].via.as_str()), ("upstream", "sync"));

        // Closed upstream later: recorded, and out of the backlog.
        intake(s.as_ref(), request("1", &["bug"], closed("not_planned"))).await;
        let r = s.get_report(open, &failpass::db::ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(r.summary.status, ReportStatus::ClosedUpstream);
        assert_eq!(r.summary.upstream_state, Some(UpstreamState::Closed));
        assert!(
            r.activity.iter().any(|a| a.kind == "upstream" && a.text == "upstream unknown → closed (not_planned)"),
            "{:?}",
            r.activity
        );

        // A reproduction is evidence: it outranks upstream's word.
        let attempt = s
            .create_attempt(
                &serde_json::from_value(
                    json!({"report_id": done, "agent": "a", "verdict": "reproduced", "verdict_source": "human"}),
                )
                .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(status(s.as_ref(), done).await, ReportStatus::Reproduced, "{attempt:?}");

        // A member's word outranks both, and reopening sticks against upstream.
        let member = Origin { actor: "maintainer".into(), via: "ui" };
        s.set_resolution(done, Some(Resolution::WontFix), None, Some("out of scope"), &member).await.unwrap();
        assert_eq!(status(s.as_ref(), done).await, ReportStatus::WontFix);
        s.set_resolution(feature, None, None, None, &member).await.unwrap();
        assert_eq!(status(s.as_ref(), feature).await, ReportStatus::New, "reopened");
        intake(s.as_ref(), request("3", &["enhancement", "question"], closed("completed"))).await;
        assert_eq!(
            status(s.as_ref(), feature).await,
            ReportStatus::New,
            "a re-import does not undo a member's reopening"
        );
        let r = s.get_report(feature, &failpass::db::ProjectScope::All).await.unwrap().unwrap();
        assert!(r.resolution.is_none());
        assert!(
            r.activity.iter().any(|a| a.kind == "status" && a.text.starts_with("reopened: not a bug → new")),
            "{:?}",
            r.activity
        );

        // Filters and figures see the statuses.
        let mut q = ReportListQuery { limit: 50, ..Default::default() };
        q.filter.status = failpass_shared::api::reports::Statuses::of(&[ReportStatus::ClosedUpstream]);
        let listed = s.list_reports(&q, &failpass::db::ProjectScope::All).await.unwrap().items;
        assert_eq!(listed.iter().map(|r| r.id).collect::<Vec<_>>(), [open]);
        let flows = s.report_flows(&Default::default(), &failpass::db::ProjectScope::All).await.unwrap();
        let t = failpass_shared::figures::throughput(&flows, chrono::Utc::now());
        assert_eq!((t.reports, t.backlog, t.resolved), (3, 1, 2), "{t:?}");
    })
    .await;
}

#[tokio::test]
async fn members_close_mark_duplicates_assign_and_comment_through_the_api() {
    let app = spawn_app().await;
    app.project("o/n").await;
    let a =
        app.report(json!({"project": "o/n", "external_id": "5641", "title": "Features cannot be named self"})).await;
    let b = app.report(json!({"project": "o/n", "external_id": "5646", "title": "self as a key in Features"})).await;
    let path = |what: &str| format!("/api/v1/reports/{b}/{what}");

    // Wrong input, named.
    for (body, field) in [
        (json!({"status": "fixed"}), "`fixed` is not one of closed, duplicate, wont_fix, not_a_bug, reopen"),
        (json!({"status": "closed_upstream"}), "status"),
        (json!({"status": "duplicate"}), "a duplicate names the report it duplicates"),
        (json!({"status": "duplicate", "duplicate_of": "#9999"}), "o/n has no report #9999"),
        (json!({"status": "duplicate", "duplicate_of": "5646"}), "not a duplicate of itself"),
        (json!({"status": "closed", "duplicate_of": "5641"}), "only a duplicate names another report"),
        (json!({"status": "closed", "colour": "red"}), "colour"),
    ] {
        let r = app.post(&path("status"), &body).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        assert!(r.body["message"].as_str().unwrap().contains(field), "{body}: {}", r.body);
    }
    assert_error(&app.post(&path("comments"), &json!({"text": "   "})).await, 400, "bad_request", "text");
    assert_error(
        &app.post(&path("assign"), &json!({"assignee": "nobody"})).await,
        400,
        "bad_request",
        "`nobody` is not a member of o/n",
    );
    assert_error(
        &app.post("/api/v1/reports/999999/status", &json!({"status": "closed"})).await,
        404,
        "not_found",
        "999999",
    );
    let r = app.get(&format!("/api/v1/reports/{b}")).await.body;
    assert_eq!(
        (r["status"].as_str(), r["activity"].as_array().unwrap().len()),
        (Some("new"), 1),
        "nothing changed: {r}"
    );

    // A duplicate, by its upstream number.
    let r =
        app.post(&path("status"), &json!({"status": "duplicate", "duplicate_of": "#5641", "reason": "same bug"})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["status"], "duplicate");
    assert_eq!(r.body["resolution"]["duplicate_of"], json!({"id": a, "external_id": "5641"}));
    assert_eq!(r.body["resolution"]["by"], TEST_ADMIN);
    let last = r.body["activity"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (last["kind"].as_str(), last["actor"].as_str(), last["via"].as_str(), last["text"].as_str()),
        (Some("status"), Some(TEST_ADMIN), Some("api"), Some("new → duplicate of #5641: same bug"))
    );
    let listed = app.get("/api/v1/reports?status=duplicate").await.body;
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    let t = app.get("/api/v1/throughput").await.body;
    assert_eq!((t["backlog"].as_u64(), t["resolved"].as_u64()), (Some(1), Some(1)), "{t}");

    // Assigned, commented, reopened: each in the timeline, in order.
    let r = app.post(&path("assign"), &json!({"assignee": TEST_ADMIN})).await;
    assert_eq!((r.status, r.body["assignee"].as_str()), (200, Some(TEST_ADMIN)), "{}", r.body);
    let r = app.post(&path("comments"), &json!({"text": "Checked on 2.18: same traceback."})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.post(&path("status"), &json!({"status": "reopen"})).await;
    assert_eq!(r.body["status"], "new", "{}", r.body);
    let r = app.post(&path("assign"), &json!({"assignee": null})).await;
    assert_eq!(r.body["assignee"], serde_json::Value::Null);
    let kinds: Vec<(String, String)> = r.body["activity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["kind"].as_str().unwrap().to_owned(), a["text"].as_str().unwrap().to_owned()))
        .collect();
    let expected = [
        ("created", "taken in, routed hypothesis"),
        ("status", "new → duplicate of #5641: same bug"),
        ("assigned", "assigned to test-admin"),
        ("comment", "Checked on 2.18: same traceback."),
        ("status", "reopened: duplicate → new"),
        ("assigned", "unassigned (was test-admin)"),
    ];
    assert_eq!(kinds, expected.map(|(k, t)| (k.to_owned(), t.to_owned())), "{}", r.body);
    assert!(r.body["last_activity_at"].is_string());
}

/// Sets a report's last activity `days` ago, straight in the database.
pub(crate) async fn age(url: &str, external_id: &str, days: i64) {
    let t = chrono::Utc::now() - chrono::Duration::days(days);
    if url.starts_with("postgres") {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        sqlx::query("UPDATE reports SET last_activity_at = $1 WHERE external_id = $2")
            .bind(t)
            .bind(external_id)
            .execute(&pool)
            .await
            .unwrap();
    } else {
        let pool = sqlx::SqlitePool::connect(url).await.unwrap();
        sqlx::query("UPDATE reports SET last_activity_at = $1 WHERE external_id = $2")
            .bind(t)
            .bind(external_id)
            .execute(&pool)
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn the_queue_filters_by_agent_model_and_stuck_days_and_sorts_by_last_activity() {
    crate::helpers::run_storage_test_url(|s: Arc<dyn Storage>, url: String| async move {
        project_on(s.as_ref()).await;
        let ids = [
            intake(s.as_ref(), request("1", &["bug"], None)).await,
            intake(s.as_ref(), request("2", &["bug"], None)).await,
            intake(s.as_ref(), request("3", &["bug"], None)).await,
        ];
        for (report, agent, model) in [(ids[0], "repgen", "m1"), (ids[1], "openhands", "m2")] {
            let req = serde_json::from_value(json!({"report_id": report, "agent": agent, "model": model,
                "verdict": "hypothesis", "verdict_source": "llm"}))
            .unwrap();
            s.create_attempt(&req).await.unwrap();
        }
        age(&url, "3", 10).await;
        age(&url, "2", 3).await;
        let list = |pairs: &'static str| {
            let s = s.clone();
            async move {
                let q = ReportListQuery::from_pairs(
                    failpass_shared::api::query::parse_query_string(pairs)
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_str())),
                )
                .unwrap();
                s.list_reports(&q, &failpass::db::ProjectScope::All)
                    .await
                    .unwrap()
                    .items
                    .iter()
                    .map(|r| r.id)
                    .collect::<Vec<_>>()
            }
        };
        assert_eq!(list("agent=repgen").await, [ids[0]]);
        assert_eq!(list("model=m2").await, [ids[1]]);
        assert_eq!(list("stuck_days=5").await, [ids[2]], "nothing happened to #3 for 10 days");
        assert_eq!(list("stuck_days=2&sort=last_activity&order=asc").await, [ids[2], ids[1]]);
        assert_eq!(
            list("sort=last_activity&order=desc").await,
            ids,
            "#1 was touched last (its attempt), #3 longest ago"
        );
        // A closed report is not stuck, however old.
        let member = Origin { actor: "maintainer".into(), via: "api" };
        s.set_resolution(ids[2], Some(Resolution::Closed), None, None, &member).await.unwrap();
        assert_eq!(list("stuck_days=5").await, Vec::<i64>::new());
        // Keyset pages in the new order cover every report once.
        let q = ReportListQuery::from_pairs([("sort", "last_activity"), ("limit", "1")]).unwrap();
        let mut seen = Vec::new();
        let mut q = q;
        loop {
            let page = s.list_reports(&q, &failpass::db::ProjectScope::All).await.unwrap();
            seen.extend(page.items.iter().map(|r| r.id));
            match page.next_cursor {
                Some(c) => q.cursor = Some(c),
                None => break,
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, ids);
        for bad in ["stuck_days=0", "stuck_days=soon", "sort=last_seen"] {
            let pairs = failpass_shared::api::query::parse_query_string(bad);
            assert!(ReportListQuery::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).is_err(), "{bad}");
        }
    })
    .await;
}

/// The Overview's glance: what a period reproduced and spent, how the
/// backlog moved and what is stuck, on both engines.
#[tokio::test]
async fn the_glance_answers_for_a_period_on_both_engines() {
    crate::helpers::run_storage_test_url(|s: Arc<dyn Storage>, url: String| async move {
        project_on(s.as_ref()).await;
        let ids = [
            intake(s.as_ref(), request("1", &["bug"], None)).await,
            intake(s.as_ref(), request("2", &["bug"], None)).await,
            intake(s.as_ref(), request("3", &["bug"], None)).await,
        ];
        // #1 reproduced today for $2; #2 an LLM hypothesis for $0.50; #3 untouched for 20 days
        for (report, verdict, source, cost) in
            [(ids[0], "reproduced", "human", 2.0), (ids[1], "hypothesis", "llm", 0.5)]
        {
            let req = serde_json::from_value(json!({"report_id": report, "agent": "repgen",
                "verdict": verdict, "verdict_source": source, "cost_usd": cost}))
            .unwrap();
            s.create_attempt(&req).await.unwrap();
        }
        age(&url, "3", 20).await;
        let glance = |pairs: &'static str| {
            let s = s.clone();
            async move {
                let pairs = failpass_shared::api::query::parse_query_string(pairs);
                failpass::summaries::glance(
                    s.as_ref(),
                    &failpass::db::ProjectScope::All,
                    pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
                    chrono::Utc::now(),
                )
                .await
            }
        };
        let g = glance("project=o/n&period=last_30_days").await.unwrap();
        assert_eq!((g.reproduced, g.filed, g.finished, g.backlog_change, g.backlog), (1, 3, 1, 2, 2), "{g:?}");
        assert!((g.spend_usd - 2.5).abs() < 1e-9 && g.cost_per_reproduction_usd == Some(2.5), "{g:?}");
        assert_eq!((g.stuck, g.stuck_days), (1, 14), "#3 has had no activity for 20 days");
        assert_eq!(glance("stuck_days=30").await.unwrap().stuck, 0);
        // the numbers link to the lists behind them, with the same filters
        assert!(g.html.contains("/queue?project=o%2Fn&amp;period=last_30_days&amp;dated=reproduced"), "{}", g.html);
        assert!(g.html.contains("stuck_days=14&amp;sort=last_activity&amp;order=asc"), "{}", g.html);
        assert!(g.html.contains("/api/v1/export/throughput?project=o%2Fn&amp;period=last_30_days"), "{}", g.html);
        // last quarter ended before today: nothing reproduced, spent or filed in it,
        // but the stuck report is stuck still
        let before = glance("period=last_quarter").await.unwrap();
        assert_eq!((before.reproduced, before.spend_usd, before.filed, before.stuck), (0, 0.0, 0, 1), "{before:?}");
        // days work too: since today, nothing before; the 30 days up to today, the lot
        let days = glance("project=o/n&until=2099-01-01").await.unwrap();
        assert_eq!((days.period, days.filed, days.reproduced), (None, 0, 0), "{days:?}");
        let today = chrono::Utc::now().date_naive();
        let days = glance(Box::leak(format!("project=o/n&since={today}").into_boxed_str())).await.unwrap();
        assert_eq!((days.filed, days.reproduced, days.from, days.to), (3, 1, today, today), "{days:?}");
        assert!(days.html.contains(&format!("since={today}&amp;until={today}&amp;dated=reproduced")), "{}", days.html);
        // wrong input is refused, naming what is wrong
        for (bad, field) in [
            ("period=this_month&since=2026-01-01", "period"),
            ("since=2026-02-01&until=2026-01-01", "since"),
            ("dated=closed", "dated"),
            ("goal=mend", "goal"),
            ("stuck_days=0", "stuck_days"),
            ("period=fortnight", "period"),
            ("colour=red", "colour"),
        ] {
            let e = glance(bad).await.unwrap_err().to_string();
            assert!(e.contains(field), "{bad}: {e}");
        }
    })
    .await;
}
