//! Projects: the slugs everything else hangs from.

use async_trait::async_trait;

use super::{ProjectScope, StorageResult};
use failpass_shared::api::projects::{CreateProjectRequest, Project};

/// Projects: the slugs reports, jobs, environments and memberships hang
/// from. A project is public unless created private.
#[async_trait]
pub trait ProjectStore: Send + Sync {
    /// Creates a project (public unless `public` says otherwise). `Conflict` when the slug is taken.
    async fn create_project(&self, req: &CreateProjectRequest) -> StorageResult<Project>;

    /// Projects visible in `scope`, by slug.
    async fn list_projects(&self, scope: &ProjectScope) -> StorageResult<Vec<Project>>;

    /// A project by slug, or `None` when it does not exist or is outside `scope`.
    async fn get_project(&self, slug: &str, scope: &ProjectScope) -> StorageResult<Option<Project>>;
}
