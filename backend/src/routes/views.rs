//! Saved views (issue 35 item 2): a person's named filter sets. A view is
//! an address of the dashboard (a page and its filters), so it opens as a
//! link and is shared as one; `/settings/views` lists them, saves the
//! address it is given under a name, and forgets one.

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;

use super::AppState;
use super::pages::{page, to_sign_in};
use crate::auth::{Principal, Viewer};
use crate::error::{ApiError, ApiPath, ApiResult};

/// The dashboard's pages a view may open.
const PAGES: [&str; 6] = ["/", "/queue", "/regimes", "/cost", "/oracles", "/runners"];

#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(default)]
pub struct ViewForm {
    /// What to call it (1 to 80 characters).
    name: String,
    /// The dashboard's address it opens: `/queue?status=open&assignee=me`.
    address: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct ViewsQuery {
    /// An address to save (the dashboard's "Save this view" link).
    address: Option<String>,
}

/// The person a view belongs to, or why there is none.
fn person(viewer: &Viewer) -> Result<i64, Box<Response>> {
    match &viewer.principal {
        Principal::User { id, .. } => Ok(*id),
        Principal::Anonymous => Err(Box::new(to_sign_in("/settings/views").into_response())),
        _ => Err(Box::new(super::pages::refused(
            viewer,
            &ApiError::Forbidden("saved views belong to a person: sign in".into()),
        ))),
    }
}

/// An address of the dashboard, or what is wrong with it.
fn check_address(address: &str) -> Result<(), String> {
    let address = address.trim();
    let path = address.split('?').next().unwrap_or_default();
    if address.len() > 2000 || address.chars().any(char::is_control) || !PAGES.contains(&path) {
        return Err(format!(
            "address: `{address}` is not one of the dashboard's pages ({}), with or without its filters",
            PAGES.join(", ")
        ));
    }
    Ok(())
}

/// `GET /settings/views`
#[utoipa::path(
    get, path = "/settings/views", tag = "pages",
    params(("address" = Option<String>, Query, example = "/queue?status=open", description = "An address to save, filled in the form.")),
    responses((status = 200, description = "Your saved views, as links, and the form to save one.", content_type = "text/html", body = String),
              (status = 303, description = "Anonymous: on to sign in."))
)]
pub async fn views_page(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(q): Query<ViewsQuery>,
) -> ApiResult<Response> {
    let user = match person(&viewer) {
        Ok(u) => u,
        Err(r) => return Ok(*r),
    };
    views_view(&state, &viewer, user, StatusCode::OK, q.address.as_deref().unwrap_or("/queue"), "", None).await
}

/// `POST /settings/views`: saves a view, then opens it.
#[utoipa::path(
    post, path = "/settings/views", tag = "pages",
    request_body(content = ViewForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 303, description = "Saved: on to the view."),
              (status = 400, description = "Refused: the page again, saying why.", content_type = "text/html", body = String))
)]
pub async fn save_view(
    State(state): State<AppState>,
    viewer: Viewer,
    form: Result<Form<ViewForm>, FormRejection>,
) -> ApiResult<Response> {
    let user = match person(&viewer) {
        Ok(u) => u,
        Err(r) => return Ok(*r),
    };
    let form = match form {
        Ok(Form(f)) => f,
        Err(e) => {
            let why = format!("the form did not arrive whole: {}", e.body_text());
            return views_view(&state, &viewer, user, StatusCode::BAD_REQUEST, "/queue", "", Some(why)).await;
        }
    };
    let name = form.name.trim();
    let why = if name.is_empty() || name.chars().count() > 80 {
        Some("name: give the view a name of 1 to 80 characters".to_owned())
    } else {
        check_address(&form.address).err()
    };
    if let Some(why) = why {
        return views_view(&state, &viewer, user, StatusCode::BAD_REQUEST, &form.address, name, Some(why)).await;
    }
    let address = form.address.trim();
    state.storage.save_view(user, name, address).await?;
    Ok(Redirect::to(address).into_response())
}

/// `POST /settings/views/{id}/remove`
#[utoipa::path(
    post, path = "/settings/views/{id}/remove", tag = "pages",
    params(("id" = i64, Path, example = 1, description = "The view.")),
    responses((status = 303, description = "Forgotten: back to your views."))
)]
pub async fn forget_view(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Response> {
    let user = match person(&viewer) {
        Ok(u) => u,
        Err(r) => return Ok(*r),
    };
    state.storage.forget_view(user, id).await?;
    Ok(Redirect::to("/settings/views").into_response())
}

async fn views_view(
    state: &AppState,
    viewer: &Viewer,
    user: i64,
    status: StatusCode,
    address: &str,
    name: &str,
    error: Option<String>,
) -> ApiResult<Response> {
    let views = state.storage.saved_views(user).await?;
    let body = html! {
        h1 { "Saved views" }
        p.muted { "A view is a page of the dashboard with its filters: open it from here, or share its link." }
        @if let Some(e) = &error { p.state.state-error role="alert" data-testid="views-error" { (e) } }
        section.panel {
            h2 { "Save a view" }
            form.stack method="post" action="/settings/views" data-testid="save-view" {
                label.field { span { "Name" } input type="text" name="name" required maxlength="80" value=(name) autofocus; }
                label.field { span { "Address" } input type="text" name="address" required maxlength="2000" value=(address); }
                button type="submit" { "Save and open" }
            }
        }
        section.panel data-testid="views" {
            h2 { "Your views" }
            @if views.is_empty() { p.state.state-empty { "None yet: \"Save this view\" on the triage queue brings its filters here." } }
            ul.status-list { @for (id, name, address) in &views {
                li data-testid="view" {
                    a href=(address) { (name) } " " code { (address) } " "
                    form.inline method="post" action=(format!("/settings/views/{id}/remove")) {
                        button.link-button type="submit" { "Forget" }
                    }
                }
            } }
        }
    };
    Ok(page(status, "Saved views", viewer, body))
}
