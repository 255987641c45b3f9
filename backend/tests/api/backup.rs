//! `failpass backup`, restored and compared on both engines: what the
//! restored database exports is what the original exports, and its
//! maintained figures equal a recomputation (docs/deploy.md's steps).

use std::process::Output;

use crate::helpers::*;
use sqlx::Connection;

/// Runs the failpass binary with `args`.
async fn failpass(args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_failpass"))
        .args(args)
        .env("FAILPASS_LOG", "warn")
        .output()
        .await
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Everything `failpass export all` writes of a database, which must not be empty.
async fn export_all(url: &str) -> String {
    let out = failpass(&["export", "all", "--database-url", url]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let all = text(&out.stdout);
    assert!(all.lines().count() > 100, "{all}");
    all
}

/// The figures of `url` equal a recomputation from its rows.
async fn figures_hold(url: &str) {
    let out = failpass(&["check-figures", "--dry-run", "--database-url", url]).await;
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("equal the recomputation"), "{}", text(&out.stdout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_backup_taken_while_serving_restores_to_the_same_data() {
    let app = spawn_app_with_demo().await;
    let db = app.data_dir().join("failpass.db").to_string_lossy().into_owned();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("backups/failpass-backup.db");
    let file_arg = file.to_string_lossy().into_owned();
    // Taken while the server stores attempts beside it: the copy is one
    // moment's database, whole (its figures agree with its rows), holding
    // what was stored before it and maybe some of what came during it.
    let count = |url: String| async move {
        let out = failpass(&["export", "attempts", "--format", "ndjson", "--database-url", &url]).await;
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout).lines().count()
    };
    let before = count(db.clone()).await;
    let writes = {
        let (client, base) = (app.client.clone(), app.base.clone());
        let report = app
            .report(serde_json::json!({"project": "fastnum/fastnum", "external_id": "9001", "title": "backup"}))
            .await;
        tokio::spawn(async move {
            for i in 0..40 {
                let body = serde_json::json!({"report_id": report, "agent": format!("writer-{i}"), "verdict": "hypothesis",
                    "verdict_source": "llm", "cost_usd": 0.01});
                let r = client.post(format!("{base}/api/v1/attempts")).json(&body).send().await.unwrap();
                assert_eq!(r.status(), 201);
            }
        })
    };
    let out = failpass(&["backup", "--database-url", &db, "--to", &file_arg]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("written in"), "{}", text(&out.stdout));
    writes.await.unwrap();
    let during = dir.path().join("during.db");
    std::fs::copy(&file, &during).unwrap();
    let during = during.to_string_lossy().into_owned();
    figures_hold(&during).await;
    let (copied, after) = (count(during.clone()).await, count(db.clone()).await);
    assert!(before <= copied && copied <= after && after == before + 40, "{before} <= {copied} <= {after}");

    // Taken when the writes are done and restored (the file in place of
    // failpass.db in a new data directory): the same records as the original.
    std::fs::remove_file(&file).unwrap();
    let out = failpass(&["backup", "--database-url", &db, "--to", &file_arg]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let restored = tempfile::tempdir().unwrap();
    let restored_db = restored.path().join("failpass.db");
    std::fs::copy(&file, &restored_db).unwrap();
    let restored_url = restored_db.to_string_lossy().into_owned();
    assert_eq!(export_all(&restored_url).await, export_all(&db).await);
    figures_hold(&restored_url).await;

    // A backup is never written over; a database that is not there is not
    // backed up (nor created).
    let before = std::fs::metadata(&file).unwrap().len();
    let out = failpass(&["backup", "--database-url", &db, "--to", &file_arg]).await;
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("exists"), "{}", text(&out.stderr));
    assert_eq!(std::fs::metadata(&file).unwrap().len(), before);
    let missing = dir.path().join("nowhere/failpass.db");
    let out =
        failpass(&["backup", "--database-url", &missing.to_string_lossy(), "--to", &format!("{file_arg}.2")]).await;
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("no database at"), "{}", text(&out.stderr));
    assert!(!missing.exists());
}

#[tokio::test]
async fn a_postgres_backup_restores_into_an_empty_database() {
    let source = pg_storage().await;
    let out =
        failpass(&["demo", "--reports", "300", "--attempts", "3000", "--seed", "3", "--database-url", &source.url])
            .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("failpass.dump").to_string_lossy().into_owned();
    let out = failpass(&["backup", "--database-url", &source.url, "--to", &file]).await;
    assert!(out.status.success(), "{}", text(&out.stderr));

    // Restored into a database of its own, as docs/deploy.md says.
    let name = format!("failpass_restore_{}", uuid::Uuid::new_v4().simple());
    let mut admin = sqlx::PgConnection::connect(&source.admin_url).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).execute(&mut admin).await.unwrap();
    let base = source.url.rsplit_once('/').unwrap().0.to_owned();
    let target = format!("{base}/{name}");
    let restore = tokio::process::Command::new("pg_restore")
        .args(["--no-owner", "--exit-on-error", "-d", &target, &file])
        .output()
        .await
        .unwrap();
    assert!(restore.status.success(), "{}", text(&restore.stderr));
    let (original, copy) = (export_all(&source.url).await, export_all(&target).await);
    let same = original == copy;
    figures_hold(&target).await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")))
        .execute(&mut admin)
        .await
        .unwrap();
    source.drop_now().await;
    assert!(same, "the restored database exports something else");
}
