//! The SQL of health and migrations, written once for both engines
//! (see `mod.rs`).

use crate::db::dialect::Dialect;
use crate::db::*;
use async_trait::async_trait;

use super::Engine;
use crate::db::{Backend, StorageResult};

#[async_trait]
impl Storage for Engine {
    fn backend(&self) -> Backend {
        Engine::BACKEND
    }

    async fn migrate(&self) -> StorageResult<()> {
        Engine::run_migrations(self).await?;
        self.ensure_figures().await
    }

    async fn ping(&self) -> StorageResult<()> {
        sqlx::query("SELECT 1").execute(&self.read).await?;
        sqlx::query("INSERT INTO health (id, checked_at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET checked_at = excluded.checked_at")
            .bind(common::now())
            .execute(&self.write)
            .await?;
        Ok(())
    }

    async fn refresh_statistics(&self) -> StorageResult<()> {
        if Self::BACKEND == Backend::Postgres {
            sqlx::query(
                "ANALYZE reports, attempts, report_labels, report_activity, oracles, figure_cells, figure_groups, \
                 figure_facts, figure_project_facts, flow_cells, flow_groups, value_cells, value_groups, period_cells, \
                 period_groups",
            )
            .execute(&self.write)
            .await?;
        }
        Ok(())
    }

    async fn backup_into(&self, path: &std::path::Path) -> StorageResult<()> {
        if Self::BACKEND != Backend::Sqlite {
            return Err(StorageError::invalid("database", "a PostgreSQL database is backed up with pg_dump"));
        }
        let path = path.to_str().ok_or_else(|| StorageError::invalid("to", "the path is not UTF-8"))?;
        sqlx::query("VACUUM INTO $1").bind(path).execute(&self.read).await?;
        Ok(())
    }

    async fn is_empty(&self) -> StorageResult<bool> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM projects").fetch_one(&self.read).await?;
        Ok(n == 0)
    }

    async fn task_last_run(&self, name: &str) -> StorageResult<Option<chrono::DateTime<chrono::Utc>>> {
        Ok(sqlx::query_scalar("SELECT last_run FROM scheduled_tasks WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.write)
            .await?)
    }

    async fn set_task_last_run(&self, name: &str, at: chrono::DateTime<chrono::Utc>) -> StorageResult<()> {
        sqlx::query(
            "INSERT INTO scheduled_tasks (name, last_run) VALUES ($1, $2) \
             ON CONFLICT (name) DO UPDATE SET last_run = excluded.last_run",
        )
        .bind(name)
        .bind(at)
        .execute(&self.write)
        .await?;
        Ok(())
    }
}
