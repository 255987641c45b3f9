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
    let started = std::time::Instant::now();
    if crate::db::is_postgres(url) {
        // pg_dump takes one snapshot for the whole dump, so writes during it
        // are in the archive whole or not at all.
        let status = tokio::process::Command::new("pg_dump")
            .args(["--format=custom", "--no-owner", "--file"])
            .arg(to)
            .arg(url)
            .status()
            .await
            .context("running pg_dump (PostgreSQL's client tools: apt-get install postgresql-client)")?;
        if !status.success() {
            let _ = std::fs::remove_file(to);
            bail!("pg_dump of {} failed ({status})", redact(url));
        }
    } else {
        let path = crate::db::sqlite_target(url)?.path;
        if !path.exists() {
            bail!("no database at {}: nothing to back up (give --data-dir or --database-url)", path.display());
        }
        if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("--to: {}", dir.display()))?;
        }
        let storage = crate::db::connect(url).await.with_context(|| format!("opening {}", redact(url)))?;
        storage.backup_into(to).await.with_context(|| format!("copying {} to {}", redact(url), to.display()))?;
    }
    let size = std::fs::metadata(to).map(|m| m.len()).unwrap_or(0);
    println!("{} ({size} bytes) written in {:.1} s", to.display(), started.elapsed().as_secs_f64());
    Ok(())
}
