//! The worker around an executor, on SQLite and PostgreSQL, with a fake
//! executor in place of sandboxed runs: it holds its lease by renewing it,
//! drops a result once another worker took the job (fenced), retries a
//! transient failure after the backoff, and fails a permanent one at once,
//! recording the error's whole cause chain.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use failpass::db::{NewReport, ProjectScope, Storage};
use failpass::db::{attempts::Verification, queue::NewJob};
use failpass::runner::worker::{WorkerOptions, spawn_pool};
use failpass::runner::{Executor, JobError};
use failpass_shared::api::attempts::CreateAttemptRequest;
use failpass_shared::api::jobs::{Job, PRIORITY_BULK};
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::api::reports::CreateReportRequest;
use failpass_shared::grading::GradeRecord;
use failpass_shared::model::{JobStatus, Verdict, VerdictSource};
use failpass_shared::routing::{RoutingConfig, RoutingInput, decide};
use tokio::sync::Notify;

use crate::helpers::run_storage_test_url;

/// What the fake does with a job, by the attempt it names.
#[derive(Clone, Copy)]
enum Act {
    /// Takes this long (longer than the lease), then grades.
    Slow(Duration),
    /// Waits for `Fake::release`, then grades.
    Hold,
    /// Fails transiently on the first try, grades on the next.
    FlakyOnce,
    /// Fails for good.
    Broken,
}

struct Fake {
    acts: HashMap<i64, Act>,
    tries: Mutex<HashMap<i64, u32>>,
    release: Notify,
}

#[async_trait]
impl Executor for Fake {
    async fn execute(&self, job: &Job, _runner: &str) -> Result<Option<Verification>, JobError> {
        let attempt = job.payload.attempt_id.unwrap();
        let try_no = {
            let mut tries = self.tries.lock().unwrap();
            let n = tries.entry(attempt).or_default();
            *n += 1;
            *n
        };
        match self.acts[&attempt] {
            Act::Slow(d) => tokio::time::sleep(d).await,
            Act::Hold => self.release.notified().await,
            Act::FlakyOnce if try_no == 1 => {
                let cause = std::io::Error::other("python3: not found");
                return Err(JobError::because("a run could not start", cause));
            }
            Act::FlakyOnce => {}
            Act::Broken => return Err(JobError::permanent(format!("attempt {attempt} names no candidate"))),
        }
        Ok(Some(Verification {
            grade: GradeRecord::because("graded by the fake"),
            ..Verification::new(attempt, Verdict::NotReproduced)
        }))
    }
}

/// A project, a report, and `n` LLM attempts waiting to be graded.
async fn attempts(s: &dyn Storage, n: usize) -> Vec<i64> {
    s.create_project(&CreateProjectRequest {
        slug: "w/lib".into(),
        name: None,
        description: None,
        public: None,
        upstream_url: None,
        benchmark: None,
    })
    .await
    .unwrap();
    let request: CreateReportRequest = serde_json::from_value(serde_json::json!({
        "project": "w/lib", "external_id": "1", "title": "softmax overflows", "body": "softmax([1000.0]) is nan"
    }))
    .unwrap();
    let decision = decide(&RoutingConfig::default(), &RoutingInput::from_request(&request));
    let report =
        s.create_report(&NewReport { request, decision, origin: Default::default() }).await.unwrap().summary.id;
    let mut ids = Vec::new();
    for _ in 0..n {
        let req = CreateAttemptRequest::new(report, "agent", Verdict::Hypothesis, VerdictSource::Llm);
        ids.push(s.create_attempt(&req).await.unwrap().0.id);
    }
    ids
}

async fn job(s: &dyn Storage, id: i64) -> Job {
    s.get_job(id, &ProjectScope::All).await.unwrap().unwrap()
}

/// Polls until `done` holds for the job (at most `secs` seconds).
async fn wait_for(s: &dyn Storage, id: i64, secs: u64, done: impl Fn(&Job) -> bool) -> Job {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let j = job(s, id).await;
        if done(&j) {
            return j;
        }
        assert!(tokio::time::Instant::now() < deadline, "job {id} stuck: {j:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn verdict(s: &dyn Storage, attempt: i64) -> Verdict {
    s.get_attempt(attempt, &ProjectScope::All).await.unwrap().unwrap().attempt.verdict
}

#[tokio::test]
async fn leases_are_renewed_fenced_and_failures_retried_or_not() {
    run_storage_test_url(|s: Arc<dyn Storage>, _url: String| async move {
        let [slow, held, flaky, broken] = attempts(s.as_ref(), 4).await[..] else { unreachable!() };
        let lease = chrono::Duration::seconds(1);
        let fake = Arc::new(Fake {
            acts: HashMap::from([
                (slow, Act::Slow(Duration::from_millis(2500))),
                (held, Act::Hold),
                (flaky, Act::FlakyOnce),
                (broken, Act::Broken),
            ]),
            tries: Mutex::default(),
            release: Notify::new(),
        });
        let options = WorkerOptions { lease, poll: Duration::from_millis(50), heartbeat: Duration::from_secs(1) };
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let pool = spawn_pool(fake.clone(), s.clone(), 1, options, stopped);
        let enqueue = |attempt: i64| {
            let s = s.clone();
            async move {
                s.enqueue(&NewJob::verify(attempt, PRIORITY_BULK, false), s.clock().await.unwrap()).await.unwrap().0.id
            }
        };

        // Renewed: a job that runs 2.5 lease lengths keeps its lease throughout.
        let id = enqueue(slow).await;
        wait_for(s.as_ref(), id, 10, |j| j.status == JobStatus::Running).await;
        tokio::time::sleep(Duration::from_millis(1600)).await;
        let now = s.clock().await.unwrap();
        assert!(
            s.claim("thief", now, lease).await.unwrap().is_none(),
            "the lease was renewed, so nobody takes the job"
        );
        let done = wait_for(s.as_ref(), id, 10, |j| j.status == JobStatus::Done).await;
        assert_eq!(done.tries, 1);
        assert_eq!(verdict(s.as_ref(), slow).await, Verdict::NotReproduced, "the result was stored");

        // Fenced: once another worker holds the job, this one's result is dropped.
        let id = enqueue(held).await;
        let running = wait_for(s.as_ref(), id, 10, |j| j.status == JobStatus::Running).await;
        let later = s.clock().await.unwrap() + chrono::Duration::seconds(5);
        let stolen = s.claim("thief", later, lease).await.unwrap().expect("an expired lease is taken over");
        assert_eq!((stolen.id, stolen.tries), (id, 2));
        tokio::time::sleep(Duration::from_millis(600)).await; // the worker's next renewal is refused
        fake.release.notify_waiters();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let after = job(s.as_ref(), id).await;
        assert_eq!((after.status, after.lease_owner.as_deref()), (JobStatus::Running, Some("thief")));
        assert_ne!(running.lease_owner.as_deref(), Some("thief"));
        assert_eq!(verdict(s.as_ref(), held).await, Verdict::Hypothesis, "the fenced worker wrote nothing");
        assert_eq!(
            s.complete(id, "thief", s.clock().await.unwrap(), None).await.unwrap(),
            failpass::db::jobs::Finish::Done
        );

        // Transient: back to the queue with the cause chain, then done on the next try (after the 5 s backoff).
        let id = enqueue(flaky).await;
        let failed = wait_for(s.as_ref(), id, 10, |j| j.last_error.is_some()).await;
        assert_eq!(failed.status, JobStatus::Queued);
        assert_eq!(failed.last_error.as_deref(), Some("a run could not start: python3: not found"));
        let done = wait_for(s.as_ref(), id, 15, |j| j.status == JobStatus::Done).await;
        assert_eq!(done.tries, 2);
        assert_eq!(verdict(s.as_ref(), flaky).await, Verdict::NotReproduced);

        // Permanent: failed at once, on its first try.
        let id = enqueue(broken).await;
        let failed = wait_for(s.as_ref(), id, 10, |j| j.status == JobStatus::Failed).await;
        assert_eq!(
            (failed.tries, failed.last_error.as_deref()),
            (1, Some(&*format!("attempt {broken} names no candidate")))
        );
        assert_eq!(verdict(s.as_ref(), broken).await, Verdict::Hypothesis);

        let _ = stop.send(true);
        for w in pool {
            w.await.unwrap();
        }
    })
    .await;
}
