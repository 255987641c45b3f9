//! Exports (issue 15): the reports and attempts lists as CSV, JSON and
//! NDJSON with the pages' filters, and the NDJSON round trip through import
//! on the whole demo database.

use failpass::db::ProjectScope;
use failpass::export::{ExportFormat, REPORT_COLUMNS};
use failpass::import::{Format, Importer, run};
use failpass_shared::api::attempts::AttemptListQuery;
use failpass_shared::api::reports::ReportListQuery;
use failpass_shared::routing::RoutingConfig;

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
    let first = export_all(app.storage.as_ref()).await;
    let text = String::from_utf8(first.clone()).unwrap();
    let kinds = |k: &str| text.lines().filter(|l| l.contains(&format!("\"kind\":\"{k}\""))).count();
    assert!(kinds("project") >= 3 && kinds("report") > 20 && kinds("attempt") > 20, "{}", &text[..300]);

    // Into an empty database: everything comes in, nothing is rejected.
    let (fresh, _dir) = sqlite_storage().await;
    let routing = RoutingConfig::default();
    let mut importer = Importer::new(fresh.as_ref(), &routing);
    let input = std::io::Cursor::new(first.clone());
    run(&mut importer, Format::Ndjson, tokio::io::BufReader::new(input), &Default::default()).await.unwrap();
    let summary = importer.finish().await.unwrap();
    assert_eq!(summary.rejected, 0, "{summary:?}");
    assert_eq!(summary.created as usize, kinds("project") + kinds("report") + kinds("attempt"), "{summary:?}");

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
}
