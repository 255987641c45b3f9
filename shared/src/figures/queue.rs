//! The queue's figures: which runners are alive, how long a job takes, and
//! how long a newly queued one would wait.

use chrono::{DateTime, Utc};

use crate::api::jobs::Runner;

/// A runner is alive while its last heartbeat is younger than this.
pub const RUNNER_ALIVE_SECONDS: i64 = 30;

/// Whether `runner` reported a heartbeat within [`RUNNER_ALIVE_SECONDS`] of `now`.
pub fn runner_alive(runner: &Runner, now: DateTime<Utc>) -> bool {
    (now - runner.last_heartbeat).num_seconds() < RUNNER_ALIVE_SECONDS
}

/// The mean of job durations in seconds; `None` when there are none.
pub fn mean_seconds(durations: &[f64]) -> Option<f64> {
    (!durations.is_empty()).then(|| super::tidy(durations.iter().sum::<f64>() / durations.len() as f64))
}

/// Seconds until a newly queued job would start: the `waiting` jobs (queued
/// and running) ahead of it, each taking the mean, spread over the `alive`
/// runners. `None` with no runner alive, or with work waiting and no job
/// finished yet to time it by.
pub fn queue_wait(alive: usize, mean_job_seconds: Option<f64>, waiting: i64) -> Option<f64> {
    match (alive, mean_job_seconds) {
        (0, _) => None,
        (n, Some(mean)) => Some(super::tidy(mean * waiting as f64 / n as f64)),
        (_, None) => Some(0.0).filter(|_| waiting == 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_spreads_the_work_over_live_runners() {
        assert_eq!(queue_wait(2, Some(10.0), 6), Some(30.0));
        assert_eq!(queue_wait(0, Some(10.0), 6), None, "nobody to run it");
        assert_eq!(queue_wait(1, None, 0), Some(0.0), "nothing waiting, nothing to time");
        assert_eq!(queue_wait(1, None, 3), None, "work waiting, no finished job to time it by");
        assert_eq!(mean_seconds(&[1.0, 2.0, 6.0]), Some(3.0));
        assert_eq!(mean_seconds(&[]), None);
    }

    #[test]
    fn a_runner_is_alive_for_thirty_seconds_after_a_heartbeat() {
        let beat: DateTime<Utc> = "2026-06-01T12:00:00Z".parse().unwrap();
        let runner = Runner {
            id: "h:1:0".into(),
            host: "h".into(),
            pid: 1,
            started_at: beat,
            last_heartbeat: beat,
            current_job: None,
            jobs_done: 0,
        };
        assert!(runner_alive(&runner, beat + chrono::Duration::seconds(29)));
        assert!(!runner_alive(&runner, beat + chrono::Duration::seconds(30)));
    }
}
