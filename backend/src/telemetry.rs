//! Logging: `RUST_LOG`-style filter from `FAILPASS_LOG` (default `info`),
//! human-readable lines, or JSON with `FAILPASS_LOG_FORMAT=json`.

use tracing_subscriber::EnvFilter;

pub fn init() {
    let filter =
        EnvFilter::try_from_env("FAILPASS_LOG").unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    let json = std::env::var("FAILPASS_LOG_FORMAT").is_ok_and(|v| v == "json");
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_target(false);
    // A second init (tests) is harmless: keep the first subscriber.
    let _ = if json { builder.json().try_init() } else { builder.try_init() };
}
