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

#[path = "browser/accounts_and_public.rs"]
mod accounts_and_public;
#[path = "../chrome.rs"]
mod chrome;
#[path = "browser/figures.rs"]
mod figures;
#[path = "browser/inbox.rs"]
mod inbox;
#[path = "browser/mornings.rs"]
mod mornings;
#[path = "browser/queue_and_report.rs"]
mod queue_and_report;
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
