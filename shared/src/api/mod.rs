//! Request and response shapes of the JSON API under `/api/v1`.

pub mod attempts;
pub mod figures;
pub mod hooks;
pub mod import;
pub mod jobs;
#[cfg(feature = "openapi")]
pub mod openapi;
pub mod oracles;
pub mod projects;
pub mod query;
pub mod releases;
pub mod reports;
pub mod routing;
pub mod session;
pub mod status;

use serde::{Deserialize, Serialize};

/// One page of a keyset-paginated list. `next_cursor` is opaque; pass it back
/// as `cursor=` for the next page. `None` means this is the last page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// Page size when `limit` is not given.
/// `true`, for fields that default to it.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn yes() -> bool {
    true
}

pub const DEFAULT_LIMIT: u32 = 50;
/// The largest `limit` accepted.
pub const MAX_LIMIT: u32 = 500;
