//! Browser tests: accounts, tokens, webhooks, cross-site writes, the public status pages, trajectories and releases.

use super::*;

/// Each user is offered only what they may use: anonymous visitors and
/// viewers see no rerun or review buttons; a maintainer does, and makes an
/// API token on the tokens page, shown once.
#[tokio::test]
async fn only_what_a_user_may_use_is_offered_and_a_token_is_shown_once() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 1100).await;
    let page: Page<ReportSummary> = h.api("/api/v1/reports?project=fastnum/fastnum&q=softmax").await;
    let report = format!("{}/reports/{}", h.base, page.items[0].id);
    let buttons = |css: &'static str| {
        let c = h.client.clone();
        async move { c.find_all(Locator::Css(css)).await.unwrap_or_default().len() }
    };
    // Anonymous: the public report, no buttons, a way to sign in.
    h.client.goto(&report).await.unwrap();
    h.text("attempts").await;
    h.text("sign-in").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        buttons("[data-testid=rerun]").await + buttons("[data-testid=report-actions]").await,
        0,
        "nothing to rerun for a visitor"
    );
    h.screenshot("report-anonymous.png").await;
    // A viewer of the private project: reads it, may not rerun anything.
    h.sign_in("demo-viewer").await;
    let private =
        h.http.get(format!("{}/api/v1/reports?project=acme%2Ftrainer-internal", h.base)).send().await.unwrap();
    assert_eq!(private.status(), 404, "anonymous API callers do not see the private project: it is not found");
    h.client.goto(&report).await.unwrap();
    h.text("attempts").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(buttons("[data-testid=rerun]").await, 0, "a viewer elsewhere may not rerun fastnum's attempts");
    assert_eq!(buttons("[data-testid=status-form]").await, 0, "nor change its status");
    assert!(h.text("activity").await.contains("taken in"), "but reads its activity");
    h.client.goto(&format!("{}/queue?project=acme%2Ftrainer-internal", h.base)).await.unwrap();
    h.client
        .wait()
        .for_element(Locator::Css("[data-testid=queue-row]"))
        .await
        .expect("the viewer sees the private project's reports");
    assert_eq!(buttons("[data-testid=bulk-form]").await, 0);
    // Signing out forgets it.
    h.client.find(Locator::Css(".account button")).await.unwrap().click().await.unwrap();
    h.text("sign-in").await;
    h.client.goto(&format!("{}/queue?project=acme%2Ftrainer-internal", h.base)).await.unwrap();
    // As for a project that does not exist: not found, said as an error (never an empty list).
    assert!(
        h.text("error").await.contains("project `acme/trainer-internal` not found"),
        "the private project's reports are gone after signing out"
    );
    // A maintainer of fastnum: rerun buttons, the bulk rerun, and tokens.
    h.sign_in("demo-maintainer").await;
    h.client.goto(&report).await.unwrap();
    h.client
        .wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::Css("[data-testid=rerun]"))
        .await
        .expect("a maintainer may rerun");
    h.client.wait().for_element(Locator::Css("[data-testid=report-actions]")).await.unwrap();
    h.screenshot("report-maintainer.png").await;
    // The header's Set-up leads to the server's pages, whose header has Tokens.
    h.client.find(Locator::LinkText("Set-up")).await.unwrap().click().await.unwrap();
    h.client.wait().for_element(Locator::LinkText("Tokens")).await.unwrap().click().await.unwrap();
    h.client.wait().for_element(Locator::Css("[data-testid=create-token]")).await.unwrap();
    h.client.find(Locator::Css("select[name=scope]")).await.unwrap().select_by_value("agent").await.unwrap();
    h.client.find(Locator::Css("input[name=name]")).await.unwrap().send_keys("nightly agent").await.unwrap();
    h.client.find(Locator::Css("[data-testid=create-token]")).await.unwrap().click().await.unwrap();
    let token = h.text("new-token").await;
    assert!(token.starts_with("fp_") && token.len() == 67, "{token}");
    h.screenshot("tokens-created.png").await;
    // It works for its project, and is never shown again.
    let agent = reqwest::Client::new();
    let me: serde_json::Value =
        agent.get(format!("{}/api/v1/session", h.base)).bearer_auth(&token).send().await.unwrap().json().await.unwrap();
    assert_eq!(me["token"]["scope"], "agent");
    h.client.goto(&format!("{}/settings/tokens", h.base)).await.unwrap();
    let listed = h.text("tokens").await;
    assert!(listed.contains(&token[..11]) && !listed.contains(&token), "{listed}");
    assert!(h.client.find(Locator::Css("[data-testid=new-token]")).await.is_err());
    // Revoking asks first: unticked, the click does nothing.
    h.client.find(Locator::Css("[data-testid=revoke]")).await.unwrap().click().await.unwrap();
    assert!(!h.text("tokens").await.contains("revoked"), "revoked without the box ticked");
    h.client.find(Locator::Css("[data-testid=confirm-revoke]")).await.unwrap().click().await.unwrap();
    h.client.find(Locator::Css("[data-testid=revoke]")).await.unwrap().click().await.unwrap();
    h.until("the token to be revoked", || async { h.text("tokens").await.contains("revoked") }).await;
    let r = agent.get(format!("{}/api/v1/session", h.base)).bearer_auth(&token).send().await.unwrap();
    assert_eq!(r.status(), 401);
    h.finish().await;
}

/// The sign-in and token pages on a phone: readable, no sideways scrolling.
#[tokio::test]
async fn account_pages_at_390_px() {
    let _one = BROWSER.lock().await;
    let h = start(390, 844).await;
    h.client.goto(&format!("{}/signin", h.base)).await.unwrap();
    h.client.wait().for_element(Locator::Css("input[name=password]")).await.unwrap();
    assert!(h.sideways().await <= 0);
    // A wrong password is named on the page, the name kept.
    h.client.find(Locator::Css("input[name=name]")).await.unwrap().send_keys("demo-admin").await.unwrap();
    h.client.find(Locator::Css("input[name=password]")).await.unwrap().send_keys("not the password").await.unwrap();
    h.client.find(Locator::Css("[data-testid=signin-submit]")).await.unwrap().click().await.unwrap();
    assert!(h.text("signin-error").await.contains("wrong name or password"));
    h.screenshot("signin-390.png").await;
    h.sign_in("demo-admin").await;
    h.client.goto(&format!("{}/settings/tokens", h.base)).await.unwrap();
    h.client.wait().for_element(Locator::Css("[data-testid=create-token]")).await.unwrap();
    assert!(h.sideways().await <= 0, "the tokens page does not scroll sideways (its table scrolls inside its frame)");
    h.screenshot("tokens-390.png").await;
    h.client.goto(&format!("{}/", h.base)).await.unwrap();
    h.text("signed-in-as").await;
    assert!(h.sideways().await <= 0, "the header with the account fits");
    h.screenshot("overview-signed-in-390.png").await;
    h.finish().await;
}

/// The webhooks page as an admin uses it: a wrong address named, a hook
/// added (its secret shown once), a change delivered by the queue's
/// executor to a local receiver, the hook's log with the receiver's answer;
/// at 1280 and at 390 px without sideways scrolling.
#[tokio::test]
async fn webhooks_page_adds_a_hook_and_shows_its_deliveries() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 900).await;
    h.sign_in("demo-admin").await;
    h.client.goto(&format!("{}/settings/projects", h.base)).await.unwrap();
    h.client.wait().for_element(Locator::LinkText("Webhooks")).await.unwrap().click().await.unwrap();
    h.client.wait().for_element(Locator::Css("[data-testid=create-hook]")).await.unwrap();
    let fill = |url: String| {
        let c = h.client.clone();
        async move {
            c.find(Locator::Css("select[name=project]"))
                .await
                .unwrap()
                .select_by_value("fastnum/fastnum")
                .await
                .unwrap();
            let field = c.find(Locator::Css("input[name=url]")).await.unwrap();
            field.clear().await.unwrap();
            field.send_keys(&url).await.unwrap();
            c.find(Locator::Css("select[name=format]")).await.unwrap().select_by_value("signed").await.unwrap();
            c.find(Locator::Css("[data-testid=create-hook]")).await.unwrap().click().await.unwrap();
        }
    };
    fill("ftp://example.org/hook".into()).await;
    assert!(h.text("hook-error").await.contains("`ftp` is not http or https"));
    // A private network the operator did not allow (only the loopback is, here) is refused, naming the flag.
    fill("http://10.0.0.1/hook".into()).await;
    // The page before (the `ftp` refusal) has a `hook-error` too: wait for the new one.
    h.until("the private-network refusal", || async { h.text("hook-error").await.contains("--hook-allow-network") })
        .await;
    // The form keeps what was sent, to be corrected rather than typed again.
    let kept = |css: &'static str| {
        let c = h.client.clone();
        async move { c.find(Locator::Css(css)).await.unwrap().prop("value").await.unwrap().unwrap_or_default() }
    };
    assert_eq!(kept("input[name=url]").await, "http://10.0.0.1/hook");
    assert_eq!(kept("select[name=project]").await, "fastnum/fastnum");
    h.screenshot("hooks-private-refused.png").await;
    let port = receiver();
    fill(format!("http://127.0.0.1:{port}/failpass")).await;
    let secret = h.text("new-secret").await;
    assert!(secret.starts_with("whsec_") && secret.len() == 70, "{secret}");
    h.screenshot("hooks-created.png").await;

    // A report of the project closes; the queue's deliver job posts it.
    let report = h.storage.find_report("fastnum/fastnum", "101").await.unwrap().expect("the demo's report #101");
    let change = failpass::db::hooks::Change {
        event: failpass_shared::api::hooks::HookEvent::Status,
        report_id: report,
        attempt_id: None,
        from: Some("reproduced".into()),
        to: "closed".into(),
    };
    h.storage.tell(&[change]).await.unwrap();
    let now = chrono::Utc::now();
    let job = h.storage.claim("e2e", now, chrono::Duration::seconds(60)).await.unwrap().expect("the deliver job");
    assert!(job.payload.delivery_id.is_some(), "deliveries go before verifications: {job:?}");
    failpass::runner::deliver::Deliver::new(h.storage.clone(), std::sync::Arc::new(loopback_hooks()))
        .execute(&job)
        .await
        .unwrap();
    h.storage.complete(job.id, "e2e", chrono::Utc::now(), None).await.unwrap();

    h.client.goto(&format!("{}/settings/hooks", h.base)).await.unwrap();
    assert!(h.text("hooks").await.contains("1 delivered, 0 pending, 0 failed"));
    assert!(!h.text("hooks").await.contains(&secret), "the secret is shown once");
    h.client
        .find(Locator::Css("[data-testid=hooks] a[href^=\"/settings/hooks/\"]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    assert_eq!(h.text("delivery-state").await, "delivered");
    assert_eq!(h.text("status-code").await, "200");
    h.screenshot("hook-log.png").await;
    h.client.find(Locator::Css("[data-testid=redeliver]")).await.unwrap().click().await.unwrap();
    h.until("the redelivery to be listed", || async {
        h.client.find_all(Locator::Css("[data-testid=delivery-state]")).await.map(|v| v.len()).unwrap_or(0) == 2
    })
    .await;
    // The newest (first) is still being sent (no worker runs here): sent again, it is refused on the page.
    h.client.find(Locator::Css("[data-testid=redeliver]")).await.unwrap().click().await.unwrap();
    assert!(h.text("redeliver-error").await.contains("still being sent"));
    // A test delivery, from the log page: listed first, its event `test`.
    h.client.find(Locator::Css("[data-testid=send-test]")).await.unwrap().click().await.unwrap();
    h.until("the test delivery to be listed", || async {
        h.client.find_all(Locator::Css("[data-testid=delivery-state]")).await.map(|v| v.len()).unwrap_or(0) == 3
    })
    .await;
    let first = h.client.find(Locator::Css("[data-testid=deliveries] tbody tr")).await.unwrap().text().await.unwrap();
    assert!(first.contains("test") && first.contains("pending"), "{first}");
    let at = h.client.current_url().await.unwrap().path().to_owned();
    assert!(at.starts_with("/settings/hooks/") && !at.ends_with("/test"), "the hook's log, no post address: {at}");

    h.client.set_window_size(390, 844).await.unwrap();
    h.screenshot("hook-log-390.png").await;
    assert!(h.sideways().await <= 0, "the log does not scroll sideways at 390 px (its table scrolls in its frame)");
    h.client.goto(&format!("{}/settings/hooks", h.base)).await.unwrap();
    h.client.wait().for_element(Locator::Css("[data-testid=create-hook]")).await.unwrap();
    assert!(h.sideways().await <= 0, "the webhooks page does not scroll sideways at 390 px");
    h.screenshot("hooks-390.png").await;
    h.finish().await;
}

/// A page on another origin, open in the browser of a signed-in admin,
/// tries the attack the security issue replayed: an NDJSON import of an
/// environment whose setup would run a command, posted `no-cors` as
/// `text/plain`, a JSON write, a read, and a classic form post. All fail;
/// the same admin's own page can write.
#[tokio::test]
async fn a_page_on_another_origin_cannot_write_as_a_signed_in_admin() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 900).await;
    h.sign_in("demo-admin").await;
    let marker = format!("pwned-{}", std::process::id());
    let evil_env = serde_json::json!({"kind": "environment", "project": "fastnum/fastnum", "name": marker, "role": "release",
        "recipe": {"setup": [format!("touch /tmp/{marker}")]}});
    let ndjson = format!("{evil_env}\n");
    let page = format!(
        r#"<!doctype html><title>cute cats</title><p id="status">running</p>
<form id="f" method="POST" action="{base}/api/v1/import?format=ndjson" enctype="text/plain"><input name='{env_prefix}' value='"}}'></form>
<script>
const target = {base:?};
const results = {{}};
async function go() {{
  try {{ const r = await fetch(target + "/api/v1/import?format=ndjson", {{method: "POST", mode: "no-cors", credentials: "include", headers: {{"content-type": "text/plain"}}, body: {ndjson:?}}}); results.nocors = r.type; }} catch (e) {{ results.nocors = "error"; }}
  try {{ const r = await fetch(target + "/api/v1/environments", {{method: "POST", credentials: "include", headers: {{"content-type": "application/json"}}, body: {json:?}}}); results.cors = r.status; }} catch (e) {{ results.cors = "blocked"; }}
  try {{ const r = await fetch(target + "/api/v1/session", {{credentials: "include"}}); results.read = await r.text(); }} catch (e) {{ results.read = "blocked"; }}
  const s = document.getElementById("status"); s.textContent = JSON.stringify(results); s.setAttribute("data-testid", "attack-done");
}}
go();
</script>"#,
        base = h.base,
        env_prefix = evil_env.to_string()[..evil_env.to_string().len() - 1].to_string().replace('\'', "&#39;") + ",\"x\":\"",
        ndjson = ndjson,
        json = serde_json::json!({"project": "fastnum/fastnum", "name": marker, "role": "release", "recipe": {"setup": ["true"]}}).to_string(),
    );
    // The attacker's site: another port of the same address (the same site to a browser, another origin).
    let attacker = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let attacker_url = format!("http://127.0.0.1:{}/", attacker.local_addr().unwrap().port());
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            let Ok((mut sock, _)) = attacker.accept().await else { return };
            let body = page.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(body.as_bytes()).await;
            });
        }
    });
    h.client.goto(&attacker_url).await.unwrap();
    let results = h.text("attack-done").await;
    assert!(results.contains("\"nocors\":\"opaque\""), "the no-cors post left the browser: {results}");
    assert!(results.contains("\"cors\":\"blocked\""), "the JSON write never passed its preflight: {results}");
    assert!(results.contains("\"read\":\"blocked\""), "the session is not readable from another origin: {results}");
    // Last, the classic form post (text/plain): the browser lands on the refusal.
    h.client.execute("document.getElementById('f').submit()", vec![]).await.unwrap();
    h.until("the form post's answer", || async {
        h.client.current_url().await.is_ok_and(|u| u.as_str().starts_with(&h.base))
    })
    .await;
    let answer = h.client.source().await.unwrap();
    assert!(answer.contains("cross-origin write refused") || answer.contains("Content-Type"), "{answer}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Read back as the admin, from failpass's own page (recipes are for those who rerun).
    h.client.goto(&format!("{}/runners", h.base)).await.unwrap();
    let listed = h
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1]; fetch('/api/v1/environments?project=fastnum%2Ffastnum').then(r => r.text()).then(done, e => done(String(e)));",
            vec![],
        )
        .await
        .unwrap();
    let envs: Vec<serde_json::Value> =
        serde_json::from_str(listed.as_str().unwrap_or_default()).unwrap_or_else(|e| panic!("{listed:?}: {e}"));
    assert!(envs.iter().all(|e| e["name"] != marker.as_str()), "no recipe was stored: {envs:?}");
    assert!(!std::path::Path::new(&format!("/tmp/{marker}")).exists(), "no command ran");
    // The admin's own page writes fine: the session was real, the origin was the difference.
    let status = h
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1]; fetch('/api/v1/environments', {method: 'POST', headers: {'content-type': 'application/json'}, \
             body: JSON.stringify({project: 'fastnum/fastnum', name: 'from-own-page', role: 'release', recipe: {setup: []}})}).then(r => done(r.status), e => done(String(e)));",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(status.as_i64(), Some(201), "{status:?}");
    h.finish().await;
}

/// A public project's status page and badges, as the public sees them: at
/// 1280 and 390 px, with JavaScript off (it needs none), the API's numbers,
/// no sideways scrolling, and the badges drawn.
/// The API reference: from the dashboard's top bar, every operation of the
/// OpenAPI document, readable at both widths without script.
#[tokio::test]
async fn the_api_reference_from_the_dashboard() {
    let _one = BROWSER.lock().await;
    for (width, height) in [(1280, 900), (390, 844)] {
        let h = start(width, height).await;
        let doc: serde_json::Value = h.api("/api/v1/openapi.json").await;
        let operations: usize =
            doc["paths"].as_object().unwrap().values().map(|item| item.as_object().unwrap().len()).sum();
        h.client.goto(&format!("{}/", h.base)).await.unwrap();
        h.client.wait().for_element(Locator::Css("[data-testid=api-link]")).await.unwrap().click().await.unwrap();
        h.client.wait().for_element(Locator::Css("[data-testid=api-reference]")).await.unwrap();
        let shown = h.client.execute("return document.querySelectorAll('.api-op').length", vec![]).await.unwrap();
        assert_eq!(shown.as_u64(), Some(operations as u64), "one section per operation");
        let scripts = h.client.execute("return document.scripts.length", vec![]).await.unwrap();
        assert_eq!(scripts.as_i64(), Some(0), "the reference runs no script");
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the reference scrolls sideways at {width} px by {overflow}");
        h.screenshot(&format!("api-{width}.png")).await;
        h.client.execute("document.getElementById('get--api-v1-reports').scrollIntoView()", vec![]).await.unwrap();
        h.screenshot(&format!("api-{width}-reports.png")).await;
        h.finish().await;
    }
}

#[tokio::test]
async fn status_page_and_badges_for_the_public() {
    let _one = BROWSER.lock().await;
    for (width, height) in [(1280, 900), (390, 844)] {
        let h = start(width, height).await;
        let status: serde_json::Value = h.api("/api/v1/status/pytorch/pytorch").await;
        // From the dashboard's top bar to the index, to the project.
        h.client.goto(&format!("{}/", h.base)).await.unwrap();
        h.client.wait().for_element(Locator::Css("[data-testid=status-link]")).await.unwrap().click().await.unwrap();
        h.client.wait().for_element(Locator::Css("[data-testid=status-index]")).await.unwrap();
        h.client.find(Locator::LinkText("pytorch/pytorch")).await.unwrap().click().await.unwrap();
        assert_eq!(h.text("status-project").await, "pytorch/pytorch");
        assert_eq!(h.text("status-rate-value").await, percent(status["rate"].as_f64()));
        assert_eq!(h.text("status-reports-value").await, thousands(status["reports"].as_i64().unwrap()));
        assert_eq!(h.text("status-backlog-value").await, thousands(status["backlog"].as_i64().unwrap()));
        assert_eq!(h.text("status-oracle-coverage-value").await, percent(status["oracle_coverage"]["rate"].as_f64()));
        let scripts = h.client.execute("return document.scripts.length", vec![]).await.unwrap();
        assert_eq!(scripts.as_i64(), Some(0), "the status page runs no script");
        // The trend and the badges are drawn (an image that failed has no natural width).
        let drawn = h
            .client
            .execute(
                "return Array.from(document.images).filter(i => i.complete && i.naturalWidth > 0).length + '/' + document.images.length",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(drawn.as_str(), Some("5/5"), "the trend and four badges are drawn");
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the status page scrolls sideways at {width} px by {overflow}");
        h.screenshot(&format!("status-{width}.png")).await;
        for (section, name) in [("routes", "routes"), ("latest", "latest"), ("badges", "badges")] {
            h.client.execute(&format!("document.getElementById('{section}').scrollIntoView()"), vec![]).await.unwrap();
            h.screenshot(&format!("status-{width}-{name}.png")).await;
        }
        // The dark scheme: the page's own colours, readable.
        let background = "return getComputedStyle(document.body).backgroundColor";
        let light = h.client.execute(background, vec![]).await.unwrap();
        h.prefer_dark().await;
        h.client.refresh().await.unwrap();
        h.text("status-rate-value").await;
        let dark = h.client.execute(background, vec![]).await.unwrap();
        assert_eq!(light.as_str(), Some("rgb(246, 247, 249)"), "light background");
        assert_eq!(dark.as_str(), Some("rgb(21, 24, 28)"), "dark background");
        let ink = h.client.execute("return getComputedStyle(document.body).color", vec![]).await.unwrap();
        assert_eq!(ink.as_str(), Some("rgb(228, 231, 235)"), "light text on the dark background");
        h.client.execute("window.scrollTo(0, 0)", vec![]).await.unwrap();
        h.screenshot(&format!("status-{width}-dark.png")).await;
        h.client.goto(&format!("{}/badge/pytorch/pytorch/reproduction-rate.svg", h.base)).await.unwrap();
        h.screenshot(&format!("badge-{width}.png")).await;
        h.finish().await;
    }
}

/// An agent's trajectory of 10,000 steps on the report page: only the rows
/// in view are drawn, the loop and the candidate's step are marked, a
/// scroll to the end shows the last step and a click opens it. At 1280 and
/// 390 px (no sideways scroll).
#[tokio::test]
async fn a_trajectory_of_ten_thousand_steps_shows_step_by_step() {
    let _one = BROWSER.lock().await;
    for (width, height) in [(1280, 1000), (390, 844)] {
        let h = start(width, height).await;
        let page: Page<ReportSummary> = h.api("/api/v1/reports?project=fastnum/fastnum&q=softmax").await;
        let report = page.items[0].id;
        let project =
            h.storage.get_project("fastnum/fastnum", &failpass::db::ProjectScope::All).await.unwrap().unwrap();
        let (token, _) = failpass::auth::tokens::create(
            h.storage.as_ref(),
            failpass::auth::tokens::TokenRequest {
                name: "e2e".into(),
                scope: failpass_shared::model::TokenScope::Ci,
                project_id: Some(project.id),
                user_id: None,
                created_by: "tests".into(),
                expires_in_days: None,
            },
        )
        .await
        .unwrap();
        // Steps 5 to 8 run one command four times; step 42 writes the candidate.
        let attempts: Page<failpass_shared::api::attempts::Attempt> =
            h.api(&format!("/api/v1/attempts?report_id={report}&limit=50")).await;
        for a in &attempts.items {
            let candidate = a.candidate.clone().unwrap_or_else(|| "print('no candidate here at all')".into());
            let steps: String = (0..10_000)
                .map(|i| {
                    let (action, input) = match i {
                        5..=8 => ("bash".to_owned(), "python -c 'import fastnum'".to_owned()),
                        42 => ("write_file".to_owned(), format!("repro.py\n{candidate}")),
                        _ => ("bash".to_owned(), format!("echo step {i}")),
                    };
                    let at = format!("2026-11-30T09:{:02}:{:02}Z", (i / 60) % 60, i % 60);
                    serde_json::json!({"action": action, "input": input, "output": format!("step {i} done"), "cost_usd": 0.001, "at": at})
                        .to_string()
                        + "\n"
                })
                .collect();
            let r = h
                .http
                .put(format!("{}/api/v1/attempts/{}/trajectory", h.base, a.id))
                .bearer_auth(&token)
                .header("content-type", "application/x-ndjson")
                .body(steps)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
        }
        h.client.goto(&format!("{}/reports/{report}", h.base)).await.unwrap();
        h.text("attempts").await;
        let details = h.client.find(Locator::Css("[data-testid=attempt-row] button")).await.unwrap();
        details.click().await.unwrap();
        h.text("attempt-detail").await;
        let show = h.client.find(Locator::Css("[data-testid=show-trajectory]")).await.unwrap();
        show.click().await.unwrap();
        h.until("the trajectory", || async { h.text("trajectory").await.contains("10000 steps") }).await;
        let drawn = h.client.find_all(Locator::Css("[data-testid=traj-row]")).await.unwrap().len();
        assert!((14..=40).contains(&drawn), "only the rows in view are drawn: {drawn} of 10,000");
        let summary = h.text("trajectory").await;
        assert!(summary.contains("Loop: steps 5–8, bash ×4"), "{summary}");
        assert!(summary.contains("The candidate first appears at step 42."), "{summary}");
        let list = h
            .client
            .execute(
                "const l = document.querySelector('.traj-list'); return [l.clientHeight, l.outerHTML.slice(0, 400)];",
                vec![],
            )
            .await
            .unwrap();
        assert!(list[0].as_i64().unwrap_or(0) >= 14 * 28 - 2, "the list shows 14 rows: {list}");
        let marked = h.client.find_all(Locator::Css(".traj-row.loop")).await.unwrap().len();
        assert_eq!(marked, 4, "steps 5 to 8 are marked as the loop");
        h.client.execute("document.querySelector('[data-testid=trajectory]').scrollIntoView()", vec![]).await.unwrap();
        h.screenshot(&format!("trajectory-{width}.png")).await;
        // Scrolled to the end: the last step is drawn, and opens on a click.
        h.client
            .execute("const l = document.querySelector('.traj-list'); l.scrollTop = l.scrollHeight;", vec![])
            .await
            .unwrap();
        h.until("the last step", || async {
            h.client.find_all(Locator::Css("[data-testid=traj-row]")).await.unwrap().len() <= 40
                && h.text("trajectory").await.contains("echo step 9999")
        })
        .await;
        let rows = h.client.find_all(Locator::Css("[data-testid=traj-row]")).await.unwrap();
        let mut last = None;
        for r in rows {
            if r.text().await.unwrap().contains("echo step 9999") {
                last = Some(r);
            }
        }
        last.expect("step 9999's row").click().await.unwrap();
        h.until("the step's detail", || async { h.text("traj-detail").await.contains("step 9999 done") }).await;
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the page scrolls sideways at {width} px by {overflow}");
        h.screenshot(&format!("trajectory-end-{width}.png")).await;
        h.finish().await;
    }
}

/// A real bug's releases page at 1280 and 390 px: the buggy release read
/// from the report with its line, the fixed one, a hostile version refused
/// with the reason and nothing changed, the index's releases; then the
/// Runners page's link to the environment cache.
#[tokio::test]
async fn a_maintainer_reads_and_corrects_a_real_bugs_releases() {
    let _one = BROWSER.lock().await;
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/realbugs");
    let libs = failpass::demo::realbugs::load_dir(&corpus).expect("the corpus parses");
    let networkx = libs.iter().find(|l| l.library.name == "networkx").expect("networkx is in the corpus");
    for width in [1280, 390] {
        let h = start(width, 1100).await;
        let routing = failpass_shared::routing::RoutingConfig::default();
        let seeded = failpass::demo::realbugs::seed(h.storage.as_ref(), &routing, networkx, |b| b.small).await.unwrap();
        let s = &seeded[0];
        let id = s.report.summary.id;
        h.sign_in("demo-admin").await;
        h.client.goto(&format!("{}/reports/{id}/releases", h.base)).await.unwrap();
        let buggy = h.text("releases-buggy").await;
        assert!(buggy.contains(&format!("networkx {}", s.bug.buggy)) && buggy.contains("line "), "{buggy}");
        assert!(h.text("releases-fixed").await.contains(&s.bug.fixed));
        let listed = h.text("releases-list").await;
        assert!(listed.contains(&s.bug.buggy) && listed.contains(&s.bug.fixed), "the index's releases: {listed}");
        // A hostile version: refused by name, the stored releases unchanged.
        let fixed = h.client.find(Locator::Css("input[name=fixed]")).await.unwrap();
        fixed.clear().await.unwrap();
        fixed.send_keys("1.0; rm -rf /").await.unwrap();
        h.client.find(Locator::Css("[data-testid=releases-set]")).await.unwrap().click().await.unwrap();
        assert!(h.text("releases-error").await.contains("not a PEP 440 version"));
        let v: serde_json::Value = h.api(&format!("/api/v1/reports/{id}/versions")).await;
        assert_eq!(v["fixed"], s.bug.fixed.as_str(), "{v}");
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the releases page scrolls sideways at {width} px by {overflow}");
        h.screenshot(&format!("releases-{width}.png")).await;
        // The Runners page links the environment cache (a server page, loaded for real).
        h.client.goto(&format!("{}/runners", h.base)).await.unwrap();
        h.client
            .wait()
            .for_element(Locator::Css("a[href='/runners/environments']"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        assert!(h.text("env-cache-totals").await.contains("Wheel cache"));
        assert!(h.text("env-cache-empty").await.contains("Nothing is built yet"));
        h.screenshot(&format!("env-cache-{width}.png")).await;
        h.finish().await;
    }
}
