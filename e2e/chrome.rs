//! The headless Chromium session options the browser tests and the budget
//! example share (included with `#[path]`: the crate's library has no
//! dependencies of its own).

use serde_json::{Map, Value, json};

/// chromedriver capabilities for a fresh headless Chromium with its own
/// profile. Below 500 px (the narrowest window) the viewport is emulated.
pub fn capabilities(chromium: &str, profile: &std::path::Path, width: u32, height: u32) -> Map<String, Value> {
    let mut options = json!({
        "binary": chromium,
        "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", format!("--user-data-dir={}", profile.display()),
                 format!("--window-size={width},{height}")]
    });
    if width < 500 {
        options["mobileEmulation"] =
            json!({ "deviceMetrics": { "width": width, "height": height, "pixelRatio": 1.0 } });
    }
    let mut caps = Map::new();
    caps.insert("goog:chromeOptions".into(), options);
    caps
}
