//! Sessions: `tower-sessions` behind an HttpOnly, SameSite=Lax cookie
//! (Secure when failpass is served over https), kept in failpass's own
//! database through [`DbSessionStore`], so every server process sharing a
//! PostgreSQL database shares the sessions too. A session lasts a week from
//! sign-in; signing in issues a new id, signing out deletes it.

use std::sync::Arc;

use async_trait::async_trait;
use tower_sessions::cookie::SameSite;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{Error, Result};
use tower_sessions::{Expiry, SessionManagerLayer, SessionStore};

use super::tokens::digest;
use crate::db::Storage;
use crate::error::ApiError;

/// The cookie's name.
pub const COOKIE: &str = "failpass_session";
/// How long a session lasts after sign-in.
pub const LIFETIME_DAYS: i64 = 7;

/// Sessions in the `sessions` table, keyed by the SHA-256 of their id.
#[derive(Clone)]
pub struct DbSessionStore {
    storage: Arc<dyn Storage>,
}

impl std::fmt::Debug for DbSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DbSessionStore")
    }
}

impl DbSessionStore {
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        Self { storage }
    }
}

fn backend(e: impl std::fmt::Display) -> Error {
    Error::Backend(e.to_string())
}

fn expiry(record: &Record) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp(record.expiry_date.unix_timestamp(), 0).unwrap_or_else(chrono::Utc::now)
}

/// The record's parts as stored: the user it signs in (for "end every
/// session of this user") and its data as JSON.
fn parts(record: &Record) -> Result<(Option<i64>, String)> {
    let user = record.data.get(super::SESSION_USER).and_then(serde_json::Value::as_i64);
    Ok((user, serde_json::to_string(&record.data).map_err(backend)?))
}

#[async_trait]
impl SessionStore for DbSessionStore {
    async fn create(&self, record: &mut Record) -> Result<()> {
        loop {
            let (user, data) = parts(record)?;
            if self
                .storage
                .create_session(&digest(&record.id.to_string()), user, &data, expiry(record))
                .await
                .map_err(backend)?
            {
                return Ok(());
            }
            record.id = Id::default();
        }
    }

    async fn save(&self, record: &Record) -> Result<()> {
        let (user, data) = parts(record)?;
        self.storage.save_session(&digest(&record.id.to_string()), user, &data, expiry(record)).await.map_err(backend)
    }

    async fn load(&self, id: &Id) -> Result<Option<Record>> {
        let Some((data, expires)) =
            self.storage.load_session(&digest(&id.to_string()), chrono::Utc::now()).await.map_err(backend)?
        else {
            return Ok(None);
        };
        let data = serde_json::from_str(&data).map_err(backend)?;
        let expiry_date = time::OffsetDateTime::from_unix_timestamp(expires.timestamp()).map_err(backend)?;
        Ok(Some(Record { id: *id, data, expiry_date }))
    }

    async fn delete(&self, id: &Id) -> Result<()> {
        self.storage.delete_session(&digest(&id.to_string())).await.map_err(backend)
    }
}

/// The session layer: `secure` sets the cookie's Secure flag (https).
pub fn layer(storage: Arc<dyn Storage>, secure: bool) -> SessionManagerLayer<DbSessionStore> {
    SessionManagerLayer::new(DbSessionStore::new(storage))
        .with_name(COOKIE)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(secure)
        .with_path("/")
        .with_expiry(Expiry::OnInactivity(time::Duration::days(LIFETIME_DAYS)))
}

/// A session store that failed: the database is down or refusing writes.
pub fn unavailable(e: tower_sessions::session::Error) -> ApiError {
    ApiError::Unavailable(format!("sessions cannot be read: {e}"))
}
