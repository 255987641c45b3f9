//! Input that cannot hurt: NUL characters, long lines, byte-order marks,
//! documents that are not JUnit, and a database that cannot take a write.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::{TestApp, assert_error, spawn_app, spawn_pg_app};

async fn nul_is_named_everywhere(app: &TestApp) {
    app.project("n/ul").await;
    assert_error(
        &app.post("/api/v1/reports", &json!({"project": "n/ul", "external_id": "1", "title": "a\u{0}b"})).await,
        400,
        "bad_request",
        "title: contains a NUL character",
    );
    assert_error(
        &app.post("/api/v1/reports", &json!({"project": "n/ul", "external_id": "1", "title": "t", "oracle": {"kind": "crash_signature", "source": "derived", "signature": "E\u{0}"}})).await,
        400,
        "bad_request",
        "oracle.signature",
    );
    assert_error(
        &app.post("/api/v1/projects", &json!({"slug": "x/y", "description": "\u{0}"})).await,
        400,
        "bad_request",
        "description: contains a NUL",
    );
    assert_error(&app.get("/api/v1/reports?q=%00").await, 400, "bad_request", "q: contains a NUL character");
    assert_error(&app.get("/api/v1/projects/a%00/b").await, 400, "bad_request", "path: contains a NUL character");
    // An escaped backslash followed by u0000 is text, not a NUL.
    let r = app
        .post("/api/v1/reports", &json!({"project": "n/ul", "external_id": "2", "title": "\\u0000 in a title"}))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    // An import: the bad line is rejected by name; every other record of its batch is stored.
    let lines = [
        json!({"kind": "project", "slug": "n/ew"}),
        json!({"kind": "report", "project": "n/ew", "external_id": "1", "title": "fine"}),
        json!({"kind": "report", "project": "n/ew", "external_id": "2", "title": "bad\u{0}"}),
        json!({"kind": "report", "project": "n/ew", "external_id": "3", "title": "fine too"}),
        json!({"kind": "attempt", "report": {"project": "n/ew", "external_id": "1"}, "agent": "a\u{0}", "verdict": "hypothesis", "verdict_source": "llm"}),
        json!({"kind": "attempt", "report": {"project": "n/ew", "external_id": "1"}, "agent": "a", "verdict": "hypothesis", "verdict_source": "llm"}),
    ];
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let summary: Value = app.import_ndjson(body).await.json().await.unwrap();
    assert_eq!((summary["created"].as_u64(), summary["rejected"].as_u64()), (Some(4), Some(2)), "{summary}");
    let rejections = summary["rejections"].to_string();
    assert!(
        rejections.contains("title: contains a NUL") && rejections.contains("agent: contains a NUL"),
        "{rejections}"
    );
    assert_eq!(app.get("/api/v1/reports?project=n%2Few").await.body["items"].as_array().unwrap().len(), 2);
    // Through a mapping-free format too (GitHub issues), and a form.
    let issue = json!({"number": 5, "title": "bad\u{0}", "body": "b", "state": "open", "html_url": "https://github.com/n/ew/issues/5", "created_at": "2024-01-01T00:00:00Z", "labels": [], "user": {"login": "x"}});
    let r = app
        .client
        .post(format!("{}/api/v1/import?format=github-issues&project=n%2Few", app.base))
        .header("content-type", "application/x-ndjson")
        .body(format!("{issue}\n"))
        .send()
        .await
        .unwrap();
    let summary: Value = r.json().await.unwrap();
    assert_eq!(summary["rejected"], 1, "{summary}");
    assert!(summary["rejections"].to_string().contains("title: contains a NUL"), "{summary}");
}

#[tokio::test]
async fn nul_characters_are_refused_by_name_on_sqlite() {
    nul_is_named_everywhere(&spawn_app().await).await;
}

#[tokio::test]
async fn nul_characters_are_refused_by_name_on_postgres() {
    let (app, pg) = spawn_pg_app(Default::default()).await;
    nul_is_named_everywhere(&app).await;
    drop(app);
    pg.drop_now().await;
}

#[tokio::test]
async fn a_line_over_the_limit_is_rejected_and_the_rest_stored() {
    let app = spawn_app().await;
    app.project("l/ong").await;
    let long = format!(
        "{{\"kind\":\"report\",\"project\":\"l/ong\",\"external_id\":\"big\",\"title\":\"{}\"}}\n",
        "x".repeat(failpass::input::LINE_LIMIT + 1)
    );
    let body = format!(
        "{{\"kind\":\"report\",\"project\":\"l/ong\",\"external_id\":\"1\",\"title\":\"a\"}}\n{long}{{\"kind\":\"report\",\"project\":\"l/ong\",\"external_id\":\"2\",\"title\":\"b\"}}\n"
    );
    let summary: Value = app.import_ndjson(body).await.json().await.unwrap();
    assert_eq!((summary["created"].as_u64(), summary["rejected"].as_u64()), (Some(2), Some(1)), "{summary}");
    assert!(
        summary["rejections"][0]["message"].as_str().unwrap().contains("line 2: longer than the 8 MiB limit"),
        "{summary}"
    );
}

#[tokio::test]
async fn a_byte_order_mark_is_accepted_in_every_text_format() {
    let app = spawn_app().await;
    app.project("b/om").await;
    let post = |format: &'static str, ct: &'static str, body: String| {
        let c = app.client.clone();
        let url = format!("{}/api/v1/import?format={format}", app.base);
        async move {
            c.post(url)
                .header("content-type", ct)
                .body(format!("\u{feff}{body}"))
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let s = post(
        "ndjson",
        "application/x-ndjson",
        "{\"kind\":\"report\",\"project\":\"b/om\",\"external_id\":\"1\",\"title\":\"t\"}\n".into(),
    )
    .await;
    assert_eq!((s["created"].as_u64(), s["rejected"].as_u64()), (Some(1), Some(0)), "{s}");
    let issues = std::fs::read_to_string("../../shared/data/real/hf_datasets_issues_api.jsonl")
        .or_else(|_| {
            std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/data/real/hf_datasets_issues_api.jsonl"
            ))
        })
        .unwrap();
    let first: String = issues.lines().take(3).map(|l| format!("{l}\n")).collect();
    let s = post("github-issues", "application/x-ndjson", first.clone()).await;
    assert_eq!(s["rejected"], 0, "{s}");
    assert!(s["records"].as_u64().unwrap() >= 3, "{s}");
    let instances = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/real/swebench_lite_test.jsonl"
    ))
    .unwrap();
    let s = post(
        "swebench-instances",
        "application/x-ndjson",
        instances.lines().take(2).map(|l| format!("{l}\n")).collect(),
    )
    .await;
    assert_eq!(s["rejected"], 0, "{s}");
    assert!(s["records"].as_u64().unwrap() >= 2, "{s}");
}

#[tokio::test]
async fn junit_that_is_not_junit_never_stores_a_passing_run() {
    let app = spawn_app().await;
    app.project("j/u").await;
    let report = app.report(json!({"project": "j/u", "external_id": "1", "title": "t"})).await;
    let attempt = app
        .attempt(json!({"report_id": report, "agent": "a", "verdict": "hypothesis", "verdict_source": "llm"}))
        .await["id"]
        .as_i64()
        .unwrap();
    for (doc, says) in [
        ("", "empty"),
        ("all tests passed!", "text where"),
        ("<html/>", "<html>"),
        ("<testsuite name=\"s\"></testsuite>", "no test cases"),
    ] {
        let r = app
            .client
            .post(format!("{}/api/v1/import?format=junit&attempt={attempt}&environment=buggy", app.base))
            .header("content-type", "application/xml")
            .body(doc)
            .send()
            .await
            .unwrap();
        let s: Value = r.json().await.unwrap();
        assert_eq!(s["rejected"], 1, "{doc:?}: {s}");
        assert!(s["rejections"][0]["message"].as_str().unwrap().contains(says), "{doc:?}: {s}");
    }
    assert!(
        app.get(&format!("/api/v1/attempts/{attempt}")).await.body["runs"].as_array().unwrap().is_empty(),
        "no run was stored"
    );
    // The command line says so too, with exit status 3.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("results.xml");
    std::fs::write(&file, "PASSED").unwrap();
    let db = dir.path().join("f.db");
    let out = Command::new(env!("CARGO_BIN_EXE_failpass"))
        .args(["import", "--format", "junit", "--attempt", "1", "--environment", "buggy", "--database-url"])
        .arg(&db)
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stdout).contains("not a JUnit XML document"));
}

/// A real full disk: the server runs in a mount namespace of its own
/// (util-linux `unshare`) with its SQLite file on a 4 MiB tmpfs.
#[test]
fn a_full_disk_answers_503_naming_the_cause() {
    assert!(
        unsafe { libc::geteuid() } == 0,
        "this test mounts a small tmpfs: run it as root (as `cargo xtask test` does here)"
    );
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=4m tmpfs {data} && exec {bin} serve --bind 127.0.0.1:0 --workers 0 --data-dir {data}",
        data = data.display(),
        bin = env!("CARGO_BIN_EXE_failpass")
    );
    let mut child = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env("FAILPASS_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let base =
        line.split_whitespace().find(|w| w.starts_with("http://")).expect(&line).trim_end_matches('/').to_owned();
    let pid = child.id().to_string();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // An admin and a personal token, made inside the server's namespace (the database lives there).
    let inside = |args: &[&str], stdin: &str| {
        let mut c = Command::new("nsenter")
            .args(["-t", &pid, "-m", env!("CARGO_BIN_EXE_failpass")])
            .args(args)
            .arg("--data-dir")
            .arg(&data)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        String::from_utf8(c.wait_with_output().unwrap().stdout).unwrap()
    };
    inside(&["user", "add", "root-admin", "--admin", "--password-stdin"], "long enough password\n");
    let token = inside(&["token", "create", "--user", "root-admin"], "").trim().to_owned();
    assert!(token.starts_with("fp_"), "{token}");
    rt.block_on(async {
        // A fresh connection per request: the server may close one after refusing a write.
        let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
        let health = client.get(format!("{base}/healthz")).send().await.unwrap();
        assert_eq!(health.status(), 200);
        // Fill the disk from inside the server's namespace.
        let fill = Command::new("nsenter")
            .args([
                "-t",
                &pid,
                "-m",
                "sh",
                "-c",
                &format!("dd if=/dev/zero of={}/filler bs=64k 2>/dev/null; sync", data.display()),
            ])
            .status()
            .unwrap();
        let _ = fill;
        let start = Instant::now();
        let (status, body) = loop {
            let r = client.get(format!("{base}/healthz")).send().await.unwrap();
            let s = r.status().as_u16();
            let b = r.text().await.unwrap();
            if s == 503 || start.elapsed() > Duration::from_secs(10) {
                break (s, b);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(status, 503, "{body}");
        assert!(body.contains("disk is full"), "{body}");
        // A write says the same, and nothing is half-written.
        let write = || {
            client
                .post(format!("{base}/api/v1/projects"))
                .bearer_auth(&token)
                .json(&json!({"slug": "full/disk", "description": "x".repeat(200_000)}))
                .send()
        };
        let r = write().await.unwrap();
        let (s, b) = (r.status().as_u16(), r.text().await.unwrap());
        assert_eq!(s, 503, "{b}");
        assert!(b.contains("disk is full") && b.contains("nothing was changed"), "{b}");
        // Room again, then a read-only remount.
        Command::new("nsenter").args(["-t", &pid, "-m", "rm", "-f"]).arg(data.join("filler")).status().unwrap();
        // Healthy again once there is room (an answer is reused for a second).
        let start = Instant::now();
        loop {
            let r = client.get(format!("{base}/healthz")).send().await.unwrap();
            if r.status() == 200 {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "still unhealthy with room: {}",
                r.text().await.unwrap()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let r = client.get(format!("{base}/api/v1/projects/full/disk")).bearer_auth(&token).send().await.unwrap();
        assert_eq!(r.status(), 404, "the refused write left nothing behind");
    });
    let _ = Command::new("kill").args(["-INT", &pid]).status();
    let _ = child.wait();
    let _ = std::io::stdout().flush();
}

/// A read-only database: PostgreSQL sessions that may not write (a standby,
/// or `default_transaction_read_only`).
#[tokio::test]
async fn a_read_only_database_answers_503_naming_the_cause() {
    use sqlx::Connection;
    let (app, pg) = spawn_pg_app(Default::default()).await;
    assert_eq!(app.get("/healthz").await.status, 200);
    let admin_url =
        std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| crate::helpers::DEFAULT_TEST_DATABASE_URL.to_owned());
    let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
    let name = pg.url.rsplit('/').next().unwrap().to_owned();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("ALTER DATABASE {name} SET default_transaction_read_only = on")))
        .execute(&mut admin)
        .await
        .unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    let start = Instant::now();
    let health = loop {
        let r = app.get("/healthz").await;
        if r.body.to_string().contains("read-only") || start.elapsed() > Duration::from_secs(15) {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_error(&health, 503, "unavailable", "postgres is unhealthy: it is read-only");
    assert_error(
        &app.post("/api/v1/projects", &json!({"slug": "read/only"})).await,
        503,
        "unavailable",
        "it is read-only; nothing was changed",
    );
    assert_eq!(app.get("/api/v1/projects").await.status, 200, "reads still work");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("ALTER DATABASE {name} SET default_transaction_read_only = off")))
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.ok();
    drop(app);
    pg.drop_now().await;
}
