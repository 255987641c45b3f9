//! Group commit for live writes. Agents submit attempts many at a time, and
//! each used to take the database's write lock for a transaction of its own
//! (with its own recount of the report and its own move of the figures'
//! rollups) while the rest waited. Now a request hands its write to its
//! storage's writer and waits for the answer; the writer takes every write
//! queued meanwhile (up to [`MAX_BATCH`]) and applies them in one
//! transaction (`sql/batch.rs`): each write inside a savepoint of its own, so
//! a bad one is rolled back alone and answered with its own error, then one
//! recount and one rollup move for all the reports the batch touched, then
//! one commit. Every request is answered after that commit (a 2xx means
//! committed) or with its own error.
//!
//! There is no waiting for a batch to fill: a write that arrives at an idle
//! writer is applied at once, and the writes that arrive while a batch
//! commits form the next one. So a lone agent sees no added latency and a
//! crowd sees its writes grouped.
//!
//! One writer per storage, that is per server process and database. On
//! PostgreSQL, writers of several processes (workers on many machines) take
//! turns at the figures' advisory lock as before. Bulk imports and the
//! command line's own commands keep their path.

use std::future::Future;
use std::pin::Pin;

use failpass_shared::api::attempts::{Attempt, CreateAttemptRequest, ReviewRequest};
use failpass_shared::api::import::Outcome;
use tokio::sync::{mpsc, oneshot};

use super::{NewRun, Origin, ProjectScope, StorageError, StorageResult};

/// Most writes one transaction takes. At about 50 µs of database work a
/// write, a full batch holds the lock for some 25 ms.
pub const MAX_BATCH: usize = 512;

/// Writes waiting for the writer before a request waits to queue its own.
const QUEUE_DEPTH: usize = 8192;

/// One live write, as its request asked for it.
#[derive(Debug)]
pub(crate) enum Write {
    Attempt(Box<CreateAttemptRequest>),
    Run(Box<NewRun>),
    Review { id: i64, req: ReviewRequest, origin: Origin, scope: ProjectScope },
    Comment { report_id: i64, text: String, origin: Origin },
}

/// What a write's request is answered with once its batch commits.
#[derive(Debug)]
pub(crate) enum Answer {
    Attempt(Attempt, Outcome),
    Run(i64, Outcome),
    Reviewed(Attempt),
    Commented,
}

/// A write and where its answer goes.
pub(crate) struct Queued {
    pub write: Write,
    pub reply: oneshot::Sender<StorageResult<Answer>>,
}

type Apply = Box<dyn Fn(Vec<Queued>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The handle requests queue their writes through.
pub(crate) struct WriteQueue {
    sender: mpsc::Sender<Queued>,
}

impl WriteQueue {
    /// Starts the writer task on the current Tokio runtime; `apply` commits
    /// a batch and answers each of its writes. The task ends when the
    /// storage (the last sender) is dropped.
    pub fn start(apply: Apply) -> Self {
        let (sender, mut receiver) = mpsc::channel::<Queued>(QUEUE_DEPTH);
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(MAX_BATCH);
            while receiver.recv_many(&mut batch, MAX_BATCH).await > 0 {
                apply(std::mem::take(&mut batch)).await;
                batch.reserve(MAX_BATCH);
            }
        });
        Self { sender }
    }

    /// Queues `write` and waits until its batch has committed (or it was refused).
    pub async fn submit(&self, write: Write) -> StorageResult<Answer> {
        let (reply, answer) = oneshot::channel();
        self.sender.send(Queued { write, reply }).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// The writer is gone (the runtime is shutting down): the write was not made.
fn stopped() -> StorageError {
    StorageError::Database(sqlx::Error::PoolClosed)
}

/// An answer of the wrong kind for its write: a bug in `sql/batch.rs`.
pub(crate) fn mismatch(what: &str) -> StorageError {
    StorageError::Corrupt(format!("the writer answered a {what} with another kind of answer"))
}
