//! The SQL of accounts, sessions, tokens and sign-in failures, written once for both engines
//! (see `mod.rs`).

use crate::db::accounts::*;
use crate::db::{StorageError, common};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{Db, Engine};
use crate::db::StorageResult;
use failpass_shared::model::ProjectRole;

#[async_trait]
impl AccountStore for Engine {
    async fn create_user(&self, name: &str, password_hash: &str, admin: bool) -> StorageResult<UserRecord> {
        let row: UserRow = sqlx::query_as(
            "INSERT INTO users (name, password_hash, admin, created_at) VALUES ($1, $2, $3, $4) \
             RETURNING id, name, password_hash, admin, created_at",
        )
        .bind(name)
        .bind(password_hash)
        .bind(admin)
        .bind(common::now())
        .fetch_one(&self.write)
        .await
        .map_err(common::conflict_on_unique(format!("a user named `{name}` already exists")))?;
        Ok(row.into())
    }

    async fn user_by_name(&self, name: &str) -> StorageResult<Option<UserRecord>> {
        let row: Option<UserRow> =
            sqlx::query_as("SELECT id, name, password_hash, admin, created_at FROM users WHERE name = $1")
                .bind(name)
                .fetch_optional(&self.read)
                .await?;
        Ok(row.map(Into::into))
    }

    async fn user_by_id(&self, id: i64) -> StorageResult<Option<UserRecord>> {
        let row: Option<UserRow> =
            sqlx::query_as("SELECT id, name, password_hash, admin, created_at FROM users WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.read)
                .await?;
        Ok(row.map(Into::into))
    }

    async fn list_users(&self) -> StorageResult<Vec<(UserRecord, Vec<Membership>)>> {
        let users: Vec<UserRow> =
            sqlx::query_as("SELECT id, name, password_hash, admin, created_at FROM users ORDER BY name")
                .fetch_all(&self.read)
                .await?;
        let mut out = Vec::with_capacity(users.len());
        for u in users {
            let memberships = self.memberships(u.id).await?;
            out.push((u.into(), memberships));
        }
        Ok(out)
    }

    async fn saved_views(&self, user_id: i64) -> StorageResult<Vec<(i64, String, String)>> {
        Ok(sqlx::query_as("SELECT id, name, address FROM saved_views WHERE user_id = $1 ORDER BY name")
            .bind(user_id)
            .fetch_all(&self.read)
            .await?)
    }

    async fn note_visit(&self, id: i64, now: DateTime<Utc>) -> StorageResult<()> {
        sqlx::query(
            "UPDATE users SET \
               previous_visit_at = CASE WHEN last_seen_at < $2 THEN last_seen_at ELSE previous_visit_at END, \
               last_seen_at = $3 \
             WHERE id = $1 AND (last_seen_at IS NULL OR last_seen_at < $4)",
        )
        .bind(id)
        .bind(now - chrono::Duration::minutes(VISIT_GAP_MINUTES))
        .bind(now)
        .bind(now - chrono::Duration::minutes(1))
        .execute(&self.write)
        .await?;
        Ok(())
    }

    async fn previous_visit(&self, id: i64) -> StorageResult<Option<DateTime<Utc>>> {
        let row: Option<(Option<DateTime<Utc>>,)> = sqlx::query_as("SELECT previous_visit_at FROM users WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.read)
            .await?;
        Ok(row.and_then(|r| r.0))
    }

    async fn save_view(&self, user_id: i64, name: &str, address: &str) -> StorageResult<()> {
        sqlx::query(
            "INSERT INTO saved_views (user_id, name, address, created_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (user_id, name) DO UPDATE SET address = excluded.address",
        )
        .bind(user_id)
        .bind(name)
        .bind(address)
        .bind(common::now())
        .execute(&self.write)
        .await?;
        Ok(())
    }

    async fn forget_view(&self, user_id: i64, id: i64) -> StorageResult<()> {
        let done = sqlx::query("DELETE FROM saved_views WHERE id = $1 AND user_id = $2")
            .bind(id)
            .bind(user_id)
            .execute(&self.write)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StorageError::NotFound(format!("view {id}")));
        }
        Ok(())
    }

    async fn remove_user(&self, name: &str) -> StorageResult<()> {
        let mut tx = self.write.begin().await?;
        let id: Option<i64> =
            sqlx::query_scalar("SELECT id FROM users WHERE name = $1").bind(name).fetch_optional(&mut *tx).await?;
        let id = id.ok_or_else(|| StorageError::NotFound(format!("user `{name}`")))?;
        // Explicit deletes: SQLite enforces ON DELETE CASCADE only with
        // foreign keys on, and this must hold whatever the pragma.
        for sql in [
            "DELETE FROM sessions WHERE user_id = $1",
            "DELETE FROM memberships WHERE user_id = $1",
            "DELETE FROM saved_views WHERE user_id = $1",
            "DELETE FROM api_tokens WHERE user_id = $1",
            "DELETE FROM users WHERE id = $1",
        ] {
            sqlx::query(sql).bind(id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn set_password(&self, name: &str, password_hash: &str) -> StorageResult<()> {
        let mut tx = self.write.begin().await?;
        let id: Option<i64> = sqlx::query_scalar("UPDATE users SET password_hash = $1 WHERE name = $2 RETURNING id")
            .bind(password_hash)
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
        let id = id.ok_or_else(|| StorageError::NotFound(format!("user `{name}`")))?;
        sqlx::query("DELETE FROM sessions WHERE user_id = $1").bind(id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn set_membership(&self, user: &str, project: &str, role: Option<ProjectRole>) -> StorageResult<()> {
        let mut tx = self.write.begin().await?;
        let user_id: Option<i64> =
            sqlx::query_scalar("SELECT id FROM users WHERE name = $1").bind(user).fetch_optional(&mut *tx).await?;
        let user_id = user_id.ok_or_else(|| StorageError::NotFound(format!("user `{user}`")))?;
        let project_id: Option<i64> = sqlx::query_scalar("SELECT id FROM projects WHERE slug = $1")
            .bind(project)
            .fetch_optional(&mut *tx)
            .await?;
        let project_id = project_id.ok_or_else(|| StorageError::NotFound(format!("project `{project}`")))?;
        sqlx::query("DELETE FROM memberships WHERE user_id = $1 AND project_id = $2")
            .bind(user_id)
            .bind(project_id)
            .execute(&mut *tx)
            .await?;
        if let Some(role) = role {
            sqlx::query("INSERT INTO memberships (user_id, project_id, role, created_at) VALUES ($1, $2, $3, $4)")
                .bind(user_id)
                .bind(project_id)
                .bind(role.as_str())
                .bind(common::now())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn memberships(&self, user_id: i64) -> StorageResult<Vec<Membership>> {
        let rows: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT m.project_id, p.slug, m.role FROM memberships m JOIN projects p ON p.id = m.project_id \
             WHERE m.user_id = $1 ORDER BY p.slug",
        )
        .bind(user_id)
        .fetch_all(&self.read)
        .await?;
        rows.into_iter()
            .map(|(project_id, project, role)| Ok(Membership { project_id, project, role: parse_role(&role)? }))
            .collect()
    }

    async fn project_members(&self, project: &str) -> StorageResult<Vec<(String, ProjectRole)>> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT u.name, m.role FROM memberships m JOIN users u ON u.id = m.user_id \
             JOIN projects p ON p.id = m.project_id WHERE p.slug = $1 ORDER BY u.name",
        )
        .bind(project)
        .fetch_all(&self.read)
        .await?;
        rows.into_iter().map(|(name, role)| Ok((name, parse_role(&role)?))).collect()
    }

    async fn load_session(
        &self,
        id_hash: &str,
        now: chrono::DateTime<chrono::Utc>,
    ) -> StorageResult<Option<(String, chrono::DateTime<chrono::Utc>)>> {
        Ok(sqlx::query_as("SELECT data, expires_at FROM sessions WHERE id_hash = $1 AND expires_at > $2")
            .bind(id_hash)
            .bind(common::secs(now))
            .fetch_optional(&self.read)
            .await?)
    }

    async fn create_session(
        &self,
        id_hash: &str,
        user_id: Option<i64>,
        data: &str,
        expires_at: chrono::DateTime<chrono::Utc>,
    ) -> StorageResult<bool> {
        let done = sqlx::query(
            "INSERT INTO sessions (id_hash, user_id, data, expires_at) VALUES ($1, $2, $3, $4) ON CONFLICT (id_hash) DO NOTHING",
        )
        .bind(id_hash)
        .bind(user_id)
        .bind(data)
        .bind(common::secs(expires_at))
        .execute(&self.write)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn save_session(
        &self,
        id_hash: &str,
        user_id: Option<i64>,
        data: &str,
        expires_at: chrono::DateTime<chrono::Utc>,
    ) -> StorageResult<()> {
        sqlx::query(
            "INSERT INTO sessions (id_hash, user_id, data, expires_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (id_hash) DO UPDATE SET user_id = excluded.user_id, data = excluded.data, expires_at = excluded.expires_at",
        )
        .bind(id_hash)
        .bind(user_id)
        .bind(data)
        .bind(common::secs(expires_at))
        .execute(&self.write)
        .await?;
        Ok(())
    }

    async fn delete_session(&self, id_hash: &str) -> StorageResult<()> {
        sqlx::query("DELETE FROM sessions WHERE id_hash = $1").bind(id_hash).execute(&self.write).await?;
        Ok(())
    }

    async fn delete_expired_sessions(&self, now: chrono::DateTime<chrono::Utc>) -> StorageResult<u64> {
        let done = sqlx::query("DELETE FROM sessions WHERE expires_at <= $1")
            .bind(common::secs(now))
            .execute(&self.write)
            .await?;
        Ok(done.rows_affected())
    }

    async fn create_token(&self, new: &NewToken) -> StorageResult<TokenRecord> {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO api_tokens (name, token_hash, prefix, scope, project_id, user_id, created_by, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
        )
        .bind(&new.name)
        .bind(&new.hash)
        .bind(&new.prefix)
        .bind(new.scope.as_str())
        .bind(new.project_id)
        .bind(new.user_id)
        .bind(&new.created_by)
        .bind(common::now())
        .bind(new.expires_at.map(common::secs))
        .fetch_one(&self.write)
        .await?;
        self.get_token(id).await?.ok_or_else(|| StorageError::NotFound(format!("token {id}")))
    }

    async fn token_by_hash(&self, hash: &str) -> StorageResult<Option<TokenRecord>> {
        let row: Option<TokenRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM {} WHERE t.token_hash = $1",
            TOKEN_COLUMNS, TOKEN_FROM
        )))
        .bind(hash)
        .fetch_optional(&self.read)
        .await?;
        row.map(TokenRow::into_record).transpose()
    }

    async fn touch_token(&self, id: i64, now: chrono::DateTime<chrono::Utc>) -> StorageResult<()> {
        sqlx::query("UPDATE api_tokens SET last_used_at = $1 WHERE id = $2")
            .bind(common::secs(now))
            .bind(id)
            .execute(&self.write)
            .await?;
        Ok(())
    }

    async fn list_tokens(&self, project_ids: Option<&[i64]>) -> StorageResult<Vec<TokenRecord>> {
        let mut qb = sqlx::QueryBuilder::<Db>::new(format!("SELECT {} FROM {} WHERE 1 = 1", TOKEN_COLUMNS, TOKEN_FROM));
        if let Some(ids) = project_ids {
            qb.push(" AND t.project_id IN (");
            let mut sep = qb.separated(", ");
            sep.push_bind(-1i64); // never empty: `IN ()` is not SQL
            for id in ids {
                sep.push_bind(*id);
            }
            qb.push(")");
        }
        qb.push(" ORDER BY t.id DESC");
        let rows: Vec<TokenRow> = qb.build_query_as().fetch_all(&self.read).await?;
        rows.into_iter().map(TokenRow::into_record).collect()
    }

    async fn get_token(&self, id: i64) -> StorageResult<Option<TokenRecord>> {
        let row: Option<TokenRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {} FROM {} WHERE t.id = $1",
            TOKEN_COLUMNS, TOKEN_FROM
        )))
        .bind(id)
        .fetch_optional(&self.write)
        .await?;
        row.map(TokenRow::into_record).transpose()
    }

    async fn revoke_token(&self, id: i64, now: chrono::DateTime<chrono::Utc>) -> StorageResult<TokenRecord> {
        sqlx::query("UPDATE api_tokens SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2")
            .bind(common::secs(now))
            .bind(id)
            .execute(&self.write)
            .await?;
        self.get_token(id).await?.ok_or_else(|| StorageError::NotFound(format!("token {id}")))
    }

    async fn record_signin_failure(
        &self,
        keys: &[String],
        at: chrono::DateTime<chrono::Utc>,
    ) -> StorageResult<Vec<i64>> {
        let mut tx = self.write.begin().await?;
        let mut ids = Vec::with_capacity(keys.len());
        for key in keys {
            ids.push(
                sqlx::query_scalar("INSERT INTO signin_failures (key, at) VALUES ($1, $2) RETURNING id")
                    .bind(key)
                    .bind(common::secs(at))
                    .fetch_one(&mut *tx)
                    .await?,
            );
        }
        tx.commit().await?;
        Ok(ids)
    }

    async fn forget_signin_failures(&self, ids: &[i64]) -> StorageResult<()> {
        let mut tx = self.write.begin().await?;
        for id in ids {
            sqlx::query("DELETE FROM signin_failures WHERE id = $1").bind(*id).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn signin_failures(
        &self,
        key: &str,
        since: chrono::DateTime<chrono::Utc>,
        except: i64,
    ) -> StorageResult<FailureCount> {
        Ok(sqlx::query_as(
            "SELECT COUNT(*) AS count, MIN(at) AS oldest, MAX(at) AS newest FROM signin_failures \
             WHERE key = $1 AND at > $2 AND id <> $3",
        )
        .bind(key)
        .bind(common::secs(since))
        .bind(except)
        .fetch_one(&self.write)
        .await?)
    }

    async fn signin_failure_keys(
        &self,
        key: &str,
        prefix: &str,
        since: chrono::DateTime<chrono::Utc>,
    ) -> StorageResult<Vec<(String, FailureCount)>> {
        let rows: Vec<(String, i64, Option<chrono::DateTime<chrono::Utc>>, Option<chrono::DateTime<chrono::Utc>>)> =
            sqlx::query_as(
                "SELECT key, COUNT(*), MIN(at), MAX(at) FROM signin_failures \
                 WHERE (key = $1 OR substr(key, 1, CAST($3 AS INTEGER)) = $2) AND at > $4 GROUP BY key ORDER BY key",
            )
            .bind(key)
            .bind(prefix)
            .bind(prefix.chars().count() as i64)
            .bind(common::secs(since))
            .fetch_all(&self.write)
            .await?;
        Ok(rows.into_iter().map(|(k, count, oldest, newest)| (k, FailureCount { count, oldest, newest })).collect())
    }

    async fn forget_signin_failure_keys(&self, key: &str, prefix: &str) -> StorageResult<u64> {
        Ok(sqlx::query("DELETE FROM signin_failures WHERE key = $1 OR substr(key, 1, CAST($3 AS INTEGER)) = $2")
            .bind(key)
            .bind(prefix)
            .bind(prefix.chars().count() as i64)
            .execute(&self.write)
            .await?
            .rows_affected())
    }

    async fn clear_signin_failures(&self, key: &str, before: chrono::DateTime<chrono::Utc>) -> StorageResult<()> {
        sqlx::query("DELETE FROM signin_failures WHERE key = $1 OR at < $2")
            .bind(key)
            .bind(common::secs(before))
            .execute(&self.write)
            .await?;
        Ok(())
    }
}
