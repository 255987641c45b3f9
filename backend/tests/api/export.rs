//! Exports (issue 15): the reports and attempts lists as CSV, JSON and
//! NDJSON with the pages' filters, and the NDJSON round trip through import
//! on the whole demo database.

use failpass::db::ProjectScope;
use failpass::export::{ExportFormat, REPORT_COLUMNS};
use failpass::import::{Format, Importer, run};
use failpass_shared::api::attempts::AttemptListQuery;
use failpass_shared::api::reports::ReportListQuery;
use failpass_shared::routing::RoutingConfig;

use serde_json::json;

use crate::helpers::{assert_error, spawn_app_with_demo, sqlite_storage};

async fn download(app: &crate::helpers::TestApp, path: &str) -> (u16, String, String, String) {
    let r = app.client.get(format!("{}{path}", app.base)).send().await.unwrap();
    let header = |h: &str| r.headers().get(h).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let (ct, cd) = (header("content-type"), header("content-disposition"));
    (r.status().as_u16(), ct, cd, r.text().await.unwrap())
}

async fn export_all(storage: &dyn failpass::db::Storage) -> Vec<u8> {
    let mut out = Vec::new();
    failpass::export::reports(storage, &ReportListQuery::default(), &ProjectScope::All, ExportFormat::Ndjson, &mut out)
        .await
        .unwrap();
    failpass::export::attempts(
        storage,
        &AttemptListQuery::default(),
        &ProjectScope::All,
        ExportFormat::Ndjson,
        &mut out,
    )
    .await
    .unwrap();
    out
}

#[tokio::test]
async fn lists_export_as_csv_json_and_ndjson_with_their_filters() {
    let app = spawn_app_with_demo().await;
    let all = app.get("/api/v1/reports?limit=500").await.body;
    let total = all["items"].as_array().unwrap().len();
    assert!(total > 20 && all["next_cursor"].is_null(), "the demo fits one page of 500: {total}");

    let (status, ct, cd, csv) = download(&app, "/api/v1/export/reports?format=csv").await;
    assert_eq!((status, ct.as_str()), (200, "text/csv; charset=utf-8"));
    assert_eq!(cd, "attachment; filename=\"failpass-reports.csv\"");
    let mut rows = csv::Reader::from_reader(csv.as_bytes());
    assert_eq!(rows.headers().unwrap().iter().collect::<Vec<_>>(), REPORT_COLUMNS);
    let records: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), total, "every report, every page");
    // Titles with commas and quotes survive.
    let first = &all["items"][0];
    let first_id = first["id"].as_i64().unwrap().to_string();
    let row = records.iter().find(|r| r[0] == first_id).unwrap();
    assert_eq!(&row[3], first["title"].as_str().unwrap());

    // The page's filters apply.
    let jax = app.get("/api/v1/reports?project=jax-ml/jax&limit=500").await.body["items"].as_array().unwrap().len();
    let (_, _, _, csv) = download(&app, "/api/v1/export/reports?project=jax-ml%2Fjax&format=csv").await;
    assert_eq!(csv.lines().count(), jax + 1);
    let (_, ct, _, json) = download(&app, "/api/v1/export/reports?project=jax-ml%2Fjax&format=json").await;
    assert_eq!(ct, "application/json");
    let items: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(items.len(), jax);
    assert!(items.iter().all(|r| r["project"] == "jax-ml/jax"));
    let (_, _, _, nd) = download(&app, "/api/v1/export/attempts?agent=repgen&format=ndjson").await;
    let lines: Vec<serde_json::Value> = nd.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!lines.is_empty() && lines.iter().all(|l| l["kind"] == "attempt" && l["agent"] == "repgen"), "{nd:.300}");
    assert!(lines[0]["report"]["external_id"].is_string(), "attempts name their report by number");

    // A figure table: the figures' rows for the same parameters, a column per figure.
    let figures = app.get("/api/v1/figures?group_by=agent&route=agent_first").await.body;
    let want = figures["rows"].as_array().unwrap();
    let (status, _, cd, csv) = download(&app, "/api/v1/export/figures?group_by=agent&route=agent_first").await;
    assert_eq!((status, cd.as_str()), (200, "attachment; filename=\"failpass-figures.csv\""));
    let mut rows = csv::Reader::from_reader(csv.as_bytes());
    let headers: Vec<String> = rows.headers().unwrap().iter().map(str::to_owned).collect();
    let records: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), want.len());
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap_or_else(|| panic!("{name} in {headers:?}"));
    for (r, w) in records.iter().zip(want) {
        assert_eq!(&r[col("key")], w["key"].as_str().unwrap());
        assert_eq!(&r[col("reports_reproduced")], w["reports_reproduced"].to_string());
        assert_eq!(&r[col("cost_total_usd")], w["cost_total_usd"].to_string());
    }
    let (_, _, _, nd) = download(&app, "/api/v1/export/figures?group_by=route&format=ndjson").await;
    let lines: Vec<serde_json::Value> = nd.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines, app.get("/api/v1/figures?group_by=route").await.body["rows"].as_array().unwrap().clone());
    assert_error(
        &app.get("/api/v1/export/figures?group_by=route&format=json&project=no%2Fsuch").await,
        404,
        "not_found",
        "project `no/such` not found",
    );
    assert_error(&app.get("/api/v1/export/figures?group_by=colour").await, 400, "bad_request", "group_by");

    // The Oracles page's tables, each as CSV: the API's rows, named first.
    let oracles = app.get("/api/v1/oracles?project=fastnum%2Ffastnum").await.body;
    for (table, field, name) in
        [("kinds", "by_kind", "kind"), ("sources", "by_source", "source"), ("causes", "failure_causes", "cause")]
    {
        let want = oracles[field].as_array().unwrap();
        let (status, _, cd, csv) =
            download(&app, &format!("/api/v1/export/oracles?table={table}&project=fastnum%2Ffastnum")).await;
        assert_eq!(status, 200, "{table}: {csv}");
        assert_eq!(cd, format!("attachment; filename=\"failpass-oracle-{table}.csv\""));
        let mut rows = csv::Reader::from_reader(csv.as_bytes());
        let headers: Vec<String> = rows.headers().unwrap().iter().map(str::to_owned).collect();
        let records: Vec<csv::StringRecord> = rows.records().map(Result::unwrap).collect();
        assert_eq!(records.len(), want.len(), "{table}: {csv}");
        if let Some(first) = want.first() {
            assert_eq!(headers[0], name, "{table}: {headers:?}");
            assert_eq!(records[0][0], first[name].as_str().map_or_else(|| first[name].to_string(), str::to_owned));
        }
    }
    assert_error(&app.get("/api/v1/export/oracles").await, 400, "bad_request", "table: which table?");
    // The weekly throughput: every week of the filters' reports, the week first.
    let flow = app.get("/api/v1/throughput?project=jax-ml%2Fjax").await.body;
    let (status, _, _, csv) = download(&app, "/api/v1/export/throughput?project=jax-ml%2Fjax").await;
    assert_eq!(status, 200);
    assert_eq!(csv.lines().count(), flow["weeks"].as_array().unwrap().len() + 1, "{csv}");
    assert!(csv.starts_with("week,"), "{csv}");
    assert_error(&app.get("/api/v1/export/throughput?agent=x").await, 400, "bad_request", "agent");
    assert_error(&app.get("/api/v1/export/oracles?table=pies").await, 400, "bad_request", "`pies` is not one of kinds");
    assert_error(&app.get("/api/v1/export/oracles?table=kinds&project=no%2Fsuch").await, 404, "not_found", "no/such");

    // Wrong input is named, before anything is sent.
    assert_error(
        &app.get("/api/v1/export/reports?format=xml").await,
        400,
        "bad_request",
        "`xml` is not one of csv, json, ndjson",
    );
    assert_error(&app.get("/api/v1/export/reports?colour=red").await, 400, "bad_request", "colour");
    assert_error(&app.get("/api/v1/export/attempts?verdict=maybe").await, 400, "bad_request", "verdict");
}

#[tokio::test]
async fn the_demo_database_round_trips_through_an_ndjson_export() {
    let app = spawn_app_with_demo().await;
    // What maintainers did travels too: a duplicate, an assignee, a comment, a corrected route, a reopening.
    let list = app.get("/api/v1/reports?project=jax-ml%2Fjax&limit=4").await.body;
    let ids: Vec<i64> = list["items"].as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect();
    let target = list["items"][1]["external_id"].as_str().unwrap().to_owned();
    for (path, body) in [
        (
            format!("/api/v1/reports/{}/status", ids[0]),
            json!({"status": "duplicate", "duplicate_of": target, "reason": "same trace"}),
        ),
        (format!("/api/v1/reports/{}/assign", ids[1]), json!({"assignee": crate::helpers::TEST_ADMIN})),
        (format!("/api/v1/reports/{}/comments", ids[1]), json!({"text": "seen on 0.4.30 too"})),
        (format!("/api/v1/reports/{}/route", ids[2]), json!({"route": "human_first", "reason": "a launcher bug"})),
        (format!("/api/v1/reports/{}/status", ids[3]), json!({"status": "wont_fix"})),
        (format!("/api/v1/reports/{}/status", ids[3]), json!({"status": "reopen"})),
    ] {
        let r = app.post(&path, &body).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
    }
    let first = export_all(app.storage.as_ref()).await;
    let text = String::from_utf8(first.clone()).unwrap();
    let kinds = |k: &str| text.lines().filter(|l| l.contains(&format!("\"kind\":\"{k}\""))).count();
    assert!(kinds("project") >= 3 && kinds("report") > 20 && kinds("attempt") > 20, "{}", &text[..300]);
    assert!(kinds("life_cycle") >= 4, "the changed reports' life cycles are exported");

    // Into an empty database: everything comes in, nothing is rejected.
    let (fresh, _dir) = sqlite_storage().await;
    let routing = RoutingConfig::default();
    let mut importer = Importer::new(fresh.as_ref(), &routing);
    let input = std::io::Cursor::new(first.clone());
    run(&mut importer, Format::Ndjson, tokio::io::BufReader::new(input), &Default::default()).await.unwrap();
    let summary = importer.finish().await.unwrap();
    assert_eq!(summary.rejected, 0, "{summary:?}");
    assert_eq!(summary.created as usize, kinds("project") + kinds("report") + kinds("attempt"), "{summary:?}");
    assert_eq!(summary.updated as usize, kinds("life_cycle"), "each life cycle replaces its report's fresh one");
    // The duplicate, its target, the assignee and the timeline are back.
    let dup =
        fresh.find_report("jax-ml/jax", list["items"][0]["external_id"].as_str().unwrap()).await.unwrap().unwrap();
    let dup = fresh.get_report(dup, &ProjectScope::All).await.unwrap().unwrap();
    assert_eq!(dup.summary.status.as_str(), "duplicate");
    assert_eq!(dup.resolution.unwrap().duplicate_of.unwrap().external_id, target);

    // And out again: the same records (in another order: lists are newest
    // first, and the import gave them new ids).
    let second = export_all(fresh.as_ref()).await;
    let (a, b) = (String::from_utf8(first).unwrap(), String::from_utf8(second).unwrap());
    let (mut a, mut b): (Vec<&str>, Vec<&str>) = (a.lines().collect(), b.lines().collect());
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "a record changed on the way");
    }

    // The same figures on both sides.
    let flows = |s: std::sync::Arc<dyn failpass::db::Storage>| async move {
        let f = s.report_flows(&Default::default(), &ProjectScope::All).await.unwrap();
        let mut statuses: Vec<String> = f.iter().map(|r| r.status.to_string()).collect();
        statuses.sort();
        statuses
    };
    assert_eq!(flows(app.storage.clone()).await, flows(fresh.clone()).await, "every report's status survives");

    // Importing the export again changes nothing; a life cycle before its report, or with an unknown resolution, is refused.
    let mut again = Importer::new(fresh.as_ref(), &routing);
    let input = std::io::Cursor::new(a.join("\n").into_bytes());
    run(&mut again, Format::Ndjson, tokio::io::BufReader::new(input), &Default::default()).await.unwrap();
    let summary = again.finish().await.unwrap();
    assert_eq!((summary.created, summary.updated, summary.rejected), (0, 0, 0), "{summary:?}");
    let orphan = r#"{"kind":"life_cycle","project":"jax-ml/jax","external_id":"nope","assignee":"x"}"#;
    let bad =
        r#"{"kind":"life_cycle","project":"jax-ml/jax","external_id":"1","resolution":"gone","resolution_by":"x"}"#;
    let mut third = Importer::new(fresh.as_ref(), &routing);
    let input = std::io::Cursor::new(format!("{orphan}\n{bad}\n").into_bytes());
    run(&mut third, Format::Ndjson, tokio::io::BufReader::new(input), &Default::default()).await.unwrap();
    let summary = third.finish().await.unwrap();
    assert_eq!(summary.rejected, 2, "{summary:?}");
    assert!(summary.rejections[0].message.contains("not in failpass"), "{summary:?}");
    assert!(summary.rejections[1].message.contains("`gone` is not"), "{summary:?}");
}

/// A life cycle is a reviewer's to set: a CI token, which may import reports,
/// may not import statuses and timelines.
#[tokio::test]
async fn a_ci_token_may_not_import_a_life_cycle() {
    let app = crate::helpers::spawn_app().await;
    app.project("o/n").await;
    app.report(json!({"project": "o/n", "external_id": "1", "title": "a report"})).await;
    let p = app.storage.get_project("o/n", &ProjectScope::All).await.unwrap().unwrap();
    let req = failpass::auth::tokens::TokenRequest {
        name: "ci".into(),
        scope: failpass_shared::model::TokenScope::Ci,
        project_id: Some(p.id),
        user_id: None,
        created_by: "tests".into(),
        expires_in_days: None,
    };
    let (token, _) = failpass::auth::tokens::create(app.storage.as_ref(), req).await.unwrap();
    let record = json!({"kind": "life_cycle", "project": "o/n", "external_id": "1", "resolution": "closed", "resolution_by": "ci"});
    let r = crate::helpers::client_with_token(&token)
        .post(format!("{}/api/v1/import?format=ndjson", app.base))
        .header("content-type", "application/x-ndjson")
        .body(record.to_string())
        .send()
        .await
        .unwrap();
    let summary: serde_json::Value = r.json().await.unwrap();
    assert_eq!(summary["rejected"], 1, "{summary}");
    assert!(summary["rejections"][0]["message"].as_str().unwrap().contains("review"), "{summary}");
    let report = app.get("/api/v1/reports?project=o/n").await.body;
    assert_eq!(report["items"][0]["status"], "new", "nothing changed");
}
