//! Job queue semantics on SQLite and PostgreSQL: priorities, dedup, no double
//! claim between connections, expired leases reclaimed, stale owners fenced,
//! backoff and tries exhausted.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use failpass::db::{self, Storage};
use failpass::db::{
    jobs::{Finish, Retry},
    queue::NewJob,
};
use failpass_shared::api::jobs::{PRIORITY_BULK, PRIORITY_MANUAL};
use failpass_shared::model::JobStatus;

use crate::helpers::run_storage_test_url;

fn t0() -> DateTime<Utc> {
    "2026-06-01T12:00:00Z".parse().unwrap()
}

fn lease() -> Duration {
    Duration::seconds(30)
}

#[tokio::test]
async fn priorities_dedup_and_no_double_claim() {
    run_storage_test_url(|s: Arc<dyn Storage>, url: String| async move {
        // Leases are timed by the database's clock; it agrees with ours here.
        let skew = (s.clock().await.unwrap() - chrono::Utc::now()).num_seconds().abs();
        assert!(skew <= 2, "database clock off by {skew} s");
        let (bulk, new) = s.enqueue(&NewJob::verify(1, PRIORITY_BULK, false), t0()).await.unwrap();
        assert!(new && bulk.status == JobStatus::Queued);
        let (manual, _) = s.enqueue(&NewJob::verify(2, PRIORITY_MANUAL, true), t0()).await.unwrap();
        let (again, new) = s.enqueue(&NewJob::verify(1, PRIORITY_BULK, false), t0()).await.unwrap();
        assert_eq!((again.id, new), (bulk.id, false), "one waiting job per attempt");
        let first = s.claim("w1", t0(), lease()).await.unwrap().unwrap();
        assert_eq!(first.id, manual.id, "manual reruns go first");
        assert_eq!((first.status, first.tries, first.lease_owner.as_deref()), (JobStatus::Running, 1, Some("w1")));
        assert_eq!(first.lease_expires_at, Some(t0() + lease()));
        let second = s.claim("w2", t0(), lease()).await.unwrap().unwrap();
        assert_eq!(second.id, bulk.id);
        assert!(s.claim("w3", t0(), lease()).await.unwrap().is_none(), "nothing left");
        // A job enqueued while one for the same attempt runs waits behind it, once.
        assert!(!s.enqueue(&NewJob::verify(1, PRIORITY_MANUAL, true), t0()).await.unwrap().1);
        assert_eq!(s.complete(first.id, "w1", t0(), None).await.unwrap(), Finish::Done);
        assert_eq!(s.complete(second.id, "w2", t0(), None).await.unwrap(), Finish::Done);
        assert!(
            s.enqueue(&NewJob::verify(1, PRIORITY_BULK, false), t0()).await.unwrap().1,
            "done jobs do not block a new one"
        );
        let leftover = s.claim("w1", t0(), lease()).await.unwrap().unwrap();
        s.complete(leftover.id, "w1", t0(), None).await.unwrap();

        // 60 jobs, two separate connections (as two processes would hold), four claimers each.
        for i in 0..60 {
            s.enqueue(&NewJob::verify(1000 + i, PRIORITY_BULK, false), t0()).await.unwrap();
        }
        let other: Arc<dyn Storage> = db::connect(&url).await.unwrap();
        let mut tasks = Vec::new();
        for (n, store) in [s.clone(), other.clone()].into_iter().enumerate() {
            for k in 0..4 {
                let store = store.clone();
                tasks.push(tokio::spawn(async move {
                    let owner = format!("c{n}-{k}");
                    let mut got = Vec::new();
                    while let Some(job) = store.claim(&owner, t0(), lease()).await.unwrap() {
                        got.push(job.id);
                        tokio::task::yield_now().await;
                    }
                    got
                }));
            }
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        let distinct: HashSet<i64> = all.iter().copied().collect();
        assert_eq!((all.len(), distinct.len()), (60, 60), "every job claimed exactly once");
    })
    .await;
}

#[tokio::test]
async fn expired_leases_are_reclaimed_and_stale_owners_fenced() {
    run_storage_test_url(|s: Arc<dyn Storage>, _url: String| async move {
        let (job, _) = s.enqueue(&NewJob::verify(7, PRIORITY_BULK, false), t0()).await.unwrap();
        let a = s.claim("dead", t0(), lease()).await.unwrap().unwrap();
        assert!(s.renew(a.id, "dead", t0() + Duration::seconds(10), lease()).await.unwrap(), "the holder renews");
        assert!(
            s.claim("b", t0() + Duration::seconds(39), lease()).await.unwrap().is_none(),
            "renewed lease still held"
        );
        let b = s.claim("b", t0() + Duration::seconds(41), lease()).await.unwrap().unwrap();
        assert_eq!((b.id, b.tries, b.lease_owner.as_deref()), (job.id, 2, Some("b")), "expired lease reclaimed");
        // The old owner wakes up: everything it tries is fenced.
        assert!(!s.renew(job.id, "dead", t0() + Duration::seconds(42), lease()).await.unwrap());
        assert_eq!(s.complete(job.id, "dead", t0() + Duration::seconds(42), None).await.unwrap(), Finish::Fenced);
        assert_eq!(s.fail(job.id, "dead", t0() + Duration::seconds(42), "late", Retry::Later).await.unwrap(), None);
        assert_eq!(
            s.get_job(job.id, &failpass::db::ProjectScope::All).await.unwrap().unwrap().lease_owner.as_deref(),
            Some("b")
        );
        assert_eq!(s.complete(job.id, "b", t0() + Duration::seconds(50), None).await.unwrap(), Finish::Done);
        let done = s.get_job(job.id, &failpass::db::ProjectScope::All).await.unwrap().unwrap();
        assert_eq!((done.status, done.finished_at), (JobStatus::Done, Some(t0() + Duration::seconds(50))));
        assert_eq!(
            s.complete(job.id, "b", t0() + Duration::seconds(51), None).await.unwrap(),
            Finish::Fenced,
            "done is final"
        );
    })
    .await;
}

#[tokio::test]
async fn transient_failures_back_off_until_the_tries_run_out() {
    run_storage_test_url(|s: Arc<dyn Storage>, _url: String| async move {
        let (job, _) = s.enqueue(&NewJob::verify(9, PRIORITY_BULK, false), t0()).await.unwrap();
        let mut now = t0();
        for try_no in 1..=3 {
            let j = s.claim("w", now, lease()).await.unwrap().unwrap();
            assert_eq!((j.id, j.tries), (job.id, try_no));
            let status = s.fail(j.id, "w", now, &format!("flake {try_no}"), Retry::Later).await.unwrap().unwrap();
            if try_no < 3 {
                assert_eq!(status, JobStatus::Queued, "transient: back to the queue");
                let wait = failpass::db::jobs::backoff(try_no);
                assert!(
                    s.claim("w", now + wait - Duration::seconds(1), lease()).await.unwrap().is_none(),
                    "not before the backoff"
                );
                now += wait;
            } else {
                assert_eq!(status, JobStatus::Failed, "tries exhausted");
            }
        }
        let failed = s.get_job(job.id, &failpass::db::ProjectScope::All).await.unwrap().unwrap();
        assert_eq!((failed.status, failed.last_error.as_deref()), (JobStatus::Failed, Some("flake 3")));
        assert!(s.claim("w", now + Duration::days(1), lease()).await.unwrap().is_none());

        // Permanent errors fail at once.
        let (p, _) = s.enqueue(&NewJob::verify(10, PRIORITY_BULK, false), now).await.unwrap();
        let j = s.claim("w", now, lease()).await.unwrap().unwrap();
        assert_eq!(j.id, p.id);
        assert_eq!(
            s.fail(j.id, "w", now, "attempt 10 does not exist", Retry::Never).await.unwrap(),
            Some(JobStatus::Failed)
        );

        // A worker that dies on the last try: the expired lease fails the job.
        let (d, _) =
            s.enqueue(&NewJob { max_tries: 1, ..NewJob::verify(11, PRIORITY_BULK, false) }, now).await.unwrap();
        s.claim("gone", now, lease()).await.unwrap().unwrap();
        assert!(s.claim("w", now + Duration::seconds(60), lease()).await.unwrap().is_none());
        let dead = s.get_job(d.id, &failpass::db::ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(dead.status, JobStatus::Failed);
        assert!(dead.last_error.unwrap().contains("lease expired"));
        let overview = s.queue_overview(now + Duration::seconds(60), &failpass::db::ProjectScope::All).await.unwrap();
        assert_eq!((overview.queued, overview.running), (0, 0));
        assert_eq!(overview.recent_failures.len(), 3);
    })
    .await;
}

/// Issue 16: every sort of the queue, alone, within a project and with the
/// route, status and stuck filters, both ways and on a later page, is read
/// from an index in its order: no sort of the whole selection, no table
/// scan (the engine's own plan, on both engines).
#[tokio::test]
async fn every_sort_of_the_queue_is_read_from_an_index() {
    use failpass::db::{ProjectScope, Storage};
    use failpass_shared::api::reports::{Order, ReportListQuery, ReportSort};
    use failpass_shared::model::{ReportStatus, Route};
    crate::helpers::run_storage_test(|s: std::sync::Arc<dyn Storage>| async move {
        failpass::demo::seed(s.as_ref(), &Default::default(), chrono::Utc::now()).await.unwrap();
        let pg = s.backend() == failpass::db::Backend::Postgres;
        let mut checked = 0;
        let mut failures = Vec::new();
        for sort in ReportSort::ALL {
            for order in [Order::Desc, Order::Asc] {
                for narrow in 0..5 {
                    let mut q = ReportListQuery { sort: *sort, order, limit: 5, ..Default::default() };
                    match narrow {
                        1 => q.filter.project = Some("pytorch/pytorch".into()),
                        2 => q.filter.route = Some(Route::AgentFirst),
                        3 => q.filter.status = failpass_shared::api::reports::Statuses::of(&[ReportStatus::New]),
                        4 => q.stuck_days = Some(7),
                        _ => {}
                    }
                    let page = s.list_reports(&q, &ProjectScope::All).await.unwrap();
                    for cursor in [None, page.next_cursor] {
                        q.cursor = cursor;
                        let plan = s.explain_list_reports(&q, &ProjectScope::All).await.unwrap();
                        let text = plan.join("\n");
                        let what = format!("{sort:?} {order:?} narrow {narrow} cursor {:?}:\n{text}", q.cursor);
                        let sorted = if pg {
                            plan.iter().any(|l| l.trim_start().starts_with("Sort")) || text.contains("Incremental Sort")
                        } else {
                            text.contains("TEMP B-TREE")
                        };
                        let scanned = if pg {
                            text.contains("Seq Scan on reports")
                        } else {
                            !plan.iter().any(|l| l.contains(" r USING ") && l.contains("INDEX"))
                        };
                        if sorted || scanned {
                            failures.push(format!("{} {what}", if sorted { "sorted" } else { "scanned" }));
                        }
                        checked += 1;
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{} of {checked} plans:\n{}", failures.len(), failures.join("\n\n"));
        assert!(checked >= 100, "{checked}");
    })
    .await;
}
