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
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::api::projects::slug))]
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
    /// Where the project lives upstream (`https://github.com/pytorch/pytorch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_url: Option<String>,
    /// A benchmark (SWE-bench and the like): its instances are graded, not
    /// waiting for a maintainer, so they are in no backlog. Left out: not a
    /// benchmark (and, for an existing project in an import, unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<bool>,
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
        if let Some(url) = &self.upstream_url {
            validate_upstream_url(url)?;
        }
        Ok(())
    }
}

/// `PATCH /api/v1/projects/{owner}/{name}`: what to change (fields left out
/// stay as they are; an empty description or upstream address removes it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"public": false, "upstream_url": "https://github.com/pytorch/pytorch"})))]
pub struct UpdateProjectRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream_url: Option<String>,
    /// Marks the project a benchmark, or not: its open instances leave, or
    /// join, the backlog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark: Option<bool>,
}

impl UpdateProjectRequest {
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.name.is_none()
            && self.description.is_none()
            && self.public.is_none()
            && self.upstream_url.is_none()
            && self.benchmark.is_none()
        {
            return Err(FieldError::new(
                "name",
                "nothing to change: give name, description, public, upstream_url or benchmark",
            ));
        }
        if let Some(name) = &self.name
            && (name.trim().is_empty() || name.len() > 200)
        {
            return Err(FieldError::new("name", "must be 1 to 200 characters"));
        }
        if self.description.as_ref().is_some_and(|d| d.len() > 10_000) {
            return Err(FieldError::new("description", "is longer than 10000 bytes"));
        }
        if let Some(url) = self.upstream_url.as_deref().filter(|u| !u.trim().is_empty()) {
            validate_upstream_url(url)?;
        }
        Ok(())
    }
}

/// An upstream address is an `http(s)://` URL of at most 500 characters,
/// with no spaces or control characters (it becomes a link on the pages).
pub fn validate_upstream_url(url: &str) -> Result<(), FieldError> {
    let url = url.trim();
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    let ok = url.len() <= 500
        && rest.is_some_and(|r| {
            let host = r.split(['/', '?', '#']).next().unwrap_or("");
            !host.is_empty() && !host.contains('@')
        })
        && !url.chars().any(|c| c.is_whitespace() || c.is_control() || matches!(c, '"' | '<' | '>' | '\\' | '`'));
    if ok {
        Ok(())
    } else {
        Err(FieldError::new(
            "upstream_url",
            format!("`{url}` is not an http(s) address (at most 500 characters, no spaces or quotes)"),
        ))
    }
}

/// A slug's shape for the OpenAPI document (besides: not only dots, not both
/// parts all digits).
pub const SLUG_PATTERN: &str = r"^[A-Za-z0-9._-]{1,100}/[A-Za-z0-9._-]{1,100}$";

/// A project slug, `owner/name`, as the OpenAPI document describes it.
#[cfg(feature = "openapi")]
pub fn slug() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some(SLUG_PATTERN))
        .examples([serde_json::json!("pytorch/pytorch")])
        .into()
}

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
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub description: Option<String>,
    pub public: bool,
    /// Where the project lives upstream, when someone said (the set-up
    /// pages show it; the dashboard's WebAssembly does not read it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub upstream_url: Option<String>,
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub created_at: DateTime<Utc>,
    /// Moves whenever a write changes the status or figures of one of the
    /// project's reports (a cache of its figures is current while it holds).
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub data_version: i64,
    /// A benchmark: its instances are in no backlog.
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub benchmark: bool,
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
