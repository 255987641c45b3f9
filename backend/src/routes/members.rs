//! A project's members, set up in the browser (issue 35 item 3): the
//! project's set-up page lists them; admins, and maintainers of the
//! project, add a member with a role or take one away. Each form answers
//! with a redirect back to the page, or the page again saying why not.

use axum::Form;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::response::{IntoResponse, Redirect, Response};
use failpass_shared::model::ProjectRole;
use maud::html;
use serde::Deserialize;

use super::AppState;
use crate::auth::{Action, Viewer};
use crate::error::{ApiError, ApiPath, ApiResult};

/// The members form: a user's name and the role to give (`viewer` or `maintainer`).
#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(default)]
pub struct MemberForm {
    user: String,
    role: String,
}

/// `POST /settings/projects/{owner}/{name}/members`
#[utoipa::path(
    post, path = "/settings/projects/{owner}/{name}/members", tag = "pages",
    params(("owner" = String, Path, example = "pytorch"), ("name" = String, Path, example = "pytorch")),
    request_body(content = MemberForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 303, description = "Added: back to the project's set-up page."),
              (status = 400, description = "Refused: the page again, saying why.", content_type = "text/html", body = String))
)]
pub async fn add_member(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath((owner, name)): ApiPath<(String, String)>,
    form: Result<Form<MemberForm>, FormRejection>,
) -> ApiResult<Response> {
    let slug = format!("{owner}/{name}");
    let form = match form {
        Ok(Form(f)) => f,
        Err(e) => {
            return refuse(&state, &viewer, &slug, format!("the form did not arrive whole: {}", e.body_text())).await;
        }
    };
    let role = match form.role.as_str() {
        "viewer" => ProjectRole::Viewer,
        "maintainer" => ProjectRole::Maintainer,
        other => return refuse(&state, &viewer, &slug, format!("role: `{other}` is not viewer or maintainer")).await,
    };
    change(&state, &viewer, &slug, form.user.trim(), Some(role)).await
}

/// `POST /settings/projects/{owner}/{name}/members/remove`
#[utoipa::path(
    post, path = "/settings/projects/{owner}/{name}/members/remove", tag = "pages",
    params(("owner" = String, Path, example = "pytorch"), ("name" = String, Path, example = "pytorch")),
    request_body(content = MemberForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 303, description = "Taken away: back to the project's set-up page."),
              (status = 400, description = "Refused: the page again, saying why.", content_type = "text/html", body = String))
)]
pub async fn remove_member(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath((owner, name)): ApiPath<(String, String)>,
    form: Result<Form<MemberForm>, FormRejection>,
) -> ApiResult<Response> {
    let slug = format!("{owner}/{name}");
    let form = match form {
        Ok(Form(f)) => f,
        Err(e) => {
            return refuse(&state, &viewer, &slug, format!("the form did not arrive whole: {}", e.body_text())).await;
        }
    };
    change(&state, &viewer, &slug, form.user.trim(), None).await
}

/// Gives `user` `role` in `slug` (or takes theirs away), if `viewer` may.
async fn change(
    state: &AppState,
    viewer: &Viewer,
    slug: &str,
    user: &str,
    role: Option<ProjectRole>,
) -> ApiResult<Response> {
    // A project the viewer may not see is missing to them.
    state
        .storage
        .get_project(slug, &viewer.scope())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("project `{slug}` not found")))?;
    if let Err(e) = viewer.require(Action::ManageMembers, slug) {
        return Ok(super::pages::refused(viewer, &e));
    }
    if user.is_empty() {
        return refuse(state, viewer, slug, "user: give an account name".into()).await;
    }
    if state.storage.user_by_name(user).await?.is_none() {
        return refuse(state, viewer, slug, format!("user: there is no account `{user}`; an admin adds it first"))
            .await;
    }
    // Taking away a role someone does not have changes nothing: done, as asked.
    state.storage.set_membership(user, slug, role).await?;
    tracing::info!(project = slug, user, role = ?role, by = %viewer.name(), "membership changed");
    Ok(Redirect::to(&format!("/settings/projects/{slug}")).into_response())
}

async fn refuse(state: &AppState, viewer: &Viewer, slug: &str, why: String) -> ApiResult<Response> {
    super::setup::project_page_saying(state, viewer, slug, why).await
}

/// The new-account form (admins): a name, and whether it is an admin.
#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(default)]
pub struct UserForm {
    name: String,
    /// `on` when the box "an administrator" is ticked.
    admin: String,
}

/// `GET /settings/users`
#[utoipa::path(
    get, path = "/settings/users", tag = "pages",
    responses((status = 200, description = "Every account with its roles, and the new-account form (admins).", content_type = "text/html", body = String),
              (status = 303, description = "Anonymous: on to sign in."))
)]
pub async fn users_page(State(state): State<AppState>, viewer: Viewer) -> ApiResult<Response> {
    users_view(&state, &viewer, axum::http::StatusCode::OK, None, None).await
}

/// `POST /settings/users`: makes an account with a password shown once.
#[utoipa::path(
    post, path = "/settings/users", tag = "pages",
    request_body(content = UserForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 201, description = "Made: the page shows its password, once.", content_type = "text/html", body = String),
              (status = 400, description = "Refused: the page again, saying why.", content_type = "text/html", body = String))
)]
pub async fn create_user(
    State(state): State<AppState>,
    viewer: Viewer,
    form: Result<Form<UserForm>, FormRejection>,
) -> ApiResult<Response> {
    use axum::http::StatusCode;
    let form = match form {
        Ok(Form(f)) => f,
        Err(e) => {
            let why = format!("the form did not arrive whole: {}", e.body_text());
            return users_view(&state, &viewer, StatusCode::BAD_REQUEST, None, Some(&why)).await;
        }
    };
    let name = form.name.trim();
    if let Err(e) = crate::auth::check_user_name(name) {
        return users_view(&state, &viewer, StatusCode::BAD_REQUEST, None, Some(&e.to_string())).await;
    }
    if state.storage.user_by_name(name).await?.is_some() {
        let why = format!("user name: `{name}` is taken; `failpass user passwd {name}` sets a new password");
        return users_view(&state, &viewer, StatusCode::BAD_REQUEST, None, Some(&why)).await;
    }
    // 24 hex digits from the OS's randomness, shown once and stored hashed.
    let password: String = crate::auth::tokens::generate()
        .map_err(|e| ApiError::Internal(e.context("making a password")))?
        .chars()
        .skip(3)
        .take(24)
        .collect();
    let hash = crate::auth::password::hash(&password).await.map_err(ApiError::Internal)?;
    let admin = form.admin == "on";
    state.storage.create_user(name, &hash, admin).await?;
    tracing::info!(user = name, admin, by = %viewer.name(), "account made in the browser");
    users_view(&state, &viewer, StatusCode::CREATED, Some((name, &password)), None).await
}

async fn users_view(
    state: &AppState,
    viewer: &Viewer,
    status: axum::http::StatusCode,
    made: Option<(&str, &str)>,
    error: Option<&str>,
) -> ApiResult<Response> {
    let users = state.storage.list_users().await?;
    let body = html! {
        p.muted { a href="/settings/projects" { "Set-up" } " / accounts" }
        h1 { "Accounts" }
        @if let Some((name, password)) = made {
            div.state.state-ok role="status" data-testid="new-password" {
                p { "Account " strong { (name) } " made. Its password, shown this once (pass it on; "
                    (name) " signs in at " code { "/signin" } "):" }
                p { code data-testid="password" { (password) } }
            }
        }
        @if let Some(e) = error { p.state.state-error role="alert" data-testid="users-error" { (e) } }
        section.panel {
            h2 { "A new account" }
            form.stack method="post" action="/settings/users" data-testid="add-user" {
                label.field { span { "Name (letters, digits, . _ -)" } input type="text" name="name" required maxlength="64" pattern="[A-Za-z0-9._-]+"; }
                label.check { input type="checkbox" name="admin" value="on"; " an administrator (every project, environments, visibility, accounts)" }
                button type="submit" { "Make the account" }
            }
            p.muted { "A project's maintainers then add it to their project on the project's set-up page." }
        }
        section.panel data-testid="users" {
            h2 { "Every account" }
            div.table-wrap { table.chart-table {
                thead { tr { th { "Name" } th { "Roles" } th { "Since" } } }
                tbody { @for (u, ms) in &users {
                    tr data-testid="user" data-name=(u.name) {
                        td { (u.name) @if u.admin { " " span.badge { "admin" } } }
                        td { @for (i, m) in ms.iter().enumerate() { @if i > 0 { ", " } (m.role.as_str()) " of " (m.project) } }
                        td { (u.created_at.format("%Y-%m-%d")) }
                    }
                } }
            } }
        }
    };
    Ok(super::pages::page(status, "Accounts", viewer, body))
}
