//! Browser tests: the figure pages follow the API and the address.

use super::*;

#[tokio::test]
async fn overview_shows_the_same_figures_as_the_api() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 1000).await;
    h.client.goto(&format!("{}/", h.base)).await.unwrap();
    let rate = h.text("headline-rate").await;

    let api: FiguresResponse = h.api("/api/v1/figures").await;
    let all = &api.rows[0];
    assert_eq!(rate, percent(all.rate));
    assert_eq!(h.client.title().await.unwrap(), "Overview · failpass", "the tab names the page");
    assert_eq!(h.text("headline-reports").await, thousands(all.reports as i64));
    assert_eq!(h.text("headline-reproduced").await, thousands(all.reports_reproduced as i64));
    assert_eq!(h.text("headline-cost-per-reproduction").await, usd(all.cost_per_reproduction_usd));
    assert_eq!(h.text("headline-cost-mean-success").await, usd(all.cost_mean_success_usd));
    assert_eq!(h.text("headline-oracle-coverage").await, percent(all.oracle_coverage));
    assert_eq!(h.text("headline-attempts").await, thousands(all.attempts as i64));

    // the chart is a plotters SVG with a title, and its table matches the API by route
    let svg_html = h.svg("chart-route").await;
    assert!(svg_html.contains("Reproduction rate by route"), "chart title");
    let by_route: FiguresResponse = h.api("/api/v1/figures?group_by=route").await;
    let rows = h.client.find_all(Locator::Css("[data-testid=route-row]")).await.unwrap();
    assert_eq!(rows.len(), by_route.rows.len());
    for (el, row) in rows.iter().zip(&by_route.rows) {
        assert_eq!(el.attr("data-route").await.unwrap().as_deref(), Some(row.key.as_str()));
        assert!(el.text().await.unwrap().contains(&percent(row.rate)), "route {}", row.key);
        // the server drew the chart from the same figures: each bar's label
        let n = row.reports_graded;
        assert!(
            svg_html.contains(&format!("(n={n})\n")) || svg_html.contains(&format!(" n={n}\n")),
            "route {} in the chart",
            row.key
        );
    }
    assert!(h.svg("chart-route-mix").await.contains("Route mix"));
    h.screenshot("overview.png").await;

    // a project filter goes into the URL and the figures follow it
    let select = h.client.find(Locator::Css("[data-testid=filter-project]")).await.unwrap();
    select.select_by_value("jax-ml/jax").await.unwrap();
    let jax: FiguresResponse = h.api("/api/v1/figures?project=jax-ml/jax").await;
    let want = thousands(jax.rows[0].reports as i64);
    h.until("the jax figures", || async { h.text("headline-reports").await == want }).await;
    assert!(h.client.current_url().await.unwrap().as_str().contains("project=jax-ml%2Fjax"));
    assert_eq!(h.text("headline-rate").await, percent(jax.rows[0].rate));

    // one backlog: the glance's is the throughput API's, for the same filter;
    // time to reproduction is the throughput's too
    let flow: Throughput = h.api("/api/v1/throughput?project=jax-ml/jax").await;
    h.until("the jax glance", || async { h.text("glance-backlog").await == thousands(flow.backlog as i64) }).await;
    assert!(h.client.find(Locator::Css("[data-testid=headline-backlog]")).await.is_err(), "the backlog is shown once");
    assert!(h.text("period-views").await.contains("By filing date"), "the period's two views, labelled");
    assert_eq!(h.text("headline-time-to-reproduction").await, hours(flow.time_to_reproduction_median_hours));
    let weeks = h.client.find_all(Locator::Css("[data-testid=week-row]")).await.unwrap();
    assert_eq!(weeks.len(), flow.weeks.len());
    let svg = h.svg("chart-throughput").await;
    assert!(svg.contains("Weekly throughput") && svg.contains("Week starting"), "titled, with a labelled axis");

    // the navigation carries the shared filters: Cost & time opens on jax too
    h.client.find(Locator::Css("nav a[href^='/cost']")).await.unwrap().click().await.unwrap();
    h.until("the cost page", || async { h.client.current_url().await.unwrap().path() == "/cost" }).await;
    assert!(h.client.current_url().await.unwrap().as_str().contains("project=jax-ml%2Fjax"));
    assert_eq!(h.text("cost-per-reproduction").await, usd(jax.rows[0].cost_per_reproduction_usd));
    // and Back returns to the overview with its filter
    h.client.back().await.unwrap();
    h.until("the overview again", || async { h.client.current_url().await.unwrap().path() == "/" }).await;
    h.until("the jax overview", || async { h.text("headline-reports").await == want }).await;
    h.finish().await;
}

/// Issue 34 item 7: a label typed in the filter bar and the goal picked
/// there go into the address, and the Overview's cards follow both.
#[tokio::test]
async fn overview_follows_a_label_and_the_goal_through_the_address() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 1000).await;
    h.client.goto(&format!("{}/", h.base)).await.unwrap();
    h.text("headline-reports").await;
    let label = h.client.find(Locator::Css("[data-testid=filter-label]")).await.unwrap();
    label.send_keys("numerical\u{E007}").await.unwrap();
    let numerical: FiguresResponse = h.api("/api/v1/figures?label=numerical").await;
    let want = thousands(numerical.rows[0].reports as i64);
    h.until("the numerical reports", || async {
        h.client.current_url().await.unwrap().as_str().contains("label=numerical")
            && h.text("headline-reports").await == want
    })
    .await;
    let all: FiguresResponse = h.api("/api/v1/figures").await;
    assert!(numerical.rows[0].reports < all.rows[0].reports, "the label narrows the view");
    // The goal: fix, with its own names, and the label kept.
    h.client.find(Locator::Css("[data-testid=filter-goal]")).await.unwrap().select_by_value("fix").await.unwrap();
    let fix: FiguresResponse = h.api("/api/v1/figures?label=numerical&goal=fix").await;
    h.until("the fix figures", || async {
        let url = h.client.current_url().await.unwrap();
        url.as_str().contains("goal=fix") && url.as_str().contains("label=numerical")
    })
    .await;
    h.until("the goal note", || async { h.text("goal-note").await.contains("Goal: fix") }).await;
    assert_eq!(h.text("headline-rate").await, percent(fix.rows[0].rate));
    let cards = h.text("headline").await;
    assert!(cards.contains("Resolution rate") && cards.contains("Resolved"), "{cards}");
    // The navigation carries both to Regimes, and the goal does not go to the queue.
    let regimes = h.client.find(Locator::Css("nav a[href^='/regimes']")).await.unwrap().attr("href").await.unwrap();
    assert!(regimes.as_deref().is_some_and(|r| r.contains("goal=fix") && r.contains("label=numerical")), "{regimes:?}");
    let queue = h.client.find(Locator::Css("nav a[href^='/queue']")).await.unwrap().attr("href").await.unwrap();
    assert!(queue.as_deref().is_some_and(|q| !q.contains("goal") && q.contains("label=numerical")), "{queue:?}");
    h.screenshot("overview-goal-fix.png").await;
    h.finish().await;
}

#[tokio::test]
async fn regimes_show_the_apis_landscape_and_splits() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 1000).await;
    h.client.goto(&format!("{}/regimes", h.base)).await.unwrap();
    h.text("regime-table").await;
    let cells: FiguresResponse = h.api("/api/v1/figures?group_by=route,agent,model").await;
    let rows = h.client.find_all(Locator::Css("[data-testid=regime-row]")).await.unwrap();
    assert_eq!(rows.len(), cells.rows.len());
    for (el, row) in rows.iter().zip(&cells.rows) {
        assert_eq!(el.attr("data-key").await.unwrap().as_deref(), Some(row.key.as_str()));
        let rate = el.find(Locator::Css("[data-testid=regime-rate]")).await.unwrap().text().await.unwrap();
        assert_eq!(rate, percent(row.rate), "{}", row.key);
        let text = el.text().await.unwrap();
        assert!(text.contains(&interval(row.rate_low, row.rate_high)), "{}: {text}", row.key);
    }
    for (testid, group_by, title) in [
        ("chart-contamination", "model,cutoff", "training cutoff"),
        ("chart-category", "category", "Rate by category"),
        ("chart-vagueness", "vagueness", "Rate by vagueness"),
        ("chart-agents", "agent", "Reproduction rate by agent"),
    ] {
        let api: FiguresResponse = h.api(&format!("/api/v1/figures?group_by={group_by}")).await;
        let figure = h.client.find(Locator::Css(&format!("[data-testid={testid}]"))).await.unwrap();
        assert!(h.svg(testid).await.contains(title), "{testid} titled");
        let rows = figure.find_all(Locator::Css("[data-testid=rate-row]")).await.unwrap();
        assert_eq!(rows.len(), api.rows.len(), "{testid}");
        for (el, row) in rows.iter().zip(&api.rows) {
            assert_eq!(el.attr("data-key").await.unwrap().as_deref(), Some(row.key.as_str()), "{testid}");
            assert!(el.text().await.unwrap().contains(&percent(row.rate)), "{testid} {}", row.key);
        }
        // each table downloads as CSV: its rows, the same figures
        let href = figure.find(Locator::Css("a.download")).await.unwrap().attr("href").await.unwrap().unwrap();
        assert!(href.starts_with("/api/v1/export/figures?") && !href.contains("width"), "{href}");
        let csv = h.http.get(format!("{}{href}", h.base)).send().await.unwrap().text().await.unwrap();
        assert_eq!(csv.lines().count(), api.rows.len() + 1, "{testid}: {csv}");
    }
    h.screenshot("regimes.png").await;

    // an agent picked in the filter bar narrows every view, through the URL
    h.client.find(Locator::Css("[data-testid=filter-agent]")).await.unwrap().select_by_value("repgen").await.unwrap();
    let repgen: FiguresResponse = h.api("/api/v1/figures?group_by=route,agent,model&agent=repgen").await;
    let n = repgen.rows.len();
    h.until("the repgen rows", || async {
        h.client.find_all(Locator::Css("[data-testid=regime-row]")).await.unwrap().len() == n
            && h.client.current_url().await.unwrap().as_str().contains("agent=repgen")
    })
    .await;
    assert!(repgen.rows.iter().all(|r| r.keys[1] == "repgen"));
    // "Clear filters" on the same page resets the controls with the figures
    h.client.find(Locator::Css("[data-testid=filter-clear]")).await.unwrap().click().await.unwrap();
    let all = cells.rows.len();
    h.until("every row again", || async {
        h.client.find_all(Locator::Css("[data-testid=regime-row]")).await.unwrap().len() == all
    })
    .await;
    let agent = h.client.find(Locator::Css("[data-testid=filter-agent]")).await.unwrap();
    assert_eq!(agent.prop("value").await.unwrap().as_deref(), Some(""), "the agent select follows the address");
    // and Back brings the agent back, control and rows alike
    h.client.back().await.unwrap();
    h.until("the repgen rows again", || async {
        h.client.find_all(Locator::Css("[data-testid=regime-row]")).await.unwrap().len() == n
    })
    .await;
    let agent = h.client.find(Locator::Css("[data-testid=filter-agent]")).await.unwrap();
    assert_eq!(agent.prop("value").await.unwrap().as_deref(), Some("repgen"));
    h.finish().await;
}

#[tokio::test]
async fn cost_and_time_follow_the_api_and_the_window() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 1000).await;
    // the demo's history ends now; a window over its last three weeks
    let since = (chrono::Utc::now() - chrono::Duration::days(21)).format("%Y-%m-%d").to_string();
    let since = since.as_str();
    h.client.goto(&format!("{}/cost?since={since}", h.base)).await.unwrap();
    let total: FiguresResponse = h.api(&format!("/api/v1/figures?since={since}")).await;
    let t = &total.rows[0];
    assert_eq!(h.text("cost-per-reproduction").await, usd(t.cost_per_reproduction_usd));
    assert_eq!(h.text("cost-mean-success").await, usd(t.cost_mean_success_usd));
    let cost: DistributionResponse = h.api(&format!("/api/v1/distributions?metric=cost_usd&since={since}")).await;
    assert_eq!(h.text("cost-median").await, usd(cost.groups[0].median));
    let wall: DistributionResponse = h.api(&format!("/api/v1/distributions?metric=wall_seconds&since={since}")).await;
    // one unit for wall time on the page: minutes, in the cards and on the charts' axes
    assert_eq!(h.text("wall-median").await, failpass_shared::format::minutes(wall.groups[0].median));
    assert!(h.svg("chart-wall-histogram").await.contains("(minutes; binned, within 2.2%)"));
    let agents: FiguresResponse = h.api(&format!("/api/v1/figures?group_by=agent&since={since}")).await;
    let rows = h.client.find_all(Locator::Css("[data-testid=cost-row]")).await.unwrap();
    assert_eq!(rows.len(), agents.rows.len());
    for (el, row) in rows.iter().zip(&agents.rows) {
        assert_eq!(el.attr("data-agent").await.unwrap().as_deref(), Some(row.key.as_str()));
        let cell =
            el.find(Locator::Css("[data-testid=cost-per-reproduction-cell]")).await.unwrap().text().await.unwrap();
        assert_eq!(cell, usd(row.cost_per_reproduction_usd), "{}", row.key);
    }
    for (testid, title) in [
        ("chart-cost-histogram", "Cost per attempt"),
        ("chart-cost-cdf", "(CDF)"),
        ("chart-wall-histogram", "Wall time"),
        ("chart-cost-both-ways", "two ways"),
        ("chart-spend", "Spend per week"),
        ("chart-spend-month", "Spend per month"),
    ] {
        assert!(h.svg(testid).await.contains(title), "{testid} is titled {title}");
    }
    // the date field shows the window, and the all-time figures differ from it
    let field = h.client.find(Locator::Css("[data-testid=filter-since]")).await.unwrap();
    assert_eq!(field.prop("value").await.unwrap().as_deref(), Some(since));
    let all: FiguresResponse = h.api("/api/v1/figures").await;
    assert_ne!(all.rows[0].attempts, t.attempts, "the window narrows the attempts");
    h.screenshot("cost.png").await;
    h.finish().await;
}
