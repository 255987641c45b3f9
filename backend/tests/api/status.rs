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
        html.contains(&format!("property=\"og:image\" content=\"{}/status/{p}/trend.png?v=", app.base)),
        "previews get the PNG of the page's snapshot"
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
    // Kept until the project's data changes: a report filed now shows within
    // the debounce (a burst of writes rebuilds it once), not after the minute.
    let before = anon_json(&app, "/api/v1/status/acme/lib").await;
    assert_eq!(before["reports"], 1);
    assert_eq!(anon_json(&app, "/api/v1/status/acme/lib").await["updated_at"], before["updated_at"], "cached");
    app.report(json!({"project": "acme/lib", "external_id": "2", "title": "t2", "body": "b"})).await;
    app.report(json!({"project": "acme/lib", "external_id": "3", "title": "t3", "body": "b"})).await;
    let started = std::time::Instant::now();
    let after = loop {
        let s = anon_json(&app, "/api/v1/status/acme/lib").await;
        if s["reports"] == 3 || started.elapsed() > std::time::Duration::from_secs(20) {
            break s;
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    };
    assert_eq!(after["reports"], 3, "the writes show: {after}");
    assert_ne!(after["updated_at"], before["updated_at"], "and the time it was computed with them");
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
    bad("/badge/pytorch/pytorch/backlog.svg?colour=red", 400, "style=, label= and v=").await;
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

/// A status page and everything on it come from one snapshot: its chart and
/// badges ask for it (`?v=`), so a badge drawn after the data moved still
/// agrees with the page that shows it; the link preview says the headline
/// figures; "Latest verdicts" has one row per report.
#[tokio::test]
async fn a_status_page_and_its_images_are_one_snapshot_and_latest_verdicts_one_row_per_report() {
    let app = spawn_app().await;
    app.project("acme/one").await;
    let id = app.report(json!({"project": "acme/one", "external_id": "1", "title": "first bug", "body": "b"})).await;
    for verdict in ["not_reproduced", "not_reproduced", "reproduced"] {
        let r = app
            .post(
                "/api/v1/attempts",
                &json!({"report_id": id, "agent": "a", "verdict": verdict, "verdict_source": "human"}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let page = anon_get(&app, "/status/acme/one").await.text().await.unwrap();
    let serial =
        page.split("/badge/acme/one/backlog.svg?v=").nth(1).and_then(|r| r.split('"').next()).unwrap().to_owned();
    assert!(page.contains(&format!("/status/acme/one/trend.svg?v={serial}")), "the chart asks for the page's snapshot");
    assert!(page.contains(&format!("/status/acme/one/trend.png?v={serial}")), "and so does the preview");
    let status = anon_json(&app, "/api/v1/status/acme/one").await;
    assert_eq!(status["latest"].as_array().unwrap().len(), 1, "one row per report: {}", status["latest"]);
    assert_eq!(status["latest"][0]["verdict"], "reproduced", "its newest verdict");

    // The data moves: a second report, not reproduced yet.
    app.report(json!({"project": "acme/one", "external_id": "2", "title": "second bug", "body": "b"})).await;
    tokio::time::sleep(crate::helpers::STATUS_DEBOUNCE + std::time::Duration::from_millis(200)).await;
    let pinned = anon_json(&app, &format!("/badge/acme/one/backlog.json?v={serial}")).await;
    let current = anon_json(&app, "/badge/acme/one/backlog.json").await;
    assert_eq!(pinned["message"], "0", "the page's badge agrees with the page: {pinned}");
    assert_eq!(current["message"], "1", "a badge without v= is current: {current}");
    let r = anon_get(&app, "/status/acme/one/trend.svg?v=x").await;
    assert_eq!(r.status(), 400, "a v= that is no number is refused by name");
    let r = anon_get(&app, "/badge/acme/one/backlog.json?v=999999999").await;
    assert_eq!(r.status(), 200, "a snapshot no longer kept gives the current one");

    let s: failpass_shared::api::status::ProjectStatus =
        serde_json::from_value(anon_json(&app, "/api/v1/status/acme/one").await).unwrap();
    let preview = failpass::status::preview_chart(&s, 720, 378);
    assert!(preview.contains("100.0% reproduced (1 of 1 graded)") && preview.contains("backlog 1"), "{preview}");
    let png = anon_get(&app, "/status/acme/one/trend.png").await.bytes().await.unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
}

/// A project's data version moves with every write that changes one of its
/// reports, on both engines, and not with another project's.
#[tokio::test]
async fn a_projects_data_version_moves_with_its_writes_on_both_engines() {
    use failpass::db::{ProjectScope, Storage};
    use std::sync::Arc;
    crate::helpers::run_storage_test(|s: Arc<dyn Storage>| async move {
        for slug in ["v/one", "v/two"] {
            s.create_project(&serde_json::from_value(json!({"slug": slug})).unwrap()).await.unwrap();
        }
        let version = |slug: &'static str| {
            let s = s.clone();
            async move { s.get_project(slug, &ProjectScope::All).await.unwrap().unwrap().data_version }
        };
        let (one, two) = (version("v/one").await, version("v/two").await);
        let lines = [
            json!({"kind": "report", "project": "v/one", "external_id": "1", "title": "t", "body": "b"}),
            json!({"kind": "attempt", "report": {"project": "v/one", "external_id": "1"}, "agent": "a",
                   "verdict": "reproduced", "verdict_source": "human"}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let routing = failpass_shared::routing::RoutingConfig::default();
        let mut importer = failpass::import::Importer::new(s.as_ref(), &routing);
        failpass::import::run(
            &mut importer,
            failpass::import::Format::Ndjson,
            tokio::io::BufReader::new(std::io::Cursor::new(text.into_bytes())),
            &Default::default(),
        )
        .await
        .unwrap();
        importer.finish().await.unwrap();
        let after = version("v/one").await;
        assert!(after >= one + 2, "a report and an attempt each move it: {one} → {after}");
        assert_eq!(version("v/two").await, two, "another project's stays");
    })
    .await;
}
