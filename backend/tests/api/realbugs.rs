//! Real bugs of real libraries, graded end to end on their own releases:
//! the corpus's `small` bugs (two libraries with small wheels) loaded
//! through the API as a maintainer would, their buggy release read from
//! each report's body, the fixed one set, the reference reproductions
//! graded by the workers in environments built from the package index, a
//! bisect that finds the documented fix, and environments rebuilt from the
//! wheel cache with no network. The index is PyPI (reachable here); the
//! wheel cache under `target/` spares a second run the downloads.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::{assert_error, spawn_app_with_workers};
use crate::runner::drain;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_bugs_are_graded_on_the_releases_their_reports_name() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/realbugs");
    let mut libs = failpass::demo::realbugs::load_dir(&corpus).expect("the corpus parses");
    for l in &mut libs {
        l.bugs.retain(|b| b.small);
    }
    libs.retain(|l| !l.bugs.is_empty());
    let bugs: usize = libs.iter().map(|l| l.bugs.len()).sum();
    assert!(bugs >= 3 && libs.len() >= 2, "the test command grades at least three real bugs of two libraries");

    let app = spawn_app_with_workers(false, 2).await;
    let mut graded = Vec::new();
    for lib in &libs {
        let project = lib.project();
        let r = app.post("/api/v1/projects", &json!({ "slug": project, "public": true })).await;
        assert_eq!(r.status, 201, "{}", r.body);
        let r = app.post("/api/v1/releases", &json!({ "project": project, "template": lib.template() })).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let listed: Vec<&str> =
            r.body["releases"].as_array().unwrap().iter().map(|x| x["version"].as_str().unwrap()).collect();
        for (n, bug) in lib.bugs.iter().enumerate() {
            assert!(listed.contains(&bug.buggy.as_str()) && listed.contains(&bug.fixed.as_str()), "{listed:?}");
            let external_id = bug.url.rsplit('/').next().unwrap();
            let report = json!({
                "project": project, "external_id": external_id, "url": bug.url,
                "title": bug.title, "body": bug.body, "oracle": { "kind": "fail_to_pass", "source": "authored", "command": "python3 candidate.py", "repeats": 3 },
            });
            let id = if n == 0 {
                // Taken in by a bulk import as closed upstream in the milestone of its fix (GitHub's milestone title).
                let mut line = report.clone();
                line["kind"] = json!("report");
                line["upstream"] = json!({ "state": "closed", "reason": "completed", "milestone": bug.fixed });
                let r = app.import_ndjson(line.to_string()).await;
                assert_eq!(r.status(), 200);
                let summary: Value = r.json().await.unwrap();
                assert_eq!(summary["created"], 1, "{summary}");
                let q = app.get(&format!("/api/v1/reports?project={project}&q={external_id}")).await.body;
                q["items"][0]["id"].as_i64().unwrap()
            } else {
                app.report(report).await
            };
            // Nobody typed the buggy release: it was read from the body, with the line it came from.
            let v = app.get(&format!("/api/v1/reports/{id}/versions")).await.body;
            assert_eq!(v["buggy"], bug.buggy.as_str(), "{v}");
            assert!(v["buggy_source"].as_str().unwrap().contains("line "), "{v}");
            if n == 0 {
                assert_eq!(v["fixed"], bug.fixed.as_str(), "{v}");
                assert!(v["fixed_source"].as_str().unwrap().starts_with("upstream: closed as completed"), "{v}");
            } else {
                let r = app.post(&format!("/api/v1/reports/{id}/versions"), &json!({ "fixed": bug.fixed })).await;
                assert_eq!(r.status, 200, "{}", r.body);
                assert!(r.body["fixed_source"].as_str().unwrap().starts_with("set by"), "{}", r.body);
            }
            let a = app.attempt(json!({ "report_id": id, "agent": "reference", "verdict": "hypothesis", "verdict_source": "llm", "candidate": bug.reproduction, "verify": true })).await;
            graded.push((id, a["id"].as_i64().unwrap(), lib.template().package, bug.clone()));
        }
    }
    // A version is hostile input: it is checked as PEP 440 and against the index before anything runs with it.
    let (id, ..) = &graded[0];
    let r = app.post(&format!("/api/v1/reports/{id}/versions"), &json!({ "buggy": "1.0; rm -rf /" })).await;
    assert_error(&r, 400, "bad_request", "not a PEP 440 version");
    let r = app.post(&format!("/api/v1/reports/{id}/versions"), &json!({ "fixed": "999.0.0" })).await;
    assert_error(&r, 400, "bad_request", "is not a release of");

    drain(&app, Duration::from_secs(900)).await;
    for (_, attempt, package, bug) in &graded {
        let a = app.get(&format!("/api/v1/attempts/{attempt}")).await.body;
        assert_eq!(a["verdict"], "reproduced", "{}: {a}", bug.id);
        let text = a.to_string();
        for v in [&bug.buggy, &bug.fixed] {
            assert!(text.contains(&format!("{package} {v}")), "{} was graded on {package} {v}: {a}", bug.id);
        }
    }

    // Bisect: from the buggy release to the newest, the first that passes is the documented fix.
    let (id, _, _, bug) = &graded[0];
    let r = app.post(&format!("/api/v1/reports/{id}/bisect"), &json!({})).await;
    assert_eq!(r.status, 202, "{}", r.body);
    drain(&app, Duration::from_secs(900)).await;
    let v = app.get(&format!("/api/v1/reports/{id}/versions")).await.body;
    let b = &v["bisect"];
    assert_eq!(b["state"], "found", "{v}");
    assert_eq!(b["first_passing"], bug.fixed.as_str(), "{v}");
    assert!(b["steps"].as_array().unwrap().len() >= 2, "{v}");
    let report = app.get(&format!("/api/v1/reports/{id}")).await.body;
    assert!(
        report["activity"].to_string().contains("bisect over releases: fixed in"),
        "the result is in the report's history"
    );

    // Environments evicted (or lost) are rebuilt from the wheel cache with no network at all.
    let envs = app.data_dir().join("envs");
    for e in std::fs::read_dir(&envs).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().starts_with('r')) {
        if e.path().is_dir() {
            std::fs::remove_dir_all(e.path()).unwrap();
        }
    }
    let (_, attempt, ..) = &graded[1];
    let r = app.post("/api/v1/reruns", &json!({ "attempt_id": attempt })).await;
    assert!(r.status == 202 || r.status == 200, "{}", r.body);
    drain(&app, Duration::from_secs(600)).await;
    let metas: Vec<Value> = std::fs::read_dir(&envs)
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("meta.json")).ok())
        .map(|b| serde_json::from_slice(&b).unwrap())
        .collect();
    assert_eq!(metas.len(), 2, "the rerun rebuilt its buggy and fixed releases");
    for m in &metas {
        assert_eq!(m["fetched"], false, "rebuilt from the wheel cache alone, with no network: {m}");
    }
    let a = app.get(&format!("/api/v1/attempts/{attempt}")).await.body;
    assert_eq!(a["verdict"], "reproduced", "{a}");

    // The Runners page's environment cache shows what was rebuilt, and from where.
    let c = app.get("/api/v1/runners/environments").await.body;
    let held: Vec<&str> = c["environments"].as_array().unwrap().iter().map(|e| e["label"].as_str().unwrap()).collect();
    assert_eq!(held.len(), 2, "{c}");
    assert!(
        c["environments"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["fetched"] == false && e["size_bytes"].as_u64() > Some(0)),
        "{c}"
    );
    assert!(c["wheel_cache_bytes"].as_u64() > Some(1 << 20), "{c}");
    let page = app.get("/runners/environments").await;
    let html = page.body.as_str().unwrap_or_default();
    assert_eq!(page.status, 200, "{html}");
    assert!(held.iter().all(|l| html.contains(l)) && html.contains("the wheel cache"), "{html}");

    // Re-checks follow releases as they are published: each reproduced
    // attempt runs once on its package's newest release on the index.
    let index = failpass::releases::Settings::default().index(&app.data_dir());
    let queued = failpass::runner::schedule::enqueue_rechecks(app.storage.as_ref(), Some(&index)).await.unwrap();
    assert_eq!(queued, graded.len(), "one re-check per reproduced attempt");
    drain(&app, Duration::from_secs(900)).await;
    let (_, attempt, package, bug) = &graded[0];
    let a = app.get(&format!("/api/v1/attempts/{attempt}")).await.body;
    let r = &a["grade"]["recheck"];
    let newest = r["environment"].as_str().unwrap_or_default();
    assert!(newest.starts_with(&format!("{package} ")) && newest != format!("{package} {}", bug.fixed), "{a}");
    assert_eq!(r["outcome"], "no_longer_reproduces", "fixed in {}, so fixed in the newest: {a}", bug.fixed);
    let again = failpass::runner::schedule::enqueue_rechecks(app.storage.as_ref(), Some(&index)).await.unwrap();
    assert_eq!(again, 0, "a release already re-checked is not run again until a newer one is out");
}
