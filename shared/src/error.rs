//! The JSON error body every API error carries.

use serde::{Deserialize, Serialize};

/// `{code, message}`: `code` is stable and machine-readable (`bad_request`,
/// `not_found`, `conflict`, `unauthorized`, `internal`), `message` is for people
/// and names the offending field where there is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"code": "bad_request", "message": "since: `2026-13-01` is not a day: expected YYYY-MM-DD, e.g. 2026-11-30"})))]
pub struct ApiErrorBody {
    pub code: String,
    pub message: String,
}

/// A value that could not be parsed from its string form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{value}`, expected one of: {expected}")]
pub struct ParseEnumError {
    pub what: &'static str,
    pub value: String,
    pub expected: String,
}
