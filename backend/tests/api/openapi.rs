//! The OpenAPI document: it names every route the router serves and nothing
//! else, every reference in it resolves, every documented query parameter is
//! one its route takes, and the reference page shows every operation.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::helpers::{TestApp, spawn_app, spawn_app_with_demo};

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

async fn document(app: &TestApp) -> Value {
    let r = app.anon.get(format!("{}/api/v1/openapi.json", app.base)).send().await.expect("request");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    r.json().await.expect("the document is JSON")
}

/// Every (METHOD, path) the document describes.
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for m in METHODS {
            if item.get(m).is_some() {
                out.insert((m.to_uppercase(), path.clone()));
            }
        }
    }
    out
}

#[tokio::test]
async fn the_document_names_every_route_the_router_serves_and_no_other() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    assert_eq!(doc["openapi"], "3.1.0");
    let served: BTreeSet<(String, String)> =
        app.routes.iter().map(|r| (r.method.to_owned(), failpass::openapi::openapi_path(r.path))).collect();
    let documented = operations(&doc);
    let missing: Vec<_> = served.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&served).collect();
    assert!(missing.is_empty(), "routes the document does not describe: {missing:?}");
    assert!(extra.is_empty(), "operations the router does not serve: {extra:?}");
    assert!(served.len() >= 42, "{} routes", served.len());
}

#[tokio::test]
async fn every_operation_says_what_it_is_who_may_call_it_and_how_it_fails() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let mut ids = BTreeSet::new();
    for (method, path) in operations(&doc) {
        let op = &doc["paths"][&path][method.to_lowercase()];
        let at = format!("{method} {path}");
        assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{at}: summary");
        assert!(op["description"].as_str().unwrap_or_default().contains("**Who may:**"), "{at}: who may");
        assert!(ids.insert(op["operationId"].as_str().expect("operationId").to_owned()), "{at}: duplicate id");
        let responses = op["responses"].as_object().expect("responses");
        assert!(responses.keys().any(|s| s.starts_with('2') || s.starts_with('3')), "{at}: a success");
        let default = &responses["default"]["content"]["application/json"]["schema"]["$ref"];
        assert_eq!(default, "#/components/schemas/ApiErrorBody", "{at}: errors in their shape");
        // Path parameters are declared, each with an example a client can try.
        for name in path.split('{').skip(1).filter_map(|p| p.split('}').next()) {
            let param = op["parameters"]
                .as_array()
                .and_then(|ps| ps.iter().find(|p| p["name"] == name && p["in"] == "path"))
                .unwrap_or_else(|| panic!("{at}: path parameter `{name}` undeclared"));
            assert_eq!(param["required"], true, "{at}: {name}");
        }
        if op.get("requestBody").is_some() {
            assert!(responses.contains_key("415"), "{at}: a body's wrong type is documented");
        }
    }
    // Writes need credentials; reads of public projects do not.
    let create = &doc["paths"]["/api/v1/reports"]["post"]["security"];
    assert_eq!(create.as_array().map(Vec::len), Some(2), "{create}");
    assert!(doc["paths"]["/api/v1/reports"]["get"]["security"].as_array().unwrap().contains(&serde_json::json!({})));
    assert!(doc["paths"]["/api/v1/reports"]["post"]["description"].as_str().unwrap().contains("ci token"));
}

/// Every `$ref` in `v`.
fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => out.push(r),
                    _ => refs(x, out),
                }
            }
        }
        Value::Array(xs) => xs.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

#[tokio::test]
async fn every_reference_in_the_document_resolves() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(all.len() > 50, "{} references", all.len());
    for r in all {
        let name =
            r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("a reference outside schemas: {r}"));
        assert!(doc["components"]["schemas"].get(name).is_some(), "`{r}` resolves to nothing");
    }
    // The API types are described field by field, from their Rust types.
    let report = &doc["components"]["schemas"]["CreateReportRequest"];
    assert!(report["required"].as_array().unwrap().contains(&"title".into()), "{report}");
    assert_eq!(
        doc["components"]["schemas"]["Route"]["enum"],
        serde_json::json!(["human_first", "agent_first", "hypothesis"])
    );
}

/// A value `schema` accepts, for trying a parameter.
fn sample(doc: &Value, schema: &Value, example: &Value) -> String {
    let schema = match schema["$ref"].as_str() {
        Some(r) => &doc["components"]["schemas"][r.trim_start_matches("#/components/schemas/")],
        None => schema,
    };
    let text = |v: &Value| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string());
    if let Some(first) = schema["enum"].get(0) {
        return text(first);
    }
    if !example.is_null() {
        return text(example);
    }
    if let Some(first) = schema["examples"].get(0) {
        return text(first);
    }
    match schema["type"].as_str() {
        Some("integer") => schema["minimum"].as_i64().unwrap_or(1).to_string(),
        Some("boolean") => "true".into(),
        _ => "x".into(),
    }
}

#[tokio::test]
async fn every_documented_query_parameter_is_one_its_route_takes() {
    let app = spawn_app_with_demo().await;
    let doc = document(&app).await;
    let mut tried = 0;
    for (method, path) in operations(&doc) {
        // The event stream lasts as long as its job (none runs here).
        if method != "GET" || path.ends_with("/events") {
            continue;
        }
        let op = &doc["paths"][&path]["get"];
        let params = op["parameters"].as_array().cloned().unwrap_or_default();
        // Every value an enumerated path parameter takes (a chart's name):
        // each query parameter must be taken by at least one of them.
        let mut urls = vec![path.clone()];
        for p in params.iter().filter(|p| p["in"] == "path") {
            let name = p["name"].as_str().unwrap();
            let values: Vec<String> = match p["schema"]["enum"].as_array() {
                Some(vs) => vs.iter().map(|v| v.as_str().unwrap().to_owned()).collect(),
                None => vec![sample(&doc, &p["schema"], &p["example"])],
            };
            urls = urls.iter().flat_map(|u| values.iter().map(move |v| u.replace(&format!("{{{name}}}"), v))).collect();
        }
        // A route with a required parameter gets it with every other.
        let required: Vec<String> = params
            .iter()
            .filter(|p| p["in"] == "query" && p["required"] == true)
            .map(|p| format!("{}={}", p["name"].as_str().unwrap(), sample(&doc, &p["schema"], &p["example"])))
            .collect();
        for p in params.iter().filter(|p| p["in"] == "query") {
            let name = p["name"].as_str().unwrap();
            let value = sample(&doc, &p["schema"], &p["example"]);
            let mut query: Vec<String> =
                required.iter().filter(|r| !r.starts_with(&format!("{name}="))).cloned().collect();
            query.push(format!("{name}={}", failpass_shared::api::query::encode_component(&value)));
            let mut refusals = Vec::new();
            for url in &urls {
                let target = format!("{}{url}?{}", app.base, query.join("&"));
                let r = app.client.get(&target).send().await.expect("request");
                let status = r.status().as_u16();
                let body = r.text().await.unwrap_or_default();
                assert!(status < 500, "GET {target}: {status} {body}");
                // A cursor is opaque: a made-up one is refused, by name.
                let taken = status != 400
                    || (name == "cursor" && body.starts_with(r#"{"code":"bad_request","message":"cursor: "#));
                if taken {
                    break;
                }
                refusals.push(format!("{target}: {body}"));
            }
            assert!(
                refusals.len() < urls.len(),
                "GET {path}: `{name}={value}` is documented but refused: {refusals:#?}"
            );
            tried += 1;
        }
    }
    assert!(tried >= 60, "{tried} parameters tried");
}

#[tokio::test]
async fn the_reference_page_shows_every_operation_without_script() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let r = app.anon.get(format!("{}/docs/api", app.base)).send().await.expect("request");
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = r.text().await.unwrap();
    assert!(!html.contains("<script"), "the reference runs nothing");
    assert!(html.contains("href=\"/api/v1/openapi.json\""));
    for (method, path) in operations(&doc) {
        assert!(html.contains(&format!("{method} {path}")), "the page lacks {method} {path}");
    }
    // Parameters, with their descriptions, and the error shape.
    assert!(html.contains("Free text over title, body and external id"));
    assert!(html.contains("ApiErrorBody"));
    // Issue 35 item 7: a body's fields with their types, a curl line, the
    // API apart from the pages, contents, and the way to the agents' command.
    let attempts = html.split(r#"id="post--api-v1-attempts""#).nth(1).expect("POST /api/v1/attempts");
    let attempts = attempts.split("</section>").next().unwrap();
    assert!(
        attempts.contains(r#"data-testid="body-fields""#) && attempts.contains("<code>agent</code> (required)"),
        "{attempts}"
    );
    assert!(attempts.contains("curl -X POST") && attempts.contains("$FAILPASS_URL/api/v1/attempts"), "{attempts}");
    assert!(attempts.contains(r#"-d '{"#), "the body's example in the curl line: {attempts}");
    assert!(html.contains("failpass submit attempt") && html.contains("docs/agents.md"));
    let (api, pages) = html.split_once(r#"id="ref-pages""#).expect("the pages apart");
    assert!(api.contains("GET /api/v1/reports") && !api.contains(r#"id="get--settings-projects""#));
    assert!(pages.contains("POST /settings/projects"));
    assert!(!html.contains("<h2>`") && !html.contains("<strong>`"), "no literal backticks in headings");
}

#[tokio::test]
async fn the_documents_examples_are_requests_that_work() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let example = |name: &str| {
        let e = doc["components"]["schemas"][name]["example"].clone();
        assert!(e.is_object(), "{name} has an example");
        e
    };
    // In the order a client would send them, each answered as documented.
    let project = app.post("/api/v1/projects", &example("CreateProjectRequest")).await;
    assert_eq!(project.status, 201, "{}", project.body);
    let report = app.post("/api/v1/reports", &example("CreateReportRequest")).await;
    assert_eq!(report.status, 201, "{}", report.body);
    let attempt = app.post("/api/v1/attempts", &example("CreateAttemptRequest")).await;
    assert_eq!(attempt.status, 201, "{}", attempt.body);
    let id = attempt.body["id"].as_i64().unwrap();
    let review = app.post(&format!("/api/v1/attempts/{id}/review"), &example("ReviewRequest")).await;
    assert_eq!(review.status, 200, "{}", review.body);
    let mut rerun = example("RerunRequest");
    rerun["report_id"] = report.body["id"].clone();
    let queued = app.post("/api/v1/reruns", &rerun).await;
    assert!(queued.status == 202 || queued.status == 400, "{}", queued.body);
    assert!(!queued.body.to_string().contains("unknown field"), "{}", queued.body);
    // The error example is the shape errors have.
    let error: failpass_shared::error::ApiErrorBody = serde_json::from_value(example("ApiErrorBody")).unwrap();
    let real = app.get("/api/v1/reports?since=2026-13-01").await;
    assert_eq!(real.body["message"], error.message.as_str());
    assert_eq!(real.body["code"], error.code.as_str());
}
