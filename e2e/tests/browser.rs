//! The real server with demo data and the built dashboard, driven in headless
//! Chromium through chromedriver. Screenshots land in `target/e2e/`.
//!
//! Needs `/usr/bin/chromium`, `/usr/bin/chromedriver` and a built dashboard
//! (`cargo xtask test` provides all three). It fails, never skips, without them.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use failpass::startup::{App, AppConfig};
use failpass_shared::api::Page;
use failpass_shared::api::figures::{DistributionResponse, FiguresResponse, Throughput};
use failpass_shared::api::reports::ReportSummary;
use failpass_shared::format::{hours, interval, percent, thousands, usd};
use fantoccini::{Client, ClientBuilder, Locator};
use tempfile::TempDir;

#[path = "../chrome.rs"]
mod chrome;
#[path = "browser/inbox.rs"]
mod inbox;
#[path = "browser/routing.rs"]
mod routing;
#[path = "browser/walk.rs"]
mod walk;

/// One browser at a time: two cores do not carry more.
static BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

struct Harness {
    base: String,
    client: Client,
    http: reqwest::Client,
    driver: Child,
    /// chromedriver's address (for the Chrome DevTools commands it relays).
    driver_url: String,
    /// The served app's storage (to make tokens).
    storage: std::sync::Arc<dyn failpass::db::Storage>,
    _data: TempDir,
    _profile: TempDir,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn artifacts() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let dir = target.join("e2e");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn start(width: u32, height: u32) -> Harness {
    start_with(width, height, 0).await
}

/// With `workers` verification workers grading the demo for real.
async fn start_with(width: u32, height: u32, workers: usize) -> Harness {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let chromedriver = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
    assert!(
        std::path::Path::new(&chromium).exists(),
        "{chromium} is missing: run `cargo xtask test`, which installs it"
    );

    let data = tempfile::tempdir().unwrap();
    let app = App::build(AppConfig {
        database_url: data.path().join("failpass.db").to_string_lossy().into_owned(),
        bind: "127.0.0.1:0".parse().unwrap(),
        demo: true,
        demo_real_bugs: false,
        routing: Default::default(),
        data_dir: data.path().to_path_buf(),
        workers,
        generator: failpass::runner::refine::Generator::Snippet,
        refine_budget: 5,
        recheck_every: None,
        // The hooks test's receiver listens on this machine's loopback, as an operator would allow it.
        security: failpass::security::SecurityConfig { hook_networks: loopback_hooks(), ..Default::default() },
    })
    .await
    .unwrap();
    let base = format!("http://127.0.0.1:{}", app.port());
    let storage = app.storage();
    tokio::spawn(app.run_until(std::future::pending()));
    let http = reqwest::Client::new();
    let index = http.get(format!("{base}/")).send().await.unwrap().text().await.unwrap();
    assert!(index.contains("/boot.js"), "the dashboard is not built: run `cargo xtask test`");

    let port = free_port();
    let driver = Command::new(&chromedriver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {chromedriver}: {e}"));
    let profile = tempfile::tempdir().unwrap();
    let caps = chrome::capabilities(&chromium, profile.path(), width, height);
    let started = Instant::now();
    let client = loop {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(caps.clone())
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
        {
            Ok(c) => break c,
            Err(e) if started.elapsed() < Duration::from_secs(20) => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("chromedriver did not start a session: {e}"),
        }
    };
    let driver_url = format!("http://127.0.0.1:{port}");
    Harness { base, client, http, driver, driver_url, storage, _data: data, _profile: profile }
}

impl Harness {
    /// Makes pages see `prefers-color-scheme: dark` (a DevTools command, relayed by chromedriver).
    async fn prefer_dark(&self) {
        let session = self.client.session_id().await.unwrap().expect("a WebDriver session");
        let r = self
            .http
            .post(format!("{}/session/{session}/goog/cdp/execute", self.driver_url))
            .json(&serde_json::json!({
                "cmd": "Emulation.setEmulatedMedia",
                "params": {"features": [{"name": "prefers-color-scheme", "value": "dark"}]},
            }))
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "emulating the dark scheme: {}", r.text().await.unwrap());
    }

    async fn api<T: serde::de::DeserializeOwned>(&self, path: &str) -> T {
        self.http.get(format!("{}{path}", self.base)).send().await.unwrap().json().await.unwrap()
    }

    async fn text(&self, testid: &str) -> String {
        let started = Instant::now();
        loop {
            let el = self
                .client
                .wait()
                .at_most(Duration::from_secs(20))
                .for_element(Locator::Css(&format!("[data-testid={testid}]")))
                .await
                .unwrap_or_else(|e| panic!("[data-testid={testid}] never appeared: {e}"));
            match el.text().await {
                Ok(text) => return text,
                // The page re-rendered between finding the element and reading it: find it again.
                // Chromium reports it as a stale reference, or (between two renders) as an
                // inspector error about a node no longer in the document.
                Err(e)
                    if (e.is_stale_element_reference()
                        || e.to_string().contains("does not belong to the document"))
                        && started.elapsed() < Duration::from_secs(20) =>
                {
                    continue;
                }
                Err(e) => panic!("[data-testid={testid}] could not be read: {e}"),
            }
        }
    }

    /// The SVG the server drew for figure `testid`, once the page has inlined it.
    async fn svg(&self, testid: &str) -> String {
        let css = format!("[data-testid={testid}] svg");
        let el = self
            .client
            .wait()
            .at_most(Duration::from_secs(20))
            .for_element(Locator::Css(&css))
            .await
            .unwrap_or_else(|e| panic!("{css} never appeared: {e}"));
        el.html(false).await.unwrap()
    }

    /// Waits until `check` holds, re-reading the page; panics with `what` after 20 s.
    async fn until<F, Fut>(&self, what: &str, mut check: F)
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let started = Instant::now();
        while !check().await {
            assert!(started.elapsed() < Duration::from_secs(20), "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn rows(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for el in self.client.find_all(Locator::Css("[data-testid=queue-row]")).await.unwrap_or_default() {
            let id = el.attr("data-id").await.ok().flatten().unwrap_or_default();
            let route = el.attr("data-route").await.ok().flatten().unwrap_or_default();
            out.push((id, route));
        }
        out
    }

    /// Signs the browser in as the demo user `name` through the sign-in page.
    async fn sign_in(&self, name: &str) {
        let creds = failpass::demo::credentials(self._data.path()).expect("the demo wrote its users' passwords");
        let password = creds
            .lines()
            .find_map(|l| l.trim_start().strip_prefix(name).filter(|rest| rest.starts_with(' ')))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no demo user {name}"))
            .to_owned();
        self.client.goto(&format!("{}/signin?next=%2F", self.base)).await.unwrap();
        self.client.wait().for_element(Locator::Css("input[name=name]")).await.unwrap().send_keys(name).await.unwrap();
        self.client.find(Locator::Css("input[name=password]")).await.unwrap().send_keys(&password).await.unwrap();
        self.client.find(Locator::Css("[data-testid=signin-submit]")).await.unwrap().click().await.unwrap();
        self.until(&format!("{name} to be signed in"), || async { self.text("signed-in-as").await.starts_with(name) })
            .await;
    }

    /// How far the page scrolls sideways (0 or less: it fits the window).
    async fn sideways(&self) -> i64 {
        self.client
            .execute("return document.documentElement.scrollWidth - window.innerWidth", vec![])
            .await
            .unwrap()
            .as_i64()
            .unwrap_or(0)
    }

    /// What `e2e/layout_check.js` finds on the page: controls off-screen,
    /// text under 12 px, a page wider than the window. One line each.
    async fn layout_problems(&self) -> Vec<String> {
        let found = self.client.execute(include_str!("../layout_check.js"), vec![]).await.unwrap();
        serde_json::from_value(found).unwrap()
    }

    /// Saves what the window shows, and fails if the page hides a control
    /// past its edges or draws text under 12 px (`layout_problems`): every
    /// screen a walk photographs is also checked.
    async fn screenshot(&self, name: &str) {
        let problems = self.layout_problems().await;
        assert!(problems.is_empty(), "{name}: {}", problems.join("; "));
        let png = self.client.screenshot().await.unwrap();
        let path = artifacts().join(name);
        std::fs::write(&path, png).unwrap();
        println!("screenshot: {}", path.display());
    }

    async fn finish(self) {
        self.client.clone().close().await.unwrap();
    }
}

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

#[tokio::test]
async fn queue_filters_search_and_pages() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 1000).await;
    h.client.goto(&format!("{}/queue", h.base)).await.unwrap();
    let all: Page<ReportSummary> = h.api("/api/v1/reports").await;
    h.until("the queue rows", || async { h.rows().await.len() == all.items.len() }).await;

    let select = h.client.find(Locator::Css("[data-testid=filter-route]")).await.unwrap();
    select.select_by_value("human_first").await.unwrap();
    let human: Page<ReportSummary> = h.api("/api/v1/reports?route=human_first").await;
    assert!(!human.items.is_empty() && human.items.len() < all.items.len());
    h.until("the human_first rows", || async {
        let rows = h.rows().await;
        rows.len() == human.items.len() && rows.iter().all(|(_, r)| r == "human_first")
    })
    .await;
    let shown: Vec<String> = h.rows().await.into_iter().map(|(id, _)| id).collect();
    let expected: Vec<String> = human.items.iter().map(|r| r.id.to_string()).collect();
    assert_eq!(shown, expected, "same reports in the same order as the API");
    assert!(h.client.current_url().await.unwrap().as_str().contains("route=human_first"));
    assert_eq!(h.text("queue-count").await.split(" ·").next().unwrap(), format!("{} reports", human.items.len()));
    h.screenshot("queue-human-first.png").await;
    // "Export all" carries the filters: every human_first report, as CSV.
    let href =
        h.client.find(Locator::Css("[data-testid=export-csv]")).await.unwrap().attr("href").await.unwrap().unwrap();
    assert!(href.starts_with("/api/v1/export/reports?") && href.contains("route=human_first"), "{href}");
    let csv = reqwest::get(format!("{}{href}", h.base)).await.unwrap().text().await.unwrap();
    assert_eq!(csv.lines().count(), human.items.len() + 1, "{csv}");

    // free-text search, typed and submitted
    h.client.goto(&format!("{}/queue", h.base)).await.unwrap();
    let input = h.client.wait().for_element(Locator::Css("[data-testid=filter-q]")).await.unwrap();
    input.send_keys("logsumexp").await.unwrap();
    input.send_keys("\u{E007}").await.unwrap(); // Enter submits the form
    let found: Page<ReportSummary> = h.api("/api/v1/reports?q=logsumexp").await;
    assert_eq!(found.items.len(), 2, "the recorded demo's report and fastnum's");
    let want: Vec<String> = found.items.iter().map(|r| r.id.to_string()).collect();
    h.until("the search results", || async {
        let rows: Vec<String> = h.rows().await.into_iter().map(|(id, _)| id).collect();
        rows == want
    })
    .await;

    // keyset paging through the links
    h.client.goto(&format!("{}/queue?limit=10", h.base)).await.unwrap();
    h.until("page one", || async { h.rows().await.len() == 10 }).await;
    let first: Vec<String> = h.rows().await.into_iter().map(|(id, _)| id).collect();
    h.client.find(Locator::Css("[data-testid=next-page]")).await.unwrap().click().await.unwrap();
    h.until("page two", || async {
        let ids: Vec<String> = h.rows().await.into_iter().map(|(id, _)| id).collect();
        ids.len() == 10 && ids.iter().all(|id| !first.contains(id))
    })
    .await;
    assert!(h.client.find(Locator::Css("[data-testid=first-page]")).await.is_ok());

    // keyboard: j, j moves to the second row, k back to the first, j again, Enter opens it
    let ids: Vec<String> = h.rows().await.into_iter().map(|(id, _)| id).collect();
    let body = h.client.find(Locator::Css("body")).await.unwrap();
    for key in ["j", "j", "k", "j"] {
        body.send_keys(key).await.unwrap();
    }
    let selected = h.client.find(Locator::Css("[data-testid=queue-row].selected")).await.unwrap();
    assert_eq!(selected.attr("data-id").await.unwrap().as_deref(), Some(ids[1].as_str()));
    assert_eq!(selected.attr("aria-selected").await.unwrap().as_deref(), Some("true"));
    body.send_keys("\u{E007}").await.unwrap(); // Enter
    let want = format!("/reports/{}", ids[1]);
    h.until("the selected report", || async { h.client.current_url().await.unwrap().path() == want }).await;
    h.finish().await;
}

#[tokio::test]
async fn failures_show_an_error_never_a_blank_page() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 900).await;
    h.client.goto(&format!("{}/queue?route=robot", h.base)).await.unwrap();
    let msg = h.text("error").await;
    assert!(msg.contains("route"), "{msg}");
    h.client.goto(&format!("{}/reports/987654", h.base)).await.unwrap();
    let msg = h.text("error").await;
    assert!(msg.contains("report 987654 not found"), "{msg}");
    h.screenshot("error-report-missing.png").await;
    // every figure page names a bad filter, and says so when a window holds nothing
    for path in ["/", "/regimes", "/cost"] {
        h.client.goto(&format!("{}{path}?since=last-week", h.base)).await.unwrap();
        let msg = h.text("error").await;
        assert!(msg.contains("since") && msg.contains("YYYY-MM-DD"), "{path}: {msg}");
        h.client.goto(&format!("{}{path}?since=2099-01-01", h.base)).await.unwrap();
        let msg = h.text("empty").await;
        assert!(msg.contains("Widen the filters"), "{path}: {msg}");
    }
    // An unknown project in the address is an error naming it, not an empty queue under "All projects".
    h.client.goto(&format!("{}/queue?project=no%2Fsuch", h.base)).await.unwrap();
    let msg = h.text("error").await;
    assert!(msg.contains("project `no/such` not found"), "{msg}");
    h.client.goto(&format!("{}/no/such/page", h.base)).await.unwrap();
    h.until("the not-found page", || async { h.client.source().await.unwrap_or_default().contains("Page not found") })
        .await;
    h.finish().await;
}

#[tokio::test]
async fn report_page_and_narrow_screen() {
    let _one = BROWSER.lock().await;
    let h = start(390, 844).await;
    let page: Page<ReportSummary> = h.api("/api/v1/reports?route=agent_first&limit=1").await;
    let id = page.items[0].id;
    h.client.goto(&format!("{}/reports/{id}", h.base)).await.unwrap();
    let explanation = h.text("explanation").await;
    assert!(explanation.contains("deterministic oracle"), "{explanation}");
    let viewport = h.client.execute("return window.innerWidth", vec![]).await.unwrap();
    assert_eq!(viewport.as_i64(), Some(390), "a true 390 px viewport");
    let overflow = h.sideways().await;
    assert!(
        overflow <= 0,
        "the page does not scroll sideways at 390 px (tables scroll inside their frame): {overflow}"
    );
    h.screenshot("report-390.png").await;
    h.client.goto(&format!("{}/", h.base)).await.unwrap();
    h.text("headline-rate").await;
    h.screenshot("overview-390.png").await;
    for (path, testid, shot) in [
        ("/regimes", "regime-table", "regimes-390.png"),
        ("/cost", "cost-per-reproduction", "cost-390.png"),
        ("/oracles", "oracle-coverage", "oracles-390.png"),
        ("/runners", "queue-waiting", "runners-390.png"),
        ("/queue", "queue-table", "queue-390.png"),
    ] {
        h.client.goto(&format!("{}{path}", h.base)).await.unwrap();
        h.text(testid).await;
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "{path} scrolls sideways at 390 px by {overflow}");
        h.screenshot(shot).await;
    }
    h.finish().await;
}

#[tokio::test]
async fn regimes_page_shows_stated_against_computed_agent_figures() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 1000).await;
    let agents: Vec<failpass_shared::api::import::AgentFigures> = h.api("/api/v1/agents").await;
    let repgen = agents.iter().find(|a| a.agent.name == "repgen").expect("the demo states a figure for repgen");
    assert!(!repgen.discrepancies.is_empty(), "the demo's claim differs from its rows");
    h.client.goto(&format!("{}/regimes", h.base)).await.unwrap();
    let cell = h.text("agent-discrepancies").await;
    assert_eq!(cell, repgen.discrepancies.join("\n"), "the page names the same discrepancy as the API");
    h.screenshot("regimes-agents.png").await;
    h.finish().await;
}

#[tokio::test]
async fn runners_page_and_a_live_rerun_from_the_report_page() {
    let _one = BROWSER.lock().await;
    let h = start_with(1280, 1400, 2).await;
    // Let the workers grade the demo.
    let started = Instant::now();
    loop {
        let q: serde_json::Value = h.api("/api/v1/jobs").await;
        if q["queued"] == 0 && q["running"] == 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(180), "the demo's jobs did not finish: {q}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    h.client.goto(&format!("{}/runners", h.base)).await.unwrap();
    let q: serde_json::Value = h.api("/api/v1/jobs").await;
    let done = thousands(q["done_last_day"].as_i64().unwrap());
    h.until("the done count", || async { h.text("queue-done").await == done }).await;
    assert_eq!(h.text("queue-waiting").await, "0");
    let runners = h.client.find_all(Locator::Css("[data-testid=runners] tbody tr")).await.unwrap();
    assert_eq!(runners.len(), q["runners"].as_array().unwrap().len());
    assert!(h.text("runners").await.contains("live"), "a live runner is shown as live");
    // The figures are fetched again every two seconds and swapped in place, without a reload.
    h.client
        .execute("window.stayed = true; document.querySelector('[data-testid=queue-done]').dataset.old = 'yes'", vec![])
        .await
        .unwrap();
    h.until("the figures to be swapped in place", || async {
        h.client
            .execute(
                "return window.stayed === true && !document.querySelector('[data-testid=queue-done]').dataset.old",
                vec![],
            )
            .await
            .is_ok_and(|v| v == serde_json::Value::Bool(true))
    })
    .await;
    assert_eq!(h.text("queue-done").await, done);
    h.screenshot("runners.png").await;

    // The softmax report: open an attempt's grading, then rerun it and follow it live (a maintainer's to do).
    h.sign_in("demo-maintainer").await;
    let page: Page<ReportSummary> = h.api("/api/v1/reports?project=fastnum/fastnum&q=softmax").await;
    let id = page.items[0].id;
    h.client.goto(&format!("{}/reports/{id}", h.base)).await.unwrap();
    h.text("attempts").await;
    let details = h.client.find(Locator::Css("[data-testid=attempt-row] button")).await.unwrap();
    details.click().await.unwrap();
    let matrix = h.text("run-matrix").await;
    assert!(matrix.contains("buggy") && matrix.contains("fixed"), "{matrix}");
    let detail = h.text("attempt-detail").await;
    assert!(detail.contains("failure behaviour") && detail.contains("deterministic"), "{detail}");
    // the candidate is highlighted, and its text is the script exactly
    let attempts: Page<failpass_shared::api::attempts::Attempt> =
        h.api(&format!("/api/v1/attempts?report_id={id}&limit=50")).await;
    let candidate = h.client.find(Locator::Css("[data-testid=candidate]")).await.unwrap();
    let shown = candidate.text().await.unwrap();
    assert!(
        attempts.items.iter().filter_map(|a| a.candidate.as_deref()).any(|c| c.trim() == shown.trim()),
        "the page shows a stored candidate verbatim"
    );
    assert!(!candidate.find_all(Locator::Css(".tok-kw")).await.unwrap().is_empty(), "keywords are marked up");
    // the body is rendered markdown: its code block is a <pre>, never raw text
    let body = h.client.find(Locator::Css("[data-testid=report-body]")).await.unwrap();
    assert!(!body.find_all(Locator::Css("pre code")).await.unwrap().is_empty(), "the body's code block is rendered");
    h.client.execute("document.querySelector('[data-testid=attempt-detail]').scrollIntoView()", vec![]).await.unwrap();
    h.screenshot("report-attempt-detail.png").await;
    let rerun = h.client.find(Locator::Css("[data-testid=rerun]")).await.unwrap();
    rerun.click().await.unwrap();
    h.until("the rerun to finish live", || async {
        h.client.find(Locator::Css("[data-testid=job-progress]")).await.is_ok_and(|_| true)
            && h.text("job-progress").await.contains("done")
    })
    .await;
    let progress = h.text("job-progress").await;
    assert!(progress.contains("verdict"), "{progress}");
    // the row's rerun reports under that row, beside its button, not at the top of the page
    let in_row = h.client.find(Locator::Css("[data-testid=attempts] [data-testid=job-progress]")).await.unwrap();
    assert!(in_row.text().await.unwrap().contains("done"));
    h.client
        .execute("document.querySelector('[data-testid=attempts] .jobs-live').scrollIntoView()", vec![])
        .await
        .unwrap();
    h.screenshot("report-rerun-live.png").await;

    // Re-check the reproduced attempts against the newer release, from the page.
    let select = h.client.wait().for_element(Locator::Css("[data-testid=recheck-env]")).await.unwrap();
    select.select_by_value("fastnum-0.4.0").await.unwrap();
    h.client.find(Locator::Css("[data-testid=recheck]")).await.unwrap().click().await.unwrap();
    h.until("the re-checks to finish", || async {
        let lines = h.client.find_all(Locator::Css("[data-testid=job-progress]")).await.unwrap_or_default();
        let mut texts = Vec::new();
        for l in &lines {
            texts.push(l.text().await.unwrap_or_default());
        }
        texts.len() >= 2 && texts.iter().all(|t| t.contains("done"))
    })
    .await;
    let beside = h.client.find(Locator::Css("[data-testid=report-actions] [data-testid=job-progress]")).await;
    assert!(beside.is_ok(), "the re-check's progress sits beside the Re-check button");

    // The refine loop's new attempt appears in place when its job ends, without a reload.
    let before = h.client.find_all(Locator::Css("[data-testid=attempt-row]")).await.unwrap().len();
    h.client.execute("window.__kept = true", vec![]).await.unwrap();
    let refine = h.client.find(Locator::Css("[data-testid=refine]")).await.unwrap();
    assert_eq!(refine.attr("disabled").await.unwrap(), None, "the softmax report is agent first with an oracle");
    refine.click().await.unwrap();
    h.until("the refine loop's attempt to appear in place", || async {
        h.client.find_all(Locator::Css("[data-testid=attempt-row]")).await.unwrap_or_default().len() > before
    })
    .await;
    let kept = h.client.execute("return window.__kept === true", vec![]).await.unwrap();
    assert_eq!(kept, serde_json::json!(true), "the page was not reloaded");
    let actions = h.text("report-actions").await;
    assert!(actions.contains("done") && actions.contains("Refine loop queued"), "{actions}");
    h.client.execute("window.scrollTo(0, 0)", vec![]).await.unwrap();
    h.screenshot("report-refine-live.png").await;
    let attempts: serde_json::Value = h.api(&format!("/api/v1/attempts?report_id={id}")).await;
    let rechecked = attempts["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["grade"]["recheck"]["outcome"] == "no_longer_reproduces")
        .count();
    assert!(rechecked >= 1, "{attempts}");

    // The triage queue's bulk rerun takes the view's reports, after a confirmation that counts them.
    h.client.goto(&format!("{}/queue?project=fastnum%2Ffastnum", h.base)).await.unwrap();
    h.client.wait().for_element(Locator::Css("[data-testid=queue-row]")).await.unwrap();
    let total: serde_json::Value = h.api("/api/v1/reports/table?project=fastnum%2Ffastnum").await;
    h.client.find(Locator::Css("[data-testid=bulk-scope]")).await.unwrap().select_by_value("view").await.unwrap();
    h.client.find(Locator::Css("[data-testid=bulk-action]")).await.unwrap().select_by_value("rerun").await.unwrap();
    h.client.find(Locator::Css("[data-testid=bulk-review]")).await.unwrap().click().await.unwrap();
    let summary = h.text("bulk-summary").await;
    assert_eq!(summary, format!("Rerun the failed attempts of {} reports?", total["total"]), "the count comes first");
    h.screenshot("queue-bulk-confirm.png").await;
    h.client.find(Locator::Css("[data-testid=bulk-confirm]")).await.unwrap().click().await.unwrap();
    let msg = h.text("bulk-result").await;
    assert!(
        msg.contains("rerun(s) queued") && !msg.contains(" 0 rerun(s)"),
        "fastnum has failed attempts to rerun: {msg}"
    );
    h.screenshot("queue-bulk-rerun.png").await;
    h.finish().await;
}

#[tokio::test]
async fn oracles_page_shows_the_apis_coverage() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 1300).await;
    h.client.goto(&format!("{}/oracles", h.base)).await.unwrap();
    let api: serde_json::Value = h.api("/api/v1/oracles").await;
    let rate = |v: &serde_json::Value| percent(v["rate"].as_f64());
    assert_eq!(h.text("oracle-coverage").await, rate(&api["coverage"]));
    assert_eq!(h.text("oracle-in-patch").await, rate(&api["in_patch"]));
    let rows = h.client.find_all(Locator::Css("[data-testid=oracle-kinds] tbody tr")).await.unwrap();
    assert_eq!(rows.len(), api["by_kind"].as_array().unwrap().len());
    for (el, k) in rows.iter().zip(api["by_kind"].as_array().unwrap()) {
        assert_eq!(el.attr("data-kind").await.unwrap().as_deref(), k["kind"].as_str());
        assert!(el.text().await.unwrap().contains(&thousands(k["reports"].as_i64().unwrap())));
    }
    let svg = h.svg("chart-oracle-kinds").await;
    assert!(svg.contains("Reports by oracle kind") && svg.contains("Oracle kind"), "a titled chart with labelled axes");
    // every table of the page downloads as CSV
    let link = h.client.find(Locator::Css("[data-testid=export-oracle-kinds]")).await.unwrap();
    let href = link.attr("href").await.unwrap().unwrap();
    let csv = h.http.get(format!("{}{href}", h.base)).send().await.unwrap().text().await.unwrap();
    assert_eq!(csv.lines().count(), api["by_kind"].as_array().unwrap().len() + 1, "{csv}");
    assert!(csv.starts_with("kind,reports"), "{csv}");
    assert_eq!(h.text("oracle-llm-precision").await, rate(&api["llm_precision"]));
    let sources = h.svg("chart-oracle-sources").await;
    assert!(sources.contains("in-patch reference 47.11%"), "the reference line is named in the legend");
    h.screenshot("oracles.png").await;
    // the project filter goes into the URL and the figures follow it
    let select = h.client.find(Locator::Css("[data-testid=filter-project]")).await.unwrap();
    select.select_by_value("fastnum/fastnum").await.unwrap();
    let fastnum: serde_json::Value = h.api("/api/v1/oracles?project=fastnum/fastnum").await;
    let want = rate(&fastnum["coverage"]);
    h.until("the fastnum figures", || async { h.text("oracle-coverage").await == want }).await;
    assert!(h.client.current_url().await.unwrap().as_str().contains("project=fastnum%2Ffastnum"));
    h.finish().await;
}

#[tokio::test]
async fn a_maintainer_accepts_a_lead_from_the_report_page() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 1100).await;
    h.sign_in("demo-maintainer").await;
    let leads: serde_json::Value = h.api("/api/v1/attempts?verdict=lead&project=jax-ml%2Fjax&limit=1").await;
    let report = leads["items"][0]["report_id"]
        .as_i64()
        .expect("the demo has an LLM lead in a project demo-maintainer maintains");
    let count = |v: &serde_json::Value, verdict: &str| {
        v["items"].as_array().unwrap().iter().filter(|a| a["verdict"] == verdict).count()
    };
    let before: serde_json::Value = h.api(&format!("/api/v1/attempts?report_id={report}&limit=200")).await;
    h.client.goto(&format!("{}/reports/{report}", h.base)).await.unwrap();
    h.client.wait().for_element(Locator::Css("[data-testid=review]")).await.unwrap().click().await.unwrap();
    // The reviewer is who signed in, not a field of the form.
    h.client
        .wait()
        .for_element(Locator::Css("[data-testid=review-comment]"))
        .await
        .unwrap()
        .send_keys("reran it by hand")
        .await
        .unwrap();
    assert!(
        h.client.find(Locator::Css("[data-testid=reviewer]")).await.is_err(),
        "no reviewer field to type a name into"
    );
    h.client.find(Locator::Css("[data-testid=accept]")).await.unwrap().click().await.unwrap();
    h.until("the review to show", || async {
        h.text("attempts").await.contains("reviewed by demo-maintainer: reran it by hand")
    })
    .await;
    let after: serde_json::Value = h.api(&format!("/api/v1/attempts?report_id={report}&limit=200")).await;
    assert_eq!(count(&after, "confirmed"), count(&before, "confirmed") + 1, "one more confirmation");
    assert!(count(&after, "lead") + 1 == count(&before, "lead") || count(&before, "lead") == 0);
    h.client.execute("document.querySelector('[data-testid=attempts]').scrollIntoView()", vec![]).await.unwrap();
    h.screenshot("report-review.png").await;
    h.finish().await;
}

/// A maintainer corrects a report's route from the report page: a missing
/// reason is refused, then the correction shows with who and why, and the
/// queue marks the report corrected. At 1280 and 390 px.
#[tokio::test]
async fn a_maintainer_corrects_a_route_from_the_report_page() {
    let _one = BROWSER.lock().await;
    for width in [1280, 390] {
        let h = start(width, 1100).await;
        h.sign_in("demo-maintainer").await;
        let list: serde_json::Value = h.api("/api/v1/reports?project=jax-ml%2Fjax&route=agent_first&limit=1").await;
        let report = list["items"][0]["id"].as_i64().expect("the demo has an agent_first report in jax-ml/jax");
        h.client.goto(&format!("{}/reports/{report}", h.base)).await.unwrap();
        // No reason, or only spaces: the browser says the reason is missing (the
        // server's own rule), sends nothing and keeps the choice.
        let select = h.client.wait().for_element(Locator::Css("[data-testid=route-choice]")).await.unwrap();
        select.select_by_value("human_first").await.unwrap();
        for typed in ["", "   "] {
            let reason = h.client.find(Locator::Css("[data-testid=route-reason]")).await.unwrap();
            reason.clear().await.unwrap();
            reason.send_keys(typed).await.unwrap();
            h.client.find(Locator::Css("[data-testid=set-route]")).await.unwrap().click().await.unwrap();
            let state = h
                .client
                .execute(
                    "const r = document.querySelector('[data-testid=route-reason]'); \
                     return [r.validity.valid, document.querySelector('[data-testid=route-choice]').value]",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(state, serde_json::json!([false, "human_first"]), "{typed:?}");
            let same: serde_json::Value = h.api(&format!("/api/v1/reports/{report}")).await;
            assert_eq!(same["route"], "agent_first");
        }
        h.client.find(Locator::Css("[data-testid=route-reason]")).await.unwrap().clear().await.unwrap();
        h.client
            .find(Locator::Css("[data-testid=route-reason]"))
            .await
            .unwrap()
            .send_keys("the failure is in the launcher's device setup")
            .await
            .unwrap();
        h.client.find(Locator::Css("[data-testid=set-route]")).await.unwrap().click().await.unwrap();
        h.until("the correction to show", || async { h.text("route-correction").await.contains("by demo-maintainer") })
            .await;
        let text = h.text("route-correction").await;
        assert!(text.contains("from agent first to human first") && text.contains("launcher's device setup"), "{text}");
        let after: serde_json::Value = h.api(&format!("/api/v1/reports/{report}")).await;
        assert_eq!((after["route"].as_str(), after["route_corrected"].as_bool()), (Some("human_first"), Some(true)));
        assert!(
            h.text("activity")
                .await
                .contains("route agent first → human first: the failure is in the launcher's device setup")
        );
        h.screenshot(&format!("report-route-{width}.png")).await;
        let overflow: bool = h
            .client
            .execute("return document.documentElement.scrollWidth > window.innerWidth", vec![])
            .await
            .unwrap()
            .as_bool()
            .unwrap();
        assert!(!overflow, "no sideways scroll at {width} px");
        h.finish().await;
    }
}

/// A maintainer's triage from the report page: a duplicate (refused without
/// the other report's number, then of it), an assignee, a comment; each in
/// the timeline and the API; reopened at the end.
#[tokio::test]
async fn a_maintainer_closes_a_duplicate_assigns_and_comments_from_the_report_page() {
    let _one = BROWSER.lock().await;
    for width in [1280, 390] {
        let h = start(width, 1100).await;
        h.sign_in("demo-maintainer").await;
        let list: serde_json::Value = h.api("/api/v1/reports?project=jax-ml%2Fjax&limit=2").await;
        let (a, b) = (list["items"][0]["id"].as_i64().expect("the demo has jax-ml/jax reports"), &list["items"][1]);
        let was = list["items"][0]["status"].as_str().unwrap().to_owned();
        let b_number = b["external_id"].as_str().unwrap().to_owned();
        h.client.goto(&format!("{}/reports/{a}", h.base)).await.unwrap();
        // jax-ml/jax has no buggy and fixed environment: nothing to run, and the page says why.
        let refine = h.client.wait().for_element(Locator::Css("[data-testid=refine]")).await.unwrap();
        h.until("the environments check", || async {
            refine.attr("disabled").await.unwrap().is_some()
                && h.text("actions-why").await.contains("no buggy and fixed environment")
        })
        .await;
        let rerun = h.client.find(Locator::Css("[data-testid=rerun-failed]")).await.unwrap();
        assert!(rerun.attr("disabled").await.unwrap().is_some());
        let choose = |value: &'static str| {
            let c = h.client.clone();
            async move {
                let select = c.wait().for_element(Locator::Css("[data-testid=status-choice]")).await.unwrap();
                select.select_by_value(value).await.unwrap();
            }
        };
        let click = |id: &'static str| {
            let c = h.client.clone();
            async move { c.find(Locator::Css(&format!("[data-testid={id}]"))).await.unwrap().click().await.unwrap() }
        };
        // A duplicate of nothing: refused, said on the page, nothing changed.
        choose("duplicate").await;
        click("set-status").await;
        h.until("the refusal to show", || async { h.text("lifecycle-error").await.contains("duplicates") }).await;
        let same: serde_json::Value = h.api(&format!("/api/v1/reports/{a}")).await;
        assert_eq!(same["status"], was.as_str());
        // Of the other report, by its upstream number.
        choose("duplicate").await;
        h.client.find(Locator::Css("[data-testid=duplicate-of]")).await.unwrap().send_keys(&b_number).await.unwrap();
        h.client
            .find(Locator::Css("[data-testid=status-reason]"))
            .await
            .unwrap()
            .send_keys("same traceback")
            .await
            .unwrap();
        click("set-status").await;
        h.until("the duplicate to show", || async { h.text("lifecycle-status").await == "duplicate" }).await;
        let activity = h.text("activity").await;
        let was_words = was.replace('_', " ");
        assert!(activity.contains(&format!("{was_words} → duplicate of #{b_number}: same traceback")), "{activity}");
        // Assigned and commented.
        h.client
            .find(Locator::Css("[data-testid=assignee]"))
            .await
            .unwrap()
            .send_keys("demo-maintainer")
            .await
            .unwrap();
        click("assign").await;
        h.until("the assignee to show", || async { h.text("lifecycle-assignee").await == "demo-maintainer" }).await;
        h.client
            .wait()
            .for_element(Locator::Css("[data-testid=comment]"))
            .await
            .unwrap()
            .send_keys("Seen on jax 0.4.30 too.")
            .await
            .unwrap();
        click("post-comment").await;
        h.until("the comment to show", || async { h.text("activity").await.contains("Seen on jax 0.4.30 too.") }).await;
        let after: serde_json::Value = h.api(&format!("/api/v1/reports/{a}")).await;
        assert_eq!(
            (after["status"].as_str(), after["assignee"].as_str()),
            (Some("duplicate"), Some("demo-maintainer"))
        );
        let vias: Vec<&str> =
            after["activity"].as_array().unwrap().iter().skip(1).map(|x| x["via"].as_str().unwrap()).collect();
        assert!(vias.iter().all(|v| *v == "ui"), "changes from the page say so: {vias:?}");
        h.screenshot(&format!("report-lifecycle-{width}.png")).await;
        let overflow: bool = h
            .client
            .execute("return document.documentElement.scrollWidth > window.innerWidth", vec![])
            .await
            .unwrap()
            .as_bool()
            .unwrap();
        assert!(!overflow, "no sideways scroll at {width} px");
        // Reopened, for the next width.
        choose("reopen").await;
        click("set-status").await;
        h.until("the reopening to show", || async { h.text("lifecycle-status").await == was.replace('_', " ") }).await;
        h.client.wait().for_element(Locator::Css("[data-testid=assignee]")).await.unwrap().clear().await.unwrap();
        click("assign").await;
        h.until("the unassigning to show", || async { h.text("lifecycle-assignee").await == "nobody" }).await;
        h.finish().await;
    }
}

/// The maintainer's set-up without curl: a project created from the
/// Set-up page, its buggy environment written and built by a runner (the
/// log on the page), and a file imported from the browser with its
/// rejection listed; wrong input named on the page.
#[tokio::test]
async fn an_admin_sets_a_project_up_builds_its_environment_and_imports_a_file() {
    let _one = BROWSER.lock().await;
    for width in [1280, 390] {
        let h = start_with(width, 1400, 1).await;
        h.sign_in("demo-admin").await;
        let slug = format!("acme/fastnum-{width}");
        let fill = |testid: &'static str, name: &'static str, value: String| {
            let c = h.client.clone();
            async move {
                let css = format!("[data-testid={testid}] [name={name}]");
                let el = c.wait().for_element(Locator::Css(&css)).await.unwrap();
                el.clear().await.unwrap();
                el.send_keys(&value).await.unwrap();
            }
        };
        let click = |testid: &'static str| {
            let c = h.client.clone();
            async move {
                c.wait()
                    .for_element(Locator::Css(&format!("[data-testid={testid}]")))
                    .await
                    .unwrap()
                    .click()
                    .await
                    .unwrap()
            }
        };
        // From the dashboard's header to the Set-up page.
        click("setup-link").await;
        fill("new-project", "slug", slug.clone()).await;
        fill("new-project", "upstream_url", "not a url".into()).await;
        h.client.execute("document.querySelector('[name=upstream_url]').type = 'text'", vec![]).await.unwrap();
        click("create-project").await;
        assert!(h.text("setup-error").await.contains("upstream_url"), "a wrong address is named");
        fill("new-project", "upstream_url", "https://github.com/acme/fastnum".into()).await;
        click("create-project").await;
        assert_eq!(h.text("setup-notice").await, "Project created.");
        assert!(h.text("setup-missing").await.contains("lacks both"));
        // The buggy environment: a variable line without `=` is refused, as typed.
        fill("new-environment", "name", "fastnum-buggy".into()).await;
        h.client
            .find(Locator::Css("[data-testid=new-environment] [name=source]"))
            .await
            .unwrap()
            .select_by_value("none")
            .await
            .unwrap();
        fill("new-environment", "setup", "echo built-in-the-browser".into()).await;
        fill("new-environment", "variables", "NOEQUALS".into()).await;
        click("save-environment").await;
        assert!(h.text("setup-error").await.contains("variables: line 1 `NOEQUALS` is not NAME=value"));
        fill("new-environment", "variables", "MODE=strict".into()).await;
        click("save-environment").await;
        assert!(h.text("setup-notice").await.contains("Environment `fastnum-buggy` created"));
        click("build-now").await;
        // The page before this one had a notice too: wait for the new page's.
        h.until("the build to be queued", || async { h.text("setup-notice").await.contains("queued as job") }).await;
        // The page reloads until a runner has built it.
        let started = Instant::now();
        loop {
            let status = h.text("build-status").await;
            if status.starts_with("built") {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(120), "the build never ended: {status}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let log =
            h.client.find(Locator::Css("[data-testid=build-log]")).await.unwrap().prop("textContent").await.unwrap();
        assert!(log.unwrap_or_default().contains("built-in-the-browser"));
        h.client
            .execute("document.querySelectorAll('details.build-log').forEach(d => d.open = true)", vec![])
            .await
            .unwrap();
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the set-up page does not scroll sideways at {width} px");
        h.screenshot(&format!("setup-project-{width}.png")).await;
        // An import from the browser: two reports stored, one bad line listed.
        click("import-link").await;
        let file = tempfile::NamedTempFile::new().unwrap();
        let record = |n: u32| serde_json::json!({"kind": "report", "project": slug, "external_id": n.to_string(), "title": format!("softmax {n} overflows")});
        std::fs::write(file.path(), format!("{}\n{}\n{{\"kind\": \"report\"}}\n", record(1), record(2))).unwrap();
        h.client
            .find(Locator::Css("[data-testid=import-form] [name=format]"))
            .await
            .unwrap()
            .select_by_value("ndjson")
            .await
            .unwrap();
        h.client
            .find(Locator::Css("input[name=file]"))
            .await
            .unwrap()
            .send_keys(&file.path().to_string_lossy())
            .await
            .unwrap();
        click("import-submit").await;
        assert_eq!(h.text("import-created").await, "2");
        assert_eq!(h.text("import-rejected").await, "1");
        assert!(h.text("import-rejections").await.contains("project"), "the rejection names the field");
        let reports: serde_json::Value = h.api(&format!("/api/v1/reports?project={}", slug.replace('/', "%2F"))).await;
        assert_eq!(reports["items"].as_array().unwrap().len(), 2);
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the import page does not scroll sideways at {width} px");
        h.screenshot(&format!("setup-import-{width}.png")).await;
        h.finish().await;
    }
}

/// The team lead's morning: this month's answer on the Overview, the stuck
/// list behind it, an export of that list, and the month's spend on Cost &
/// time; at 1280 and 390 px.
#[tokio::test]
async fn a_team_lead_reads_the_month_finds_the_stuck_reports_and_exports_them() {
    let _one = BROWSER.lock().await;
    for (width, suffix) in [(1280, ""), (390, "-390")] {
        let h = start(width, 1000).await;
        // Time passes: two open reports have seen nothing for three weeks.
        let open: Page<ReportSummary> = h.api("/api/v1/reports?status=new&sort=filed_at&order=asc&limit=2").await;
        assert_eq!(open.items.len(), 2);
        let aged: Vec<String> = open.items.iter().map(|r| r.id.to_string()).collect();
        let db = sqlx::SqlitePool::connect_with(
            sqlx::sqlite::SqliteConnectOptions::new().filename(h._data.path().join("failpass.db")),
        )
        .await
        .unwrap();
        for r in &open.items {
            sqlx::query("UPDATE reports SET last_activity_at = $1 WHERE id = $2")
                .bind(chrono::Utc::now() - chrono::Duration::days(21))
                .bind(r.id)
                .execute(&db)
                .await
                .unwrap();
        }

        // The month in one look, the same as the API's.
        h.client.goto(&format!("{}/?period=this_month", h.base)).await.unwrap();
        let g: serde_json::Value = h.api("/api/v1/glance?period=this_month").await;
        assert_eq!(h.text("glance-reproduced").await, g["reproduced"].to_string());
        assert_eq!(h.text("glance-spend").await, usd(g["spend_usd"].as_f64()));
        assert_eq!(h.text("glance-stuck").await, "2");
        assert!(h.text("glance").await.contains("This month: "), "the period is named");
        // the weekly throughput downloads from there, under the page's filters
        let href = h
            .client
            .find(Locator::Css("[data-testid=export-throughput]"))
            .await
            .unwrap()
            .attr("href")
            .await
            .unwrap()
            .unwrap();
        let weeks = h.http.get(format!("{}{href}", h.base)).send().await.unwrap().text().await.unwrap();
        let flow: Throughput = h.api("/api/v1/throughput?period=this_month").await;
        assert_eq!(weeks.lines().count(), flow.weeks.len() + 1, "{weeks}");
        // the period select says which period the page shows
        let period = h.client.find(Locator::Css("[data-testid=filter-period]")).await.unwrap();
        assert_eq!(period.prop("value").await.unwrap().as_deref(), Some("this_month"));
        h.screenshot(&format!("lead-glance{suffix}.png")).await;

        // The stuck count leads to the stuck reports, oldest activity first.
        h.client.find(Locator::Css("[data-testid=glance-stuck-link]")).await.unwrap().click().await.unwrap();
        h.until("the stuck list", || async { h.text("queue-count").await.contains("no activity for 14 days") }).await;
        assert!(h.text("stuck-filter").await.contains("no activity for 14 days"), "the hidden filter is shown");
        let url = h.client.current_url().await.unwrap();
        assert!(url.as_str().contains("stuck_days=14") && url.as_str().contains("sort=last_activity"), "{url}");
        let ids: Vec<String> = h.rows().await.into_iter().map(|(id, _)| id).collect();
        let (mut want, mut got) = (aged.clone(), ids.clone());
        want.sort();
        got.sort();
        assert_eq!(got, want, "exactly the reports nothing happened to");
        // at phone width the priority columns show (each report a card), and "Every column" opens the rest
        let shown = |css: &'static str| {
            let c = h.client.clone();
            async move {
                c.execute(
                    "return getComputedStyle(document.querySelector(arguments[0])).display !== 'none'",
                    vec![css.into()],
                )
                .await
                .unwrap()
                    == serde_json::Value::Bool(true)
            }
        };
        let (labels, wide) = ("[data-testid=queue-table] td.opt:not(.wide)", "[data-testid=queue-table] td.wide");
        assert_eq!(shown(labels).await, width > 700, "a secondary column at {width} px");
        // below a wide screen the labels and upstream columns wait behind "Every column"
        assert!(!shown(wide).await, "the widest columns wait at {width} px");
        h.client.find(Locator::Css(".all-columns summary")).await.unwrap().click().await.unwrap();
        assert!(shown(labels).await && shown(wide).await, "opened, every column shows");
        h.screenshot(&format!("lead-stuck{suffix}.png")).await;

        // Its export holds the same reports, with the view's filters.
        let csv = h.client.find(Locator::Css("[data-testid=export-csv]")).await.unwrap();
        let href = csv.attr("href").await.unwrap().unwrap();
        assert!(href.contains("stuck_days=14"), "{href}");
        let body = h.http.get(format!("{}{href}", h.base)).send().await.unwrap().text().await.unwrap();
        assert_eq!(body.lines().count(), 3, "a header and the two stuck reports: {body}");

        // The month's spend on Cost & time, by when it was spent.
        h.client.goto(&format!("{}/cost?period=this_month&dated=spent", h.base)).await.unwrap();
        let spent: FiguresResponse = h.api("/api/v1/figures?period=this_month&dated=spent").await;
        assert_eq!(
            spent.rows[0].cost_total_usd,
            g["spend_usd"].as_f64().unwrap(),
            "the glance's spend is the figures'"
        );
        let headline = h.text("cost-headline").await;
        assert!(headline.contains(&usd(Some(spent.rows[0].cost_total_usd))), "{headline}");
        assert!(h.svg("chart-spend-month").await.contains("Spend per month"));
        h.screenshot(&format!("lead-cost{suffix}.png")).await;
        // and the page's figure table as a download, with the page's filters
        let link = h.client.wait().for_element(Locator::Css("[data-testid=export-figures-csv]")).await.unwrap();
        let href = link.attr("href").await.unwrap().unwrap();
        assert!(href.contains("period=this_month") && href.contains("dated=spent") && href.contains("group_by=agent"));
        let table = h.http.get(format!("{}{href}", h.base)).send().await.unwrap().text().await.unwrap();
        let agents: FiguresResponse = h.api("/api/v1/figures?period=this_month&dated=spent&group_by=agent").await;
        assert_eq!(table.lines().count(), agents.rows.len() + 1, "{table}");
        assert!(table.starts_with("key,"), "{table}");
        h.finish().await;
    }
}

/// The maintainer's morning end to end on the demo, in one session: a
/// release environment set up and built (an admin's part), three reports
/// triaged from the queue (a route corrected, one assigned, one closed as a
/// duplicate of another), an oracle written and validated for a hypothesis
/// report, a lead accepted, and a rerun followed live beside its button.
#[tokio::test]
async fn a_maintainer_walks_the_morning_end_to_end() {
    async fn click(c: &Client, css: &str) {
        let el = c.wait().for_element(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}"));
        el.click().await.unwrap_or_else(|e| panic!("clicking {css}: {e}"));
    }
    async fn type_into(c: &Client, css: &str, text: &str) {
        let el = c.wait().for_element(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}"));
        el.clear().await.unwrap();
        el.send_keys(text).await.unwrap();
    }
    async fn choose(c: &Client, css: &str, value: &str) {
        c.wait().for_element(Locator::Css(css)).await.unwrap().select_by_value(value).await.unwrap();
    }
    let _one = BROWSER.lock().await;
    for (width, suffix) in [(1280, ""), (390, "-390")] {
        let h = start_with(width, 1200, 1).await;
        let c = h.client.clone();

        // 1. Set-up: a release environment for fastnum, written and built from the browser.
        h.sign_in("demo-admin").await;
        c.goto(&format!("{}/settings/projects/fastnum/fastnum", h.base)).await.unwrap();
        type_into(&c, "[data-testid=new-environment] [name=name]", "fastnum-0.4.1").await;
        choose(&c, "[data-testid=new-environment] [name=role]", "release").await;
        choose(&c, "[data-testid=new-environment] [name=source]", "none").await;
        type_into(&c, "[data-testid=new-environment] [name=setup]", "echo release-ready").await;
        type_into(&c, "[data-testid=new-environment] [name=version]", "0.4.1").await;
        click(&c, "[data-testid=new-environment] [data-testid=save-environment]").await;
        assert!(h.text("setup-notice").await.contains("Environment `fastnum-0.4.1` created"));
        let envs = c
            .execute("return fetch('/api/v1/environments?project=fastnum%2Ffastnum').then(r => r.json())", vec![])
            .await
            .unwrap();
        let env = envs.as_array().unwrap().iter().find(|e| e["name"] == "fastnum-0.4.1").expect("the new environment");
        let build = format!("form[action$='/environments/{}/build'] [data-testid=build-now]", env["id"]);
        click(&c, &build).await;
        // The page reloads while a runner builds it; the API says when it has.
        let status = format!("return fetch('/api/v1/environments/{}/build').then(r => r.json())", env["id"]);
        let started = Instant::now();
        loop {
            let b = c.execute(&status, vec![]).await.unwrap();
            if b["status"] == "built" || b["status"] == "cached" {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(120), "the build never ended: {b}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        c.refresh().await.unwrap();
        h.screenshot(&format!("morning-1-setup{suffix}.png")).await;

        // 2. Triage three of jax's reports from the queue, as the maintainer.
        c.goto(&format!("{}/", h.base)).await.unwrap();
        click(&c, ".account button").await;
        h.text("sign-in").await;
        h.sign_in("demo-maintainer").await;
        let new: Page<ReportSummary> =
            h.api("/api/v1/reports?project=jax-ml%2Fjax&sort=filed_at&order=asc&limit=3").await;
        let [first, second, third] = &new.items[..] else { panic!("the demo has three jax-ml/jax reports") };
        let open = |id: i64| {
            let c = c.clone();
            let base = h.base.clone();
            async move {
                c.goto(&format!("{base}/queue?project=jax-ml%2Fjax&sort=filed_at&order=asc")).await.unwrap();
                click(&c, &format!("[data-testid=queue-row][data-id='{id}'] a")).await;
                c.wait().for_element(Locator::Css("[data-testid=lifecycle-panel] form")).await.unwrap();
            }
        };
        // a route corrected, with the reason
        open(first.id).await;
        let target = if first.route.as_str() == "human_first" { "agent_first" } else { "human_first" };
        choose(&c, "[data-testid=route-choice]", target).await;
        type_into(&c, "[data-testid=route-reason]", "the traceback is in the launcher").await;
        click(&c, "[data-testid=set-route]").await;
        h.until("the correction", || async { h.text("route-correction").await.contains("by demo-maintainer") }).await;
        // one assigned
        open(second.id).await;
        type_into(&c, "[data-testid=assignee]", "demo-maintainer").await;
        click(&c, "[data-testid=assign]").await;
        h.until("the assignee", || async { h.text("lifecycle-assignee").await == "demo-maintainer" }).await;
        // one closed as a duplicate of the second, by its upstream number
        open(third.id).await;
        choose(&c, "[data-testid=status-choice]", "duplicate").await;
        type_into(&c, "[data-testid=duplicate-of]", &second.external_id).await;
        click(&c, "[data-testid=set-status]").await;
        h.until("the duplicate", || async { h.text("lifecycle-status").await == "duplicate" }).await;
        h.screenshot(&format!("morning-2-triage{suffix}.png")).await;
        for (id, field, want) in
            [(first.id, "route", target), (second.id, "assignee", "demo-maintainer"), (third.id, "status", "duplicate")]
        {
            let r: serde_json::Value = h.api(&format!("/api/v1/reports/{id}")).await;
            assert_eq!(r[field], want, "report {id}");
        }

        // 3. An oracle for a hypothesis report, validated by a runner; the report is routed again.
        let hyp: Page<ReportSummary> = h.api("/api/v1/reports?project=fastnum%2Ffastnum&route=hypothesis").await;
        let id = hyp.items[0].id;
        c.goto(&format!("{}/reports/{id}", h.base)).await.unwrap();
        click(&c, "[data-testid=write-oracle] a").await;
        type_into(
            &c,
            "[data-testid=oracle-script]",
            "import fastnum\n\nm = fastnum.mean([[1, 2, 3], [4, 5, 6]], axis=0)\nassert m == [2.5, 3.5, 4.5], m\n",
        )
        .await;
        click(&c, "[data-testid=oracle-validate]").await;
        let started = Instant::now();
        while c.find(Locator::Css("[data-testid=oracle-validating]")).await.is_ok() {
            assert!(started.elapsed() < Duration::from_secs(120), "the validation never ended");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert_eq!(h.text("oracle-route").await, "agent first");
        h.screenshot(&format!("morning-3-oracle{suffix}.png")).await;

        // 4. A lead accepted.
        let leads: serde_json::Value = h.api("/api/v1/attempts?verdict=lead&project=jax-ml%2Fjax&limit=1").await;
        let lead_report = leads["items"][0]["report_id"].as_i64().expect("the demo has a lead in jax-ml/jax");
        c.goto(&format!("{}/reports/{lead_report}", h.base)).await.unwrap();
        click(&c, "[data-testid=review]").await;
        type_into(&c, "[data-testid=review-comment]", "reproduced it by hand").await;
        click(&c, "[data-testid=accept]").await;
        h.until("the acceptance", || async { h.text("attempts").await.contains("reviewed by demo-maintainer") }).await;
        h.screenshot(&format!("morning-4-lead{suffix}.png")).await;
        // the report's attempts download from its page
        let href =
            c.find(Locator::Css("[data-testid=attempt-exports] a")).await.unwrap().attr("href").await.unwrap().unwrap();
        let csv = h.http.get(format!("{}{href}", h.base)).send().await.unwrap().text().await.unwrap();
        let listed: serde_json::Value = h.api(&format!("/api/v1/attempts?report_id={lead_report}&limit=200")).await;
        assert_eq!(csv.lines().count(), listed["items"].as_array().unwrap().len() + 1, "{csv}");

        // 5. A rerun, followed live under the row that started it.
        let softmax: Page<ReportSummary> = h.api("/api/v1/reports?project=fastnum%2Ffastnum&q=softmax").await;
        c.goto(&format!("{}/reports/{}", h.base, softmax.items[0].id)).await.unwrap();
        click(&c, "[data-testid=rerun]").await;
        h.until("the rerun to finish", || async {
            let line = c.find(Locator::Css("[data-testid=attempts] [data-testid=job-progress]")).await;
            match line {
                Ok(l) => l.text().await.unwrap_or_default().contains("done"),
                Err(_) => false,
            }
        })
        .await;
        h.client
            .execute("document.querySelector('[data-testid=attempts] .jobs-live').scrollIntoView()", vec![])
            .await
            .unwrap();
        h.screenshot(&format!("morning-5-rerun{suffix}.png")).await;
        h.finish().await;
    }
}

/// The maintainer writes an oracle for a hypothesis report from its page:
/// a weak test is run and refused (it passes on buggy too), the real one is
/// validated by a runner on the demo's buggy and fixed fastnum, and the
/// report is routed again (agent first), with the measured minutes shown.
#[tokio::test]
async fn a_maintainer_writes_and_validates_an_oracle_for_a_hypothesis_report() {
    let _one = BROWSER.lock().await;
    for width in [1280, 390] {
        let h = start_with(width, 1400, 1).await;
        h.sign_in("demo-maintainer").await;
        let list: serde_json::Value = h.api("/api/v1/reports?project=fastnum%2Ffastnum&route=hypothesis").await;
        let id = list["items"][0]["id"].as_i64().expect("the demo has a hypothesis report in fastnum");
        h.client.goto(&format!("{}/reports/{id}", h.base)).await.unwrap();
        h.client.wait().for_element(Locator::Css("[data-testid=write-oracle] a")).await.unwrap().click().await.unwrap();
        // The form is there at once, beside the report's text; the first try starts the clock.
        assert!(!h.text("oracle-report").await.trim().is_empty(), "the report in view");
        assert!(h.client.find(Locator::Css("[data-testid=oracle-clock]")).await.is_err(), "no draft until a try");
        let validate = |script: &'static str| {
            let c = h.client.clone();
            async move {
                let area = c.wait().for_element(Locator::Css("[data-testid=oracle-script]")).await.unwrap();
                area.clear().await.unwrap();
                area.send_keys(script).await.unwrap();
                c.find(Locator::Css("[data-testid=oracle-validate]")).await.unwrap().click().await.unwrap();
            }
        };
        let settled = |h: &Harness| {
            let c = h.client.clone();
            async move {
                let started = Instant::now();
                // The page reloads every 5 s while a runner validates.
                while c.find(Locator::Css("[data-testid=oracle-validating]")).await.is_ok() {
                    assert!(started.elapsed() < Duration::from_secs(120), "the validation never ended");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        };
        // A test that passes on buggy as well is run, and not stored.
        validate("import fastnum\nprint(fastnum.mean([[1, 2, 3], [4, 5, 6]], axis=0))\n").await;
        settled(&h).await;
        assert!(h.text("oracle-result").await.contains("Last validation: not reproduced"));
        assert_eq!(h.text("oracle-tries").await, "1");
        assert!(h.text("oracle-clock").await.ends_with("(running)"));
        // The real one: 0.3.0 averages over the wrong axis.
        validate(
            "import fastnum\n\nm = fastnum.mean([[1, 2, 3], [4, 5, 6]], axis=0)\nassert m == [2.5, 3.5, 4.5], m\n",
        )
        .await;
        settled(&h).await;
        assert_eq!(h.text("oracle-route").await, "agent first");
        let report: serde_json::Value = h.api(&format!("/api/v1/reports/{id}")).await;
        assert_eq!(
            (report["route"].as_str(), report["oracle"]["source"].as_str()),
            (Some("agent_first"), Some("authored"))
        );
        assert!(report["oracle"]["authoring_minutes"].as_f64().unwrap() > 0.0);
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the oracle page does not scroll sideways at {width} px");
        h.screenshot(&format!("oracle-validated-{width}.png")).await;
        // The Oracles page answers "within an hour?" from this history.
        h.client.goto(&format!("{}/oracles?project=fastnum%2Ffastnum", h.base)).await.unwrap();
        assert!(h.text("within-hour").await.starts_with("1 of 1"));
        h.screenshot(&format!("oracles-authoring-{width}.png")).await;
        h.finish().await;
    }
}

/// Each user is offered only what they may use: anonymous visitors and
/// viewers see no rerun or review buttons; a maintainer does, and makes an
/// API token on the tokens page, shown once.
#[tokio::test]
async fn only_what_a_user_may_use_is_offered_and_a_token_is_shown_once() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 1100).await;
    let page: Page<ReportSummary> = h.api("/api/v1/reports?project=fastnum/fastnum&q=softmax").await;
    let report = format!("{}/reports/{}", h.base, page.items[0].id);
    let buttons = |css: &'static str| {
        let c = h.client.clone();
        async move { c.find_all(Locator::Css(css)).await.unwrap_or_default().len() }
    };
    // Anonymous: the public report, no buttons, a way to sign in.
    h.client.goto(&report).await.unwrap();
    h.text("attempts").await;
    h.text("sign-in").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        buttons("[data-testid=rerun]").await + buttons("[data-testid=report-actions]").await,
        0,
        "nothing to rerun for a visitor"
    );
    h.screenshot("report-anonymous.png").await;
    // A viewer of the private project: reads it, may not rerun anything.
    h.sign_in("demo-viewer").await;
    let private =
        h.http.get(format!("{}/api/v1/reports?project=acme%2Ftrainer-internal", h.base)).send().await.unwrap();
    assert_eq!(private.status(), 404, "anonymous API callers do not see the private project: it is not found");
    h.client.goto(&report).await.unwrap();
    h.text("attempts").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(buttons("[data-testid=rerun]").await, 0, "a viewer elsewhere may not rerun fastnum's attempts");
    assert_eq!(buttons("[data-testid=status-form]").await, 0, "nor change its status");
    assert!(h.text("activity").await.contains("taken in"), "but reads its activity");
    h.client.goto(&format!("{}/queue?project=acme%2Ftrainer-internal", h.base)).await.unwrap();
    h.client
        .wait()
        .for_element(Locator::Css("[data-testid=queue-row]"))
        .await
        .expect("the viewer sees the private project's reports");
    assert_eq!(buttons("[data-testid=bulk-form]").await, 0);
    // Signing out forgets it.
    h.client.find(Locator::Css(".account button")).await.unwrap().click().await.unwrap();
    h.text("sign-in").await;
    h.client.goto(&format!("{}/queue?project=acme%2Ftrainer-internal", h.base)).await.unwrap();
    // As for a project that does not exist: not found, said as an error (never an empty list).
    assert!(
        h.text("error").await.contains("project `acme/trainer-internal` not found"),
        "the private project's reports are gone after signing out"
    );
    // A maintainer of fastnum: rerun buttons, the bulk rerun, and tokens.
    h.sign_in("demo-maintainer").await;
    h.client.goto(&report).await.unwrap();
    h.client
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("[data-testid=rerun]"))
        .await
        .expect("a maintainer may rerun");
    h.client.wait().for_element(Locator::Css("[data-testid=report-actions]")).await.unwrap();
    h.screenshot("report-maintainer.png").await;
    // The header's Set-up leads to the server's pages, whose header has Tokens.
    h.client.find(Locator::LinkText("Set-up")).await.unwrap().click().await.unwrap();
    h.client.wait().for_element(Locator::LinkText("Tokens")).await.unwrap().click().await.unwrap();
    h.client.wait().for_element(Locator::Css("[data-testid=create-token]")).await.unwrap();
    h.client.find(Locator::Css("select[name=scope]")).await.unwrap().select_by_value("agent").await.unwrap();
    h.client.find(Locator::Css("input[name=name]")).await.unwrap().send_keys("nightly agent").await.unwrap();
    h.client.find(Locator::Css("[data-testid=create-token]")).await.unwrap().click().await.unwrap();
    let token = h.text("new-token").await;
    assert!(token.starts_with("fp_") && token.len() == 67, "{token}");
    h.screenshot("tokens-created.png").await;
    // It works for its project, and is never shown again.
    let agent = reqwest::Client::new();
    let me: serde_json::Value =
        agent.get(format!("{}/api/v1/session", h.base)).bearer_auth(&token).send().await.unwrap().json().await.unwrap();
    assert_eq!(me["token"]["scope"], "agent");
    h.client.goto(&format!("{}/settings/tokens", h.base)).await.unwrap();
    let listed = h.text("tokens").await;
    assert!(listed.contains(&token[..11]) && !listed.contains(&token), "{listed}");
    assert!(h.client.find(Locator::Css("[data-testid=new-token]")).await.is_err());
    // Revoking asks first: unticked, the click does nothing.
    h.client.find(Locator::Css("[data-testid=revoke]")).await.unwrap().click().await.unwrap();
    assert!(!h.text("tokens").await.contains("revoked"), "revoked without the box ticked");
    h.client.find(Locator::Css("[data-testid=confirm-revoke]")).await.unwrap().click().await.unwrap();
    h.client.find(Locator::Css("[data-testid=revoke]")).await.unwrap().click().await.unwrap();
    h.until("the token to be revoked", || async { h.text("tokens").await.contains("revoked") }).await;
    let r = agent.get(format!("{}/api/v1/session", h.base)).bearer_auth(&token).send().await.unwrap();
    assert_eq!(r.status(), 401);
    h.finish().await;
}

/// The sign-in and token pages on a phone: readable, no sideways scrolling.
#[tokio::test]
async fn account_pages_at_390_px() {
    let _one = BROWSER.lock().await;
    let h = start(390, 844).await;
    h.client.goto(&format!("{}/signin", h.base)).await.unwrap();
    h.client.wait().for_element(Locator::Css("input[name=password]")).await.unwrap();
    assert!(h.sideways().await <= 0);
    // A wrong password is named on the page, the name kept.
    h.client.find(Locator::Css("input[name=name]")).await.unwrap().send_keys("demo-admin").await.unwrap();
    h.client.find(Locator::Css("input[name=password]")).await.unwrap().send_keys("not the password").await.unwrap();
    h.client.find(Locator::Css("[data-testid=signin-submit]")).await.unwrap().click().await.unwrap();
    assert!(h.text("signin-error").await.contains("wrong name or password"));
    h.screenshot("signin-390.png").await;
    h.sign_in("demo-admin").await;
    h.client.goto(&format!("{}/settings/tokens", h.base)).await.unwrap();
    h.client.wait().for_element(Locator::Css("[data-testid=create-token]")).await.unwrap();
    assert!(h.sideways().await <= 0, "the tokens page does not scroll sideways (its table scrolls inside its frame)");
    h.screenshot("tokens-390.png").await;
    h.client.goto(&format!("{}/", h.base)).await.unwrap();
    h.text("signed-in-as").await;
    assert!(h.sideways().await <= 0, "the header with the account fits");
    h.screenshot("overview-signed-in-390.png").await;
    h.finish().await;
}

/// Hooks may post to this machine's loopback (`--hook-allow-network 127.0.0.0/8`).
fn loopback_hooks() -> failpass::hooks::HookNetworks {
    failpass::hooks::HookNetworks::parse(&["127.0.0.0/8"]).unwrap()
}

/// A receiver for one test: answers 200 to each post, after reading it whole.
fn receiver() -> u16 {
    use std::io::{Read, Write};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut got = Vec::new();
            let mut buf = [0u8; 8192];
            while let Ok(n) = stream.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&got);
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
                        })
                        .and_then(|v| v.parse::<usize>().ok())
                        .unwrap_or(0);
                    if got.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 8\r\nconnection: close\r\n\r\nthank ye");
        }
    });
    port
}

/// The webhooks page as an admin uses it: a wrong address named, a hook
/// added (its secret shown once), a change delivered by the queue's
/// executor to a local receiver, the hook's log with the receiver's answer;
/// at 1280 and at 390 px without sideways scrolling.
#[tokio::test]
async fn webhooks_page_adds_a_hook_and_shows_its_deliveries() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 900).await;
    h.sign_in("demo-admin").await;
    h.client.goto(&format!("{}/settings/projects", h.base)).await.unwrap();
    h.client.wait().for_element(Locator::LinkText("Webhooks")).await.unwrap().click().await.unwrap();
    h.client.wait().for_element(Locator::Css("[data-testid=create-hook]")).await.unwrap();
    let fill = |url: String| {
        let c = h.client.clone();
        async move {
            c.find(Locator::Css("select[name=project]"))
                .await
                .unwrap()
                .select_by_value("fastnum/fastnum")
                .await
                .unwrap();
            let field = c.find(Locator::Css("input[name=url]")).await.unwrap();
            field.clear().await.unwrap();
            field.send_keys(&url).await.unwrap();
            c.find(Locator::Css("select[name=format]")).await.unwrap().select_by_value("signed").await.unwrap();
            c.find(Locator::Css("[data-testid=create-hook]")).await.unwrap().click().await.unwrap();
        }
    };
    fill("ftp://example.org/hook".into()).await;
    assert!(h.text("hook-error").await.contains("`ftp` is not http or https"));
    // A private network the operator did not allow (only the loopback is, here) is refused, naming the flag.
    fill("http://10.0.0.1/hook".into()).await;
    // The page before (the `ftp` refusal) has a `hook-error` too: wait for the new one.
    h.until("the private-network refusal", || async { h.text("hook-error").await.contains("--hook-allow-network") })
        .await;
    // The form keeps what was sent, to be corrected rather than typed again.
    let kept = |css: &'static str| {
        let c = h.client.clone();
        async move { c.find(Locator::Css(css)).await.unwrap().prop("value").await.unwrap().unwrap_or_default() }
    };
    assert_eq!(kept("input[name=url]").await, "http://10.0.0.1/hook");
    assert_eq!(kept("select[name=project]").await, "fastnum/fastnum");
    h.screenshot("hooks-private-refused.png").await;
    let port = receiver();
    fill(format!("http://127.0.0.1:{port}/failpass")).await;
    let secret = h.text("new-secret").await;
    assert!(secret.starts_with("whsec_") && secret.len() == 70, "{secret}");
    h.screenshot("hooks-created.png").await;

    // A report of the project closes; the queue's deliver job posts it.
    let report = h.storage.find_report("fastnum/fastnum", "101").await.unwrap().expect("the demo's report #101");
    let change = failpass::db::hooks::Change {
        event: failpass_shared::api::hooks::HookEvent::Status,
        report_id: report,
        attempt_id: None,
        from: Some("reproduced".into()),
        to: "closed".into(),
    };
    h.storage.tell(&[change]).await.unwrap();
    let now = chrono::Utc::now();
    let job = h.storage.claim("e2e", now, chrono::Duration::seconds(60)).await.unwrap().expect("the deliver job");
    assert!(job.payload.delivery_id.is_some(), "deliveries go before verifications: {job:?}");
    failpass::runner::deliver::Deliver::new(h.storage.clone(), std::sync::Arc::new(loopback_hooks()))
        .execute(&job)
        .await
        .unwrap();
    h.storage.complete(job.id, "e2e", chrono::Utc::now(), None).await.unwrap();

    h.client.goto(&format!("{}/settings/hooks", h.base)).await.unwrap();
    assert!(h.text("hooks").await.contains("1 delivered, 0 pending, 0 failed"));
    assert!(!h.text("hooks").await.contains(&secret), "the secret is shown once");
    h.client
        .find(Locator::Css("[data-testid=hooks] a[href^=\"/settings/hooks/\"]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    assert_eq!(h.text("delivery-state").await, "delivered");
    assert_eq!(h.text("status-code").await, "200");
    h.screenshot("hook-log.png").await;
    h.client.find(Locator::Css("[data-testid=redeliver]")).await.unwrap().click().await.unwrap();
    h.until("the redelivery to be listed", || async {
        h.client.find_all(Locator::Css("[data-testid=delivery-state]")).await.map(|v| v.len()).unwrap_or(0) == 2
    })
    .await;
    // The newest (first) is still being sent (no worker runs here): sent again, it is refused on the page.
    h.client.find(Locator::Css("[data-testid=redeliver]")).await.unwrap().click().await.unwrap();
    assert!(h.text("redeliver-error").await.contains("still being sent"));
    // A test delivery, from the log page: listed first, its event `test`.
    h.client.find(Locator::Css("[data-testid=send-test]")).await.unwrap().click().await.unwrap();
    h.until("the test delivery to be listed", || async {
        h.client.find_all(Locator::Css("[data-testid=delivery-state]")).await.map(|v| v.len()).unwrap_or(0) == 3
    })
    .await;
    let first = h.client.find(Locator::Css("[data-testid=deliveries] tbody tr")).await.unwrap().text().await.unwrap();
    assert!(first.contains("test") && first.contains("pending"), "{first}");
    let at = h.client.current_url().await.unwrap().path().to_owned();
    assert!(at.starts_with("/settings/hooks/") && !at.ends_with("/test"), "the hook's log, no post address: {at}");

    h.client.set_window_size(390, 844).await.unwrap();
    h.screenshot("hook-log-390.png").await;
    assert!(h.sideways().await <= 0, "the log does not scroll sideways at 390 px (its table scrolls in its frame)");
    h.client.goto(&format!("{}/settings/hooks", h.base)).await.unwrap();
    h.client.wait().for_element(Locator::Css("[data-testid=create-hook]")).await.unwrap();
    assert!(h.sideways().await <= 0, "the webhooks page does not scroll sideways at 390 px");
    h.screenshot("hooks-390.png").await;
    h.finish().await;
}

/// A page on another origin, open in the browser of a signed-in admin,
/// tries the attack the security issue replayed: an NDJSON import of an
/// environment whose setup would run a command, posted `no-cors` as
/// `text/plain`, a JSON write, a read, and a classic form post. All fail;
/// the same admin's own page can write.
#[tokio::test]
async fn a_page_on_another_origin_cannot_write_as_a_signed_in_admin() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 900).await;
    h.sign_in("demo-admin").await;
    let marker = format!("pwned-{}", std::process::id());
    let evil_env = serde_json::json!({"kind": "environment", "project": "fastnum/fastnum", "name": marker, "role": "release",
        "recipe": {"setup": [format!("touch /tmp/{marker}")]}});
    let ndjson = format!("{evil_env}\n");
    let page = format!(
        r#"<!doctype html><title>cute cats</title><p id="status">running</p>
<form id="f" method="POST" action="{base}/api/v1/import?format=ndjson" enctype="text/plain"><input name='{env_prefix}' value='"}}'></form>
<script>
const target = {base:?};
const results = {{}};
async function go() {{
  try {{ const r = await fetch(target + "/api/v1/import?format=ndjson", {{method: "POST", mode: "no-cors", credentials: "include", headers: {{"content-type": "text/plain"}}, body: {ndjson:?}}}); results.nocors = r.type; }} catch (e) {{ results.nocors = "error"; }}
  try {{ const r = await fetch(target + "/api/v1/environments", {{method: "POST", credentials: "include", headers: {{"content-type": "application/json"}}, body: {json:?}}}); results.cors = r.status; }} catch (e) {{ results.cors = "blocked"; }}
  try {{ const r = await fetch(target + "/api/v1/session", {{credentials: "include"}}); results.read = await r.text(); }} catch (e) {{ results.read = "blocked"; }}
  const s = document.getElementById("status"); s.textContent = JSON.stringify(results); s.setAttribute("data-testid", "attack-done");
}}
go();
</script>"#,
        base = h.base,
        env_prefix = evil_env.to_string()[..evil_env.to_string().len() - 1].to_string().replace('\'', "&#39;") + ",\"x\":\"",
        ndjson = ndjson,
        json = serde_json::json!({"project": "fastnum/fastnum", "name": marker, "role": "release", "recipe": {"setup": ["true"]}}).to_string(),
    );
    // The attacker's site: another port of the same address (the same site to a browser, another origin).
    let attacker = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let attacker_url = format!("http://127.0.0.1:{}/", attacker.local_addr().unwrap().port());
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            let Ok((mut sock, _)) = attacker.accept().await else { return };
            let body = page.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(body.as_bytes()).await;
            });
        }
    });
    h.client.goto(&attacker_url).await.unwrap();
    let results = h.text("attack-done").await;
    assert!(results.contains("\"nocors\":\"opaque\""), "the no-cors post left the browser: {results}");
    assert!(results.contains("\"cors\":\"blocked\""), "the JSON write never passed its preflight: {results}");
    assert!(results.contains("\"read\":\"blocked\""), "the session is not readable from another origin: {results}");
    // Last, the classic form post (text/plain): the browser lands on the refusal.
    h.client.execute("document.getElementById('f').submit()", vec![]).await.unwrap();
    h.until("the form post's answer", || async {
        h.client.current_url().await.is_ok_and(|u| u.as_str().starts_with(&h.base))
    })
    .await;
    let answer = h.client.source().await.unwrap();
    assert!(answer.contains("cross-origin write refused") || answer.contains("Content-Type"), "{answer}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Read back as the admin, from failpass's own page (recipes are for those who rerun).
    h.client.goto(&format!("{}/runners", h.base)).await.unwrap();
    let listed = h
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1]; fetch('/api/v1/environments?project=fastnum%2Ffastnum').then(r => r.text()).then(done, e => done(String(e)));",
            vec![],
        )
        .await
        .unwrap();
    let envs: Vec<serde_json::Value> =
        serde_json::from_str(listed.as_str().unwrap_or_default()).unwrap_or_else(|e| panic!("{listed:?}: {e}"));
    assert!(envs.iter().all(|e| e["name"] != marker.as_str()), "no recipe was stored: {envs:?}");
    assert!(!std::path::Path::new(&format!("/tmp/{marker}")).exists(), "no command ran");
    // The admin's own page writes fine: the session was real, the origin was the difference.
    let status = h
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1]; fetch('/api/v1/environments', {method: 'POST', headers: {'content-type': 'application/json'}, \
             body: JSON.stringify({project: 'fastnum/fastnum', name: 'from-own-page', role: 'release', recipe: {setup: []}})}).then(r => done(r.status), e => done(String(e)));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(status.as_i64(), Some(201), "{status:?}");
    h.finish().await;
}

/// A public project's status page and badges, as the public sees them: at
/// 1280 and 390 px, with JavaScript off (it needs none), the API's numbers,
/// no sideways scrolling, and the badges drawn.
/// The API reference: from the dashboard's top bar, every operation of the
/// OpenAPI document, readable at both widths without script.
#[tokio::test]
async fn the_api_reference_from_the_dashboard() {
    let _one = BROWSER.lock().await;
    for (width, height) in [(1280, 900), (390, 844)] {
        let h = start(width, height).await;
        let doc: serde_json::Value = h.api("/api/v1/openapi.json").await;
        let operations: usize =
            doc["paths"].as_object().unwrap().values().map(|item| item.as_object().unwrap().len()).sum();
        h.client.goto(&format!("{}/", h.base)).await.unwrap();
        h.client.wait().for_element(Locator::Css("[data-testid=api-link]")).await.unwrap().click().await.unwrap();
        h.client.wait().for_element(Locator::Css("[data-testid=api-reference]")).await.unwrap();
        let shown = h.client.execute("return document.querySelectorAll('.api-op').length", vec![]).await.unwrap();
        assert_eq!(shown.as_u64(), Some(operations as u64), "one section per operation");
        let scripts = h.client.execute("return document.scripts.length", vec![]).await.unwrap();
        assert_eq!(scripts.as_i64(), Some(0), "the reference runs no script");
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the reference scrolls sideways at {width} px by {overflow}");
        h.screenshot(&format!("api-{width}.png")).await;
        h.client.execute("document.getElementById('get--api-v1-reports').scrollIntoView()", vec![]).await.unwrap();
        h.screenshot(&format!("api-{width}-reports.png")).await;
        h.finish().await;
    }
}

#[tokio::test]
async fn status_page_and_badges_for_the_public() {
    let _one = BROWSER.lock().await;
    for (width, height) in [(1280, 900), (390, 844)] {
        let h = start(width, height).await;
        let status: serde_json::Value = h.api("/api/v1/status/pytorch/pytorch").await;
        // From the dashboard's top bar to the index, to the project.
        h.client.goto(&format!("{}/", h.base)).await.unwrap();
        h.client.wait().for_element(Locator::Css("[data-testid=status-link]")).await.unwrap().click().await.unwrap();
        h.client.wait().for_element(Locator::Css("[data-testid=status-index]")).await.unwrap();
        h.client.find(Locator::LinkText("pytorch/pytorch")).await.unwrap().click().await.unwrap();
        assert_eq!(h.text("status-project").await, "pytorch/pytorch");
        assert_eq!(h.text("status-rate-value").await, percent(status["rate"].as_f64()));
        assert_eq!(h.text("status-reports-value").await, thousands(status["reports"].as_i64().unwrap()));
        assert_eq!(h.text("status-backlog-value").await, thousands(status["backlog"].as_i64().unwrap()));
        assert_eq!(h.text("status-oracle-coverage-value").await, percent(status["oracle_coverage"]["rate"].as_f64()));
        let scripts = h.client.execute("return document.scripts.length", vec![]).await.unwrap();
        assert_eq!(scripts.as_i64(), Some(0), "the status page runs no script");
        // The trend and the badges are drawn (an image that failed has no natural width).
        let drawn = h
            .client
            .execute(
                "return Array.from(document.images).filter(i => i.complete && i.naturalWidth > 0).length + '/' + document.images.length",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(drawn.as_str(), Some("5/5"), "the trend and four badges are drawn");
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the status page scrolls sideways at {width} px by {overflow}");
        h.screenshot(&format!("status-{width}.png")).await;
        for (section, name) in [("routes", "routes"), ("latest", "latest"), ("badges", "badges")] {
            h.client.execute(&format!("document.getElementById('{section}').scrollIntoView()"), vec![]).await.unwrap();
            h.screenshot(&format!("status-{width}-{name}.png")).await;
        }
        // The dark scheme: the page's own colours, readable.
        let background = "return getComputedStyle(document.body).backgroundColor";
        let light = h.client.execute(background, vec![]).await.unwrap();
        h.prefer_dark().await;
        h.client.refresh().await.unwrap();
        h.text("status-rate-value").await;
        let dark = h.client.execute(background, vec![]).await.unwrap();
        assert_eq!(light.as_str(), Some("rgb(246, 247, 249)"), "light background");
        assert_eq!(dark.as_str(), Some("rgb(21, 24, 28)"), "dark background");
        let ink = h.client.execute("return getComputedStyle(document.body).color", vec![]).await.unwrap();
        assert_eq!(ink.as_str(), Some("rgb(228, 231, 235)"), "light text on the dark background");
        h.client.execute("window.scrollTo(0, 0)", vec![]).await.unwrap();
        h.screenshot(&format!("status-{width}-dark.png")).await;
        h.client.goto(&format!("{}/badge/pytorch/pytorch/reproduction-rate.svg", h.base)).await.unwrap();
        h.screenshot(&format!("badge-{width}.png")).await;
        h.finish().await;
    }
}

/// An agent's trajectory of 10,000 steps on the report page: only the rows
/// in view are drawn, the loop and the candidate's step are marked, a
/// scroll to the end shows the last step and a click opens it. At 1280 and
/// 390 px (no sideways scroll).
#[tokio::test]
async fn a_trajectory_of_ten_thousand_steps_shows_step_by_step() {
    let _one = BROWSER.lock().await;
    for (width, height) in [(1280, 1000), (390, 844)] {
        let h = start(width, height).await;
        let page: Page<ReportSummary> = h.api("/api/v1/reports?project=fastnum/fastnum&q=softmax").await;
        let report = page.items[0].id;
        let project =
            h.storage.get_project("fastnum/fastnum", &failpass::db::ProjectScope::All).await.unwrap().unwrap();
        let (token, _) = failpass::auth::tokens::create(
            h.storage.as_ref(),
            failpass::auth::tokens::TokenRequest {
                name: "e2e".into(),
                scope: failpass_shared::model::TokenScope::Ci,
                project_id: Some(project.id),
                user_id: None,
                created_by: "tests".into(),
                expires_in_days: None,
            },
        )
        .await
        .unwrap();
        // Steps 5 to 8 run one command four times; step 42 writes the candidate.
        let attempts: Page<failpass_shared::api::attempts::Attempt> =
            h.api(&format!("/api/v1/attempts?report_id={report}&limit=50")).await;
        for a in &attempts.items {
            let candidate = a.candidate.clone().unwrap_or_else(|| "print('no candidate here at all')".into());
            let steps: String = (0..10_000)
                .map(|i| {
                    let (action, input) = match i {
                        5..=8 => ("bash".to_owned(), "python -c 'import fastnum'".to_owned()),
                        42 => ("write_file".to_owned(), format!("repro.py\n{candidate}")),
                        _ => ("bash".to_owned(), format!("echo step {i}")),
                    };
                    let at = format!("2026-11-30T09:{:02}:{:02}Z", (i / 60) % 60, i % 60);
                    serde_json::json!({"action": action, "input": input, "output": format!("step {i} done"), "cost_usd": 0.001, "at": at})
                        .to_string()
                        + "\n"
                })
                .collect();
            let r = h
                .http
                .put(format!("{}/api/v1/attempts/{}/trajectory", h.base, a.id))
                .bearer_auth(&token)
                .header("content-type", "application/x-ndjson")
                .body(steps)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
        }
        h.client.goto(&format!("{}/reports/{report}", h.base)).await.unwrap();
        h.text("attempts").await;
        let details = h.client.find(Locator::Css("[data-testid=attempt-row] button")).await.unwrap();
        details.click().await.unwrap();
        h.text("attempt-detail").await;
        let show = h.client.find(Locator::Css("[data-testid=show-trajectory]")).await.unwrap();
        show.click().await.unwrap();
        h.until("the trajectory", || async { h.text("trajectory").await.contains("10000 steps") }).await;
        let drawn = h.client.find_all(Locator::Css("[data-testid=traj-row]")).await.unwrap().len();
        assert!((14..=40).contains(&drawn), "only the rows in view are drawn: {drawn} of 10,000");
        let summary = h.text("trajectory").await;
        assert!(summary.contains("Loop: steps 5–8, bash ×4"), "{summary}");
        assert!(summary.contains("The candidate first appears at step 42."), "{summary}");
        let list = h
            .client
            .execute(
                "const l = document.querySelector('.traj-list'); return [l.clientHeight, l.outerHTML.slice(0, 400)];",
                vec![],
            )
            .await
            .unwrap();
        assert!(list[0].as_i64().unwrap_or(0) >= 14 * 28 - 2, "the list shows 14 rows: {list}");
        let marked = h.client.find_all(Locator::Css(".traj-row.loop")).await.unwrap().len();
        assert_eq!(marked, 4, "steps 5 to 8 are marked as the loop");
        h.client.execute("document.querySelector('[data-testid=trajectory]').scrollIntoView()", vec![]).await.unwrap();
        h.screenshot(&format!("trajectory-{width}.png")).await;
        // Scrolled to the end: the last step is drawn, and opens on a click.
        h.client
            .execute("const l = document.querySelector('.traj-list'); l.scrollTop = l.scrollHeight;", vec![])
            .await
            .unwrap();
        h.until("the last step", || async {
            h.client.find_all(Locator::Css("[data-testid=traj-row]")).await.unwrap().len() <= 40
                && h.text("trajectory").await.contains("echo step 9999")
        })
        .await;
        let rows = h.client.find_all(Locator::Css("[data-testid=traj-row]")).await.unwrap();
        let mut last = None;
        for r in rows {
            if r.text().await.unwrap().contains("echo step 9999") {
                last = Some(r);
            }
        }
        last.expect("step 9999's row").click().await.unwrap();
        h.until("the step's detail", || async { h.text("traj-detail").await.contains("step 9999 done") }).await;
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the page scrolls sideways at {width} px by {overflow}");
        h.screenshot(&format!("trajectory-end-{width}.png")).await;
        h.finish().await;
    }
}

/// A real bug's releases page at 1280 and 390 px: the buggy release read
/// from the report with its line, the fixed one, a hostile version refused
/// with the reason and nothing changed, the index's releases; then the
/// Runners page's link to the environment cache.
#[tokio::test]
async fn a_maintainer_reads_and_corrects_a_real_bugs_releases() {
    let _one = BROWSER.lock().await;
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/realbugs");
    let libs = failpass::demo::realbugs::load_dir(&corpus).expect("the corpus parses");
    let networkx = libs.iter().find(|l| l.library.name == "networkx").expect("networkx is in the corpus");
    for width in [1280, 390] {
        let h = start(width, 1100).await;
        let routing = failpass_shared::routing::RoutingConfig::default();
        let seeded = failpass::demo::realbugs::seed(h.storage.as_ref(), &routing, networkx, |b| b.small).await.unwrap();
        let s = &seeded[0];
        let id = s.report.summary.id;
        h.sign_in("demo-admin").await;
        h.client.goto(&format!("{}/reports/{id}/releases", h.base)).await.unwrap();
        let buggy = h.text("releases-buggy").await;
        assert!(buggy.contains(&format!("networkx {}", s.bug.buggy)) && buggy.contains("line "), "{buggy}");
        assert!(h.text("releases-fixed").await.contains(&s.bug.fixed));
        let listed = h.text("releases-list").await;
        assert!(listed.contains(&s.bug.buggy) && listed.contains(&s.bug.fixed), "the index's releases: {listed}");
        // A hostile version: refused by name, the stored releases unchanged.
        let fixed = h.client.find(Locator::Css("input[name=fixed]")).await.unwrap();
        fixed.clear().await.unwrap();
        fixed.send_keys("1.0; rm -rf /").await.unwrap();
        h.client.find(Locator::Css("[data-testid=releases-set]")).await.unwrap().click().await.unwrap();
        assert!(h.text("releases-error").await.contains("not a PEP 440 version"));
        let v: serde_json::Value = h.api(&format!("/api/v1/reports/{id}/versions")).await;
        assert_eq!(v["fixed"], s.bug.fixed.as_str(), "{v}");
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the releases page scrolls sideways at {width} px by {overflow}");
        h.screenshot(&format!("releases-{width}.png")).await;
        // The Runners page links the environment cache (a server page, loaded for real).
        h.client.goto(&format!("{}/runners", h.base)).await.unwrap();
        h.client
            .wait()
            .for_element(Locator::Css("a[href='/runners/environments']"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        assert!(h.text("env-cache-totals").await.contains("Wheel cache"));
        assert!(h.text("env-cache-empty").await.contains("Nothing is built yet"));
        h.screenshot(&format!("env-cache-{width}.png")).await;
        h.finish().await;
    }
}
