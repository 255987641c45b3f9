//! The SQL of environments and signature groups, written once for both engines
//! (see `mod.rs`).

use crate::db::common;
use crate::db::environments::*;
use async_trait::async_trait;
use failpass_shared::api::jobs::SignatureGroup;
use failpass_shared::api::jobs::{CreateEnvironmentRequest, Environment, EnvironmentBuild};
use failpass_shared::model::BuildStatus;

use super::Engine;
use crate::db::{ProjectScope, StorageError, StorageResult};

#[async_trait]
impl EnvironmentStore for Engine {
    async fn signature_groups(
        &self,
        project: Option<&str>,
        scope: &ProjectScope,
    ) -> StorageResult<Vec<SignatureGroup>> {
        let visible = scope.sql("p");
        let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT a.failure_signature, COUNT(*), COUNT(DISTINCT a.report_id), \
             COALESCE(SUM(CASE WHEN a.verdict = 'reproduced' THEN 1 ELSE 0 END), 0) \
             FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
             WHERE a.failure_signature IS NOT NULL AND {visible} AND ($1 IS NULL OR p.slug = $1) \
             GROUP BY a.failure_signature ORDER BY COUNT(*) DESC, a.failure_signature LIMIT 200"
        )))
        .bind(project)
        .fetch_all(&self.read)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for (signature, attempts, reports, reproduced) in rows {
            let refs: Vec<(i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT DISTINCT a.report_id, r.external_id FROM attempts a JOIN reports r ON r.id = a.report_id \
                 JOIN projects p ON p.id = r.project_id \
                 WHERE a.failure_signature = $1 AND {visible} AND ($2 IS NULL OR p.slug = $2) ORDER BY a.report_id LIMIT 10"
            )))
            .bind(&signature)
            .bind(project)
            .fetch_all(&self.read)
            .await?;
            let (report_ids, report_numbers) = refs.into_iter().unzip();
            out.push(SignatureGroup { signature, attempts, reports, reproduced, report_ids, report_numbers });
        }
        Ok(out)
    }

    async fn create_environment(&self, project: &str, req: &CreateEnvironmentRequest) -> StorageResult<Environment> {
        use sqlx::types::Json;
        let mut tx = self.write.begin().await?;
        let project_id = Self::project_id(&mut tx, project).await?;
        let name = req.name.trim();
        sqlx::query(
            "INSERT INTO environments (project_id, name, role, recipe, recipe_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (project_id, name) DO UPDATE SET role = $3, recipe = $4, recipe_hash = $5",
        )
        .bind(project_id)
        .bind(name)
        .bind(req.role.as_str())
        .bind(Json(&req.recipe))
        .bind(req.recipe.hash())
        .bind(common::now())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.list_environments(project)
            .await?
            .into_iter()
            .find(|e| e.name == name)
            .ok_or_else(|| StorageError::NotFound(format!("environment `{name}`")))
    }

    async fn environment(&self, id: i64) -> StorageResult<Option<Environment>> {
        let row: Option<EnvironmentRow> = sqlx::query_as(
            "SELECT e.id, p.slug AS project, e.name, e.role, e.recipe, e.recipe_hash, e.created_at \
             FROM environments e JOIN projects p ON p.id = e.project_id WHERE e.id = $1",
        )
        .bind(id)
        .fetch_optional(&self.read)
        .await?;
        row.map(EnvironmentRow::into_environment).transpose()
    }

    async fn start_build(&self, environment_id: i64, job_id: Option<i64>, recipe_hash: &str) -> StorageResult<i64> {
        Ok(sqlx::query_scalar(
            "INSERT INTO environment_builds (environment_id, job_id, recipe_hash, status, log, started_at) \
             VALUES ($1, $2, $3, 'running', '', $4) RETURNING id",
        )
        .bind(environment_id)
        .bind(job_id)
        .bind(recipe_hash)
        .bind(common::now())
        .fetch_one(&self.write)
        .await?)
    }

    async fn finish_build(&self, build_id: i64, status: BuildStatus, log: &str) -> StorageResult<()> {
        let done = sqlx::query("UPDATE environment_builds SET status = $1, log = $2, finished_at = $3 WHERE id = $4")
            .bind(status.as_str())
            .bind(log)
            .bind(common::now())
            .bind(build_id)
            .execute(&self.write)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StorageError::NotFound(format!("environment build {build_id}")));
        }
        Ok(())
    }

    async fn fail_running_builds(&self, environment_id: i64, why: &str) -> StorageResult<()> {
        sqlx::query(
            "UPDATE environment_builds SET status = 'failed', log = log || $1, finished_at = $2 \
             WHERE environment_id = $3 AND status = 'running'",
        )
        .bind(format!("\n# the build job failed: {why}\n"))
        .bind(common::now())
        .bind(environment_id)
        .execute(&self.write)
        .await?;
        Ok(())
    }

    async fn latest_builds(&self, project: &str) -> StorageResult<Vec<EnvironmentBuild>> {
        let rows: Vec<BuildRow> = sqlx::query_as(
            "SELECT b.id, b.environment_id, b.job_id, b.recipe_hash, b.status, b.log, b.started_at, b.finished_at \
             FROM environment_builds b JOIN environments e ON e.id = b.environment_id JOIN projects p ON p.id = e.project_id \
             WHERE p.slug = $1 AND b.id = (SELECT MAX(b2.id) FROM environment_builds b2 WHERE b2.environment_id = b.environment_id) \
             ORDER BY b.environment_id",
        )
        .bind(project)
        .fetch_all(&self.read)
        .await?;
        rows.into_iter().map(BuildRow::into_build).collect()
    }

    async fn list_environments(&self, project: &str) -> StorageResult<Vec<Environment>> {
        let rows: Vec<EnvironmentRow> = sqlx::query_as(
            "SELECT e.id, p.slug AS project, e.name, e.role, e.recipe, e.recipe_hash, e.created_at \
             FROM environments e JOIN projects p ON p.id = e.project_id WHERE p.slug = $1 ORDER BY e.role, e.name",
        )
        .bind(project)
        .fetch_all(&self.read)
        .await?;
        rows.into_iter().map(EnvironmentRow::into_environment).collect()
    }
}
