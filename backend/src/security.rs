//! What every request passes before a handler sees it, and what every
//! response carries:
//!
//! - **Host** must be this server's configured address (`--public-url`, or
//!   the loopback address it is bound to), so a DNS-rebinding page that
//!   points its own name at 127.0.0.1 is refused (421).
//! - **Cross-site writes** are refused: a write whose `Origin` is another
//!   origin, or (browsers without `Origin`) whose `Sec-Fetch-Site` says
//!   cross-site, is a 403; a write carried by the session cookie must show
//!   it came from failpass's own pages (`Origin` or `Referer`). Tokens are
//!   exempt: a browser never attaches them by itself.
//! - Each route's declared **content type** (see `auth::access::ROUTES`) is
//!   required, so the types a cross-site form or `no-cors` fetch can send
//!   (`text/plain`, forms, multipart) reach only the routes meant for forms.
//! - **Headers**: a Content-Security-Policy that lets the WebAssembly
//!   dashboard run but no inline script, `nosniff`, no framing for pages (a
//!   response that sets its own policy, such as a chart, may be framed), and
//!   a same-origin Referrer-Policy.

use std::net::SocketAddr;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// How failpass is reached and who it lets in.
#[derive(Debug, Clone, Default)]
pub struct SecurityConfig {
    /// Where users reach failpass (`https://failpass.example.org`); without
    /// it, the loopback address the server is bound to.
    pub public_url: Option<String>,
    /// Nothing is shown to anyone not signed in.
    pub require_sign_in: bool,
    /// New projects are private unless created public.
    pub private_by_default: bool,
    /// Set the cookie's Secure flag even when the public URL is plain http
    /// (TLS terminated by a proxy that rewrites nothing).
    pub secure_cookies: bool,
    /// Take the client's address from the last `X-Forwarded-For` entry (set
    /// when a reverse proxy in front appends it), for sign-in limits.
    pub trust_forwarded_for: bool,
    /// Grade candidates even where the sandbox cannot switch users (the
    /// worker is not root): they then run as failpass's own user.
    pub allow_unsandboxed_runs: bool,
    /// `/metrics` answers only with `Authorization: Bearer` this; open without it.
    pub metrics_token: Option<String>,
    /// Private networks hooks may post into (`--hook-allow-network`).
    pub hook_networks: crate::hooks::HookNetworks,
    /// Private networks setup and agent commands may reach (`--run-allow-network`).
    pub run_networks: Vec<ipnet::IpNet>,
    /// The package index and the environment cache's cap.
    pub releases: crate::releases::Settings,
}

/// The checks' settings, worked out once the listener is bound.
#[derive(Debug, Clone)]
pub struct Security {
    /// `host[:port]` values the Host header may have, lowercase, default ports dropped.
    pub allowed_hosts: Vec<String>,
    pub https: bool,
    pub require_sign_in: bool,
    pub private_by_default: bool,
    pub secure_cookies: bool,
    pub trust_forwarded_for: bool,
    pub metrics_token: Option<String>,
    pub hook_networks: std::sync::Arc<crate::hooks::HookNetworks>,
}

impl Security {
    /// Settings for a server bound at `bound`. Binding a non-loopback
    /// address needs a public URL: without one, Host could not be checked.
    pub fn new(cfg: &SecurityConfig, bound: SocketAddr) -> anyhow::Result<Security> {
        let (allowed_hosts, https) = match &cfg.public_url {
            Some(url) => {
                let (scheme, rest) = url.split_once("://").ok_or_else(|| {
                    anyhow::anyhow!("--public-url `{url}`: expected http://HOST[:PORT] or https://HOST[:PORT]")
                })?;
                let https = match scheme.to_ascii_lowercase().as_str() {
                    "https" => true,
                    "http" => false,
                    other => anyhow::bail!("--public-url `{url}`: the scheme must be http or https, not `{other}`"),
                };
                let authority = rest.split('/').next().unwrap_or_default();
                if authority.is_empty() || authority.contains('@') {
                    anyhow::bail!("--public-url `{url}`: expected http(s)://HOST[:PORT]");
                }
                (vec![normalise_authority(authority, https)], https)
            }
            None => {
                if !bound.ip().is_loopback() {
                    anyhow::bail!(
                        "failpass is bound to {bound}, which is reachable from other machines: give --public-url \
                         (the address users reach it at, e.g. https://failpass.example.org) so requests for other hosts can be refused"
                    );
                }
                let port = bound.port();
                let hosts = match bound {
                    SocketAddr::V4(a) => vec![format!("{}:{port}", a.ip()), format!("localhost:{port}")],
                    SocketAddr::V6(a) => vec![format!("[{}]:{port}", a.ip()), format!("localhost:{port}")],
                };
                (hosts, false)
            }
        };
        Ok(Security {
            allowed_hosts,
            https,
            require_sign_in: cfg.require_sign_in,
            private_by_default: cfg.private_by_default,
            secure_cookies: https || cfg.secure_cookies,
            trust_forwarded_for: cfg.trust_forwarded_for,
            metrics_token: cfg.metrics_token.clone().filter(|t| !t.is_empty()),
            hook_networks: std::sync::Arc::new(cfg.hook_networks.clone()),
        })
    }

    /// Whether `authority` (a Host header, or an Origin's host part) is this server.
    pub fn is_own_host(&self, authority: &str) -> bool {
        let a = normalise_authority(authority, self.https);
        self.allowed_hosts.contains(&a)
    }

    /// Whether `origin` (`scheme://host[:port]`) is this server's: its
    /// scheme exactly (https where the public URL is https, http where
    /// failpass is served over plain http), its host and its port. The
    /// loopback aliases (`127.0.0.1`, `localhost`) count only where no
    /// public URL is given and the server listens on loopback.
    fn is_own_origin(&self, origin: &str) -> bool {
        let Some((scheme, authority)) = origin.split_once("://") else { return false };
        let scheme_ok = match scheme {
            "https" => self.https,
            "http" => !self.https,
            _ => false,
        };
        scheme_ok && !authority.contains('/') && self.is_own_host(authority)
    }
}

/// `Host:Port` lowercased, with the scheme's default port dropped.
fn normalise_authority(authority: &str, https: bool) -> String {
    let a = authority.trim().to_ascii_lowercase();
    let default = if https { ":443" } else { ":80" };
    a.strip_suffix(default).map(str::to_owned).unwrap_or(a)
}

fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// Host, then cross-site writes. Runs before routing, on every request.
pub async fn guard(State(security): State<std::sync::Arc<Security>>, req: Request, next: Next) -> Response {
    if let Err(e) = check(&security, req.method(), req.headers()) {
        return e.into_response();
    }
    next.run(req).await
}

fn check(security: &Security, method: &Method, headers: &HeaderMap) -> Result<(), ApiError> {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok());
    let host = text(header::HOST).unwrap_or_default();
    if !security.is_own_host(host) {
        return Err(ApiError::MisdirectedRequest(format!(
            "Host `{host}` is not this server (expected {}); if this is how users reach failpass, start it with --public-url",
            security.allowed_hosts.join(" or ")
        )));
    }
    if !is_write(method) {
        return Ok(());
    }
    if let Some(origin) = text(header::ORIGIN) {
        if !security.is_own_origin(origin) {
            return Err(ApiError::Forbidden(format!(
                "cross-origin write refused: Origin `{origin}` is not this server"
            )));
        }
        return Ok(());
    }
    if let Some(site) = text(HeaderName::from_static("sec-fetch-site")) {
        if !matches!(site, "same-origin" | "none") {
            return Err(ApiError::Forbidden(format!("cross-site write refused (Sec-Fetch-Site: {site})")));
        }
        return Ok(());
    }
    // No Origin at all: a non-browser client, or an old browser. A write that
    // rides on the session cookie must still show it came from our pages.
    let bearer = headers.contains_key(header::AUTHORIZATION);
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|c| c.split(';').any(|kv| kv.trim_start().starts_with(crate::auth::sessions::COOKIE)));
    if cookie && !bearer {
        let from_here = text(header::REFERER).and_then(|r| {
            let (scheme, rest) = r.split_once("://")?;
            let authority = rest.split('/').next()?;
            Some(security.is_own_origin(&format!("{scheme}://{authority}")))
        });
        if from_here != Some(true) {
            return Err(ApiError::Forbidden(
                "a signed-in write needs an Origin (or Referer) header from this server".into(),
            ));
        }
    }
    Ok(())
}

use axum::http::HeaderName;

/// The dashboard's policy: its own scripts and WebAssembly, its own styles
/// (no inline script, no inline style sheets), data: images (the favicon),
/// requests to itself, and no framing.
pub const PAGE_CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Adds the security headers to every response.
pub async fn headers(State(security): State<std::sync::Arc<Security>>, req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        // A response with its own policy (a chart) is meant to be embeddable.
        h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(PAGE_CSP));
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    if security.https {
        h.insert(header::STRICT_TRANSPORT_SECURITY, HeaderValue::from_static("max-age=31536000"));
    }
    res
}

/// The request's content type without parameters, lowercased.
pub fn content_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
}

/// The client's address: the peer, or the last `X-Forwarded-For` entry when
/// a proxy in front is trusted to append it.
pub fn client_address(security: &Security, headers: &HeaderMap, peer: Option<SocketAddr>) -> String {
    if security.trust_forwarded_for
        && let Some(last) = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .rfind(|s| !s.is_empty())
    {
        return last.to_owned();
    }
    peer.map(|p| p.ip().to_string()).unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> Security {
        Security::new(&SecurityConfig::default(), "127.0.0.1:8080".parse().unwrap()).unwrap()
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn hosts_are_this_server_only() {
        let s = local();
        assert!(s.is_own_host("127.0.0.1:8080") && s.is_own_host("LOCALHOST:8080"));
        assert!(!s.is_own_host("evil.example:8080") && !s.is_own_host("127.0.0.1:9090") && !s.is_own_host(""));
        let public = Security::new(
            &SecurityConfig { public_url: Some("https://fp.example.org/".into()), ..Default::default() },
            "0.0.0.0:8080".parse().unwrap(),
        )
        .unwrap();
        assert!(public.is_own_host("fp.example.org") && public.is_own_host("fp.example.org:443"));
        assert!(public.is_own_origin("https://fp.example.org") && !public.is_own_origin("http://fp.example.org"));
        assert!(public.secure_cookies);
        let e = Security::new(&SecurityConfig::default(), "0.0.0.0:8080".parse().unwrap()).unwrap_err().to_string();
        assert!(e.contains("--public-url"), "{e}");
        assert!(
            Security::new(
                &SecurityConfig { public_url: Some("ftp://x".into()), ..Default::default() },
                "0.0.0.0:1".parse().unwrap()
            )
            .is_err()
        );
    }

    #[test]
    fn cross_site_writes_are_refused() {
        let s = local();
        let host = ("host", "127.0.0.1:8080");
        let post = Method::POST;
        assert!(check(&s, &post, &headers(&[host, ("origin", "http://127.0.0.1:8080")])).is_ok());
        // The same host and port under the other scheme is another origin.
        assert!(matches!(
            check(&s, &post, &headers(&[host, ("origin", "https://127.0.0.1:8080")])),
            Err(ApiError::Forbidden(_))
        ));
        let cookie = ("cookie", "failpass_session=abc");
        assert!(check(&s, &post, &headers(&[host, cookie, ("referer", "https://127.0.0.1:8080/reports/1")])).is_err());
        assert!(matches!(
            check(&s, &post, &headers(&[host, ("origin", "http://127.0.0.1:9999")])),
            Err(ApiError::Forbidden(_))
        ));
        assert!(matches!(check(&s, &post, &headers(&[host, ("origin", "null")])), Err(ApiError::Forbidden(_))));
        assert!(matches!(
            check(&s, &post, &headers(&[host, ("sec-fetch-site", "cross-site")])),
            Err(ApiError::Forbidden(_))
        ));
        // A cookie without Origin or Referer: refused; with our Referer: fine; a token: fine.
        assert!(check(&s, &post, &headers(&[host, cookie])).is_err());
        assert!(check(&s, &post, &headers(&[host, cookie, ("referer", "http://127.0.0.1:8080/reports/1")])).is_ok());
        assert!(
            check(&s, &post, &headers(&[host, cookie, ("referer", "http://127.0.0.1:8080.evil.example/")])).is_err()
        );
        assert!(check(&s, &post, &headers(&[host, ("authorization", "Bearer x")])).is_ok());
        // Reads pass whatever their origin; any request for another host does not.
        assert!(check(&s, &Method::GET, &headers(&[host, ("origin", "http://evil.example")])).is_ok());
        assert!(matches!(
            check(&s, &Method::GET, &headers(&[("host", "evil.example:8080")])),
            Err(ApiError::MisdirectedRequest(_))
        ));
    }
}
