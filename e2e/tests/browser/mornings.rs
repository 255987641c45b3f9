//! Browser tests: the two mornings walked end to end: a team lead, an admin, a maintainer.

use super::*;

/// The maintainer's set-up without curl: a project created from the
/// Set-up page, its buggy environment written and built by a runner (the
/// log on the page), and a file imported from the browser with its
/// rejection listed; wrong input named on the page.
#[tokio::test]
async fn an_admin_sets_a_project_up_builds_its_environment_and_imports_a_file() {
    let _one = BROWSER.lock().await;
    for width in [1280, 390] {
        let h = start_with(width, 1400, 1).await;
        h.sign_in("demo-admin").await;
        let slug = format!("acme/fastnum-{width}");
        let fill = |testid: &'static str, name: &'static str, value: String| {
            let c = h.client.clone();
            async move {
                let css = format!("[data-testid={testid}] [name={name}]");
                let el = c.wait().for_element(Locator::Css(&css)).await.unwrap();
                el.clear().await.unwrap();
                el.send_keys(&value).await.unwrap();
            }
        };
        let click = |testid: &'static str| {
            let c = h.client.clone();
            async move {
                c.wait()
                    .for_element(Locator::Css(&format!("[data-testid={testid}]")))
                    .await
                    .unwrap()
                    .click()
                    .await
                    .unwrap()
            }
        };
        // From the dashboard's header to the Set-up page.
        click("setup-link").await;
        fill("new-project", "slug", slug.clone()).await;
        fill("new-project", "upstream_url", "not a url".into()).await;
        h.client.execute("document.querySelector('[name=upstream_url]').type = 'text'", vec![]).await.unwrap();
        click("create-project").await;
        assert!(h.text("setup-error").await.contains("upstream_url"), "a wrong address is named");
        fill("new-project", "upstream_url", "https://github.com/acme/fastnum".into()).await;
        click("create-project").await;
        assert_eq!(h.text("setup-notice").await, "Project created.");
        assert!(h.text("setup-missing").await.contains("lacks both"));
        // The buggy environment: a variable line without `=` is refused, as typed.
        fill("new-environment", "name", "fastnum-buggy".into()).await;
        h.client
            .find(Locator::Css("[data-testid=new-environment] [name=source]"))
            .await
            .unwrap()
            .select_by_value("none")
            .await
            .unwrap();
        fill("new-environment", "setup", "echo built-in-the-browser".into()).await;
        fill("new-environment", "variables", "NOEQUALS".into()).await;
        click("save-environment").await;
        assert!(h.text("setup-error").await.contains("variables: line 1 `NOEQUALS` is not NAME=value"));
        fill("new-environment", "variables", "MODE=strict".into()).await;
        click("save-environment").await;
        assert!(h.text("setup-notice").await.contains("Environment `fastnum-buggy` created"));
        click("build-now").await;
        // The page before this one had a notice too: wait for the new page's.
        h.until("the build to be queued", || async { h.text("setup-notice").await.contains("queued as job") }).await;
        // The page reloads until a runner has built it.
        let started = Instant::now();
        loop {
            let status = h.text("build-status").await;
            if status.starts_with("built") {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(120), "the build never ended: {status}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let log =
            h.client.find(Locator::Css("[data-testid=build-log]")).await.unwrap().prop("textContent").await.unwrap();
        assert!(log.unwrap_or_default().contains("built-in-the-browser"));
        h.client
            .execute("document.querySelectorAll('details.build-log').forEach(d => d.open = true)", vec![])
            .await
            .unwrap();
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the set-up page does not scroll sideways at {width} px");
        h.screenshot(&format!("setup-project-{width}.png")).await;
        // An import from the browser: two reports stored, one bad line listed.
        click("import-link").await;
        let file = tempfile::NamedTempFile::new().unwrap();
        let record = |n: u32| serde_json::json!({"kind": "report", "project": slug, "external_id": n.to_string(), "title": format!("softmax {n} overflows")});
        std::fs::write(file.path(), format!("{}\n{}\n{{\"kind\": \"report\"}}\n", record(1), record(2))).unwrap();
        h.client
            .find(Locator::Css("[data-testid=import-form] [name=format]"))
            .await
            .unwrap()
            .select_by_value("ndjson")
            .await
            .unwrap();
        h.client
            .find(Locator::Css("input[name=file]"))
            .await
            .unwrap()
            .send_keys(&file.path().to_string_lossy())
            .await
            .unwrap();
        click("import-submit").await;
        assert_eq!(h.text("import-created").await, "2");
        assert_eq!(h.text("import-rejected").await, "1");
        assert!(h.text("import-rejections").await.contains("project"), "the rejection names the field");
        let reports: serde_json::Value = h.api(&format!("/api/v1/reports?project={}", slug.replace('/', "%2F"))).await;
        assert_eq!(reports["items"].as_array().unwrap().len(), 2);
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the import page does not scroll sideways at {width} px");
        h.screenshot(&format!("setup-import-{width}.png")).await;
        h.finish().await;
    }
}

/// The team lead's morning: this month's answer on the Overview, the stuck
/// list behind it, an export of that list, and the month's spend on Cost &
/// time; at 1280 and 390 px.
#[tokio::test]
async fn a_team_lead_reads_the_month_finds_the_stuck_reports_and_exports_them() {
    let _one = BROWSER.lock().await;
    for (width, suffix) in [(1280, ""), (390, "-390")] {
        let h = start(width, 1000).await;
        // Time passes: two open reports have seen nothing for three weeks.
        let open: Page<ReportSummary> = h.api("/api/v1/reports?status=new&sort=filed_at&order=asc&limit=2").await;
        assert_eq!(open.items.len(), 2);
        let aged: Vec<String> = open.items.iter().map(|r| r.id.to_string()).collect();
        let db = sqlx::SqlitePool::connect_with(
            sqlx::sqlite::SqliteConnectOptions::new().filename(h._data.path().join("failpass.db")),
        )
        .await
        .unwrap();
        for r in &open.items {
            sqlx::query("UPDATE reports SET last_activity_at = $1 WHERE id = $2")
                .bind(chrono::Utc::now() - chrono::Duration::days(21))
                .bind(r.id)
                .execute(&db)
                .await
                .unwrap();
        }

        // The month in one look, the same as the API's.
        h.client.goto(&format!("{}/?period=this_month", h.base)).await.unwrap();
        let g: serde_json::Value = h.api("/api/v1/glance?period=this_month").await;
        assert_eq!(h.text("glance-reproduced").await, g["reproduced"].to_string());
        assert_eq!(h.text("glance-spend").await, usd(g["spend_usd"].as_f64()));
        assert_eq!(h.text("glance-stuck").await, "2");
        assert!(h.text("glance").await.contains("This month: "), "the period is named");
        // the weekly throughput downloads from there, under the page's filters
        let href = h
            .client
            .find(Locator::Css("[data-testid=export-throughput]"))
            .await
            .unwrap()
            .attr("href")
            .await
            .unwrap()
            .unwrap();
        let weeks = h.http.get(format!("{}{href}", h.base)).send().await.unwrap().text().await.unwrap();
        let flow: Throughput = h.api("/api/v1/throughput?period=this_month").await;
        assert_eq!(weeks.lines().count(), flow.weeks.len() + 1, "{weeks}");
        // the period select says which period the page shows
        let period = h.client.find(Locator::Css("[data-testid=filter-period]")).await.unwrap();
        assert_eq!(period.prop("value").await.unwrap().as_deref(), Some("this_month"));
        h.screenshot(&format!("lead-glance{suffix}.png")).await;

        // The stuck count leads to the stuck reports, oldest activity first.
        h.client.find(Locator::Css("[data-testid=glance-stuck-link]")).await.unwrap().click().await.unwrap();
        h.until("the stuck list", || async { h.text("queue-count").await.contains("no activity for 14 days") }).await;
        assert!(h.text("stuck-filter").await.contains("no activity for 14 days"), "the hidden filter is shown");
        let url = h.client.current_url().await.unwrap();
        assert!(url.as_str().contains("stuck_days=14") && url.as_str().contains("sort=last_activity"), "{url}");
        let ids: Vec<String> = h.rows().await.into_iter().map(|(id, _)| id).collect();
        let (mut want, mut got) = (aged.clone(), ids.clone());
        want.sort();
        got.sort();
        assert_eq!(got, want, "exactly the reports nothing happened to");
        // at phone width the priority columns show (each report a card), and "Every column" opens the rest
        let shown = |css: &'static str| {
            let c = h.client.clone();
            async move {
                c.execute(
                    "return getComputedStyle(document.querySelector(arguments[0])).display !== 'none'",
                    vec![css.into()],
                )
                .await
                .unwrap()
                    == serde_json::Value::Bool(true)
            }
        };
        let (labels, wide) = ("[data-testid=queue-table] td.opt:not(.wide)", "[data-testid=queue-table] td.wide");
        assert_eq!(shown(labels).await, width > 700, "a secondary column at {width} px");
        // below a wide screen the labels and upstream columns wait behind "Every column"
        assert!(!shown(wide).await, "the widest columns wait at {width} px");
        h.client.find(Locator::Css(".all-columns summary")).await.unwrap().click().await.unwrap();
        assert!(shown(labels).await && shown(wide).await, "opened, every column shows");
        h.screenshot(&format!("lead-stuck{suffix}.png")).await;

        // Its export holds the same reports, with the view's filters.
        let csv = h.client.find(Locator::Css("[data-testid=export-csv]")).await.unwrap();
        let href = csv.attr("href").await.unwrap().unwrap();
        assert!(href.contains("stuck_days=14"), "{href}");
        let body = h.http.get(format!("{}{href}", h.base)).send().await.unwrap().text().await.unwrap();
        assert_eq!(body.lines().count(), 3, "a header and the two stuck reports: {body}");

        // The month's spend on Cost & time, by when it was spent.
        h.client.goto(&format!("{}/cost?period=this_month&dated=spent", h.base)).await.unwrap();
        let spent: FiguresResponse = h.api("/api/v1/figures?period=this_month&dated=spent").await;
        assert_eq!(
            spent.rows[0].cost_total_usd,
            g["spend_usd"].as_f64().unwrap(),
            "the glance's spend is the figures'"
        );
        let headline = h.text("cost-headline").await;
        assert!(headline.contains(&usd(Some(spent.rows[0].cost_total_usd))), "{headline}");
        assert!(h.svg("chart-spend-month").await.contains("Spend per month"));
        h.screenshot(&format!("lead-cost{suffix}.png")).await;
        // and the page's figure table as a download, with the page's filters
        let link = h.client.wait().for_element(Locator::Css("[data-testid=export-figures-csv]")).await.unwrap();
        let href = link.attr("href").await.unwrap().unwrap();
        assert!(href.contains("period=this_month") && href.contains("dated=spent") && href.contains("group_by=agent"));
        let table = h.http.get(format!("{}{href}", h.base)).send().await.unwrap().text().await.unwrap();
        let agents: FiguresResponse = h.api("/api/v1/figures?period=this_month&dated=spent&group_by=agent").await;
        assert_eq!(table.lines().count(), agents.rows.len() + 1, "{table}");
        assert!(table.starts_with("key,"), "{table}");
        h.finish().await;
    }
}

/// The maintainer's morning end to end on the demo, in one session: a
/// release environment set up and built (an admin's part), three reports
/// triaged from the queue (a route corrected, one assigned, one closed as a
/// duplicate of another), an oracle written and validated for a hypothesis
/// report, a lead accepted, and a rerun followed live beside its button.
#[tokio::test]
async fn a_maintainer_walks_the_morning_end_to_end() {
    async fn click(c: &Client, css: &str) {
        let el = c.wait().for_element(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}"));
        el.click().await.unwrap_or_else(|e| panic!("clicking {css}: {e}"));
    }
    async fn type_into(c: &Client, css: &str, text: &str) {
        let el = c.wait().for_element(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}"));
        el.clear().await.unwrap();
        el.send_keys(text).await.unwrap();
    }
    async fn choose(c: &Client, css: &str, value: &str) {
        c.wait().for_element(Locator::Css(css)).await.unwrap().select_by_value(value).await.unwrap();
    }
    let _one = BROWSER.lock().await;
    for (width, suffix) in [(1280, ""), (390, "-390")] {
        let h = start_with(width, 1200, 1).await;
        let c = h.client.clone();

        // 1. Set-up: a release environment for fastnum, written and built from the browser.
        h.sign_in("demo-admin").await;
        c.goto(&format!("{}/settings/projects/fastnum/fastnum", h.base)).await.unwrap();
        type_into(&c, "[data-testid=new-environment] [name=name]", "fastnum-0.4.1").await;
        choose(&c, "[data-testid=new-environment] [name=role]", "release").await;
        choose(&c, "[data-testid=new-environment] [name=source]", "none").await;
        type_into(&c, "[data-testid=new-environment] [name=setup]", "echo release-ready").await;
        type_into(&c, "[data-testid=new-environment] [name=version]", "0.4.1").await;
        click(&c, "[data-testid=new-environment] [data-testid=save-environment]").await;
        assert!(h.text("setup-notice").await.contains("Environment `fastnum-0.4.1` created"));
        let envs = c
            .execute("return fetch('/api/v1/environments?project=fastnum%2Ffastnum').then(r => r.json())", vec![])
            .await
            .unwrap();
        let env = envs.as_array().unwrap().iter().find(|e| e["name"] == "fastnum-0.4.1").expect("the new environment");
        let build = format!("form[action$='/environments/{}/build'] [data-testid=build-now]", env["id"]);
        click(&c, &build).await;
        // The page reloads while a runner builds it; the API says when it has.
        let status = format!("return fetch('/api/v1/environments/{}/build').then(r => r.json())", env["id"]);
        let started = Instant::now();
        loop {
            let b = c.execute(&status, vec![]).await.unwrap();
            if b["status"] == "built" || b["status"] == "cached" {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(120), "the build never ended: {b}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        c.refresh().await.unwrap();
        h.screenshot(&format!("morning-1-setup{suffix}.png")).await;

        // 2. Triage three of jax's reports from the queue, as the maintainer.
        c.goto(&format!("{}/", h.base)).await.unwrap();
        click(&c, ".account button").await;
        h.text("sign-in").await;
        h.sign_in("demo-maintainer").await;
        let new: Page<ReportSummary> =
            h.api("/api/v1/reports?project=jax-ml%2Fjax&sort=filed_at&order=asc&limit=3").await;
        let [first, second, third] = &new.items[..] else { panic!("the demo has three jax-ml/jax reports") };
        let open = |id: i64| {
            let c = c.clone();
            let base = h.base.clone();
            async move {
                c.goto(&format!("{base}/queue?project=jax-ml%2Fjax&sort=filed_at&order=asc")).await.unwrap();
                click(&c, &format!("[data-testid=queue-row][data-id='{id}'] a")).await;
                c.wait().for_element(Locator::Css("[data-testid=lifecycle-panel] form")).await.unwrap();
            }
        };
        // a route corrected, with the reason
        open(first.id).await;
        let target = if first.route.as_str() == "human_first" { "agent_first" } else { "human_first" };
        choose(&c, "[data-testid=route-choice]", target).await;
        type_into(&c, "[data-testid=route-reason]", "the traceback is in the launcher").await;
        click(&c, "[data-testid=set-route]").await;
        h.until("the correction", || async { h.text("route-correction").await.contains("by demo-maintainer") }).await;
        // one assigned
        open(second.id).await;
        type_into(&c, "[data-testid=assignee]", "demo-maintainer").await;
        click(&c, "[data-testid=assign]").await;
        h.until("the assignee", || async { h.text("lifecycle-assignee").await == "demo-maintainer" }).await;
        // one closed as a duplicate of the second, by its upstream number
        open(third.id).await;
        choose(&c, "[data-testid=status-choice]", "duplicate").await;
        type_into(&c, "[data-testid=duplicate-of]", &second.external_id).await;
        click(&c, "[data-testid=set-status]").await;
        h.until("the duplicate", || async { h.text("lifecycle-status").await == "duplicate" }).await;
        h.screenshot(&format!("morning-2-triage{suffix}.png")).await;
        for (id, field, want) in
            [(first.id, "route", target), (second.id, "assignee", "demo-maintainer"), (third.id, "status", "duplicate")]
        {
            let r: serde_json::Value = h.api(&format!("/api/v1/reports/{id}")).await;
            assert_eq!(r[field], want, "report {id}");
        }

        // 3. An oracle for a hypothesis report, validated by a runner; the report is routed again.
        let hyp: Page<ReportSummary> = h.api("/api/v1/reports?project=fastnum%2Ffastnum&route=hypothesis").await;
        let id = hyp.items[0].id;
        c.goto(&format!("{}/reports/{id}", h.base)).await.unwrap();
        click(&c, "[data-testid=write-oracle] a").await;
        type_into(
            &c,
            "[data-testid=oracle-script]",
            "import fastnum\n\nm = fastnum.mean([[1, 2, 3], [4, 5, 6]], axis=0)\nassert m == [2.5, 3.5, 4.5], m\n",
        )
        .await;
        click(&c, "[data-testid=oracle-validate]").await;
        let started = Instant::now();
        while c.find(Locator::Css("[data-testid=oracle-validating]")).await.is_ok() {
            assert!(started.elapsed() < Duration::from_secs(120), "the validation never ended");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        assert_eq!(h.text("oracle-route").await, "agent first");
        h.screenshot(&format!("morning-3-oracle{suffix}.png")).await;

        // 4. A lead accepted.
        let leads: serde_json::Value = h.api("/api/v1/attempts?verdict=lead&project=jax-ml%2Fjax&limit=1").await;
        let lead_report = leads["items"][0]["report_id"].as_i64().expect("the demo has a lead in jax-ml/jax");
        c.goto(&format!("{}/reports/{lead_report}", h.base)).await.unwrap();
        click(&c, "[data-testid=review]").await;
        type_into(&c, "[data-testid=review-comment]", "reproduced it by hand").await;
        click(&c, "[data-testid=accept]").await;
        h.until("the acceptance", || async { h.text("attempts").await.contains("reviewed by demo-maintainer") }).await;
        h.screenshot(&format!("morning-4-lead{suffix}.png")).await;
        // the report's attempts download from its page
        let href =
            c.find(Locator::Css("[data-testid=attempt-exports] a")).await.unwrap().attr("href").await.unwrap().unwrap();
        let csv = h.http.get(format!("{}{href}", h.base)).send().await.unwrap().text().await.unwrap();
        let listed: serde_json::Value = h.api(&format!("/api/v1/attempts?report_id={lead_report}&limit=200")).await;
        assert_eq!(csv.lines().count(), listed["items"].as_array().unwrap().len() + 1, "{csv}");

        // 5. A rerun, followed live under the row that started it.
        let softmax: Page<ReportSummary> = h.api("/api/v1/reports?project=fastnum%2Ffastnum&q=softmax").await;
        c.goto(&format!("{}/reports/{}", h.base, softmax.items[0].id)).await.unwrap();
        click(&c, "[data-testid=rerun]").await;
        h.until("the rerun to finish", || async {
            let line = c.find(Locator::Css("[data-testid=attempts] [data-testid=job-progress]")).await;
            match line {
                Ok(l) => l.text().await.unwrap_or_default().contains("done"),
                Err(_) => false,
            }
        })
        .await;
        h.client
            .execute("document.querySelector('[data-testid=attempts] .jobs-live').scrollIntoView()", vec![])
            .await
            .unwrap();
        h.screenshot(&format!("morning-5-rerun{suffix}.png")).await;
        h.finish().await;
    }
}

/// The maintainer writes an oracle for a hypothesis report from its page:
/// a weak test is run and refused (it passes on buggy too), the real one is
/// validated by a runner on the demo's buggy and fixed fastnum, and the
/// report is routed again (agent first), with the measured minutes shown.
#[tokio::test]
async fn a_maintainer_writes_and_validates_an_oracle_for_a_hypothesis_report() {
    let _one = BROWSER.lock().await;
    for width in [1280, 390] {
        let h = start_with(width, 1400, 1).await;
        h.sign_in("demo-maintainer").await;
        let list: serde_json::Value = h.api("/api/v1/reports?project=fastnum%2Ffastnum&route=hypothesis").await;
        let id = list["items"][0]["id"].as_i64().expect("the demo has a hypothesis report in fastnum");
        h.client.goto(&format!("{}/reports/{id}", h.base)).await.unwrap();
        h.client.wait().for_element(Locator::Css("[data-testid=write-oracle] a")).await.unwrap().click().await.unwrap();
        // The form is there at once, beside the report's text; the first try starts the clock.
        assert!(!h.text("oracle-report").await.trim().is_empty(), "the report in view");
        assert!(h.client.find(Locator::Css("[data-testid=oracle-clock]")).await.is_err(), "no draft until a try");
        let validate = |script: &'static str| {
            let c = h.client.clone();
            async move {
                let area = c.wait().for_element(Locator::Css("[data-testid=oracle-script]")).await.unwrap();
                area.clear().await.unwrap();
                area.send_keys(script).await.unwrap();
                c.find(Locator::Css("[data-testid=oracle-validate]")).await.unwrap().click().await.unwrap();
            }
        };
        let settled = |h: &Harness| {
            let c = h.client.clone();
            async move {
                let started = Instant::now();
                // The page reloads every 5 s while a runner validates.
                while c.find(Locator::Css("[data-testid=oracle-validating]")).await.is_ok() {
                    assert!(started.elapsed() < Duration::from_secs(120), "the validation never ended");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        };
        // A test that passes on buggy as well is run, and not stored.
        validate("import fastnum\nprint(fastnum.mean([[1, 2, 3], [4, 5, 6]], axis=0))\n").await;
        settled(&h).await;
        assert!(h.text("oracle-result").await.contains("Last validation: not reproduced"));
        assert_eq!(h.text("oracle-tries").await, "1");
        assert!(h.text("oracle-clock").await.ends_with("(running)"));
        // The real one: 0.3.0 averages over the wrong axis.
        validate(
            "import fastnum\n\nm = fastnum.mean([[1, 2, 3], [4, 5, 6]], axis=0)\nassert m == [2.5, 3.5, 4.5], m\n",
        )
        .await;
        settled(&h).await;
        assert_eq!(h.text("oracle-route").await, "agent first");
        let report: serde_json::Value = h.api(&format!("/api/v1/reports/{id}")).await;
        assert_eq!(
            (report["route"].as_str(), report["oracle"]["source"].as_str()),
            (Some("agent_first"), Some("authored"))
        );
        assert!(report["oracle"]["authoring_minutes"].as_f64().unwrap() > 0.0);
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the oracle page does not scroll sideways at {width} px");
        h.screenshot(&format!("oracle-validated-{width}.png")).await;
        // The Oracles page answers "within an hour?" from this history.
        h.client.goto(&format!("{}/oracles?project=fastnum%2Ffastnum", h.base)).await.unwrap();
        assert!(h.text("within-hour").await.starts_with("1 of 1"));
        h.screenshot(&format!("oracles-authoring-{width}.png")).await;
        h.finish().await;
    }
}
