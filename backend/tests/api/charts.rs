//! `GET /api/v1/charts/{name}`: SVG drawn from the same figures as the JSON
//! endpoints, for the same parameters; bad parameters are 400s naming them.

use crate::helpers::{TestApp, assert_error, spawn_app, spawn_app_with_demo};

/// The chart's SVG, after checking it is one.
async fn svg(app: &TestApp, path: &str) -> String {
    let resp = app.client.get(format!("{}{path}", app.base)).send().await.unwrap();
    let status = resp.status().as_u16();
    let content_type = resp.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let body = resp.text().await.unwrap();
    assert_eq!(status, 200, "{path}: {body}");
    assert!(content_type.starts_with("image/svg+xml"), "{path}: {content_type}");
    assert!(body.starts_with("<svg") && body.trim_end().ends_with("</svg>"), "{path}: not an SVG document");
    body
}

#[tokio::test]
async fn every_chart_is_an_svg_drawn_from_the_apis_figures() {
    let app = spawn_app_with_demo().await;
    for (path, title) in [
        ("/api/v1/charts/rate?group_by=route", "Reproduction rate by route"),
        ("/api/v1/charts/rate?group_by=model,cutoff", "training cutoff"),
        ("/api/v1/charts/rate.svg?group_by=category", "Rate by category"),
        ("/api/v1/charts/reports?group_by=route", "Route mix"),
        ("/api/v1/charts/reports?group_by=agent", "Reports by agent"),
        ("/api/v1/charts/throughput", "Weekly throughput"),
        ("/api/v1/charts/cost-both-ways", "Cost per reproduction, two ways"),
        ("/api/v1/charts/spend", "Spend per week, and in all"),
        ("/api/v1/charts/spend?group_by=month", "Spend per month, and in all"),
        ("/api/v1/charts/histogram?metric=cost_usd", "Cost per attempt"),
        ("/api/v1/charts/histogram?metric=wall_seconds", "Wall time per attempt"),
        ("/api/v1/charts/cdf?metric=cost_usd", "Cost per attempt, by agent (CDF)"),
        ("/api/v1/charts/oracle-kinds", "Reports by oracle kind"),
        ("/api/v1/charts/oracle-sources", "in-patch reference 47.11%"),
    ] {
        assert!(svg(&app, path).await.contains(title), "{path} is titled {title}");
    }

    // each bar's label is the JSON figures' rate and sample size, filters included
    for query in ["group_by=route", "group_by=route&project=jax-ml/jax", "group_by=agent&since=2020-01-01"] {
        let chart = svg(&app, &format!("/api/v1/charts/rate?{query}&width=1200")).await;
        let figures = app.get(&format!("/api/v1/figures?{query}")).await.body;
        let rows = figures["rows"].as_array().unwrap();
        assert!(!rows.is_empty(), "{query}");
        for row in rows {
            // the label ends its line of text: `n=1` must not pass for `n=12`
            let n = &row["reports_graded"];
            let (across, side) = (format!("(n={n})\n"), format!(" n={n}\n"));
            assert!(chart.contains(&across) || chart.contains(&side), "{query}: {} has n={n} in the chart", row["key"]);
        }
    }
    // the CDF names each agent with its attempt count, as the distributions give it
    let cdf = svg(&app, "/api/v1/charts/cdf?metric=wall_seconds").await;
    let dist = app.get("/api/v1/distributions?metric=wall_seconds&group_by=agent").await.body;
    for g in dist["groups"].as_array().unwrap() {
        let label = format!("{} (n={})", g["key"].as_str().unwrap(), g["n"]);
        assert!(cdf.contains(&label), "{label} in the CDF's legend");
    }
    // the width is the drawing's; an empty width is no width
    assert!(svg(&app, "/api/v1/charts/rate?width=320").await.contains("width=\"320\""));
    assert!(svg(&app, "/api/v1/charts/rate?width=").await.contains("width=\"560\""));
    // a chart opened on its own may run and load nothing
    let resp = app.client.get(format!("{}/api/v1/charts/rate", app.base)).send().await.unwrap();
    assert_eq!(resp.headers()["content-security-policy"], "default-src 'none'");
}

#[tokio::test]
async fn time_axes_show_the_year_and_leave_gaps_and_wall_time_is_in_minutes() {
    let app = spawn_app().await;
    app.project("a/b").await;
    for (n, filed) in [("1", "2023-03-06T10:00:00Z"), ("2", "2025-12-22T10:00:00Z"), ("3", "2026-01-19T10:00:00Z")] {
        let r =
            app.report(serde_json::json!({"project": "a/b", "external_id": n, "title": "t", "filed_at": filed})).await;
        app.attempt(
            serde_json::json!({"report_id": r, "agent": "a", "verdict": "reproduced", "verdict_source": "human",
            "cost_usd": 1.0, "wall_seconds": 600.0, "started_at": filed}),
        )
        .await;
    }
    let chart = svg(&app, "/api/v1/charts/throughput?width=1600").await;
    // the newest 26 weeks, every one: 2023 is not drawn beside 2026, and the
    // year is on the axis where it changes
    let texts = |svg: &str| -> Vec<String> {
        svg.split('>')
            .filter_map(|t| t.split('<').next())
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect()
    };
    let labels = texts(&chart);
    assert!(!labels.iter().any(|t| t.starts_with("2023-")), "a 2023 week beside 2026 ones: {labels:?}");
    assert!(labels.iter().any(|t| t.starts_with("2025-")), "the year on the first week: {labels:?}");
    assert!(labels.iter().any(|t| t.starts_with("2026-01-")), "the year where it changes: {labels:?}");
    let ticks: Vec<&String> = labels.iter().filter(|t| t.parse::<u32>().is_ok()).collect();
    assert!(ticks.windows(2).all(|w| w[0] != w[1]), "a count axis repeats no tick: {ticks:?}");
    assert!(chart.contains("Week starting (UTC)") && !chart.contains("MM-DD"));
    // spend: every week from the first to the last, in a month view every month
    let months = svg(&app, "/api/v1/charts/spend?group_by=month&width=1600").await;
    let labels = texts(&months);
    assert!(["Mar 2023", "Jan 2026", "May"].iter().all(|m| labels.iter().any(|t| t == m)), "{labels:?}");
    assert!(months.contains("Cumulative (USD)"));
    // wall time in minutes, as the Cost & time page's cards give it: 600 s is 10
    let wall = svg(&app, "/api/v1/charts/histogram?metric=wall_seconds").await;
    let labels = texts(&wall);
    assert!(wall.contains("(minutes; binned, within 2.2%)") && labels.iter().any(|t| t == "10"), "{labels:?}");
}

#[tokio::test]
async fn names_in_a_chart_are_text_never_markup() {
    let app = spawn_app().await;
    app.project("a/b").await;
    let report = app.report(serde_json::json!({"project": "a/b", "external_id": "1", "title": "t"})).await;
    let agent = "<img src=x onerror=alert(1)>";
    app.attempt(serde_json::json!({"report_id": report, "agent": agent, "model": "m&<b>", "verdict": "reproduced", "verdict_source": "human", "cost_usd": 0.5, "wall_seconds": 30.0})).await;
    for path in [
        "/api/v1/charts/rate?group_by=agent",
        "/api/v1/charts/reports?group_by=model",
        "/api/v1/charts/cdf?metric=cost_usd",
        "/api/v1/charts/cost-both-ways",
    ] {
        let chart = svg(&app, path).await;
        assert!(!chart.contains("<img") && !chart.contains("<b>"), "{path}: markup from a name reached the SVG");
        assert!(chart.contains("&lt;img") || chart.contains("&lt;b&gt;"), "{path}: the name is shown, escaped");
    }
}

#[tokio::test]
async fn an_empty_view_still_draws_a_titled_chart() {
    let app = spawn_app().await;
    assert!(svg(&app, "/api/v1/charts/rate").await.contains("Reproduction rate by route"));
    assert!(svg(&app, "/api/v1/charts/histogram").await.contains("Cost per attempt"));
    assert!(svg(&app, "/api/v1/charts/cdf").await.contains("(CDF)"));
    assert!(svg(&app, "/api/v1/charts/spend").await.contains("Spend per week"));
    let throughput = svg(&app, "/api/v1/charts/throughput").await;
    assert!(throughput.contains("Weekly throughput") && throughput.contains("No report in the view"), "{throughput}");
}

#[tokio::test]
async fn bad_chart_requests_name_what_is_wrong() {
    let app = spawn_app().await;
    assert_error(&app.get("/api/v1/charts/pie").await, 404, "not_found", "no chart `pie`; known: rate, reports");
    assert_error(
        &app.get("/api/v1/charts/rate?width=10").await,
        400,
        "bad_request",
        "width: `10` is not a width in pixels from 280 to 1600",
    );
    assert_error(&app.get("/api/v1/charts/rate?width=wide").await, 400, "bad_request", "width: `wide`");
    assert_error(
        &app.get("/api/v1/charts/rate?colour=red").await,
        400,
        "bad_request",
        "unknown query parameter `colour`",
    );
    assert_error(&app.get("/api/v1/charts/rate?colour=red").await, 400, "bad_request", ", width");
    assert_error(
        &app.get("/api/v1/charts/throughput?agent=x").await,
        400,
        "bad_request",
        "unknown query parameter `agent`",
    );
    assert_error(
        &app.get("/api/v1/charts/rate?group_by=colour").await,
        400,
        "bad_request",
        "group_by: unknown group_by `colour`",
    );
    assert_error(&app.get("/api/v1/charts/rate?since=2026-02-30").await, 400, "bad_request", "since");
    assert_error(
        &app.get("/api/v1/charts/histogram?group_by=agent").await,
        400,
        "bad_request",
        "group_by: a histogram",
    );
    assert_error(&app.get("/api/v1/charts/spend?group_by=agent").await, 400, "bad_request", "by week or by month");
    assert_error(
        &app.get("/api/v1/charts/oracle-kinds?project=no/such").await,
        404,
        "not_found",
        "project `no/such` not found",
    );
    assert_error(
        &app.get("/api/v1/charts/rate?width=400&width=500").await,
        400,
        "bad_request",
        "width: given more than once",
    );
}

/// Costs and times nobody recorded are unknown, never zero: a cost chart
/// over attempts without a cost says so instead of drawing $0.00 ticks.
#[tokio::test]
async fn charts_over_unknown_costs_and_times_say_what_is_missing() {
    let app = crate::helpers::spawn_app().await;
    let lines = [
        serde_json::json!({"kind": "project", "slug": "s/costless"}),
        serde_json::json!({"kind": "report", "project": "s/costless", "external_id": "1", "title": "one"}),
        serde_json::json!({"kind": "attempt", "report": {"project": "s/costless", "external_id": "1"}, "agent": "a",
                           "verdict": "reproduced", "verdict_source": "human"}),
        serde_json::json!({"kind": "attempt", "report": {"project": "s/costless", "external_id": "1"}, "agent": "b",
                           "verdict": "not_reproduced", "verdict_source": "human"}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(app.import_ndjson(body).await.status(), 200);
    for (path, says) in [
        ("/api/v1/charts/cost-both-ways?project=s/costless", "Unknown: none of the 2 attempts has a cost"),
        ("/api/v1/charts/spend?project=s/costless", "Unknown: none of the 2 attempts has a cost"),
        ("/api/v1/charts/spend?project=s/costless&group_by=month", "Unknown: none of the 2 attempts has a cost"),
        ("/api/v1/charts/histogram?metric=cost_usd&project=s/costless", "Unknown: no attempt in the view has a cost"),
        ("/api/v1/charts/cdf?metric=wall_seconds&project=s/costless", "Unknown: no attempt in the view has a time"),
    ] {
        let chart = svg(&app, path).await;
        assert!(chart.contains(says), "{path}: {chart}");
        assert!(!chart.contains("$0.00"), "{path}: no zero ticks");
    }
}
