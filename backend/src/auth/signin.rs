//! Signing in: a name and password checked against the stored argon2id
//! hash, with failed attempts throttled so that a stranger who knows a
//! maintainer's name cannot keep them out.
//!
//! Failures are counted in the database rather than in memory, so the
//! throttle holds across restarts and across server processes sharing
//! PostgreSQL, and only failures count (a rate limiter over all requests
//! would slow a user who signs in often). Three counts:
//!
//! - **per account and address** (`pair:NAME|ADDR`): the first
//!   [`PAIR_FREE`] failures cost nothing; after that each further try from
//!   that address waits twice as long as the last (1 s, 2 s, 4 s, … at most
//!   the window). A try that comes too early is refused (429 with
//!   `Retry-After`) before its password is checked, and not counted.
//! - **per address** (`addr:ADDR`, an IPv6 address by its /64): at most
//!   [`PER_ADDRESS`] failures in the window, whatever the names.
//! - **per account** (`user:NAME`): never a refusal. An account with
//!   [`ACCOUNT_ALARM`] failures in the window (from any addresses) is under
//!   attack: every try on it is answered [`SLOWDOWN`] later, and an address
//!   that has failed on it waits from its first failure, from
//!   [`UNDER_ATTACK_BASE_SECONDS`] on. An address that has not failed on it
//!   signs in with the right password, a second later.
//!
//! Every try is recorded as a failure *before* its password is checked and
//! then weighed against the *other* failures: parallel guesses see each
//! other, so a burst gets no more than the rule allows. A success forgets
//! its own row and its address's failures on the account; a refusal forgets
//! its row. Admins see the state (`failpass user throttle NAME`) and lift it
//! (`failpass user unthrottle NAME`).

use chrono::{DateTime, Duration, Utc};

use crate::db::Storage;
use crate::db::accounts::{FailureCount, UserRecord};
use crate::error::ApiError;

/// The window failures are counted over.
pub const WINDOW_MINUTES: i64 = 15;
/// Failures of one account from one address before each try must wait.
pub const PAIR_FREE: i64 = 3;
/// Failed sign-ins per address within the window before it is refused.
pub const PER_ADDRESS: i64 = 20;
/// Failures of one account within the window (from anywhere) that put it under attack.
pub const ACCOUNT_ALARM: i64 = 10;
/// The first wait, under attack, of an address that has failed on the account.
pub const UNDER_ATTACK_BASE_SECONDS: i64 = 30;
/// How much later every try on an account under attack is answered.
pub const SLOWDOWN: std::time::Duration = std::time::Duration::from_secs(1);

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

fn account_key(name: &str) -> String {
    format!("user:{name}")
}

/// Where an account's per-address keys start.
fn pair_prefix(name: &str) -> String {
    format!("pair:{name}|")
}

/// How long an address waits after its `failures` on an account (0: not at all).
pub fn wait_after(failures: i64, under_attack: bool) -> Duration {
    let (free, base) = if under_attack { (0, UNDER_ATTACK_BASE_SECONDS) } else { (PAIR_FREE, 1) };
    if failures <= free {
        return Duration::zero();
    }
    let doublings = (failures - free - 1).min(20) as u32;
    Duration::seconds((base << doublings).min(WINDOW_MINUTES * 60))
}

/// When an address that failed `failures` times on an account, the last at
/// `newest`, is heard again (`None`: now). Failures are stored to the
/// second, so the wait counts from the end of that second.
fn free_at(newest: Option<DateTime<Utc>>, failures: i64, under_attack: bool) -> Option<DateTime<Utc>> {
    let wait = wait_after(failures, under_attack);
    (wait > Duration::zero()).then(|| newest.map(|n| n + wait + Duration::seconds(1))).flatten()
}

fn too_many(what: &str, until: DateTime<Utc>, now: DateTime<Utc>) -> ApiError {
    // Rounded up: a client that waits as long as Retry-After says is heard.
    let seconds = ((until - now).num_milliseconds() + 999).div_euclid(1000).max(1) as u64;
    let when = if seconds < 120 { format!("{seconds} s") } else { format!("{} minutes", seconds.div_ceil(60)) };
    ApiError::TooManyRequests(format!("too many failed sign-ins {what}; try again in {when}"), seconds)
}

/// Checks `name` and `password` from `address`; the user on success.
pub async fn sign_in(storage: &dyn Storage, name: &str, password: &str, address: &str) -> Result<UserRecord, ApiError> {
    let now = Utc::now();
    let since = now - Duration::minutes(WINDOW_MINUTES);
    let name = name.trim();
    let (account, addr) = (account_key(name), address_key(address));
    let pair = format!("{}{addr}", pair_prefix(name));
    let pending = storage.record_signin_failure(&[pair.clone(), addr.clone(), account.clone()], now).await?;
    let refuse = |e: ApiError| async {
        storage.forget_signin_failures(&pending).await?;
        Err::<UserRecord, ApiError>(e)
    };
    let from_here = storage.signin_failures(&addr, since, pending[1]).await?;
    if from_here.count >= PER_ADDRESS {
        let until = from_here.oldest.unwrap_or(now) + Duration::minutes(WINDOW_MINUTES);
        return refuse(too_many("from your address", until, now)).await;
    }
    let on_account = storage.signin_failures(&account, since, pending[2]).await?;
    let under_attack = on_account.count >= ACCOUNT_ALARM;
    let ours = storage.signin_failures(&pair, since, pending[0]).await?;
    if let Some(until) = free_at(ours.newest, ours.count, under_attack)
        && now < until
    {
        return refuse(too_many("for this account from your address", until, now)).await;
    }
    if under_attack {
        tracing::warn!(account = %name, failures = on_account.count, "sign-ins slowed: the account is under attack");
        tokio::time::sleep(SLOWDOWN).await;
    }
    let user = storage.user_by_name(name).await?;
    let hash = match &user {
        Some(u) => u.password_hash.clone(),
        None => super::password::dummy().await,
    };
    let ok = super::password::verify(password, &hash).await;
    match user {
        Some(u) if ok => {
            storage.forget_signin_failures(&pending).await?;
            // This address is trusted again on this account (and failures
            // older than the window go); the account's own count stays: it
            // says whether others are still trying.
            storage.clear_signin_failures(&pair, since).await?;
            Ok(u)
        }
        _ => Err(ApiError::Unauthorized("wrong name or password".into())),
    }
}

/// One address's standing on an account.
#[derive(Debug, Clone, PartialEq)]
pub struct AddressThrottle {
    /// The address (an IPv6 one by its /64).
    pub address: String,
    pub failures: i64,
    /// When its next try will be heard (`None`: now).
    pub waits_until: Option<DateTime<Utc>>,
}

/// What the throttle holds on one account, for admins.
#[derive(Debug, Clone, PartialEq)]
pub struct Throttle {
    /// Failures within the window, from any address.
    pub failures: i64,
    pub under_attack: bool,
    pub addresses: Vec<AddressThrottle>,
}

impl Throttle {
    /// Whether anything is held against the account now.
    pub fn is_clear(&self) -> bool {
        self.failures == 0 && self.addresses.iter().all(|a| a.waits_until.is_none())
    }
}

/// The throttle on `name` as of `now`.
pub async fn throttle(storage: &dyn Storage, name: &str, now: DateTime<Utc>) -> Result<Throttle, ApiError> {
    let since = now - Duration::minutes(WINDOW_MINUTES);
    let prefix = pair_prefix(name);
    let keys = storage.signin_failure_keys(&account_key(name), &prefix, since).await?;
    let failures = keys.iter().find(|(k, _)| *k == account_key(name)).map(|(_, c)| c.count).unwrap_or(0);
    let under_attack = failures >= ACCOUNT_ALARM;
    let addresses = keys
        .iter()
        .filter_map(|(k, c): &(String, FailureCount)| {
            let address = k.strip_prefix(&prefix)?.strip_prefix("addr:").unwrap_or_default().to_owned();
            let until = free_at(c.newest, c.count, under_attack).filter(|u| *u > now);
            Some(AddressThrottle { address, failures: c.count, waits_until: until })
        })
        .collect();
    Ok(Throttle { failures, under_attack, addresses })
}

/// Lifts every throttle on `name` (its account count and each address's);
/// what it was.
pub async fn unthrottle(storage: &dyn Storage, name: &str) -> Result<Throttle, ApiError> {
    let was = throttle(storage, name, Utc::now()).await?;
    storage.forget_signin_failure_keys(&account_key(name), &pair_prefix(name)).await?;
    Ok(was)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_counts_by_its_64() {
        assert_eq!(address_key("2001:db8:1:2:aaaa::1"), address_key("2001:db8:1:2:bbbb::9"));
        assert_ne!(address_key("2001:db8:1:2::1"), address_key("2001:db8:1:3::1"));
        assert_eq!(address_key("::ffff:10.0.0.1"), "addr:10.0.0.1");
        assert_eq!(address_key("10.0.0.1"), "addr:10.0.0.1");
    }

    #[test]
    fn waits_grow_and_stop_at_the_window() {
        let s = |n, attack| wait_after(n, attack).num_seconds();
        assert_eq!([s(0, false), s(3, false), s(4, false), s(5, false), s(6, false)], [0, 0, 1, 2, 4]);
        assert_eq!(s(40, false), WINDOW_MINUTES * 60);
        assert_eq!([s(0, true), s(1, true), s(2, true)], [0, 30, 60]);
        assert_eq!(s(100, true), WINDOW_MINUTES * 60);
    }
}
