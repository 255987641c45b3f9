//! The review inbox (issue 35 item 1): every attempt waiting for a person in
//! the projects the viewer reviews, newest first, judged in place by a form;
//! its count in the session; the queue's status filter finds the same
//! reports; every review and rerun is in the report's timeline.

use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app, spawn_app_with_demo};
use crate::setup::form;

async fn lead(app: &TestApp, external_id: &str, candidate: &str) -> (i64, i64) {
    let report = app
        .report(json!({"project": "o/n", "external_id": external_id, "title": format!("shape bug {external_id}"),
            "body": "```python\nimport numpy as np\nnp.zeros((2, 3)) @ np.zeros((2, 3))\n```\nValueError: matmul: shapes (2,3) (2,3)"}))
        .await;
    let attempt = app
        .attempt(json!({"report_id": report, "agent": "repgen", "verdict": "lead", "verdict_source": "llm",
            "candidate": candidate}))
        .await;
    (report, attempt["id"].as_i64().unwrap())
}

fn timeline(report: &Value) -> Vec<(String, String)> {
    report["activity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["kind"].as_str().unwrap_or_default().to_owned(), a["text"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

#[tokio::test]
async fn leads_wait_in_the_inbox_and_are_judged_in_place() {
    let app = spawn_app().await;
    app.project("o/n").await;
    let (first_report, first) = lead(&app, "1", "import numpy as np\nassert np.zeros((2, 3)).shape == (2, 3)").await;
    let (_, second) = lead(&app, "2", "print('candidate two')").await;

    // Newest first, with the candidate at hand and the first one's keys.
    let page = app.get("/inbox").await;
    assert_eq!(page.status, 200);
    let html = page.body.as_str().unwrap().to_owned();
    assert!(html.contains(r#"data-testid="inbox-count">2<"#), "{html}");
    let (at_second, at_first) =
        (html.find(&format!("data-attempt=\"{second}\"")), html.find(&format!("data-attempt=\"{first}\"")));
    assert!(at_second.unwrap() < at_first.unwrap(), "newest first");
    assert!(html.contains("candidate two") && html.contains("np.zeros((2, 3)).shape"), "the candidates are at hand");
    assert!(html.contains(r#"accesskey="a""#) && html.contains(r#"accesskey="r""#), "{html}");
    assert_eq!(html.matches(r#"accesskey="a""#).count(), 1, "only the first takes the keys");
    assert!(html.contains("An LLM&#39;s lead") || html.contains("An LLM's lead"), "why it waits");
    // The header's count and the queue's status filter agree.
    assert_eq!(app.get("/api/v1/session").await.body["inbox"], 2);
    let waiting = app.get("/api/v1/reports?status=needs_review").await.body;
    assert_eq!(waiting["items"].as_array().unwrap().len(), 2, "{waiting}");
    // The status filter takes several states, and `open` for every state not final.
    let untouched = app.report(json!({"project": "o/n", "external_id": "3", "title": "untouched"})).await;
    let ids = |v: Value| v["items"].as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect::<Vec<_>>();
    assert_eq!(ids(app.get("/api/v1/reports?status=open").await.body).len(), 3);
    assert_eq!(ids(app.get("/api/v1/reports?status=new").await.body), [untouched]);
    assert_eq!(ids(app.get("/api/v1/reports?status=new,needs_review").await.body).len(), 3);
    assert_eq!(app.get("/api/v1/throughput?project=o/n").await.body["backlog"], 3, "open is the backlog");
    let bad = app.get("/api/v1/reports?status=open,stale").await;
    assert_eq!(bad.status, 400);
    assert!(bad.body["message"].as_str().unwrap().starts_with("status: "), "{}", bad.body);

    // Wrong input: said on the page, nothing judged.
    let (status, html, _) = form(&app, &format!("/inbox/{first}/review"), &[("review", "maybe")]).await;
    assert_eq!(status, 400);
    assert!(html.contains("review: `maybe` is not accepted or rejected") && html.contains("inbox-error"), "{html}");
    let (status, html, _) = form(&app, "/inbox/999999/review", &[("review", "accepted")]).await;
    assert_eq!(status, 404);
    assert!(html.contains("attempt 999999 not found") && html.contains("<html"), "a page, not JSON: {html}");
    assert_eq!(app.get("/api/v1/session").await.body["inbox"], 2);

    // Accepted in place: back to the inbox, which says so; the lead is confirmed and counts.
    let (status, html, location) =
        form(&app, &format!("/inbox/{first}/review"), &[("review", "accepted"), ("comment", "shows the bug")]).await;
    assert_eq!(status, 200, "{html}");
    assert_eq!(location.as_deref(), Some(format!("/inbox?done={first}&review=accepted").as_str()));
    assert!(html.contains(&format!("Attempt {first} accepted.")) && html.contains(r#"data-testid="inbox-count">1<"#));
    let a = app.get(&format!("/api/v1/attempts/{first}")).await.body;
    assert_eq!((a["verdict"].as_str(), a["review"].as_str()), (Some("confirmed"), Some("accepted")), "{a}");
    let report = app.get(&format!("/api/v1/reports/{first_report}")).await.body;
    assert_eq!(report["status"], "reproduced");
    let events = timeline(&report);
    assert!(
        events
            .iter()
            .any(|(k, t)| k == "review" && t == &format!("accepted attempt {first} (lead → confirmed): shows the bug")),
        "{events:?}"
    );
    // Rejected: it leaves the inbox, and its report's timeline says so too.
    let (status, html, _) = form(&app, &format!("/inbox/{second}/review"), &[("review", "rejected")]).await;
    assert_eq!(status, 200);
    assert!(html.contains("inbox-empty"), "{html}");
    assert_eq!(app.get("/api/v1/session").await.body["inbox"], 0);
}

/// A rerun is in the timeline of the report it runs for, with who asked.
#[tokio::test]
async fn a_rerun_is_in_its_reports_timeline() {
    let app = spawn_app_with_demo().await;
    let attempts = app.get("/api/v1/attempts?project=fastnum/fastnum&limit=50").await.body;
    let attempt = attempts["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["candidate"].is_string())
        .expect("a fastnum attempt with a candidate")
        .clone();
    let id = attempt["id"].as_i64().unwrap();
    let r = app.post("/api/v1/reruns", &json!({"attempt_id": id})).await;
    assert_eq!(r.status, 202, "{}", r.body);
    let report = app.get(&format!("/api/v1/reports/{}", attempt["report_id"])).await.body;
    let events = timeline(&report);
    assert!(
        events.iter().any(|(k, t)| k == "rerun" && t.starts_with(&format!("rerun queued for attempt {id}"))),
        "{events:?}"
    );
}

/// Issue 35 item 2: the queue filters by assignee (`me`, `none`, a name)
/// and its table has the column.
#[tokio::test]
async fn the_queue_filters_by_assignee_and_shows_it() {
    let app = spawn_app().await;
    app.project("o/n").await;
    let me = app.get("/api/v1/session").await.body["user"].as_str().expect("the test client is a user").to_owned();
    let mine = app.report(json!({"project": "o/n", "external_id": "1", "title": "mine"})).await;
    let other = app.report(json!({"project": "o/n", "external_id": "2", "title": "nobody's"})).await;
    let r = app.post(&format!("/api/v1/reports/{mine}/assign"), &json!({"assignee": me})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let ids = |v: Value| v["items"].as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect::<Vec<_>>();
    assert_eq!(ids(app.get("/api/v1/reports?assignee=me").await.body), [mine]);
    assert_eq!(ids(app.get(&format!("/api/v1/reports?assignee={me}")).await.body), [mine]);
    assert_eq!(ids(app.get("/api/v1/reports?assignee=none").await.body), [other]);
    let table = app.get("/api/v1/reports/table?assignee=me").await.body;
    let html = table["html"].as_str().unwrap();
    assert!(
        html.contains(&format!(r#"data-testid="row-assignee" data-label="assignee">{me}<"#)) && table["total"] == 1,
        "{html}"
    );
    // `me` is nobody for an anonymous caller: said, by field.
    let anon = app.anon.get(format!("{}/api/v1/reports?assignee=me", app.base)).send().await.unwrap();
    assert_eq!(anon.status(), 400);
    assert!(anon.text().await.unwrap().contains("assignee: `me`"));
}

/// Issue 35 items 4 and 5: a comment reads as the report's body does
/// (sanitised markdown, not raw fences), and the dashboard's page without
/// JavaScript links to what works without it.
#[tokio::test]
async fn comments_read_as_markdown_and_the_no_script_page_has_links() {
    let app = spawn_app().await;
    app.project("o/n").await;
    let id = app.report(json!({"project": "o/n", "external_id": "1", "title": "t"})).await;
    let text = "Tried on 2.1:\n\n```python\nprint(1)\n```\n\n<script>alert(1)</script>";
    let r = app.post(&format!("/api/v1/reports/{id}/comments"), &json!({"text": text})).await;
    assert!(r.status < 300, "{}", r.body);
    let report = app.get(&format!("/api/v1/reports/{id}")).await.body;
    let html = report["lifecycle_html"].as_str().unwrap();
    assert!(html.contains("<pre><code") && html.contains("print(1)"), "a fence is code: {html}");
    assert!(!html.contains("```") && !html.contains("<script>"), "no raw fence, no live script: {html}");
    let page = app.anon.get(format!("{}/", app.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("<noscript>") && page.contains(r#"<a href="/status">"#), "{page}");
    assert!(!page.contains(r#"<div id="boot" class="boot">Loading"#), "no stuck loading line without a script");
}

/// `arrived=24h` and `arrived=visit` (item 2): what is new to the reader. A
/// visit is a run of page loads less than 30 minutes apart; "since my last
/// visit" is after the previous run's last load.
#[tokio::test]
async fn the_queue_shows_what_arrived_in_a_day_or_since_my_last_visit() {
    use failpass_shared::model::ProjectRole;
    let app = spawn_app().await;
    app.project("o/n").await;
    let old = app.report(json!({"project": "o/n", "external_id": "1", "title": "three days old"})).await;
    let hours = app.report(json!({"project": "o/n", "external_id": "2", "title": "two hours old"})).await;
    let fresh = app.report(json!({"project": "o/n", "external_id": "3", "title": "just now"})).await;
    let db = sqlx::SqlitePool::connect(&app.data_dir().join("failpass.db").to_string_lossy()).await.unwrap();
    let now = chrono::Utc::now();
    for (id, ago) in [(old, chrono::Duration::days(3)), (hours, chrono::Duration::hours(2))] {
        sqlx::query("UPDATE reports SET created_at = $1 WHERE id = $2")
            .bind(now - ago)
            .bind(id)
            .execute(&db)
            .await
            .unwrap();
    }
    let ids = |v: Value| {
        let mut ids: Vec<i64> = v["items"].as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(app.get("/api/v1/reports?arrived=24h").await.body), [hours, fresh]);

    crate::access::make_user(
        app.storage.as_ref(),
        "mia",
        "a long password 1",
        false,
        Some(("o/n", ProjectRole::Maintainer)),
    )
    .await;
    let cookie = crate::access::sign_in(&app.base, "mia", "a long password 1").await;
    let browser = reqwest::Client::new();
    let get = |path: &str| browser.get(format!("{}{path}", app.base)).header("cookie", &cookie).send();
    let visit = || async { ids(get("/api/v1/reports?arrived=visit").await.unwrap().json::<Value>().await.unwrap()) };
    // A first visit: every report is new.
    assert_eq!(get("/queue").await.unwrap().status(), 200);
    assert_eq!(visit().await, [old, hours, fresh]);
    // Her last page load was three hours ago: this load starts a new visit,
    // and what arrived since the last one ended is new.
    sqlx::query("UPDATE users SET last_seen_at = $1 WHERE name = 'mia'")
        .bind(now - chrono::Duration::hours(3))
        .execute(&db)
        .await
        .unwrap();
    assert_eq!(get("/queue?arrived=visit").await.unwrap().status(), 200);
    assert_eq!(visit().await, [hours, fresh]);
    // More loads within the visit (ten minutes on) change nothing.
    sqlx::query("UPDATE users SET last_seen_at = $1 WHERE name = 'mia'")
        .bind(now - chrono::Duration::minutes(10))
        .execute(&db)
        .await
        .unwrap();
    assert_eq!(get("/").await.unwrap().status(), 200);
    assert_eq!(visit().await, [hours, fresh]);
    // A bulk action on "this view" acts on the same reports, since her visit.
    let bulk = browser
        .post(format!("{}/queue/bulk", app.base))
        .header("cookie", &cookie)
        .header("origin", &app.base)
        .form(&[("view", "arrived=visit"), ("scope", "view"), ("action", "closed")])
        .send()
        .await
        .unwrap();
    let html = bulk.text().await.unwrap();
    assert!(html.contains("2 reports?"), "the view's two reports, not all three: {html}");

    // Wrong input, named.
    let anon = app.anon.get(format!("{}/api/v1/reports?arrived=visit", app.base)).send().await.unwrap();
    assert_eq!(anon.status(), 400);
    assert!(anon.text().await.unwrap().contains("arrived: `visit` is since your last visit"));
    let bad = app.get("/api/v1/reports?arrived=week").await;
    assert_eq!(bad.status, 400);
    assert!(bad.body["message"].as_str().unwrap().starts_with("arrived: "), "{}", bad.body);
}

/// The visit bookkeeping on both engines: a load 30 minutes after the last
/// starts a visit, and the last one's end becomes the previous visit.
#[tokio::test]
async fn visits_are_runs_of_page_loads_on_both_engines() {
    crate::helpers::run_storage_test(|s| async move {
        let user = s.create_user("mia", "x", false).await.unwrap();
        let t0 = chrono::DateTime::parse_from_rfc3339("2026-03-18T09:00:00Z").unwrap().to_utc();
        let at = |m: i64| t0 + chrono::Duration::minutes(m);
        s.note_visit(user.id, at(0)).await.unwrap();
        assert_eq!(s.previous_visit(user.id).await.unwrap(), None, "a first visit has none before it");
        s.note_visit(user.id, at(20)).await.unwrap();
        s.note_visit(user.id, at(45)).await.unwrap();
        assert_eq!(s.previous_visit(user.id).await.unwrap(), None, "loads 20 and 25 minutes apart are one visit");
        s.note_visit(user.id, at(45) + chrono::Duration::seconds(30)).await.unwrap();
        s.note_visit(user.id, at(120)).await.unwrap();
        assert_eq!(s.previous_visit(user.id).await.unwrap(), Some(at(45)), "a load within the minute is not written");
        s.note_visit(user.id, at(130)).await.unwrap();
        assert_eq!(s.previous_visit(user.id).await.unwrap(), Some(at(45)));
    })
    .await;
}
