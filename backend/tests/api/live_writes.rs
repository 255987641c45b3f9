//! Group commit (issue 36): writes sent together are applied in one
//! transaction, and each is still answered on its own; a 2xx means committed,
//! even when the server is killed a moment later.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use failpass::db::{Origin, ProjectScope, Storage, StorageError};
use failpass_shared::api::attempts::{AttemptListQuery, CreateAttemptRequest};
use failpass_shared::api::import::Outcome;
use failpass_shared::model::{TokenScope, Verdict, VerdictSource};
use futures_util::future::join_all;

use crate::helpers::{pg_storage, run_storage_test};
use crate::storage::{CRASH, project, report};

/// A public project with two reports: the first with a crash's signature to
/// grade by, the second vague (nothing to grade by); its id and theirs.
async fn setup(s: &dyn Storage) -> (i64, [i64; 2]) {
    project(s, "live/writes", true).await;
    let filed = "2026-11-01T00:00:00Z";
    let r1 = report(s, "live/writes", "1", "f crashes", CRASH, filed, None).await;
    let r2 = report(s, "live/writes", "2", "pmap slow", "slow", filed, None).await;
    let project = s.get_project("live/writes", &ProjectScope::All).await.unwrap().expect("the project");
    (project.id, [r1, r2])
}

fn lead(report_id: i64, key: &str, cost: f64) -> CreateAttemptRequest {
    CreateAttemptRequest {
        cost_usd: Some(cost),
        attempt_key: Some(key.into()),
        ..CreateAttemptRequest::new(report_id, "agent-x", Verdict::Lead, VerdictSource::Llm)
    }
}

/// What each write of the crowd below is, and so what its answer must be.
enum Sent {
    /// A new attempt, on its report.
    New(i64),
    /// The same attempt as the write at this index, again.
    Retry(usize),
    /// The key of the write at this index with other content.
    Clash(usize),
    Missing,
    /// A deterministic grade on a report without a deterministic oracle.
    Ungradable,
}

#[tokio::test]
async fn writes_sent_together_are_grouped_and_each_answered_on_both_engines() {
    run_storage_test(|s| async move {
        let (_, [r1, r2]) = setup(s.as_ref()).await;
        let mut sent = Vec::new();
        let mut reqs = Vec::new();
        let report_of = |i: usize| if i.is_multiple_of(2) { r1 } else { r2 };
        for i in 0..150usize {
            let (what, req) = match i % 5 {
                0 | 1 => (Sent::New(report_of(i)), lead(report_of(i), &format!("k{i}"), 0.5)),
                2 => (Sent::Retry(i - 2), lead(report_of(i - 2), &format!("k{}", i - 2), 0.5)),
                3 => (Sent::Clash(i - 2), lead(report_of(i - 2), &format!("k{}", i - 2), 9.0)),
                _ if i % 10 == 4 => (Sent::Missing, lead(987_654, &format!("k{i}"), 0.5)),
                _ => {
                    let mut req = lead(r2, &format!("k{i}"), 0.5);
                    req.verdict = Verdict::Reproduced;
                    req.verdict_source = VerdictSource::Deterministic;
                    (Sent::Ungradable, req)
                }
            };
            sent.push(what);
            reqs.push(req);
        }
        // Comments ride along in the same batches, one on a report that is not there.
        let origin = Origin { actor: "maintainer".into(), ..Default::default() };
        let comments = (0..10).map(|i| {
            let (s, origin) = (s.clone(), origin.clone());
            let report = if i == 9 { 987_654 } else { r1 };
            async move { s.comment_report(report, &format!("comment {i}"), &origin).await }
        });
        // Every write is queued before the writer runs (one poll sends them all).
        let writes = reqs.iter().map(|r| s.create_attempt(r));
        let (answers, commented) = futures_util::join!(join_all(writes), join_all(comments));

        // The writes are queued in no set order, so of a pair (a new attempt
        // and its retry, or its clash) either may come first.
        let mut created = 0;
        for (i, answer) in answers.iter().enumerate() {
            match (&sent[i], answer) {
                (Sent::New(_), _) => {}
                (Sent::Retry(of), Ok((a, outcome))) => {
                    let Ok((first, first_outcome)) = &answers[*of] else { panic!("write {of}: {:?}", answers[*of]) };
                    assert_eq!(a.id, first.id, "write {i} is write {of} again");
                    let mut both = [*outcome, *first_outcome];
                    both.sort_by_key(|o| *o == Outcome::Unchanged);
                    assert_eq!(both, [Outcome::Created, Outcome::Unchanged], "writes {of} and {i}");
                    created += 1;
                }
                (Sent::Clash(of), mine) => {
                    let pair = [mine, &answers[*of]];
                    let stored = pair.iter().filter(|a| matches!(a, Ok((_, Outcome::Created)))).count();
                    let refused = pair
                        .iter()
                        .filter(|a| matches!(a, Err(StorageError::Conflict(m)) if m.contains("already has")))
                        .count();
                    assert_eq!((stored, refused), (1, 1), "writes {of} and {i}: {pair:?}");
                    created += 1;
                }
                (Sent::Missing, Err(StorageError::NotFound(m))) => assert!(m.contains("987654"), "{m}"),
                (Sent::Ungradable, Err(StorageError::Invalid { field, .. })) => assert_eq!(field, "verdict_source"),
                (_, other) => panic!("write {i}: unexpected answer {other:?}"),
            }
        }
        for (i, answer) in answers.iter().enumerate() {
            if let (Sent::New(report), Ok((a, _))) = (&sent[i], answer) {
                assert_eq!(a.report_id, *report, "write {i}");
            }
        }
        assert_eq!(created, 60, "every new attempt was stored once");
        for (i, c) in commented.iter().enumerate() {
            match (i, c) {
                (9, Err(StorageError::NotFound(m))) => assert!(m.contains("987654"), "{m}"),
                (9, other) => panic!("a comment on a missing report: {other:?}"),
                (_, other) => assert!(other.is_ok(), "comment {i}: {other:?}"),
            }
        }

        // What was answered is what is stored, counted and in the figures.
        let stored = s
            .list_attempts(&AttemptListQuery { limit: 500, ..Default::default() }, &ProjectScope::All)
            .await
            .unwrap()
            .items;
        assert_eq!(stored.len(), 60);
        for report in [r1, r2] {
            let detail = s.get_report(report, &ProjectScope::All).await.unwrap().unwrap();
            assert_eq!(detail.summary.attempts, 30, "report {report}'s counter");
        }
        let check = s.check_figures(false).await.unwrap();
        assert!(check.differences.is_empty(), "the rollups are a rebuild's: {:?}", check.differences);
        let life = s.life_cycle(r1).await.unwrap().unwrap();
        assert_eq!(life.activity.iter().filter(|a| a.kind == "comment").count(), 9);
    })
    .await;
}

/// The attempts the crowd below was answered 2xx for, as (id, key).
type Answered = Arc<Mutex<Vec<(i64, String)>>>;

/// Starts `failpass serve` on `url`; its process and base URL.
fn serve(url: &str, dir: &std::path::Path) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_failpass"))
        .args(["serve", "--bind", "127.0.0.1:0", "--workers", "0", "--database-url", url, "--data-dir"])
        .arg(dir)
        .env("FAILPASS_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let base = line.split_whitespace().find(|w| w.starts_with("http://")).expect("the URL it serves").to_owned();
    (child, base.trim_end_matches('/').to_owned())
}

/// 32 agents post attempts as fast as they are answered until the server
/// is killed (SIGKILL) mid-run; every attempt answered 201 is stored after.
async fn killed_mid_run_keeps_every_answered_write(url: String, storage: Arc<dyn Storage>, dir: &std::path::Path) {
    let (project, [r1, r2]) = setup(storage.as_ref()).await;
    let token = failpass::auth::tokens::create(
        storage.as_ref(),
        failpass::auth::tokens::TokenRequest {
            name: "agents".into(),
            scope: TokenScope::Agent,
            project_id: Some(project),
            user_id: None,
            created_by: "tests".into(),
            expires_in_days: None,
        },
    )
    .await
    .unwrap()
    .0;
    let (mut child, base) = serve(&url, dir);
    let answered: Answered = Arc::default();
    let client = crate::helpers::client_with_token(&token);
    let agents: Vec<_> = (0..32)
        .map(|agent| {
            let (client, base, answered) = (client.clone(), base.clone(), answered.clone());
            tokio::spawn(async move {
                for n in 0.. {
                    let key = format!("a{agent}-{n}");
                    let report = if n % 2 == 0 { r1 } else { r2 };
                    let sent =
                        client.post(format!("{base}/api/v1/attempts")).json(&lead(report, &key, 0.25)).send().await;
                    let Ok(response) = sent else { break };
                    if response.status() != 201 {
                        break;
                    }
                    let Ok(body) = response.json::<serde_json::Value>().await else { break };
                    answered.lock().unwrap().push((body["id"].as_i64().unwrap(), key));
                }
            })
        })
        .collect();
    // Killed once writes are flowing: at least 300 answered (or 20 s, which fails below).
    let started = Instant::now();
    while answered.lock().unwrap().len() < 300 && started.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Command::new("kill").args(["-KILL", &child.id().to_string()]).status().unwrap();
    child.wait().unwrap();
    for a in agents {
        a.await.unwrap();
    }
    let answered = answered.lock().unwrap().clone();
    assert!(answered.len() >= 300, "only {} writes were answered before the kill", answered.len());

    // Opened again, as the next server would.
    drop(storage);
    let storage = failpass::db::connect(&url).await.unwrap();
    storage.migrate().await.unwrap();
    let stored: BTreeMap<i64, Option<String>> = storage
        .list_attempts(&AttemptListQuery { limit: 1000, ..Default::default() }, &ProjectScope::All)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|a| (a.id, a.attempt_key))
        .collect();
    for (id, key) in &answered {
        assert_eq!(stored.get(id), Some(&Some(key.clone())), "attempt {id} ({key}) was answered 201 and is lost");
    }
    let check = storage.check_figures(false).await.unwrap();
    assert!(check.differences.is_empty(), "the rollups after the kill: {:?}", check.differences);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_during_live_writes_loses_no_answered_write_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("failpass.db").to_string_lossy().into_owned();
    let storage = failpass::db::connect(&url).await.unwrap();
    storage.migrate().await.unwrap();
    killed_mid_run_keeps_every_answered_write(url, storage, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_during_live_writes_loses_no_answered_write_on_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let pg = pg_storage().await;
    killed_mid_run_keeps_every_answered_write(pg.url.clone(), pg.storage.clone(), dir.path()).await;
    pg.drop_now().await;
}
