//! The SQL of projects, written once for both engines
//! (see `mod.rs`).

use crate::db::common;
use crate::db::common::PROJECT_COLUMNS;
use crate::db::projects::*;
use crate::db::rows::ProjectRow;
use async_trait::async_trait;
use failpass_shared::api::projects::{CreateProjectRequest, Project};

use super::{Engine, Tx};
use crate::db::{ProjectScope, StorageResult};

#[async_trait]
impl ProjectStore for Engine {
    async fn create_project(&self, req: &CreateProjectRequest) -> StorageResult<Project> {
        let name = req.name.clone().unwrap_or_else(|| req.slug.clone());
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO projects (slug, name, description, public, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(&req.slug)
        .bind(&name)
        .bind(&req.description)
        .bind(req.public.unwrap_or(true))
        .bind(common::now())
        .fetch_one(&self.write)
        .await
        .map_err(common::conflict_on_unique(format!("project `{}` already exists", req.slug)))?;
        let row: ProjectRow =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {} FROM projects p WHERE p.id = $1", PROJECT_COLUMNS)))
                .bind(id)
                .fetch_one(&self.write)
                .await?;
        Ok(row.into())
    }

    async fn list_projects(&self, scope: &ProjectScope) -> StorageResult<Vec<Project>> {
        let rows: Vec<ProjectRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM projects p WHERE {} ORDER BY p.slug",
            PROJECT_COLUMNS,
            scope.sql("p")
        )))
        .fetch_all(&self.read)
        .await?;
        Ok(rows.into_iter().map(Into::into).collect())
    }

    async fn get_project(&self, slug: &str, scope: &ProjectScope) -> StorageResult<Option<Project>> {
        let row: Option<ProjectRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM projects p WHERE p.slug = $1 AND {}",
            PROJECT_COLUMNS,
            scope.sql("p")
        )))
        .bind(slug)
        .fetch_optional(&self.read)
        .await?;
        Ok(row.map(Into::into))
    }
}

impl Engine {
    pub(in crate::db) async fn project_id(tx: &mut Tx, slug: &str) -> StorageResult<i64> {
        let id: Option<i64> =
            sqlx::query_scalar("SELECT id FROM projects WHERE slug = $1").bind(slug).fetch_optional(&mut **tx).await?;
        id.ok_or_else(|| common::no_project(slug))
    }
}
