//! Routing health in the browser (issue 33): a project whose reports go to
//! a human too often shows the alarm on its panel and on the Overview; on a
//! report page a maintainer confirms a route, and a correction offers only
//! the other routes and keeps what was chosen when the reason is missing.

use super::*;

use failpass::db::NewReport;
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::api::reports::CreateReportRequest;
use failpass_shared::routing::{RoutingConfig, RoutingInput, decide};

const TF_FORM_NUMERICAL: &str = "### Issue type\n\nBug\n\n### Source\n\nbinary\n\n### TensorFlow version\n\ntf 2.15.0\n\n### OS platform and distribution\n\nLinux Ubuntu 22.04\n\n### Bazel version\n\n6.1.0\n\n### GCC/compiler version\n\ngcc 11.4\n\n### CUDA/cuDNN version\n\nCUDA 12.2 / cuDNN 8.9\n\n### Current behavior?\n\n`tf.math.reduce_logsumexp` returns `inf` for large finite inputs; expected 1000.6931.\n\n### Standalone code to reproduce the issue\n\n```shell\nimport tensorflow as tf\nprint(tf.math.reduce_logsumexp(tf.constant([1000.0, 1000.0])).numpy())\n```\n";

async fn file(h: &Harness, id: usize, title: &str, body: &str) -> i64 {
    let request = CreateReportRequest {
        project: "tensorflow/tensorflow".into(),
        external_id: id.to_string(),
        url: None,
        title: title.into(),
        body: body.into(),
        labels: vec![],
        filed_at: Some(chrono::Utc::now() - chrono::Duration::hours(id as i64)),
        reporter: None,
        environment: None,
        paths: vec![],
        oracle: None,
        upstream: None,
    };
    let decision = decide(&RoutingConfig::default(), &RoutingInput::from_request(&request));
    h.storage.create_report(&NewReport { request, decision, origin: Default::default() }).await.unwrap().summary.id
}

#[tokio::test]
async fn a_maintainer_reads_routing_health_and_confirms_or_corrects_a_route() {
    let _one = BROWSER.lock().await;
    for width in [1280, 390] {
        let h = start(width, 1100).await;
        let slug = "tensorflow/tensorflow";
        let req = CreateProjectRequest {
            slug: slug.into(),
            name: None,
            description: None,
            public: Some(true),
            upstream_url: None,
            benchmark: None,
        };
        h.storage.create_project(&req).await.unwrap();
        let numeric = file(&h, 0, "reduce_logsumexp returns inf", TF_FORM_NUMERICAL).await;
        for i in 1..=20 {
            file(&h, i, &format!("bazel build fails with gcc {i}"), "see the title").await;
        }
        h.sign_in("demo-admin").await;

        // The panel: the alarm and the evidence behind it.
        h.client.goto(&format!("{}/routing/{slug}", h.base)).await.unwrap();
        let alarm = h.text("routing-alarm").await;
        assert!(alarm.contains("20 of 21 reports (95%) went to a human first"), "{alarm}");
        assert!(alarm.contains("keyword \"build\" — 20 reports"), "{alarm}");
        assert_eq!(h.text("routing-routed").await, "21 reports");
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the routing page scrolls sideways at {width} px by {overflow}");
        h.screenshot(&format!("routing-health-{width}.png")).await;

        // The Overview's glance names the project.
        h.client.goto(&format!("{}/", h.base)).await.unwrap();
        let said = h.text("routing-alarm").await;
        assert!(said.contains("Routing alarm, tensorflow/tensorflow"), "{said}");

        // A report page: the template's fields were not evidence, and the route is confirmed.
        h.client.goto(&format!("{}/reports/{numeric}", h.base)).await.unwrap();
        let why = h.text("explanation").await;
        assert!(why.contains("not evidence: 7 environment and form sections"), "{why}");
        let choices = h.client.find_all(Locator::Css("[data-testid=route-choice] option")).await.unwrap();
        let mut values = Vec::new();
        for c in &choices {
            values.push(c.attr("value").await.unwrap().unwrap_or_default());
        }
        assert_eq!(values, ["human_first", "hypothesis"], "a correction offers only the other routes");
        h.client.find(Locator::Css("[data-testid=confirm-route]")).await.unwrap().click().await.unwrap();
        h.until("the confirmation in the timeline", || async {
            h.text("activity").await.contains("route agent first confirmed")
        })
        .await;
        // Correcting without a reason: the browser keeps the choice and sends nothing.
        let select = h.client.find(Locator::Css("[data-testid=route-choice]")).await.unwrap();
        select.select_by_value("hypothesis").await.unwrap();
        h.client.find(Locator::Css("[data-testid=set-route]")).await.unwrap().click().await.unwrap();
        let kept = h
            .client
            .execute("return document.querySelector('[data-testid=route-choice]').value", vec![])
            .await
            .unwrap();
        assert_eq!(kept, "hypothesis");
        let r: serde_json::Value = h.api(&format!("/api/v1/reports/{numeric}")).await;
        assert_eq!(r["route"], "agent_first", "nothing was sent");
        h.client
            .find(Locator::Css("[data-testid=route-reason]"))
            .await
            .unwrap()
            .send_keys("no oracle can be written")
            .await
            .unwrap();
        h.client.find(Locator::Css("[data-testid=set-route]")).await.unwrap().click().await.unwrap();
        h.until("the corrected route", || async { h.text("route-correction").await.contains("to hypothesis") }).await;
        let r: serde_json::Value = h.api(&format!("/api/v1/reports/{numeric}")).await;
        assert_eq!((r["route"].as_str(), r["category"].as_str()), (Some("hypothesis"), Some("patch_logic")));
        let overflow = h.sideways().await;
        assert!(overflow <= 0, "the report page scrolls sideways at {width} px by {overflow}");
        h.screenshot(&format!("report-routing-{width}.png")).await;
        h.finish().await;
    }
}
