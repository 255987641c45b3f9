//! Environments (the recipes runners build) and failure-signature groups.

use async_trait::async_trait;

use super::StorageResult;
use chrono::{DateTime, Utc};
use failpass_shared::api::jobs::{CreateEnvironmentRequest, Environment};
use failpass_shared::api::jobs::{EnvironmentBuild, Recipe, SignatureGroup};
use failpass_shared::model::BuildStatus;

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

    /// One environment by id, whatever its project (callers check access).
    async fn environment(&self, id: i64) -> StorageResult<Option<Environment>>;

    /// Records that a build of `environment_id` (its recipe `recipe_hash`)
    /// started, as job `job_id`; its id.
    async fn start_build(&self, environment_id: i64, job_id: Option<i64>, recipe_hash: &str) -> StorageResult<i64>;

    /// Ends a build with its status and everything it printed.
    async fn finish_build(&self, build_id: i64, status: BuildStatus, log: &str) -> StorageResult<()>;

    /// Ends an environment's running builds as failed (their job failed for
    /// good: a runner died, or the database did not answer), saying why.
    async fn fail_running_builds(&self, environment_id: i64, why: &str) -> StorageResult<()>;

    /// The newest build of each of a project's environments that has one.
    async fn latest_builds(&self, project: &str) -> StorageResult<Vec<EnvironmentBuild>>;
}

#[derive(sqlx::FromRow)]
pub struct BuildRow {
    pub id: i64,
    pub environment_id: i64,
    pub job_id: Option<i64>,
    pub recipe_hash: String,
    pub status: String,
    pub log: String,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
}

impl BuildRow {
    pub fn into_build(self) -> StorageResult<EnvironmentBuild> {
        Ok(EnvironmentBuild {
            id: self.id,
            environment_id: self.environment_id,
            job_id: self.job_id,
            recipe_hash: self.recipe_hash,
            status: super::rows::parse(&self.status, "environment_builds.status")?,
            log: self.log,
            started_at: self.started_at,
            finished_at: self.finished_at,
        })
    }
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
