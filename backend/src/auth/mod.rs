//! The one place a handler asks "who is this and what may they see".
//!
//! A request is anonymous, a signed-in user (a session cookie), or an API
//! token (`Authorization: Bearer …`): a project token with a scope, or a
//! user's personal token acting as that user. [`Viewer::resolve`] works this
//! out once per request; handlers take a [`Viewer`] and
//!
//! - pass [`Viewer::scope`] to storage, so private projects stay out of every
//!   list, figure and error by SQL, not by filtering afterwards;
//! - call [`Viewer::require`] before changing anything in a project.
//!
//! Who may do what is one table, [`access::PERMISSIONS`]; the routes and
//! their actions are [`access::ROUTES`].

pub mod access;
pub mod password;
pub mod sessions;
pub mod signin;
pub mod tokens;

use axum::http::request::Parts;
use failpass_shared::api::session::Me;
use failpass_shared::model::TokenScope;

pub use access::{Action, Role};

use crate::db::accounts::Membership;
use crate::db::{ProjectScope, Storage};
use crate::error::ApiError;

/// The session key holding the signed-in user's id.
pub const SESSION_USER: &str = "user_id";

/// Who is asking.
#[derive(Debug, Clone, PartialEq)]
pub enum Principal {
    Anonymous,
    /// The local operator: the command line, with the database in hand. Never reachable over HTTP.
    Operator,
    User {
        id: i64,
        name: String,
        admin: bool,
        memberships: Vec<Membership>,
    },
    /// A project token.
    Token {
        id: i64,
        name: String,
        scope: TokenScope,
        project_id: i64,
        project: String,
    },
}

/// How the request proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Nothing,
    /// A session cookie: writes must come from failpass's own pages (see `security`).
    Session,
    /// An `Authorization: Bearer` token, which a browser never sends on its own.
    Bearer,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Viewer {
    pub principal: Principal,
    pub via: Via,
}

impl Viewer {
    pub fn anonymous() -> Self {
        Self { principal: Principal::Anonymous, via: Via::Nothing }
    }

    /// The command line's caller, who may do anything.
    pub fn operator() -> Self {
        Self { principal: Principal::Operator, via: Via::Nothing }
    }

    pub fn is_anonymous(&self) -> bool {
        self.principal == Principal::Anonymous
    }

    pub fn is_admin(&self) -> bool {
        matches!(self.principal, Principal::Operator | Principal::User { admin: true, .. })
    }

    /// A name for records this caller makes (`created_by`, the reviewer).
    /// Who this is and through what, for a report's activity timeline.
    pub fn origin(&self) -> crate::db::reports::Origin {
        let via = match self.via {
            Via::Session => "ui",
            Via::Bearer => "api",
            Via::Nothing if self.principal == Principal::Operator => "cli",
            Via::Nothing => "webhook",
        };
        crate::db::reports::Origin { actor: self.name(), via }
    }

    pub fn name(&self) -> String {
        match &self.principal {
            Principal::Anonymous => "anonymous".into(),
            Principal::Operator => "operator".into(),
            Principal::User { name, .. } => name.clone(),
            Principal::Token { id, name, scope, .. } => format!("{scope} token {id} ({name})"),
        }
    }

    /// This caller's role in the project `slug`.
    pub fn role_in(&self, slug: &str) -> Role {
        match &self.principal {
            Principal::Anonymous => Role::Outsider,
            Principal::Operator | Principal::User { admin: true, .. } => Role::Admin,
            Principal::User { memberships, .. } => {
                memberships.iter().find(|m| m.project == slug).map_or(Role::Outsider, |m| Role::of_membership(m.role))
            }
            Principal::Token { scope, project, .. } if project == slug => {
                Role::of_token(*scope).unwrap_or(Role::Outsider)
            }
            Principal::Token { .. } => Role::Outsider,
        }
    }

    /// Every role this caller holds somewhere (besides being an outsider everywhere else).
    fn roles(&self) -> Vec<Role> {
        match &self.principal {
            Principal::Anonymous => vec![],
            Principal::Operator | Principal::User { admin: true, .. } => vec![Role::Admin],
            Principal::User { memberships, .. } => memberships.iter().map(|m| Role::of_membership(m.role)).collect(),
            Principal::Token { scope, .. } => Role::of_token(*scope).into_iter().collect(),
        }
    }

    /// Whether this caller may take `action` in some project: the route-level
    /// check, before any project is known.
    pub fn may_ever(&self, action: Action) -> bool {
        matches!(action, Action::Open | Action::Read) || self.roles().iter().any(|r| r.may(action))
    }

    /// The projects whose private data this caller may read.
    pub fn scope(&self) -> ProjectScope {
        self.scope_for(Action::Read)
    }

    /// The projects where this caller may take `action`. For `Read` that
    /// includes every public project; for writes only the caller's own.
    pub fn scope_for(&self, action: Action) -> ProjectScope {
        if self.is_admin() {
            return ProjectScope::All;
        }
        let ids: Vec<i64> = match &self.principal {
            Principal::User { memberships, .. } => {
                memberships.iter().filter(|m| Role::of_membership(m.role).may(action)).map(|m| m.project_id).collect()
            }
            Principal::Token { scope, project_id, .. } if Role::of_token(*scope).is_some_and(|r| r.may(action)) => {
                vec![*project_id]
            }
            _ => vec![],
        };
        match action {
            Action::Read | Action::Open if ids.is_empty() => ProjectScope::PublicOnly,
            Action::Read | Action::Open => ProjectScope::PublicAnd(ids),
            _ => ProjectScope::Only(ids),
        }
    }

    /// Fails unless this caller may take `action` in the project `slug`,
    /// which the caller can already see (look it up with [`Viewer::scope`]
    /// first, so a hidden project answers exactly as a missing one does).
    pub fn require(&self, action: Action, slug: &str) -> Result<(), ApiError> {
        let role = self.role_in(slug);
        if role.may(action) {
            return Ok(());
        }
        if self.is_anonymous() {
            return Err(ApiError::Unauthorized(format!("sign in (or send an API token) to {}", action.as_str())));
        }
        let allowed: Vec<&str> = access::PERMISSIONS
            .iter()
            .filter(|(a, _)| *a == action)
            .flat_map(|(_, roles)| roles.iter().map(|r| r.as_str()))
            .collect();
        Err(ApiError::Forbidden(format!(
            "you are {} of {slug}, and to {} in a project takes: {}",
            match role {
                Role::Outsider => "not a member",
                other => other.with_article(),
            },
            action.as_str(),
            allowed.join(", ")
        )))
    }

    /// The route-level check: anonymous callers are told to sign in, callers
    /// who can never take the action are refused before anything is read.
    pub fn check_route(&self, action: Action) -> Result<(), ApiError> {
        if self.may_ever(action) {
            return Ok(());
        }
        if self.is_anonymous() {
            return Err(ApiError::Unauthorized(format!("sign in (or send an API token) to {}", action.as_str())));
        }
        let what = match &self.principal {
            Principal::Token { scope, .. } => {
                Role::of_token(*scope).map_or("this token", |r| r.with_article()).to_owned()
            }
            _ => "your account".to_owned(),
        };
        // And who may: the message names them (the OpenAPI document promises so).
        let who: Vec<&str> = access::PERMISSIONS
            .iter()
            .find(|(a, _)| *a == action)
            .map(|(_, roles)| roles.iter().map(|r| r.with_article()).collect())
            .unwrap_or_default();
        let who = match who.split_last() {
            Some((last, [])) => format!("; {last} may"),
            Some((last, rest)) => format!("; {} or {last} may", rest.join(", ")),
            None => String::new(),
        };
        Err(ApiError::Forbidden(format!("{what} may not {} in any project{who}", action.as_str())))
    }

    /// The caller as `/api/v1/session` describes it.
    pub fn me(&self, require_sign_in: bool) -> Me {
        use failpass_shared::api::session::{Membership as M, TokenInfo};
        let mut me = Me { require_sign_in, ..Default::default() };
        match &self.principal {
            Principal::Anonymous => {}
            Principal::Operator => {
                me.user = Some("operator".into());
                me.admin = true;
            }
            Principal::User { name, admin, memberships, .. } => {
                me.user = Some(name.clone());
                me.admin = *admin;
                me.memberships = memberships.iter().map(|m| M { project: m.project.clone(), role: m.role }).collect();
            }
            Principal::Token { scope, project, .. } => {
                me.token = Some(TokenInfo { scope: *scope, project: Some(project.clone()) })
            }
        }
        me
    }

    /// Works out who sent `parts` (once; later calls read the cached answer).
    /// A token that is unknown, revoked or expired is a 401, never anonymous:
    /// a CI job with a dead token should fail loudly.
    pub async fn resolve(parts: &mut Parts, storage: &dyn Storage) -> Result<Viewer, ApiError> {
        if let Some(v) = parts.extensions.get::<Viewer>() {
            return Ok(v.clone());
        }
        let viewer = if let Some(header) = parts.headers.get(axum::http::header::AUTHORIZATION) {
            let text = header.to_str().unwrap_or_default();
            let token = text
                .strip_prefix("Bearer ")
                .or_else(|| text.strip_prefix("bearer "))
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .ok_or_else(|| ApiError::Unauthorized("Authorization: expected `Bearer TOKEN`".into()))?;
            tokens::authenticate(storage, token).await?
        } else if let Some(session) = parts.extensions.get::<tower_sessions::Session>() {
            let user_id: Option<i64> = session.get(SESSION_USER).await.map_err(sessions::unavailable)?;
            match user_id {
                Some(id) => match user_viewer(storage, id, Via::Session).await? {
                    Some(v) => v,
                    // The user was removed: their session signs nobody in.
                    None => Viewer::anonymous(),
                },
                None => Viewer::anonymous(),
            }
        } else {
            Viewer::anonymous()
        };
        parts.extensions.insert(viewer.clone());
        Ok(viewer)
    }
}

/// The viewer for user `id` with their memberships, or `None` if they are gone.
pub async fn user_viewer(storage: &dyn Storage, id: i64, via: Via) -> Result<Option<Viewer>, ApiError> {
    let Some(user) = storage.user_by_id(id).await? else { return Ok(None) };
    let memberships = storage.memberships(user.id).await?;
    Ok(Some(Viewer {
        principal: Principal::User { id: user.id, name: user.name, admin: user.admin, memberships },
        via,
    }))
}

/// A user name: 1 to 64 ASCII letters, digits, `.`, `_` or `-` (the
/// command line's `failpass user add` and the Accounts page both hold to it).
pub fn check_user_name(name: &str) -> Result<(), String> {
    let ok =
        !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok { Ok(()) } else { Err(format!("user name `{name}`: 1 to 64 ASCII letters, digits, `.`, `_` or `-`")) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use failpass_shared::model::ProjectRole;

    fn user(admin: bool, memberships: &[(i64, &str, ProjectRole)]) -> Viewer {
        Viewer {
            principal: Principal::User {
                id: 1,
                name: "u".into(),
                admin,
                memberships: memberships
                    .iter()
                    .map(|(id, p, r)| Membership { project_id: *id, project: (*p).into(), role: *r })
                    .collect(),
            },
            via: Via::Session,
        }
    }

    #[test]
    fn scopes_follow_roles() {
        let v = user(false, &[(1, "a/a", ProjectRole::Viewer), (2, "b/b", ProjectRole::Maintainer)]);
        assert_eq!(v.scope(), ProjectScope::PublicAnd(vec![1, 2]));
        assert_eq!(v.scope_for(Action::Rerun), ProjectScope::Only(vec![2]));
        assert!(v.require(Action::Review, "b/b").is_ok());
        assert!(matches!(v.require(Action::Review, "a/a"), Err(ApiError::Forbidden(_))));
        assert!(matches!(v.require(Action::ManageEnvironments, "b/b"), Err(ApiError::Forbidden(_))));
        assert_eq!(user(true, &[]).scope(), ProjectScope::All);
        assert_eq!(Viewer::anonymous().scope(), ProjectScope::PublicOnly);
        assert!(matches!(Viewer::anonymous().check_route(Action::SubmitAttempt), Err(ApiError::Unauthorized(_))));
        let token = Viewer {
            principal: Principal::Token {
                id: 1,
                name: "t".into(),
                scope: TokenScope::Agent,
                project_id: 7,
                project: "c/c".into(),
            },
            via: Via::Bearer,
        };
        assert_eq!(token.scope(), ProjectScope::PublicAnd(vec![7]));
        assert!(token.require(Action::SubmitAttempt, "c/c").is_ok());
        assert!(token.require(Action::SubmitAttempt, "a/a").is_err());
        assert!(matches!(token.check_route(Action::Import), Err(ApiError::Forbidden(_))));
    }
}
