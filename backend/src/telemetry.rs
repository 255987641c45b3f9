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

/// An error with its causes, `outer: inner: innermost`, each cause left out
/// when the message before it already says it (errors that print their
/// source).
pub fn cause_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        next = cause.source();
    }
    text
}
