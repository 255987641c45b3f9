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
use crate::hooks::{DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER, sign};

/// How long a receiver has to answer.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// How much of an answer the log keeps, in characters.
const RESPONSE_KEPT: usize = 1000;

#[derive(Clone)]
pub struct Deliver {
    pub storage: Arc<dyn Storage>,
    client: reqwest::Client,
}

impl Deliver {
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        // Redirects are not followed: a hook posts where its admin said, not
        // where the receiver points.
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(TIMEOUT)
            .user_agent(concat!("failpass-hooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .expect("a TLS client with the built-in roots");
        Self { storage, client }
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
        let signature = sign(&out.secret, chrono::Utc::now().timestamp(), out.body.as_bytes());
        let sent = self
            .client
            .post(&out.url)
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
                let message = crate::telemetry::cause_chain(&e);
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
