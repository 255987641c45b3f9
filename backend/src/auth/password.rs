//! Passwords: argon2id (the `argon2` crate's defaults: 19 MiB, 2 passes,
//! one lane, OWASP's recommendation), stored as PHC strings. Hashing is
//! deliberately slow, so it runs off the async threads.

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};

/// Shortest password accepted.
pub const MIN_LEN: usize = 10;
/// Longest: hashing cost grows with length, and no one types more.
pub const MAX_LEN: usize = 1024;

/// Why a password is refused, naming the rule.
pub fn check(password: &str) -> Result<(), String> {
    let n = password.chars().count();
    if n < MIN_LEN {
        return Err(format!("password: at least {MIN_LEN} characters (this one has {n})"));
    }
    if password.len() > MAX_LEN {
        return Err(format!("password: at most {MAX_LEN} bytes"));
    }
    if password.chars().any(char::is_control) {
        return Err("password: control characters are not allowed".into());
    }
    Ok(())
}

/// Hashes at once, however many sign-ins arrive: each takes 19 MiB and a
/// core for tens of milliseconds, so more would only trade memory for nothing.
static HASHING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);

/// The PHC string for `password`, with a fresh salt.
pub async fn hash(password: &str) -> anyhow::Result<String> {
    let password = password.to_owned();
    let _permit = HASHING.acquire().await?;
    tokio::task::spawn_blocking(move || {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("reading randomness: {e}"))?;
        let salt = SaltString::encode_b64(&bytes).map_err(|e| anyhow::anyhow!("salt: {e}"))?;
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| anyhow::anyhow!("hashing: {e}"))
    })
    .await?
}

/// Whether `password` matches `phc` (a stored hash). An unreadable hash matches nothing.
pub async fn verify(password: &str, phc: &str) -> bool {
    let (password, phc) = (password.to_owned(), phc.to_owned());
    let Ok(_permit) = HASHING.acquire().await else { return false };
    tokio::task::spawn_blocking(move || {
        PasswordHash::new(&phc).is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
    })
    .await
    .unwrap_or(false)
}

/// A hash no password matches, checked against when the user does not
/// exist, so a sign-in takes as long for a wrong name as for a wrong password.
pub async fn dummy() -> String {
    static DUMMY: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    DUMMY.get_or_init(|| async { hash("no password ever matches this one").await.unwrap_or_default() }).await.clone()
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn hashes_verify_and_differ() {
        let a = super::hash("correct horse battery").await.unwrap();
        let b = super::hash("correct horse battery").await.unwrap();
        assert!(a.starts_with("$argon2id$"), "{a}");
        assert_ne!(a, b, "each hash has its own salt");
        assert!(super::verify("correct horse battery", &a).await);
        assert!(!super::verify("correct horse batterz", &a).await);
        assert!(!super::verify("x", "not a hash").await);
        assert!(super::check("short").is_err());
        assert!(super::check("long enough now").is_ok());
    }
}
