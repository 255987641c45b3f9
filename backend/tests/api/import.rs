//! Importers on the real data in ../shared/data/real, checked against MANIFEST.txt.

use failpass_shared::figures::FlowKind;
use failpass_shared::model::ReportStatus;
use std::path::PathBuf;
use std::process::Command;

use failpass::db::ProjectScope;
use failpass::import::{Format, Importer, run};
use failpass_shared::api::import::{AgentFigures, ImportSummary};
use failpass_shared::api::reports::ReportListQuery;
use failpass_shared::routing::RoutingConfig;
use serde_json::json;

use crate::helpers::{assert_error, spawn_app, sqlite_storage};

/// The team's real data: `shared/data/real` beside the checkout (as CI lays it
/// out), or wherever `FAILPASS_SHARED_DATA` points.
fn real(name: &str) -> PathBuf {
    let dir = std::env::var_os("FAILPASS_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/real"));
    let p = dir.join(name);
    assert!(
        p.exists(),
        "{} is missing: the team's shared/ folder must sit beside the checkout (or set FAILPASS_SHARED_DATA)",
        p.display()
    );
    p
}

async fn import_file(storage: &dyn failpass::db::Storage, format: Format, name: &str) -> ImportSummary {
    let routing = RoutingConfig::default();
    let file = tokio::fs::File::open(real(name)).await.unwrap();
    let mut importer = Importer::new(storage, &routing);
    run(&mut importer, format, tokio::io::BufReader::new(file), &Default::default()).await.unwrap();
    importer.finish().await.unwrap()
}

#[tokio::test]
async fn swebench_lite_instances_become_reports_with_in_patch_oracles() {
    let (s, _dir) = sqlite_storage().await;
    let first = import_file(s.as_ref(), Format::SwebenchInstances, "swebench_lite_test.jsonl").await;
    assert_eq!((first.created, first.rejected), (312, 0), "300 reports and 12 projects: {first:?}");
    let projects = s.list_projects(&ProjectScope::All).await.unwrap();
    assert_eq!(projects.len(), 12);
    assert_eq!(projects.iter().find(|p| p.slug == "django/django").unwrap().reports, 114);
    let mut q = ReportListQuery { limit: 500, ..Default::default() };
    q.filter.label = Some("swe-bench".into());
    let reports = s.list_reports(&q, &ProjectScope::All).await.unwrap().items;
    assert_eq!(reports.len(), 300);
    let mut tests = 0;
    for r in &reports {
        let full = s.get_report(r.id, &ProjectScope::All).await.unwrap().unwrap();
        let o = full.oracle.expect("every instance has an oracle");
        assert_eq!(o.source, Some(failpass_shared::model::OracleSource::InPatchTest));
        tests += o.fail_to_pass.len();
    }
    assert_eq!(tests, 1040, "FAIL_TO_PASS tests in MANIFEST.txt");
    let fig = failpass_shared::figures::figure_rows(
        s.figure_contributions(&Default::default(), &ProjectScope::All).await.unwrap(),
    );
    assert_eq!(fig[0].in_patch_test_share, Some(1.0), "oracle coverage with source in_patch_test is 300/300");
    assert!(projects.iter().all(|p| p.benchmark), "the SWE-bench importer marks its projects benchmarks");
    let flows = s.report_flows(&Default::default(), &ProjectScope::All).await.unwrap();
    assert_eq!(failpass_shared::figures::FlowCounts::from(flows.as_slice()).total(FlowKind::Backlog), 0);

    let again = import_file(s.as_ref(), Format::SwebenchInstances, "swebench_lite_test.jsonl").await;
    assert_eq!((again.created, again.updated, again.unchanged), (0, 0, 312), "importing twice changes nothing");
}

fn agent<'a>(agents: &'a [AgentFigures], name: &str) -> &'a AgentFigures {
    agents.iter().find(|a| a.agent.name == name).unwrap_or_else(|| panic!("no agent {name}"))
}

#[tokio::test]
async fn swebench_leaderboard_reproduces_the_published_figures_and_shows_its_quirks() {
    let app = spawn_app().await;
    let s = app.storage.clone();
    let first = import_file(s.as_ref(), Format::SwebenchLeaderboard, "swebench_leaderboards_dev.json").await;
    assert_eq!(first.rejected, 0, "{:?}", first.rejections);
    let agents: Vec<AgentFigures> = serde_json::from_value(app.get("/api/v1/agents").await.body).unwrap();
    // MANIFEST.txt: name, resolved of 500, total cost
    for (name, resolved, cost) in [
        ("GPT-5 (2025-08-07) (medium reasoning)", 325, 140.19),
        ("Claude 4.5 Sonnet (20250929)", 353, 279.17),
        ("GPT-5 mini (2025-08-07)", 299, 17.74),
        ("o3 (2025-04-16)", 292, 166.83),
        ("Gemini 2.5 Pro", 268, 144.19),
        ("GPT-5 nano", 174, 19.04),
    ] {
        let full = agents
            .iter()
            .find(|a| a.agent.name.starts_with(name) && a.agent.name.ends_with("[bash-only]"))
            .unwrap_or_else(|| panic!("no bash-only agent {name}"));
        let c = full.computed.as_ref().unwrap();
        assert_eq!((c.reports_graded, c.reports_reproduced), (500, resolved), "{name}");
        assert!((c.cost_total_usd - cost).abs() < 0.005, "{name}: {}", c.cost_total_usd);
        assert!(full.discrepancies.is_empty(), "{name}: {:?}", full.discrepancies);
    }
    let gpt5 = agents.iter().find(|a| a.agent.name.starts_with("GPT-5 (2025-08-07)")).unwrap();
    let c = gpt5.computed.as_ref().unwrap();
    assert!((c.cost_mean_attempt_usd.unwrap() - 0.2804).abs() < 0.00005, "{:?}", c.cost_mean_attempt_usd);
    assert!((c.api_calls_mean.unwrap() - 13.208).abs() < 0.0005, "{:?}", c.api_calls_mean);

    // The known quirks are shown, not hidden.
    let c4 = agents
        .iter()
        .find(|a| a.agent.name.starts_with("Claude 4 Sonnet") && a.agent.name.ends_with("[bash-only]"))
        .unwrap();
    assert_eq!(c4.computed.as_ref().unwrap().reports_reproduced, 324);
    assert!(c4.discrepancies.iter().any(|d| d.contains("64.93%") && d.contains("64.80%")), "{:?}", c4.discrepancies);
    let c37 = agents.iter().find(|a| a.agent.name.starts_with("Claude 3.7 Sonnet")).unwrap();
    assert_eq!(c37.computed.as_ref().unwrap().reports_reproduced, 51);
    assert!(c37.discrepancies.iter().any(|d| d.contains("52.80%") && d.contains("10.20%")), "{:?}", c37.discrepancies);
    assert!(!c37.discrepancies.iter().any(|d| d.contains("cost")), "its costs match: {:?}", c37.discrepancies);
    let g41 = agents.iter().find(|a| a.agent.name.starts_with("GPT-4.1")).unwrap();
    assert!(g41.computed.is_none());
    assert!(g41.discrepancies[0].starts_with("no per-instance rows"), "{:?}", g41.discrepancies);
    let lite = agent(&agents, "ExpeRepair-v1.0 + Claude 4 Sonnet [Lite]");
    assert_eq!(lite.agent.stated_rate, Some(0.6033));
    assert_eq!(lite.agent.stated_instances, Some(300));
    assert_eq!((0.6033f64 * 300.0).round() as u64, 181);
    assert_eq!(agents.iter().filter(|a| a.agent.source.as_deref() == Some("swebench:Lite")).count(), 84);

    // The same rows through /api/v1/figures
    let fig = app.get("/api/v1/figures?group_by=agent&goal=fix").await.body;
    let row = fig["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"].as_str().unwrap().starts_with("GPT-5 (2025-08-07)"))
        .unwrap();
    assert_eq!(row["reports_reproduced"], 325);
    // A leaderboard's projects are benchmarks: their instances are graded as
    // fixes and are no open backlog (issue 34 item 7); the Overview's cards
    // under goal=fix show the resolutions.
    let django = app.get("/api/v1/projects/django/django").await.body;
    assert_eq!(django["benchmark"], true, "{django}");
    assert_eq!(app.get("/api/v1/throughput?project=django/django").await.body["backlog"], 0);
    let glance = app.get("/api/v1/glance?project=django/django&goal=fix").await.body;
    assert_eq!(glance["backlog"], 0);
    let cards = glance["cards_html"].as_str().unwrap();
    assert!(cards.contains("Resolution rate") && cards.contains("Goal: fix"), "{cards}");

    let again = import_file(s.as_ref(), Format::SwebenchLeaderboard, "swebench_leaderboards_dev.json").await;
    assert_eq!((again.created, again.updated), (0, 0), "importing twice changes nothing: {again:?}");
    // And its summary covers every record the first one did (stub projects and reports included).
    assert_eq!((again.records, again.unchanged), (first.records, first.records), "{first:?} / {again:?}");

    // The second format of the same data agrees with the first.
    let info = import_file(s.as_ref(), Format::SwebenchLeaderboard, "swebench_info_for_leaderboard.json").await;
    assert_eq!(info.rejected, 0);
    let agents: Vec<AgentFigures> = serde_json::from_value(app.get("/api/v1/agents").await.body).unwrap();
    for (name, resolved) in [("gpt-5", 325), ("gpt-5-mini", 299), ("sonnet-4", 324), ("sonnet-4-5", 353)] {
        assert_eq!(agent(&agents, name).computed.as_ref().unwrap().reports_reproduced, resolved, "{name}");
    }
}

#[tokio::test]
async fn ndjson_rejects_bad_lines_by_number_and_keeps_the_rest() {
    let app = spawn_app().await;
    let body = [
        json!({"kind": "project", "slug": "a/lib"}).to_string(),
        json!({"kind": "report", "project": "a/lib", "external_id": "1", "title": "sum is wrong",
               "body": "```python\nsum(x)\n```\nExpected 3 but got 4.",
               "oracle": {"kind": "fail_to_pass", "source": "authored", "command": "python r.py"}}).to_string(),
        "{not json".to_owned(),
        json!({"kind": "report", "project": "a/lib", "external_id": "2"}).to_string(),
        json!({"kind": "robot"}).to_string(),
        String::new(),
        json!({"kind": "attempt", "report": {"project": "a/lib", "external_id": "1"}, "agent": "x", "verdict": "reproduced", "verdict_source": "deterministic", "cost_usd": 0.5}).to_string(),
        json!({"kind": "attempt", "report": {"project": "a/lib", "external_id": "99"}, "agent": "x", "verdict": "reproduced", "verdict_source": "deterministic"}).to_string(),
        json!({"kind": "attempt", "report": {"project": "a/lib", "external_id": "1"}, "agent": "x", "verdict": "error", "verdict_source": "deterministic", "cost_usd": -1}).to_string(),
    ]
    .join("\n");
    let post = |b: String| {
        let app = &app;
        async move {
            let r = app.import_ndjson(b).await;
            (r.status().as_u16(), r.json::<ImportSummary>().await.unwrap())
        }
    };
    let (status, s) = post(body.clone()).await;
    assert_eq!(status, 200);
    assert_eq!((s.records, s.created, s.rejected), (8, 3, 5), "{s:?}");
    let lines: Vec<(u64, Option<&str>)> = s.rejections.iter().map(|r| (r.record, r.field.as_deref())).collect();
    assert_eq!(
        lines,
        [(3, None), (4, Some("title")), (5, None), (8, Some("report")), (9, Some("cost_usd"))],
        "{:?}",
        s.rejections
    );
    assert!(s.rejections[0].message.contains("line 3"), "{:?}", s.rejections[0]);
    assert!(s.rejections[2].message.contains("robot"), "{:?}", s.rejections[2]);
    let report = app.get("/api/v1/reports?project=a/lib").await.body;
    assert_eq!(report["items"][0]["status"], "reproduced");
    assert_eq!(report["items"][0]["cost_usd"], 0.5);

    let (_, again) = post(body).await;
    assert_eq!((again.created, again.updated, again.unchanged, again.rejected), (0, 0, 3, 5), "{again:?}");
    assert_eq!(app.get("/api/v1/attempts?project=a/lib").await.body["items"].as_array().unwrap().len(), 1);

    assert_error(
        &app.post_raw("/api/v1/import?format=excel", Some("application/x-ndjson"), "").await,
        400,
        "bad_request",
        "format: unknown format `excel`",
    );
}

#[test]
fn the_cli_prints_a_summary_and_exits_3_when_records_were_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.ndjson");
    std::fs::write(&input, "{\"kind\":\"project\",\"slug\":\"a/b\"}\n{\"kind\":\"project\",\"slug\":\"bad slug\"}\n")
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_failpass"))
        .args(["import", "--format", "ndjson", "--data-dir"])
        .arg(dir.path())
        .arg(&input)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("2 records") && stdout.contains("1 created") && stdout.contains("1 rejected"), "{stdout}");
    assert!(stdout.contains("rejected record 2: slug:"), "{stdout}");
    let bad = Command::new(env!("CARGO_BIN_EXE_failpass"))
        .args(["import", "--format", "xml", "--data-dir"])
        .arg(dir.path())
        .arg(&input)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--format: unknown format `xml`"));
}

#[tokio::test]
async fn github_issues_import_skips_pull_requests_and_keeps_labels() {
    let (s, _dir) = sqlite_storage().await;
    let first = import_file(s.as_ref(), Format::GithubIssues, "hf_datasets_issues_api.jsonl").await;
    // MANIFEST.txt: 570 issue records + 430 PRs; pull_request is null (not absent) on issues.
    // The dump repeats 56 issue records verbatim (514 distinct numbers): the repeats are
    // `unchanged`, as a re-import would be.
    assert_eq!((first.records, first.skipped, first.rejected), (1001, 430, 0), "{first:?}");
    assert_eq!((first.created, first.unchanged), (515, 56), "514 reports and the project: {first:?}");
    let mut q = ReportListQuery { limit: 500, ..Default::default() };
    q.filter.project = Some("huggingface/datasets".into());
    q.filter.label = Some("bug".into());
    // 40 and 95 issue records carry these labels (MANIFEST.txt); 36 and 88 distinct issues.
    assert_eq!(s.list_reports(&q, &ProjectScope::All).await.unwrap().items.len(), 36);
    q.filter.label = Some("enhancement".into());
    assert_eq!(s.list_reports(&q, &ProjectScope::All).await.unwrap().items.len(), 88);
    // Upstream state and kind (issue 15): 317 of the 514 are closed upstream and
    // 94 carry a not-a-bug label (88 enhancement, 8 documentation, some both);
    // only the 139 open bugs and unlabelled issues stay in the backlog.
    q.filter.label = None;
    for (status, n) in [(ReportStatus::NotABug, 94), (ReportStatus::ClosedUpstream, 281), (ReportStatus::New, 139)] {
        q.filter.status = failpass_shared::api::reports::Statuses::of(&[status]);
        assert_eq!(s.list_reports(&q, &ProjectScope::All).await.unwrap().items.len(), n, "{status}");
    }
    q.filter.status = Default::default();
    let one = s
        .list_reports(&ReportListQuery { limit: 1, ..Default::default() }, &ProjectScope::All)
        .await
        .unwrap()
        .items
        .remove(0);
    assert!(
        one.url.as_deref().unwrap().starts_with("https://github.com/huggingface/datasets/issues/"),
        "{:?}",
        one.url
    );
    let again = import_file(s.as_ref(), Format::GithubIssues, "hf_datasets_issues_api.jsonl").await;
    assert_eq!((again.created, again.updated, again.unchanged), (0, 0, 571), "importing twice changes nothing");
    assert_eq!(again.skipped, 430);
}

#[tokio::test]
async fn reroute_applies_a_changed_configuration_and_counts_route_changes() {
    let (s, _dir) = sqlite_storage().await;
    import_file(s.as_ref(), Format::GithubIssues, "hf_datasets_issues_api.jsonl").await;
    let defaults = RoutingConfig::default();
    // The first reroute learns the project's boilerplate (its issue templates'
    // lines) and reads the reports without it; a few routings change.
    let first = failpass::cli::reroute::reroute(s.as_ref(), &defaults, false).await.unwrap();
    assert_eq!(first.reports, 514);
    assert!(first.boilerplate["huggingface/datasets"] > 0, "{first:?}");
    assert!(first.changed <= 10, "{first:?}");
    let settled = failpass::cli::reroute::reroute(s.as_ref(), &defaults, false).await.unwrap();
    assert_eq!((settled.reports, settled.changed), (514, 0), "the stored routing is the default rule's");
    // Treat "streaming" as harness plumbing: reports mentioning it go to a human first.
    let mut cfg = defaults.clone();
    cfg.harness_keywords.push("streaming".into());
    let dry = failpass::cli::reroute::reroute(s.as_ref(), &cfg, true).await.unwrap();
    assert!(dry.routes_changed > 0, "{dry:?}");
    let mut q = ReportListQuery { limit: 500, ..Default::default() };
    q.filter.route = Some(failpass_shared::model::Route::HumanFirst);
    let before = s.list_reports(&q, &ProjectScope::All).await.unwrap().items.len();
    let real = failpass::cli::reroute::reroute(s.as_ref(), &cfg, false).await.unwrap();
    assert_eq!(real.routes_changed, dry.routes_changed, "a dry run counts what a real one changes");
    let after = s.list_reports(&q, &ProjectScope::All).await.unwrap().items.len();
    let into_human: u64 = real.transitions.iter().filter(|(t, _)| t.ends_with("→ human_first")).map(|(_, n)| n).sum();
    assert_eq!(after - before, into_human as usize);
    let again = failpass::cli::reroute::reroute(s.as_ref(), &cfg, false).await.unwrap();
    assert_eq!(again.changed, 0, "rerouting twice changes nothing");
    let stored = s.list_reports(&q, &ProjectScope::All).await.unwrap().items;
    let one = s.get_report(stored[0].id, &ProjectScope::All).await.unwrap().unwrap();
    assert!(one.explanation[0].fired, "the explanation is stored with the new route");
}

#[tokio::test]
async fn the_shipped_dl_bug_mapping_gives_85_of_102() {
    let (s, _dir) = sqlite_storage().await;
    let mapping_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mappings/dlbugs_manual_reproduction.toml");
    let options = failpass::import::ImportOptions {
        mapping: Some(failpass::import::mapping::load(&mapping_path).unwrap()),
        ..Default::default()
    };
    let routing = RoutingConfig::default();
    let file = tokio::fs::File::open(real("dlbugs_manual_reproduction_stackoverflow.csv")).await.unwrap();
    let mut importer = Importer::new(s.as_ref(), &routing);
    run(&mut importer, Format::Csv, tokio::io::BufReader::new(file), &options).await.unwrap();
    let summary = importer.finish().await.unwrap();
    assert_eq!((summary.created, summary.rejected), (1 + 102 + 102, 0), "{:?}", summary.rejections);
    let fig = failpass_shared::figures::figure_rows(
        s.figure_contributions(&Default::default(), &ProjectScope::All).await.unwrap(),
    );
    assert_eq!(
        (fig[0].reports, fig[0].reports_graded, fig[0].reports_reproduced),
        (102, 102, 85),
        "MANIFEST.txt: 85 of 102"
    );
    let mut q = ReportListQuery { limit: 500, ..Default::default() };
    q.filter.label = Some("PyTorch".into());
    assert_eq!(s.list_reports(&q, &ProjectScope::All).await.unwrap().items.len(), 34, "framework kept as a label");
    q.filter.label = Some("Training Bug".into());
    assert_eq!(s.list_reports(&q, &ProjectScope::All).await.unwrap().items.len(), 29, "bug type kept as a label");
    let a = s
        .list_attempts(
            &failpass_shared::api::attempts::AttemptListQuery { limit: 500, ..Default::default() },
            &ProjectScope::All,
        )
        .await
        .unwrap()
        .items;
    assert_eq!(a.len(), 102);
    assert!(a.iter().all(|a| a.agent == "human" && a.wall_seconds.is_some_and(|w| w >= 60.0)), "Time Taken is minutes");
}

#[test]
fn a_mapping_that_reads_a_missing_column_fails_once_before_any_row() {
    let m: failpass::import::mapping::Mapping =
        toml::from_str("project = \"a/b\"\n[report]\nexternal_id = \"{id}\"\ntitle = \"{missing}\"\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let s = failpass::db::connect(&dir.path().join("t.db").to_string_lossy()).await.unwrap();
        s.migrate().await.unwrap();
        let routing = RoutingConfig::default();
        let options = failpass::import::ImportOptions { mapping: Some(m), ..Default::default() };
        // CSV: checked against the header, one message, nothing stored.
        let mut importer = Importer::new(s.as_ref(), &routing);
        let err = run(&mut importer, Format::Csv, &b"id,x\n1,2\n3,4\n5,6\n"[..], &options).await.unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("`missing` (read by report.title)") && msg.contains("its header has: id, x"), "{msg}");
        assert!(s.is_empty().await.unwrap(), "nothing was stored");
        // JSON: checked against the first record; a later record without the
        // field is rejected on its own, by number and field.
        let mut importer = Importer::new(s.as_ref(), &routing);
        let input = b"{\"id\": 1}\n{\"id\": 2}\n";
        let err = run(&mut importer, Format::Json, &input[..], &options).await.unwrap_err();
        assert!(format!("{err:#}").contains("its first record has: id"), "{err:#}");
        let mut importer = Importer::new(s.as_ref(), &routing);
        let input = b"{\"id\": 1, \"missing\": \"t\"}\n{\"id\": 2}\n";
        run(&mut importer, Format::Json, &input[..], &options).await.unwrap();
        let summary = importer.finish().await.unwrap();
        assert_eq!((summary.created, summary.rejected), (2, 1), "{summary:?}");
        assert_eq!(summary.rejections[0].record, 2);
        assert_eq!(summary.rejections[0].field.as_deref(), Some("title"));
        assert!(summary.rejections[0].message.contains("no field `missing`"), "{:?}", summary.rejections);
    });
}

#[test]
fn a_key_repeated_with_other_content_is_refused_by_row() {
    let m: failpass::import::mapping::Mapping = toml::from_str(
        "project = \"a/b\"\n[report]\nexternal_id = \"{id}\"\ntitle = \"{title}\"\n\
         [attempt]\nagent = \"{agent}\"\nverdict = \"reproduced\"\nverdict_source = \"human\"\n",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let s = failpass::db::connect(&dir.path().join("t.db").to_string_lossy()).await.unwrap();
        s.migrate().await.unwrap();
        let routing = RoutingConfig::default();
        let options = failpass::import::ImportOptions { mapping: Some(m), ..Default::default() };
        let mut importer = Importer::new(s.as_ref(), &routing);
        // Rows 2 and 3: one report, two attempts. Row 4: the same key, another title.
        let input = b"id,title,agent\n1,NaN in softmax,a1\n1,NaN in softmax,a2\n1,Crash in conv,a3\n2,Other,a1\n";
        run(&mut importer, Format::Csv, &input[..], &options).await.unwrap();
        let summary = importer.finish().await.unwrap();
        assert_eq!(summary.rejected, 1, "{summary:?}");
        let r = &summary.rejections[0];
        assert_eq!((r.record, r.field.as_deref()), (4, Some("external_id")));
        assert!(r.message.contains("already given by row 2 with a different title"), "{}", r.message);
        let q = ReportListQuery { limit: 500, ..Default::default() };
        let reports = s.list_reports(&q, &ProjectScope::All).await.unwrap().items;
        assert_eq!(reports.len(), 2);
        assert!(reports.iter().all(|r| r.title != "Crash in conv"), "the refused row changed nothing");
        let attempts = s
            .list_attempts(
                &failpass_shared::api::attempts::AttemptListQuery { limit: 500, ..Default::default() },
                &ProjectScope::All,
            )
            .await
            .unwrap()
            .items;
        assert_eq!(attempts.len(), 3, "the refused row's attempt is not stored");
    });
}

/// docs/mappings.md's examples are mappings failpass reads, and its field
/// table names every field a mapping has.
#[test]
fn the_mapping_docs_examples_parse() {
    let doc = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/mappings.md")).unwrap();
    let blocks: Vec<&str> = doc.split("```toml\n").skip(1).filter_map(|b| b.split("```").next()).collect();
    assert!(blocks.len() >= 3, "{} examples", blocks.len());
    for b in blocks {
        toml::from_str::<failpass::import::mapping::Mapping>(b).unwrap_or_else(|e| panic!("{e}\n{b}"));
    }
    for field in [
        "report.external_id",
        "report.title",
        "report.url",
        "report.body",
        "report.labels",
        "report.details",
        "report.oracle.kind",
        "report.oracle.source",
        "report.oracle.command",
        "report.oracle.fail_to_pass",
        "attempt.agent",
        "attempt.model",
        "attempt.attempt_key",
        "attempt.goal",
        "attempt.verdict",
        "attempt.verdict_source",
        "attempt.wall_seconds",
        "attempt.cost_usd",
    ] {
        assert!(doc.contains(&format!("| `{field}` |")), "docs/mappings.md lacks `{field}`");
    }
}

/// An issue export in a scraper's own shape comes in through a mapping:
/// the number out of the URL (regular expression), labels from a list of
/// strings, nested fields by path, a joined list of plain strings.
#[test]
fn a_scrapers_issue_shape_comes_in_through_a_mapping() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("extra.json"),
        r#"[{"id": "4512", "meta": {"tests": ["test_io.py::test_read", "test_io.py::test_write"]}}, {"id": "4513", "meta": {"tests": []}}]"#,
    )
    .unwrap();
    let m: failpass::import::mapping::Mapping = toml::from_str(
        r#"
project = "acme/datasets"
[join]
file = "extra.json"
key = "{id}"
on = "{issue_number}"
[report]
external_id = { column = "url", regex = '/issues/(\d+)$' }
title = "{title}"
url = "{url}"
body = "{description} (reported by {user.login}, first label {labels[0]})"
labels = ["{labels}", "scraped"]
[report.oracle]
kind = "fail_to_pass"
source = "authored"
fail_to_pass = { list = "join.meta.tests", item = "{}" }
"#,
    )
    .unwrap();
    let input = r#"[
{"issue_number": 4512, "title": "load_dataset hangs on zstd files", "description": "It hangs.", "labels": ["bug", "area: io"], "created_at": "2026-10-01T10:00:00Z", "url": "https://github.com/acme/datasets/issues/4512", "user": {"login": "octo"}},
{"issue_number": 4513, "title": "typo", "description": "x", "labels": [], "created_at": "2026-10-02T10:00:00Z", "url": "https://github.com/acme/datasets/pull/4513", "user": {"login": "octo"}}
]"#;
    std::fs::write(dir.path().join("issues.json"), input).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let s = failpass::db::connect(&dir.path().join("t.db").to_string_lossy()).await.unwrap();
        s.migrate().await.unwrap();
        let routing = RoutingConfig::default();
        let options = failpass::import::ImportOptions {
            mapping: Some(m),
            input_dir: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        let mut importer = Importer::new(s.as_ref(), &routing);
        run(&mut importer, Format::Json, input.as_bytes(), &options).await.unwrap();
        let summary = importer.finish().await.unwrap();
        // The second record's URL is a pull request's: named, not guessed.
        assert_eq!(summary.rejected, 1, "{summary:?}");
        assert!(summary.rejections[0].message.contains("does not match"), "{:?}", summary.rejections);
        let q = ReportListQuery { limit: 500, ..Default::default() };
        let r = &s.list_reports(&q, &ProjectScope::All).await.unwrap().items[0];
        assert_eq!(r.external_id, "4512");
        assert_eq!(r.labels, ["bug", "area: io", "scraped"]);
        let full = s.get_report(r.id, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(full.body, "It hangs. (reported by octo, first label bug)");
        assert_eq!(full.oracle.unwrap().fail_to_pass, ["test_io.py::test_read", "test_io.py::test_write"]);
    });
}

/// A study's denominator: every bug in the list is a report, though only
/// some are in the results file (an object keyed by id). Unmatched rows are
/// kept by the left join with the declared default.
#[test]
fn a_left_join_keeps_unmatched_rows_with_their_default() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("results.json"),
        r#"{"Chart_1": {"fibs": 4}, "Lang_2": {"fibs": 0}, "Math_3": {"fibs": 7}}"#,
    )
    .unwrap();
    let m: failpass::import::mapping::Mapping = toml::from_str(
        r#"
project = "study/d4j"
[join]
file = "results.json"
on = "{bug}"
left = true
defaults = { fibs = "0" }
[report]
external_id = "{bug}"
title = "Defects4J {bug}"
[report.oracle]
kind = "fail_to_pass"
source = "in_patch_test"
command = "defects4j test"
[attempt]
agent = "libro"
verdict_source = "deterministic"
verdict = { column = "join.fibs", map = { "0" = "not_reproduced", "*" = "reproduced" } }
"#,
    )
    .unwrap();
    let input = "bug\nChart_1\nLang_2\nMath_3\nTime_4\nClosure_5\n";
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let s = failpass::db::connect(&dir.path().join("t.db").to_string_lossy()).await.unwrap();
        s.migrate().await.unwrap();
        let routing = RoutingConfig::default();
        let options = failpass::import::ImportOptions {
            mapping: Some(m.clone()),
            input_dir: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        let mut importer = Importer::new(s.as_ref(), &routing);
        run(&mut importer, Format::Csv, input.as_bytes(), &options).await.unwrap();
        let summary = importer.finish().await.unwrap();
        assert_eq!(summary.rejected, 0, "{summary:?}");
        let q = failpass_shared::api::figures::FiguresQuery::default();
        let row =
            &failpass_shared::figures::figure_rows(s.figure_contributions(&q, &ProjectScope::All).await.unwrap())[0];
        // Bare titles make vague reports: their reproductions await a person.
        assert_eq!(
            (row.reports, row.reports_graded, row.reports_reproduced + row.reports_awaiting_review),
            (5, 5, 2),
            "the denominator is every bug: {row:?}"
        );
        // Without `left`, an unmatched row is named and refused.
        let mut inner = m.clone();
        inner.join.as_mut().unwrap().left = false;
        let options = failpass::import::ImportOptions {
            mapping: Some(inner),
            input_dir: Some(dir.path().to_path_buf()),
            ..Default::default()
        };
        let mut importer = Importer::new(s.as_ref(), &routing);
        run(&mut importer, Format::Csv, input.as_bytes(), &options).await.unwrap();
        let summary = importer.finish().await.unwrap();
        assert_eq!(summary.rejected, 2, "{summary:?}");
        assert!(summary.rejections[0].message.contains("no record `Time_4`"), "{:?}", summary.rejections);
    });
}

/// A mapping sets each row's filing date, reporter, model and its cutoff,
/// tokens, times and review, so the contamination split and the intake
/// dates are the study's, not the import's.
#[test]
fn a_mapping_sets_every_report_and_attempt_field_per_row() {
    let m: failpass::import::mapping::Mapping = toml::from_str(
        r#"
project = "study/dl"
[report]
external_id = "{id}"
title = "{title}"
filed_at = "{filed}"
reporter = "{who}"
environment = "torch {torch}"
[attempt]
agent = "{agent}"
model = "{model}"
model_cutoff = "{cutoff}"
started_at = "{started}"
tokens_in = "{tin}"
tokens_out = { column = "tout" }
verdict = { column = "ok", map = { y = "confirmed", n = "lead" } }
verdict_source = "llm"
review = { column = "ok", map = { y = "accepted", n = "rejected" } }
reviewer = "{rev}"
"#,
    )
    .unwrap();
    let input = "id,title,filed,who,torch,agent,model,cutoff,started,tin,tout,ok,rev\n\
        1,NaN in softmax backward,2024-03-01,ana,2.1,repgen,gpt-4o,2023-10-01,2024-03-02 10:00:00,1200,80,y,bo\n\
        2,Crash in conv2d on MPS,2023-05-01T08:00:00Z,cy,2.0,repgen,gpt-4o,2023-10-01,2023-05-02,900,60,n,bo\n";
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let s = failpass::db::connect(&dir.path().join("t.db").to_string_lossy()).await.unwrap();
        s.migrate().await.unwrap();
        let routing = RoutingConfig::default();
        let options = failpass::import::ImportOptions { mapping: Some(m), ..Default::default() };
        let mut importer = Importer::new(s.as_ref(), &routing);
        run(&mut importer, Format::Csv, input.as_bytes(), &options).await.unwrap();
        let summary = importer.finish().await.unwrap();
        assert_eq!(summary.rejected, 0, "{summary:?}");
        let q = ReportListQuery { limit: 500, ..Default::default() };
        let reports = s.list_reports(&q, &ProjectScope::All).await.unwrap().items;
        let r1 = reports.iter().find(|r| r.external_id == "1").unwrap();
        assert_eq!(r1.filed_at.to_rfc3339(), "2024-03-01T00:00:00+00:00");
        let full = s.get_report(r1.id, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!((full.reporter.as_deref(), full.environment.as_deref()), (Some("ana"), Some("torch 2.1")));
        let attempts = s
            .list_attempts(
                &failpass_shared::api::attempts::AttemptListQuery { limit: 500, ..Default::default() },
                &ProjectScope::All,
            )
            .await
            .unwrap()
            .items;
        let a1 = attempts.iter().find(|a| a.report_id == r1.id).unwrap();
        assert_eq!(a1.model.as_deref(), Some("gpt-4o"));
        assert_eq!(a1.model_cutoff.map(|d| d.to_string()).as_deref(), Some("2023-10-01"));
        assert_eq!((a1.tokens_in, a1.tokens_out), (1200, 80));
        assert_eq!(a1.review.map(|r| r.as_str()), Some("accepted"));
        // The contamination split is the study's: one report filed after the cutoff, one before.
        let q = failpass_shared::api::figures::FiguresQuery::from_pairs([("group_by", "cutoff")]).unwrap();
        let rows = failpass_shared::figures::figure_rows(s.figure_contributions(&q, &ProjectScope::All).await.unwrap());
        let keys: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["after_cutoff", "before_cutoff"], "{rows:?}");
    });
    // A date that is not one is named.
    let bad: failpass::import::mapping::Mapping =
        toml::from_str("project = \"a/b\"\n[report]\nexternal_id = \"{id}\"\ntitle = \"t\"\nfiled_at = \"{d}\"\n")
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let s = failpass::db::connect(&dir.path().join("t.db").to_string_lossy()).await.unwrap();
        s.migrate().await.unwrap();
        let routing = RoutingConfig::default();
        let options = failpass::import::ImportOptions { mapping: Some(bad), ..Default::default() };
        let mut importer = Importer::new(s.as_ref(), &routing);
        run(&mut importer, Format::Csv, &b"id,d\n1,last tuesday\n"[..], &options).await.unwrap();
        let summary = importer.finish().await.unwrap();
        assert_eq!(summary.rejections[0].field.as_deref(), Some("filed_at"), "{summary:?}");
        assert!(summary.rejections[0].message.contains("`last tuesday` is not a time"), "{summary:?}");
    });
}

async fn import_libro(file: &str) -> (std::sync::Arc<dyn failpass::db::Storage>, tempfile::TempDir, ImportSummary) {
    let (s, dir) = sqlite_storage().await;
    let mapping_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mappings/libro_ranking_d4j.toml");
    let input = real(file);
    let options = failpass::import::ImportOptions {
        mapping: Some(failpass::import::mapping::load(&mapping_path).unwrap()),
        input_dir: input.parent().map(|p| p.to_path_buf()),
        ..Default::default()
    };
    let routing = RoutingConfig::default();
    let f = tokio::fs::File::open(&input).await.unwrap();
    let mut importer = Importer::new(s.as_ref(), &routing);
    run(&mut importer, Format::Csv, tokio::io::BufReader::new(f), &options).await.unwrap();
    let summary = importer.finish().await.unwrap();
    (s, dir, summary)
}

#[tokio::test]
async fn the_shipped_libro_mapping_joins_defects4j_and_gives_251_and_149() {
    let (s, _dir, summary) = import_libro("libro_ranking_d4j.csv").await;
    assert_eq!(summary.rejected, 0, "{:?}", summary.rejections);
    let fig = failpass_shared::figures::figure_rows(
        s.figure_contributions(&Default::default(), &ProjectScope::All).await.unwrap(),
    );
    assert_eq!((fig[0].reports, fig[0].reports_reproduced), (570, 251), "MANIFEST.txt: 251 reproduced");
    assert_eq!(fig[0].oracle_coverage, Some(1.0), "every bug has Defects4J's failing tests as its oracle");
    let chart1 = s.find_report("coinse/defects4j", "Chart_1").await.unwrap().unwrap();
    let o = s.get_report(chart1, &ProjectScope::All).await.unwrap().unwrap().oracle.unwrap();
    assert_eq!(
        o.fail_to_pass,
        ["org.jfree.chart.renderer.category.junit.AbstractCategoryItemRendererTests::test2947660"]
    );

    let (s, _dir, summary) = import_libro("libro_ranking_d4j_selected_th1.csv").await;
    assert_eq!(summary.rejected, 0);
    let mut q = ReportListQuery { limit: 500, ..Default::default() };
    q.filter.label = Some("rank 1".into());
    assert_eq!(s.list_reports(&q, &ProjectScope::All).await.unwrap().items.len(), 149, "first-rank successes");
    let fig = failpass_shared::figures::figure_rows(
        s.figure_contributions(&Default::default(), &ProjectScope::All).await.unwrap(),
    );
    assert_eq!((fig[0].reports, fig[0].reports_reproduced), (350, 219));
}

#[tokio::test]
async fn junit_results_become_a_run_of_an_attempt() {
    let app = spawn_app().await;
    app.project("a/lib").await;
    let report = app
        .report(json!({"project": "a/lib", "external_id": "1", "title": "logsumexp overflows",
        "oracle": {"kind": "fail_to_pass", "source": "authored", "command": "pytest test_ops.py"}}))
        .await;
    let attempt = app
        .attempt(json!({"report_id": report, "agent": "x", "verdict": "reproduced", "verdict_source": "deterministic"}))
        .await;
    let id = attempt["id"].as_i64().unwrap();
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pytest-junit.xml");
    let xml = std::fs::read_to_string(&fixture).unwrap();
    let r = app
        .client
        .post(format!("{}/api/v1/import?format=junit&attempt={id}&environment=buggy", app.base))
        .header("content-type", "application/xml")
        .body(xml.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let s: ImportSummary = r.json().await.unwrap();
    assert_eq!((s.created, s.rejected), (1, 0));
    let detail = app.get(&format!("/api/v1/attempts/{id}")).await.body;
    let run = &detail["runs"][0];
    assert_eq!(run["environment"], "buggy");
    assert_eq!(run["exit_status"], 1);
    assert_eq!(run["failing_tests"], json!(["test_ops::test_logsumexp_large", "test_ops::test_errors"]));
    assert_eq!(run["passing_tests"].as_array().unwrap().len(), 3);
    assert_eq!(run["started_at"], "2026-12-02T11:18:29Z", "the suite's timestamp, in whole seconds");
    let r = app
        .client
        .post(format!("{}/api/v1/import?format=junit&attempt={id}&environment=buggy", app.base))
        .header("content-type", "application/xml")
        .body(xml.clone())
        .send()
        .await
        .unwrap();
    let again: ImportSummary = r.json().await.unwrap();
    assert_eq!((again.created, again.unchanged), (0, 1), "the same results twice are one run");
    assert_eq!(app.get(&format!("/api/v1/attempts/{id}")).await.body["runs"].as_array().unwrap().len(), 1);
    let r = app
        .client
        .post(format!("{}/api/v1/import?format=junit&attempt=9999&environment=fixed", app.base))
        .header("content-type", "application/xml")
        .body(xml)
        .send()
        .await
        .unwrap();
    let s: ImportSummary = r.json().await.unwrap();
    assert_eq!((s.created, s.rejected), (0, 1));
    assert_eq!(s.rejections[0].field.as_deref(), Some("attempt"));
    assert_error(
        &app.post_raw("/api/v1/import?format=junit&environment=fixed", Some("application/xml"), "<x/>").await,
        400,
        "bad_request",
        "?attempt=",
    );
    assert_error(
        &app.post_raw("/api/v1/import?format=junit&attempt=1&environment=sideways", Some("application/xml"), "").await,
        400,
        "bad_request",
        "environment",
    );
}

#[tokio::test]
async fn ndjson_carries_runs_by_attempt_key() {
    let app = spawn_app().await;
    let lines = [
        json!({"kind": "project", "slug": "a/lib"}),
        json!({"kind": "report", "project": "a/lib", "external_id": "7", "title": "sum over the wrong axis",
               "oracle": {"kind": "fail_to_pass", "source": "authored", "command": "pytest t.py"}}),
        json!({"kind": "attempt", "report": {"project": "a/lib", "external_id": "7"}, "agent": "x", "attempt_key": "k1",
               "verdict": "reproduced", "verdict_source": "deterministic"}),
        json!({"kind": "run", "attempt": {"report": {"project": "a/lib", "external_id": "7"}, "agent": "x", "attempt_key": "k1"},
               "environment": "buggy", "exit_status": 1, "duration_ms": 812, "output": "AssertionError: axis", "failing_tests": ["t.py::test_sum"],
               "started_at": "2026-03-01T10:00:00Z"}),
        json!({"kind": "run", "attempt": {"report": {"project": "a/lib", "external_id": "7"}, "agent": "x", "attempt_key": "k1"},
               "environment": "fixed", "exit_status": 0, "passing_tests": ["t.py::test_sum"], "started_at": "2026-03-01T10:00:05Z"}),
        json!({"kind": "run", "attempt": {"report": {"project": "a/lib", "external_id": "7"}, "agent": "x", "attempt_key": "nope"},
               "environment": "fixed"}),
        json!({"kind": "run", "attempt_id": 1, "environment": "sideways"}),
        json!({"kind": "run", "environment": "buggy"}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let post = |body: String| async { app.import_ndjson(body).await };
    let first: ImportSummary = post(body.clone()).await.json().await.unwrap();
    assert_eq!((first.created, first.rejected), (5, 3), "{first:?}");
    let why: Vec<(u64, Option<&str>)> = first.rejections.iter().map(|r| (r.record, r.field.as_deref())).collect();
    assert_eq!(why, [(6, Some("attempt")), (7, None), (8, Some("attempt_id"))], "{:?}", first.rejections);
    assert!(
        first.rejections[0].message.contains("attempt `nope` by `x` on a/lib#7"),
        "{}",
        first.rejections[0].message
    );
    assert!(
        first.rejections[1].message.contains("line 7") && first.rejections[1].message.contains("sideways"),
        "{}",
        first.rejections[1].message
    );
    let again: ImportSummary = post(body).await.json().await.unwrap();
    assert_eq!(
        (again.created, again.updated, again.unchanged),
        (0, 0, 5),
        "importing twice changes nothing: {again:?}"
    );
    let attempts = app.get("/api/v1/attempts?limit=5").await.body;
    let id = attempts["items"][0]["id"].as_i64().unwrap();
    let runs = app.get(&format!("/api/v1/attempts/{id}")).await.body["runs"].clone();
    assert_eq!(runs.as_array().unwrap().len(), 2);
    assert_eq!(runs[0]["environment"], "buggy");
    assert_eq!(runs[0]["output_bytes"], 20, "output_bytes defaults to the output's length");
    assert_eq!(runs[0]["started_at"], "2026-03-01T10:00:00Z");
    assert_eq!(runs[1]["passing_tests"], json!(["t.py::test_sum"]));
}

#[tokio::test]
async fn a_line_that_is_not_utf8_is_rejected_and_the_rest_stored() {
    let app = spawn_app().await;
    let mut body = b"{\"kind\": \"project\", \"slug\": \"a/one\"}\n".to_vec();
    body.extend_from_slice(b"{\"kind\": \"project\", \"slug\": \"a/\xff\"}\n");
    body.extend_from_slice(b"{\"kind\": \"project\", \"slug\": \"a/two\"}\n");
    let r = app.import_ndjson(body).await;
    assert_eq!(r.status(), 200);
    let s: ImportSummary = r.json().await.unwrap();
    assert_eq!((s.created, s.rejected), (2, 1), "{s:?}");
    assert_eq!(s.rejections[0].record, 2);
    assert!(s.rejections[0].message.contains("line 2: not UTF-8"), "{}", s.rejections[0].message);
}

#[tokio::test]
async fn json_records_take_the_same_mappings_as_csv() {
    let (s, _dir) = sqlite_storage().await;
    let m: failpass::import::mapping::Mapping = toml::from_str(
        "project = \"a/b\"\n[report]\nexternal_id = \"{id}\"\ntitle = \"Bug {id}\"\nlabels = [\"{framework}\"]\n\
         [attempt]\nagent = \"human\"\nverdict_source = \"human\"\nverdict = { column = \"ok\", map = { true = \"reproduced\", false = \"not_reproduced\" } }\n\
         wall_seconds = { column = \"minutes\", scale = 60 }\n",
    )
    .unwrap();
    let options = failpass::import::ImportOptions { mapping: Some(m), ..Default::default() };
    let routing = RoutingConfig::default();
    for input in [
        r#"[{"id": 1, "framework": "jax", "ok": true, "minutes": 5}, {"id": 2, "framework": null, "ok": false, "minutes": 1.5}, 7]"#,
        "{\"id\": 1, \"framework\": \"jax\", \"ok\": true, \"minutes\": 5}\n{\"id\": 2, \"framework\": null, \"ok\": false, \"minutes\": 1.5}\n7\n",
    ] {
        let mut importer = Importer::new(s.as_ref(), &routing);
        run(&mut importer, Format::Json, input.as_bytes(), &options).await.unwrap();
        let summary = importer.finish().await.unwrap();
        assert_eq!(summary.rejected, 1, "{:?}", summary.rejections);
        assert_eq!(summary.rejections[0].record, 3);
        assert!(summary.rejections[0].message.contains("not a JSON object"));
    }
    let fig = failpass_shared::figures::figure_rows(
        s.figure_contributions(&Default::default(), &ProjectScope::All).await.unwrap(),
    );
    assert_eq!((fig[0].reports, fig[0].reports_reproduced), (2, 1), "the second import changed nothing");
    let a = s.list_attempts(&Default::default(), &ProjectScope::All).await.unwrap().items;
    assert_eq!(a.len(), 2);
    assert!(a.iter().any(|a| a.wall_seconds == Some(90.0)));
}
