//! PostgreSQL: the scale path, shared by workers on many machines. Sessions
//! run in UTC so dates and weeks mean the same as on SQLite.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

use super::StorageResult;

pub struct PgStorage {
    pub(super) read: PgPool,
    pub(super) write: PgPool,
}

impl PgStorage {
    pub async fn connect(url: &str) -> StorageResult<Self> {
        let options = PgConnectOptions::from_str(url)?.options([("timezone", "UTC")]);
        let pool = PgPoolOptions::new()
            .max_connections(10)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await?;
        Ok(Self { read: pool.clone(), write: pool })
    }
}
