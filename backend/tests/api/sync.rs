//! `failpass sync github` against a local server that answers as GitHub's
//! REST API does ("list repository issues"): real issue objects from
//! tests/fixtures/github/rest-issues.json, `since` filtering, `Link` paging
//! on `/repositories/ID/issues`, weak ETags and 304s, rate-limit headers and
//! GitHub's error bodies.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use failpass::cli::sync::{SyncOptions, SyncSummary};
use failpass::db::Storage;
use failpass::db::projects::GithubSync;
use failpass_shared::routing::RoutingConfig;
use serde_json::{Value, json};

use crate::helpers::run_storage_test;

const TOKEN: &str = "ghp_recorded_test_token";
const REPO: &str = "huggingface/datasets";

/// A request's query and headers.
type Seen = (HashMap<String, String>, HashMap<String, String>);

#[derive(Default)]
struct Github {
    base: Mutex<String>,
    issues: Mutex<Vec<Value>>,
    /// The query and headers of each request, in order.
    seen: Mutex<Vec<Seen>>,
    /// The next request is refused by the rate limit (reset in a second).
    limit_next: AtomicBool,
    /// `Link` points to another host.
    foreign_link: AtomicBool,
    remaining: AtomicU64,
}

fn etag_of(body: &str) -> String {
    // FNV-1a, as a stand-in for GitHub's opaque digest.
    let h = body.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3));
    format!("W/\"{h:016x}\"")
}

fn rate_headers(remaining: u64) -> [(&'static str, String); 5] {
    let reset = chrono::Utc::now().timestamp() + 1;
    [
        ("x-ratelimit-limit", "5000".into()),
        ("x-ratelimit-remaining", remaining.to_string()),
        ("x-ratelimit-reset", reset.to_string()),
        ("x-ratelimit-used", (5000 - remaining.min(5000)).to_string()),
        ("x-ratelimit-resource", "core".into()),
    ]
}

fn with_headers(status: StatusCode, headers: Vec<(&'static str, String)>, body: String) -> Response {
    let mut resp = (status, body).into_response();
    for (k, v) in headers {
        resp.headers_mut().insert(k, v.parse().unwrap());
    }
    resp.headers_mut().insert("content-type", "application/json; charset=utf-8".parse().unwrap());
    resp
}

async fn list_issues(
    State(gh): State<Arc<Github>>,
    repo: Option<Path<(String, String)>>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    let h: HashMap<String, String> =
        headers.iter().map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned())).collect();
    gh.seen.lock().unwrap().push((q.clone(), h.clone()));
    if repo.is_some_and(|Path((owner, name))| format!("{owner}/{name}") != REPO) {
        let body = json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest/issues/issues#list-repository-issues", "status": "404"});
        return with_headers(StatusCode::NOT_FOUND, vec![], body.to_string());
    }
    if h.get("authorization").map(String::as_str) != Some(&format!("Bearer {TOKEN}")) {
        let body =
            json!({"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest", "status": "401"});
        return with_headers(StatusCode::UNAUTHORIZED, vec![], body.to_string());
    }
    if gh.limit_next.swap(false, Ordering::SeqCst) {
        let body = json!({"message": "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api", "status": "403"});
        return with_headers(StatusCode::FORBIDDEN, rate_headers(0).into(), body.to_string());
    }
    let since = q.get("since").cloned().unwrap_or_default();
    let mut issues: Vec<Value> = gh
        .issues
        .lock()
        .unwrap()
        .iter()
        .filter(|i| i["updated_at"].as_str().unwrap() >= since.as_str())
        .cloned()
        .collect();
    issues.sort_by(|a, b| a["updated_at"].as_str().cmp(&b["updated_at"].as_str()));
    let per_page: usize = q.get("per_page").and_then(|p| p.parse().ok()).unwrap_or(30);
    let page: usize = q.get("page").and_then(|p| p.parse().ok()).unwrap_or(1);
    let pages = issues.len().div_ceil(per_page).max(1);
    let body =
        serde_json::to_string(&issues.iter().skip((page - 1) * per_page).take(per_page).collect::<Vec<_>>()).unwrap();
    let etag = etag_of(&body);
    if h.get("if-none-match") == Some(&etag) {
        // GitHub does not count a 304 against the limit.
        let mut headers: Vec<(&'static str, String)> = rate_headers(gh.remaining.load(Ordering::SeqCst)).into();
        headers.push(("etag", etag));
        return with_headers(StatusCode::NOT_MODIFIED, headers, String::new());
    }
    let remaining = gh.remaining.fetch_sub(1, Ordering::SeqCst) - 1;
    let mut headers: Vec<(&'static str, String)> = rate_headers(remaining).into();
    headers.push(("etag", etag));
    if page < pages {
        let base = if gh.foreign_link.load(Ordering::SeqCst) {
            "http://elsewhere.invalid:9".to_owned()
        } else {
            gh.base.lock().unwrap().clone()
        };
        let mut query: Vec<(String, String)> = q.into_iter().filter(|(k, _)| k != "page").collect();
        query.sort();
        let link = |p: usize| {
            let mut query = query.clone();
            query.push(("page".into(), p.to_string()));
            format!("{base}/repositories/1/issues?{}", serde_urlencoded::to_string(&query).unwrap())
        };
        headers.push(("link", format!("<{}>; rel=\"next\", <{}>; rel=\"last\"", link(page + 1), link(pages))));
    }
    with_headers(StatusCode::OK, headers, body)
}

async fn list_by_repo(
    state: State<Arc<Github>>,
    repo: Path<(String, String)>,
    q: Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    list_issues(state, Some(repo), q, headers).await
}

async fn list_by_id(
    state: State<Arc<Github>>,
    Path(_id): Path<u64>,
    q: Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    list_issues(state, None, q, headers).await
}

async fn spawn_github() -> Arc<Github> {
    let issues: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(format!("{}/tests/fixtures/github/rest-issues.json", env!("CARGO_MANIFEST_DIR")))
            .unwrap(),
    )
    .unwrap();
    let gh = Arc::new(Github { issues: Mutex::new(issues), remaining: AtomicU64::new(5000), ..Default::default() });
    let app = axum::Router::new()
        .route("/repos/{owner}/{name}/issues", axum::routing::get(list_by_repo))
        .route("/repositories/{id}/issues", axum::routing::get(list_by_id))
        .with_state(gh.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    *gh.base.lock().unwrap() = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    gh
}

fn options(gh: &Github) -> SyncOptions {
    SyncOptions {
        repo: REPO.into(),
        project: REPO.into(),
        token: Some(TOKEN.into()),
        api_url: gh.base.lock().unwrap().clone(),
        max_wait: Duration::from_secs(30),
        per_page: 4,
    }
}

async fn sync(storage: &dyn Storage, opts: &SyncOptions) -> anyhow::Result<SyncSummary> {
    let models = failpass::triage::Models::default();
    failpass::cli::sync::github(
        storage,
        &models,
        &RoutingConfig::default(),
        &failpass::cli::sync::client().unwrap(),
        opts,
    )
    .await
}

async fn labels_of(storage: &dyn Storage, number: &str) -> Option<Vec<String>> {
    let id = storage.find_report(REPO, number).await.unwrap()?;
    let r = storage.get_report(id, &failpass::db::ProjectScope::All).await.unwrap()?;
    Some(r.summary.labels)
}

#[tokio::test]
async fn sync_github_pages_resumes_asks_with_etags_and_waits_out_rate_limits() {
    run_storage_test(|s: Arc<dyn Storage>| async move {
        let gh = spawn_github().await;
        let opts = options(&gh);

        // First sync: every page (10 real items, 4 a page), pull requests skipped.
        let first = sync(s.as_ref(), &opts).await.unwrap();
        assert_eq!((first.pages, first.requests), (3, 3), "{first}");
        assert_eq!((first.created, first.updated, first.skipped), (5, 0, 5), "{first}");
        assert_eq!(first.since.as_deref(), Some("2023-03-17T13:21:12Z"), "the newest updated_at: {first}");
        assert_eq!((first.rate_remaining, first.rate_limit), (Some(4997), Some(5000)), "{first}");
        for number in ["5639", "5641", "5637", "5645", "5638"] {
            assert!(labels_of(s.as_ref(), number).await.is_some(), "issue {number} stored");
        }
        assert!(labels_of(s.as_ref(), "5636").await.is_none(), "a pull request is not a report");
        assert_eq!(labels_of(s.as_ref(), "5638").await.unwrap(), ["enhancement"]);
        {
            let seen = gh.seen.lock().unwrap();
            let (q, h) = &seen[0];
            assert_eq!(
                (q["state"].as_str(), q["sort"].as_str(), q["direction"].as_str(), q.get("since")),
                ("all", "updated", "asc", None)
            );
            assert_eq!(h["accept"], "application/vnd.github+json");
            assert_eq!(h["x-github-api-version"], "2022-11-28");
            assert!(h["user-agent"].starts_with("failpass/"), "{h:?}");
            assert!(!h.contains_key("if-none-match"), "no ETag before the first sync");
            assert_eq!(seen[2].0["page"], "3", "pages followed through Link");
        }

        // Second sync: from the cursor (the newest issue again, unchanged).
        let second = sync(s.as_ref(), &opts).await.unwrap();
        assert_eq!((second.created, second.updated, second.unchanged, second.requests), (0, 0, 1, 1), "{second}");
        assert_eq!(gh.seen.lock().unwrap().last().unwrap().0["since"], "2023-03-17T13:21:12Z");

        // Third: the same address with its ETag: 304, nothing read, no rate limit spent.
        let third = sync(s.as_ref(), &opts).await.unwrap();
        assert!(third.not_modified, "{third}");
        assert_eq!(third.rate_remaining, second.rate_remaining, "a 304 costs no rate limit");
        assert!(gh.seen.lock().unwrap().last().unwrap().1.contains_key("if-none-match"));
        assert!(third.to_string().contains("nothing changed (304)"), "{third}");

        // Upstream changes: an issue edited (labelled), a new one filed (a
        // real one, #5654). The first request hits the rate limit: waited out.
        {
            let mut issues = gh.issues.lock().unwrap();
            let edited = issues.iter_mut().find(|i| i["number"] == 5637).unwrap();
            edited["updated_at"] = json!("2023-03-20T09:00:00Z");
            edited["labels"].as_array_mut().unwrap().push(json!({"id": 1, "name": "bug", "color": "d73a4a"}));
            let all: Vec<Value> = std::fs::read_to_string(format!(
                "{}/../../shared/data/real/hf_datasets_issues_api.jsonl",
                env!("CARGO_MANIFEST_DIR")
            ))
            .ok()
            .map(|t| t.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
            .unwrap_or_default();
            let new = all.into_iter().find(|i| i["number"] == 5654).unwrap_or_else(|| {
                json!({"number": 5654, "title": "Offset overflow when executing Dataset.map", "body": "",
                    "labels": [], "state": "open", "created_at": "2023-03-21T10:32:07Z", "updated_at": "2023-03-21T10:32:07Z",
                    "html_url": "https://github.com/huggingface/datasets/issues/5654"})
            });
            issues.push(new);
        }
        gh.limit_next.store(true, Ordering::SeqCst);
        let fourth = sync(s.as_ref(), &opts).await.unwrap();
        assert_eq!((fourth.created, fourth.updated, fourth.unchanged), (1, 1, 1), "{fourth}");
        assert!(fourth.waited >= Duration::from_secs(1), "the rate limit was waited out: {fourth}");
        assert_eq!(fourth.since.as_deref(), Some("2023-03-21T10:32:07Z"));
        assert_eq!(labels_of(s.as_ref(), "5637").await.unwrap(), ["bug"]);

        // Refusals: named, and the cursor is kept.
        let kept = s.github_sync(REPO).await.unwrap().unwrap();
        let bad_token = SyncOptions { token: Some("wrong".into()), ..options(&gh) };
        let e = sync(s.as_ref(), &bad_token).await.unwrap_err().to_string();
        assert!(e.contains("401") && e.contains("Bad credentials") && e.contains("GITHUB_TOKEN"), "{e}");
        let e = sync(s.as_ref(), &SyncOptions { repo: "huggingface/nope".into(), ..options(&gh) })
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("not found (404)") && e.contains("huggingface/nope"), "{e}");
        assert_eq!(s.github_sync(REPO).await.unwrap().unwrap(), kept, "a refused sync changes nothing");

        // A rate limit longer than allowed: stops, keeps what it has.
        gh.limit_next.store(true, Ordering::SeqCst);
        let e = sync(s.as_ref(), &SyncOptions { max_wait: Duration::ZERO, ..options(&gh) })
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("rate limit") && e.contains("resumes from 2023-03-21T10:32:07Z"), "{e}");

        // A Link to another host is not followed (the token would go there).
        let other = SyncOptions { project: "mirror/datasets".into(), ..options(&gh) };
        gh.foreign_link.store(true, Ordering::SeqCst);
        let e = sync(s.as_ref(), &other).await.unwrap_err().to_string();
        assert!(e.contains("elsewhere.invalid") && e.contains("not sent there"), "{e}");
        let partial = s.github_sync("mirror/datasets").await.unwrap().unwrap();
        assert_eq!(
            partial,
            GithubSync {
                repo: REPO.into(),
                since: Some("2023-03-16T14:20:44Z".into()),
                etag: None,
                etag_url: None
            },
            "the first page is kept, and the next sync resumes after it"
        );
    })
    .await;
}

#[tokio::test]
async fn sync_github_from_the_command_line() {
    let gh = spawn_github().await;
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_failpass");
    let run = async |args: &[&str], token: Option<&str>| {
        let mut cmd = tokio::process::Command::new(bin);
        cmd.args(["sync", "github"]).args(args).arg("--data-dir").arg(dir.path()).env_remove("GITHUB_TOKEN");
        if let Some(t) = token {
            cmd.env("GITHUB_TOKEN", t);
        }
        cmd.output().await.unwrap()
    };
    let api = gh.base.lock().unwrap().clone();
    let out = run(&[REPO, "--api-url", &api], Some(TOKEN)).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("5 created") && stdout.contains("5 pull requests skipped"), "{stdout}");
    assert!(!stdout.contains(TOKEN), "the token is never printed");

    for (args, needle) in [
        (vec!["datasets", "--api-url", &api], "not OWNER/NAME"),
        (vec![REPO, "--api-url", "ftp://x"], "not an http(s) address"),
        (vec![REPO, "--api-url", &api, "--project", "no spaces allowed"], "project `no spaces allowed`"),
    ] {
        let out = run(&args, Some(TOKEN)).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(needle) && !stderr.contains("panicked"), "{needle}: {stderr}");
    }
    let out = run(&[REPO, "--api-url", &api], None).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("60 requests an hour") && stderr.contains("401"), "{stderr}");
}
