//! Signing in: a name and password checked against the stored argon2id
//! hash, with failed attempts limited per account and per address.
//!
//! Failures are counted in the database rather than in memory, so the limit
//! holds across restarts and across server processes sharing PostgreSQL, and
//! only failures count (a rate limiter over all requests would lock out a
//! user who signs in often). A locked account or address is refused before
//! its password is checked, so guessing on stops being informative.

use chrono::{Duration, Utc};

use crate::db::accounts::UserRecord;
use crate::db::Storage;
use crate::error::ApiError;

/// The window failures are counted over.
pub const WINDOW_MINUTES: i64 = 15;
/// Failed sign-ins per account within the window before it is locked.
pub const PER_ACCOUNT: i64 = 5;
/// Failed sign-ins per address within the window before it is locked.
pub const PER_ADDRESS: i64 = 20;

/// Checks `name` and `password` from `address`; the user on success.
pub async fn sign_in(storage: &dyn Storage, name: &str, password: &str, address: &str) -> Result<UserRecord, ApiError> {
    let now = Utc::now();
    let since = now - Duration::minutes(WINDOW_MINUTES);
    let account = format!("user:{}", name.trim());
    let addr = format!("addr:{address}");
    for (key, limit, what) in [(&account, PER_ACCOUNT, "this account"), (&addr, PER_ADDRESS, "your address")] {
        let (failures, oldest) = storage.signin_failures(key, since).await?;
        if failures >= limit {
            let free_at = oldest.unwrap_or(now) + Duration::minutes(WINDOW_MINUTES);
            let seconds = (free_at - now).num_seconds().max(1) as u64;
            return Err(ApiError::TooManyRequests(
                format!("too many failed sign-ins for {what}; try again in {} minute(s)", seconds.div_ceil(60)),
                seconds,
            ));
        }
    }
    let user = storage.user_by_name(name.trim()).await?;
    let hash = match &user {
        Some(u) => u.password_hash.clone(),
        None => super::password::dummy().await,
    };
    let ok = super::password::verify(password, &hash).await;
    match user {
        Some(u) if ok => {
            storage.clear_signin_failures(&account, since).await?;
            Ok(u)
        }
        _ => {
            storage.record_signin_failure(&[account, addr], now).await?;
            Err(ApiError::Unauthorized("wrong name or password".into()))
        }
    }
}
