//! Deliver jobs: post one outgoing webhook delivery, signed, and record how
//! the try went. A 2xx ends it delivered; no answer, a 5xx, 408 or 429 is
//! tried again after the queue's backoff; any other answer is refused for
//! good (the receiver said no: trying again would say no again).

use std::sync::Arc;
use std::time::{Duration, Instant};

use failpass_shared::api::hooks::DeliveryState;
use failpass_shared::api::jobs::Job;

use super::JobError;
use crate::db::Storage;
use crate::db::hooks::TryOutcome;
use crate::hooks::{DELIVERY_HEADER, EVENT_HEADER, HookNetworks, SIGNATURE_HEADER, sign};

/// How long a receiver has to answer.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// How much of an answer the log keeps, in characters.
const RESPONSE_KEPT: usize = 1000;

#[derive(Clone)]
pub struct Deliver {
    pub storage: Arc<dyn Storage>,
    /// Private networks the operator lets hooks post into.
    pub networks: Arc<HookNetworks>,
}

/// Why a delivery was not posted before any connection.
enum NotPosted {
    /// The name did not resolve (now): tried again later.
    Unresolved(String),
    /// The address is one hooks are never posted to: ended.
    Forbidden(String),
}

/// The hook's address resolved once and checked: the connection goes to
/// the addresses checked (pinned), so a name that resolves elsewhere on a
/// second look cannot lead the post there.
async fn resolve(
    url: &reqwest::Url,
    networks: &HookNetworks,
) -> Result<Option<(String, Vec<std::net::SocketAddr>)>, NotPosted> {
    let host = url.host_str().ok_or_else(|| NotPosted::Forbidden("the address has no host".into()))?.to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<std::net::IpAddr>() {
        return match networks.check(ip) {
            Ok(()) => Ok(None),
            Err(refusal) => Err(NotPosted::Forbidden(refusal.explain(&ip.to_string()))),
        };
    }
    let looked_up = tokio::time::timeout(TIMEOUT, tokio::net::lookup_host((host.as_str(), port)))
        .await
        .map_err(|_| NotPosted::Unresolved(format!("resolving {host}: no answer in {} s", TIMEOUT.as_secs())))?
        .map_err(|e| NotPosted::Unresolved(format!("resolving {host}: {e}")))?;
    let addrs: Vec<std::net::SocketAddr> = looked_up.collect();
    if let Some((bad, refusal)) = addrs.iter().find_map(|a| networks.check(a.ip()).err().map(|r| (a.ip(), r))) {
        return Err(NotPosted::Forbidden(refusal.explain(&format!("{host} resolves to {bad}, which"))));
    }
    if addrs.is_empty() {
        return Err(NotPosted::Unresolved(format!("{host} resolves to no address")));
    }
    Ok(Some((host, addrs)))
}

/// A client for one delivery: no proxy (a proxy would resolve the name
/// itself, past the check), no redirects (a hook posts where its admin
/// said, not where the receiver points), the checked addresses pinned.
fn client(pinned: Option<(String, Vec<std::net::SocketAddr>)>) -> Result<reqwest::Client, reqwest::Error> {
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .user_agent(concat!("failpass-hooks/", env!("CARGO_PKG_VERSION")));
    if let Some((host, addrs)) = pinned {
        builder = builder.resolve_to_addrs(&host, &addrs);
    }
    builder.build()
}

impl Deliver {
    pub fn new(storage: Arc<dyn Storage>, networks: Arc<HookNetworks>) -> Self {
        Self { storage, networks }
    }

    pub async fn execute(&self, job: &Job) -> Result<(), JobError> {
        let id = job.payload.delivery_id.ok_or_else(|| JobError::permanent("the job names no delivery"))?;
        let Some(out) = self.storage.outgoing(id).await? else {
            return Err(JobError::permanent(format!("delivery {id} does not exist")));
        };
        if out.state != DeliveryState::Pending || out.hook_removed {
            return Ok(()); // ended meanwhile (its hook removed): nothing to send
        }
        let started = Instant::now();
        let refuse = |why: String| TryOutcome {
            state: DeliveryState::Failed,
            status_code: None,
            error: Some(why),
            response: None,
            duration_ms: started.elapsed().as_millis() as i64,
        };
        let url = match reqwest::Url::parse(&out.url) {
            Ok(url) => url,
            Err(e) => {
                let outcome = refuse(format!("the hook's address does not parse: {e}"));
                self.storage.record_try(id, &outcome, chrono::Utc::now()).await?;
                return Err(JobError::permanent(outcome.error.unwrap_or_default()));
            }
        };
        let client = match resolve(&url, &self.networks).await {
            Ok(pinned) => client(pinned).map_err(|e| JobError::because("making the HTTP client", e.without_url()))?,
            Err(not) => {
                let (state, message, error): (_, _, fn(String) -> JobError) = match not {
                    NotPosted::Unresolved(why) => (DeliveryState::Pending, why, JobError::transient),
                    NotPosted::Forbidden(why) => (DeliveryState::Failed, why, JobError::permanent),
                };
                let mut outcome = refuse(format!("not posted: {message}"));
                outcome.state = state;
                self.storage.record_try(id, &outcome, chrono::Utc::now()).await?;
                return Err(error(outcome.error.unwrap_or_default()));
            }
        };
        let signature = sign(&out.secret, chrono::Utc::now().timestamp(), out.body.as_bytes());
        let sent = client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(SIGNATURE_HEADER, signature)
            .header(EVENT_HEADER, out.event.as_str())
            .header(DELIVERY_HEADER, id.to_string())
            .body(out.body.clone())
            .send()
            .await;
        let (outcome, error) = match sent {
            Ok(response) => {
                let code = response.status();
                let text = read_start(response).await;
                let ms = started.elapsed().as_millis() as i64;
                let (state, error) = if code.is_success() {
                    (DeliveryState::Delivered, None)
                } else if code.is_server_error() || code.as_u16() == 408 || code.as_u16() == 429 {
                    let e = format!("the receiver answered {code}");
                    (DeliveryState::Pending, Some(JobError::transient(e)))
                } else {
                    let e = format!("the receiver answered {code}: refused, not retried");
                    (DeliveryState::Failed, Some(JobError::permanent(e)))
                };
                let outcome = TryOutcome {
                    state,
                    status_code: Some(i64::from(code.as_u16())),
                    error: error.as_ref().map(ToString::to_string),
                    response: Some(text),
                    duration_ms: ms,
                };
                (outcome, error)
            }
            Err(e) => {
                // Without the address: a chat hook's address is its credential,
                // and the job's error is shown to the project's readers.
                let message = crate::telemetry::cause_chain(&e.without_url());
                let outcome = TryOutcome {
                    state: DeliveryState::Pending,
                    status_code: None,
                    error: Some(message.clone()),
                    response: None,
                    duration_ms: started.elapsed().as_millis() as i64,
                };
                (outcome, Some(JobError::transient(format!("posting to the hook: {message}"))))
            }
        };
        self.storage.record_try(id, &outcome, chrono::Utc::now()).await?;
        match error {
            None => {
                tracing::info!(delivery = id, hook = out.hook_id, code = ?outcome.status_code, "delivered");
                Ok(())
            }
            Some(e) => Err(e),
        }
    }
}

/// The start of an answer: at most [`RESPONSE_KEPT`] characters, read no further.
async fn read_start(mut response: reqwest::Response) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < RESPONSE_KEPT * 4 {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    String::from_utf8_lossy(&bytes).chars().take(RESPONSE_KEPT).collect()
}
