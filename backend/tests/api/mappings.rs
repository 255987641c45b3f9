//! Mappings that read what studies ship (issue 34): an object keyed by id as
//! input, CSV and JSON Lines join files, lists over a row's own fields, a
//! declared full set, a rank, and one message for an input of the wrong
//! shape. The study-shaped cases run on both engines.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use failpass::db::{ProjectScope, Storage};
use failpass::import::{Format, ImportOptions, Importer, run};
use failpass_shared::api::attempts::AttemptListQuery;
use failpass_shared::api::import::ImportSummary;
use failpass_shared::model::Verdict;
use failpass_shared::routing::RoutingConfig;
use serde_json::{Value, json};

use crate::helpers::{run_storage_test, sqlite_storage};

fn real(name: &str) -> PathBuf {
    let dir = std::env::var_os("FAILPASS_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/real"));
    dir.join(name)
}

fn mapping(text: &str) -> failpass::import::mapping::Mapping {
    toml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Imports `input` (a file in `dir`) with `m`; the error of an import that stops.
async fn import(
    s: &dyn Storage,
    m: failpass::import::mapping::Mapping,
    format: Format,
    dir: &Path,
    input: &str,
) -> Result<ImportSummary, String> {
    let options = ImportOptions { mapping: Some(m), input_dir: Some(dir.to_path_buf()), ..Default::default() };
    let routing = RoutingConfig::default();
    let f = tokio::fs::File::open(dir.join(input)).await.unwrap();
    let mut importer = Importer::new(s, &routing);
    run(&mut importer, format, tokio::io::BufReader::new(f), &options).await.map_err(|e| format!("{e:#}"))?;
    Ok(importer.finish().await.unwrap())
}

/// The LIBRO "GitHub Recent Bugs" shape built from the same study's
/// Defects4J files: 31 bugs as one object keyed by id, and results for the
/// first 25 of them as a CSV (the rest were not ranked). Returns the folder
/// and what a recomputation from the files gives: (reproduced, at rank 1).
fn libro_shaped_study() -> (tempfile::TempDir, usize, usize) {
    let bugs: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(real("libro_defects4j_v2_bugs.json")).unwrap()).unwrap();
    let text = std::fs::read_to_string(real("libro_ranking_d4j.csv")).unwrap();
    let mut rows: Vec<Vec<String>> = text.lines().skip(1).map(|l| l.split(',').map(str::to_owned).collect()).collect();
    rows.truncate(31);
    let id = |b: &Value| format!("{}_{}", b["project"].as_str().unwrap(), b["bugId"]);
    let keyed: serde_json::Map<String, Value> = rows
        .iter()
        .map(|r| {
            let bug = bugs.iter().find(|b| id(b) == r[0]).unwrap_or_else(|| panic!("{} in the bug file", r[0]));
            (r[0].clone(), bug.clone())
        })
        .collect();
    let ranked = &rows[..25];
    let reproduced = ranked.iter().filter(|r| r[2] != "0").count();
    let first = ranked.iter().filter(|r| r[1] == "1").count();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bugs.json"), serde_json::to_string_pretty(&keyed).unwrap()).unwrap();
    let csv: String = std::iter::once("bug_id,first_success_rank,total_success_fibs,num_clusters".to_owned())
        .chain(ranked.iter().map(|r| r.join(",")))
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(dir.path().join("results.csv"), csv + "\n").unwrap();
    (dir, reproduced, first)
}

fn shipped(name: &str) -> failpass::import::mapping::Mapping {
    failpass::import::mapping::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../mappings").join(name)).unwrap()
}

async fn attempts(s: &dyn Storage) -> Vec<failpass_shared::api::attempts::Attempt> {
    s.list_attempts(&AttemptListQuery { limit: 500, ..Default::default() }, &ProjectScope::All).await.unwrap().items
}

#[tokio::test]
async fn a_study_shaped_like_libro_gives_its_figure_over_the_full_set_and_its_first_rank_successes() {
    let (dir, reproduced, first) = libro_shaped_study();
    assert!(reproduced > 0 && first > 0 && first <= reproduced, "the sample has both: {reproduced}, {first}");
    run_storage_test(|s: Arc<dyn Storage>| {
        let dir = dir.path().to_path_buf();
        async move {
            let summary =
                import(s.as_ref(), shipped("libro_full_set.toml"), Format::Csv, &dir, "results.csv").await.unwrap();
            assert_eq!(summary.rejected, 0, "{:?}", summary.rejections);
            assert_eq!(summary.created, 1 + 31 + 31, "the project, 31 reports, 31 attempts: {summary:?}");
            let fig = failpass_shared::figures::figure_rows(
                s.figure_contributions(&Default::default(), &ProjectScope::All).await.unwrap(),
            );
            assert_eq!(
                (fig[0].reports, fig[0].reports_graded, fig[0].reports_reproduced),
                (31, 31, reproduced as u64),
                "the figure is over the full set, not the 25 ranked"
            );
            let all = attempts(s.as_ref()).await;
            let at_one = all.iter().filter(|a| a.counts && a.rank == Some(1)).count();
            assert_eq!(at_one, first, "successes at rank 1");
            let filter = failpass_shared::api::reports::ReportFilter {
                project: Some("coinse/libro-study".into()),
                ..Default::default()
            };
            let ranks = failpass_shared::figures::rank_figures(
                31,
                &s.first_ranks(&filter, &ProjectScope::All).await.unwrap(),
                &[1],
            );
            assert_eq!(ranks.agents[0].within[0].reports, first as u64, "the ranks figure says the same");
            assert!(all.iter().all(|a| a.rank.is_none_or(|k| k < 100_000)), "the study's `never` is no rank");
            let unranked = s.find_report("coinse/libro-study", &all_keys_not_ranked(&dir)[0]).await.unwrap().unwrap();
            let r = s.get_report(unranked, &ProjectScope::All).await.unwrap().unwrap();
            assert!(r.summary.title.starts_with("Bug "), "{}", r.summary.title);
            let theirs: Vec<_> = all.iter().filter(|a| a.report_id == unranked).collect();
            assert_eq!(theirs.len(), 1);
            assert_eq!(theirs[0].verdict, Verdict::NotReproduced, "no result: attempted and not reproduced");

            // Importing the same files again changes nothing.
            let again =
                import(s.as_ref(), shipped("libro_full_set.toml"), Format::Csv, &dir, "results.csv").await.unwrap();
            assert_eq!((again.created, again.updated, again.rejected), (0, 0, 0), "{again:?}");
        }
    })
    .await;
}

/// The keys of the full set without a row in the results.
fn all_keys_not_ranked(dir: &Path) -> Vec<String> {
    let bugs: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("bugs.json")).unwrap()).unwrap();
    let results = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    bugs.keys().filter(|k| !results.lines().any(|l| l.starts_with(&format!("{k},")))).cloned().collect()
}

#[tokio::test]
async fn an_object_keyed_by_id_is_the_input_with_its_key_as_a_field() {
    let (s, _db) = sqlite_storage().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bugs.json"),
        serde_json::to_string_pretty(&json!({
            "GHRB-1": {"title": "mean of empty list", "tests": ["test_a", "test_b"]},
            "GHRB-2": {"title": "wrong dtype", "tests": ["test_c"]}
        }))
        .unwrap(),
    )
    .unwrap();
    let m = mapping(
        "project = \"s/ghrb\"\n[report]\nexternal_id = \"{_key}\"\ntitle = \"{title}\"\n\
         [report.oracle]\nkind = \"fail_to_pass\"\nsource = \"in_patch_test\"\nfail_to_pass = { list = \"tests\", item = \"{}\" }\n",
    );
    let summary = import(s.as_ref(), m, Format::Json, dir.path(), "bugs.json").await.unwrap();
    assert_eq!((summary.created, summary.rejected), (3, 0), "{summary:?}");
    let id = s.find_report("s/ghrb", "GHRB-1").await.unwrap().expect("the key is the external id");
    let r = s.get_report(id, &ProjectScope::All).await.unwrap().unwrap();
    assert_eq!(r.oracle.unwrap().fail_to_pass, ["test_a", "test_b"], "`list` reads the row's own field");
}

#[tokio::test]
async fn join_files_may_be_csv_or_json_lines() {
    let (s, _db) = sqlite_storage().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.csv"), "id,title\n1,first\n2,second\n3,third\n").unwrap();
    std::fs::write(dir.path().join("res.csv"), "bug,fibs\n1,4\n2,0\n").unwrap();
    std::fs::write(dir.path().join("res.jsonl"), "{\"bug\": \"1\", \"fibs\": 4}\n{\"bug\": \"2\", \"fibs\": 0}\n")
        .unwrap();
    for file in ["res.csv", "res.jsonl"] {
        let m = mapping(&format!(
            "project = \"s/{}\"\n[join]\nfile = \"{file}\"\nkey = \"{{bug}}\"\non = \"{{id}}\"\nleft = true\n\
             defaults = {{ fibs = \"0\" }}\n[report]\nexternal_id = \"{{id}}\"\ntitle = \"{{title}}\"\n\
             [attempt]\nagent = \"a\"\nverdict_source = \"human\"\n\
             verdict = {{ column = \"join.fibs\", map = {{ \"0\" = \"not_reproduced\", \"*\" = \"reproduced\" }} }}\n",
            file.replace('.', "-")
        ));
        let summary = import(s.as_ref(), m, Format::Csv, dir.path(), "in.csv").await.unwrap();
        assert_eq!((summary.created, summary.rejected), (1 + 3 + 3, 0), "{file}: {summary:?}");
    }
    let reproduced = attempts(s.as_ref()).await.iter().filter(|a| a.verdict == Verdict::Reproduced).count();
    assert_eq!(reproduced, 2, "one per join file");
}

#[tokio::test]
async fn an_input_of_the_wrong_shape_is_one_message_and_stores_nothing() {
    let (s, _db) = sqlite_storage().await;
    let dir = tempfile::tempdir().unwrap();
    let m = || mapping("project = \"s/shape\"\n[report]\nexternal_id = \"{id}\"\ntitle = \"{title}\"\n");
    std::fs::write(dir.path().join("keyed.json"), "{\n  \"a\": {\"id\": 1, \"title\": \"x\"},\n  \"b\": 7\n}\n")
        .unwrap();
    std::fs::write(dir.path().join("table.csv"), "id,title\n1,x\n").unwrap();
    std::fs::write(dir.path().join("json.csv"), "[{\"id\": 1, \"title\": \"x\"}]\n").unwrap();
    std::fs::write(dir.path().join("number.json"), "42\n").unwrap();
    for (format, file, says) in [
        (Format::Json, "table.csv", "not JSON (line 1"),
        (Format::Csv, "json.csv", "looks like JSON"),
        (Format::Json, "number.json", "a JSON number"),
    ] {
        let e = import(s.as_ref(), m(), format, dir.path(), file).await.unwrap_err();
        assert!(e.contains(says), "{file}: {e}");
    }
    // An object whose values are not all records is one record, which lacks what the mapping reads.
    let e = import(s.as_ref(), m(), Format::Json, dir.path(), "keyed.json").await.unwrap_err();
    assert!(e.contains("the mapping reads `id`") && e.contains("has: a, b"), "{e}");
    assert!(s.list_projects(&ProjectScope::All).await.unwrap().is_empty(), "no project for nothing stored");
}

#[tokio::test]
async fn a_full_set_refuses_rows_outside_it_and_may_leave_the_rest_unattempted() {
    let (s, _db) = sqlite_storage().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("set.csv"), "bug,name\nb1,one\nb2,two\nb3,three\n").unwrap();
    std::fs::write(dir.path().join("res.csv"), "bug,ok\nb1,yes\nzz,yes\n").unwrap();
    let m = mapping(
        "project = \"s/set\"\n[denominator]\nfile = \"set.csv\"\nkey = \"{bug}\"\nmissing = \"not_attempted\"\n\
         title = \"{name}\"\n[report]\nexternal_id = \"{bug}\"\ntitle = \"bug {bug}\"\n\
         [attempt]\nagent = \"a\"\nverdict_source = \"human\"\n\
         verdict = { column = \"ok\", map = { yes = \"reproduced\", no = \"not_reproduced\" } }\n",
    );
    let summary = import(s.as_ref(), m, Format::Csv, dir.path(), "res.csv").await.unwrap();
    assert_eq!(summary.rejected, 1, "{summary:?}");
    assert!(summary.rejections[0].message.contains("`zz` is not in the full set"), "{summary:?}");
    assert_eq!(summary.created, 1 + 3 + 1, "three reports, one attempt: {summary:?}");
    let id = s.find_report("s/set", "b3").await.unwrap().unwrap();
    assert_eq!(s.get_report(id, &ProjectScope::All).await.unwrap().unwrap().summary.title, "three");
    assert_eq!(attempts(s.as_ref()).await.len(), 1, "not attempted: no attempt");
}

#[tokio::test]
async fn a_re_import_that_changes_a_verdict_a_label_or_a_date_updates_it_and_says_which_fields() {
    run_storage_test(|s: Arc<dyn Storage>| async move {
        let dir = tempfile::tempdir().unwrap();
        let m = || {
            mapping(
                "project = \"s/again\"\n[report]\nexternal_id = \"{id}\"\ntitle = \"bug {id}\"\nlabels = [\"{kind}\"]\n\
                 filed_at = \"{filed}\"\n[attempt]\nagent = \"a\"\nattempt_key = \"study\"\nverdict_source = \"human\"\n\
                 verdict = { column = \"ok\", map = { yes = \"reproduced\", no = \"not_reproduced\" } }\n",
            )
        };
        std::fs::write(dir.path().join("one.csv"), "id,kind,filed,ok\n1,crash,2024-01-02,yes\n2,crash,2024-01-03,no\n")
            .unwrap();
        std::fs::write(dir.path().join("two.csv"), "id,kind,filed,ok\n1,crash,2024-01-02,no\n2,wrong,2024-02-03,no\n")
            .unwrap();
        import(s.as_ref(), m(), Format::Csv, dir.path(), "one.csv").await.unwrap();
        let summary = import(s.as_ref(), m(), Format::Csv, dir.path(), "two.csv").await.unwrap();
        assert_eq!((summary.created, summary.updated, summary.rejected), (0, 2, 0), "{summary:?}");
        let a = attempts(s.as_ref()).await;
        assert!(a.iter().all(|a| a.verdict == Verdict::NotReproduced), "the changed verdict is stored: {a:?}");
        let fig = failpass_shared::figures::figure_rows(
            s.figure_contributions(&Default::default(), &ProjectScope::All).await.unwrap(),
        );
        assert_eq!(fig[0].reports_reproduced, 0, "and the figures follow it");
        let two = s.find_report("s/again", "2").await.unwrap().unwrap();
        let r = s.get_report(two, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(r.summary.labels, ["wrong"], "labels replaced by default");
        assert_eq!(r.summary.filed_at.date_naive().to_string(), "2024-02-03");
        let changed: Vec<(&str, u64)> = summary.changed.iter().map(|(f, n)| (f.as_str(), *n)).collect();
        assert_eq!(changed, [("attempt.verdict", 1), ("report.filed_at", 1), ("report.labels", 1)]);

        // Merged labels keep another import's; a date the input leaves out stays as stored.
        let merge = mapping(
            "project = \"s/again\"\n[report]\nexternal_id = \"{id}\"\ntitle = \"bug {id}\"\nlabels = [\"rank {rank}\"]\n\
             labels_on_reimport = \"merge\"\n",
        );
        std::fs::write(dir.path().join("three.csv"), "id,rank\n2,1\n").unwrap();
        let summary = import(s.as_ref(), merge, Format::Csv, dir.path(), "three.csv").await.unwrap();
        assert_eq!(summary.changed.get("report.labels"), Some(&1), "{summary:?}");
        assert_eq!(summary.changed.get("report.filed_at"), None, "{summary:?}");
        let r = s.get_report(two, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(r.summary.labels, ["wrong", "rank 1"], "the stored labels first");
        assert_eq!(r.summary.filed_at.date_naive().to_string(), "2024-02-03", "no date given: the stored one stays");
    })
    .await;
}

#[tokio::test]
async fn the_summary_says_what_the_figures_will_make_of_the_records() {
    let (s, _db) = sqlite_storage().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("study.csv"),
        "id,title,verdict,source,cost\n1,crash on load,lead,llm,\n2,wrong mean,reproduced,human,0.5\n3,slow,not_reproduced,human,\n",
    )
    .unwrap();
    let m = mapping(
        "project = \"s/notes\"\n[report]\nexternal_id = \"{id}\"\ntitle = \"{title}\"\n\
         [attempt]\nagent = \"a\"\nverdict = \"{verdict}\"\nverdict_source = \"{source}\"\ncost_usd = { column = \"cost\" }\n",
    );
    let summary = import(s.as_ref(), m, Format::Csv, dir.path(), "study.csv").await.unwrap();
    let n = &summary.notes;
    assert_eq!(n.vague_reports, 3, "title-only reports are vague: {n:?}");
    assert_eq!(n.vague_why.get("short, no code block, no traceback, no versions"), Some(&3), "{n:?}");
    assert_eq!(n.awaiting_review, 1, "the LLM's lead waits for a person; a person's own verdict counts: {n:?}");
    assert_eq!((n.without_cost, n.without_time), (2, 3), "{n:?}");
    let lines = n.lines().join("\n");
    assert!(lines.contains("3 reports are vague") && lines.contains("`review`, `reviewer`"), "{lines}");
    assert!(lines.contains("1 verdict needs a review") && lines.contains("2 attempts have no cost"), "{lines}");
}

/// `GET /api/v1/ranks` over attempts that came in with a `rank` (NDJSON here):
/// every report the filter selects is the denominator, and `within` is checked.
#[tokio::test]
async fn the_ranks_api_counts_successes_at_rank_1_and_within_k_over_every_report() {
    let app = crate::helpers::spawn_app().await;
    let mut lines = vec![json!({"kind": "project", "slug": "s/ranked"}).to_string()];
    for (id, verdict, rank) in [
        ("1", "reproduced", Some(1)),
        ("2", "reproduced", Some(4)),
        ("3", "not_reproduced", None),
        ("4", "reproduced", None),
    ] {
        lines.push(
            json!({"kind": "report", "project": "s/ranked", "external_id": id, "title": format!("bug {id}"),
                   "body": "```python\nassert f() == 1\n```\nAssertionError: expected 1, got 2 (version 1.0)"})
            .to_string(),
        );
        let mut a = json!({"kind": "attempt", "report": {"project": "s/ranked", "external_id": id}, "agent": "libro",
                           "verdict": verdict, "verdict_source": "human"});
        if let Some(k) = rank {
            a["rank"] = json!(k);
        }
        lines.push(a.to_string());
    }
    let r = app.import_ndjson(lines.join("\n") + "\n").await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let r = app.get("/api/v1/ranks?project=s/ranked&within=1,5").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["reports"], 4, "the denominator is every report: {}", r.body);
    let w = &r.body["agents"][0]["within"];
    assert_eq!((w[0]["k"].as_u64(), w[0]["reports"].as_u64()), (Some(1), Some(1)), "{}", r.body);
    assert_eq!((w[1]["k"].as_u64(), w[1]["reports"].as_u64()), (Some(5), Some(2)), "{}", r.body);
    assert!((w[0]["rate"].as_f64().unwrap() - 0.25).abs() < 1e-12);
    for bad in ["0", "a", "1,,3", "1,2,3,4,5,6,7,8,9,10,11"] {
        let r = app.get(&format!("/api/v1/ranks?within={bad}")).await;
        crate::helpers::assert_error(&r, 400, "bad_request", "within:");
    }
    let r = app.get("/api/v1/ranks?project=no/such").await;
    assert_eq!(r.status, 404, "{}", r.body);
    let r = app.get("/api/v1/ranks?rank=1").await;
    crate::helpers::assert_error(&r, 400, "bad_request", "rank");
    let bad = json!({"kind": "attempt", "report": {"project": "s/ranked", "external_id": "3"}, "agent": "x",
                     "verdict": "reproduced", "verdict_source": "human", "rank": 0});
    let r = app.import_ndjson(format!("{bad}\n")).await;
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["rejected"], 1, "{body}");
    assert!(body["rejections"][0]["message"].as_str().unwrap().contains("must be between 1 and"), "{body}");
}

/// Records imported without dates count in no period and have no time to
/// reproduction; with their own dates they count in those periods, on both
/// engines, and the maintained counts agree with the rows.
#[tokio::test]
async fn imported_history_counts_by_its_own_dates_or_in_no_period() {
    use failpass_shared::figures::{FlowCounts, FlowKind, throughput_of};
    run_storage_test(|s: Arc<dyn Storage>| async move {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("study.csv"),
            "id,filed,ended,ok\nu1,,,yes\nu2,,,no\nu3,,,\nd1,2023-03-01,2023-03-05,yes\nd2,2023-03-02,,\n",
        )
        .unwrap();
        let m = mapping(
            "project = \"s/dates\"\n[report]\nexternal_id = \"{id}\"\ntitle = \"bug {id}\"\nfiled_at = \"{filed}\"\n\
             [attempt]\nagent = \"a\"\nverdict_source = \"human\"\nended_at = \"{ended}\"\n\
             verdict = { column = \"ok\", map = { yes = \"reproduced\", no = \"not_reproduced\", \"\" = \"hypothesis\" } }\n",
        );
        let summary = import(s.as_ref(), m, Format::Csv, dir.path(), "study.csv").await.unwrap();
        assert_eq!(summary.rejected, 0, "{summary:?}");
        let filter = failpass_shared::api::reports::ReportFilter { project: Some("s/dates".into()), ..Default::default() };
        let mut counts = FlowCounts::default();
        for f in s.report_flows(&filter, &ProjectScope::All).await.unwrap() {
            counts.add(&f);
        }
        let t = throughput_of(&counts, chrono::Utc::now());
        let statuses: Vec<String> = s
            .list_reports(&failpass_shared::api::reports::ReportListQuery { limit: 50, ..Default::default() }, &ProjectScope::All)
            .await
            .unwrap()
            .items
            .iter()
            .map(|r| format!("{} {}", r.external_id, r.status))
            .collect();
        assert_eq!(t.reports, 5, "{statuses:?}");
        assert_eq!(counts.total(FlowKind::Filed), 2, "only the two reports with a stated filing day were filed on a day");
        assert_eq!(counts.total(FlowKind::Counted), 1, "only d1's reproduction has a day (2023-03-05)");
        let today = chrono::Utc::now().date_naive();
        assert_eq!(counts.within(FlowKind::Counted, today - chrono::Duration::days(31), today), 0, "none this month");
        let march = (chrono::NaiveDate::from_ymd_opt(2023, 3, 1).unwrap(), chrono::NaiveDate::from_ymd_opt(2023, 3, 31).unwrap());
        assert_eq!(counts.within(FlowKind::Counted, march.0, march.1), 1, "d1 in March 2023");
        assert_eq!(counts.within(FlowKind::Filed, march.0, march.1), 2);
        assert_eq!(t.time_to_reproduction_n, 1, "u1's time to reproduction is unknown, d1's is 4 days");
        assert!(t.time_to_reproduction_median_hours.is_some_and(|h| h > 90.0), "{t:?}");
        assert_eq!(t.backlog, 2, "u3 and d2 are open: {statuses:?}");
        assert_eq!(t.backlog_oldest_days.map(|d| d > 365.0), Some(true), "d2's age is known; u3's is not");
        // The figures of a filing window hold the stated ones only.
        let windowed = failpass_shared::api::figures::FiguresQuery {
            filter: failpass_shared::api::reports::ReportFilter {
                project: Some("s/dates".into()),
                since: Some(today - chrono::Duration::days(30)),
                ..Default::default()
            },
            ..Default::default()
        };
        let fig = failpass_shared::figures::figure_rows(s.figure_contributions(&windowed, &ProjectScope::All).await.unwrap());
        assert_eq!(fig.first().map_or(0, |r| r.reports), 0, "no report was filed in the last 30 days: {fig:?}");
        let status = failpass::status::compute(
            s.as_ref(),
            &s.get_project("s/dates", &ProjectScope::All).await.unwrap().unwrap(),
        )
        .await;
        // (the project is public: its status page says for how many the median is unknown)
        let status = status.unwrap();
        assert_eq!((status.reports_reproduced, status.time_to_reproduction_n), (2, 1));
        let check = s.check_figures(false).await.unwrap();
        assert!(check.differences.is_empty(), "the maintained counts agree with the rows: {check:?}");
        // An export says no date where none was stated, so a re-import keeps it unknown.
        let u1 = s.find_report("s/dates", "u1").await.unwrap().unwrap();
        let u1 = s.get_report(u1, &ProjectScope::All).await.unwrap().unwrap();
        assert!(!u1.summary.filed_at_stated && failpass::export::report_record(&u1).filed_at.is_none());
        let d1 = s.find_report("s/dates", "d1").await.unwrap().unwrap();
        let d1 = s.get_report(d1, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(failpass::export::report_record(&d1).filed_at.map(|t| t.date_naive().to_string()).as_deref(), Some("2023-03-01"));
        let undated: Vec<_> = attempts(s.as_ref()).await.into_iter().filter(|a| !a.time_stated).collect();
        assert_eq!(undated.len(), 4, "every attempt but d1's came without a time");
    })
    .await;
}

#[tokio::test]
async fn a_refused_row_of_the_full_set_is_not_made_into_a_result() {
    let (s, _db) = sqlite_storage().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("set.json"), r#"{"b1": {"n": 1}, "b2": {"n": 2}, "b3": {"n": 3}}"#).unwrap();
    std::fs::write(dir.path().join("res.csv"), "bug,ok\nb1,yes\nb2,maybe\n").unwrap();
    let m = mapping(
        "project = \"s/refused\"\n[denominator]\nfile = \"set.json\"\nmissing = \"not_reproduced\"\n\
         [report]\nexternal_id = \"{bug}\"\ntitle = \"bug {bug}\"\n\
         [attempt]\nagent = \"a\"\nverdict_source = \"human\"\n\
         verdict = { column = \"ok\", map = { yes = \"reproduced\", no = \"not_reproduced\" } }\n",
    );
    let summary = import(s.as_ref(), m, Format::Csv, dir.path(), "res.csv").await.unwrap();
    assert_eq!(summary.rejected, 1, "b2's verdict is none of the map's: {summary:?}");
    let a = attempts(s.as_ref()).await;
    let verdicts: Vec<Verdict> = a.iter().map(|a| a.verdict).collect();
    assert_eq!(a.len(), 2, "b1's result and b3's (no row: not reproduced), none made up for b2: {verdicts:?}");
    assert!(s.find_report("s/refused", "b2").await.unwrap().is_none(), "b2 waits for its row to be fixed");
}
