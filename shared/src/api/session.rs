//! `/api/v1/session`: who the caller is and what they may do, for the
//! dashboard to offer only what its user may use.

use serde::{Deserialize, Serialize};

use crate::model::{ProjectRole, TokenScope};

/// The caller, as the server sees them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Me {
    /// The signed-in user (or the user a personal token acts as); `None` for anonymous callers.
    pub user: Option<String>,
    /// A global administrator.
    pub admin: bool,
    /// Projects the user is a member of, with the role.
    pub memberships: Vec<Membership>,
    /// When the caller is a project token: its scope and project.
    pub token: Option<TokenInfo>,
    /// Whether this server shows nothing to anonymous callers.
    pub require_sign_in: bool,
    /// Attempts waiting for this caller's review (`/inbox`), in the projects
    /// they review; 0 for those who review none.
    #[serde(default)]
    pub inbox: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Membership {
    pub project: String,
    pub role: ProjectRole,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenInfo {
    pub scope: TokenScope,
    pub project: Option<String>,
}

impl Me {
    /// Whether the caller maintains `project` (reruns, reviews, refine, tokens).
    pub fn maintains(&self, project: &str) -> bool {
        self.admin || self.memberships.iter().any(|m| m.project == project && m.role == ProjectRole::Maintainer)
    }

    /// Whether the caller maintains any project (the token page is theirs).
    pub fn maintains_any(&self) -> bool {
        self.admin || self.memberships.iter().any(|m| m.role == ProjectRole::Maintainer)
    }
}
