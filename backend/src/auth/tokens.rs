//! API tokens: `fp_` and 64 hex digits of randomness from the OS. Only the
//! SHA-256 of a token is stored, with its first characters to recognise it
//! in lists; the token itself is shown once, when it is made.

use chrono::{DateTime, Utc};
use failpass_shared::model::TokenScope;
use sha2::{Digest, Sha256};

use super::{Principal, Via, Viewer};
use crate::db::Storage;
use crate::db::accounts::{NewToken, TokenRecord};
use crate::error::ApiError;

/// Characters of a token kept to recognise it (`fp_` and 8 digits).
const PREFIX_LEN: usize = 11;

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of `secret`, in hex: what the database keeps of tokens and session ids.
pub fn digest(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// A fresh token.
pub fn generate() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("reading randomness: {e}"))?;
    Ok(format!("fp_{}", hex(&bytes)))
}

/// What to make a token for.
pub struct TokenRequest {
    pub name: String,
    pub scope: TokenScope,
    pub project_id: Option<i64>,
    pub user_id: Option<i64>,
    pub created_by: String,
    pub expires_in_days: Option<u32>,
}

/// Longest a token may live; longer-lived tokens are made without `--expires`.
pub const MAX_DAYS: u32 = 3650;

/// Makes and stores a token; returns it (the only time it is seen) with its record.
pub async fn create(storage: &dyn Storage, req: TokenRequest) -> Result<(String, TokenRecord), ApiError> {
    let name = req.name.trim();
    if name.is_empty() || name.len() > 100 || name.chars().any(char::is_control) {
        return Err(ApiError::BadRequest("name: 1 to 100 characters, no control characters".into()));
    }
    if let Some(days) = req.expires_in_days
        && (days == 0 || days > MAX_DAYS)
    {
        return Err(ApiError::BadRequest(format!("expires: 1 to {MAX_DAYS} days (or none)")));
    }
    let token = generate()?;
    let new = NewToken {
        name: name.to_owned(),
        hash: digest(&token),
        prefix: token[..PREFIX_LEN].to_owned(),
        scope: req.scope,
        project_id: req.project_id,
        user_id: req.user_id,
        created_by: req.created_by,
        expires_at: req.expires_in_days.map(|d| Utc::now() + chrono::Duration::days(d as i64)),
    };
    let record = storage.create_token(&new).await?;
    Ok((token, record))
}

/// The viewer a bearer token stands for; a 401 naming why for a token that
/// is unknown, revoked or expired.
pub async fn authenticate(storage: &dyn Storage, token: &str) -> Result<Viewer, ApiError> {
    let now = Utc::now();
    let record = storage
        .token_by_hash(&digest(token))
        .await?
        .ok_or_else(|| ApiError::Unauthorized("unknown API token".into()))?;
    if let Some(at) = record.revoked_at {
        return Err(ApiError::Unauthorized(format!("this API token ({}…) was revoked on {}", record.prefix, day(at))));
    }
    if let Some(at) = record.expires_at.filter(|t| *t <= now) {
        return Err(ApiError::Unauthorized(format!("this API token ({}…) expired on {}", record.prefix, day(at))));
    }
    // Last use, at most once a minute: a busy agent should not turn every
    // read into a write.
    if record.last_used_at.is_none_or(|t| now - t > chrono::Duration::seconds(60)) {
        storage.touch_token(record.id, now).await?;
    }
    match (record.scope, record.user_id, record.project_id, record.project) {
        (TokenScope::User, Some(user), _, _) => super::user_viewer(storage, user, Via::Bearer)
            .await?
            .ok_or_else(|| ApiError::Unauthorized("this API token's user no longer exists".into())),
        (scope, _, Some(project_id), Some(project)) => Ok(Viewer {
            principal: Principal::Token { id: record.id, name: record.name, scope, project_id, project },
            via: Via::Bearer,
        }),
        _ => Err(ApiError::Unauthorized("this API token belongs to nothing any more".into())),
    }
}

fn day(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M UTC").to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_random_and_digests_fixed() {
        let (a, b) = (super::generate().unwrap(), super::generate().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 67);
        assert!(a.starts_with("fp_"));
        assert_eq!(super::digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
