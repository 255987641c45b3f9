//! Outgoing webhooks: what a delivery's body says, how it is signed, and
//! which addresses a hook may post to.
//!
//! A `signed` delivery is JSON, posted with
//! `X-Failpass-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`
//! under the hook's secret. The timestamp is signed with the body, so a
//! receiver that refuses signatures older than a few minutes cannot be
//! replayed an old delivery. `slack` and `discord` deliveries are one line of
//! text in the shape each chat's incoming webhooks take (and signed the same way).

pub mod addresses;

pub use addresses::HookNetworks;

use chrono::{DateTime, Utc};
use failpass_shared::api::hooks::{HookEvent, HookFormat};
use hmac::{Hmac, Mac};
use serde_json::json;

use crate::db::hooks::Change;

/// The header carrying the signature.
pub const SIGNATURE_HEADER: &str = "X-Failpass-Signature";
/// The header naming the event (`verdict`, `route`, `status`, or `test`).
pub const EVENT_HEADER: &str = "X-Failpass-Event";
/// The header carrying the delivery's id (a redelivery has its own).
pub const DELIVERY_HEADER: &str = "X-Failpass-Delivery";
/// How old a signature `verify` accepts, in seconds.
pub const TOLERANCE_SECS: i64 = 300;
/// The longest hook address.
pub const MAX_URL: usize = 2000;
/// How many ended deliveries a hook keeps (the oldest go first).
pub const KEPT_DELIVERIES: i64 = 1000;
/// The most hooks one project may have (removed ones not counted).
pub const MAX_HOOKS_PER_PROJECT: i64 = 20;

/// The report a change is about, as a delivery names it.
#[derive(Debug, Clone)]
pub struct About<'a> {
    pub project: &'a str,
    pub report_id: i64,
    pub external_id: &'a str,
    pub title: &'a str,
}

/// A delivery's body in `format`.
pub fn body(format: HookFormat, change: &Change, about: &About<'_>, at: DateTime<Utc>) -> String {
    match format {
        HookFormat::Signed => json!({
            "event": change.event,
            "at": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "project": about.project,
            "report": { "id": about.report_id, "external_id": about.external_id, "title": about.title },
            "attempt_id": change.attempt_id,
            "from": change.from,
            "to": change.to,
        })
        .to_string(),
        HookFormat::Slack => json!({ "text": line(change, about, slack_escape) }).to_string(),
        // No mention in a report's title may ping anyone.
        HookFormat::Discord => {
            json!({ "content": line(change, about, |s| s.to_owned()), "allowed_mentions": { "parse": [] } }).to_string()
        }
    }
}

/// A test delivery's body in `format`: says what it is, for which hook and
/// project, so a receiver (or a chat) shows the hook works.
pub fn test_body(format: HookFormat, hook_id: i64, project: &str, at: DateTime<Utc>) -> String {
    let text = format!("failpass test delivery from hook #{hook_id} of {project}: this hook works.");
    match format {
        HookFormat::Signed => json!({
            "event": HookEvent::Test,
            "at": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "project": project,
            "hook": hook_id,
            "text": text,
        })
        .to_string(),
        HookFormat::Slack => json!({ "text": slack_escape(&text) }).to_string(),
        HookFormat::Discord => json!({ "content": text, "allowed_mentions": { "parse": [] } }).to_string(),
    }
}

/// One line for a chat: `pytorch/pytorch #123 “title”: verdict hypothesis → reproduced (attempt 7)`.
fn line(change: &Change, about: &About<'_>, escape: fn(&str) -> String) -> String {
    let title: String = about.title.chars().take(200).collect();
    let what = match change.event {
        HookEvent::Verdict => "verdict",
        HookEvent::Route => "route",
        HookEvent::Status => "status",
        HookEvent::Test => "test",
    };
    let word = |s: &str| s.replace('_', " ");
    let moved = match &change.from {
        Some(from) => format!("{} → {}", word(from), word(&change.to)),
        None => word(&change.to),
    };
    let attempt = change.attempt_id.map(|a| format!(" (attempt {a})")).unwrap_or_default();
    escape(&format!("{} #{} “{}”: {what} {moved}{attempt}", about.project, about.external_id, title))
}

/// Slack's three control characters, as its message formatting asks.
fn slack_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn mac(secret: &str, timestamp: i64, body: &[u8]) -> Hmac<sha2::Sha256> {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The signature header's value for `body` sent at `timestamp` (unix seconds).
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},v1={}", hex::encode(mac(secret, timestamp, body).finalize().into_bytes()))
}

/// Why a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the signature header is not `t=…,v1=…`")]
    Malformed,
    #[error("the signature is {0} s old (at most {TOLERANCE_SECS} s)")]
    Stale(i64),
    #[error("the signature does not match the body")]
    Mismatch,
}

/// Checks a delivery as a receiver would: the header's shape, its age
/// against `now` (unix seconds), and the HMAC in constant time.
pub fn verify(secret: &str, header: &str, body: &[u8], now: i64) -> Result<(), Refused> {
    let (mut t, mut v1) = (None, None);
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => t = value.parse::<i64>().ok(),
            Some(("v1", value)) => v1 = hex::decode(value).ok(),
            _ => {}
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else { return Err(Refused::Malformed) };
    let age = now.saturating_sub(t);
    if age.abs() > TOLERANCE_SECS {
        return Err(Refused::Stale(age));
    }
    mac(secret, t, body).verify_slice(&v1).map_err(|_| Refused::Mismatch)
}

/// What a request to make a hook asks for, checked: the address, the
/// format (`signed` when left out) and the events (all when left out; in
/// order, once each). What `POST /api/v1/hooks`, the page and
/// `failpass hook add` share; the error names the field.
pub fn check_request(
    url: &str,
    format: Option<HookFormat>,
    events: Option<Vec<HookEvent>>,
    networks: &HookNetworks,
) -> Result<(String, HookFormat, Vec<HookEvent>), String> {
    if url.contains('\0') {
        return Err(crate::input::nul_message("url"));
    }
    let url = check_url(url, networks)?;
    let mut events =
        events.unwrap_or_else(|| HookEvent::ALL.iter().copied().filter(|e| *e != HookEvent::Test).collect());
    if events.contains(&HookEvent::Test) {
        return Err("events: `test` is not subscribed to: a test delivery is sent from the hook's page".into());
    }
    events.sort_unstable();
    events.dedup();
    if events.is_empty() {
        return Err("events: empty: name at least one of verdict, route, status".into());
    }
    Ok((url.to_string(), format.unwrap_or(HookFormat::Signed), events))
}

/// A new hook's secret: `whsec_` and 64 hex digits from the OS.
pub fn new_secret() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("reading randomness: {e}"))?;
    Ok(format!("whsec_{}", hex::encode(bytes)))
}

/// Checks a hook's address: `http` or `https`, a host (an IP address one
/// `networks` lets hooks post to), no user or password, at most [`MAX_URL`]
/// characters. The error names what is wrong. A name is checked again each
/// time a delivery resolves it.
pub fn check_url(url: &str, networks: &HookNetworks) -> Result<reqwest::Url, String> {
    let url = url.trim();
    if url.is_empty() {
        return Err("url: empty: give the address to post deliveries to".into());
    }
    if url.len() > MAX_URL {
        return Err(format!("url: {} characters; at most {MAX_URL}", url.len()));
    }
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("url: `{url}` is not an address: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("url: `{}` is not http or https", parsed.scheme()));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err("url: no host".into());
    }
    let host = parsed.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<std::net::IpAddr>()
        && let Err(refusal) = networks.check(ip)
    {
        return Err(format!("url: {}", refusal.explain(&ip.to_string())));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("url: a user or password in the address would be shown in the hook list; put it in the path".into());
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change() -> Change {
        Change {
            event: HookEvent::Verdict,
            report_id: 4,
            attempt_id: Some(7),
            from: Some("hypothesis".into()),
            to: "reproduced".into(),
        }
    }

    fn about() -> About<'static> {
        About { project: "demo/vision", report_id: 4, external_id: "123", title: "<b>grad</b> & @everyone" }
    }

    #[test]
    fn a_signature_verifies_and_a_changed_body_time_or_secret_does_not() {
        let body = br#"{"event":"verdict"}"#;
        let header = sign("whsec_x", 1_000_000, body);
        assert_eq!(verify("whsec_x", &header, body, 1_000_010), Ok(()));
        assert_eq!(verify("whsec_x", &header, br#"{"event":"route"}"#, 1_000_010), Err(Refused::Mismatch));
        assert_eq!(verify("whsec_y", &header, body, 1_000_010), Err(Refused::Mismatch));
        // The timestamp is signed: moving it to look fresh breaks the signature.
        let moved = header.replace("t=1000000", "t=1000400");
        assert_eq!(verify("whsec_x", &moved, body, 1_000_400), Err(Refused::Mismatch));
        assert_eq!(verify("whsec_x", &header, body, 1_000_000 + TOLERANCE_SECS + 1), Err(Refused::Stale(301)));
        assert_eq!(verify("whsec_x", "v1=00", body, 1_000_000), Err(Refused::Malformed));
    }

    #[test]
    fn bodies_in_each_format() {
        let at = "2026-12-05T10:00:00Z".parse().unwrap();
        let signed: serde_json::Value =
            serde_json::from_str(&body(HookFormat::Signed, &change(), &about(), at)).unwrap();
        assert_eq!(signed["event"], "verdict");
        assert_eq!(signed["to"], "reproduced");
        assert_eq!(signed["report"]["external_id"], "123");
        assert_eq!(signed["at"], "2026-12-05T10:00:00Z");
        let slack: serde_json::Value = serde_json::from_str(&body(HookFormat::Slack, &change(), &about(), at)).unwrap();
        assert_eq!(
            slack["text"],
            "demo/vision #123 “&lt;b&gt;grad&lt;/b&gt; &amp; @everyone”: verdict hypothesis → reproduced (attempt 7)"
        );
        let discord: serde_json::Value =
            serde_json::from_str(&body(HookFormat::Discord, &change(), &about(), at)).unwrap();
        assert!(discord["content"].as_str().unwrap().contains("<b>grad</b> & @everyone"));
        assert_eq!(discord["allowed_mentions"]["parse"], json!([]));
    }

    #[test]
    fn addresses_are_checked() {
        let public = HookNetworks::default();
        let check = |url: &str| check_url(url, &public);
        assert!(check("https://hooks.slack.com/services/T/B/x").is_ok());
        assert!(check("http://127.0.0.1:9000/hook").unwrap_err().contains("--hook-allow-network"));
        assert!(check("http://10.0.0.1/hook").unwrap_err().contains("private address"));
        assert!(check("http://[::1]:9000/hook").unwrap_err().contains("loopback"));
        // Numeric forms of a private address are read as the address they are.
        assert!(check("http://0x7f000001:9000/hook").unwrap_err().contains("127.0.0.1"));
        assert!(check("http://[::ffff:10.0.0.1]/hook").unwrap_err().contains("private address"));
        let lan = HookNetworks::parse(&["127.0.0.0/8"]).unwrap();
        assert!(check_url("http://127.0.0.1:9000/hook", &lan).is_ok());
        assert!(check("ftp://example.org/x").unwrap_err().contains("not http or https"));
        assert!(check("https://user:pw@example.org/").unwrap_err().contains("user or password"));
        assert!(check("not a url").unwrap_err().contains("is not an address"));
        assert!(check("").unwrap_err().contains("empty"));
        assert!(check_url("http://169.254.169.254/latest/meta-data", &lan).unwrap_err().contains("link-local"));
        assert!(check("http://[fe80::1]/x").unwrap_err().contains("link-local"));
        assert!(check(&format!("https://e.org/{}", "a".repeat(MAX_URL))).unwrap_err().contains("at most"));
    }
}
