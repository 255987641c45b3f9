//! `POST /api/v1/webhooks/github`: live intake from GitHub.
//!
//! GitHub signs each delivery with the project's webhook secret
//! (`X-Hub-Signature-256`, HMAC-SHA256 of the raw body); an unsigned or
//! wrongly signed delivery changes nothing. Deliveries are idempotent by
//! `X-GitHub-Delivery`. An `issues` event creates or updates the report and
//! routes it at once; an `issue_comment` whose first line is a command
//! (`/failpass rerun`, `/failpass route ROUTE [reason]`) acts on the report
//! when the commenter's GitHub login is a failpass account with the right.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use failpass_shared::api::jobs::RerunRequest;
use failpass_shared::api::reports::CorrectRouteRequest;
use failpass_shared::model::Route;
use hmac::{Hmac, Mac};
use serde::Serialize;
use serde_json::Value;

use super::AppState;
use crate::auth::{Action, Via};
use crate::db::reports::Origin;
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult};
use crate::import::github::{Intake, intake_issue};

/// What failpass did with a delivery.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookAnswer {
    /// `created`, `updated`, `unchanged`, `duplicate`, `ignored`, `pong`,
    /// `rerun` or `routed`.
    pub status: String,
    pub report_id: Option<i64>,
    pub route: Option<Route>,
    /// Why a delivery was ignored, or what a command did.
    pub detail: Option<String>,
}

impl WebhookAnswer {
    fn status(status: &str, detail: impl Into<String>) -> Self {
        Self { status: status.into(), report_id: None, route: None, detail: Some(detail.into()) }
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Result<&'a str, ApiError> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| ApiError::BadRequest(format!("{name}: missing: a GitHub webhook delivery sends it")))
}

/// Whether `signature` (`sha256=` and hex) is the HMAC-SHA256 of `body` under `secret`.
pub fn signature_matches(secret: &str, body: &[u8], signature: &str) -> bool {
    let Some(hex_digest) = signature.strip_prefix("sha256=") else { return false };
    let Ok(expected) = hex::decode(hex_digest) else { return false };
    let Ok(mut mac) = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()) else { return false };
    mac.update(body);
    // Compared in constant time.
    mac.verify_slice(&expected).is_ok()
}

/// Receives a GitHub `issues` or `issue_comment` delivery for a project
/// with a webhook secret (`failpass webhook secret OWNER/NAME`).
#[utoipa::path(
    post, path = "/api/v1/webhooks/github", tag = "intake",
    request_body(content = Object, description = "A GitHub webhook payload (`issues`, `issue_comment` or `ping`), signed with the project's secret."),
    params(
        ("X-GitHub-Event" = String, Header, description = "`issues`, `issue_comment` or `ping`; others are ignored."),
        ("X-GitHub-Delivery" = String, Header, description = "The delivery's id: a repeated delivery changes nothing."),
        ("X-Hub-Signature-256" = String, Header, description = "`sha256=` and the HMAC-SHA256 of the body under the project's webhook secret."),
    ),
    responses((status = 200, description = "What was done with the delivery.", body = WebhookAnswer))
)]
#[tracing::instrument(skip_all)]
pub async fn github(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<ApiJson<WebhookAnswer>> {
    let event = header(&headers, "x-github-event")?.to_owned();
    let delivery = header(&headers, "x-github-delivery")?.to_owned();
    if delivery.len() > 100 {
        return Err(ApiError::BadRequest("x-github-delivery: longer than 100 characters".into()));
    }
    let signature = headers.get("x-hub-signature-256").and_then(|v| v.to_str().ok()).map(str::trim);
    let payload: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::BadRequest(format!("body: not a JSON webhook payload: {e}")))?;
    let repo = payload
        .pointer("/repository/full_name")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::BadRequest("repository.full_name: missing: the payload names no repository".into()))?;
    // Unknown projects and projects without a secret answer alike.
    let not_set =
        || ApiError::NotFound(format!("no project `{repo}` with a webhook secret (`failpass webhook secret {repo}`)"));
    let (project, secret) = state.storage.webhook_secret(repo).await?.ok_or_else(not_set)?;
    let Some(signature) = signature else {
        return Err(ApiError::Unauthorized("x-hub-signature-256: missing: deliveries must be signed".into()));
    };
    if !signature_matches(&secret, &body, signature) {
        return Err(ApiError::Unauthorized(
            "x-hub-signature-256: does not match the body under the project's webhook secret".into(),
        ));
    }
    if state.storage.delivery_seen(&delivery).await? {
        return Ok(ApiJson(WebhookAnswer::status("duplicate", format!("delivery {delivery} was received before"))));
    }
    let answer = match event.as_str() {
        "ping" => WebhookAnswer::status("pong", format!("webhook for {project} is set up")),
        "issues" => issue(&state, &project, &payload).await?,
        "issue_comment" => comment(&state, &project, &payload).await?,
        other => WebhookAnswer::status("ignored", format!("event `{other}` is not one failpass reads")),
    };
    state.storage.record_delivery(&delivery, &project, &event, &answer.status).await?;
    Ok(ApiJson(answer))
}

/// An `issues` event: the report is created or updated and routed.
async fn issue(state: &AppState, project: &str, payload: &Value) -> ApiResult<WebhookAnswer> {
    let action = payload.get("action").and_then(Value::as_str).unwrap_or_default();
    if !["opened", "edited", "reopened", "labeled", "unlabeled", "transferred"].contains(&action) {
        return Ok(WebhookAnswer::status("ignored", format!("issue action `{action}` changes nothing failpass keeps")));
    }
    let Some(issue) = payload.get("issue") else {
        return Err(ApiError::BadRequest("issue: missing from an `issues` payload".into()));
    };
    match intake_issue(
        state.storage.as_ref(),
        &state.models,
        &state.routing,
        project,
        issue,
        Origin::upstream("webhook"),
    )
    .await?
    {
        Intake::Stored { outcome, id, route } => {
            Ok(WebhookAnswer { status: outcome.as_str().to_owned(), report_id: id, route, detail: None })
        }
        Intake::Skipped(why) => Ok(WebhookAnswer::status("ignored", why)),
        Intake::Rejected(field, message) => Err(ApiError::BadRequest(format!("issue.{field}: {message}"))),
    }
}

/// An `issue_comment` event: a command on its first line, from a member with the right.
async fn comment(state: &AppState, project: &str, payload: &Value) -> ApiResult<WebhookAnswer> {
    if payload.get("action").and_then(Value::as_str) != Some("created") {
        return Ok(WebhookAnswer::status("ignored", "only new comments carry commands"));
    }
    let text = payload.pointer("/comment/body").and_then(Value::as_str).unwrap_or_default();
    let Some(command) = text.lines().next().and_then(|l| l.trim().strip_prefix("/failpass ")) else {
        return Ok(WebhookAnswer::status("ignored", "no /failpass command"));
    };
    let number = payload.pointer("/issue/number").and_then(Value::as_u64).map(|n| n.to_string()).unwrap_or_default();
    let Some(report_id) = state.storage.find_report(project, &number).await? else {
        return Ok(WebhookAnswer::status("ignored", format!("issue #{number} is not a report in {project}")));
    };
    let login = payload.pointer("/comment/user/login").and_then(Value::as_str).unwrap_or_default();
    let user = state.storage.user_by_name(login).await?;
    let viewer = match user {
        Some(u) => crate::auth::user_viewer(state.storage.as_ref(), u.id, Via::Bearer).await?,
        None => None,
    };
    let Some(viewer) = viewer else {
        return Ok(WebhookAnswer::status("ignored", format!("`{login}` is not a failpass account")));
    };
    let mut words = command.split_whitespace();
    let answer = match words.next() {
        Some("rerun") => {
            if !viewer.role_in(project).may(Action::Rerun) {
                return Ok(WebhookAnswer::status("ignored", format!("`{login}` may not rerun in {project}")));
            }
            let req = RerunRequest { report_id: Some(report_id), ..Default::default() };
            let (_, ApiJson(r)) = super::reruns::rerun(State(state.clone()), viewer, ApiJson(req)).await?;
            WebhookAnswer {
                status: "rerun".into(),
                report_id: Some(report_id),
                route: None,
                detail: Some(format!("{} job(s) queued by {login}", r.queued.len())),
            }
        }
        Some("route") => {
            let Some(route) = words.next().and_then(|r| r.parse::<Route>().ok()) else {
                return Ok(WebhookAnswer::status(
                    "ignored",
                    "usage: /failpass route human_first|agent_first|hypothesis [reason]",
                ));
            };
            if !viewer.role_in(project).may(Action::Review) {
                return Ok(WebhookAnswer::status("ignored", format!("`{login}` may not correct routes in {project}")));
            }
            let reason = words.collect::<Vec<_>>().join(" ");
            let reason = if reason.is_empty() { "set by a comment on GitHub".to_owned() } else { reason };
            let req = CorrectRouteRequest { route, reason };
            let ApiJson(report) =
                super::reports::correct_route(State(state.clone()), viewer, ApiPath(report_id), ApiJson(req)).await?;
            WebhookAnswer {
                status: "routed".into(),
                report_id: Some(report_id),
                route: Some(report.summary.route),
                detail: Some(format!("route set by {login}")),
            }
        }
        other => WebhookAnswer::status("ignored", format!("unknown command `{}`", other.unwrap_or_default())),
    };
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_checked_against_the_body_and_secret() {
        // GitHub's documented example: secret "It's a Secret to Everybody", body "Hello, World!".
        let sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert!(signature_matches("It's a Secret to Everybody", b"Hello, World!", sig));
        assert!(!signature_matches("It's a Secret to Everybody", b"Hello, World?", sig));
        assert!(!signature_matches("another secret", b"Hello, World!", sig));
        assert!(!signature_matches("It's a Secret to Everybody", b"Hello, World!", &sig[7..]));
        assert!(!signature_matches("It's a Secret to Everybody", b"Hello, World!", "sha256=zz"));
    }
}
