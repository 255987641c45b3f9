//! The triage queue as a work list (issue 15 item 5): the server's table
//! with its total, labels, upstream state, age and last activity; bulk
//! changes behind a confirmation that says how many reports they touch.

use serde_json::Value;

use crate::helpers::{TestApp, spawn_app_with_demo};
use crate::setup::form;

async fn statuses(app: &TestApp, ids: &[i64]) -> Vec<String> {
    let mut out = Vec::new();
    for id in ids {
        out.push(app.get(&format!("/api/v1/reports/{id}")).await.body["status"].as_str().unwrap().to_owned());
    }
    out
}

#[tokio::test]
async fn the_queue_table_counts_its_view_and_bulk_changes_are_confirmed_first() {
    let app = spawn_app_with_demo().await;
    let all = app.get("/api/v1/reports?project=jax-ml%2Fjax&limit=500").await.body;
    let n = all["items"].as_array().unwrap().len() as i64;
    let t = app.get("/api/v1/reports/table?project=jax-ml%2Fjax&limit=2").await.body;
    assert_eq!(t["total"].as_i64(), Some(n), "the total is every report of the view, not the page");
    let html = t["html"].as_str().unwrap();
    assert_eq!(html.matches("data-testid=\"queue-row\"").count(), 2);
    assert!(t["next_cursor"].is_string());
    for column in ["Labels", "Upstream", "Age", "Last activity"] {
        assert!(html.contains(&format!(">{column}<")), "{column}");
    }
    assert!(html.contains("data-testid=\"bulk-form\""), "a maintainer gets the bulk form");
    let anon: Value = app
        .anon
        .get(format!("{}/api/v1/reports/table?project=jax-ml%2Fjax", app.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(!anon["html"].as_str().unwrap().contains("bulk-form"), "a visitor does not");

    // Two ticked reports: the confirmation first, nothing changed yet.
    let ids: Vec<i64> = all["items"].as_array().unwrap().iter().take(2).map(|r| r["id"].as_i64().unwrap()).collect();
    let before = statuses(&app, &ids).await;
    let (a, b) = (ids[0].to_string(), ids[1].to_string());
    let fields = [
        ("view", "project=jax-ml%2Fjax"),
        ("scope", "selected"),
        ("action", "closed"),
        ("assignee", ""),
        ("report", a.as_str()),
        ("report", b.as_str()),
    ];
    let (status, html, _) = form(&app, "/queue/bulk", &fields).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("Close 2 reports?") && html.contains("data-testid=\"bulk-confirm\""), "{html}");
    assert_eq!(statuses(&app, &ids).await, before, "a confirmation changes nothing");
    let mut confirmed = fields.to_vec();
    confirmed.push(("confirm", "1"));
    let (status, html, _) = form(&app, "/queue/bulk", &confirmed).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("Close 2 of 2 reports."), "{html}");
    assert_eq!(statuses(&app, &ids).await, vec!["closed", "closed"]);
    let activity = app.get(&format!("/api/v1/reports/{}", ids[0])).await.body["activity"].clone();
    assert!(
        activity.as_array().unwrap().last().unwrap()["text"].as_str().unwrap().contains("bulk change from the queue")
    );

    // All of a view: its count, then each report reopened.
    let view = [("view", "project=jax-ml%2Fjax&status=closed"), ("scope", "view"), ("action", "reopen")];
    let (_, html, _) = form(&app, "/queue/bulk", &view).await;
    assert!(html.contains("Reopen 2 reports?"), "{html}");
    // The confirmation sends back the reports it listed, ticked: those are changed, not whatever the view holds later.
    assert!(
        html.contains("name=\"scope\" value=\"selected\"") && html.contains(&format!("name=\"report\" value=\"{a}\""))
    );
    let go = [
        ("view", "project=jax-ml%2Fjax&status=closed"),
        ("scope", "selected"),
        ("action", "reopen"),
        ("confirm", "1"),
        ("report", a.as_str()),
        ("report", b.as_str()),
    ];
    let (_, html, _) = form(&app, "/queue/bulk", &go).await;
    assert!(html.contains("Reopen 2 of 2 reports."), "{html}");
    assert_eq!(statuses(&app, &ids).await, before);

    // Wrong input is named and changes nothing.
    for (fields, needle) in [
        (vec![("scope", "selected"), ("action", "explode"), ("report", a.as_str())], "action: `explode`"),
        (vec![("scope", "selected"), ("action", "assign"), ("report", a.as_str())], "assignee: name the member"),
        (vec![("scope", "selected"), ("action", "closed")], "tick the reports"),
        (vec![("scope", "everything"), ("action", "closed")], "scope: `everything`"),
        (vec![("scope", "selected"), ("action", "closed"), ("report", "x1")], "report: `x1` is not a report id"),
        (vec![("scope", "view"), ("action", "closed"), ("view", "route=sideways")], "view: "),
        (vec![("scope", "selected"), ("action", "closed"), ("stray", "1")], "stray: not a field"),
    ] {
        let (status, html, _) = form(&app, "/queue/bulk", &fields).await;
        assert_eq!(status, 400, "{fields:?}: {html}");
        assert!(html.contains(needle), "{fields:?}: {html}");
    }
    assert_eq!(statuses(&app, &ids).await, before);
}
