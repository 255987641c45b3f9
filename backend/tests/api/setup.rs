//! The set-up pages (issue 15): a project created and changed from the
//! browser's forms, environments written there and built on request (for
//! real, in the sandbox) with their logs, and imports uploaded as files with
//! their rejections listed. Each wrong form is answered on the page, naming
//! the field, and changes nothing.

use failpass::runner::build::Build;
use failpass::runner::workbench::Workbench;
use failpass_shared::model::{BuildStatus, JobKind};
use serde_json::json;

use crate::helpers::{TestApp, assert_error, spawn_app};

/// A form post as the dashboard's own page sends it (same origin).
pub(crate) async fn form(app: &TestApp, path: &str, fields: &[(&str, &str)]) -> (u16, String, Option<String>) {
    let r =
        app.client.post(format!("{}{path}", app.base)).header("origin", &app.base).form(fields).send().await.unwrap();
    // The client follows a 303: where it ended up.
    let location = Some(format!("{}{}", r.url().path(), r.url().query().map(|q| format!("?{q}")).unwrap_or_default()));
    (r.status().as_u16(), r.text().await.unwrap(), location)
}

/// A multipart upload as the import page sends it.
async fn upload(app: &TestApp, fields: &[(&str, &str)], file: Option<&str>) -> (u16, String) {
    let mut body = reqwest::multipart::Form::new();
    for (k, v) in fields {
        body = body.text(k.to_string(), v.to_string());
    }
    if let Some(f) = file {
        body = body.part("file", reqwest::multipart::Part::text(f.to_owned()).file_name("upload.txt"));
    }
    let r = app
        .client
        .post(format!("{}/settings/import", app.base))
        .header("origin", &app.base)
        .multipart(body)
        .send()
        .await;
    let r = r.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

/// Runs the build job queued for environment `id`, as a runner would.
async fn run_build(app: &TestApp, id: i64) -> failpass_shared::api::jobs::EnvironmentBuild {
    let job =
        app.storage.claim("tests", chrono::Utc::now(), chrono::Duration::seconds(600)).await.unwrap().expect("a job");
    assert_eq!((job.kind, job.payload.environment_id), (JobKind::Build, Some(id)));
    let build = Build { bench: Workbench::new(app.storage.clone(), &app.data_dir()) };
    build.execute(&job).await.expect("the build job ends");
    app.storage.complete(job.id, "tests", chrono::Utc::now(), None).await.unwrap();
    let r = app.get(&format!("/api/v1/environments/{id}/build")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    serde_json::from_value(r.body).unwrap()
}

#[tokio::test]
async fn an_admin_creates_a_project_and_changes_it_from_the_set_up_pages() {
    let app = spawn_app().await;
    let (status, html, location) = form(
        &app,
        "/settings/projects",
        &[
            ("slug", "acme/fastnum"),
            ("name", "Fastnum"),
            ("upstream_url", "https://github.com/acme/fastnum"),
            ("visibility", "public"),
        ],
    )
    .await;
    assert_eq!((status, location.as_deref()), (200, Some("/settings/projects/acme/fastnum?created=1")));
    assert!(html.contains("Project created.") && html.contains("https://github.com/acme/fastnum"), "{html}");
    assert!(html.contains("lacks both"), "a project without environments says reruns cannot run yet");
    let list = app.get("/settings/projects").await;
    assert!(list.body.as_str().unwrap().contains("/settings/projects/acme/fastnum"));

    // Made private, described, its address changed: the API shows it, and the status pages drop it.
    assert_eq!(app.get("/status/acme/fastnum").await.status, 200);
    let (status, html, _) = form(
        &app,
        "/settings/projects/acme/fastnum",
        &[
            ("name", "Fastnum"),
            ("description", "numbers, fast"),
            ("upstream_url", "https://gitlab.com/acme/fastnum"),
            ("visibility", "private"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("Project saved."));
    let p = app.get("/api/v1/projects/acme/fastnum").await.body;
    assert_eq!((p["public"].as_bool(), p["description"].as_str()), (Some(false), Some("numbers, fast")));
    assert_eq!(p["upstream_url"], "https://gitlab.com/acme/fastnum");
    assert_eq!(p["benchmark"], false, "an unticked box is not a benchmark");
    // Ticked, it is a benchmark: the page says so and its open reports leave the backlog.
    let before = app.get("/api/v1/throughput?project=acme/fastnum").await.body["backlog"].as_u64().unwrap();
    let fields = [("name", "Fastnum"), ("visibility", "private"), ("benchmark", "on")];
    let (status, html, _) = form(&app, "/settings/projects/acme/fastnum", &fields).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains(r#"name="benchmark" value="on" checked"#), "{html}");
    assert_eq!(app.get("/api/v1/projects/acme/fastnum").await.body["benchmark"], true);
    assert_eq!(app.get("/api/v1/throughput?project=acme/fastnum").await.body["backlog"], 0);
    let (status, _, _) =
        form(&app, "/settings/projects/acme/fastnum", &[("name", "Fastnum"), ("visibility", "private")]).await;
    assert_eq!(status, 200);
    assert_eq!(app.get("/api/v1/throughput?project=acme/fastnum").await.body["backlog"], before);
    let p = app.get("/api/v1/projects/acme/fastnum").await.body;
    assert_eq!(app.anon.get(format!("{}/status/acme/fastnum", app.base)).send().await.unwrap().status(), 404);
    assert!(
        !app.anon
            .get(format!("{}/status", app.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
            .contains("acme/fastnum")
    );

    // Wrong input: named on the page, what was typed kept, nothing stored.
    for (fields, needle) in [
        (vec![("name", "Fastnum"), ("upstream_url", "javascript:alert(1)"), ("visibility", "private")], "upstream_url"),
        (vec![("name", "  "), ("visibility", "private")], "name: must be 1 to 200"),
        (vec![("name", "Fastnum"), ("visibility", "secret")], "visibility: `secret`"),
    ] {
        let (status, html, _) = form(&app, "/settings/projects/acme/fastnum", &fields).await;
        assert_eq!(status, 400, "{fields:?}: {html}");
        assert!(html.contains(needle), "{fields:?}: {html}");
    }
    let (status, html, _) = form(&app, "/settings/projects", &[("slug", "acme/fastnum")]).await;
    assert_eq!(status, 400);
    assert!(html.contains("already exists") && html.contains("value=\"acme/fastnum\""), "{html}");
    let (status, html, _) = form(&app, "/settings/projects", &[("slug", "../etc")]).await;
    assert!(status == 400 && html.contains("slug"), "{html}");
    assert_eq!(app.get("/api/v1/projects/acme/fastnum").await.body, p, "refused forms changed nothing");

    // The JSON API says the same.
    let patch = |body: serde_json::Value| {
        let c = app.client.clone();
        let url = format!("{}/api/v1/projects/acme/fastnum", app.base);
        async move { c.patch(url).json(&body).send().await.unwrap() }
    };
    let r = patch(json!({"public": true})).await;
    assert_eq!(r.status(), 200);
    let r = patch(json!({"visibilty": true})).await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("visibilty"));
    let r = patch(json!({})).await;
    assert!(r.status() == 400 && r.text().await.unwrap().contains("nothing to change"));
    let r =
        app.client.patch(format!("{}/api/v1/projects/no/such", app.base)).json(&json!({"public": true})).send().await;
    assert_eq!(r.unwrap().status(), 404);
}

#[tokio::test]
async fn environments_are_written_on_the_page_and_built_on_request_with_their_logs() {
    let app = spawn_app().await;
    app.project("acme/fastnum").await;
    let page = "/settings/projects/acme/fastnum/environments";
    let (status, html, _) = form(
        &app,
        page,
        &[
            ("name", "fastnum-0.3.0"),
            ("role", "buggy"),
            ("source", "none"),
            ("setup", "echo built-ok > marker\ncat marker"),
            ("variables", "FASTNUM_HOME={env}\n\nMODE=strict"),
            ("version", "fastnum 0.3.0"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("Environment `fastnum-0.3.0` created"), "{html}");
    let envs = app.get("/api/v1/environments?project=acme/fastnum").await.body;
    let env = &envs[0];
    assert_eq!(env["recipe"]["setup"], json!(["echo built-ok > marker", "cat marker"]));
    assert_eq!(env["recipe"]["env"], json!({"FASTNUM_HOME": "{env}", "MODE": "strict"}));
    let id = env["id"].as_i64().unwrap();

    // Refused: the field named, the form as typed, nothing stored.
    for (fields, needle) in [
        (
            vec![("name", "x"), ("role", "buggy"), ("source", "none"), ("variables", "JUST_A_NAME")],
            "variables: line 1 `JUST_A_NAME` is not NAME=value",
        ),
        (
            vec![("name", "other-buggy"), ("role", "buggy"), ("source", "none")],
            "already has a buggy environment, `fastnum-0.3.0`",
        ),
        (vec![("name", "x"), ("role", "broken"), ("source", "none")], "role:"),
        (vec![("name", "x y"), ("role", "fixed"), ("source", "none")], "name: must be"),
        (
            vec![("name", "x"), ("role", "fixed"), ("source", "git"), ("git_url", "https://example.org/x.git")],
            "git_rev:",
        ),
        (vec![("name", "x"), ("role", "fixed"), ("source", "dir")], "dir: give the directory"),
    ] {
        let (status, html, _) = form(&app, page, &fields).await;
        assert_eq!(status, 400, "{fields:?}: {html}");
        assert!(html.contains(needle), "{fields:?}: {html}");
    }
    assert_eq!(app.get("/api/v1/environments?project=acme/fastnum").await.body, envs, "refused forms stored nothing");

    // Build now: a job, then the build's log (built for real), then the cache.
    assert_error(&app.get(&format!("/api/v1/environments/{id}/build")).await, 404, "not_found", "no build yet");
    let (status, html, location) = form(&app, &format!("{page}/{id}/build"), &[]).await;
    assert_eq!(status, 200, "{html}");
    assert!(location.unwrap().starts_with("/settings/projects/acme/fastnum?build="), "back to the page by GET");
    assert!(html.contains("Build queued as job") && html.contains("reloads every 5 seconds"), "{html}");
    assert!(html.contains("content=\"5; url=/settings/projects/acme/fastnum\""), "it reloads the page, not the post");
    let built = run_build(&app, id).await;
    assert_eq!(built.status, BuildStatus::Built, "{}", built.log);
    assert!(built.log.contains("$ cat marker\nbuilt-ok"), "{}", built.log);
    let html = app.get("/settings/projects/acme/fastnum").await.body.as_str().unwrap().to_owned();
    assert!(html.contains("built-ok") && !html.contains("reloads every"), "{html}");
    let r =
        app.client.post(format!("{}/api/v1/environments/{id}/build", app.base)).json(&json!({})).send().await.unwrap();
    assert_eq!(r.status(), 202);
    let cached = run_build(&app, id).await;
    assert_eq!(cached.status, BuildStatus::Cached);
    assert!(cached.log.contains("built before") && cached.log.contains("built-ok"), "{}", cached.log);

    // A recipe that does not build: the log says which command and how it ended.
    let (status, _, _) = form(
        &app,
        page,
        &[("name", "fastnum-0.3.1"), ("role", "fixed"), ("source", "none"), ("setup", "echo half-way\nexit 3")],
    )
    .await;
    assert_eq!(status, 200);
    let fixed = app
        .get("/api/v1/environments?project=acme/fastnum")
        .await
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "fastnum-0.3.1")
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    form(&app, &format!("{page}/{fixed}/build"), &[]).await;
    let failed = run_build(&app, fixed).await;
    assert_eq!(failed.status, BuildStatus::Failed);
    assert!(failed.log.contains("half-way") && failed.log.contains("`exit 3` exited with"), "{}", failed.log);
    let html = app.get("/settings/projects/acme/fastnum").await.body.as_str().unwrap().to_owned();
    assert!(html.contains("<details class=\"build-log\" open"), "a failed build's log is open on the page");
    assert!(!html.contains("lacks"), "with buggy and fixed, the page no longer says reruns cannot run");

    // An environment of another project is not built through this one's address.
    app.project("other/lib").await;
    let (status, _, _) = form(&app, &format!("/settings/projects/other/lib/environments/{id}/build"), &[]).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_file_imported_from_the_browser_shows_its_summary_and_every_rejection() {
    let app = spawn_app().await;
    app.project("acme/fastnum").await;
    let good = |n: u32| json!({"kind": "report", "project": "acme/fastnum", "external_id": format!("{n}"), "title": format!("report {n}")});
    let file = format!("{}\n{{\"kind\": \"report\", \"project\": \"acme/fastnum\"}}\n{}\nnot json\n", good(1), good(2));
    let (status, html) = upload(&app, &[("format", "ndjson"), ("project", "")], Some(&file)).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("Imported: 2 created, 0 updated, 0 unchanged, 2 rejected."), "{html}");
    assert!(
        html.contains("data-testid=\"import-rejections\"") && html.contains("external_id") && html.contains("line 4"),
        "{html}"
    );
    assert_eq!(app.get("/api/v1/reports?project=acme/fastnum").await.body["items"].as_array().unwrap().len(), 2);
    let (_, again) = upload(&app, &[("format", "ndjson")], Some(&file)).await;
    assert!(again.contains("0 created, 0 updated, 2 unchanged, 2 rejected"), "{again}");

    // A CSV through a pasted mapping, into the project picked in the form.
    let mapping = "project = \"someone/else\"\n[report]\nexternal_id = \"{id}\"\ntitle = \"{title}\"\n";
    let (status, html) = upload(
        &app,
        &[("format", "csv"), ("project", "acme/fastnum"), ("mapping_text", mapping)],
        Some("id,title\n7,softmax overflows\n8,\n"),
    )
    .await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("1 created") || html.contains("2 created"), "{html}");
    let r = app.get("/api/v1/reports?project=acme/fastnum&q=softmax").await.body;
    assert_eq!(r["items"][0]["external_id"], "7", "{r}");

    // Wrong input: the page names it and nothing is stored.
    let before = app.get("/api/v1/reports?project=acme/fastnum").await.body;
    for (fields, file, needle) in [
        (vec![("format", "ndjson")], None, "file: choose the file"),
        (vec![("format", "excel")], Some("x"), "format: unknown format `excel`"),
        (vec![("format", "csv")], Some("id\n1\n"), "mapping: CSV and JSON need a mapping"),
        (vec![("format", "csv"), ("mapping", "nope")], Some("id\n1\n"), "mapping: `nope` is not a shipped mapping"),
        (vec![("format", "csv"), ("mapping_text", "project = [")], Some("id\n1\n"), "mapping:"),
        (
            vec![
                ("format", "csv"),
                (
                    "mapping_text",
                    "project = \"a/b\"\n[report]\nexternal_id = \"{id}\"\ntitle = \"{id}\"\n[join]\nfile = \"/etc/passwd\"\non = \"{id}\"\n",
                ),
            ],
            Some("id\n1\n"),
            "`join` reads a second file on the server",
        ),
        (vec![("format", "junit")], Some("<testsuite/>"), "format: JUnit results belong to an attempt"),
        (vec![("format", "ndjson"), ("stray", "1")], Some("{}"), "stray: not a field of the import form"),
    ] {
        let (status, html) = upload(&app, &fields, file).await;
        assert_eq!(status, 400, "{fields:?}: {html}");
        assert!(html.contains(needle), "{fields:?}: {html}");
    }
    assert_eq!(app.get("/api/v1/reports?project=acme/fastnum").await.body, before);

    // From another site: refused before anything is read.
    let body =
        reqwest::multipart::Form::new().text("format", "ndjson").part("file", reqwest::multipart::Part::text(file));
    let r = app
        .client
        .post(format!("{}/settings/import", app.base))
        .header("origin", "http://evil.example")
        .multipart(body)
        .send()
        .await;
    assert_eq!(r.unwrap().status(), 403);
}

/// The set-up storage on both engines: a project's changes (a field left out
/// stays, an empty one is removed) and the newest build of each environment.
#[tokio::test]
async fn project_changes_and_builds_are_stored_alike_on_both_engines() {
    use failpass::db::Storage;
    use failpass_shared::api::jobs::CreateEnvironmentRequest;
    use failpass_shared::api::projects::{CreateProjectRequest, UpdateProjectRequest};
    crate::helpers::run_storage_test(|s: std::sync::Arc<dyn Storage>| async move {
        let req = CreateProjectRequest {
            slug: "a/b".into(),
            name: None,
            description: Some("first".into()),
            public: None,
            upstream_url: Some("https://github.com/a/b".into()),
            benchmark: None,
        };
        s.create_project(&req).await.unwrap();
        let changed =
            s.update_project("a/b", &UpdateProjectRequest { public: Some(false), ..Default::default() }).await.unwrap();
        assert_eq!(
            (changed.public, changed.description.as_deref(), changed.upstream_url.as_deref()),
            (false, Some("first"), Some("https://github.com/a/b"))
        );
        let cleared = s
            .update_project(
                "a/b",
                &UpdateProjectRequest {
                    name: Some("B".into()),
                    description: Some(" ".into()),
                    upstream_url: Some(String::new()),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(
            (cleared.name.as_str(), cleared.description, cleared.upstream_url, cleared.public),
            ("B", None, None, false)
        );
        let missing =
            s.update_project("no/such", &UpdateProjectRequest { public: Some(true), ..Default::default() }).await;
        assert!(matches!(missing, Err(failpass::db::StorageError::NotFound(_))), "{missing:?}");

        let env: CreateEnvironmentRequest =
            serde_json::from_value(json!({"name": "b1", "role": "buggy", "recipe": {"setup": ["true"]}})).unwrap();
        let env = s.create_environment("a/b", &env).await.unwrap();
        assert_eq!(s.environment(env.id).await.unwrap().unwrap().name, "b1");
        assert!(s.latest_builds("a/b").await.unwrap().is_empty());
        let first = s.start_build(env.id, None, &env.recipe_hash).await.unwrap();
        s.finish_build(first, BuildStatus::Failed, "no").await.unwrap();
        let second = s.start_build(env.id, Some(7), &env.recipe_hash).await.unwrap();
        let builds = s.latest_builds("a/b").await.unwrap();
        assert_eq!(builds.len(), 1);
        assert_eq!((builds[0].id, builds[0].status, builds[0].job_id), (second, BuildStatus::Running, Some(7)));
        s.finish_build(second, BuildStatus::Built, "yes").await.unwrap();
        let b = s.latest_builds("a/b").await.unwrap().remove(0);
        assert!(b.status == BuildStatus::Built && b.log == "yes" && b.finished_at.is_some());
        assert!(s.finish_build(9999, BuildStatus::Built, "").await.is_err());
    })
    .await;
}
