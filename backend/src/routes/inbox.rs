//! `/inbox`: the review inbox. Every attempt waiting for a person in the
//! projects the viewer may review (an LLM's lead, or a reproduction of a
//! vague report), newest first, each with its candidate, its runs and the
//! report's text at hand, and accept or reject in place. Rendered by the
//! server: it needs no script, and the keys `a` and `r` (the browser's
//! access-key chord) judge the first one.

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use failpass_shared::api::attempts::{AttemptDetail, ReviewRequest};
use failpass_shared::model::{Review, Verdict};
use maud::{Markup, html};
use serde::Deserialize;

use super::AppState;
use super::pages::page;
use crate::auth::{Action, Viewer};
use crate::error::{ApiError, ApiPath, ApiResult};

/// Items the inbox shows at once (the count says how many wait in all).
pub const INBOX_PAGE: usize = 50;

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct InboxQuery {
    /// The attempt just judged, and how (the notice after a review).
    done: Option<i64>,
    review: Option<String>,
}

/// The review form: `accepted` or `rejected`, and why (optional).
#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(default)]
pub struct InboxReviewForm {
    review: String,
    comment: String,
}

/// `GET /inbox`
#[utoipa::path(
    get, path = "/inbox", tag = "pages",
    params(("done" = Option<i64>, Query, example = 1, description = "The attempt just judged (the page says so)."),
           ("review" = Option<String>, Query, example = "accepted", description = "How it was judged.")),
    responses((status = 200, description = "Every attempt waiting for a person in the projects you review, newest first.", content_type = "text/html", body = String),
              (status = 303, description = "Anonymous: on to sign in."))
)]
pub async fn inbox_page(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(q): Query<InboxQuery>,
) -> ApiResult<Response> {
    let notice = match (q.done, q.review.as_deref()) {
        (Some(id), Some(r @ ("accepted" | "rejected"))) => Some(format!("Attempt {id} {r}.")),
        _ => None,
    };
    inbox_view(&state, &viewer, StatusCode::OK, notice.as_deref(), None).await
}

/// `POST /inbox/{id}/review`: judges attempt `id`, then back to the inbox.
#[utoipa::path(
    post, path = "/inbox/{id}/review", tag = "pages",
    params(("id" = i64, Path, example = 1, description = "The attempt.")),
    request_body(content = InboxReviewForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 303, description = "Judged: back to the inbox, which says so."),
              (status = 400, description = "Refused: the inbox again, saying why.", content_type = "text/html", body = String))
)]
pub async fn review(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
    form: Result<Form<InboxReviewForm>, FormRejection>,
) -> ApiResult<Response> {
    let form = match form {
        Ok(Form(f)) => f,
        Err(e) => return refuse(&state, &viewer, format!("the form did not arrive whole: {}", e.body_text())).await,
    };
    let review = match form.review.as_str() {
        "accepted" => Review::Accepted,
        "rejected" => Review::Rejected,
        other => return refuse(&state, &viewer, format!("review: `{other}` is not accepted or rejected")).await,
    };
    let comment = Some(form.comment.trim().to_owned()).filter(|c| !c.is_empty());
    let req = ReviewRequest { review, comment };
    match super::attempts::review_as(&state, &viewer, id, &req).await {
        Ok(_) => Ok(Redirect::to(&format!("/inbox?done={id}&review={}", review.as_str())).into_response()),
        Err(e @ (ApiError::BadRequest(_) | ApiError::Conflict(_))) => refuse(&state, &viewer, e.to_string()).await,
        // A page answers as a page: an attempt that is not there, or not yours to judge.
        Err(e @ ApiError::NotFound(_)) => {
            inbox_view(&state, &viewer, StatusCode::NOT_FOUND, None, Some(&e.to_string())).await
        }
        Err(e @ ApiError::Forbidden(_)) => Ok(super::pages::refused(&viewer, &e)),
        Err(e) => Err(e),
    }
}

/// The inbox again, saying why a review was refused (nothing was stored).
async fn refuse(state: &AppState, viewer: &Viewer, why: String) -> ApiResult<Response> {
    inbox_view(state, viewer, StatusCode::BAD_REQUEST, None, Some(&why)).await
}

async fn inbox_view(
    state: &AppState,
    viewer: &Viewer,
    status: StatusCode,
    notice: Option<&str>,
    error: Option<&str>,
) -> ApiResult<Response> {
    let scope = viewer.scope_for(Action::Review);
    let (total, items) = state.storage.awaiting_review(&scope, INBOX_PAGE).await?;
    let mut shown = Vec::with_capacity(items.len());
    for (attempt_id, report_id) in items {
        let detail = state.storage.get_attempt(attempt_id, &scope).await?;
        let report = state.storage.get_report(report_id, &scope).await?;
        if let (Some(d), Some(r)) = (detail, report) {
            shown.push((d, r));
        }
    }
    let body = html! {
        div.page-head { h1 data-testid="inbox-title" { "Review inbox " span.badge data-testid="inbox-count" { (total) } } }
        p.muted {
            "Attempts waiting for a person in the projects you review, newest first: an LLM's lead counts once "
            "someone accepts it, and so does a reproduction of a vague report. Accept or reject each in place; "
            "the first one also takes the keys " kbd { "a" } " and " kbd { "r" } " (with your browser's access-key "
            "chord: Alt, or Alt+Shift, or Ctrl+Option)."
        }
        @if let Some(n) = notice { p.state.state-ok role="status" data-testid="inbox-notice" { (n) } }
        @if let Some(e) = error { p.state.state-error role="alert" data-testid="inbox-error" { (e) } }
        @if shown.is_empty() {
            p.state.state-empty data-testid="inbox-empty" { "Nothing waits for a review. Leads and vague reproductions appear here as agents submit them." }
        }
        @for (i, (d, r)) in shown.iter().enumerate() {
            (item(d, r, i == 0))
        }
        @if total as usize > shown.len() {
            p.muted { "Showing the newest " (shown.len()) " of " (total) "; judge these and the next appear." }
        }
    };
    let mut response = page(status, &format!("Review inbox ({total})"), viewer, body);
    *response.status_mut() = status;
    Ok(response)
}

/// Why an attempt waits for a person.
fn why(d: &AttemptDetail, vague: bool) -> &'static str {
    match (d.attempt.verdict, vague) {
        (Verdict::Lead, _) => "An LLM's lead: a hypothesis until a person accepts it (it then counts as confirmed).",
        (_, true) => {
            "A reproduction of a vague report: it counts once a person accepts that it shows the reported bug."
        }
        _ => "Waits for a person's review.",
    }
}

fn item(d: &AttemptDetail, r: &failpass_shared::api::reports::Report, first: bool) -> Markup {
    let a = &d.attempt;
    let s = &r.summary;
    let action = format!("/inbox/{}/review", a.id);
    html! {
        article.panel.inbox-item data-testid="inbox-item" data-attempt=(a.id) {
            h2 {
                a href=(format!("/reports/{}", s.id)) { (s.project) " #" (s.external_id) ": " (s.title) }
            }
            p.muted {
                span.badge { (a.verdict.as_str()) } " by " (a.agent)
                @if let Some(m) = &a.model { " (" (m) ")" }
                " · " (a.started_at.format("%Y-%m-%d %H:%M UTC")) " · route " (s.route.as_str().replace('_', " "))
            }
            p data-testid="inbox-why" { (why(d, s.vague)) }
            form.review-form method="post" action=(action) data-testid="inbox-review" {
                label.field { span { "Why (optional, kept with the review)" } input type="text" name="comment" maxlength="2000"; }
                div.buttons {
                    button type="submit" name="review" value="accepted" data-testid="inbox-accept" accesskey=[first.then_some("a")] { "Accept" }
                    button.secondary type="submit" name="review" value="rejected" data-testid="inbox-reject" accesskey=[first.then_some("r")] { "Reject" }
                }
            }
            details open[first] {
                summary { "Candidate" }
                @match &a.candidate {
                    Some(c) => pre.candidate data-testid="inbox-candidate" { (c) },
                    None => p.muted { "No candidate was submitted (a verdict alone)." },
                }
            }
            details open[first] {
                summary { "Runs (" (d.runs.len()) ")" }
                @if d.runs.is_empty() {
                    p.muted { "Not run by failpass: the verdict is the submitter's." }
                } @else {
                    div.table-wrap { table.chart-table {
                        thead { tr { th { "Trigger" } th { "Environment" } th { "Exit" } th { "Failing tests" } } }
                        tbody { @for run in &d.runs { tr {
                            td { (run.trigger.as_str()) }
                            td { (run.environment.as_str()) }
                            td { @match run.exit_status { Some(c) => (c), None => "—" } @if run.timed_out { " (timed out)" } }
                            td { (run.failing_tests.join(", ")) }
                        } } }
                    } }
                }
            }
            details open[first] {
                summary { "The report's text" }
                div.report-body.markdown data-testid="inbox-report" { (maud::PreEscaped(crate::markdown::render(&r.body))) }
            }
        }
    }
}
