//! The public face: status pages, their JSON and trend, badges.

use failpass_shared::format;
use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app, spawn_app_with_demo};

async fn anon_get(app: &TestApp, path: &str) -> reqwest::Response {
    app.anon.get(format!("{}{path}", app.base)).send().await.expect("request")
}

async fn anon_json(app: &TestApp, path: &str) -> Value {
    let r = anon_get(app, path).await;
    assert_eq!(r.status(), 200, "{path}");
    r.json().await.unwrap()
}

#[tokio::test]
async fn a_public_projects_status_shows_the_apis_figures() {
    let app = spawn_app_with_demo().await;
    let p = "pytorch/pytorch";
    let status = anon_json(&app, &format!("/api/v1/status/{p}")).await;
    let figures = anon_json(&app, &format!("/api/v1/figures?project={p}")).await["rows"][0].clone();
    let flow = anon_json(&app, &format!("/api/v1/throughput?project={p}")).await;
    let oracles = anon_json(&app, &format!("/api/v1/oracles?project={p}")).await;
    let project = anon_json(&app, &format!("/api/v1/projects/{p}")).await;

    assert_eq!(status["project"], p);
    assert_eq!(status["reports"], project["reports"]);
    for field in ["reports_graded", "reports_reproduced", "rate", "rate_low", "rate_high"] {
        assert_eq!(status[field], figures[field], "{field}");
    }
    for field in ["backlog", "time_to_reproduction_n", "time_to_reproduction_median_hours"] {
        assert_eq!(status[field], flow[field], "{field}");
    }
    // The backlog's age grows with the clock, and the status is a snapshot
    // (computed at start, then at most once a minute): equal but for its age.
    let updated: chrono::DateTime<chrono::Utc> = status["updated_at"].as_str().unwrap().parse().unwrap();
    let age_days = (chrono::Utc::now() - updated).num_milliseconds() as f64 / 86_400_000.0 + 1.0 / 86_400.0;
    let (a, b) = (status["backlog_median_days"].as_f64().unwrap(), flow["backlog_median_days"].as_f64().unwrap());
    assert!(b >= a && b - a <= age_days, "backlog_median_days {a} (status) vs {b} (now), snapshot {age_days} days old");
    assert_eq!(status["oracle_coverage"], oracles["coverage"]);
    assert_eq!(status["in_patch_reference"], 0.4711);
    assert!(status["reports_graded"].as_u64().unwrap() > 0, "the demo has graded reports: {status}");

    let routes = status["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 3);
    let routed: u64 = routes.iter().map(|r| r["reports"].as_u64().unwrap()).sum();
    assert_eq!(routed, status["reports"].as_u64().unwrap(), "every report has a route");
    assert!(routes.iter().all(|r| !r["meaning"].as_str().unwrap().is_empty()));
    assert_eq!(status["weeks"].as_array().unwrap().len(), 13, "90 days of weeks");

    // Latest verdicts: graded ones, never a body, log or candidate.
    let latest = status["latest"].as_array().unwrap();
    assert!(!latest.is_empty() && latest.len() <= 10);
    for v in latest {
        assert!(["deterministic", "llm_lead", "human"].contains(&v["graded_by"].as_str().unwrap()), "{v}");
        assert!(!["hypothesis", "error"].contains(&v["verdict"].as_str().unwrap()), "{v}");
        for private in ["body", "output", "candidate", "log"] {
            assert!(v.get(private).is_none(), "{private} leaked: {v}");
        }
    }

    // The page shows the same numbers, without any script.
    let page = anon_get(&app, &format!("/status/{p}")).await;
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = page.text().await.unwrap();
    let rate = status["rate"].as_f64();
    assert!(html.contains(&format!("data-testid=\"status-rate-value\">{}<", format::percent(rate))), "rate shown");
    let reports = format::thousands(status["reports"].as_i64().unwrap());
    assert!(html.contains(&format!("data-testid=\"status-reports-value\">{reports}<")), "reports shown");
    assert!(!html.contains("<script"), "no script on the status page");
    // The medians read from maintained counts say how close they are.
    assert!(html.contains("within 12 hours") && html.contains("within 2.2%"), "the counts' resolution is stated");
    assert!(html.contains("property=\"og:image\""), "an Open Graph image");
    assert!(html.contains(&format!("/status/{p}/trend.svg")), "the page draws the SVG");
    assert!(
        html.contains(&format!("property=\"og:image\" content=\"{}/status/{p}/trend.png\"", app.base)),
        "previews get the PNG"
    );
    assert!(html.contains("property=\"og:image:width\" content=\"1200\""));
    assert!(html.contains(&format!("href=\"/api/v1/status/{p}\"")), "links its JSON");
    assert!(html.contains("/badge/pytorch/pytorch/reproduction-rate.svg"), "badge snippets");

    let trend = anon_get(&app, &format!("/status/{p}/trend.svg")).await;
    assert_eq!(trend.headers()["content-type"], "image/svg+xml");
    assert!(trend.text().await.unwrap().starts_with("<svg"));

    // The Open Graph image: a PNG of the same trend, 1200×630, its text drawn
    // in the embedded font (dark pixels of the title and axis labels).
    let png = anon_get(&app, &format!("/status/{p}/trend.png")).await;
    assert_eq!(png.status(), 200);
    assert_eq!(png.headers()["content-type"], "image/png");
    let bytes = png.bytes().await.unwrap();
    let pixmap = resvg::tiny_skia::Pixmap::decode_png(&bytes).expect("a PNG");
    assert_eq!((pixmap.width(), pixmap.height()), (1200, 630));
    // The title, centred in the top band, where nothing but text is drawn.
    let title_ink = (0..55)
        .flat_map(|y| (300..900).map(move |x| (x, y)))
        .filter_map(|(x, y)| pixmap.pixel(x, y))
        .filter(|p| p.red() < 100 && p.green() < 100 && p.blue() < 100)
        .count();
    assert!(title_ink > 300, "{title_ink} dark pixels where the title goes: the text is not drawn");

    let index = anon_get(&app, "/status").await.text().await.unwrap();
    assert!(index.contains(&format!("href=\"/status/{p}\"")), "the index lists the project");
}

/// Every public surface of a project, as paths.
fn surfaces(slug: &str) -> Vec<String> {
    vec![
        format!("/status/{slug}"),
        format!("/api/v1/status/{slug}"),
        format!("/status/{slug}/trend.svg"),
        format!("/status/{slug}/trend.png"),
        format!("/badge/{slug}/reproduction-rate.svg"),
        format!("/badge/{slug}/backlog.json"),
    ]
}

#[tokio::test]
async fn a_private_project_answers_as_a_missing_one_everywhere() {
    let app = spawn_app().await;
    let r = app.post("/api/v1/projects", &json!({"slug": "vault/secret", "public": false})).await;
    assert_eq!(r.status, 201, "{}", r.body);
    app.report(json!({"project": "vault/secret", "external_id": "1", "title": "vault title", "body": "x"})).await;
    for (private, missing) in surfaces("vault/secret").into_iter().zip(surfaces("nobody/here")) {
        // Even the admin, who may read the project, sees no public status of it.
        for client in [&app.anon, &app.client] {
            let a = client.get(format!("{}{private}", app.base)).send().await.unwrap();
            let b = client.get(format!("{}{missing}", app.base)).send().await.unwrap();
            assert_eq!(a.status(), 404, "{private}");
            assert_eq!(b.status(), 404, "{missing}");
            let (ta, tb) = (a.text().await.unwrap(), b.text().await.unwrap());
            assert_eq!(ta.replace("vault/secret", "X"), tb.replace("nobody/here", "X"), "{private} ~ {missing}");
            assert!(!ta.contains("vault title"));
        }
    }
    let index = anon_get(&app, "/status").await.text().await.unwrap();
    assert!(!index.contains("vault"), "the index leaves private projects out");
}

#[tokio::test]
async fn status_answers_are_cached_and_conditional() {
    let app = spawn_app().await;
    app.project("acme/lib").await;
    app.report(json!({"project": "acme/lib", "external_id": "1", "title": "t1", "body": "b"})).await;
    for path in [
        "/status/acme/lib",
        "/api/v1/status/acme/lib",
        "/status/acme/lib/trend.svg",
        "/status/acme/lib/trend.png",
        "/badge/acme/lib/backlog.svg",
        "/status",
    ] {
        let r = anon_get(&app, path).await;
        assert_eq!(r.status(), 200, "{path}");
        let etag = r.headers()["etag"].to_str().unwrap().to_owned();
        assert!(etag.starts_with('"') && etag.len() > 10, "{path}: {etag}");
        assert_eq!(r.headers()["cache-control"], "public, max-age=60", "{path}");
        assert!(r.headers().contains_key("last-modified"), "{path}");
        let again = app.anon.get(format!("{}{path}", app.base)).header("if-none-match", &etag).send().await.unwrap();
        assert_eq!(again.status(), 304, "{path}");
        assert_eq!(again.headers()["etag"].to_str().unwrap(), etag);
        assert!(again.text().await.unwrap().is_empty());
        let stale = app
            .anon
            .get(format!("{}{path}", app.base))
            .header("if-none-match", "\"something-else\"")
            .send()
            .await
            .unwrap();
        assert_eq!(stale.status(), 200, "{path}");
    }
    // Computed at most once a minute: a report filed now shows in a minute, not at once.
    let before = anon_json(&app, "/api/v1/status/acme/lib").await;
    app.report(json!({"project": "acme/lib", "external_id": "2", "title": "t2", "body": "b"})).await;
    let after = anon_json(&app, "/api/v1/status/acme/lib").await;
    assert_eq!(before["reports"], 1);
    assert_eq!(after["reports"], 1, "served from the cache");
    assert_eq!(before["updated_at"], after["updated_at"]);
    // …but a project made private disappears at once.
    let made_private = app
        .client
        .post(format!("{}/api/v1/import?format=ndjson", app.base))
        .header("content-type", "application/x-ndjson")
        .body(r#"{"kind":"project","slug":"acme/lib","public":false}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(made_private.status(), 200, "{}", made_private.text().await.unwrap());
    assert_eq!(anon_get(&app, "/api/v1/status/acme/lib").await.status(), 404);
}

#[tokio::test]
async fn badges_draw_the_figures_and_refuse_bad_input() {
    let app = spawn_app_with_demo().await;
    let p = "pytorch/pytorch";
    let status = anon_json(&app, &format!("/api/v1/status/{p}")).await;
    let flat = anon_get(&app, &format!("/badge/{p}/reproduction-rate.svg")).await;
    assert_eq!(flat.status(), 200);
    assert_eq!(flat.headers()["content-type"], "image/svg+xml");
    let flat = flat.text().await.unwrap();
    let message = format!("{} of {}", format::percent(status["rate"].as_f64()), status["reports_graded"]);
    assert!(flat.starts_with("<svg") && flat.contains("reproduced") && flat.contains(&message), "{flat}");
    let square =
        anon_get(&app, &format!("/badge/{p}/reproduction-rate.svg?style=flat-square")).await.text().await.unwrap();
    assert_ne!(flat, square, "flat-square is drawn differently");

    for metric in ["oracle-coverage", "backlog", "median-time"] {
        let r = anon_get(&app, &format!("/badge/{p}/{metric}.svg")).await;
        assert_eq!(r.status(), 200, "{metric}");
    }
    let backlog = anon_json(&app, &format!("/badge/{p}/backlog.json?label=open")).await;
    assert_eq!(backlog["schemaVersion"], 1);
    assert_eq!(backlog["label"], "open");
    assert_eq!(backlog["message"], format::thousands(status["backlog"].as_i64().unwrap()));
    assert!(backlog["color"].is_string());

    // A label is text, never markup.
    let xss = anon_get(&app, &format!("/badge/{p}/backlog.svg?label=%3Cscript%3Ealert(1)%3C%2Fscript%3E")).await;
    assert_eq!(xss.status(), 200);
    let xss = xss.text().await.unwrap();
    assert!(!xss.contains("<script"), "{xss}");
    assert!(xss.contains("&lt;script&gt;"), "{xss}");

    let bad = |path: &'static str, status: u16, needle: &'static str| {
        let app = &app;
        async move {
            let r = anon_get(app, path).await;
            assert_eq!(r.status(), status, "{path}");
            let body = r.text().await.unwrap();
            assert!(body.contains(needle), "{path}: {body}");
        }
    };
    bad("/badge/pytorch/pytorch/stars.svg", 404, "reproduction-rate").await;
    bad("/badge/pytorch/pytorch/backlog.png", 404, "METRIC.svg").await;
    bad("/badge/pytorch/pytorch/backlog.svg?style=plastic", 400, "flat-square").await;
    bad("/badge/pytorch/pytorch/backlog.svg?colour=red", 400, "style= and label=").await;
    let long = format!("/badge/pytorch/pytorch/backlog.svg?label={}", "x".repeat(61));
    let r = anon_get(&app, &long).await;
    assert_eq!(r.status(), 400);
    // A missing project's badge is still an image (grey), with a 404.
    let missing = anon_get(&app, "/badge/nobody/here/backlog.svg").await;
    assert_eq!(missing.status(), 404);
    assert!(missing.text().await.unwrap().contains("no such public project"));
}

#[tokio::test]
async fn markup_in_names_and_titles_stays_text() {
    let app = spawn_app().await;
    let r = app
        .post(
            "/api/v1/projects",
            &json!({"slug": "evil/lib", "name": "<img src=x onerror=alert(1)>", "description": "<b>bold</b>"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = app
        .report(json!({"project": "evil/lib", "external_id": "1", "title": "<script>alert('t')</script>",
            "url": "https://example.org/a?b=\"><script>", "body": "x"}))
        .await;
    app.attempt(json!({"report_id": id, "agent": "a", "verdict": "reproduced", "verdict_source": "human"})).await;
    let status = anon_json(&app, "/api/v1/status/evil/lib").await;
    assert_eq!(status["latest"].as_array().unwrap().len(), 1, "{status}");
    let html = anon_get(&app, "/status/evil/lib").await.text().await.unwrap();
    assert!(!html.contains("<script"), "title escaped");
    assert!(
        html.contains("&lt;script&gt;alert('t')&lt;/script&gt;") || html.contains("&lt;script&gt;alert(&#39;t&#39;)"),
        "title shown as text"
    );
    assert!(!html.contains("<img src=x"), "name escaped");
    assert!(!html.contains("<b>bold"), "description escaped");
    assert!(
        html.contains("href=\"https://example.org/a?b=&quot;&gt;&lt;script&gt;\""),
        "the link is an attribute, quoted"
    );
    // A `javascript:` link is refused at intake.
    let r = app
        .post(
            "/api/v1/reports",
            &json!({"project": "evil/lib", "external_id": "2", "title": "t", "url": "javascript:alert(1)"}),
        )
        .await;
    assert_eq!(r.status, 400);
    let index = anon_get(&app, "/status").await.text().await.unwrap();
    assert!(!index.contains("<img src=x") && !index.contains("<b>bold"));
    let badge = anon_get(&app, "/badge/evil/lib/backlog.svg?label=%22%3E%3Cimg%3E").await.text().await.unwrap();
    assert!(!badge.contains("\"><img>"), "{badge}");
}
