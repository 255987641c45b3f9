//! Verification: sandboxed runs, environments, grading, the job queue's
//! workers and the refine loop.
//!
//! A worker ([`worker`]) claims a job and hands it to an [`Executor`]:
//! [`executors::ByKind`] sends it to [`verify::Verify`], [`recheck::Recheck`]
//! or [`refine::Refine`] by its kind. All three share a
//! [`workbench::Workbench`] (the sandbox, the environment cache, the run
//! limits); the refine loop grades each candidate through `Verify`.

pub mod bisect;
pub mod build;
pub mod deliver;
pub mod env;
pub mod env_evict;
pub mod executors;
pub mod oracle;
pub mod recheck;
pub mod refine;
pub mod release_env;
pub mod sandbox;
pub mod schedule;
pub mod sides;
pub mod snippet;
pub mod verify;
pub mod workbench;
pub mod worker;

use std::error::Error;

use async_trait::async_trait;
use failpass_shared::api::jobs::Job;

use crate::db::StorageError;
use crate::db::{attempts::Verification, jobs::Retry};

/// Carries out claimed jobs. The worker drives one and owns everything
/// around it: the lease, its renewal, completion and failure.
#[async_trait]
pub trait Executor: Send + Sync {
    /// Carries out `job` as runner `runner`: the verification to store with
    /// the job's completion (`None` for a job that stores its own result, a
    /// build), or why the job could not be carried out.
    async fn execute(&self, job: &Job, runner: &str) -> Result<Option<Verification>, JobError>;
}

/// A job that could not be carried out (as opposed to a candidate that
/// failed, which is a result).
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Retrying cannot help: the attempt is gone, the payload is wrong, this
    /// runner may not run candidates.
    #[error("{0}")]
    Permanent(String),
    /// It may work on a later try: the database, a run that could not start.
    #[error("{context}")]
    Transient {
        context: String,
        #[source]
        source: Option<Box<dyn Error + Send + Sync>>,
    },
}

impl JobError {
    pub fn permanent(message: impl Into<String>) -> Self {
        Self::Permanent(message.into())
    }

    pub fn transient(message: impl Into<String>) -> Self {
        Self::Transient { context: message.into(), source: None }
    }

    /// A transient error: `context` (what was being done) caused by `source`.
    pub fn because(context: impl Into<String>, source: impl Error + Send + Sync + 'static) -> Self {
        Self::Transient { context: context.into(), source: Some(Box::new(source)) }
    }

    pub fn retry(&self) -> Retry {
        match self {
            Self::Permanent(_) => Retry::Never,
            Self::Transient { .. } => Retry::Later,
        }
    }
}

impl From<StorageError> for JobError {
    fn from(e: StorageError) -> Self {
        JobError::because("storage", e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::cause_chain;

    #[test]
    fn the_chain_names_every_cause_once() {
        let io = std::io::Error::other("disk full");
        let e = JobError::because("storing the result", StorageError::Corrupt(io.to_string()));
        assert_eq!(cause_chain(&e), "storing the result: corrupt stored value: disk full");
        let spawn = crate::runner::sandbox::SandboxError::Spawn {
            program: "python3".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let e = JobError::because("a run could not start", spawn);
        assert_eq!(cause_chain(&e), "a run could not start: could not start `python3`: entity not found");
        assert_eq!(e.retry(), Retry::Later);
        assert_eq!(JobError::permanent("no attempt").retry(), Retry::Never);
    }
}
