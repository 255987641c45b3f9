use serde_json::json;

use crate::helpers::{assert_error, spawn_app};

#[tokio::test]
async fn create_list_and_get_projects() {
    let app = spawn_app().await;
    let p = app.project("pytorch/pytorch").await;
    assert_eq!(p["slug"], "pytorch/pytorch");
    assert_eq!(p["public"], true);
    assert_eq!(p["reports"], 0);
    app.post("/api/v1/projects", &json!({"slug": "acme/secret", "public": false, "name": "Acme"})).await;

    let list = app.get("/api/v1/projects").await;
    let slugs: Vec<_> = list.body.as_array().unwrap().iter().map(|p| p["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs, ["acme/secret", "pytorch/pytorch"]);

    let one = app.get("/api/v1/projects/pytorch/pytorch").await;
    assert_eq!(one.status, 200);
    assert_eq!(one.body["slug"], "pytorch/pytorch");
    assert_error(&app.get("/api/v1/projects/nobody/nothing").await, 404, "not_found", "nobody/nothing");
}

#[tokio::test]
async fn bad_project_input_is_a_4xx_naming_the_field() {
    let app = spawn_app().await;
    app.project("jax-ml/jax").await;
    assert_error(
        &app.post("/api/v1/projects", &json!({"slug": "jax-ml/jax"})).await,
        409,
        "conflict",
        "already exists",
    );
    assert_error(&app.post("/api/v1/projects", &json!({"slug": "a b"})).await, 400, "bad_request", "slug");
    assert_error(&app.post("/api/v1/projects", &json!({})).await, 400, "bad_request", "missing field `slug`");
    assert_error(
        &app.post("/api/v1/projects", &json!({"slug": "x", "colour": 1})).await,
        400,
        "bad_request",
        "unknown field `colour`",
    );
    assert_error(&app.post("/api/v1/projects", &json!({"slug": 5})).await, 400, "bad_request", "invalid type");
    assert_error(
        &app.post_raw("/api/v1/projects", Some("application/json"), "{\"slug\":").await,
        400,
        "bad_request",
        "invalid JSON",
    );
    assert_error(
        &app.post_raw("/api/v1/projects", None, "{\"slug\":\"x\"}").await,
        415,
        "unsupported_media_type",
        "Content-Type",
    );
    // nothing half-written
    assert_eq!(app.get("/api/v1/projects").await.body.as_array().unwrap().len(), 1);
}
