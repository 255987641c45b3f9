//! Projects: the slugs everything else hangs from.

use async_trait::async_trait;

use super::{ProjectScope, StorageResult};
use failpass_shared::api::projects::{CreateProjectRequest, Project, UpdateProjectRequest};

/// Projects: the slugs reports, jobs, environments and memberships hang
/// from. A project is public unless created private.
#[async_trait]
pub trait ProjectStore: Send + Sync {
    /// Creates a project (public unless `public` says otherwise). `Conflict` when the slug is taken.
    async fn create_project(&self, req: &CreateProjectRequest) -> StorageResult<Project>;

    /// Changes a project's name, description, visibility or upstream address
    /// (what `req` gives; an empty description or address removes it).
    /// `NotFound` when there is no such project.
    async fn update_project(&self, slug: &str, req: &UpdateProjectRequest) -> StorageResult<Project>;

    /// Projects visible in `scope`, by slug.
    async fn list_projects(&self, scope: &ProjectScope) -> StorageResult<Vec<Project>>;

    /// A project by slug, or `None` when it does not exist or is outside `scope`.
    async fn get_project(&self, slug: &str, scope: &ProjectScope) -> StorageResult<Option<Project>>;

    /// Sets (or with `None` removes) a project's GitHub webhook secret.
    /// `Invalid` (field `project`) when the project does not exist.
    async fn set_webhook_secret(&self, slug: &str, secret: Option<&str>) -> StorageResult<()>;

    /// The project (its slug, matched case-insensitively: GitHub's
    /// `full_name` keeps the owner's capitals) and its webhook secret, when it has one.
    async fn webhook_secret(&self, repo: &str) -> StorageResult<Option<(String, String)>>;

    /// Whether a webhook delivery with this id was recorded.
    async fn delivery_seen(&self, delivery_id: &str) -> StorageResult<bool>;

    /// Records a handled delivery (a repeat of the id is ignored).
    async fn record_delivery(&self, delivery_id: &str, project: &str, event: &str, outcome: &str) -> StorageResult<()>;

    /// Where the last `failpass sync github` of a project ended, if it ran.
    async fn github_sync(&self, project: &str) -> StorageResult<Option<GithubSync>>;

    /// Stores where a sync of a project ended (replacing what was there).
    async fn save_github_sync(&self, project: &str, state: &GithubSync) -> StorageResult<()>;
}

/// Where a project's GitHub sync ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct GithubSync {
    /// The repository polled, `OWNER/NAME`.
    pub repo: String,
    /// The newest `updated_at` stored, GitHub's text (the next `since`).
    pub since: Option<String>,
    /// The ETag of the last first page, and the address it answered.
    pub etag: Option<String>,
    pub etag_url: Option<String>,
}
