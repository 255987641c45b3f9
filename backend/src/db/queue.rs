//! What goes into the job queue: a job to enqueue, and the one insert every
//! path shares (the dedup key, the project it belongs to). Creating an
//! attempt queues its verification through here in the same transaction.

use failpass_shared::api::jobs::JobPayload;
use failpass_shared::model::JobKind;

/// A job to enqueue.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    pub kind: JobKind,
    pub payload: JobPayload,
    pub priority: i32,
    pub max_tries: i64,
    /// At most one waiting or running job per key (`verify:42`).
    pub dedup_key: Option<String>,
}

impl NewJob {
    /// Runs the refine loop on a report.
    pub fn refine(report_id: i64, priority: i32, manual: bool) -> Self {
        Self {
            kind: JobKind::Refine,
            payload: JobPayload { report_id: Some(report_id), manual, ..Default::default() },
            priority,
            max_tries: 2,
            dedup_key: Some(format!("refine:{report_id}")),
        }
    }

    /// Re-checks a reproduced attempt against the environment named `environment`.
    pub fn recheck(attempt_id: i64, environment: &str, priority: i32, manual: bool) -> Self {
        Self {
            kind: JobKind::Recheck,
            payload: JobPayload {
                attempt_id: Some(attempt_id),
                environment: Some(environment.to_owned()),
                manual,
                ..Default::default()
            },
            priority,
            max_tries: 3,
            dedup_key: Some(format!("recheck:{attempt_id}:{environment}")),
        }
    }

    /// Builds an environment now (the set-up page's "build now"): one
    /// waiting build per environment; a build that fails is a result, not a retry.
    pub fn build(environment_id: i64) -> Self {
        Self {
            kind: JobKind::Build,
            payload: JobPayload { environment_id: Some(environment_id), manual: true, ..Default::default() },
            priority: failpass_shared::api::jobs::PRIORITY_MANUAL,
            max_tries: 2,
            dedup_key: Some(format!("build:{environment_id}")),
        }
    }

    /// Bisects a report's releases with an attempt's candidate (one waiting per report).
    pub fn bisect(report_id: i64, attempt_id: i64) -> Self {
        Self {
            kind: JobKind::Bisect,
            payload: JobPayload {
                report_id: Some(report_id),
                attempt_id: Some(attempt_id),
                manual: true,
                ..Default::default()
            },
            priority: failpass_shared::api::jobs::PRIORITY_MANUAL,
            max_tries: 2,
            dedup_key: Some(format!("bisect:{report_id}")),
        }
    }

    /// Validates a maintainer's draft oracle for `report_id` (one waiting per draft).
    pub fn oracle(draft_id: i64, report_id: i64) -> Self {
        Self {
            kind: JobKind::Oracle,
            payload: JobPayload {
                oracle_draft_id: Some(draft_id),
                report_id: Some(report_id),
                manual: true,
                ..Default::default()
            },
            priority: failpass_shared::api::jobs::PRIORITY_MANUAL,
            max_tries: 3,
            dedup_key: Some(format!("oracle:{draft_id}")),
        }
    }

    /// Posts one outgoing webhook delivery. Before verification jobs (it
    /// takes a moment); eight tries, 5 s to 10 min apart (`jobs::backoff`).
    pub fn deliver(delivery_id: i64, report_id: Option<i64>) -> Self {
        Self {
            kind: JobKind::Deliver,
            payload: JobPayload { delivery_id: Some(delivery_id), report_id, ..Default::default() },
            priority: failpass_shared::api::jobs::PRIORITY_MANUAL + 10,
            max_tries: 8,
            dedup_key: Some(format!("deliver:{delivery_id}")),
        }
    }

    pub fn verify(attempt_id: i64, priority: i32, manual: bool) -> Self {
        Self {
            kind: JobKind::Verify,
            payload: JobPayload { attempt_id: Some(attempt_id), manual, ..Default::default() },
            priority,
            max_tries: 3,
            dedup_key: Some(format!("verify:{attempt_id}")),
        }
    }
}
