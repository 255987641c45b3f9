//! One header on every page (issue 35 item 5): the server draws it for its
//! own pages and splices the same fragment into the dashboard's shell, with
//! the reviewer's inbox count, the current page marked and the page links
//! carrying the filters their page keeps.

use serde_json::json;

use crate::helpers::spawn_app;

/// The `<header>…</header>` of a page.
fn header(html: &str) -> &str {
    let start = html.find("<header class=\"topbar\">").unwrap_or_else(|| {
        panic!("no header (is the dashboard built? `cargo xtask frontend`): {}", &html[..html.len().min(400)])
    });
    let end = html[start..].find("</header>").expect("the header closes") + start;
    &html[start..end]
}

async fn page(client: &reqwest::Client, base: &str, path: &str) -> (u16, String) {
    let r = client.get(format!("{base}{path}")).send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test]
async fn every_page_has_the_one_header_with_the_inbox_count_and_the_filters_it_keeps() {
    let app = spawn_app().await;
    app.project("o/n").await;
    let report = app.report(json!({"project": "o/n", "external_id": "1", "title": "a lead waits"})).await;
    app.attempt(json!({"report_id": report, "agent": "a", "verdict": "lead", "verdict_source": "llm"})).await;

    // The dashboard's shell: the queue is current, each link keeps its filters.
    let (status, shell) = page(&app.client, &app.base, "/queue?project=o/n&goal=fix&cursor=x").await;
    assert_eq!(status, 200);
    let top = header(&shell);
    assert!(top.contains(r#"aria-current="page">Triage queue<"#), "{top}");
    assert!(top.contains(r#"href="/queue?project=o%2Fn""#), "the queue keeps no goal: {top}");
    assert!(top.contains(r#"href="/?project=o%2Fn&amp;goal=fix""#), "{top}");
    assert!(top.contains(r#"href="/runners""#), "{top}");
    assert!(top.contains(r#"data-testid="inbox-count">1<"#), "the reviewer's count: {top}");
    assert!(top.contains(r#"href="/settings/hooks""#) && top.contains(r#"href="/settings/users""#), "an admin's pages");
    assert!(shell.contains(r#"<main class="page" id="main""#), "the dashboard mounts under it");

    // A server-drawn page has the same fragment, only another page current.
    let (status, views) = page(&app.client, &app.base, "/settings/views").await;
    assert_eq!(status, 200);
    let unmarked = |h: &str| h.replace(r#" aria-current="page""#, "");
    let (_, plain_shell) = page(&app.client, &app.base, "/queue").await;
    assert_eq!(unmarked(header(&views)), unmarked(header(&plain_shell)));
    assert!(header(&views).contains(r#"aria-current="page">Views<"#));

    // A form's address visited is a page with the same header, not JSON.
    let (status, form_page) = page(&app.client, &app.base, "/signout").await;
    assert_eq!(status, 405);
    assert_eq!(unmarked(header(&form_page)), unmarked(header(&plain_shell)));

    // An anonymous visitor: no inbox or set-up, a sign-in that comes back here.
    let (status, anon) = page(&app.anon, &app.base, "/regimes?project=o/n").await;
    assert_eq!(status, 200);
    let top = header(&anon);
    assert!(top.contains(r#"href="/signin?next=%2Fregimes""#), "{top}");
    assert!(!top.contains("inbox-link") && !top.contains("/settings/"), "{top}");
    assert!(top.contains(r#"aria-current="page">Regimes<"#), "{top}");
}

/// A page route's error reaches a browser as a page with the header, never
/// as JSON; a client that asks for anything gets the JSON it can parse.
#[tokio::test]
async fn a_page_routes_error_is_a_page_for_a_browser_and_json_for_a_client() {
    let app = spawn_app().await;
    let r = app
        .client
        .get(format!("{}/reports/999999/oracle", app.base))
        .header("accept", "text/html")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = r.text().await.unwrap();
    assert!(html.contains(r#"data-testid="page-error""#) && html.contains("report 999999"), "{html}");
    header(&html);
    let r = app.client.get(format!("{}/reports/999999/oracle", app.base)).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["code"], "not_found", "{body}");
}
