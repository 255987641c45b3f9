//! GitHub webhooks, with a real issue object in GitHub's delivery envelope
//! (tests/fixtures/github): signatures, idempotent deliveries, routing at
//! once, edits, and comment commands from members with rights.

use hmac::{Hmac, Mac};
use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app, user_token};

const SECRET: &str = "fp_test_webhook_secret";

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/github/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

async fn deliver(app: &TestApp, event: &str, delivery: &str, body: &[u8], signature: Option<String>) -> (u16, Value) {
    let mut req = app
        .anon
        .post(format!("{}/api/v1/webhooks/github", app.base))
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .body(body.to_vec());
    if let Some(s) = signature {
        req = req.header("x-hub-signature-256", s);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn github_issue_deliveries_are_verified_idempotent_and_routed_at_once() {
    let app = spawn_app().await;
    app.project("huggingface/datasets").await;
    let opened = fixture("issues-opened.json");
    let body = serde_json::to_vec(&opened).unwrap();

    // No secret set: refused, named, nothing stored.
    let (status, b) = deliver(&app, "issues", "d-0", &body, Some(sign(SECRET, &body))).await;
    assert_eq!(status, 404, "{b}");
    assert!(b["message"].as_str().unwrap().contains("failpass webhook secret huggingface/datasets"), "{b}");
    app.storage.set_webhook_secret("huggingface/datasets", Some(SECRET)).await.unwrap();

    // Unsigned, wrongly signed or signed for another body: 401, nothing stored.
    for sig in [None, Some(sign("another secret", &body)), Some(sign(SECRET, b"{}")), Some("sha256=zz".into())] {
        let (status, b) = deliver(&app, "issues", "d-bad", &body, sig).await;
        assert_eq!(status, 401, "{b}");
        assert!(b["message"].as_str().unwrap().contains("x-hub-signature-256"), "{b}");
    }
    assert_eq!(
        app.get("/api/v1/reports?project=huggingface/datasets").await.body["items"].as_array().unwrap().len(),
        0
    );
    // Missing headers and a body that is not JSON are named.
    let r = app
        .anon
        .post(format!("{}/api/v1/webhooks/github", app.base))
        .header("content-type", "application/json")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert!(r.text().await.unwrap().contains("x-github-event"));
    let (status, b) = deliver(&app, "issues", "d-junk", b"not json", Some(sign(SECRET, b"not json"))).await;
    assert_eq!(status, 400, "{b}");

    // A hook of the project hears what live intake does (nothing runs its deliveries here).
    let hook = app
        .post("/api/v1/hooks", &json!({"project": "huggingface/datasets", "url": "https://hooks.example.org/hook"}))
        .await;
    assert_eq!(hook.status, 201, "{}", hook.body);
    let told = || async {
        let log = app.get(&format!("/api/v1/hooks/{}/deliveries", hook.body["id"])).await.body;
        let mut told: Vec<(String, Value, Value)> = log
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let body: Value = serde_json::from_str(d["body"].as_str().unwrap()).unwrap();
                (body["event"].as_str().unwrap().to_owned(), body["from"].clone(), body["to"].clone())
            })
            .collect();
        told.reverse();
        told
    };

    // Signed: the report is created and routed within the request.
    // (Its time is measured by scripts/bench-webhook.sh, not asserted here.)
    let (status, b) = deliver(&app, "issues", "d-1", &body, Some(sign(SECRET, &body))).await;
    assert_eq!(status, 200, "{b}");
    assert_eq!(b["status"], "created", "{b}");
    let id = b["report_id"].as_i64().unwrap();
    let r = app.get(&format!("/api/v1/reports/{id}")).await.body;
    assert_eq!(r["external_id"], "6566");
    assert_eq!(r["title"], opened["issue"]["title"]);
    assert_eq!(r["reporter"], opened["issue"]["user"]["login"]);
    assert_eq!(r["route"], b["route"]);
    assert!(!r["explanation"].as_array().unwrap().is_empty());

    // The same delivery again changes nothing.
    let (status, b) = deliver(&app, "issues", "d-1", &body, Some(sign(SECRET, &body))).await;
    assert_eq!((status, b["status"].as_str()), (200, Some("duplicate")), "{b}");

    // An edit (a new delivery) updates the report in place and routes it again.
    let mut edited = opened.clone();
    edited["action"] = json!("edited");
    edited["issue"]["title"] = json!("bf16 training with the accelerate launcher fails on multi-gpu");
    edited["issue"]["labels"] = json!([{"name": "module: distributed"}]);
    let body2 = serde_json::to_vec(&edited).unwrap();
    let (status, b) = deliver(&app, "issues", "d-2", &body2, Some(sign(SECRET, &body2))).await;
    assert_eq!((status, b["status"].as_str(), b["report_id"].as_i64()), (200, Some("updated"), Some(id)), "{b}");
    assert_eq!(b["route"], "human_first", "{b}");
    assert_eq!(
        app.get("/api/v1/reports?project=huggingface/datasets").await.body["items"].as_array().unwrap().len(),
        1
    );
    let first_route = r["route"].clone();
    assert_eq!(
        told().await,
        vec![("route".into(), Value::Null, first_route.clone()), ("route".into(), first_route, json!("human_first"))]
    );
    // Other events and actions are acknowledged and ignored.
    let (_, b) = deliver(
        &app,
        "issues",
        "d-3",
        &{
            let mut closed = opened.clone();
            closed["action"] = json!("closed");
            serde_json::to_vec(&closed).unwrap()
        },
        None,
    )
    .await;
    assert_eq!(b["code"], "unauthorized", "still signed: {b}");
    let ping = serde_json::to_vec(
        &json!({"zen": "Keep it logically awesome.", "repository": {"full_name": "huggingface/datasets"}}),
    )
    .unwrap();
    let (status, b) = deliver(&app, "ping", "d-4", &ping, Some(sign(SECRET, &ping))).await;
    assert_eq!((status, b["status"].as_str()), (200, Some("pong")), "{b}");
}

#[tokio::test]
async fn comment_commands_act_only_for_members_with_the_right() {
    let app = spawn_app().await;
    app.project("huggingface/datasets").await;
    app.storage.set_webhook_secret("huggingface/datasets", Some(SECRET)).await.unwrap();
    let opened = serde_json::to_vec(&fixture("issues-opened.json")).unwrap();
    let (_, b) = deliver(&app, "issues", "c-0", &opened, Some(sign(SECRET, &opened))).await;
    let id = b["report_id"].as_i64().unwrap();
    let comment = fixture("issue_comment-created.json");
    let send = |login: &str, text: &str, delivery: &str| {
        let mut c = comment.clone();
        c["comment"]["user"]["login"] = json!(login);
        c["comment"]["body"] = json!(text);
        let body = serde_json::to_vec(&c).unwrap();
        let delivery = delivery.to_owned();
        let app = &app;
        async move { deliver(app, "issue_comment", &delivery, &body, Some(sign(SECRET, &body))).await }
    };
    // A stranger, and a viewer, may not; nothing changes.
    let (status, b) = send("stranger", "/failpass route human_first", "c-1").await;
    assert_eq!((status, b["status"].as_str()), (200, Some("ignored")), "{b}");
    assert!(b["detail"].as_str().unwrap().contains("not a failpass account"), "{b}");
    user_token(app.storage.as_ref(), "watcher", false).await;
    app.storage
        .set_membership("watcher", "huggingface/datasets", Some(failpass_shared::model::ProjectRole::Viewer))
        .await
        .unwrap();
    let (_, b) = send("watcher", "/failpass route human_first", "c-2").await;
    assert!(b["detail"].as_str().unwrap().contains("may not correct routes"), "{b}");
    let r = app.get(&format!("/api/v1/reports/{id}")).await.body;
    assert_eq!(r["route_corrected"], false);

    // A maintainer's command corrects the route, with the rest of the line as the reason.
    user_token(app.storage.as_ref(), "maintainer", false).await;
    app.storage
        .set_membership("maintainer", "huggingface/datasets", Some(failpass_shared::model::ProjectRole::Maintainer))
        .await
        .unwrap();
    let text = comment["comment"]["body"].as_str().unwrap().to_owned();
    let (status, b) = send("maintainer", &text, "c-3").await;
    assert_eq!((status, b["status"].as_str(), b["route"].as_str()), (200, Some("routed"), Some("human_first")), "{b}");
    let r = app.get(&format!("/api/v1/reports/{id}")).await.body;
    assert_eq!(r["route_correction"]["by"], "maintainer");
    assert_eq!(r["route_correction"]["reason"], "the failure comes from the training launcher's bf16 setup");
    // A rerun command from the maintainer queues what there is to rerun (nothing here).
    let (status, b) = send("maintainer", "/failpass rerun", "c-4").await;
    assert_eq!((status, b["status"].as_str()), (200, Some("rerun")), "{b}");
    // Not a command, or an unknown one: ignored.
    let (_, b) = send("maintainer", "thanks, looking into it", "c-5").await;
    assert_eq!(b["status"], "ignored");
    let (_, b) = send("maintainer", "/failpass route sideways", "c-6").await;
    assert!(b["detail"].as_str().unwrap().starts_with("usage:"), "{b}");
}
