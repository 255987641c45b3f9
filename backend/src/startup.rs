//! Building the application: storage, migrations, router, listener.
//!
//! `App::build` binds the listener first, so callers (tests, `xtask run`)
//! learn the real port before the server starts.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::http::{HeaderName, Request};
use failpass_shared::routing::RoutingConfig;
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::compression::CompressionLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::db::{self, Storage};
use crate::routes::{AppState, router};

pub struct App {
    listener: TcpListener,
    router: axum::Router,
    routes: Vec<&'static crate::auth::access::RouteSpec>,
    storage: Arc<dyn Storage>,
    data_dir: std::path::PathBuf,
    workers: usize,
    generator: crate::runner::refine::Generator,
    refine_budget: u32,
    recheck_every: Option<Duration>,
    allow_unsandboxed: bool,
    /// Public projects' statuses (shared with the routes).
    status: crate::status::StatusCache,
    /// The routing rule (the workers re-route reports that gain an authored oracle).
    routing: Arc<RoutingConfig>,
    /// Private networks hooks may post into.
    hook_networks: Arc<crate::hooks::HookNetworks>,
    /// Private networks setup and agent commands may reach.
    run_networks: Vec<ipnet::IpNet>,
    releases: crate::releases::Settings,
}

/// What to build an [`App`] from.
pub struct AppConfig {
    pub database_url: String,
    pub bind: SocketAddr,
    pub demo: bool,
    /// With the demo, networkx's real bugs graded on their releases (needs the package index).
    pub demo_real_bugs: bool,
    pub routing: RoutingConfig,
    /// Where environments are built and runs happen (`<data>/envs`, `<data>/runs`).
    pub data_dir: std::path::PathBuf,
    /// Verification workers to run in-process (0: none).
    pub workers: usize,
    /// The refine loop's generator and budget.
    pub generator: crate::runner::refine::Generator,
    pub refine_budget: u32,
    /// How often reproduced attempts are re-checked against the newest release (`None`: never).
    pub recheck_every: Option<Duration>,
    /// Public address, sign-in and cookie settings.
    pub security: crate::security::SecurityConfig,
}

impl App {
    /// Opens and migrates storage, seeds demo data if asked and the database
    /// is empty, and binds the listener.
    pub async fn build(mut cfg: AppConfig) -> anyhow::Result<App> {
        // The runner's runs have their own working directories: a relative
        // data directory would name another place inside each of them.
        cfg.data_dir = std::path::absolute(&cfg.data_dir)
            .with_context(|| format!("resolving the data directory {}", cfg.data_dir.display()))?;
        let storage = db::connect(&cfg.database_url)
            .await
            .with_context(|| format!("opening database {}", redact(&cfg.database_url)))?;
        storage.migrate().await.context("applying migrations")?;
        let routing = Arc::new(cfg.routing);
        if cfg.demo {
            match crate::demo::seed_if_empty(storage.as_ref(), &routing, &cfg.data_dir, cfg.demo_real_bugs).await? {
                Some(s) => tracing::info!(
                    projects = s.projects,
                    reports = s.reports,
                    attempts = s.attempts,
                    "demo data loaded into the empty database"
                ),
                None => tracing::info!("database already has data; demo data not loaded"),
            }
        }
        let listener = TcpListener::bind(cfg.bind).await.with_context(|| format!("binding {}", cfg.bind))?;
        let bound = listener.local_addr().context("reading the bound address")?;
        let security = Arc::new(crate::security::Security::new(&cfg.security, bound)?);
        // The metrics recorder before the first request, so nothing goes unrecorded.
        crate::metrics::handle();
        let status = crate::status::StatusCache::default();
        let (router, routes) = router(AppState {
            storage: storage.clone(),
            routing: routing.clone(),
            models: Default::default(),
            security: security.clone(),
            health: Default::default(),
            status: status.clone(),
            index: cfg.security.releases.index(&cfg.data_dir),
            envs: cfg.security.releases.env_cache(&cfg.data_dir),
        });
        let hook_networks = security.hook_networks.clone();
        let router = with_layers(router, storage.clone(), security);
        Ok(App {
            listener,
            router,
            routes,
            storage,
            data_dir: cfg.data_dir,
            workers: cfg.workers,
            generator: cfg.generator,
            refine_budget: cfg.refine_budget,
            recheck_every: cfg.recheck_every,
            allow_unsandboxed: cfg.security.allow_unsandboxed_runs,
            hook_networks,
            run_networks: cfg.security.run_networks.clone(),
            releases: cfg.security.releases.clone(),
            status,
            routing,
        })
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub fn storage(&self) -> Arc<dyn Storage> {
        self.storage.clone()
    }

    /// Every route the router serves, with who may use it.
    pub fn routes(&self) -> &[&'static crate::auth::access::RouteSpec] {
        &self.routes
    }

    /// Serves (with the worker pool) until `shutdown` resolves, then finishes
    /// in-flight requests and lets the workers finish their jobs.
    pub async fn run_until(self, shutdown: impl Future<Output = ()> + Send + 'static) -> std::io::Result<()> {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let config = crate::runner::executors::RunnerConfig {
            generator: self.generator,
            refine_budget: self.refine_budget,
            allow_unsandboxed: self.allow_unsandboxed,
            routing: self.routing.clone(),
            hook_networks: self.hook_networks.clone(),
            run_networks: self.run_networks.clone(),
            releases: self.releases.clone(),
        };
        let executor = Arc::new(crate::runner::executors::ByKind::new(self.storage.clone(), &self.data_dir, config));
        if self.workers > 0 && !crate::runner::sandbox::switches_user() {
            tracing::warn!(
                allowed = self.allow_unsandboxed,
                "not running as root: candidates cannot get users and namespaces of their own{}",
                if self.allow_unsandboxed {
                    "; they run as failpass's own user (--allow-unsandboxed-runs)"
                } else {
                    ", so verification jobs are refused"
                }
            );
        }
        let pool = crate::runner::worker::spawn_pool(
            executor,
            self.storage.clone(),
            self.workers,
            Default::default(),
            stopped,
        );
        if self.workers > 0 {
            tracing::info!(workers = self.workers, "verification workers running");
        }
        let schedule = self.recheck_every.map(|every| {
            tokio::spawn(crate::runner::schedule::run(
                self.storage.clone(),
                self.releases.index(&self.data_dir),
                every,
                stop.subscribe(),
            ))
        });
        let sweeper = tokio::spawn(sweep_sessions(self.storage.clone(), stop.subscribe()));
        // Public projects' statuses computed now, so their first visitors do not wait.
        let warm = {
            let (status, storage) = (self.status.clone(), self.storage.clone());
            tokio::spawn(async move { status.warm(&storage).await })
        };
        // The peer's address reaches handlers (sign-in limits per address).
        let service = self.router.into_make_service_with_connect_info::<SocketAddr>();
        let served = axum::serve(self.listener, service).with_graceful_shutdown(shutdown).await;
        let _ = stop.send(true);
        warm.abort();
        let _ = sweeper.await;
        if let Some(s) = schedule {
            let _ = s.await;
        }
        for w in pool {
            // A worker finishes the job it holds; a stuck one is abandoned (its lease expires).
            let _ = tokio::time::timeout(Duration::from_secs(30), w).await;
        }
        served
    }
}

/// Deletes expired sessions every hour until `stop`.
async fn sweep_sessions(storage: Arc<dyn Storage>, mut stop: tokio::sync::watch::Receiver<bool>) {
    loop {
        if let Err(e) = storage.delete_expired_sessions(chrono::Utc::now()).await {
            tracing::warn!(error.cause_chain = ?e, "deleting expired sessions");
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(3600)) => {}
            _ = stop.changed() => return,
        }
    }
}

fn with_layers(
    router: axum::Router,
    storage: Arc<dyn Storage>,
    security: Arc<crate::security::Security>,
) -> axum::Router {
    let request_id = HeaderName::from_static("x-request-id");
    let sessions = crate::auth::sessions::layer(storage, security.secure_cookies);
    router
        .layer(axum::middleware::from_fn(crate::metrics::track_http))
        .layer(sessions)
        .layer(axum::extract::DefaultBodyLimit::max(crate::error::BODY_LIMIT))
        .layer(axum::middleware::from_fn_with_state(security.clone(), crate::security::guard))
        .layer(axum::middleware::from_fn_with_state(security, crate::security::headers))
        .layer(CompressionLayer::new())
        .layer(CatchPanicLayer::custom(|_| {
            crate::error::ApiError::Internal(anyhow::anyhow!("handler panicked")).into_response_boxed()
        }))
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(TraceLayer::new_for_http().make_span_with(|req: &Request<_>| {
            let id = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-");
            tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %id)
        }))
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            axum::http::StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(30),
        ))
}

/// A database URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}

#[cfg(test)]
mod tests {
    #[test]
    fn redacts_passwords() {
        assert_eq!(super::redact("postgres://u:secret@h/db"), "postgres://u:***@h/db");
        assert_eq!(super::redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(super::redact("data/failpass.db"), "data/failpass.db");
    }
}
