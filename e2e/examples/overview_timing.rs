//! Dashboard budget: how long until the Overview's figures are visible after
//! navigation, on localhost, in headless Chromium (the server with demo
//! data, the built dashboard). Prints figures; asserts nothing.
//!
//!   cargo run --release -p failpass-e2e --example overview_timing [RUNS]
//!
//! With `OVERVIEW_DATABASE_URL` set, against that database as it is (say
//! `failpass demo --reports 100000 --attempts 1000000`'s) instead of a fresh
//! demo.
//!
//! Each run opens a fresh tab on `/` and measures, in the page's own clock
//! (`performance.now()`, zero at navigation start), when the headline rate
//! is in the DOM with its number. Bundle sizes: `cargo xtask frontend`.

use std::process::{Command, Stdio};
use std::time::Duration;

use failpass::startup::{App, AppConfig};
use fantoccini::ClientBuilder;

#[path = "../chrome.rs"]
mod chrome;

#[tokio::main]
async fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let data = tempfile::tempdir().unwrap();
    let given = std::env::var("OVERVIEW_DATABASE_URL").ok().filter(|u| !u.is_empty());
    let app = App::build(AppConfig {
        database_url: given.clone().unwrap_or_else(|| data.path().join("failpass.db").to_string_lossy().into_owned()),
        bind: "127.0.0.1:0".parse().unwrap(),
        demo: given.is_none(),
        demo_real_bugs: false,
        routing: Default::default(),
        data_dir: data.path().to_path_buf(),
        workers: 0,
        generator: failpass::runner::refine::Generator::Snippet,
        refine_budget: 5,
        recheck_every: None,
        security: Default::default(),
    })
    .await
    .unwrap();
    let base = format!("http://127.0.0.1:{}", app.port());
    tokio::spawn(app.run_until(std::future::pending()));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut driver = Command::new(std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into()))
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver (cargo xtask test installs it)");
    let profile = tempfile::tempdir().unwrap();
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let caps = chrome::capabilities(&chromium, profile.path(), 1280, 900);
    let mut client = None;
    for _ in 0..100 {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        if let Ok(c) =
            ClientBuilder::new(connector).capabilities(caps.clone()).connect(&format!("http://127.0.0.1:{port}")).await
        {
            client = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let client = client.expect("a chromedriver session");
    // Resolves with performance.now() once the headline rate shows a number.
    let wait = r#"
        const done = arguments[arguments.length - 1];
        const check = () => {
            const el = document.querySelector('[data-testid=headline-rate]');
            if (el && /\d/.test(el.textContent)) { done(performance.now()); } else { requestAnimationFrame(check); }
        };
        check();"#;
    // Then resolves once the server-drawn charts are inlined too.
    let charts = r#"
        const done = arguments[arguments.length - 1];
        const check = () => {
            const ids = ['chart-throughput', 'chart-route-mix', 'chart-route'];
            if (ids.every(id => document.querySelector(`[data-testid=${id}] svg`))) { done(performance.now()); } else { requestAnimationFrame(check); }
        };
        check();"#;
    let mut times = Vec::new();
    let mut drawn = Vec::new();
    for i in 0..runs + 1 {
        client.goto("about:blank").await.unwrap();
        client.goto(&format!("{base}/")).await.unwrap();
        let t = client.execute_async(wait, vec![]).await.unwrap().as_f64().unwrap();
        let c = client.execute_async(charts, vec![]).await.unwrap().as_f64().unwrap();
        if i > 0 {
            times.push(t); // the first load fills caches; it is reported separately
            drawn.push(c);
        } else {
            println!("first (cold) load: {t:.0} ms, charts drawn {c:.0} ms");
        }
    }
    drawn.sort_by(|a, b| a.partial_cmp(b).unwrap());
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    println!(
        "overview visible after navigation, {} warm loads: mean {mean:.0} ms, p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms (budget 500 ms)",
        times.len(),
        times[times.len() / 2],
        times[(times.len() * 95 / 100).min(times.len() - 1)],
        times[times.len() - 1]
    );
    println!(
        "overview charts drawn (three server-drawn SVGs inlined): p50 {:.0} ms, p95 {:.0} ms, max {:.0} ms",
        drawn[drawn.len() / 2],
        drawn[(drawn.len() * 95 / 100).min(drawn.len() - 1)],
        drawn[drawn.len() - 1]
    );
    client.close().await.unwrap();
    let _ = driver.kill();
    let _ = driver.wait();
}
