//! Routing that reads real reports (issue 33): issue-template fields and
//! environment dumps are not evidence, a maintainer confirms a route beside
//! correcting it, each project has a health panel with an alarm (also on the
//! Overview), and `reroute` learns the boilerplate its reports share.

use serde_json::{Value, json};

use crate::helpers::{assert_error, spawn_app};

/// TensorFlow's bug form, every environment field filled, a silent
/// numerical bug in the description.
const TF_FORM_NUMERICAL: &str = "### Issue type\n\nBug\n\n### Have you reproduced the bug with TensorFlow Nightly?\n\nYes\n\n### Source\n\nbinary\n\n### TensorFlow version\n\ntf 2.15.0\n\n### Custom code\n\nYes\n\n### OS platform and distribution\n\nLinux Ubuntu 22.04\n\n### Mobile device\n\n_No response_\n\n### Python version\n\n3.11\n\n### Bazel version\n\n6.1.0\n\n### GCC/compiler version\n\ngcc 11.4\n\n### CUDA/cuDNN version\n\nCUDA 12.2 / cuDNN 8.9\n\n### GPU model and memory\n\nNVIDIA A100 40GB\n\n### Current behavior?\n\n`tf.math.reduce_logsumexp` returns `inf` for large finite inputs; the expected result is 1000.6931.\n\n### Standalone code to reproduce the issue\n\n```shell\nimport tensorflow as tf\nx = tf.constant([1000.0, 1000.0])\nprint(tf.math.reduce_logsumexp(x).numpy())\n```\n\n### Relevant log output\n\n```shell\ninf\n```\n";

/// The same form, filled for a build from source that fails to link.
const TF_FORM_BUILD: &str = "### Issue type\n\nBuild/Install\n\n### Source\n\nsource\n\n### TensorFlow version\n\n2.15.0\n\n### OS platform and distribution\n\nUbuntu 22.04\n\n### Bazel version\n\n6.1.0\n\n### GCC/compiler version\n\nclang 17\n\n### CUDA/cuDNN version\n\n12.2 / 8.9\n\n### Current behavior?\n\nBuilding the pip package from source fails at the link step.\n\n### Standalone code to reproduce the issue\n\n```shell\nbazel build --config=cuda //tensorflow/tools/pip_package:build_pip_package\n```\n\n### Relevant log output\n\n```shell\nld.lld: error: undefined reference to absl::log_internal::LogMessage\n```\n";

fn harness_evidence(report: &Value) -> String {
    let rules = report["explanation"].as_array().unwrap();
    rules.iter().find(|r| r["rule"] == "harness_or_plumbing").unwrap()["evidence"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_framework_template_routes_on_its_problem_and_names_its_sections() {
    let app = spawn_app().await;
    app.project("tensorflow/tensorflow").await;
    let numeric = app
        .report(json!({"project": "tensorflow/tensorflow", "external_id": "1",
            "title": "tf.math.reduce_logsumexp returns inf for large inputs", "body": TF_FORM_NUMERICAL}))
        .await;
    let r = app.get(&format!("/api/v1/reports/{numeric}")).await.body;
    assert_eq!(r["route"], "agent_first", "{}", harness_evidence(&r));
    let ev = harness_evidence(&r);
    assert!(ev.starts_with("weight 0 < 2"), "{ev}");
    assert!(ev.contains("not evidence: 12 environment and form sections (\"Issue type\""), "{ev}");
    // The environment sections became the report's environment.
    let env = r["environment"].as_str().unwrap();
    assert!(env.contains("Bazel version: 6.1.0") && env.contains("CUDA/cuDNN version: CUDA 12.2 / cuDNN 8.9"), "{env}");

    let build = app
        .report(json!({"project": "tensorflow/tensorflow", "external_id": "2",
            "title": "Build from source fails to link", "body": TF_FORM_BUILD}))
        .await;
    let r = app.get(&format!("/api/v1/reports/{build}")).await.body;
    assert_eq!(r["route"], "human_first");
    let ev = harness_evidence(&r);
    assert!(ev.contains("keyword \"build\" in title (+2)"), "{ev}");
    assert!(ev.contains("\"undefined reference\" in code of \"Relevant log output\" (+2)"), "{ev}");
    assert!(!ev.contains("bazel\" in") && !ev.contains("ubuntu"), "{ev}");
    // An environment filed with the report is kept as filed.
    let own = app
        .report(json!({"project": "tensorflow/tensorflow", "external_id": "3", "title": "t",
            "body": TF_FORM_NUMERICAL, "environment": "tf 2.16 on a TPU"}))
        .await;
    assert_eq!(app.get(&format!("/api/v1/reports/{own}")).await.body["environment"], "tf 2.16 on a TPU");
}

#[tokio::test]
async fn a_confirmed_route_clears_its_check_and_counts_towards_precision() {
    let app = spawn_app().await;
    app.project("o/n").await;
    let unsure = app
        .report(json!({"project": "o/n", "external_id": "1", "title": "matmul wrong",
            "body": "only with the new driver\nand only on the gpu"}))
        .await;
    let before = app.get(&format!("/api/v1/reports/{unsure}")).await.body;
    assert_eq!(before["route_check"], true);
    let path = format!("/api/v1/reports/{unsure}/route/confirm");
    assert_error(&app.post(&path, &json!({"why": "x"})).await, 400, "bad_request", "why");
    // The route the maintainer saw, if given, must still be the report's.
    let r = app.post(&path, &json!({"route": "human_first"})).await;
    assert_error(&r, 400, "bad_request", "now routed hypothesis, not human first");
    let r = app.post(&path, &json!({})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["route_check"], false);
    assert_eq!(r.body["route"], before["route"], "a confirmation changes no route");
    let timeline: Vec<&str> =
        r.body["activity"].as_array().unwrap().iter().map(|a| a["text"].as_str().unwrap()).collect();
    assert!(timeline.contains(&"route hypothesis confirmed"), "{timeline:?}");
    let h = app.get("/api/v1/routing/o/n").await.body;
    assert_eq!((h["confirmed"].as_u64(), h["route_check"].as_u64()), (Some(1), Some(0)), "{h}");
    assert_eq!(h["reviewed"][0]["route"], "hypothesis");
    assert_eq!(h["reviewed"][0]["precision"], 1.0);
    assert_error(
        &app.post("/api/v1/reports/999999/route/confirm", &json!({})).await,
        404,
        "not_found",
        "report 999999",
    );
    let anon = app.anon.post(format!("{}/api/v1/reports/{unsure}/route/confirm", app.base)).send().await.unwrap();
    assert_eq!(anon.status(), 401);
}

#[tokio::test]
async fn too_much_sent_to_a_human_sounds_the_alarm_on_the_panel_and_the_overview() {
    let app = spawn_app().await;
    app.project("o/builds").await;
    app.project("o/quiet").await;
    for i in 0..19 {
        let title = if i < 13 { format!("cmake build fails with gcc {i}") } else { format!("sum is wrong {i}") };
        app.report(json!({"project": "o/builds", "external_id": i.to_string(), "title": title, "body": "see title"}))
            .await;
    }
    // 19 reports: too few to say.
    assert_eq!(app.get("/api/v1/routing/o/builds").await.body["alarm"], Value::Null);
    app.report(json!({"project": "o/builds", "external_id": "19", "title": "bazel build breaks", "body": "x"})).await;
    let h = app.get("/api/v1/routing/o/builds").await.body;
    assert_eq!((h["routed"].as_u64(), h["human_first"].as_u64()), (Some(20), Some(14)), "{h}");
    let alarm = h["alarm"].as_str().unwrap();
    assert!(alarm.contains("14 of 20 reports (70%) went to a human first"), "{alarm}");
    assert_eq!(h["top_evidence"][0]["evidence"], "keyword \"build\"", "{h}");
    assert_eq!(h["top_evidence"][0]["reports"], 14);
    assert_eq!(h["weeks"].as_array().unwrap().len(), 12);
    // The page says it, and the Overview's glance names the project.
    let page = app.client.get(format!("{}/routing/o/builds", app.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("data-testid=\"routing-alarm\"") && page.contains("14 of 20 reports"), "{page}");
    let glance = app.get("/api/v1/glance").await.body;
    let html = glance["html"].as_str().unwrap();
    assert!(html.contains("Routing alarm, o/builds") && !html.contains("o/quiet"), "{html}");
    assert!(
        !app.get("/api/v1/glance?project=o%2Fquiet").await.body["html"].as_str().unwrap().contains("Routing alarm")
    );
    // Unknown and private projects answer as missing.
    assert_error(&app.get("/api/v1/routing/no/such").await, 404, "not_found", "project no/such");
    let r = app.post("/api/v1/projects", &json!({"slug": "o/private", "public": false})).await;
    assert_eq!(r.status, 201);
    let anon = app.anon.get(format!("{}/api/v1/routing/o/private", app.base)).send().await.unwrap();
    assert_eq!(anon.status(), 404);
}

#[tokio::test]
async fn reroute_learns_the_boilerplate_a_projects_reports_share() {
    let app = spawn_app().await;
    app.project("o/tmpl").await;
    let template = "**Describe the bug**\nA clear and concise description of what the bug is.\n\n**Checklist**\n- [x] I have searched the existing issues for the build\n";
    for i in 0..12 {
        let body = format!("{template}\nThe mean of column {i} is wrong.\n");
        app.report(json!({"project": "o/tmpl", "external_id": i.to_string(), "title": format!("mean wrong {i}"), "body": body}))
            .await;
    }
    let summary = failpass::cli::reroute::reroute(app.storage.as_ref(), &Default::default(), false).await.unwrap();
    assert_eq!(summary.boilerplate["o/tmpl"], 3, "{summary:?}");
    let h = app.get("/api/v1/routing/o/tmpl").await.body;
    let lines: Vec<&str> = h["boilerplate"].as_array().unwrap().iter().map(|l| l["line"].as_str().unwrap()).collect();
    assert!(lines.contains(&"A clear and concise description of what the bug is."), "{lines:?}");
    assert_eq!(h["boilerplate_reports"], 12);
    let page = app.client.get(format!("{}/routing/o/tmpl", app.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("3 lines, learned from 12 reports"), "{page}");
}
