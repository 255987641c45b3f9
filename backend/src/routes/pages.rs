//! The account pages, rendered on the server as plain HTML (maud): signing
//! in and out, and a project's API tokens. They need no WebAssembly (so they
//! work with scripts off and cost the dashboard's bundle nothing) and post
//! ordinary forms, which `security::guard` holds to this server's origin.

use std::net::SocketAddr;

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use failpass_shared::api::session::Me;
use failpass_shared::model::TokenScope;
use maud::{Markup, html};
use serde::Deserialize;
use tower_sessions::Session;

use super::AppState;
use crate::auth::access::Action;
use crate::auth::{SESSION_USER, Viewer, sessions, signin, tokens};
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult};

/// `GET /api/v1/session`: who the caller is, for the dashboard's header and buttons.
#[utoipa::path(
    get, path = "/api/v1/session", tag = "session",
    responses((status = 200, description = "Who you are.", body = failpass_shared::api::session::Me))
)]
pub async fn session(State(state): State<AppState>, viewer: Viewer) -> ApiResult<ApiJson<Me>> {
    Ok(ApiJson(super::frame::viewer_me(&state, &viewer).await))
}

/// Where an anonymous visitor of `path` is sent: the sign-in page, then back.
pub fn to_sign_in(path: &str) -> Redirect {
    let next = failpass_shared::api::query::to_query_string(&[("next", path.to_owned())]);
    Redirect::to(&format!("/signin?{next}"))
}

/// A `next` that stays on this site (`/…`, never `//host` or `/\host`).
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n.starts_with("//")
                && !n.starts_with("/\\")
                && !n.chars().any(char::is_control) =>
        {
            n.to_owned()
        }
        _ => "/".to_owned(),
    }
}

pub(crate) use super::frame::page;

/// A page the signed-in viewer may not use: why, as a page (not JSON).
pub fn refused(viewer: &Viewer, error: &ApiError) -> Response {
    let body = html! {
        section.panel.narrow {
            h1 { "Not for your account" }
            p.state.state-error role="alert" data-testid="refused" { (error.to_string()) }
            p { a href="/" { "Back to the dashboard" } }
        }
    };
    page(StatusCode::FORBIDDEN, "Not allowed", viewer, body)
}

#[derive(Deserialize)]
pub struct NextQuery {
    next: Option<String>,
}

fn signin_form(next: &str, name: &str, error: Option<&str>) -> Markup {
    html! {
        section.panel.narrow {
            h1 { "Sign in" }
            @if let Some(e) = error { p.state.state-error role="alert" data-testid="signin-error" { (e) } }
            form.stack method="post" action="/signin" {
                input type="hidden" name="next" value=(next);
                label.field { span { "Name" } input type="text" name="name" value=(name) autocomplete="username" required autofocus; }
                label.field { span { "Password" } input type="password" name="password" autocomplete="current-password" required; }
                button type="submit" data-testid="signin-submit" { "Sign in" }
            }
            p.muted { "Without an account you can read the public projects. Accounts are made by an administrator (" code { "failpass user add" } ")." }
        }
    }
}

/// `GET /signin`
#[utoipa::path(
    get, path = "/signin", tag = "pages",
    params(("next" = Option<String>, Query, description = "Where to go after signing in (a path on this site).")),
    responses((status = 200, description = "The sign-in form.", content_type = "text/html", body = String))
)]
pub async fn signin_page(viewer: Viewer, Query(q): Query<NextQuery>) -> Response {
    let next = safe_next(q.next.as_deref());
    let body = match &viewer.principal {
        crate::auth::Principal::User { name, .. } => html! {
            section.panel.narrow {
                h1 { "Signed in" }
                p { "You are signed in as " strong { (name) } ". " a href=(next) { "Continue" } }
            }
        },
        _ => signin_form(&next, "", None),
    };
    page(StatusCode::OK, "Sign in", &viewer, body)
}

/// The peer's address when the server was started with it (it always is;
/// a router driven without a socket has none).
pub struct PeerAddr(pub Option<SocketAddr>);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for PeerAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(PeerAddr(parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0)))
    }
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct SignInForm {
    name: String,
    password: String,
    next: Option<String>,
}

/// `POST /signin`: a new session id on success (no fixation), 401 or 429 with the form again.
#[utoipa::path(
    post, path = "/signin", tag = "pages",
    request_body(content = SignInForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 303, description = "Signed in: on to `next` (a new session cookie)."),
              (status = 401, description = "Wrong name or password: the form again.", content_type = "text/html", body = String),
              (status = 429, description = "Too many failed sign-ins; `Retry-After` says when to try again.", content_type = "text/html", body = String))
)]
pub async fn sign_in(
    State(state): State<AppState>,
    session: Session,
    headers: HeaderMap,
    PeerAddr(peer): PeerAddr,
    form: Result<Form<SignInForm>, FormRejection>,
) -> Response {
    let anonymous = Viewer::anonymous();
    let Form(form) = match form {
        Ok(f) => f,
        Err(e) => {
            return page(
                StatusCode::BAD_REQUEST,
                "Sign in",
                &anonymous,
                signin_form("/", "", Some(&format!("The form did not arrive whole: {}", e.body_text()))),
            );
        }
    };
    let next = safe_next(form.next.as_deref());
    if let Some(field) =
        [("name", &form.name), ("password", &form.password)].iter().find(|(_, v)| v.contains('\0')).map(|(f, _)| *f)
    {
        return page(
            StatusCode::BAD_REQUEST,
            "Sign in",
            &anonymous,
            signin_form(&next, "", Some(&crate::input::nul_message(field))),
        );
    }
    let address = crate::security::client_address(&state.security, &headers, peer);
    match signin::sign_in(state.storage.as_ref(), &form.name, &form.password, &address).await {
        Ok(user) => {
            let started = async {
                session.cycle_id().await?;
                session.insert(SESSION_USER, user.id).await
            };
            if let Err(e) = started.await {
                return sessions::unavailable(e).into_response();
            }
            tracing::info!(user = %user.name, "signed in");
            Redirect::to(&next).into_response()
        }
        Err(e) => {
            let status = match &e {
                ApiError::TooManyRequests(..) => StatusCode::TOO_MANY_REQUESTS,
                ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
                _ => return e.into_response(),
            };
            let mut res = page(status, "Sign in", &anonymous, signin_form(&next, &form.name, Some(&e.to_string())));
            if let ApiError::TooManyRequests(_, seconds) = e {
                res.headers_mut().insert(axum::http::header::RETRY_AFTER, seconds.into());
            }
            res
        }
    }
}

/// `POST /signout`: the session is deleted and its cookie cleared.
#[utoipa::path(
    post, path = "/signout", tag = "pages",
    responses((status = 303, description = "Signed out: on to the dashboard."))
)]
pub async fn sign_out(session: Session) -> Response {
    if let Err(e) = session.flush().await {
        return sessions::unavailable(e).into_response();
    }
    Redirect::to("/").into_response()
}

/// The projects whose tokens this viewer manages, as (id, slug).
async fn managed_projects(state: &AppState, viewer: &Viewer) -> ApiResult<Vec<(i64, String)>> {
    let projects = state.storage.list_projects(&viewer.scope_for(Action::ManageTokens)).await?;
    Ok(projects.into_iter().map(|p| (p.id, p.slug)).collect())
}

pub(crate) fn when(t: Option<chrono::DateTime<chrono::Utc>>) -> String {
    t.map_or_else(|| "never".to_owned(), |t| t.format("%Y-%m-%d %H:%M").to_string())
}

async fn tokens_view(
    state: &AppState,
    viewer: &Viewer,
    created: Option<(&str, &str)>,
    error: Option<&str>,
    status: StatusCode,
) -> ApiResult<Response> {
    let projects = managed_projects(state, viewer).await?;
    let ids: Vec<i64> = projects.iter().map(|(id, _)| *id).collect();
    let list = state.storage.list_tokens(if viewer.is_admin() { None } else { Some(&ids) }).await?;
    let now = chrono::Utc::now();
    let body = html! {
        h1 { "API tokens" }
        p.muted {
            "Tokens let agents and CI talk to failpass: send one as " code { "Authorization: Bearer …" } ". "
            strong { "agent" } " creates attempts and runs in its project; " strong { "ci" } " also imports and uploads JUnit; "
            strong { "read" } " reads. A token never reaches another project."
        }
        @if let Some((token, project)) = created {
            section.panel.created role="status" {
                h2 { "New token for " (project) }
                p { "Copy it now: failpass keeps only its hash and will not show it again." }
                pre data-testid="new-token" { (token) }
            }
        }
        @if let Some(e) = error { p.state.state-error role="alert" data-testid="token-error" { (e) } }
        section.panel {
            h2 { "New token" }
            @if projects.is_empty() {
                p.state.state-empty { "You maintain no project." }
            } @else {
                form.stack method="post" action="/settings/tokens" {
                    label.field { span { "Project" } select name="project" { @for (_, slug) in &projects { option value=(slug) { (slug) } } } }
                    label.field { span { "Scope" } select name="scope" {
                        option value="agent" { "agent: attempts and runs" }
                        option value="ci" { "ci: attempts, runs, imports, JUnit" }
                        option value="read" { "read: reads only" }
                    } }
                    label.field { span { "Name" } input type="text" name="name" required maxlength="100" placeholder="e.g. nightly CI"; }
                    label.field { span { "Expires after (days, empty for never)" } input type="number" name="expires" min="1" max=(tokens::MAX_DAYS); }
                    button type="submit" data-testid="create-token" { "Create token" }
                }
            }
        }
        section.panel {
            h2 { "Tokens" }
            @if list.is_empty() {
                p.state.state-empty { "No tokens yet." }
            } @else {
                div.table-scroll { table data-testid="tokens" {
                    thead { tr { th scope="col" { "Token" } th scope="col" { "Name" } th scope="col" { "Scope" } th scope="col" { "Project" }
                        th scope="col" { "Created" } th scope="col" { "Last used" } th scope="col" { "State" } th scope="col" { span.visually-hidden { "Action" } } } }
                    tbody { @for t in &list {
                        tr {
                            td { code { (t.prefix) "…" } }
                            td { (t.name) }
                            td { (t.scope) }
                            td { (t.project.as_deref().or(t.user.as_deref().map(|_| "(personal)")).unwrap_or("")) }
                            td { (when(Some(t.created_at))) " by " (t.created_by) }
                            td { (when(t.last_used_at)) }
                            td { @if t.revoked_at.is_some() { "revoked " (when(t.revoked_at)) }
                                 @else if !t.is_live(now) { "expired " (when(t.expires_at)) }
                                 @else if let Some(e) = t.expires_at { "expires " (when(Some(e))) }
                                 @else { "live" } }
                            td { @if t.revoked_at.is_none() {
                                // A revoked token cannot be brought back: the box must be ticked.
                                form.inline.confirm method="post" action=(format!("/settings/tokens/{}/revoke", t.id)) {
                                    label.check { input type="checkbox" name="confirm" value="yes" required data-testid="confirm-revoke"; " its callers stop" }
                                    button.danger type="submit" data-testid="revoke" { "Revoke" }
                                }
                            } }
                        }
                    } }
                } }
            }
        }
    };
    Ok(page(status, "API tokens", viewer, body))
}

/// `GET /settings/tokens`
#[utoipa::path(
    get, path = "/settings/tokens", tag = "pages",
    responses((status = 200, description = "Your projects' tokens.", content_type = "text/html", body = String),
              (status = 303, description = "Anonymous: on to sign in."))
)]
pub async fn tokens_page(State(state): State<AppState>, viewer: Viewer) -> ApiResult<Response> {
    tokens_view(&state, &viewer, None, None, StatusCode::OK).await
}

#[derive(Deserialize, utoipa::ToSchema)]
pub struct TokenForm {
    project: String,
    scope: String,
    name: String,
    #[serde(default)]
    expires: String,
}

/// `POST /settings/tokens`: the new token is shown once on the page.
#[utoipa::path(
    post, path = "/settings/tokens", tag = "pages",
    request_body(content = TokenForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "The tokens page, with the new token shown once.", content_type = "text/html", body = String))
)]
pub async fn create_token(
    State(state): State<AppState>,
    viewer: Viewer,
    form: Result<Form<TokenForm>, FormRejection>,
) -> ApiResult<Response> {
    let Form(form) =
        form.map_err(|e| ApiError::BadRequest(format!("the form did not arrive whole: {}", e.body_text())))?;
    for (field, value) in
        [("project", &form.project), ("scope", &form.scope), ("name", &form.name), ("expires", &form.expires)]
    {
        if value.contains('\0') {
            return refuse(&state, &viewer, crate::input::nul_message(field)).await;
        }
    }
    let scope: TokenScope = match form.scope.parse() {
        Ok(TokenScope::User) | Err(_) => {
            return refuse(&state, &viewer, format!("scope: `{}` is not one of agent, ci, read", form.scope)).await;
        }
        Ok(s) => s,
    };
    let expires = match form.expires.trim() {
        "" => None,
        n => match n.parse::<u32>() {
            Ok(d) => Some(d),
            Err(_) => return refuse(&state, &viewer, format!("expires: `{n}` is not a number of days")).await,
        },
    };
    let Some(project) = state.storage.get_project(&form.project, &viewer.scope()).await? else {
        return refuse(&state, &viewer, format!("project: `{}` does not exist", form.project)).await;
    };
    if let Err(e) = viewer.require(Action::ManageTokens, &project.slug) {
        return tokens_view(&state, &viewer, None, Some(&e.to_string()), StatusCode::FORBIDDEN).await;
    }
    let req = tokens::TokenRequest {
        name: form.name,
        scope,
        project_id: Some(project.id),
        user_id: None,
        created_by: viewer.name(),
        expires_in_days: expires,
    };
    match tokens::create(state.storage.as_ref(), req).await {
        Ok((token, record)) => {
            tracing::info!(token = record.id, project = %project.slug, scope = %scope, by = %viewer.name(), "token created");
            tokens_view(&state, &viewer, Some((&token, &project.slug)), None, StatusCode::CREATED).await
        }
        Err(ApiError::BadRequest(m)) => refuse(&state, &viewer, m).await,
        Err(e) => Err(e),
    }
}

/// The token page again, saying what was wrong with the form.
async fn refuse(state: &AppState, viewer: &Viewer, message: String) -> ApiResult<Response> {
    tokens_view(state, viewer, None, Some(&message), StatusCode::BAD_REQUEST).await
}

/// `POST /settings/tokens/{id}/revoke`
#[utoipa::path(
    post, path = "/settings/tokens/{id}/revoke", tag = "pages",
    params(("id" = i64, Path, example = 1, description = "The token's id.")),
    responses((status = 200, description = "The tokens page, the token revoked.", content_type = "text/html", body = String))
)]
pub async fn revoke_token(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Response> {
    let missing = || ApiError::NotFound(format!("token {id} not found"));
    let token = state.storage.get_token(id).await?.ok_or_else(missing)?;
    match &token.project {
        Some(slug) => {
            // A token of a project the caller cannot see is as missing as one that does not exist.
            state.storage.get_project(slug, &viewer.scope()).await?.ok_or_else(missing)?;
            viewer.require(Action::ManageTokens, slug)?;
        }
        None if viewer.is_admin() => {}
        None => return Err(missing()),
    }
    state.storage.revoke_token(id, chrono::Utc::now()).await?;
    tracing::info!(token = id, by = %viewer.name(), "token revoked");
    Ok(Redirect::to("/settings/tokens").into_response())
}

#[cfg(test)]
mod tests {
    #[test]
    fn next_stays_on_this_site() {
        use super::safe_next;
        assert_eq!(safe_next(Some("/reports/3?x=1")), "/reports/3?x=1");
        for bad in ["//evil.example/", "/\\evil.example", "https://evil.example/", "javascript:alert(1)", "/a\nb"] {
            assert_eq!(safe_next(Some(bad)), "/", "{bad}");
        }
        assert_eq!(safe_next(None), "/");
    }
}
