//! The frame every page shares, drawn once on the server: the header (the
//! dashboard's pages, the reviewer's inbox with its count, the set-up pages,
//! the account), and the page around a server-rendered body. The dashboard's
//! shell (`index.html`) gets the same header spliced in, so a page looks the
//! same whether the server or the WebAssembly app draws its body.

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use failpass_shared::api::query::parse_query_string;
use failpass_shared::api::session::Me;
use failpass_shared::nav::{PAGES, is_current, link};
use maud::{DOCTYPE, Markup, html};

use super::AppState;
use crate::auth::{Action, Viewer};

/// What the header of the page being answered shows: who is signed in
/// (with the inbox count) and where they are.
#[derive(Clone)]
struct Frame {
    me: Me,
    path: String,
    query: Vec<(String, String)>,
    /// A form's post answered with a page (a refusal, or what is shown
    /// once): the address bar is put back to the form's page.
    posted: bool,
}

tokio::task_local! {
    static FRAME: Frame;
}

/// Whether a request asks for a page or posts a page's form (not the API or a file).
fn is_page(method: &Method, path: &str) -> bool {
    (method == Method::GET || method == Method::HEAD || method == Method::POST)
        && !path.starts_with("/api/")
        && !path.starts_with("/pkg/")
        && path != "/metrics"
        && !path.starts_with("/health")
        && !is_asset(path)
}

/// A file, not a page: a project's slug may hold a dot (`vercel/next.js`),
/// so a file is known by its kind.
fn is_asset(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or_default();
    [".js", ".css", ".wasm", ".svg", ".png", ".ico", ".txt", ".map", ".json", ".webmanifest"]
        .iter()
        .any(|ext| last.ends_with(ext))
}

/// The header `/frame.js` sends when it fetches a page's figures again
/// (not a visit: an open tab is not a person reading).
const REFRESH_HEADER: &str = "x-failpass-refresh";

/// Middleware: for a page request, works out the header once (the viewer and
/// the count of attempts waiting for their review) before the handler runs,
/// so every page draws the same header without each handler asking.
pub async fn header_frame(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if !is_page(req.method(), req.uri().path()) {
        return next.run(req).await;
    }
    let (mut parts, body) = req.into_parts();
    let viewer = match Viewer::resolve(&mut parts, state.storage.as_ref()).await {
        Ok(v) => v,
        Err(_) => return next.run(Request::from_parts(parts, body)).await,
    };
    let posted = parts.method == Method::POST;
    // A browser's visit (it asks for HTML) never gets a JSON error back.
    let wants_html = parts
        .headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"));
    // A signed-in person's page load is part of a visit ("since my last visit").
    if !posted
        && !parts.headers.contains_key(REFRESH_HEADER)
        && let (crate::auth::Principal::User { id, .. }, crate::auth::Via::Session) = (&viewer.principal, &viewer.via)
        && let Err(e) = state.storage.note_visit(*id, crate::db::common::now()).await
    {
        tracing::warn!(error = %e, "noting a visit");
    }
    let me = viewer_me(&state, &viewer).await;
    let frame = Frame {
        me,
        path: parts.uri.path().to_owned(),
        query: parse_query_string(parts.uri.query().unwrap_or_default()),
        posted,
    };
    FRAME
        .scope(frame, async move {
            let res = next.run(Request::from_parts(parts, body)).await;
            if wants_html { as_page(res, &viewer).await } else { res }
        })
        .await
}

/// A JSON error answered to a browser's page request, as a page saying the
/// same (with the header, and a way back).
async fn as_page(res: Response, viewer: &Viewer) -> Response {
    let json = res
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if !json || !(res.status().is_client_error() || res.status().is_server_error()) {
        return res;
    }
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), 64 * 1024).await.unwrap_or_default();
    let message = serde_json::from_slice::<failpass_shared::error::ApiErrorBody>(&bytes)
        .map(|e| e.message)
        .unwrap_or_else(|_| status.canonical_reason().unwrap_or("error").to_lowercase());
    let title = status.canonical_reason().unwrap_or("Error");
    let body = html! {
        section.panel.narrow data-testid="page-error" {
            h1 { (title) }
            p.state.state-error role="alert" { (message) }
            p { a href="/" { "Back to the dashboard" } }
        }
    };
    page(status, title, viewer, body)
}

/// Who `viewer` is, with the number of attempts waiting for their review.
pub async fn viewer_me(state: &AppState, viewer: &Viewer) -> Me {
    let mut me = viewer.me(state.security.require_sign_in);
    if me.user.is_some() && me.maintains_any() {
        let scope = viewer.scope_for(Action::Review);
        match state.storage.awaiting_review(&scope, 0).await {
            Ok((n, _)) => me.inbox = n,
            Err(e) => tracing::warn!(error = %e, "counting the review inbox"),
        }
    }
    me
}

/// The header for this request (or, outside one, for `viewer` anywhere).
fn current_header(viewer: &Viewer) -> Markup {
    FRAME.try_with(|f| topbar(&f.me, &f.path, &f.query)).unwrap_or_else(|_| topbar(&viewer.me(false), "", &[]))
}

/// The header: the dashboard's pages (each link keeping the filters its page
/// understands, which the dashboard updates as its address changes), the
/// reviewer's and maintainer's pages, and the account.
pub fn topbar(me: &Me, path: &str, query: &[(String, String)]) -> Markup {
    let next = failpass_shared::api::query::to_query_string(&[("next", path.to_owned())]);
    html! {
        a.skip-link href="#main" { "Skip to content" }
        header.topbar {
            a.brand href="/" { "failpass" }
            nav.nav aria-label="Main" {
                @for (href, label, keep) in PAGES {
                    @let keep = keep.join(",");
                    a href=(link(href, &keep, query)) data-page=(href) data-keep=(keep)
                        aria-current=[is_current(href, path).then_some("page")] { (label) }
                }
            }
            nav.nav.nav-work aria-label="Review and set-up" {
                @if me.user.is_some() && me.maintains_any() {
                    a href="/inbox" data-testid="inbox-link" aria-current=[(path == "/inbox").then_some("page")] {
                        "Inbox " span.badge data-testid="inbox-count" { (me.inbox) }
                    }
                    a href="/settings/projects" data-testid="setup-link"
                        aria-current=[path.starts_with("/settings/projects").then_some("page")] { "Set-up" }
                    a href="/settings/tokens" aria-current=[(path == "/settings/tokens").then_some("page")] { "Tokens" }
                }
                @if me.user.is_some() {
                    a href="/settings/views" aria-current=[(path == "/settings/views").then_some("page")] { "Views" }
                }
                @if me.admin {
                    a href="/settings/hooks" aria-current=[path.starts_with("/settings/hooks").then_some("page")] { "Webhooks" }
                    a href="/settings/users" aria-current=[(path == "/settings/users").then_some("page")] { "Accounts" }
                }
            }
            div.account {
                a href="/status" data-testid="status-link" { "Status pages" }
                a href="/docs/api" data-testid="api-link" { "API" }
                @if let Some(user) = &me.user {
                    span.account-name data-testid="signed-in-as" { (user) @if me.admin { " (admin)" } }
                    form.inline method="post" action="/signout" { button.link-button type="submit" { "Sign out" } }
                } @else {
                    a href={ "/signin?" (next) } data-testid="sign-in" { "Sign in" }
                }
            }
        }
    }
}

/// A server-rendered page: the shared header around `body`.
fn layout(title: &str, viewer: &Viewer, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · failpass" }
                link rel="stylesheet" href="/style.css";
                // Answered to a form's post: the bar goes back to the form's page
                // (a reload then shows the page, not the post again).
                @if let Ok(Some(page)) = FRAME.try_with(|f| f.posted.then(|| form_page(&f.path))) {
                    meta name="failpass-page" content=(page);
                }
                script src="/frame.js" defer {}
            }
            body {
                (current_header(viewer))
                main.page #main tabindex="-1" { (body) }
            }
        }
    }
}

/// `layout` as a response that no cache keeps.
pub(crate) fn page(status: StatusCode, title: &str, viewer: &Viewer, body: Markup) -> Response {
    (
        status,
        [(axum::http::header::CACHE_CONTROL, "no-store")],
        axum::response::Html(layout(title, viewer, body).into_string()),
    )
        .into_response()
}

/// Where the built `index.html` takes the header.
const HEADER_SLOT: &str = "<!--failpass:header-->";

/// The dashboard's shell with this request's header in place of its slot.
pub fn shell(index: &str) -> String {
    let header =
        FRAME.try_with(|f| topbar(&f.me, &f.path, &f.query)).unwrap_or_else(|_| topbar(&Me::default(), "", &[]));
    index.replacen(HEADER_SLOT, &header.into_string(), 1)
}

/// The page whose form posts to `path`.
pub(crate) fn form_page(path: &str) -> String {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segs.as_slice() {
        ["signin", ..] => "/signin".into(),
        ["reports", id, "oracle"] => format!("/reports/{id}/oracle"),
        ["reports", id, "releases"] => format!("/reports/{id}/releases"),
        ["settings", "hooks", id, "test"] => format!("/settings/hooks/{id}"),
        ["inbox", ..] => "/inbox".into(),
        ["queue", ..] => "/queue".into(),
        ["reports", id, ..] => format!("/reports/{id}"),
        ["settings", "projects", owner, name, ..] => format!("/settings/projects/{owner}/{name}"),
        ["settings", "hooks" | "deliveries", ..] => "/settings/hooks".into(),
        ["settings", page, ..] => format!("/settings/{page}"),
        ["signout", ..] => "/".into(),
        _ => "/".into(),
    }
}
