//! Accounts, sessions, tokens and the attacks the security issue replayed,
//! each with its new answer.

use failpass::db::ProjectScope;
use failpass_shared::model::{ProjectRole, TokenScope};
use serde_json::{Value, json};

use crate::access::sign_in;
use crate::helpers::{TestApp, assert_error, client_with_token, spawn_app, spawn_configured};

const PASSWORD: &str = "correct horse battery staple";

async fn add_user(app: &TestApp, name: &str, admin: bool) {
    let hash = failpass::auth::password::hash(PASSWORD).await.unwrap();
    app.storage.create_user(name, &hash, admin).await.unwrap();
}

/// A client that sends `cookie`, as a browser on failpass's own pages would (with our Origin).
fn browser(app: &TestApp, cookie: &str) -> reqwest::Client {
    let mut h = reqwest::header::HeaderMap::new();
    h.insert("cookie", cookie.parse().unwrap());
    h.insert("origin", app.base.parse().unwrap());
    reqwest::Client::builder().default_headers(h).redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

async fn me(client: &reqwest::Client, app: &TestApp) -> Value {
    client.get(format!("{}/api/v1/session", app.base)).send().await.unwrap().json().await.unwrap()
}

async fn project_token(app: &TestApp, project: &str, scope: TokenScope, days: Option<u32>) -> (String, i64) {
    let p = app.storage.get_project(project, &ProjectScope::All).await.unwrap().unwrap();
    let req = failpass::auth::tokens::TokenRequest {
        name: "t".into(),
        scope,
        project_id: Some(p.id),
        user_id: None,
        created_by: "tests".into(),
        expires_in_days: days,
    };
    let (t, r) = failpass::auth::tokens::create(app.storage.as_ref(), req).await.unwrap();
    (t, r.id)
}

#[tokio::test]
async fn sessions_rotate_on_sign_in_and_end_on_sign_out_and_password_change() {
    let app = spawn_app().await;
    add_user(&app, "alice", false).await;
    let first = sign_in(&app.base, "alice", PASSWORD).await;
    assert_eq!(me(&browser(&app, &first), &app).await["user"], "alice");
    // Signing in again from the same browser issues a new id; the old one is gone.
    let r = browser(&app, &first)
        .post(format!("{}/signin", app.base))
        .form(&[("name", "alice"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let second = r.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    assert_ne!(first, second, "a sign-in rotates the session id");
    assert_eq!(me(&browser(&app, &first), &app).await["user"], Value::Null, "the old id signs nobody in");
    assert_eq!(me(&browser(&app, &second), &app).await["user"], "alice");
    // The database keeps only digests of session ids.
    let id = second.split('=').nth(1).unwrap();
    let digest = failpass::auth::tokens::digest(id);
    assert!(app.storage.load_session(&digest, chrono::Utc::now()).await.unwrap().is_some());
    assert!(app.storage.load_session(id, chrono::Utc::now()).await.unwrap().is_none());
    // Sign-out ends it.
    let r = browser(&app, &second)
        .post(format!("{}/signout", app.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(me(&browser(&app, &second), &app).await["user"], Value::Null);
    // A new password ends every session; a removed user's cookie signs nobody in.
    let third = sign_in(&app.base, "alice", PASSWORD).await;
    app.storage
        .set_password("alice", &failpass::auth::password::hash("another long password").await.unwrap())
        .await
        .unwrap();
    assert_eq!(me(&browser(&app, &third), &app).await["user"], Value::Null);
    let fourth = sign_in(&app.base, "alice", "another long password").await;
    app.storage.remove_user("alice").await.unwrap();
    assert_eq!(me(&browser(&app, &fourth), &app).await["user"], Value::Null);
}

/// Sign-in from an address (a proxy in front appends it to X-Forwarded-For).
async fn sign_in_from(app: &TestApp, address: &str, name: &str, password: &str) -> reqwest::Response {
    browser(app, "x=y")
        .post(format!("{}/signin", app.base))
        .header("x-forwarded-for", address)
        .form(&[("name", name), ("password", password)])
        .send()
        .await
        .unwrap()
}

/// A stranger who knows a name cannot keep its owner out: failures count
/// per account and address with growing waits, the address itself is
/// capped, and an account tried from many addresses is slowed, never closed
/// to an address that has not failed. Admins see the state and lift it.
#[tokio::test]
async fn failed_sign_ins_slow_the_guesser_and_never_lock_the_owner_out() {
    use failpass::auth::signin;
    let security = failpass::security::SecurityConfig { trust_forwarded_for: true, ..Default::default() };
    let app = spawn_configured(false, 0, failpass::runner::refine::Generator::Snippet, security).await;
    for name in ["bob", "carol", "dave"] {
        add_user(&app, name, false).await;
    }
    // Five wrong passwords for bob from one address: the first are heard, then each must wait longer.
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(sign_in_from(&app, "203.0.113.7", "bob", "wrong password!").await.status().as_u16());
    }
    assert_eq!(&statuses[..4], [401; 4], "{statuses:?}");
    // The guessing address waits (the right password too)…
    let r = sign_in_from(&app, "203.0.113.7", "bob", PASSWORD).await;
    assert_eq!(r.status(), 429);
    let retry: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=4).contains(&retry), "{retry}");
    assert!(r.text().await.unwrap().contains("for this account from your address"));
    // …but the account is not locked for anyone else: the right password from another address works at once…
    assert_eq!(sign_in_from(&app, "198.51.100.1", "bob", PASSWORD).await.status(), 303);
    // …and the guessing address is heard again once it waited.
    tokio::time::sleep(std::time::Duration::from_secs(retry)).await;
    assert_eq!(sign_in_from(&app, "203.0.113.7", "bob", PASSWORD).await.status(), 303);

    // carol tried from ten addresses, once each: the account is under attack.
    for i in 0..signin::ACCOUNT_ALARM {
        assert_eq!(sign_in_from(&app, &format!("192.0.2.{}", i + 1), "carol", "wrong password!").await.status(), 401);
    }
    let held = signin::throttle(app.storage.as_ref(), "carol", chrono::Utc::now()).await.unwrap();
    assert!(held.under_attack && held.addresses.len() == 10, "{held:?}");
    // An address that failed now waits half a minute…
    let r = sign_in_from(&app, "192.0.2.1", "carol", PASSWORD).await;
    assert_eq!(r.status(), 429);
    let retry: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry > 20 && retry <= 31, "{retry}");
    // …while carol, from an address that never failed, signs in: a second later, not refused.
    let started = std::time::Instant::now();
    assert_eq!(sign_in_from(&app, "198.51.100.2", "carol", PASSWORD).await.status(), 303);
    assert!(started.elapsed() >= signin::SLOWDOWN, "{:?}", started.elapsed());

    // An admin sees it on the command line and lifts it.
    let bin = env!("CARGO_BIN_EXE_failpass");
    let db = app.data_dir().join("failpass.db");
    let cli = |args: &[&str]| {
        let out =
            std::process::Command::new(bin).args(args).args(["--database-url", db.to_str().unwrap()]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(cli(&["user", "list"]).contains("carol  (since"), "listed");
    assert!(cli(&["user", "list"]).contains("sign-in throttled (`failpass user throttle carol`)"));
    let shown = cli(&["user", "throttle", "carol"]);
    assert!(shown.contains("carol: 10 failed sign-in(s)") && shown.contains("under attack"), "{shown}");
    assert!(shown.contains("from 192.0.2.1: 1 failure(s), waits until"), "{shown}");
    assert!(cli(&["user", "unthrottle", "carol"]).contains("10 failed sign-in(s) from 10 address(es) forgotten"));
    assert_eq!(sign_in_from(&app, "192.0.2.1", "carol", PASSWORD).await.status(), 303, "lifted at once");
    assert!(signin::throttle(app.storage.as_ref(), "carol", chrono::Utc::now()).await.unwrap().is_clear());

    // One address failing across many names is capped, whatever the name; other addresses are not.
    for i in 0..signin::PER_ADDRESS {
        assert_eq!(sign_in_from(&app, "203.0.113.99", &format!("nobody-{i}"), "wrong password!").await.status(), 401);
    }
    let r = sign_in_from(&app, "203.0.113.99", "dave", PASSWORD).await;
    assert_eq!(r.status(), 429);
    assert!(r.text().await.unwrap().contains("from your address"));
    assert_eq!(sign_in_from(&app, "198.51.100.3", "dave", PASSWORD).await.status(), 303);
}

#[tokio::test]
async fn tokens_that_expired_or_were_revoked_say_so_and_last_use_is_kept() {
    let app = spawn_app().await;
    app.project("t/p").await;
    let (live, live_id) = project_token(&app, "t/p", TokenScope::Read, Some(30)).await;
    let (dead, dead_id) = project_token(&app, "t/p", TokenScope::Read, None).await;
    app.storage.revoke_token(dead_id, chrono::Utc::now()).await.unwrap();
    let get = |token: &str| {
        let c = client_with_token(token);
        let url = format!("{}/api/v1/projects/t/p", app.base);
        async move { c.get(url).send().await.unwrap() }
    };
    assert_eq!(get(&live).await.status(), 200);
    let used = app.storage.get_token(live_id).await.unwrap().unwrap();
    assert!(used.last_used_at.is_some(), "last use is recorded");
    let r = get(&dead).await;
    assert_eq!(r.status(), 401);
    assert!(r.text().await.unwrap().contains("was revoked"));
    assert!(get("fp_0000").await.text().await.unwrap().contains("unknown API token"));
    let r = app
        .anon
        .get(format!("{}/api/v1/projects", app.base))
        .header("authorization", "Basic abc")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // Stored as a digest only.
    assert!(app.storage.token_by_hash(&live).await.unwrap().is_none());
    assert!(app.storage.token_by_hash(&failpass::auth::tokens::digest(&live)).await.unwrap().is_some());
}

#[tokio::test]
async fn an_agent_token_cannot_grade_its_own_attempt_or_speak_for_a_human() {
    let app = spawn_app().await;
    app.project("a/p").await;
    let report = app.report(json!({"project": "a/p", "external_id": "1", "title": "t", "oracle": {"kind": "fail_to_pass", "source": "authored", "command": "python3 candidate.py"}})).await;
    let agent = client_with_token(&project_token(&app, "a/p", TokenScope::Agent, None).await.0);
    let post = |body: Value| {
        let agent = agent.clone();
        let url = format!("{}/api/v1/attempts", app.base);
        async move {
            let r = agent.post(url).json(&body).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let (status, body) =
        post(json!({"report_id": report, "agent": "a", "verdict": "reproduced", "verdict_source": "deterministic"}))
            .await;
    assert_eq!(status, 400, "{body}");
    assert!(body["message"].as_str().unwrap().contains("verdict_source"), "{body}");
    let (status, _) = post(
        json!({"report_id": report, "agent": "a", "verdict": "lead", "verdict_source": "llm", "review": "accepted"}),
    )
    .await;
    assert_eq!(status, 400);
    let (status, body) = post(
        json!({"report_id": report, "agent": "a", "verdict": "lead", "verdict_source": "llm", "candidate": "print(1)"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        app.get(&format!("/api/v1/reports/{report}")).await.body["status"],
        "needs_review",
        "a lead waits for a human; nothing counts as reproduced"
    );
}

#[tokio::test]
async fn cli_adds_users_and_tokens_and_the_token_works() {
    let app = spawn_app().await;
    app.project("cli/p").await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.db");
    let bin = env!("CARGO_BIN_EXE_failpass");
    let run = |args: &[&str], stdin: &str| {
        use std::io::Write;
        let mut child = std::process::Command::new(bin)
            .args(args)
            .args(["--database-url", db.to_str().unwrap()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(&["user", "add", "root-user", "--admin"], "long enough password\n");
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, _, err) = run(&["user", "add", "weak"], "short\n");
    assert_eq!(code, Some(1));
    assert!(err.contains("at least 10 characters"), "{err}");
    let (code, _, err) = run(&["user", "add", "root-user"], "long enough password\n");
    assert_eq!(code, Some(1));
    assert!(err.contains("already exists"), "{err}");
    let (_, out, _) = run(&["user", "list"], "");
    assert!(out.contains("root-user  admin"), "{out}");
    let (code, _, err) = run(&["user", "grant", "root-user", "--project", "no/such", "--role", "viewer"], "");
    assert_eq!(code, Some(1));
    assert!(err.contains("project `no/such` does not exist"), "{err}");
    let (code, out, err) = run(&["token", "create", "--user", "root-user", "--expires", "7"], "");
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("copy it now"), "{err}");
    let token = out.trim().to_owned();
    assert!(token.starts_with("fp_") && token.len() == 67, "{token}");
    let (_, out, _) = run(&["token", "list"], "");
    assert!(out.contains(&token[..11]) && !out.contains(&token), "lists show the prefix, never the token: {out}");
    let (code, _, err) = run(&["token", "create", "--project", "x/y"], "");
    assert_eq!(code, Some(1), "{err}");
    let (code, out, _) = run(&["token", "revoke", "1"], "");
    assert_eq!(code, Some(0), "{out}");
    let (code, _, err) = run(&["token", "revoke", "99"], "");
    assert_eq!(code, Some(1));
    assert!(err.contains("token 99 does not exist"), "{err}");
}

#[tokio::test]
async fn require_sign_in_shows_nothing_to_anonymous_callers_and_private_by_default_hides_new_projects() {
    let security =
        failpass::security::SecurityConfig { require_sign_in: true, private_by_default: true, ..Default::default() };
    let app = spawn_configured(false, 0, failpass::runner::refine::Generator::Snippet, security).await;
    let p = app.project("quiet/lib").await;
    assert_eq!(p["public"], false, "new projects are private by default");
    assert_eq!(app.post("/api/v1/projects", &json!({"slug": "loud/lib", "public": true})).await.body["public"], true);
    let anon = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let get = |path: &str| anon.get(format!("{}{path}", app.base)).send();
    assert_eq!(get("/api/v1/reports").await.unwrap().status(), 401, "even public projects need a sign-in");
    assert_eq!(get("/api/v1/projects/loud/lib").await.unwrap().status(), 401);
    assert_eq!(get("/healthz").await.unwrap().status(), 200);
    let session: Value = get("/api/v1/session").await.unwrap().json().await.unwrap();
    assert_eq!(session["require_sign_in"], true);
    let page = get("/queue?project=x").await.unwrap();
    assert_eq!(page.status(), 303);
    assert_eq!(page.headers()["location"], "/signin?next=%2Fqueue");
    assert_eq!(get("/signin").await.unwrap().status(), 200);
    // A signed-in user sees the public project (and no private one they are not a member of).
    add_user(&app, "dora", false).await;
    let dora = browser(&app, &sign_in(&app.base, "dora", PASSWORD).await);
    let list: Value = dora.get(format!("{}/api/v1/projects", app.base)).send().await.unwrap().json().await.unwrap();
    let slugs: Vec<&str> = list.as_array().unwrap().iter().map(|p| p["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs, ["loud/lib"]);
    // Imports follow the switch too, and a project record cannot flip visibility without an admin.
    app.storage.set_membership("dora", "quiet/lib", Some(ProjectRole::Maintainer)).await.unwrap();
    let r = dora
        .post(format!("{}/api/v1/import?format=ndjson", app.base))
        .header("content-type", "application/x-ndjson")
        .body("{\"kind\":\"project\",\"slug\":\"quiet/lib\",\"public\":true}\n{\"kind\":\"project\",\"slug\":\"new/one\"}\n{\"kind\":\"project\",\"slug\":\"quiet/lib\",\"benchmark\":true}\n")
        .send()
        .await
        .unwrap();
    let summary: Value = r.json().await.unwrap();
    assert_eq!(summary["rejected"], 3, "{summary}");
    assert!(summary.to_string().contains("only admins change a project's visibility"), "{summary}");
    assert!(summary.to_string().contains("only admins mark a project a benchmark"), "{summary}");
    assert_eq!(app.get("/api/v1/projects/quiet/lib").await.body["public"], false);
    assert_eq!(app.get("/api/v1/projects/quiet/lib").await.body["benchmark"], false);
}

/// The attacks the issue replayed against `serve --demo`, each refused.
#[tokio::test]
async fn the_replayed_attacks_fail() {
    let app = crate::helpers::spawn_app_with_demo().await;
    let anon = &app.anon;
    let base = &app.base;
    // 1. Anyone who reaches the port runs commands: environments and verify need an admin and a maintainer.
    let env = json!({"project": "fastnum/fastnum", "name": "evil", "role": "release", "recipe": {"setup": ["id > /tmp/pwned"]}});
    let r = anon.post(format!("{base}/api/v1/environments")).json(&env).send().await.unwrap();
    assert_eq!(r.status(), 401);
    let r = anon
        .post(format!("{base}/api/v1/attempts"))
        .json(&json!({"report_id": 1, "agent": "x", "verdict": "hypothesis", "verdict_source": "llm", "verify": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // … nor can a maintainer replace a recipe the runner would build.
    let maintainer_pw = failpass::demo::credentials(&app.data_dir()).unwrap();
    let pw = maintainer_pw
        .lines()
        .find(|l| l.trim_start().starts_with("demo-maintainer"))
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_owned();
    let maint = browser(&app, &sign_in(base, "demo-maintainer", &pw).await);
    let r = maint.post(format!("{base}/api/v1/environments")).json(&env).send().await.unwrap();
    assert_eq!(r.status(), 403, "only admins' recipes are built");
    // 2. A page on another origin posts text/plain NDJSON to the import with the operator's cookie.
    let admin_pw = maintainer_pw
        .lines()
        .find(|l| l.trim_start().starts_with("demo-admin"))
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_owned();
    let admin_cookie = sign_in(base, "demo-admin", &admin_pw).await;
    let forged = "{\"kind\":\"environment\",\"project\":\"fastnum/fastnum\",\"name\":\"evil\",\"role\":\"release\",\"recipe\":{\"setup\":[\"id\"]}}\n";
    let cross = reqwest::Client::new()
        .post(format!("{base}/api/v1/import?format=ndjson"))
        .header("cookie", &admin_cookie)
        .header("origin", "http://127.0.0.1:1")
        .header("sec-fetch-site", "same-site")
        .header("content-type", "text/plain;charset=UTF-8")
        .body(forged)
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), 403, "another origin's write is refused");
    // The same host and port under https, the server being plain http: another origin too.
    let swapped = base.replacen("http://", "https://", 1);
    for (header, value) in [("origin", swapped.clone()), ("referer", format!("{swapped}/settings/import"))] {
        let r = reqwest::Client::new()
            .post(format!("{base}/api/v1/import?format=ndjson"))
            .header("cookie", &admin_cookie)
            .header(header, value)
            .header("content-type", "application/x-ndjson")
            .body(forged)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "a scheme-swapped {header} is refused");
    }
    let same_origin_plain = browser(&app, &admin_cookie)
        .post(format!("{base}/api/v1/import?format=ndjson"))
        .header("content-type", "text/plain")
        .body(forged)
        .send()
        .await
        .unwrap();
    assert_eq!(same_origin_plain.status(), 415, "text/plain never reaches the import");
    let no_origin = reqwest::Client::new()
        .post(format!("{base}/api/v1/import?format=ndjson"))
        .header("cookie", &admin_cookie)
        .header("content-type", "application/x-ndjson")
        .body(forged)
        .send()
        .await
        .unwrap();
    assert_eq!(no_origin.status(), 403, "a cookie write without Origin or Referer is refused");
    assert!(app.storage.list_environments("fastnum/fastnum").await.unwrap().iter().all(|e| e.name != "evil"));
    // 3. DNS rebinding: another host name for the same address.
    let r = reqwest::Client::new()
        .get(format!("{base}/api/v1/projects"))
        .header("host", "rebind.attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 421);
    // 4. A forged deterministic verdict, a title overwrite and a visibility flip through the import, anonymously.
    let lines = "{\"kind\":\"attempt\",\"report_id\":1,\"agent\":\"x\",\"verdict\":\"reproduced\",\"verdict_source\":\"deterministic\"}\n\
                 {\"kind\":\"project\",\"slug\":\"acme/trainer-internal\",\"public\":true}\n";
    let r = anon
        .post(format!("{base}/api/v1/import?format=ndjson"))
        .header("content-type", "application/x-ndjson")
        .body(lines)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // 5. The private project, to anyone: as missing as a project that does not exist.
    let private = anon.get(format!("{base}/api/v1/projects/acme/trainer-internal")).send().await.unwrap();
    let missing = anon.get(format!("{base}/api/v1/projects/acme/no-such-project")).send().await.unwrap();
    assert_eq!((private.status(), missing.status()), (reqwest::StatusCode::NOT_FOUND, reqwest::StatusCode::NOT_FOUND));
    let (a, b) = (private.json::<Value>().await.unwrap(), missing.json::<Value>().await.unwrap());
    assert_eq!(
        a["message"].as_str().unwrap().replace("trainer-internal", "X"),
        b["message"].as_str().unwrap().replace("no-such-project", "X")
    );
    // 6. Anonymous reviews.
    let r = anon
        .post(format!("{base}/api/v1/attempts/1/review"))
        .json(&json!({"review": "accepted"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // 7. Every response carries the security headers; a chart may be framed, a page may not.
    let page = anon.get(format!("{base}/")).send().await.unwrap();
    let h = page.headers();
    assert!(h["content-security-policy"].to_str().unwrap().contains("'wasm-unsafe-eval'"));
    assert!(!h["content-security-policy"].to_str().unwrap().contains("unsafe-inline"));
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["x-frame-options"], "DENY");
    assert!(h.contains_key("referrer-policy"));
    let chart = anon.get(format!("{base}/api/v1/charts/rate?group_by=route")).send().await.unwrap();
    assert!(!chart.headers().contains_key("x-frame-options"), "charts may be embedded");
    assert_eq!(chart.headers()["x-content-type-options"], "nosniff");
    let error = anon.get(format!("{base}/api/v1/nothing")).send().await.unwrap();
    assert_eq!(error.headers()["x-content-type-options"], "nosniff");
}

/// What someone outside a private project reads about it is what they read
/// about a project that does not exist, name for name.
#[tokio::test]
async fn a_private_project_answers_exactly_as_a_missing_one() {
    let app = spawn_app().await;
    app.post("/api/v1/projects", &json!({"slug": "hid/den", "public": false})).await;
    let report = app.report(json!({"project": "hid/den", "external_id": "7", "title": "hidden"})).await;
    let attempt =
        app.attempt(json!({"report_id": report, "agent": "a", "verdict": "lead", "verdict_source": "llm"})).await["id"]
            .as_i64()
            .unwrap();
    app.project("pub/lic").await;
    let outsider = client_with_token(&project_token(&app, "pub/lic", TokenScope::Ci, None).await.0);
    let ask = |method: &'static str, path: String, body: Option<Value>| {
        let c = outsider.clone();
        let url = format!("{}{path}", app.base);
        async move {
            let req = if method == "GET" { c.get(url) } else { c.post(url).json(&body.unwrap_or(Value::Null)) };
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    // (method, the hidden project's request, the missing one's, their bodies)
    type Pair = (&'static str, String, String, Option<Value>, Option<Value>);
    let pairs: Vec<Pair> = vec![
        ("GET", "/api/v1/projects/hid/den".to_string(), "/api/v1/projects/hid/dun".into(), None, None),
        ("GET", format!("/api/v1/reports/{report}"), "/api/v1/reports/987654".into(), None, None),
        ("GET", format!("/api/v1/attempts/{attempt}"), "/api/v1/attempts/987654".into(), None, None),
        ("GET", "/api/v1/reports?project=hid%2Fden".into(), "/api/v1/reports?project=hid%2Fdun".into(), None, None),
        ("GET", "/api/v1/figures?project=hid%2Fden".into(), "/api/v1/figures?project=hid%2Fdun".into(), None, None),
        ("GET", "/api/v1/oracles?project=hid%2Fden".into(), "/api/v1/oracles?project=hid%2Fdun".into(), None, None),
        (
            "GET",
            "/api/v1/environments?project=hid%2Fden".into(),
            "/api/v1/environments?project=hid%2Fdun".into(),
            None,
            None,
        ),
        (
            "GET",
            "/api/v1/signatures?project=hid%2Fden".into(),
            "/api/v1/signatures?project=hid%2Fdun".into(),
            None,
            None,
        ),
        (
            "GET",
            "/api/v1/throughput?project=hid%2Fden".into(),
            "/api/v1/throughput?project=hid%2Fdun".into(),
            None,
            None,
        ),
        (
            "POST",
            "/api/v1/reports".into(),
            "/api/v1/reports".into(),
            Some(json!({"project": "hid/den", "external_id": "8", "title": "x"})),
            Some(json!({"project": "hid/dun", "external_id": "8", "title": "x"})),
        ),
        (
            "POST",
            "/api/v1/attempts".into(),
            "/api/v1/attempts".into(),
            Some(json!({"report_id": report, "agent": "a", "verdict": "hypothesis", "verdict_source": "llm"})),
            Some(json!({"report_id": 987654, "agent": "a", "verdict": "hypothesis", "verdict_source": "llm"})),
        ),
        (
            "POST",
            "/api/v1/attempts".into(),
            "/api/v1/attempts".into(),
            Some(
                json!({"report": {"project": "hid/den", "external_id": "7"}, "agent": "a", "verdict": "hypothesis", "verdict_source": "llm"}),
            ),
            Some(
                json!({"report": {"project": "hid/dun", "external_id": "7"}, "agent": "a", "verdict": "hypothesis", "verdict_source": "llm"}),
            ),
        ),
    ];
    for (method, hidden, missing, hidden_body, missing_body) in pairs {
        let (s1, t1) = ask(method, hidden.clone(), hidden_body).await;
        let (s2, t2) = ask(method, missing.clone(), missing_body).await;
        let same = |t: &str| {
            t.replace("hid/den", "P")
                .replace("hid%2Fden", "P")
                .replace("hid/dun", "P")
                .replace("hid%2Fdun", "P")
                .replace(&report.to_string(), "N")
                .replace(&attempt.to_string(), "N")
                .replace("987654", "N")
        };
        assert_eq!((s1, same(&t1)), (s2, same(&t2)), "{method} {hidden} answers unlike {missing}");
    }
    // The same through an import, line for line.
    let lines = |p: &str| {
        format!(
            "{{\"kind\":\"report\",\"project\":\"{p}\",\"external_id\":\"9\",\"title\":\"x\"}}\n{{\"kind\":\"attempt\",\"report\":{{\"project\":\"{p}\",\"external_id\":\"7\"}},\"agent\":\"a\",\"verdict\":\"hypothesis\",\"verdict_source\":\"llm\"}}\n"
        )
    };
    let import = |body: String| {
        let c = outsider.clone();
        let url = format!("{}/api/v1/import?format=ndjson", app.base);
        async move {
            c.post(url)
                .header("content-type", "application/x-ndjson")
                .body(body)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    };
    let (a, b) = (import(lines("hid/den")).await, import(lines("hid/dun")).await);
    assert_eq!(a.replace("hid/den", "P"), b.replace("hid/dun", "P"));
    assert_error(&app.get("/api/v1/reports/987654").await, 404, "not_found", "987654");
}

/// A burst of guesses in parallel gets no more checks than the free ones
/// (and the one that counts the others): each attempt is counted before its
/// password is, and weighed against every other.
#[tokio::test]
async fn parallel_guesses_count_against_each_other() {
    let app = spawn_app().await;
    add_user(&app, "erin", false).await;
    let guesses = (0..12).map(|i| {
        let c = browser(&app, "x=y");
        let url = format!("{}/signin", app.base);
        async move {
            c.post(url)
                .form(&[("name", "erin"), ("password", &format!("guess number {i}"))])
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    });
    let statuses = futures_util::future::join_all(guesses).await;
    let checked = statuses.iter().filter(|s| **s == 401).count();
    assert!(checked <= failpass::auth::signin::PAIR_FREE as usize + 1, "{checked} guesses were checked: {statuses:?}");
    assert!(statuses.iter().all(|s| *s == 401 || *s == 429), "{statuses:?}");
}

/// Behind TLS (`--public-url https://…`) the session cookie is Secure, and
/// only that host is served.
#[tokio::test]
async fn an_https_public_url_makes_the_cookie_secure() {
    let security = failpass::security::SecurityConfig {
        public_url: Some("https://failpass.example.org".into()),
        ..Default::default()
    };
    let app = spawn_configured(false, 0, failpass::runner::refine::Generator::Snippet, security).await;
    add_user(&app, "fay", false).await;
    let c = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let r = c
        .post(format!("{}/signin", app.base))
        .header("host", "failpass.example.org")
        .header("origin", "https://failpass.example.org")
        .form(&[("name", "fay"), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.contains("Secure") && cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"), "{cookie}");
    assert!(r.headers().contains_key("strict-transport-security"));
    // The loopback address it happens to listen on is not that host.
    assert_eq!(c.get(format!("{}/healthz", app.base)).send().await.unwrap().status(), 421);
    // A signed-in write from the http twin of the public URL is refused.
    let r = c
        .post(format!("{}/signout", app.base))
        .header("host", "failpass.example.org")
        .header("origin", "http://failpass.example.org")
        .header("cookie", cookie.split(';').next().unwrap())
        .form(&[("x", "y")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
}

/// A page a signed-in user may not use says why, as a page.
#[tokio::test]
async fn a_page_refused_to_a_signed_in_user_is_a_page() {
    let app = spawn_app().await;
    add_user(&app, "gus", false).await;
    let gus = browser(&app, &sign_in(&app.base, "gus", PASSWORD).await);
    let r = gus.get(format!("{}/settings/tokens", app.base)).send().await.unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let text = r.text().await.unwrap();
    assert!(text.contains("Not for your account") && text.contains("manage tokens"), "{text}");
}

/// The throttle's counts on both engines: per key, excluding a sign-in's
/// own row, and an account's keys found and forgotten by prefix (a name
/// with `%` and `_` in it matches nothing else).
#[tokio::test]
async fn the_throttle_counts_the_same_on_both_engines() {
    use std::sync::Arc;
    crate::helpers::run_storage_test(|s: Arc<dyn failpass::db::Storage>| async move {
        let now = chrono::Utc::now();
        let since = now - chrono::Duration::minutes(15);
        let at = |secs: i64| now - chrono::Duration::seconds(secs);
        for (key, ago) in [
            ("user:a_%", 30),
            ("pair:a_%|addr:1.2.3.4", 30),
            ("pair:a_%|addr:1.2.3.4", 10),
            ("pair:ab|addr:9.9.9.9", 5),
        ] {
            s.record_signin_failure(&[key.to_owned()], at(ago)).await.unwrap();
        }
        let own = s.record_signin_failure(&["pair:a_%|addr:1.2.3.4".to_owned()], now).await.unwrap()[0];
        let c = s.signin_failures("pair:a_%|addr:1.2.3.4", since, own).await.unwrap();
        assert_eq!(c.count, 2, "its own row is not counted");
        assert_eq!(c.newest.map(|n| (now - n).num_seconds()), Some(10));
        assert_eq!(c.oldest.map(|n| (now - n).num_seconds()), Some(30));
        let keys = s.signin_failure_keys("user:a_%", "pair:a_%|", since).await.unwrap();
        let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["pair:a_%|addr:1.2.3.4", "user:a_%"], "ab's key does not match a_%'s prefix");
        assert_eq!(keys[0].1.count, 3);
        assert_eq!(s.forget_signin_failure_keys("user:a_%", "pair:a_%|").await.unwrap(), 4);
        assert_eq!(s.signin_failure_keys("user:ab", "pair:ab|", since).await.unwrap().len(), 1, "ab's is kept");
    })
    .await;
}
