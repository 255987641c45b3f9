//! Test harness: a real server on 127.0.0.1:0 over a temporary SQLite file,
//! and `run_storage_test`, which runs one case on SQLite and on a fresh
//! PostgreSQL database.

use std::future::Future;
use std::sync::Arc;

use failpass::db::{self, Storage};
use failpass::startup::{App, AppConfig};
use serde_json::{Value, json};
use sqlx::Connection;
use tempfile::TempDir;

pub const DEFAULT_TEST_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
/// How long a status page is served after a write before it is computed again.
pub const STATUS_DEBOUNCE: std::time::Duration = failpass::status::DEBOUNCE;

pub fn init_logs() {
    if std::env::var_os("TEST_LOG").is_some() {
        failpass::telemetry::init();
    }
}

pub struct TestApp {
    pub base: String,
    /// Sends the test admin's personal token with every request.
    pub client: reqwest::Client,
    /// Sends nothing: an anonymous visitor.
    pub anon: reqwest::Client,
    pub storage: Arc<dyn Storage>,
    /// Every route the router registered.
    pub routes: Vec<&'static failpass::auth::access::RouteSpec>,
    _dir: TempDir,
}

/// The admin the tests act as (with a personal token; no password, so nobody signs in as it).
pub const TEST_ADMIN: &str = "test-admin";

/// A client that sends `token` as a bearer token with every request.
pub fn client_with_token(token: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
    reqwest::Client::builder().default_headers(headers).build().unwrap()
}

/// Makes a user (no usable password) and a personal token acting as them.
pub async fn user_token(storage: &dyn Storage, name: &str, admin: bool) -> String {
    let user = storage.create_user(name, "no password", admin).await.expect("user");
    let req = failpass::auth::tokens::TokenRequest {
        name: "tests".into(),
        scope: failpass_shared::model::TokenScope::User,
        project_id: None,
        user_id: Some(user.id),
        created_by: "tests".into(),
        expires_in_days: None,
    };
    failpass::auth::tokens::create(storage, req).await.expect("token").0
}

pub async fn spawn_app() -> TestApp {
    spawn(false, 0).await
}

/// The demo, with its verification jobs queued but no worker to run them
/// (so the numbers stay still while a test compares them).
pub async fn spawn_app_with_demo() -> TestApp {
    spawn(true, 0).await
}

/// The demo with `workers` verification workers grading it for real.
pub async fn spawn_app_with_workers(demo: bool, workers: usize) -> TestApp {
    spawn_with(demo, workers, failpass::runner::refine::Generator::Snippet).await
}

async fn spawn(demo: bool, workers: usize) -> TestApp {
    spawn_with(demo, workers, failpass::runner::refine::Generator::Snippet).await
}

/// An app whose refine loop uses `generator`.
pub async fn spawn_with(demo: bool, workers: usize, generator: failpass::runner::refine::Generator) -> TestApp {
    spawn_configured(demo, workers, generator, Default::default()).await
}

/// An app with these security settings (`--require-sign-in`, `--private-by-default`, …).
pub async fn spawn_configured(
    demo: bool,
    workers: usize,
    generator: failpass::runner::refine::Generator,
    security: failpass::security::SecurityConfig,
) -> TestApp {
    spawn_on(None, demo, workers, generator, security).await
}

/// Settings that let hooks post to this machine's loopback (the tests'
/// receivers listen there), as an operator's `--hook-allow-network 127.0.0.0/8` does.
pub fn loopback_hooks() -> failpass::security::SecurityConfig {
    failpass::security::SecurityConfig {
        hook_networks: failpass::hooks::HookNetworks::parse(&["127.0.0.0/8"]).unwrap(),
        ..Default::default()
    }
}

/// An app on PostgreSQL (a fresh database, dropped with the returned handle).
pub async fn spawn_pg_app(security: failpass::security::SecurityConfig) -> (TestApp, PgDatabase) {
    let pg = pg_storage().await;
    let app = spawn_on(Some(pg.url.clone()), false, 0, failpass::runner::refine::Generator::Snippet, security).await;
    (app, pg)
}

async fn spawn_on(
    database_url: Option<String>,
    demo: bool,
    workers: usize,
    generator: failpass::runner::refine::Generator,
    security: failpass::security::SecurityConfig,
) -> TestApp {
    init_logs();
    // The data directory under a parent of root's alone (0700, as `mktemp -d`
    // makes it): runs must grade whatever the modes above the data directory.
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).expect("chmod 0700");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("data dir");
    let app = App::build(AppConfig {
        database_url: database_url.unwrap_or_else(|| data.join("failpass.db").to_string_lossy().into_owned()),
        bind: "127.0.0.1:0".parse().unwrap(),
        demo,
        // The demo as it was: its real bugs are graded by realbugs.rs, which needs the index.
        demo_real_bugs: false,
        routing: Default::default(),
        data_dir: data,
        workers,
        generator,
        refine_budget: 5,
        recheck_every: None,
        security,
    })
    .await
    .expect("app builds");
    let base = format!("http://127.0.0.1:{}", app.port());
    let storage = app.storage();
    let routes = app.routes().to_vec();
    tokio::spawn(app.run_until(std::future::pending()));
    let admin_token = user_token(storage.as_ref(), TEST_ADMIN, true).await;
    TestApp { base, client: client_with_token(&admin_token), anon: reqwest::Client::new(), storage, routes, _dir: dir }
}

pub struct Reply {
    pub status: u16,
    pub body: Value,
}

impl TestApp {
    /// The app's data directory (environments, runs).
    pub fn data_dir(&self) -> std::path::PathBuf {
        self._dir.path().join("data")
    }

    pub async fn get(&self, path: &str) -> Reply {
        let resp = self.client.get(format!("{}{}", self.base, path)).send().await.expect("request");
        reply(resp).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        let resp = self.client.post(format!("{}{}", self.base, path)).json(body).send().await.expect("request");
        reply(resp).await
    }

    /// Imports `body` as NDJSON.
    pub async fn import_ndjson(&self, body: impl Into<reqwest::Body>) -> reqwest::Response {
        self.client
            .post(format!("{}/api/v1/import?format=ndjson", self.base))
            .header("content-type", "application/x-ndjson")
            .body(body)
            .send()
            .await
            .expect("request")
    }

    pub async fn post_raw(&self, path: &str, content_type: Option<&str>, body: &str) -> Reply {
        let mut req = self.client.post(format!("{}{}", self.base, path)).body(body.to_owned());
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        reply(req.send().await.expect("request")).await
    }

    pub async fn project(&self, slug: &str) -> Value {
        let r = self.post("/api/v1/projects", &json!({ "slug": slug })).await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.body
    }

    /// Creates a report and returns its id.
    pub async fn report(&self, body: Value) -> i64 {
        let r = self.post("/api/v1/reports", &body).await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["id"].as_i64().unwrap()
    }

    /// Creates an attempt and returns it.
    pub async fn attempt(&self, body: Value) -> Value {
        let r = self.post("/api/v1/attempts", &body).await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.body
    }
}

async fn reply(resp: reqwest::Response) -> Reply {
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Reply { status, body }
}

/// Asserts a JSON error with `status`, `code`, and a message containing `needle`.
#[track_caller]
pub fn assert_error(r: &Reply, status: u16, code: &str, needle: &str) {
    assert_eq!(r.status, status, "{}", r.body);
    assert_eq!(r.body["code"], code, "{}", r.body);
    let msg = r.body["message"].as_str().unwrap_or_default();
    assert!(msg.contains(needle), "message {msg:?} should contain {needle:?}");
}

/// A fresh, migrated SQLite storage in a temporary directory.
pub async fn sqlite_storage() -> (Arc<dyn Storage>, TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let storage = db::connect(&dir.path().join("t.db").to_string_lossy()).await.unwrap();
    storage.migrate().await.unwrap();
    (storage, dir)
}

/// A fresh, migrated PostgreSQL database, dropped by [`PgDatabase::drop_now`].
/// PostgreSQL is required: with no server this panics rather than skipping.
pub struct PgDatabase {
    pub admin_url: String,
    name: String,
    pub url: String,
    pub storage: Arc<dyn Storage>,
}

pub async fn pg_storage() -> PgDatabase {
    let admin_url = std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_TEST_DATABASE_URL.to_owned());
    let name = format!("failpass_test_{}", uuid::Uuid::new_v4().simple());
    let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap_or_else(|e| {
        panic!("PostgreSQL is required for the contract suite and is unreachable at {admin_url}: {e}")
    });
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await.unwrap();
    admin.close().await.ok();
    let base = admin_url.rsplit_once('/').map(|(b, _)| b).unwrap_or(&admin_url);
    let url = format!("{base}/{name}");
    let storage = db::connect(&url).await.unwrap();
    storage.migrate().await.unwrap();
    PgDatabase { admin_url, name, url, storage }
}

impl PgDatabase {
    pub async fn drop_now(self) {
        drop(self.storage);
        if let Ok(mut admin) = sqlx::PgConnection::connect(&self.admin_url).await {
            let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)))
                .execute(&mut admin)
                .await;
        }
    }
}

/// Runs `case` on SQLite, then on a fresh PostgreSQL database.
pub async fn run_storage_test<F, Fut>(case: F)
where
    F: Fn(Arc<dyn Storage>) -> Fut,
    Fut: Future<Output = ()>,
{
    init_logs();
    let (sqlite, _dir) = sqlite_storage().await;
    case(sqlite).await;
    let pg = pg_storage().await;
    case(pg.storage.clone()).await;
    pg.drop_now().await;
}

/// Like [`run_storage_test`], also giving the database URL (to open more
/// connections, or to point a `failpass worker` process at it).
pub async fn run_storage_test_url<F, Fut>(case: F)
where
    F: Fn(Arc<dyn Storage>, String) -> Fut,
    Fut: Future<Output = ()>,
{
    init_logs();
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("t.db").to_string_lossy().into_owned();
    let sqlite = db::connect(&url).await.unwrap();
    sqlite.migrate().await.unwrap();
    case(sqlite, url).await;
    let pg = pg_storage().await;
    case(pg.storage.clone(), pg.url.clone()).await;
    pg.drop_now().await;
}
