//! Bulk, idempotent upserts of projects, reports, agents, attempts and runs
//! (the import API and command): one transaction a batch, an outcome a record.

use async_trait::async_trait;

use super::NewReport;
use super::StorageResult;
use failpass_shared::api::attempts::{CreateAttemptRequest, CreateRunRequest};
use failpass_shared::api::import::{AgentRecord, Outcome};
use failpass_shared::api::projects::CreateProjectRequest;

/// Bulk imports: upserts by natural key, one transaction a batch and one
/// outcome a record, so a re-sent file changes nothing.
#[async_trait]
pub trait ImportStore: Send + Sync {
    /// Upserts projects by slug: created (public unless the record or
    /// `default_public` says otherwise), updated (name, description or
    /// visibility changed; a field left out keeps its value) or unchanged.
    async fn import_projects(&self, reqs: &[CreateProjectRequest], default_public: bool)
    -> StorageResult<Vec<Outcome>>;

    /// Upserts reports by (project, external id) in one transaction, compared
    /// by content hash; a changed report is rewritten with its labels and
    /// oracle, and its attempts' counting re-derived. A missing project is
    /// that record's `Invalid` error.
    async fn import_reports(&self, news: &[NewReport]) -> StorageResult<Vec<StorageResult<Outcome>>>;

    /// Upserts agents (with their stated figures) by name.
    async fn import_agents(&self, agents: &[AgentRecord]) -> StorageResult<Vec<Outcome>>;

    /// Every agent record, by name.
    async fn list_agents(&self) -> StorageResult<Vec<AgentRecord>>;

    /// Stores a batch of attempts in one transaction, idempotently: an attempt
    /// is identified by (agent, report, attempt_key), and a keyless one by its
    /// content hash. Each request gets its own outcome: created, updated (same
    /// key, other content), unchanged, or an error (`NotFound` for a report
    /// that does not exist). The reports touched are recomputed once.
    async fn import_attempts(&self, reqs: &[CreateAttemptRequest]) -> StorageResult<Vec<StorageResult<Outcome>>>;

    /// A run from an import record: its attempt by id or natural key.
    async fn import_run(&self, req: &CreateRunRequest) -> StorageResult<Outcome>;
}
