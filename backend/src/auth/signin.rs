//! Signing in: a name and password checked against the stored argon2id
//! hash, with failed attempts limited per account and per address.
//!
//! Failures are counted in the database rather than in memory, so the limit
//! holds across restarts and across server processes sharing PostgreSQL, and
//! only failures count (a rate limiter over all requests would lock out a
//! user who signs in often). A locked account or address is refused before
//! its password is checked, so guessing on stops being informative.

use chrono::{Duration, Utc};

use crate::db::Storage;
use crate::db::accounts::UserRecord;
use crate::error::ApiError;

/// The window failures are counted over.
pub const WINDOW_MINUTES: i64 = 15;
/// Failed sign-ins per account within the window before it is locked.
pub const PER_ACCOUNT: i64 = 5;
/// Failed sign-ins per address within the window before it is locked.
pub const PER_ADDRESS: i64 = 20;

/// The address key: an IPv6 address counts by its /64 (one host may hold all of it).
fn address_key(address: &str) -> String {
    match address.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            format!("addr:{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
        Ok(std::net::IpAddr::V6(v6)) => {
            format!("addr:{}", v6.to_ipv4_mapped().map(|a| a.to_string()).unwrap_or_default())
        }
        _ => format!("addr:{address}"),
    }
}

/// Checks `name` and `password` from `address`; the user on success.
///
/// The attempt is recorded as a failure *before* the password is checked,
/// then counted: parallel guesses see each other, so a burst cannot get more
/// guesses than the limit. A refusal (over the limit) or a success forgets
/// its row. Hashing itself is bounded (see `password`), so a flood of
/// sign-ins costs time, not memory.
pub async fn sign_in(storage: &dyn Storage, name: &str, password: &str, address: &str) -> Result<UserRecord, ApiError> {
    let now = Utc::now();
    let since = now - Duration::minutes(WINDOW_MINUTES);
    let account = format!("user:{}", name.trim());
    let addr = address_key(address);
    let pending = storage.record_signin_failure(&[account.clone(), addr.clone()], now).await?;
    for (key, limit, what) in [(&account, PER_ACCOUNT, "this account"), (&addr, PER_ADDRESS, "your address")] {
        let (failures, oldest) = storage.signin_failures(key, since).await?;
        if failures > limit {
            storage.forget_signin_failures(&pending).await?;
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
            storage.forget_signin_failures(&pending).await?;
            storage.clear_signin_failures(&account, since).await?;
            Ok(u)
        }
        _ => Err(ApiError::Unauthorized("wrong name or password".into())),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ipv6_counts_by_its_64() {
        assert_eq!(super::address_key("2001:db8:1:2:aaaa::1"), super::address_key("2001:db8:1:2:bbbb::9"));
        assert_ne!(super::address_key("2001:db8:1:2::1"), super::address_key("2001:db8:1:3::1"));
        assert_eq!(super::address_key("::ffff:10.0.0.1"), "addr:10.0.0.1");
        assert_eq!(super::address_key("10.0.0.1"), "addr:10.0.0.1");
    }
}
