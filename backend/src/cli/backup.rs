//! `failpass backup --to FILE`: a consistent copy of the database, made
//! while failpass serves. SQLite: `VACUUM INTO`, a database file that
//! failpass serves from as it is (restore: stop failpass, put the file in
//! place of `failpass.db`, start it). PostgreSQL: `pg_dump`'s custom
//! archive (restore: `pg_restore --no-owner -d URL FILE` into an empty
//! database). docs/deploy.md has the steps; `backend/tests/api/backup.rs`
//! restores both and compares.

use std::path::Path;

use anyhow::{Context, bail};

use crate::startup::redact;

pub async fn backup(url: &str, to: &Path) -> anyhow::Result<()> {
    if to.exists() {
        bail!("--to: {} exists; a backup is never written over", to.display());
    }
    if !crate::db::is_postgres(url) {
        let path = crate::db::sqlite_target(url)?.path;
        if !path.exists() {
            bail!("no database at {}: nothing to back up (give --data-dir or --database-url)", path.display());
        }
    }
    let started = std::time::Instant::now();
    if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("--to: {}", dir.display()))?;
    }
    if crate::db::is_postgres(url) {
        // The password goes in pg_dump's environment, not on its command
        // line, where any local user reads it (`ps`).
        let (url_alone, password) = without_password(url)?;
        let mut pg_dump = tokio::process::Command::new("pg_dump");
        if let Some(p) = password {
            pg_dump.env("PGPASSWORD", p);
        }
        // pg_dump takes one snapshot for the whole dump, so writes during it
        // are in the archive whole or not at all.
        let status = pg_dump
            .args(["--format=custom", "--no-owner", "--file"])
            .arg(to)
            .arg(&url_alone)
            .status()
            .await
            .context("running pg_dump (PostgreSQL's client tools: apt-get install postgresql-client)")?;
        if !status.success() {
            let _ = std::fs::remove_file(to);
            bail!("pg_dump of {} failed ({status})", redact(url));
        }
    } else {
        let storage = crate::db::connect(url).await.with_context(|| format!("opening {}", redact(url)))?;
        storage.backup_into(to).await.with_context(|| format!("copying {} to {}", redact(url), to.display()))?;
    }
    let size = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
    println!("{} ({size} bytes) written in {:.1} s", to.display(), started.elapsed().as_secs_f64());
    Ok(())
}

/// A PostgreSQL URL without its password, and the password (decoded).
fn without_password(url: &str) -> anyhow::Result<(String, Option<String>)> {
    let mut parsed = reqwest::Url::parse(url).with_context(|| format!("--database-url: {}", redact(url)))?;
    let password = parsed.password().map(|p| percent_encoding::percent_decode_str(p).decode_utf8_lossy().into_owned());
    let _ = parsed.set_password(None);
    Ok((parsed.to_string(), password))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_password_leaves_the_url_decoded() {
        let (url, password) =
            super::without_password("postgres://fp:p%40ss+w%2F@db:5432/failpass?sslmode=require").unwrap();
        assert_eq!(url, "postgres://fp@db:5432/failpass?sslmode=require");
        assert_eq!(password.as_deref(), Some("p@ss+w/"));
        let (url, password) = super::without_password("postgres://fp@db/failpass").unwrap();
        assert_eq!((url.as_str(), password), ("postgres://fp@db/failpass", None));
    }
}
