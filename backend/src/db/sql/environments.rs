//! The SQL of environments and signature groups, written once for both engines
//! (see `mod.rs`).

use crate::db::common;
use crate::db::environments::*;
use async_trait::async_trait;
use failpass_shared::api::jobs::SignatureGroup;
use failpass_shared::api::jobs::{CreateEnvironmentRequest, Environment};

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
            let report_ids: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT DISTINCT a.report_id FROM attempts a JOIN reports r ON r.id = a.report_id JOIN projects p ON p.id = r.project_id \
                 WHERE a.failure_signature = $1 AND {visible} AND ($2 IS NULL OR p.slug = $2) ORDER BY a.report_id LIMIT 10"
            )))
            .bind(&signature)
            .bind(project)
            .fetch_all(&self.read)
            .await?;
            out.push(SignatureGroup { signature, attempts, reports, reproduced, report_ids });
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
