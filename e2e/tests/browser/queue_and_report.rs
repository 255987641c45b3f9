//! Browser tests: the queue, the report page and its actions, the Runners and Oracles pages.

use super::*;

#[tokio::test]
async fn queue_filters_search_and_pages() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 1000).await;
    h.client.goto(&format!("{}/queue", h.base)).await.unwrap();
    let all: Page<ReportSummary> = h.api("/api/v1/reports").await;
    h.until("the queue rows", || async { h.rows().await.len() == all.items.len() }).await;

    let select = h.client.find(Locator::Css("[data-testid=filter-route]")).await.unwrap();
    select.select_by_value("human_first").await.unwrap();
    let human: Page<ReportSummary> = h.api("/api/v1/reports?route=human_first").await;
    assert!(!human.items.is_empty() && human.items.len() < all.items.len());
    h.until("the human_first rows", || async {
        let rows = h.rows().await;
        rows.len() == human.items.len() && rows.iter().all(|(_, r)| r == "human_first")
    })
    .await;
    let shown: Vec<String> = h.rows().await.into_iter().map(|(id, _)| id).collect();
    let expected: Vec<String> = human.items.iter().map(|r| r.id.to_string()).collect();
    assert_eq!(shown, expected, "same reports in the same order as the API");
    assert!(h.client.current_url().await.unwrap().as_str().contains("route=human_first"));
    assert_eq!(h.text("queue-count").await.split(" ·").next().unwrap(), format!("{} reports", human.items.len()));
    h.screenshot("queue-human-first.png").await;
    // "Export all" carries the filters: every human_first report, as CSV.
    let href =
        h.client.find(Locator::Css("[data-testid=export-csv]")).await.unwrap().attr("href").await.unwrap().unwrap();
    assert!(href.starts_with("/api/v1/export/reports?") && href.contains("route=human_first"), "{href}");
    let csv = reqwest::get(format!("{}{href}", h.base)).await.unwrap().text().await.unwrap();
    assert_eq!(csv.lines().count(), human.items.len() + 1, "{csv}");

    // free-text search, typed and submitted
    h.client.goto(&format!("{}/queue", h.base)).await.unwrap();
    let input = h.client.wait().for_element(Locator::Css("[data-testid=filter-q]")).await.unwrap();
    input.send_keys("logsumexp").await.unwrap();
    input.send_keys("\u{E007}").await.unwrap(); // Enter submits the form
    let found: Page<ReportSummary> = h.api("/api/v1/reports?q=logsumexp").await;
    assert_eq!(found.items.len(), 2, "the recorded demo's report and fastnum's");
    let want: Vec<String> = found.items.iter().map(|r| r.id.to_string()).collect();
    h.until("the search results", || async {
        let rows: Vec<String> = h.rows().await.into_iter().map(|(id, _)| id).collect();
        rows == want
    })
    .await;

    // keyset paging through the links
    h.client.goto(&format!("{}/queue?limit=10", h.base)).await.unwrap();
    h.until("page one", || async { h.rows().await.len() == 10 }).await;
    let first: Vec<String> = h.rows().await.into_iter().map(|(id, _)| id).collect();
    h.client.find(Locator::Css("[data-testid=next-page]")).await.unwrap().click().await.unwrap();
    h.until("page two", || async {
        let ids: Vec<String> = h.rows().await.into_iter().map(|(id, _)| id).collect();
        ids.len() == 10 && ids.iter().all(|id| !first.contains(id))
    })
    .await;
    assert!(h.client.find(Locator::Css("[data-testid=first-page]")).await.is_ok());

    // keyboard: j, j moves to the second row, k back to the first, j again, Enter opens it
    let ids: Vec<String> = h.rows().await.into_iter().map(|(id, _)| id).collect();
    let body = h.client.find(Locator::Css("body")).await.unwrap();
    for key in ["j", "j", "k", "j"] {
        body.send_keys(key).await.unwrap();
    }
    let selected = h.client.find(Locator::Css("[data-testid=queue-row].selected")).await.unwrap();
    assert_eq!(selected.attr("data-id").await.unwrap().as_deref(), Some(ids[1].as_str()));
    assert_eq!(selected.attr("aria-selected").await.unwrap().as_deref(), Some("true"));
    body.send_keys("\u{E007}").await.unwrap(); // Enter
    let want = format!("/reports/{}", ids[1]);
    h.until("the selected report", || async { h.client.current_url().await.unwrap().path() == want }).await;
    h.finish().await;
}

#[tokio::test]
async fn failures_show_an_error_never_a_blank_page() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 900).await;
    h.client.goto(&format!("{}/queue?route=robot", h.base)).await.unwrap();
    let msg = h.text("error").await;
    assert!(msg.contains("route"), "{msg}");
    h.client.goto(&format!("{}/reports/987654", h.base)).await.unwrap();
    let msg = h.text("error").await;
    assert!(msg.contains("report 987654 not found"), "{msg}");
    h.screenshot("error-report-missing.png").await;
    // every figure page names a bad filter, and says so when a window holds nothing
    for path in ["/", "/regimes", "/cost"] {
        h.client.goto(&format!("{}{path}?since=last-week", h.base)).await.unwrap();
        let msg = h.text("error").await;
        assert!(msg.contains("since") && msg.contains("YYYY-MM-DD"), "{path}: {msg}");
        h.client.goto(&format!("{}{path}?since=2099-01-01", h.base)).await.unwrap();
        let msg = h.text("empty").await;
        assert!(msg.contains("Widen the filters"), "{path}: {msg}");
    }
    // An unknown project in the address is an error naming it, not an empty queue under "All projects".
    h.client.goto(&format!("{}/queue?project=no%2Fsuch", h.base)).await.unwrap();
    let msg = h.text("error").await;
    assert!(msg.contains("project `no/such` not found"), "{msg}");
    h.client.goto(&format!("{}/no/such/page", h.base)).await.unwrap();
    h.until("the not-found page", || async { h.client.source().await.unwrap_or_default().contains("Page not found") })
        .await;
    h.finish().await;
}

#[tokio::test]
async fn report_page_and_narrow_screen() {
    let _one = BROWSER.lock().await;
    let h = start(390, 844).await;
    let page: Page<ReportSummary> = h.api("/api/v1/reports?route=agent_first&limit=1").await;
    let id = page.items[0].id;
    h.client.goto(&format!("{}/reports/{id}", h.base)).await.unwrap();
    let explanation = h.text("explanation").await;
    assert!(explanation.contains("deterministic oracle"), "{explanation}");
    let viewport = h.client.execute("return window.innerWidth", vec![]).await.unwrap();
    assert_eq!(viewport.as_i64(), Some(390), "a true 390 px viewport");
    let overflow = h.sideways().await;
    assert!(
        overflow <= 0,
        "the page does not scroll sideways at 390 px (tables scroll inside their frame): {overflow}"
    );
    h.screenshot("report-390.png").await;
    h.client.goto(&format!("{}/", h.base)).await.unwrap();
    h.text("headline-rate").await;
    h.screenshot("overview-390.png").await;
    for (path, testid, shot) in [
        ("/regimes", "regime-table", "regimes-390.png"),
        ("/cost", "cost-per-reproduction", "cost-390.png"),
        ("/oracles", "oracle-coverage", "oracles-390.png"),
        ("/runners", "queue-waiting", "runners-390.png"),
        ("/queue", "queue-table", "queue-390.png"),
    ] {
        h.client.goto(&format!("{}{path}", h.base)).await.unwrap();
        h.text(testid).await;
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "{path} scrolls sideways at 390 px by {overflow}");
        h.screenshot(shot).await;
    }
    h.finish().await;
}

#[tokio::test]
async fn regimes_page_shows_stated_against_computed_agent_figures() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 1000).await;
    let agents: Vec<failpass_shared::api::import::AgentFigures> = h.api("/api/v1/agents").await;
    let repgen = agents.iter().find(|a| a.agent.name == "repgen").expect("the demo states a figure for repgen");
    assert!(!repgen.discrepancies.is_empty(), "the demo's claim differs from its rows");
    h.client.goto(&format!("{}/regimes", h.base)).await.unwrap();
    let cell = h.text("agent-discrepancies").await;
    assert_eq!(cell, repgen.discrepancies.join("\n"), "the page names the same discrepancy as the API");
    h.screenshot("regimes-agents.png").await;
    h.finish().await;
}

#[tokio::test]
async fn runners_page_and_a_live_rerun_from_the_report_page() {
    let _one = BROWSER.lock().await;
    let h = start_with(1280, 1400, 2).await;
    // Let the workers grade the demo.
    let started = Instant::now();
    loop {
        let q: serde_json::Value = h.api("/api/v1/jobs").await;
        if q["queued"] == 0 && q["running"] == 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(180), "the demo's jobs did not finish: {q}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    h.client.goto(&format!("{}/runners", h.base)).await.unwrap();
    let q: serde_json::Value = h.api("/api/v1/jobs").await;
    let done = thousands(q["done_last_day"].as_i64().unwrap());
    h.until("the done count", || async { h.text("queue-done").await == done }).await;
    assert_eq!(h.text("queue-waiting").await, "0");
    let runners = h.client.find_all(Locator::Css("[data-testid=runners] tbody tr")).await.unwrap();
    assert_eq!(runners.len(), q["runners"].as_array().unwrap().len());
    assert!(h.text("runners").await.contains("live"), "a live runner is shown as live");
    // The figures are fetched again every two seconds and swapped in place, without a reload.
    h.client
        .execute("window.stayed = true; document.querySelector('[data-testid=queue-done]').dataset.old = 'yes'", vec![])
        .await
        .unwrap();
    h.until("the figures to be swapped in place", || async {
        h.client
            .execute(
                "return window.stayed === true && !document.querySelector('[data-testid=queue-done]').dataset.old",
                vec![],
            )
            .await
            .is_ok_and(|v| v == serde_json::Value::Bool(true))
    })
    .await;
    assert_eq!(h.text("queue-done").await, done);
    h.screenshot("runners.png").await;

    // The softmax report: open an attempt's grading, then rerun it and follow it live (a maintainer's to do).
    h.sign_in("demo-maintainer").await;
    let page: Page<ReportSummary> = h.api("/api/v1/reports?project=fastnum/fastnum&q=softmax").await;
    let id = page.items[0].id;
    h.client.goto(&format!("{}/reports/{id}", h.base)).await.unwrap();
    h.text("attempts").await;
    let details = h.client.find(Locator::Css("[data-testid=attempt-row] button")).await.unwrap();
    details.click().await.unwrap();
    let matrix = h.text("run-matrix").await;
    assert!(matrix.contains("buggy") && matrix.contains("fixed"), "{matrix}");
    let detail = h.text("attempt-detail").await;
    assert!(detail.contains("failure behaviour") && detail.contains("deterministic"), "{detail}");
    // the candidate is highlighted, and its text is the script exactly
    let attempts: Page<failpass_shared::api::attempts::Attempt> =
        h.api(&format!("/api/v1/attempts?report_id={id}&limit=50")).await;
    let candidate = h.client.find(Locator::Css("[data-testid=candidate]")).await.unwrap();
    let shown = candidate.text().await.unwrap();
    assert!(
        attempts.items.iter().filter_map(|a| a.candidate.as_deref()).any(|c| c.trim() == shown.trim()),
        "the page shows a stored candidate verbatim"
    );
    assert!(!candidate.find_all(Locator::Css(".tok-kw")).await.unwrap().is_empty(), "keywords are marked up");
    // the body is rendered markdown: its code block is a <pre>, never raw text
    let body = h.client.find(Locator::Css("[data-testid=report-body]")).await.unwrap();
    assert!(!body.find_all(Locator::Css("pre code")).await.unwrap().is_empty(), "the body's code block is rendered");
    h.client.execute("document.querySelector('[data-testid=attempt-detail]').scrollIntoView()", vec![]).await.unwrap();
    h.screenshot("report-attempt-detail.png").await;
    let rerun = h.client.find(Locator::Css("[data-testid=rerun]")).await.unwrap();
    rerun.click().await.unwrap();
    h.until("the rerun to finish live", || async {
        h.client.find(Locator::Css("[data-testid=job-progress]")).await.is_ok_and(|_| true)
            && h.text("job-progress").await.contains("done")
    })
    .await;
    let progress = h.text("job-progress").await;
    assert!(progress.contains("verdict"), "{progress}");
    // the row's rerun reports under that row, beside its button, not at the top of the page
    let in_row = h.client.find(Locator::Css("[data-testid=attempts] [data-testid=job-progress]")).await.unwrap();
    assert!(in_row.text().await.unwrap().contains("done"));
    h.client
        .execute("document.querySelector('[data-testid=attempts] .jobs-live').scrollIntoView()", vec![])
        .await
        .unwrap();
    h.screenshot("report-rerun-live.png").await;

    // Re-check the reproduced attempts against the newer release, from the page.
    let select = h.client.wait().for_element(Locator::Css("[data-testid=recheck-env]")).await.unwrap();
    select.select_by_value("fastnum-0.4.0").await.unwrap();
    h.client.find(Locator::Css("[data-testid=recheck]")).await.unwrap().click().await.unwrap();
    h.until("the re-checks to finish", || async {
        let lines = h.client.find_all(Locator::Css("[data-testid=job-progress]")).await.unwrap_or_default();
        let mut texts = Vec::new();
        for l in &lines {
            texts.push(l.text().await.unwrap_or_default());
        }
        texts.len() >= 2 && texts.iter().all(|t| t.contains("done"))
    })
    .await;
    let beside = h.client.find(Locator::Css("[data-testid=report-actions] [data-testid=job-progress]")).await;
    assert!(beside.is_ok(), "the re-check's progress sits beside the Re-check button");

    // The refine loop's new attempt appears in place when its job ends, without a reload.
    let before = h.client.find_all(Locator::Css("[data-testid=attempt-row]")).await.unwrap().len();
    h.client.execute("window.__kept = true", vec![]).await.unwrap();
    let refine = h.client.find(Locator::Css("[data-testid=refine]")).await.unwrap();
    assert_eq!(refine.attr("disabled").await.unwrap(), None, "the softmax report is agent first with an oracle");
    refine.click().await.unwrap();
    h.until("the refine loop's attempt to appear in place", || async {
        h.client.find_all(Locator::Css("[data-testid=attempt-row]")).await.unwrap_or_default().len() > before
    })
    .await;
    let kept = h.client.execute("return window.__kept === true", vec![]).await.unwrap();
    assert_eq!(kept, serde_json::json!(true), "the page was not reloaded");
    let actions = h.text("report-actions").await;
    assert!(actions.contains("done") && actions.contains("Refine loop queued"), "{actions}");
    h.client.execute("window.scrollTo(0, 0)", vec![]).await.unwrap();
    h.screenshot("report-refine-live.png").await;
    let attempts: serde_json::Value = h.api(&format!("/api/v1/attempts?report_id={id}")).await;
    let rechecked = attempts["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["grade"]["recheck"]["outcome"] == "no_longer_reproduces")
        .count();
    assert!(rechecked >= 1, "{attempts}");

    // The triage queue's bulk rerun takes the view's reports, after a confirmation that counts them.
    h.client.goto(&format!("{}/queue?project=fastnum%2Ffastnum", h.base)).await.unwrap();
    h.client.wait().for_element(Locator::Css("[data-testid=queue-row]")).await.unwrap();
    let total: serde_json::Value = h.api("/api/v1/reports/table?project=fastnum%2Ffastnum").await;
    h.client.find(Locator::Css("[data-testid=bulk-scope]")).await.unwrap().select_by_value("view").await.unwrap();
    h.client.find(Locator::Css("[data-testid=bulk-action]")).await.unwrap().select_by_value("rerun").await.unwrap();
    h.client.find(Locator::Css("[data-testid=bulk-review]")).await.unwrap().click().await.unwrap();
    let summary = h.text("bulk-summary").await;
    assert_eq!(summary, format!("Rerun the failed attempts of {} reports?", total["total"]), "the count comes first");
    h.screenshot("queue-bulk-confirm.png").await;
    h.client.find(Locator::Css("[data-testid=bulk-confirm]")).await.unwrap().click().await.unwrap();
    let msg = h.text("bulk-result").await;
    assert!(
        msg.contains("rerun(s) queued") && !msg.contains(" 0 rerun(s)"),
        "fastnum has failed attempts to rerun: {msg}"
    );
    h.screenshot("queue-bulk-rerun.png").await;
    h.finish().await;
}

#[tokio::test]
async fn oracles_page_shows_the_apis_coverage() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 1300).await;
    h.client.goto(&format!("{}/oracles", h.base)).await.unwrap();
    let api: serde_json::Value = h.api("/api/v1/oracles").await;
    let rate = |v: &serde_json::Value| percent(v["rate"].as_f64());
    assert_eq!(h.text("oracle-coverage").await, rate(&api["coverage"]));
    assert_eq!(h.text("oracle-in-patch").await, rate(&api["in_patch"]));
    let rows = h.client.find_all(Locator::Css("[data-testid=oracle-kinds] tbody tr")).await.unwrap();
    assert_eq!(rows.len(), api["by_kind"].as_array().unwrap().len());
    for (el, k) in rows.iter().zip(api["by_kind"].as_array().unwrap()) {
        assert_eq!(el.attr("data-kind").await.unwrap().as_deref(), k["kind"].as_str());
        assert!(el.text().await.unwrap().contains(&thousands(k["reports"].as_i64().unwrap())));
    }
    let svg = h.svg("chart-oracle-kinds").await;
    assert!(svg.contains("Reports by oracle kind") && svg.contains("Oracle kind"), "a titled chart with labelled axes");
    // every table of the page downloads as CSV
    let link = h.client.find(Locator::Css("[data-testid=export-oracle-kinds]")).await.unwrap();
    let href = link.attr("href").await.unwrap().unwrap();
    let csv = h.http.get(format!("{}{href}", h.base)).send().await.unwrap().text().await.unwrap();
    assert_eq!(csv.lines().count(), api["by_kind"].as_array().unwrap().len() + 1, "{csv}");
    assert!(csv.starts_with("kind,reports"), "{csv}");
    assert_eq!(h.text("oracle-llm-precision").await, rate(&api["llm_precision"]));
    let sources = h.svg("chart-oracle-sources").await;
    assert!(sources.contains("in-patch reference 47.11%"), "the reference line is named in the legend");
    h.screenshot("oracles.png").await;
    // the project filter goes into the URL and the figures follow it
    let select = h.client.find(Locator::Css("[data-testid=filter-project]")).await.unwrap();
    select.select_by_value("fastnum/fastnum").await.unwrap();
    let fastnum: serde_json::Value = h.api("/api/v1/oracles?project=fastnum/fastnum").await;
    let want = rate(&fastnum["coverage"]);
    h.until("the fastnum figures", || async { h.text("oracle-coverage").await == want }).await;
    assert!(h.client.current_url().await.unwrap().as_str().contains("project=fastnum%2Ffastnum"));
    h.finish().await;
}

#[tokio::test]
async fn a_maintainer_accepts_a_lead_from_the_report_page() {
    let _one = BROWSER.lock().await;
    let h = start(1280, 1100).await;
    h.sign_in("demo-maintainer").await;
    let leads: serde_json::Value = h.api("/api/v1/attempts?verdict=lead&project=jax-ml%2Fjax&limit=1").await;
    let report = leads["items"][0]["report_id"]
        .as_i64()
        .expect("the demo has an LLM lead in a project demo-maintainer maintains");
    let count = |v: &serde_json::Value, verdict: &str| {
        v["items"].as_array().unwrap().iter().filter(|a| a["verdict"] == verdict).count()
    };
    let before: serde_json::Value = h.api(&format!("/api/v1/attempts?report_id={report}&limit=200")).await;
    h.client.goto(&format!("{}/reports/{report}", h.base)).await.unwrap();
    h.client.wait().for_element(Locator::Css("[data-testid=review]")).await.unwrap().click().await.unwrap();
    // The reviewer is who signed in, not a field of the form.
    h.client
        .wait()
        .for_element(Locator::Css("[data-testid=review-comment]"))
        .await
        .unwrap()
        .send_keys("reran it by hand")
        .await
        .unwrap();
    assert!(
        h.client.find(Locator::Css("[data-testid=reviewer]")).await.is_err(),
        "no reviewer field to type a name into"
    );
    h.client.find(Locator::Css("[data-testid=accept]")).await.unwrap().click().await.unwrap();
    h.until("the review to show", || async {
        h.text("attempts").await.contains("reviewed by demo-maintainer: reran it by hand")
    })
    .await;
    let after: serde_json::Value = h.api(&format!("/api/v1/attempts?report_id={report}&limit=200")).await;
    assert_eq!(count(&after, "confirmed"), count(&before, "confirmed") + 1, "one more confirmation");
    assert!(count(&after, "lead") + 1 == count(&before, "lead") || count(&before, "lead") == 0);
    h.client.execute("document.querySelector('[data-testid=attempts]').scrollIntoView()", vec![]).await.unwrap();
    h.screenshot("report-review.png").await;
    h.finish().await;
}

/// A maintainer corrects a report's route from the report page: a missing
/// reason is refused, then the correction shows with who and why, and the
/// queue marks the report corrected. At 1280 and 390 px.
#[tokio::test]
async fn a_maintainer_corrects_a_route_from_the_report_page() {
    let _one = BROWSER.lock().await;
    for width in [1280, 390] {
        let h = start(width, 1100).await;
        h.sign_in("demo-maintainer").await;
        let list: serde_json::Value = h.api("/api/v1/reports?project=jax-ml%2Fjax&route=agent_first&limit=1").await;
        let report = list["items"][0]["id"].as_i64().expect("the demo has an agent_first report in jax-ml/jax");
        h.client.goto(&format!("{}/reports/{report}", h.base)).await.unwrap();
        // No reason, or only spaces: the browser says the reason is missing (the
        // server's own rule), sends nothing and keeps the choice.
        let select = h.client.wait().for_element(Locator::Css("[data-testid=route-choice]")).await.unwrap();
        select.select_by_value("human_first").await.unwrap();
        for typed in ["", "   "] {
            let reason = h.client.find(Locator::Css("[data-testid=route-reason]")).await.unwrap();
            reason.clear().await.unwrap();
            reason.send_keys(typed).await.unwrap();
            h.client.find(Locator::Css("[data-testid=set-route]")).await.unwrap().click().await.unwrap();
            let state = h
                .client
                .execute(
                    "const r = document.querySelector('[data-testid=route-reason]'); \
                     return [r.validity.valid, document.querySelector('[data-testid=route-choice]').value]",
                    vec![],
                )
                .await
                .unwrap();
            assert_eq!(state, serde_json::json!([false, "human_first"]), "{typed:?}");
            let same: serde_json::Value = h.api(&format!("/api/v1/reports/{report}")).await;
            assert_eq!(same["route"], "agent_first");
        }
        h.client.find(Locator::Css("[data-testid=route-reason]")).await.unwrap().clear().await.unwrap();
        h.client
            .find(Locator::Css("[data-testid=route-reason]"))
            .await
            .unwrap()
            .send_keys("the failure is in the launcher's device setup")
            .await
            .unwrap();
        h.client.find(Locator::Css("[data-testid=set-route]")).await.unwrap().click().await.unwrap();
        h.until("the correction to show", || async { h.text("route-correction").await.contains("by demo-maintainer") })
            .await;
        let text = h.text("route-correction").await;
        assert!(text.contains("from agent first to human first") && text.contains("launcher's device setup"), "{text}");
        let after: serde_json::Value = h.api(&format!("/api/v1/reports/{report}")).await;
        assert_eq!((after["route"].as_str(), after["route_corrected"].as_bool()), (Some("human_first"), Some(true)));
        assert!(
            h.text("activity")
                .await
                .contains("route agent first → human first: the failure is in the launcher's device setup")
        );
        h.screenshot(&format!("report-route-{width}.png")).await;
        let overflow: bool = h
            .client
            .execute("return document.documentElement.scrollWidth > window.innerWidth", vec![])
            .await
            .unwrap()
            .as_bool()
            .unwrap();
        assert!(!overflow, "no sideways scroll at {width} px");
        h.finish().await;
    }
}

/// A maintainer's triage from the report page: a duplicate (refused without
/// the other report's number, then of it), an assignee, a comment; each in
/// the timeline and the API; reopened at the end.
#[tokio::test]
async fn a_maintainer_closes_a_duplicate_assigns_and_comments_from_the_report_page() {
    let _one = BROWSER.lock().await;
    for width in [1280, 390] {
        let h = start(width, 1100).await;
        h.sign_in("demo-maintainer").await;
        let list: serde_json::Value = h.api("/api/v1/reports?project=jax-ml%2Fjax&limit=2").await;
        let (a, b) = (list["items"][0]["id"].as_i64().expect("the demo has jax-ml/jax reports"), &list["items"][1]);
        let was = list["items"][0]["status"].as_str().unwrap().to_owned();
        let b_number = b["external_id"].as_str().unwrap().to_owned();
        h.client.goto(&format!("{}/reports/{a}", h.base)).await.unwrap();
        // jax-ml/jax has no buggy and fixed environment: nothing to run, and the page says why.
        let refine = h.client.wait().for_element(Locator::Css("[data-testid=refine]")).await.unwrap();
        h.until("the environments check", || async {
            refine.attr("disabled").await.unwrap().is_some()
                && h.text("actions-why").await.contains("no buggy and fixed environment")
        })
        .await;
        let rerun = h.client.find(Locator::Css("[data-testid=rerun-failed]")).await.unwrap();
        assert!(rerun.attr("disabled").await.unwrap().is_some());
        let choose = |value: &'static str| {
            let c = h.client.clone();
            async move {
                let select = c.wait().for_element(Locator::Css("[data-testid=status-choice]")).await.unwrap();
                select.select_by_value(value).await.unwrap();
            }
        };
        let click = |id: &'static str| {
            let c = h.client.clone();
            async move { c.find(Locator::Css(&format!("[data-testid={id}]"))).await.unwrap().click().await.unwrap() }
        };
        // A duplicate of nothing: refused, said on the page, nothing changed.
        choose("duplicate").await;
        click("set-status").await;
        h.until("the refusal to show", || async { h.text("lifecycle-error").await.contains("duplicates") }).await;
        let same: serde_json::Value = h.api(&format!("/api/v1/reports/{a}")).await;
        assert_eq!(same["status"], was.as_str());
        // Of the other report, by its upstream number.
        choose("duplicate").await;
        h.client.find(Locator::Css("[data-testid=duplicate-of]")).await.unwrap().send_keys(&b_number).await.unwrap();
        h.client
            .find(Locator::Css("[data-testid=status-reason]"))
            .await
            .unwrap()
            .send_keys("same traceback")
            .await
            .unwrap();
        click("set-status").await;
        h.until("the duplicate to show", || async { h.text("lifecycle-status").await == "duplicate" }).await;
        let activity = h.text("activity").await;
        let was_words = was.replace('_', " ");
        assert!(activity.contains(&format!("{was_words} → duplicate of #{b_number}: same traceback")), "{activity}");
        // Assigned and commented.
        h.client
            .find(Locator::Css("[data-testid=assignee]"))
            .await
            .unwrap()
            .send_keys("demo-maintainer")
            .await
            .unwrap();
        click("assign").await;
        h.until("the assignee to show", || async { h.text("lifecycle-assignee").await == "demo-maintainer" }).await;
        h.client
            .wait()
            .for_element(Locator::Css("[data-testid=comment]"))
            .await
            .unwrap()
            .send_keys("Seen on jax 0.4.30 too.")
            .await
            .unwrap();
        click("post-comment").await;
        h.until("the comment to show", || async { h.text("activity").await.contains("Seen on jax 0.4.30 too.") }).await;
        let after: serde_json::Value = h.api(&format!("/api/v1/reports/{a}")).await;
        assert_eq!(
            (after["status"].as_str(), after["assignee"].as_str()),
            (Some("duplicate"), Some("demo-maintainer"))
        );
        let vias: Vec<&str> =
            after["activity"].as_array().unwrap().iter().skip(1).map(|x| x["via"].as_str().unwrap()).collect();
        assert!(vias.iter().all(|v| *v == "ui"), "changes from the page say so: {vias:?}");
        h.screenshot(&format!("report-lifecycle-{width}.png")).await;
        let overflow: bool = h
            .client
            .execute("return document.documentElement.scrollWidth > window.innerWidth", vec![])
            .await
            .unwrap()
            .as_bool()
            .unwrap();
        assert!(!overflow, "no sideways scroll at {width} px");
        // Reopened, for the next width.
        choose("reopen").await;
        click("set-status").await;
        h.until("the reopening to show", || async { h.text("lifecycle-status").await == was.replace('_', " ") }).await;
        h.client.wait().for_element(Locator::Css("[data-testid=assignee]")).await.unwrap().clear().await.unwrap();
        click("assign").await;
        h.until("the unassigning to show", || async { h.text("lifecycle-assignee").await == "nobody" }).await;
        h.finish().await;
    }
}
