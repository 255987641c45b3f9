//! Accounts: users, project memberships, sessions, API tokens and failed
//! sign-ins. The SQL is the same on both engines.
//!
//! Secrets never reach the database in the clear: passwords are argon2id
//! hashes (made in `auth`), session ids and tokens are stored as SHA-256
//! digests, so a copy of the database signs nobody in.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use failpass_shared::model::{ProjectRole, TokenScope};

use super::StorageResult;

/// Page loads further apart than this many minutes are two visits.
pub const VISIT_GAP_MINUTES: i64 = 30;

/// A user as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct UserRecord {
    pub id: i64,
    pub name: String,
    /// The argon2id PHC string.
    pub password_hash: String,
    pub admin: bool,
    pub created_at: DateTime<Utc>,
}

/// A user's role in one project.
#[derive(Debug, Clone, PartialEq)]
pub struct Membership {
    pub project_id: i64,
    pub project: String,
    pub role: ProjectRole,
}

/// A token to store: the secret is already hashed.
#[derive(Debug, Clone)]
pub struct NewToken {
    pub name: String,
    pub hash: String,
    pub prefix: String,
    pub scope: TokenScope,
    /// The project of an `agent`, `ci` or `read` token.
    pub project_id: Option<i64>,
    /// The user a `user` token acts as.
    pub user_id: Option<i64>,
    pub created_by: String,
    pub expires_at: Option<DateTime<Utc>>,
}

/// A stored token (never its secret).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TokenRecord {
    pub id: i64,
    pub name: String,
    pub prefix: String,
    pub scope: TokenScope,
    pub project_id: Option<i64>,
    pub project: Option<String>,
    pub user_id: Option<i64>,
    pub user: Option<String>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl TokenRecord {
    /// Usable at `now`: neither revoked nor expired.
    pub fn is_live(&self, now: DateTime<Utc>) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|t| t > now)
    }
}

#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Creates a user. `Conflict` when the name is taken.
    async fn create_user(&self, name: &str, password_hash: &str, admin: bool) -> StorageResult<UserRecord>;

    /// A user by name, or `None`.
    async fn user_by_name(&self, name: &str) -> StorageResult<Option<UserRecord>>;

    /// A user by id, or `None` (a removed user's session finds nobody).
    async fn user_by_id(&self, id: i64) -> StorageResult<Option<UserRecord>>;

    /// Every user with their memberships, by name.
    async fn list_users(&self) -> StorageResult<Vec<(UserRecord, Vec<Membership>)>>;

    /// Removes a user with their memberships, sessions and personal tokens
    /// (project tokens they created stay: they belong to the project).
    /// `NotFound` when there is no such user.
    async fn remove_user(&self, name: &str) -> StorageResult<()>;

    /// Replaces a user's password hash and ends every session they have.
    /// `NotFound` when there is no such user.
    async fn set_password(&self, name: &str, password_hash: &str) -> StorageResult<()>;

    /// Gives `user` `role` in `project`, replacing any role they had there;
    /// `None` removes the membership. `NotFound` for a missing user or project.
    async fn set_membership(&self, user: &str, project: &str, role: Option<ProjectRole>) -> StorageResult<()>;

    /// The projects a user is a member of.
    async fn memberships(&self, user_id: i64) -> StorageResult<Vec<Membership>>;

    /// A project's members (by slug) with their roles, by name: one query.
    async fn project_members(&self, project: &str) -> StorageResult<Vec<(String, ProjectRole)>>;

    /// Notes that user `id` loaded a page at `now`: a load 30 minutes or
    /// more after their last one starts a new visit, and the old visit's
    /// last load becomes their previous visit (`previous_visit`). Loads
    /// within a minute of the last are not written again.
    async fn note_visit(&self, id: i64, now: DateTime<Utc>) -> StorageResult<()>;

    /// When user `id`'s visit before this one ended (`None`: no earlier visit).
    async fn previous_visit(&self, id: i64) -> StorageResult<Option<DateTime<Utc>>>;

    /// A person's saved views as (id, name, address), by name.
    async fn saved_views(&self, user_id: i64) -> StorageResult<Vec<(i64, String, String)>>;

    /// Saves a view under `name` (replacing the address of one so named).
    async fn save_view(&self, user_id: i64, name: &str, address: &str) -> StorageResult<()>;

    /// Forgets one of the person's views; `NotFound` when they have no such view.
    async fn forget_view(&self, user_id: i64, id: i64) -> StorageResult<()>;

    /// A live session's data (JSON) and expiry by the digest of its id.
    async fn load_session(&self, id_hash: &str, now: DateTime<Utc>) -> StorageResult<Option<(String, DateTime<Utc>)>>;

    /// Creates a session; `false` (nothing written) when the id is taken.
    async fn create_session(
        &self,
        id_hash: &str,
        user_id: Option<i64>,
        data: &str,
        expires_at: DateTime<Utc>,
    ) -> StorageResult<bool>;

    /// Creates or replaces a session.
    async fn save_session(
        &self,
        id_hash: &str,
        user_id: Option<i64>,
        data: &str,
        expires_at: DateTime<Utc>,
    ) -> StorageResult<()>;

    /// Deletes a session (signing out); deleting a missing one is fine.
    async fn delete_session(&self, id_hash: &str) -> StorageResult<()>;

    /// Deletes sessions that expired before `now`; returns how many.
    async fn delete_expired_sessions(&self, now: DateTime<Utc>) -> StorageResult<u64>;

    /// Stores a token.
    async fn create_token(&self, new: &NewToken) -> StorageResult<TokenRecord>;

    /// A token by the digest of its secret, live or not.
    async fn token_by_hash(&self, hash: &str) -> StorageResult<Option<TokenRecord>>;

    /// Records a token's use (callers throttle this to once a minute).
    async fn touch_token(&self, id: i64, now: DateTime<Utc>) -> StorageResult<()>;

    /// Tokens of these projects (every token when `None`), newest first.
    async fn list_tokens(&self, project_ids: Option<&[i64]>) -> StorageResult<Vec<TokenRecord>>;

    /// A token by id, or `None`.
    async fn get_token(&self, id: i64) -> StorageResult<Option<TokenRecord>>;

    /// Revokes a token (idempotent: a revoked token keeps its first time).
    /// `NotFound` when there is no such token.
    async fn revoke_token(&self, id: i64, now: DateTime<Utc>) -> StorageResult<TokenRecord>;

    /// Records a failed sign-in under each key (`user:NAME`, `addr:IP`);
    /// returns the rows' ids (a sign-in records first, then checks, so
    /// parallel guesses count against each other).
    async fn record_signin_failure(&self, keys: &[String], at: DateTime<Utc>) -> StorageResult<Vec<i64>>;

    /// Forgets failures by id (the sign-in they were recorded for succeeded or was refused unchecked).
    async fn forget_signin_failures(&self, ids: &[i64]) -> StorageResult<()>;

    /// Failed sign-ins under `key` since `since` (but the row `except`, a
    /// sign-in's own), with the oldest and the newest of them.
    async fn signin_failures(&self, key: &str, since: DateTime<Utc>, except: i64) -> StorageResult<FailureCount>;

    /// Every key with failures since `since` that is `key` or starts with
    /// `prefix`, with its count and newest failure (the throttle an admin sees).
    async fn signin_failure_keys(
        &self,
        key: &str,
        prefix: &str,
        since: DateTime<Utc>,
    ) -> StorageResult<Vec<(String, FailureCount)>>;

    /// Forgets every failure under `key` or a key starting with `prefix`
    /// (an admin lifts a user's throttle); how many were forgotten.
    async fn forget_signin_failure_keys(&self, key: &str, prefix: &str) -> StorageResult<u64>;

    /// Forgets the failures under `key` (a successful sign-in) and any
    /// older than `before` (housekeeping).
    async fn clear_signin_failures(&self, key: &str, before: DateTime<Utc>) -> StorageResult<()>;
}

/// Failed sign-ins under one key in a window.
#[derive(Debug, Clone, Copy, PartialEq, Default, sqlx::FromRow)]
pub struct FailureCount {
    pub count: i64,
    pub oldest: Option<DateTime<Utc>>,
    pub newest: Option<DateTime<Utc>>,
}

pub const TOKEN_COLUMNS: &str = "t.id, t.name, t.prefix, t.scope, t.project_id, p.slug AS project, t.user_id, u.name AS user_name, \
     t.created_by, t.created_at, t.expires_at, t.last_used_at, t.revoked_at";

pub const TOKEN_FROM: &str =
    "api_tokens t LEFT JOIN projects p ON p.id = t.project_id LEFT JOIN users u ON u.id = t.user_id";

#[derive(sqlx::FromRow)]
pub struct TokenRow {
    pub id: i64,
    pub name: String,
    pub prefix: String,
    pub scope: String,
    pub project_id: Option<i64>,
    pub project: Option<String>,
    pub user_id: Option<i64>,
    pub user_name: Option<String>,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub last_used_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl TokenRow {
    pub fn into_record(self) -> StorageResult<TokenRecord> {
        Ok(TokenRecord {
            id: self.id,
            name: self.name,
            prefix: self.prefix,
            scope: super::rows::parse(&self.scope, "api_tokens.scope")?,
            project_id: self.project_id,
            project: self.project,
            user_id: self.user_id,
            user: self.user_name,
            created_by: self.created_by,
            created_at: self.created_at,
            expires_at: self.expires_at,
            last_used_at: self.last_used_at,
            revoked_at: self.revoked_at,
        })
    }
}

#[derive(sqlx::FromRow)]
pub struct UserRow {
    pub id: i64,
    pub name: String,
    pub password_hash: String,
    pub admin: bool,
    pub created_at: DateTime<Utc>,
}

impl From<UserRow> for UserRecord {
    fn from(r: UserRow) -> Self {
        UserRecord { id: r.id, name: r.name, password_hash: r.password_hash, admin: r.admin, created_at: r.created_at }
    }
}

pub fn parse_role(role: &str) -> StorageResult<ProjectRole> {
    super::rows::parse(role, "memberships.role")
}
