//! `/api/v1/projects`

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::query::FieldError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"slug": "pytorch/pytorch", "name": "PyTorch", "public": true})))]
pub struct CreateProjectRequest {
    /// `owner/name`, as on the forge (`pytorch/pytorch`).
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::api::openapi::slug))]
    pub slug: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Public projects get a status page; private ones are visible to members
    /// only. Left out: public, unless the server runs `--private-by-default`
    /// (and, for an existing project in an import, unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public: Option<bool>,
}

impl CreateProjectRequest {
    /// Checks the fields a database constraint would otherwise reject less clearly.
    pub fn validate(&self) -> Result<(), FieldError> {
        validate_slug(&self.slug)?;
        if let Some(name) = &self.name
            && (name.trim().is_empty() || name.len() > 200)
        {
            return Err(FieldError::new("name", "must be 1 to 200 characters"));
        }
        if self.description.as_ref().is_some_and(|d| d.len() > 10_000) {
            return Err(FieldError::new("description", "is longer than 10000 bytes"));
        }
        Ok(())
    }
}

/// A slug's shape for the OpenAPI document (besides: not only dots, not both
/// parts all digits).
pub const SLUG_PATTERN: &str = r"^[A-Za-z0-9._-]{1,100}/[A-Za-z0-9._-]{1,100}$";

/// A slug is `owner/name` as on the forge: each part 1 to 100 ASCII letters,
/// digits, `.`, `_` or `-`, not only dots, and not both parts all digits.
pub fn validate_slug(slug: &str) -> Result<(), FieldError> {
    if slug.len() > 201 {
        return Err(FieldError::new("slug", "is longer than 201 characters (`owner/name`, each at most 100)"));
    }
    let part_ok = |p: &str| {
        !p.is_empty()
            && p.len() <= 100
            && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
            && !p.bytes().all(|b| b == b'.')
    };
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    let ok = match slug.split_once('/') {
        Some((owner, name)) => part_ok(owner) && part_ok(name) && !(digits(owner) && digits(name)),
        None => false,
    };
    if ok {
        Ok(())
    } else {
        Err(FieldError::new(
            "slug",
            format!("`{slug}` is not `owner/name` (each part letters, digits, `.`, `_` or `-`)"),
        ))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Project {
    pub id: i64,
    pub slug: String,
    pub name: String,
    pub description: Option<String>,
    pub public: bool,
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc"))]
    pub created_at: DateTime<Utc>,
    /// Reports filed under this project.
    pub reports: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert!(validate_slug("pytorch/pytorch").is_ok());
        assert!(validate_slug("huggingface/transformers.js").is_ok());
        assert!(validate_slug("jax-ml/jax").is_ok());
        for bad in ["", "jax", "a/b/c", "a b", "/x", "x/", "12345", "1234/5678", "a/<script>", "../..", "a/."] {
            let e = validate_slug(bad).unwrap_err();
            assert_eq!(e.field, "slug", "{bad}");
        }
    }
}
