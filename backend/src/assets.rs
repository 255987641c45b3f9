//! The dashboard: static files built by `cargo xtask` into `target/site`.
//!
//! In release builds (`cargo xtask dist`) the files are embedded in the
//! binary, so one file deploys; in debug builds they are read from disk, so
//! a rebuilt frontend shows without rebuilding the server. Paths without a
//! file fall back to `index.html`, where the client-side router takes over.

use axum::http::{StatusCode, Uri, header};
use axum::response::{Html, IntoResponse, Response};
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "../target/site/"]
#[allow_missing = true]
struct Site;

pub async fn serve_site(uri: Uri) -> Response {
    let path = uri.path().trim_start_matches('/');
    if let Some(file) = (!path.is_empty()).then(|| Site::get(path)).flatten() {
        return file_response(path, file);
    }
    // A missing asset (`/pkg/x.wasm`) is a 404; anything else is a client route.
    let last = path.rsplit('/').next().unwrap_or_default();
    if last.contains('.') {
        return (StatusCode::NOT_FOUND, "not found").into_response();
    }
    // The shell takes this request's header (the one every page shares).
    match Site::get("index.html") {
        Some(index) => {
            let html = crate::routes::frame::shell(&String::from_utf8_lossy(&index.data));
            ([(header::CACHE_CONTROL, "no-store")], Html(html)).into_response()
        }
        None => Html(NOT_BUILT).into_response(),
    }
}

fn file_response(path: &str, file: rust_embed::EmbeddedFile) -> Response {
    let mime = mime_guess::from_path(path).first_or_octet_stream();
    ([(header::CONTENT_TYPE, mime.as_ref().to_owned()), (header::CACHE_CONTROL, "no-cache".to_owned())], file.data)
        .into_response()
}

const NOT_BUILT: &str = "<!doctype html><title>failpass</title><h1>failpass</h1>\
<p>The dashboard has not been built. Run <code>cargo xtask run</code> (or <code>cargo xtask dist</code>) \
from the repository. The API is up at <a href=\"/api/v1/figures\">/api/v1</a>.</p>";
