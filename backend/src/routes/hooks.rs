//! Outgoing webhooks: the JSON API under `/api/v1/hooks` and the admins'
//! page at `/settings/hooks` (plain HTML, like the tokens page: it costs the
//! dashboard's bundle nothing). Hooks post to addresses their admin chose,
//! from the server's network, so only admins make, read and redeliver them.

use axum::Form;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use failpass_shared::api::hooks::{CreateHookRequest, Hook, HookDelivery, HookEvent, HookFormat};
use maud::html;
use serde::Deserialize;

use super::AppState;
use super::pages::{page, when};
use crate::auth::Viewer;
use crate::auth::access::Action;
use crate::db::hooks::NewHook;
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult};

/// How many deliveries a hook's log shows.
const LOG_LIMIT: i64 = 100;

/// Checks a request and creates the hook; the answer carries its secret, once.
async fn make_hook(state: &AppState, viewer: &Viewer, req: CreateHookRequest) -> ApiResult<Hook> {
    if req.project.contains('\0') {
        return Err(ApiError::BadRequest(crate::input::nul_message("project")));
    }
    let (url, format, events) =
        crate::hooks::check_request(&req.url, req.format, req.events, &state.security.hook_networks)
            .map_err(ApiError::BadRequest)?;
    let project = state.storage.get_project(req.project.trim(), &viewer.scope()).await?.ok_or_else(|| {
        let hint = if req.project.contains('/') { "" } else { " (projects are named owner/name)" };
        ApiError::BadRequest(format!("project: `{}` does not exist{hint}", req.project))
    })?;
    viewer.require(Action::ManageProjects, &project.slug)?;
    let secret = crate::hooks::new_secret().map_err(ApiError::Internal)?;
    let new = NewHook { project_id: project.id, url, format, events, secret, created_by: viewer.name() };
    let hook = state.storage.create_hook(&new, chrono::Utc::now()).await?;
    tracing::info!(hook = hook.id, project = %project.slug, format = %hook.format, by = %viewer.name(), "hook created");
    Ok(hook)
}

/// A hook the caller may manage, or 404.
async fn managed_hook(state: &AppState, viewer: &Viewer, id: i64) -> ApiResult<Hook> {
    let missing = || ApiError::NotFound(format!("hook {id} not found"));
    let hook = state.storage.get_hook(id).await?.ok_or_else(missing)?;
    state.storage.get_project(&hook.project, &viewer.scope()).await?.ok_or_else(missing)?;
    viewer.require(Action::ManageProjects, &hook.project)?;
    Ok(hook)
}

/// Sends a delivery again, if the caller manages its hook.
async fn send_again(state: &AppState, viewer: &Viewer, id: i64) -> ApiResult<HookDelivery> {
    let delivery =
        state.storage.get_delivery(id).await?.ok_or_else(|| ApiError::NotFound(format!("delivery {id} not found")))?;
    managed_hook(state, viewer, delivery.hook_id).await?;
    let again = state.storage.redeliver(id, chrono::Utc::now()).await?;
    tracing::info!(delivery = again.id, of = id, by = %viewer.name(), "redelivery queued");
    Ok(again)
}

#[utoipa::path(
    get, path = "/api/v1/hooks", tag = "hooks",
    responses((status = 200, description = "Every project's hooks, with their deliveries counted by state (admins).", body = Vec<Hook>))
)]
pub async fn list_hooks(State(state): State<AppState>, viewer: Viewer) -> ApiResult<ApiJson<Vec<Hook>>> {
    Ok(ApiJson(state.storage.list_hooks(&viewer.scope_for(Action::ManageProjects)).await?))
}

#[utoipa::path(
    post, path = "/api/v1/hooks", tag = "hooks",
    request_body = CreateHookRequest,
    responses((status = 201, description = "Created; `secret` is shown this once.", body = Hook),
              (status = 400, description = "Named: the address, the project, the events.", body = failpass_shared::error::ApiErrorBody))
)]
pub async fn create_hook(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiJson(req): ApiJson<CreateHookRequest>,
) -> ApiResult<(StatusCode, ApiJson<Hook>)> {
    Ok((StatusCode::CREATED, ApiJson(make_hook(&state, &viewer, req).await?)))
}

#[utoipa::path(
    delete, path = "/api/v1/hooks/{id}", tag = "hooks",
    params(("id" = i64, Path, example = 1, description = "The hook's id.")),
    responses((status = 204, description = "Removed: told nothing more; its log stays."),
              (status = 404, description = "No such hook.", body = failpass_shared::error::ApiErrorBody))
)]
pub async fn remove_hook(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<StatusCode> {
    managed_hook(&state, &viewer, id).await?;
    state.storage.remove_hook(id, chrono::Utc::now()).await?;
    tracing::info!(hook = id, by = %viewer.name(), "hook removed");
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(
    get, path = "/api/v1/hooks/{id}/deliveries", tag = "hooks",
    params(("id" = i64, Path, example = 1, description = "The hook's id.")),
    responses((status = 200, description = "The hook's last 100 deliveries, newest first: state, tries, the receiver's status and answer.", body = Vec<HookDelivery>),
              (status = 404, description = "No such hook.", body = failpass_shared::error::ApiErrorBody))
)]
pub async fn hook_deliveries(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<ApiJson<Vec<HookDelivery>>> {
    managed_hook(&state, &viewer, id).await?;
    Ok(ApiJson(state.storage.hook_deliveries(id, LOG_LIMIT).await?))
}

#[utoipa::path(
    post, path = "/api/v1/deliveries/{id}/redeliver", tag = "hooks",
    params(("id" = i64, Path, example = 1, description = "The delivery's id.")),
    responses((status = 202, description = "Queued: a new delivery of the same body, signed afresh.", body = HookDelivery),
              (status = 400, description = "Its hook was removed.", body = failpass_shared::error::ApiErrorBody),
              (status = 409, description = "It is still being sent.", body = failpass_shared::error::ApiErrorBody),
              (status = 404, description = "No such delivery.", body = failpass_shared::error::ApiErrorBody))
)]
pub async fn redeliver(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<(StatusCode, ApiJson<HookDelivery>)> {
    Ok((StatusCode::ACCEPTED, ApiJson(send_again(&state, &viewer, id).await?)))
}

// The page.

/// The webhooks page; after a refusal, `draft` (what was sent) fills the
/// form again, so the admin corrects it instead of typing it anew.
async fn hooks_view(
    state: &AppState,
    viewer: &Viewer,
    created: Option<&Hook>,
    error: Option<&str>,
    status: StatusCode,
    draft: Option<&CreateHookRequest>,
) -> ApiResult<Response> {
    let chosen_format = draft.and_then(|d| d.format).unwrap_or(HookFormat::Signed);
    let tells = |e: HookEvent| draft.and_then(|d| d.events.as_ref()).is_none_or(|events| events.contains(&e));
    let scope = viewer.scope_for(Action::ManageProjects);
    let projects = state.storage.list_projects(&scope).await?;
    let hooks = state.storage.list_hooks(&scope).await?;
    let body = html! {
        h1 { "Webhooks" }
        p.muted {
            "A hook is told when an attempt's verdict, a report's route or a report's status changes in its project. "
            strong { "signed" } " posts the change as JSON with " code { "X-Failpass-Signature: t=…,v1=…" }
            " (HMAC-SHA256 of the time, a dot and the body, under the hook's secret); "
            strong { "slack" } " and " strong { "discord" } " post one line of text. "
            "Failed tries are retried after 5 s, 10 s, 20 s … eight in all. Imports tell no one. "
            "How to check a signature: " code { "docs/agents.md" } ", “Webhooks”."
        }
        @if let Some(hook) = created {
            section.panel.created role="status" {
                h2 { "New hook for " (hook.project) }
                p { "Its secret, to check signatures with. Copy it now: failpass will not show it again." }
                pre data-testid="new-secret" { (hook.secret.as_deref().unwrap_or("")) }
            }
        }
        @if let Some(e) = error { p.state.state-error role="alert" data-testid="hook-error" { (e) } }
        section.panel {
            h2 { "New hook" }
            @if projects.is_empty() {
                p.state.state-empty { "No project yet." }
            } @else {
                form.stack method="post" action="/settings/hooks" {
                    label.field { span { "Project" } select name="project" { @for p in &projects {
                        option value=(p.slug) selected[draft.is_some_and(|d| d.project == p.slug)] { (p.slug) }
                    } } }
                    label.field { span { "Address" } input type="url" name="url" required maxlength=(crate::hooks::MAX_URL)
                        placeholder="https://hooks.example.org/failpass" value=[draft.map(|d| d.url.as_str())]; }
                    label.field { span { "Format" } select name="format" {
                        @for (f, label) in [(HookFormat::Signed, "signed: JSON, with a signature header"),
                                            (HookFormat::Slack, "slack: one line, for a Slack incoming webhook"),
                                            (HookFormat::Discord, "discord: one line, for a Discord webhook")] {
                            option value=(f.as_str()) selected[f == chosen_format] { (label) }
                        }
                    } }
                    fieldset.checks {
                        legend { "Tell it of" }
                        label.check { input type="checkbox" name="verdict" value="on" checked[tells(HookEvent::Verdict)]; " verdict changes" }
                        label.check { input type="checkbox" name="route" value="on" checked[tells(HookEvent::Route)]; " route changes" }
                        label.check { input type="checkbox" name="status" value="on" checked[tells(HookEvent::Status)]; " status changes" }
                    }
                    button type="submit" data-testid="create-hook" { "Add hook" }
                }
            }
        }
        section.panel {
            h2 { "Hooks" }
            @if hooks.is_empty() {
                p.state.state-empty { "No hooks yet." }
            } @else {
                div.table-scroll { table data-testid="hooks" {
                    thead { tr { th scope="col" { "Hook" } th scope="col" { "Project" } th scope="col" { "Address" } th scope="col" { "Format" }
                        th scope="col" { "Events" } th scope="col" { "Deliveries" } th scope="col" { "Created" } th scope="col" { span.visually-hidden { "Action" } } } }
                    tbody { @for h in &hooks {
                        tr {
                            td { a href=(format!("/settings/hooks/{}", h.id)) { "#" (h.id) " log" } }
                            td { (h.project) }
                            td.wrap { code { (h.url) } }
                            td { (h.format) }
                            td { (h.events.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", ")) }
                            td { (h.delivered) " delivered, " (h.pending) " pending, " (h.failed) " failed" }
                            td { (when(Some(h.created_at))) " by " (h.created_by) }
                            td { @if let Some(r) = h.removed_at { "removed " (when(Some(r))) } @else {
                                // A removal asks first: the box must be ticked (no script needed).
                                form.inline method="post" action=(format!("/settings/hooks/{}/test", h.id)) {
                                    button.link-button type="submit" data-testid="send-test" { "Send test" }
                                }
                                form.stack.confirm method="post" action=(format!("/settings/hooks/{}/remove", h.id)) {
                                    label.check { input type="checkbox" name="confirm" value="yes" required data-testid="confirm-remove";
                                        " stop delivering to this address" }
                                    button.danger type="submit" data-testid="remove-hook" { "Remove" }
                                }
                            } }
                        }
                    } }
                } }
            }
        }
    };
    Ok(page(status, "Webhooks", viewer, body))
}

#[utoipa::path(
    get, path = "/settings/hooks", tag = "pages",
    responses((status = 200, description = "The webhooks page (admins).", content_type = "text/html", body = String),
              (status = 303, description = "Anonymous: on to sign in."))
)]
pub async fn hooks_page(State(state): State<AppState>, viewer: Viewer) -> ApiResult<Response> {
    hooks_view(&state, &viewer, None, None, StatusCode::OK, None).await
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct HookForm {
    project: String,
    url: String,
    format: String,
    #[serde(default)]
    verdict: Option<String>,
    #[serde(default)]
    route: Option<String>,
    #[serde(default)]
    status: Option<String>,
}

#[utoipa::path(
    post, path = "/settings/hooks", tag = "pages",
    request_body(content = HookForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 201, description = "The webhooks page, the new hook's secret shown once.", content_type = "text/html", body = String),
              (status = 400, description = "The page again, saying what was wrong.", content_type = "text/html", body = String))
)]
pub async fn create_hook_form(
    State(state): State<AppState>,
    viewer: Viewer,
    form: Result<Form<HookForm>, FormRejection>,
) -> ApiResult<Response> {
    let form = match form {
        Ok(Form(form)) => form,
        Err(e) => {
            let m = format!("the form did not arrive whole: {}", e.body_text());
            return hooks_view(&state, &viewer, None, Some(&m), StatusCode::BAD_REQUEST, None).await;
        }
    };
    let Ok(format) = form.format.parse::<HookFormat>() else {
        let m = format!("format: `{}` is not one of signed, slack, discord", form.format);
        return hooks_view(&state, &viewer, None, Some(&m), StatusCode::BAD_REQUEST, None).await;
    };
    let events =
        [(HookEvent::Verdict, &form.verdict), (HookEvent::Route, &form.route), (HookEvent::Status, &form.status)]
            .into_iter()
            .filter(|(_, on)| on.is_some())
            .map(|(e, _)| e)
            .collect();
    let req = CreateHookRequest { project: form.project, url: form.url, format: Some(format), events: Some(events) };
    let draft = req.clone();
    let (m, status) = match make_hook(&state, &viewer, req).await {
        Ok(hook) => return hooks_view(&state, &viewer, Some(&hook), None, StatusCode::CREATED, None).await,
        Err(ApiError::BadRequest(m)) => (m, StatusCode::BAD_REQUEST),
        Err(ApiError::Forbidden(m)) => (m, StatusCode::FORBIDDEN),
        Err(e) => return Err(e),
    };
    hooks_view(&state, &viewer, None, Some(&m), status, Some(&draft)).await
}

#[utoipa::path(
    post, path = "/settings/hooks/{id}/remove", tag = "pages",
    params(("id" = i64, Path, example = 1, description = "The hook's id.")),
    responses((status = 303, description = "Removed: back to the webhooks page."))
)]
pub async fn remove_hook_form(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Response> {
    remove_hook(State(state), viewer, ApiPath(id)).await?;
    Ok(Redirect::to("/settings/hooks").into_response())
}

#[utoipa::path(
    post, path = "/settings/hooks/{id}/test", tag = "pages",
    params(("id" = i64, Path, example = 1, description = "The hook's id.")),
    responses((status = 303, description = "Queued: on to the hook's log, where its answer shows."),
              (status = 409, description = "The hook was removed: its log, saying so.", content_type = "text/html", body = String))
)]
pub async fn test_hook_form(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Response> {
    let hook = managed_hook(&state, &viewer, id).await?;
    let now = chrono::Utc::now();
    let body = crate::hooks::test_body(hook.format, hook.id, &hook.project, now);
    match state.storage.send_test(hook.id, &body, now).await {
        Ok(d) => {
            tracing::info!(hook = hook.id, delivery = d.id, by = %viewer.name(), "test delivery queued");
            Ok(Redirect::to(&format!("/settings/hooks/{}", hook.id)).into_response())
        }
        Err(crate::db::StorageError::Invalid { message, .. }) => {
            hook_log_view(&state, &viewer, id, Some(&message)).await
        }
        Err(e) => Err(e.into()),
    }
}

#[utoipa::path(
    get, path = "/settings/hooks/{id}", tag = "pages",
    params(("id" = i64, Path, example = 1, description = "The hook's id.")),
    responses((status = 200, description = "A hook's delivery log, each with a button to send it again.", content_type = "text/html", body = String))
)]
pub async fn hook_log_page(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Response> {
    hook_log_view(&state, &viewer, id, None).await
}

/// A hook's log, with what was wrong with the last request if anything.
async fn hook_log_view(state: &AppState, viewer: &Viewer, id: i64, error: Option<&str>) -> ApiResult<Response> {
    let hook = managed_hook(state, viewer, id).await?;
    let deliveries = state.storage.hook_deliveries(id, LOG_LIMIT).await?;
    let status = if error.is_some() { StatusCode::CONFLICT } else { StatusCode::OK };
    let body = html! {
        p { a href="/settings/hooks" { "← Webhooks" } }
        h1 { "Hook #" (hook.id) " of " (hook.project) }
        @if let Some(e) = error { p.state.state-error role="alert" data-testid="redeliver-error" { (e) } }
        p.muted { code { (hook.url) } " · " (hook.format) " · "
            (hook.events.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", "))
            @if let Some(r) = hook.removed_at { " · removed " (when(Some(r))) } }
        @if hook.removed_at.is_none() {
            // A test delivery: the receiver's answer shows in the log below.
            form.inline method="post" action=(format!("/settings/hooks/{}/test", hook.id)) {
                button type="submit" data-testid="send-test" { "Send a test delivery" }
            }
        }
        section.panel {
            h2 { "Deliveries" }
            @if deliveries.is_empty() {
                p.state.state-empty { "None yet: a verdict, route or status change in " (hook.project) " will be the first." }
            } @else {
                p.muted { "The last " (LOG_LIMIT) ", newest first." }
                div.table-scroll { table data-testid="deliveries" {
                    thead { tr { th scope="col" { "Delivery" } th scope="col" { "Event" } th scope="col" { "Queued" } th scope="col" { "State" }
                        th scope="col" { "Tries" } th scope="col" { "Answer" } th scope="col" { "Body" } th scope="col" { span.visually-hidden { "Action" } } } }
                    tbody { @for d in &deliveries {
                        tr data-state=(d.state) {
                            td { "#" (d.id) @if let Some(of) = d.redelivery_of { br; span.muted { "again of #" (of) } } }
                            td { (d.event) @if let Some(r) = d.report_id { br; a href=(format!("/reports/{r}")) { "report " (r) } } }
                            td { (when(Some(d.created_at))) }
                            td data-testid="delivery-state" { (d.state) }
                            td { (d.tries) @if let Some(t) = d.last_try_at { br; span.muted { "last " (when(Some(t))) } } }
                            td.wrap {
                                @if let Some(code) = d.status_code { strong data-testid="status-code" { (code) } " " }
                                @if let Some(ms) = d.duration_ms { span.muted { (ms) " ms" } }
                                @if let Some(e) = &d.error { br; span.state-error { (e) } }
                                @if let Some(r) = d.response.as_deref().filter(|r| !r.is_empty()) {
                                    details { summary { "answer" } pre.output { (r) } }
                                }
                            }
                            td.wrap { details { summary { "body" } pre.output { (d.body) } } }
                            td { @if hook.removed_at.is_none() {
                                form.inline method="post" action=(format!("/settings/deliveries/{}/redeliver", d.id)) {
                                    button.link-button type="submit" data-testid="redeliver" { "Redeliver" }
                                }
                            } }
                        }
                    } }
                } }
            }
        }
    };
    Ok(page(status, &format!("Hook #{}", hook.id), viewer, body))
}

#[utoipa::path(
    post, path = "/settings/deliveries/{id}/redeliver", tag = "pages",
    params(("id" = i64, Path, example = 1, description = "The delivery's id.")),
    responses((status = 303, description = "Queued: back to the hook's log."),
              (status = 409, description = "Still being sent, or its hook removed: the log again, saying so.", content_type = "text/html", body = String))
)]
pub async fn redeliver_form(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Response> {
    match send_again(&state, &viewer, id).await {
        Ok(again) => Ok(Redirect::to(&format!("/settings/hooks/{}", again.hook_id)).into_response()),
        // Still being sent, or its hook removed: the log again, saying so.
        Err(ApiError::Conflict(m) | ApiError::BadRequest(m)) => {
            let delivery = state.storage.get_delivery(id).await?.ok_or_else(|| ApiError::NotFound(m.clone()))?;
            hook_log_view(&state, &viewer, delivery.hook_id, Some(&m)).await
        }
        Err(e) => Err(e),
    }
}
