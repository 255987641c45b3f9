//! The one place a handler asks "who is this and what may they see".
//!
//! failpass has no accounts yet: every request is the local operator, who
//! sees and changes everything. When accounts and roles arrive, only
//! `Viewer::from_request_parts` changes (read a session or token, look up
//! the role); handlers already take a `Viewer` and pass `viewer.scope()` to
//! storage, so private projects stay out of lists by SQL, not by filtering.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::db::ProjectScope;
use crate::error::ApiError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Whoever runs this instance, in single-user mode.
    Operator,
    /// Read-only access to public projects.
    Anonymous,
}

#[derive(Debug, Clone)]
pub struct Viewer {
    pub role: Role,
}

impl Viewer {
    /// Which projects this viewer may see.
    pub fn scope(&self) -> ProjectScope {
        match self.role {
            Role::Operator => ProjectScope::All,
            Role::Anonymous => ProjectScope::PublicOnly,
        }
    }

    /// Fails unless this viewer may create or change data.
    pub fn require_write(&self) -> Result<(), ApiError> {
        match self.role {
            Role::Operator => Ok(()),
            Role::Anonymous => Err(ApiError::Unauthorized("sign in to change data".into())),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Viewer {
    type Rejection = ApiError;

    async fn from_request_parts(_parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Viewer { role: Role::Operator })
    }
}
