//! The authorization matrix: every route the router registered × every kind
//! of caller → the expected answer, on SQLite and on PostgreSQL.
//!
//! The fixture is a private project `vault/secret` whose every name says
//! "vault" (report title, agent, model, environment, failure signature) and
//! a public project `other/lib`. A `200S` expectation means the answer shows
//! the private project's data, `200H` that it holds none of it (the word
//! "vault" appears nowhere in the body); for the import, `200C` means the
//! record was stored and `200R` that it was rejected. A route the router
//! serves without a row here fails the test, as does a row for a route it
//! does not serve.

use std::collections::HashMap;

use failpass::db::Storage;
use failpass::db::attempts::Verification;
use failpass_shared::model::{ProjectRole, TokenScope, Verdict};
use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app, spawn_pg_app};

/// The callers, in the order of each row below.
const CALLERS: [&str; 10] = [
    "anonymous",
    "viewer",
    "maintainer",
    "other maintainer",
    "admin",
    "agent token",
    "ci token",
    "read token",
    "other project's token",
    "revoked token",
];

/// Each route: one expectation per caller, in `CALLERS` order.
const MATRIX: &[(&str, &str, &str)] = &[
    ("GET", "/healthz", "200 200 200 200 200 200 200 200 200 401"),
    ("GET", "/signin", "200 200 200 200 200 200 200 200 200 401"),
    ("POST", "/signin", "303 303 303 303 303 303 303 303 303 401"),
    ("POST", "/signout", "303 303 303 303 303 303 303 303 303 401"),
    ("GET", "/settings/tokens", "303 403 200S 200H 200S 403 403 403 403 401"),
    ("POST", "/settings/tokens", "401 403 201 400 201 403 403 403 403 401"),
    ("POST", "/settings/tokens/{id}/revoke", "401 403 303 404 303 403 403 403 403 401"),
    // Hooks post from the server's network to addresses their maker chose: admins only.
    ("GET", "/settings/hooks", "303 403 403 403 200S 403 403 403 403 401"),
    ("POST", "/settings/hooks", "401 403 403 403 201 403 403 403 403 401"),
    ("GET", "/settings/hooks/{id}", "303 403 403 403 200S 403 403 403 403 401"),
    ("POST", "/settings/hooks/{id}/remove", "401 403 403 403 303 403 403 403 403 401"),
    ("POST", "/settings/hooks/{id}/test", "401 403 403 403 303 403 403 403 403 401"),
    ("POST", "/settings/deliveries/{id}/redeliver", "401 403 403 403 303 403 403 403 403 401"),
    ("GET", "/settings/projects", "303 403 200S 200H 200S 403 403 403 403 401"),
    ("POST", "/settings/projects", "401 403 403 403 303 403 403 403 403 401"),
    ("GET", "/settings/projects/{owner}/{name}", "303 403 200S 404 200S 403 403 403 403 401"),
    ("POST", "/settings/projects/{owner}/{name}", "401 403 403 403 200S 403 403 403 403 401"),
    ("POST", "/settings/projects/{owner}/{name}/environments", "401 403 403 403 200S 403 403 403 403 401"),
    ("POST", "/settings/projects/{owner}/{name}/environments/{id}/build", "401 403 403 403 303 403 403 403 403 401"),
    ("POST", "/settings/projects/{owner}/{name}/members", "401 403 303 404 303 403 403 403 403 401"),
    ("POST", "/settings/projects/{owner}/{name}/members/remove", "401 403 303 404 303 403 403 403 403 401"),
    // Saved views belong to a person: tokens are refused, as a page.
    ("GET", "/settings/views", "303 200 200 200 200 403 403 403 403 401"),
    ("POST", "/settings/views", "303 303 303 303 303 403 403 403 403 401"),
    ("POST", "/settings/views/{id}/remove", "303 404 404 404 404 403 403 403 403 401"),
    ("GET", "/settings/users", "303 403 403 403 200 403 403 403 403 401"),
    ("POST", "/settings/users", "401 403 403 403 201 403 403 403 403 401"),
    ("GET", "/inbox", "303 403 200S 200H 200S 403 403 403 403 401"),
    ("POST", "/inbox/{id}/review", "401 403 303 404 303 403 403 403 403 401"),
    ("GET", "/settings/import", "303 403 200S 200H 200S 403 200S 403 200H 401"),
    // Who may import at all gets the page; each record is then checked against its project.
    ("POST", "/settings/import", "401 403 200 200 200 403 200 403 200 401"),
    ("GET", "/api/v1/session", "200 200 200 200 200 200 200 200 200 401"),
    ("GET", "/api/v1/openapi.json", "200H 200H 200H 200H 200H 200H 200H 200H 200H 401"),
    ("GET", "/docs/api", "200H 200H 200H 200H 200H 200H 200H 200H 200H 401"),
    ("GET", "/api/v1/projects", "200H 200S 200S 200H 200S 200S 200S 200S 200H 401"),
    ("POST", "/api/v1/projects", "401 403 403 403 201 403 403 403 403 401"),
    ("GET", "/api/v1/projects/{*slug}", "404 200 200 404 200 200 200 200 404 401"),
    ("PATCH", "/api/v1/projects/{*slug}", "401 403 403 403 200 403 403 403 403 401"),
    ("GET", "/api/v1/reports", "200H 200S 200S 200H 200S 200S 200S 200S 200H 401"),
    ("POST", "/api/v1/reports", "401 403 201 400 201 403 201 403 400 401"),
    ("GET", "/api/v1/reports/table", "200H 200S 200S 200H 200S 200S 200S 200S 200H 401"),
    ("GET", "/api/v1/reports/{id}", "404 200 200 404 200 200 200 200 404 401"),
    ("POST", "/api/v1/reports/{id}/route", "401 403 200 404 200 403 403 403 403 401"),
    ("POST", "/api/v1/reports/{id}/route/confirm", "401 403 200 404 200 403 403 403 403 401"),
    ("GET", "/api/v1/routing/{owner}/{name}", "404 200S 200S 404 200S 200S 200S 200S 404 401"),
    ("GET", "/routing/{owner}/{name}", "404 200S 200S 404 200S 200S 200S 200S 404 401"),
    ("POST", "/api/v1/reports/{id}/status", "401 403 200 404 200 403 403 403 403 401"),
    ("POST", "/api/v1/reports/{id}/assign", "401 403 200 404 200 403 403 403 403 401"),
    ("POST", "/api/v1/reports/{id}/comments", "401 403 200 404 200 403 403 403 403 401"),
    ("POST", "/reports/{id}/lifecycle", "401 403 303 404 303 403 403 403 403 401"),
    ("GET", "/reports/{id}/oracle", "303 403 200S 404 200S 403 403 403 403 401"),
    // The fixture's report has an oracle: refused on the page, said why.
    ("POST", "/reports/{id}/oracle", "401 403 400 404 400 403 403 403 403 401"),
    // The confirmation page: the private report counts only for those who may change it.
    ("POST", "/queue/bulk", "401 403 200S 200H 200S 403 403 403 403 401"),
    // Authenticated by its signature, not by who sends it: without GitHub's headers, a 400 for all.
    ("POST", "/api/v1/webhooks/github", "400 400 400 400 400 400 400 400 400 401"),
    ("GET", "/api/v1/hooks", "401 403 403 403 200S 403 403 403 403 401"),
    ("POST", "/api/v1/hooks", "401 403 403 403 201 403 403 403 403 401"),
    ("DELETE", "/api/v1/hooks/{id}", "401 403 403 403 204 403 403 403 403 401"),
    ("GET", "/api/v1/hooks/{id}/deliveries", "401 403 403 403 200S 403 403 403 403 401"),
    ("POST", "/api/v1/deliveries/{id}/redeliver", "401 403 403 403 202 403 403 403 403 401"),
    ("GET", "/api/v1/attempts", "200H 200S 200S 200H 200S 200S 200S 200S 200H 401"),
    ("GET", "/api/v1/export/reports", "200H 200S 200S 200H 200S 200S 200S 200S 200H 401"),
    ("GET", "/api/v1/export/attempts", "200H 200S 200S 200H 200S 200S 200S 200S 200H 401"),
    ("GET", "/api/v1/export/figures", "200H 200S 200S 200H 200S 200S 200S 200S 200H 401"),
    ("GET", "/api/v1/export/oracles", "404 200 200 404 200 200 200 200 404 401"),
    ("GET", "/api/v1/export/throughput", "200 200 200 200 200 200 200 200 200 401"),
    ("POST", "/api/v1/attempts", "401 403 201 400 201 201 201 403 400 401"),
    ("GET", "/api/v1/attempts/{id}", "404 200 200 404 200 200 200 200 404 401"),
    ("GET", "/api/v1/attempts/{id}/events", "404 200 200 404 200 200 200 200 404 401"),
    ("PUT", "/api/v1/attempts/{id}/trajectory", "401 403 200 404 200 409 409 403 404 401"),
    ("GET", "/api/v1/attempts/{id}/trajectory", "404 200 200 404 200 200 200 200 404 401"),
    ("POST", "/api/v1/attempts/{id}/review", "401 403 200 404 200 403 403 403 403 401"),
    ("GET", "/api/v1/figures", "200H 200S 200S 200H 200S 200S 200S 200S 200H 401"),
    ("GET", "/api/v1/agents", "200 200 200 200 200 200 200 200 200 401"),
    ("GET", "/api/v1/distributions", "200H 200S 200S 200H 200S 200S 200S 200S 200H 401"),
    ("GET", "/api/v1/throughput", "200 200 200 200 200 200 200 200 200 401"),
    ("GET", "/api/v1/glance", "200 200 200 200 200 200 200 200 200 401"),
    ("GET", "/api/v1/ranks", "200 200 200 200 200 200 200 200 200 401"),
    ("GET", "/api/v1/facets", "200H 200S 200S 200H 200S 200S 200S 200S 200H 401"),
    ("GET", "/api/v1/charts/{name}", "200H 200S 200S 200H 200S 200S 200S 200S 200H 401"),
    ("POST", "/api/v1/reruns", "401 403 202 404 202 403 403 403 403 401"),
    ("POST", "/api/v1/refine", "401 403 202 404 202 403 403 403 403 401"),
    ("GET", "/api/v1/signatures", "200H 200S 200S 200H 200S 200S 200S 200S 200H 401"),
    ("GET", "/api/v1/oracles", "404 200 200 404 200 200 200 200 404 401"),
    ("GET", "/api/v1/jobs", "200H 200S 200S 200H 200S 200S 200S 200S 200H 401"),
    // The fixture builds nothing: the cache is empty for everyone.
    ("GET", "/api/v1/runners/environments", "200H 200H 200H 200H 200H 200H 200H 200H 200H 401"),
    ("GET", "/runners/environments", "200H 200H 200H 200H 200H 200H 200H 200H 200H 401"),
    ("GET", "/oracles", "404 200S 200S 404 200S 200S 200S 200S 404 401"),
    ("GET", "/runners", "200 200 200 200 200 200 200 200 200 401"),
    ("GET", "/api/v1/jobs/{id}", "404 200 200 404 200 200 200 200 404 401"),
    ("GET", "/api/v1/jobs/{id}/events", "404 200 200 404 200 200 200 200 404 401"),
    ("GET", "/api/v1/releases", "404 200 200 404 200 200 200 200 404 401"),
    ("POST", "/api/v1/releases", "401 403 403 403 200 403 403 403 403 401"),
    ("GET", "/api/v1/reports/{id}/versions", "404 200 200 404 200 200 200 200 404 401"),
    ("POST", "/api/v1/reports/{id}/versions", "401 403 400 404 400 403 403 403 403 401"),
    ("POST", "/api/v1/reports/{id}/bisect", "401 403 400 404 400 403 403 403 403 401"),
    ("GET", "/reports/{id}/releases", "404 200 200 404 200 200 200 200 404 401"),
    ("POST", "/reports/{id}/releases", "401 403 400 404 400 403 403 403 403 401"),
    ("GET", "/api/v1/environments", "401 403 200 404 200 403 403 403 403 401"),
    ("POST", "/api/v1/environments", "401 403 403 403 201 403 403 403 403 401"),
    ("POST", "/api/v1/environments/{id}/build", "401 403 403 403 202 403 403 403 403 401"),
    ("GET", "/api/v1/environments/{id}/build", "401 403 200S 404 200S 403 403 403 403 401"),
    ("POST", "/api/v1/import", "401 403 200C 200R 200C 403 200C 403 200R 401"),
    // The public face shows public projects only, to everyone alike.
    ("GET", "/api/v1/status/{owner}/{name}", "404 404 404 404 404 404 404 404 404 401"),
    // Prometheus' own door: the metrics token (none set here), never an API token.
    ("GET", "/metrics", "200H 200H 200H 200H 200H 200H 200H 200H 200H 200H"),
    ("GET", "/status", "200H 200H 200H 200H 200H 200H 200H 200H 200H 401"),
    ("GET", "/status/{owner}/{name}", "404 404 404 404 404 404 404 404 404 401"),
    ("GET", "/status/{owner}/{name}/trend.svg", "404 404 404 404 404 404 404 404 404 401"),
    ("GET", "/status/{owner}/{name}/trend.png", "404 404 404 404 404 404 404 404 404 401"),
    ("GET", "/badge/{owner}/{name}/{file}", "404 404 404 404 404 404 404 404 404 401"),
];

/// The private project's ids the requests name.
struct Fixture {
    report: i64,
    lead: i64,
    /// The private project's buggy environment, built once (its log says "vault").
    environment: i64,
    job: i64,
    /// The attempt `job` verified.
    graded: i64,
    /// A token of the private project for each caller to revoke.
    spare_tokens: Vec<i64>,
    maintainer_password: String,
    /// The private project's hooks: one kept (with a delivery), one the
    /// page removes, one the API removes.
    hook: i64,
    delivery: i64,
    delivery_for_api: i64,
    hook_for_page: i64,
    hook_for_api: i64,
}

/// A caller: how its requests are sent.
struct Caller {
    client: reqwest::Client,
}

fn client(base: &str, auth: Option<(&str, String)>) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    // As a browser on failpass's own pages would: writes carry our Origin.
    headers.insert(reqwest::header::ORIGIN, base.parse().unwrap());
    if let Some((name, value)) = auth {
        headers.insert(reqwest::header::HeaderName::from_bytes(name.as_bytes()).unwrap(), value.parse().unwrap());
    }
    reqwest::Client::builder().default_headers(headers).redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// Signs `name` in through the sign-in form; the session cookie.
pub async fn sign_in(base: &str, name: &str, password: &str) -> String {
    let r = client(base, None)
        .post(format!("{base}/signin"))
        .form(&[("name", name), ("password", password), ("next", "/")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303, "signing {name} in: {}", r.text().await.unwrap_or_default());
    let cookie = r.headers().get("set-cookie").expect("a session cookie").to_str().unwrap().to_owned();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"), "{cookie}");
    cookie.split(';').next().unwrap().to_owned()
}

pub async fn make_user(s: &dyn Storage, name: &str, password: &str, admin: bool, role: Option<(&str, ProjectRole)>) {
    s.create_user(name, &failpass::auth::password::hash(password).await.unwrap(), admin).await.unwrap();
    if let Some((project, role)) = role {
        s.set_membership(name, project, Some(role)).await.unwrap();
    }
}

async fn project_token(s: &dyn Storage, project: &str, scope: TokenScope) -> (String, i64) {
    let p = s.get_project(project, &failpass::db::ProjectScope::All).await.unwrap().unwrap();
    let req = failpass::auth::tokens::TokenRequest {
        name: format!("{scope} of {project}"),
        scope,
        project_id: Some(p.id),
        user_id: None,
        created_by: "tests".into(),
        expires_in_days: None,
    };
    let (token, record) = failpass::auth::tokens::create(s, req).await.unwrap();
    (token, record.id)
}

async fn ok(app: &TestApp, path: &str, body: Value) -> Value {
    let r = app.post(path, &body).await;
    assert!(r.status < 300, "{path}: {} {}", r.status, r.body);
    r.body
}

/// The private project with a report, attempts, a graded failure with its
/// signature, environments and a waiting re-check; the public one beside it;
/// the callers.
async fn fixture(app: &TestApp) -> (Fixture, Vec<Caller>) {
    let s = app.storage.as_ref();
    ok(app, "/api/v1/projects", json!({"slug": "vault/secret", "public": false, "description": "vault"})).await;
    ok(app, "/api/v1/projects", json!({"slug": "other/lib"})).await;
    let report = ok(
        app,
        "/api/v1/reports",
        json!({"project": "vault/secret", "external_id": "1", "title": "vault report: softmax returns nan",
               "body": "```python\nimport vaultlib\nvaultlib.softmax([1e3])\n```\nIt returns nan.",
               "oracle": {"kind": "fail_to_pass", "source": "in_patch_test", "command": "python3 candidate.py"}}),
    )
    .await;
    assert_eq!(report["route"], "agent_first", "the refine loop needs an agent_first report: {report}");
    let report = report["id"].as_i64().unwrap();
    let mut environment = 0;
    for (name, role) in [("vault-buggy", "buggy"), ("vault-fixed", "fixed"), ("vault-release", "release")] {
        let env = ok(
            app,
            "/api/v1/environments",
            json!({"project": "vault/secret", "name": name, "role": role, "recipe": {"setup": []}}),
        )
        .await;
        if role == "buggy" {
            environment = env["id"].as_i64().unwrap();
            let build = s.start_build(environment, None, env["recipe_hash"].as_str().unwrap()).await.unwrap();
            s.finish_build(build, failpass_shared::model::BuildStatus::Built, "$ true\nvault built\n").await.unwrap();
        }
    }
    let attempt = |verdict: &str, source: &str, verify: bool| {
        json!({"report_id": report, "agent": "vault-agent", "model": "vault-model", "verdict": verdict, "verdict_source": source,
               "candidate": "import vaultlib\nassert vaultlib.softmax([1e3]) == [1.0]\n", "cost_usd": 0.25, "wall_seconds": 12.0, "verify": verify})
    };
    // A verification the test completes by hand: a graded failure with a signature.
    let graded = ok(app, "/api/v1/attempts", attempt("hypothesis", "llm", true)).await["id"].as_i64().unwrap();
    let job =
        s.claim("tests", chrono::Utc::now(), chrono::Duration::seconds(60)).await.unwrap().expect("the verify job");
    assert_eq!(job.payload.attempt_id, Some(graded));
    let grade = json!({"buggy_signatures": ["VaultError: the vault is sealed"], "reason": "no failure"});
    let v = Verification {
        grade: serde_json::from_value(grade).unwrap(),
        ..Verification::new(graded, Verdict::NotReproduced)
    };
    s.complete(job.id, "tests", chrono::Utc::now(), Some(&v)).await.unwrap();
    let r = app
        .client
        .put(format!("{}/api/v1/attempts/{graded}/trajectory", app.base))
        .header("content-type", "application/x-ndjson")
        .body("{\"action\": \"bash\", \"input\": \"ls\"}\n")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let lead = ok(
        app,
        "/api/v1/attempts",
        json!({"report_id": report, "agent": "vault-agent", "verdict": "lead", "verdict_source": "llm"}),
    )
    .await;
    let reproduced =
        ok(app, "/api/v1/attempts", attempt("reproduced", "deterministic", false)).await["id"].as_i64().unwrap();
    // A waiting re-check whose payload names the release: the queue shows it to members only.
    ok(app, "/api/v1/reruns", json!({"attempt_id": reproduced, "recheck_environment": "vault-release"})).await;

    // Hooks on the private project (nothing runs their deliveries here).
    let mut hooks = Vec::new();
    for n in 0..3 {
        let h = ok(
            app,
            "/api/v1/hooks",
            json!({"project": "vault/secret", "url": format!("https://receiver.example.org/vault-{n}")}),
        )
        .await;
        hooks.push(h["id"].as_i64().unwrap());
    }
    let closed = failpass::db::hooks::Change {
        event: failpass_shared::api::hooks::HookEvent::Status,
        report_id: report,
        attempt_id: None,
        from: Some("new".into()),
        to: "closed".into(),
    };
    s.tell(&[closed.clone(), closed]).await.unwrap();
    // Two deliveries (one the page sends again, one the API); their jobs end
    // (nothing listens at that address), so they may be sent again.
    for _ in 0..2 * hooks.len() {
        let now = chrono::Utc::now();
        let job = s.claim("tests", now, chrono::Duration::seconds(60)).await.unwrap().expect("a deliver job");
        let delivery = job.payload.delivery_id.expect("deliveries go first");
        s.fail(job.id, "tests", now, "nothing listens there", failpass::db::jobs::Retry::Never).await.unwrap();
        s.give_up_delivery(delivery, "nothing listens there").await.unwrap();
    }
    let deliveries: Vec<i64> = s.hook_deliveries(hooks[0], 2).await.unwrap().iter().map(|d| d.id).collect();
    let password = "correct horse battery staple";
    make_user(s, "viewer", password, false, Some(("vault/secret", ProjectRole::Viewer))).await;
    make_user(s, "maintainer", password, false, Some(("vault/secret", ProjectRole::Maintainer))).await;
    make_user(s, "other", password, false, Some(("other/lib", ProjectRole::Maintainer))).await;
    make_user(s, "admin", password, true, None).await;
    // A member the members' forms add and take away (no caller is them).
    make_user(s, "bystander", password, false, Some(("vault/secret", ProjectRole::Viewer))).await;
    let mut spare_tokens = Vec::new();
    for _ in CALLERS {
        spare_tokens.push(project_token(s, "vault/secret", TokenScope::Read).await.1);
    }
    let (revoked, revoked_id) = project_token(s, "vault/secret", TokenScope::Agent).await;
    s.revoke_token(revoked_id, chrono::Utc::now()).await.unwrap();
    let base = app.base.as_str();
    let cookie = |c: String| Some(("cookie", c));
    let bearer = |(t, _): (String, i64)| Some(("authorization", format!("Bearer {t}")));
    let callers = vec![
        client(base, None),
        client(base, cookie(sign_in(base, "viewer", password).await)),
        client(base, cookie(sign_in(base, "maintainer", password).await)),
        client(base, cookie(sign_in(base, "other", password).await)),
        client(base, cookie(sign_in(base, "admin", password).await)),
        client(base, bearer(project_token(s, "vault/secret", TokenScope::Agent).await)),
        client(base, bearer(project_token(s, "vault/secret", TokenScope::Ci).await)),
        client(base, bearer(project_token(s, "vault/secret", TokenScope::Read).await)),
        client(base, bearer(project_token(s, "other/lib", TokenScope::Ci).await)),
        client(base, Some(("authorization", format!("Bearer {revoked}")))),
    ]
    .into_iter()
    .map(|client| Caller { client })
    .collect();
    let fixture = Fixture {
        report,
        environment,
        lead: lead["id"].as_i64().unwrap(),
        job: job.id,
        graded,
        spare_tokens,
        maintainer_password: password.into(),
        hook: hooks[0],
        delivery: deliveries[0],
        delivery_for_api: deliveries[1],
        hook_for_page: hooks[1],
        hook_for_api: hooks[2],
    };
    (fixture, callers)
}

/// The request each route gets from caller `i`: path, content type and body.
fn request(route: &str, method: &str, f: &Fixture, i: usize) -> (String, Option<&'static str>, String) {
    let json = |v: Value| (Some("application/json"), v.to_string());
    let (path, (ct, body)) = match (method, route) {
        ("POST", "/signin") => ("/signin".to_owned(), (Some("application/x-www-form-urlencoded"), format!("name=maintainer&password={}", f.maintainer_password.replace(' ', "+")))),
        ("POST", "/signout") => ("/signout".to_owned(), (Some("application/x-www-form-urlencoded"), String::new())),
        ("POST", "/settings/tokens") => {
            ("/settings/tokens".to_owned(), (Some("application/x-www-form-urlencoded"), format!("project=vault%2Fsecret&scope=read&name=made+by+{i}")))
        }
        ("POST", "/settings/tokens/{id}/revoke") => (format!("/settings/tokens/{}/revoke", f.spare_tokens[i]), (Some("application/x-www-form-urlencoded"), String::new())),
        ("POST", "/settings/hooks") => (
            "/settings/hooks".to_owned(),
            (Some("application/x-www-form-urlencoded"), format!("project=vault%2Fsecret&url=https%3A%2F%2Freceiver.example.org%2Fpage-{i}&format=slack&status=on")),
        ),
        ("GET", "/settings/hooks/{id}") => (format!("/settings/hooks/{}", f.hook), (None, String::new())),
        ("POST", "/settings/hooks/{id}/remove") => {
            (format!("/settings/hooks/{}/remove", f.hook_for_page), (Some("application/x-www-form-urlencoded"), String::new()))
        }
        ("POST", "/settings/hooks/{id}/test") => {
            (format!("/settings/hooks/{}/test", f.hook), (Some("application/x-www-form-urlencoded"), String::new()))
        }
        ("POST", "/settings/deliveries/{id}/redeliver") => {
            (format!("/settings/deliveries/{}/redeliver", f.delivery), (Some("application/x-www-form-urlencoded"), String::new()))
        }
        ("POST", "/api/v1/hooks") => {
            ("/api/v1/hooks".to_owned(), json(json!({"project": "vault/secret", "url": format!("https://receiver.example.org/api-{i}")})))
        }
        ("DELETE", "/api/v1/hooks/{id}") => (format!("/api/v1/hooks/{}", f.hook_for_api), (None, String::new())),
        ("GET", "/api/v1/hooks/{id}/deliveries") => (format!("/api/v1/hooks/{}/deliveries", f.hook), (None, String::new())),
        ("POST", "/api/v1/deliveries/{id}/redeliver") => {
            (format!("/api/v1/deliveries/{}/redeliver", f.delivery_for_api), json(json!({})))
        }
        ("POST", "/api/v1/projects") => ("/api/v1/projects".to_owned(), json(json!({"slug": format!("made/by-{i}")}))),
        ("PATCH", "/api/v1/projects/{*slug}") => ("/api/v1/projects/vault/secret".to_owned(), json(json!({"description": "vault"}))),
        ("POST", "/settings/projects") => ("/settings/projects".to_owned(), (Some("application/x-www-form-urlencoded"), format!("slug=made%2Fpage-{i}&visibility=private"))),
        ("GET", "/settings/projects/{owner}/{name}") => ("/settings/projects/vault/secret".to_owned(), (None, String::new())),
        ("POST", "/settings/projects/{owner}/{name}") => (
            "/settings/projects/vault/secret".to_owned(),
            (Some("application/x-www-form-urlencoded"), "name=vault%2Fsecret&description=vault&visibility=private&upstream_url=".to_owned()),
        ),
        ("POST", "/settings/projects/{owner}/{name}/environments") => (
            "/settings/projects/vault/secret/environments".to_owned(),
            (Some("application/x-www-form-urlencoded"), format!("name=page-release-{i}&role=release&source=none&setup=true")),
        ),
        ("POST", "/settings/projects/{owner}/{name}/environments/{id}/build") => (
            format!("/settings/projects/vault/secret/environments/{}/build", f.environment),
            (Some("application/x-www-form-urlencoded"), String::new()),
        ),
        ("POST", "/api/v1/environments/{id}/build") => (format!("/api/v1/environments/{}/build", f.environment), json(json!({}))),
        ("GET", "/api/v1/environments/{id}/build") => (format!("/api/v1/environments/{}/build", f.environment), (None, String::new())),
        ("POST", "/settings/projects/{owner}/{name}/members") => (
            "/settings/projects/vault/secret/members".to_owned(),
            (Some("application/x-www-form-urlencoded"), "user=bystander&role=viewer".to_owned()),
        ),
        // Taking away a role already gone is done as asked: each caller may.
        ("POST", "/settings/projects/{owner}/{name}/members/remove") => (
            "/settings/projects/vault/secret/members/remove".to_owned(),
            (Some("application/x-www-form-urlencoded"), "user=bystander&confirm=yes".to_owned()),
        ),
        ("POST", "/settings/views") => (
            "/settings/views".to_owned(),
            (Some("application/x-www-form-urlencoded"), format!("name=view-{i}&address=%2Fqueue%3Fstatus%3Dopen")),
        ),
        // No caller has view 999999: each is told so.
        ("POST", "/settings/views/{id}/remove") => (
            "/settings/views/999999/remove".to_owned(),
            (Some("application/x-www-form-urlencoded"), String::new()),
        ),
        ("POST", "/settings/users") => (
            "/settings/users".to_owned(),
            (Some("application/x-www-form-urlencoded"), format!("name=made-{i}")),
        ),
        ("POST", "/inbox/{id}/review") => (
            format!("/inbox/{}/review", f.lead),
            (Some("application/x-www-form-urlencoded"), "review=rejected&comment=not+shown".to_owned()),
        ),
        ("POST", "/settings/import") => {
            let record = json!({"kind": "report", "project": "vault/secret", "external_id": format!("page-{i}"), "title": "imported"});
            let body = format!(
                "--XBOUNDARYX\r\nContent-Disposition: form-data; name=\"format\"\r\n\r\nndjson\r\n\
                 --XBOUNDARYX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"r.ndjson\"\r\n\
                 Content-Type: application/x-ndjson\r\n\r\n{record}\n\r\n--XBOUNDARYX--\r\n"
            );
            ("/settings/import".to_owned(), (Some("multipart/form-data; boundary=XBOUNDARYX"), body))
        }
        ("GET", "/api/v1/projects/{*slug}") => ("/api/v1/projects/vault/secret".to_owned(), (None, String::new())),
        ("POST", "/api/v1/reports") => {
            ("/api/v1/reports".to_owned(), json(json!({"project": "vault/secret", "external_id": format!("by-{i}"), "title": "another"})))
        }
        ("GET", "/api/v1/reports/{id}") => (format!("/api/v1/reports/{}", f.report), (None, String::new())),
        ("POST", "/api/v1/webhooks/github") => {
            ("/api/v1/webhooks/github".to_owned(), json(json!({"repository": {"full_name": "vault/secret"}})))
        }
        // A correction changes the route: the maintainer's, then the admin's back to agent first.
        ("POST", "/api/v1/reports/{id}/route") => {
            let route = if i == 2 { "human_first" } else { "agent_first" };
            (format!("/api/v1/reports/{}/route", f.report), json(json!({"route": route, "reason": format!("by {i}")})))
        }
        ("POST", "/api/v1/reports/{id}/route/confirm") => {
            (format!("/api/v1/reports/{}/route/confirm", f.report), json(json!({"reason": format!("by {i}")})))
        }
        ("GET", "/api/v1/routing/{owner}/{name}") => ("/api/v1/routing/vault/secret".to_owned(), (None, String::new())),
        ("GET", "/routing/{owner}/{name}") => ("/routing/vault/secret".to_owned(), (None, String::new())),
        ("POST", "/api/v1/reports/{id}/status") => {
            (format!("/api/v1/reports/{}/status", f.report), json(json!({"status": "reopen", "reason": format!("by {i}")})))
        }
        ("POST", "/api/v1/reports/{id}/assign") => {
            (format!("/api/v1/reports/{}/assign", f.report), json(json!({"assignee": null})))
        }
        ("POST", "/queue/bulk") => (
            "/queue/bulk".to_owned(),
            (Some("application/x-www-form-urlencoded"), format!("view=&scope=selected&action=closed&report={}", f.report)),
        ),
        ("GET", "/api/v1/releases") => ("/api/v1/releases?project=vault%2Fsecret".to_owned(), (None, String::new())),
        ("POST", "/api/v1/releases") => ("/api/v1/releases".to_owned(), json(json!({"project": "vault/secret", "template": null}))),
        ("GET", "/api/v1/reports/{id}/versions") => (format!("/api/v1/reports/{}/versions", f.report), (None, String::new())),
        ("POST", "/api/v1/reports/{id}/versions") => (format!("/api/v1/reports/{}/versions", f.report), json(json!({}))),
        ("POST", "/api/v1/reports/{id}/bisect") => (format!("/api/v1/reports/{}/bisect", f.report), json(json!({}))),
        ("GET", "/reports/{id}/releases") => (format!("/reports/{}/releases", f.report), (None, String::new())),
        ("POST", "/reports/{id}/releases") => (
            format!("/reports/{}/releases", f.report),
            (Some("application/x-www-form-urlencoded"), "action=set&fixed=1.0".to_owned()),
        ),
        ("GET", "/reports/{id}/oracle") => (format!("/reports/{}/oracle", f.report), (None, String::new())),
        ("POST", "/reports/{id}/oracle") => {
            (format!("/reports/{}/oracle", f.report), (Some("application/x-www-form-urlencoded"), "action=pause".to_owned()))
        }
        ("POST", "/reports/{id}/lifecycle") => (
            format!("/reports/{}/lifecycle", f.report),
            (Some("application/x-www-form-urlencoded"), format!("action=comment&text=by+{i}")),
        ),
        ("POST", "/api/v1/reports/{id}/comments") => {
            (format!("/api/v1/reports/{}/comments", f.report), json(json!({"text": format!("by {i}")})))
        }
        ("POST", "/api/v1/attempts") => (
            "/api/v1/attempts".to_owned(),
            json(json!({"report_id": f.report, "agent": format!("agent-{i}"), "verdict": "hypothesis", "verdict_source": "llm"})),
        ),
        ("GET", "/api/v1/attempts/{id}") => (format!("/api/v1/attempts/{}", f.lead), (None, String::new())),
        ("GET", "/api/v1/attempts/{id}/events") => (format!("/api/v1/attempts/{}/events", f.graded), (None, String::new())),
        ("PUT", "/api/v1/attempts/{id}/trajectory") => (
            format!("/api/v1/attempts/{}/trajectory", f.graded),
            (Some("application/x-ndjson"), "{\"action\": \"bash\", \"input\": \"python repro.py\"}\n".to_owned()),
        ),
        ("GET", "/api/v1/attempts/{id}/trajectory") => (format!("/api/v1/attempts/{}/trajectory", f.graded), (None, String::new())),
        ("POST", "/api/v1/attempts/{id}/review") => (format!("/api/v1/attempts/{}/review", f.lead), json(json!({"review": "accepted"}))),
        ("GET", "/api/v1/figures") => ("/api/v1/figures?group_by=project".to_owned(), (None, String::new())),
        ("GET", "/api/v1/export/figures") => ("/api/v1/export/figures?group_by=project".to_owned(), (None, String::new())),
        ("GET", "/api/v1/distributions") => ("/api/v1/distributions?metric=cost_usd&group_by=project".to_owned(), (None, String::new())),
        ("GET", "/api/v1/charts/{name}") => ("/api/v1/charts/reports?group_by=project".to_owned(), (None, String::new())),
        ("POST", "/api/v1/reruns") => ("/api/v1/reruns".to_owned(), json(json!({"report_id": f.report}))),
        ("POST", "/api/v1/refine") => ("/api/v1/refine".to_owned(), json(json!({"report_id": f.report}))),
        ("GET", "/api/v1/oracles") => ("/api/v1/oracles?project=vault%2Fsecret".to_owned(), (None, String::new())),
        ("GET", "/oracles") => ("/oracles?project=vault%2Fsecret".to_owned(), (None, String::new())),
        ("GET", "/api/v1/export/oracles") => ("/api/v1/export/oracles?table=kinds&project=vault%2Fsecret".to_owned(), (None, String::new())),
        ("GET", "/api/v1/jobs/{id}") => (format!("/api/v1/jobs/{}", f.job), (None, String::new())),
        ("GET", "/api/v1/jobs/{id}/events") => (format!("/api/v1/jobs/{}/events", f.job), (None, String::new())),
        ("GET", "/api/v1/environments") => ("/api/v1/environments?project=vault%2Fsecret".to_owned(), (None, String::new())),
        ("POST", "/api/v1/environments") => (
            "/api/v1/environments".to_owned(),
            json(json!({"project": "vault/secret", "name": format!("release-{i}"), "role": "release", "recipe": {"setup": ["true"]}})),
        ),
        ("POST", "/api/v1/import") => (
            "/api/v1/import?format=ndjson".to_owned(),
            (Some("application/x-ndjson"), json!({"kind": "report", "project": "vault/secret", "external_id": format!("imported-{i}"), "title": "imported"}).to_string()),
        ),
        ("GET", "/api/v1/status/{owner}/{name}") => ("/api/v1/status/vault/secret".to_owned(), (None, String::new())),
        ("GET", "/status/{owner}/{name}") => ("/status/vault/secret".to_owned(), (None, String::new())),
        ("GET", "/status/{owner}/{name}/trend.svg") => ("/status/vault/secret/trend.svg".to_owned(), (None, String::new())),
        ("GET", "/status/{owner}/{name}/trend.png") => ("/status/vault/secret/trend.png".to_owned(), (None, String::new())),
        ("GET", "/badge/{owner}/{name}/{file}") => ("/badge/vault/secret/reproduction-rate.svg".to_owned(), (None, String::new())),
        ("GET", path) => (path.to_owned(), (None, String::new())),
        (m, p) => panic!("the matrix has no request for {m} {p}: add one"),
    };
    (path, ct, body)
}

async fn check_matrix(app: &TestApp, engine: &str) {
    let (fixture, callers) = fixture(app).await;
    // Every route the router serves has a row, and every row a route.
    let served: Vec<(&str, &str)> = app.routes.iter().map(|r| (r.method, r.path)).collect();
    for (m, p) in &served {
        assert!(
            MATRIX.iter().any(|(rm, rp, _)| rm == m && rp == p),
            "{m} {p} is served but has no row in the authorization matrix"
        );
    }
    for (m, p, _) in MATRIX {
        assert!(served.contains(&(*m, *p)), "the matrix has a row for {m} {p}, which the router does not serve");
    }
    let mut failures = Vec::new();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    // Signing in and out replace or end the callers' own sessions: last.
    let ends_sessions = |r: &&(&str, &str, &str)| matches!(r.1, "/signin" | "/signout") && r.0 == "POST";
    let rows = MATRIX.iter().filter(|r| !ends_sessions(r)).chain(MATRIX.iter().filter(ends_sessions));
    for (method, route, row) in rows {
        let expected: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(expected.len(), CALLERS.len(), "{method} {route}: one expectation per caller");
        for (i, (caller, want)) in callers.iter().zip(expected).enumerate() {
            let (path, ct, body) = request(route, method, &fixture, i);
            let url = format!("{}{path}", app.base);
            let mut req = match *method {
                "GET" => caller.client.get(&url),
                "PATCH" => caller.client.patch(&url).body(body),
                "PUT" => caller.client.put(&url).body(body),
                "DELETE" => caller.client.delete(&url),
                _ => caller.client.post(&url).body(body),
            };
            if let Some(ct) = ct {
                req = req.header("content-type", ct);
            }
            let resp = req.send().await.unwrap();
            let status = resp.status().as_u16();
            // An event stream of a finished job ends after its last event.
            let text = resp.text().await.unwrap_or_default();
            let (code, mark) = want.split_at(3);
            let mut ok = status.to_string() == code;
            let vault = text.to_lowercase().contains("vault");
            match mark {
                "S" => ok &= vault,
                "H" => ok &= !vault,
                "C" | "R" => {
                    let v: Value = serde_json::from_str(&text).unwrap_or_default();
                    ok &= v[if mark == "C" { "created" } else { "rejected" }] == 1;
                }
                _ => {}
            }
            *counts.entry(if ok { "ok" } else { "failed" }).or_default() += 1;
            if !ok {
                failures.push(format!(
                    "{engine}: {method} {path} as {}: expected {want}, got {status}: {}",
                    CALLERS[i],
                    text.chars().take(300).collect::<String>()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cells differ:\n{}",
        failures.len(),
        counts.values().sum::<usize>(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn every_route_answers_every_caller_as_the_table_says_on_sqlite() {
    let app = spawn_app().await;
    check_matrix(&app, "sqlite").await;
}

#[tokio::test]
async fn every_route_answers_every_caller_as_the_table_says_on_postgres() {
    let (app, pg) = spawn_pg_app(Default::default()).await;
    check_matrix(&app, "postgres").await;
    drop(app);
    pg.drop_now().await;
}
