//! `failpass demo --reports N --attempts M --seed S` (issue 16): synthetic
//! history of the size asked, the same from the same seed on both engines,
//! with every route, verdict, agent and model the figures group by.

use std::process::Command;

use failpass::db::{ProjectScope, Storage};
use failpass_shared::api::figures::{FigureRow, FiguresQuery};
use failpass_shared::figures::figure_rows;
use failpass_shared::model::GroupBy;

use crate::helpers::pg_storage;

fn demo(url: &str, seed: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_failpass"))
        .args(["demo", "--reports", "400", "--attempts", "3000", "--seed", seed, "--today", "2026-06-30"])
        .args(["--database-url", url])
        .output()
        .unwrap()
}

async fn rows(s: &dyn Storage, group_by: GroupBy) -> Vec<FigureRow> {
    let q = FiguresQuery { group_by, ..Default::default() };
    figure_rows(s.figure_contributions(&q, &ProjectScope::All).await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scale_demo_is_the_same_from_the_same_seed_on_both_engines() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.db").to_string_lossy().into_owned();
    let b = dir.path().join("b.db").to_string_lossy().into_owned();
    let c = dir.path().join("c.db").to_string_lossy().into_owned();
    let out = demo(&a, "5");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // 8 projects, 400 reports, 3,000 attempts, all created.
    assert!(stdout.contains("3,408 records") && stdout.contains("3408 created, 0 updated"), "{stdout}");
    assert_eq!(demo(&b, "5").status.code(), Some(0));
    assert_eq!(demo(&c, "6").status.code(), Some(0));
    let pg = pg_storage().await;
    assert_eq!(demo(&pg.url, "5").status.code(), Some(0));

    let sa = failpass::db::connect(&a).await.unwrap();
    let sb = failpass::db::connect(&b).await.unwrap();
    let sc = failpass::db::connect(&c).await.unwrap();
    for g in [GroupBy::Project, GroupBy::Route, GroupBy::Agent, GroupBy::Model, GroupBy::Cutoff, GroupBy::Month] {
        let ra = rows(sa.as_ref(), g).await;
        assert_eq!(ra, rows(sb.as_ref(), g).await, "the same seed, the same history: {g}");
        crate::figures::assert_rows_close(&ra, &rows(pg.storage.as_ref(), g).await, &format!("both engines: {g}"));
        assert_ne!(ra, rows(sc.as_ref(), g).await, "another seed, another history: {g}");
    }
    let keys = |rows: Vec<FigureRow>| rows.into_iter().map(|r| r.key).collect::<Vec<_>>();
    assert_eq!(keys(rows(sa.as_ref(), GroupBy::Project).await).len(), 8);
    assert_eq!(keys(rows(sa.as_ref(), GroupBy::Route).await), ["agent_first", "human_first", "hypothesis"]);
    assert_eq!(keys(rows(sa.as_ref(), GroupBy::Agent).await).len(), 5);
    assert_eq!(keys(rows(sa.as_ref(), GroupBy::Model).await).len(), 5);
    assert_eq!(keys(rows(sa.as_ref(), GroupBy::Cutoff).await), ["after_cutoff", "before_cutoff"]);
    let months = keys(rows(sa.as_ref(), GroupBy::Month).await);
    assert!(months.len() >= 20 && months.last().unwrap() == "2026-06", "two years of filings: {months:?}");
    let all = &rows(sa.as_ref(), GroupBy::None).await[0];
    assert_eq!((all.reports, all.attempts), (400, 3000));
    assert!(all.reports_reproduced > 0 && all.attempts_lead > 0 && all.attempts_error > 0, "{all:?}");
    // The demo's batches copied their cells into PostgreSQL (`COPY`, from
    // a thousand rows): they equal a rebuild.
    let check = pg.storage.check_figures(false).await.unwrap();
    assert_eq!(check.differing, 0, "{:?}", check.differences);
    pg.drop_now().await;

    // Sizes it cannot make are refused by flag, and nothing is written.
    let bad = Command::new(env!("CARGO_BIN_EXE_failpass"))
        .args(["demo", "--reports", "0", "--database-url"])
        .arg(dir.path().join("d.db"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--reports: at least 1"));
    assert!(!dir.path().join("d.db").exists());
}
