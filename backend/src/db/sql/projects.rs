//! The SQL of projects, written once for both engines
//! (see `mod.rs`).

use crate::db::common;
use crate::db::common::PROJECT_COLUMNS;
use crate::db::dialect::Dialect;
use crate::db::projects::*;
use crate::db::rows::ProjectRow;
use async_trait::async_trait;
use failpass_shared::api::projects::{CreateProjectRequest, Project, UpdateProjectRequest};

use super::{Engine, Tx};
use crate::db::{ProjectScope, StorageError, StorageResult};

#[async_trait]
impl ProjectStore for Engine {
    async fn set_webhook_secret(&self, slug: &str, secret: Option<&str>) -> StorageResult<()> {
        let done: Option<i64> =
            sqlx::query_scalar("UPDATE projects SET webhook_secret = $1 WHERE slug = $2 RETURNING id")
                .bind(secret)
                .bind(slug)
                .fetch_optional(&self.write)
                .await?;
        done.map(|_| ()).ok_or_else(|| common::no_project(slug))
    }

    async fn webhook_secret(&self, repo: &str) -> StorageResult<Option<(String, String)>> {
        Ok(sqlx::query_as(
            "SELECT slug, webhook_secret FROM projects WHERE LOWER(slug) = LOWER($1) AND webhook_secret IS NOT NULL \
             ORDER BY slug LIMIT 1",
        )
        .bind(repo)
        .fetch_optional(&self.read)
        .await?)
    }

    async fn delivery_seen(&self, delivery_id: &str) -> StorageResult<bool> {
        let n: Option<i64> =
            sqlx::query_scalar("SELECT CAST(1 AS BIGINT) FROM webhook_deliveries WHERE delivery_id = $1")
                .bind(delivery_id)
                .fetch_optional(&self.read)
                .await?;
        Ok(n.is_some())
    }

    async fn record_delivery(&self, delivery_id: &str, project: &str, event: &str, outcome: &str) -> StorageResult<()> {
        sqlx::query(
            "INSERT INTO webhook_deliveries (delivery_id, project, event, outcome, received_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (delivery_id) DO NOTHING",
        )
        .bind(delivery_id)
        .bind(project)
        .bind(event)
        .bind(outcome)
        .bind(common::now())
        .execute(&self.write)
        .await?;
        Ok(())
    }

    async fn github_sync(&self, project: &str) -> StorageResult<Option<GithubSync>> {
        Ok(sqlx::query_as("SELECT repo, since, etag, etag_url FROM github_sync WHERE project = $1")
            .bind(project)
            .fetch_optional(&self.read)
            .await?)
    }

    async fn save_github_sync(&self, project: &str, state: &GithubSync) -> StorageResult<()> {
        sqlx::query(
            "INSERT INTO github_sync (project, repo, since, etag, etag_url, synced_at) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (project) DO UPDATE SET repo = excluded.repo, since = excluded.since, etag = excluded.etag, \
             etag_url = excluded.etag_url, synced_at = excluded.synced_at",
        )
        .bind(project)
        .bind(&state.repo)
        .bind(&state.since)
        .bind(&state.etag)
        .bind(&state.etag_url)
        .bind(common::now())
        .execute(&self.write)
        .await?;
        Ok(())
    }

    async fn create_project(&self, req: &CreateProjectRequest) -> StorageResult<Project> {
        let name = req.name.clone().unwrap_or_else(|| req.slug.clone());
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO projects (slug, name, description, public, upstream_url, created_at, benchmark) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
        )
        .bind(&req.slug)
        .bind(&name)
        .bind(&req.description)
        .bind(req.public.unwrap_or(true))
        .bind(req.upstream_url.as_deref().map(str::trim))
        .bind(common::now())
        .bind(req.benchmark.unwrap_or(false))
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

    async fn update_project(&self, slug: &str, req: &UpdateProjectRequest) -> StorageResult<Project> {
        // An empty description or address removes it; a field left out stays.
        let blank_is_none =
            |v: &Option<String>| v.as_ref().map(|v| Some(v.trim().to_owned()).filter(|v| !v.is_empty()));
        let (description, upstream) = (blank_is_none(&req.description), blank_is_none(&req.upstream_url));
        let mut tx = self.write.begin().await?;
        let moves_flows = req.benchmark.is_some() || req.public.is_some();
        if moves_flows {
            // The backlog's counts move with the flag, and the throughput's
            // sums of the public projects with the visibility: the figures' lock
            // first (as every writer takes it before a project's row), and
            // the flag read under it, so two changes never cross.
            sqlx::query(Self::FIGURES_LOCK).execute(&mut *tx).await?;
        }
        let before: Option<(bool, bool)> = match moves_flows {
            true => {
                sqlx::query_as("SELECT benchmark, public FROM projects WHERE slug = $1")
                    .bind(slug)
                    .fetch_optional(&mut *tx)
                    .await?
            }
            false => None,
        };
        let flips = before.is_some_and(|(benchmark, public)| {
            req.benchmark.is_some_and(|n| n != benchmark) || req.public.is_some_and(|n| n != public)
        });
        let id: Option<i64> = sqlx::query_scalar(
            "UPDATE projects SET data_version = data_version + 1, name = COALESCE($1, name), \
             description = CASE WHEN $2 THEN $3 ELSE description END, public = COALESCE($4, public), \
             upstream_url = CASE WHEN $5 THEN $6 ELSE upstream_url END, benchmark = COALESCE($8, benchmark) \
             WHERE slug = $7 RETURNING id",
        )
        .bind(req.name.as_deref().map(str::trim))
        .bind(description.is_some())
        .bind(description.flatten())
        .bind(req.public)
        .bind(upstream.is_some())
        .bind(upstream.flatten())
        .bind(slug)
        .bind(req.benchmark)
        .fetch_optional(&mut *tx)
        .await?;
        let id = id.ok_or_else(|| StorageError::NotFound(format!("project `{slug}`")))?;
        if flips {
            Self::refresh_project_flows(&mut tx, id).await?;
        }
        let row: ProjectRow =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT {} FROM projects p WHERE p.id = $1", PROJECT_COLUMNS)))
                .bind(id)
                .fetch_one(&mut *tx)
                .await?;
        tx.commit().await?;
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
