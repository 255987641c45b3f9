//! `/api/v1/projects`

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::query::FieldError;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateProjectRequest {
    /// `owner/name`, as on the forge (`pytorch/pytorch`).
    pub slug: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Public projects get a status page; private ones are visible to members only.
    #[serde(default = "default_public")]
    pub public: bool,
}

fn default_public() -> bool {
    true
}

impl CreateProjectRequest {
    /// Checks the fields a database constraint would otherwise reject less clearly.
    pub fn validate(&self) -> Result<(), FieldError> {
        validate_slug(&self.slug)?;
        if let Some(name) = &self.name {
            if name.trim().is_empty() || name.len() > 200 {
                return Err(FieldError::new("name", "must be 1 to 200 characters"));
            }
        }
        Ok(())
    }
}

/// A slug is `name` or `owner/name`, each part of ASCII letters, digits, `.`, `_`, `-`.
pub fn validate_slug(slug: &str) -> Result<(), FieldError> {
    let part_ok = |p: &str| {
        !p.is_empty() && p.len() <= 100 && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    let mut parts = slug.split('/');
    let ok = match (parts.next(), parts.next(), parts.next()) {
        (Some(a), None, None) => part_ok(a),
        (Some(a), Some(b), None) => part_ok(a) && part_ok(b),
        _ => false,
    };
    if ok && !slug.chars().all(|c| c.is_ascii_digit()) {
        Ok(())
    } else {
        Err(FieldError::new(
            "slug",
            format!("`{slug}` is not `owner/name` of letters, digits, `.`, `_` or `-` (and not all digits)"),
        ))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Project {
    pub id: i64,
    pub slug: String,
    pub name: String,
    pub description: Option<String>,
    pub public: bool,
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
        assert!(validate_slug("jax").is_ok());
        assert!(validate_slug("huggingface/transformers.js").is_ok());
        for bad in ["", "a/b/c", "a b", "/x", "x/", "12345", "a/<script>"] {
            let e = validate_slug(bad).unwrap_err();
            assert_eq!(e.field, "slug", "{bad}");
        }
    }
}
