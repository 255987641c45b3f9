//! Environments (the recipes runners build) and failure-signature groups.

use async_trait::async_trait;

use super::StorageResult;
use chrono::{DateTime, Utc};
use failpass_shared::api::jobs::{CreateEnvironmentRequest, Environment};
use failpass_shared::api::jobs::{Recipe, SignatureGroup};

/// Environments (named recipes a runner builds for the buggy and the fixed
/// side) and failure-signature groups.
#[async_trait]
pub trait EnvironmentStore: Send + Sync {
    /// Failure signature groups over graded attempts (optionally one project's).
    async fn signature_groups(
        &self,
        project: Option<&str>,
        scope: &super::ProjectScope,
    ) -> StorageResult<Vec<SignatureGroup>>;

    /// Creates or replaces (by name) an environment of `project`. `Invalid`
    /// (field `project`) when the project does not exist.
    async fn create_environment(&self, project: &str, req: &CreateEnvironmentRequest) -> StorageResult<Environment>;

    /// A project's environments, by role then name; empty for a project
    /// that does not exist.
    async fn list_environments(&self, project: &str) -> StorageResult<Vec<Environment>>;
}

#[derive(sqlx::FromRow)]
pub struct EnvironmentRow {
    pub id: i64,
    pub project: String,
    pub name: String,
    pub role: String,
    pub recipe: sqlx::types::Json<Recipe>,
    pub recipe_hash: String,
    pub created_at: DateTime<Utc>,
}

impl EnvironmentRow {
    pub fn into_environment(self) -> StorageResult<Environment> {
        Ok(Environment {
            id: self.id,
            project: self.project,
            name: self.name,
            role: super::rows::parse(&self.role, "environments.role")?,
            recipe: self.recipe.0,
            recipe_hash: self.recipe_hash,
            created_at: self.created_at,
        })
    }
}
