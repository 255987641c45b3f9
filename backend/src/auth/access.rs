//! Who may do what: one table the router, the handlers, the README and the
//! authorization matrix test all read.
//!
//! Every route the router serves has a [`RouteSpec`] in [`ROUTES`] naming its
//! [`Action`] and the body it takes; `routes::router` refuses to register a
//! route without one, so a new route cannot slip in unguarded. Whether a
//! caller may take an action in a project is [`Role::may`], from
//! [`PERMISSIONS`].

use failpass_shared::model::{ProjectRole, TokenScope};

/// What a request does, as far as access goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Pages, assets, health, sign-in and "who am I": anyone (no project data).
    Open,
    /// Read a project's data: anyone for public projects, members and the
    /// project's tokens for private ones. Lists show only what the caller may read.
    Read,
    /// Create attempts and their runs.
    SubmitAttempt,
    /// Bulk import and JUnit uploads (each record checked against its project).
    Import,
    /// Create reports.
    WriteReport,
    /// Accept or reject an attempt (the reviewer is the signed-in user).
    Review,
    /// Reruns, re-checks and the refine loop.
    Rerun,
    /// Create, list and revoke a project's API tokens.
    ManageTokens,
    /// Read a project's environments (recipes: paths, variables; those who rerun need them).
    ReadEnvironments,
    /// Create or change environments (the recipes the runner builds).
    ManageEnvironments,
    /// Create projects and change their visibility.
    ManageProjects,
    /// Add a project's members, change their roles, take them away.
    ManageMembers,
    /// Scrape Prometheus metrics: the metrics token alone decides (the
    /// handler checks it); sessions and API tokens are never consulted.
    Scrape,
}

impl Action {
    pub const fn as_str(self) -> &'static str {
        match self {
            Action::Open => "open",
            Action::Read => "read",
            Action::SubmitAttempt => "submit attempts",
            Action::Import => "import",
            Action::WriteReport => "write reports",
            Action::Review => "review",
            Action::Rerun => "rerun",
            Action::ManageTokens => "manage tokens",
            Action::ReadEnvironments => "read environments",
            Action::ManageEnvironments => "manage environments",
            Action::ManageProjects => "manage projects",
            Action::ManageMembers => "manage members",
            Action::Scrape => "metrics token",
        }
    }
}

/// A caller's standing in one project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// Not signed in, or signed in without a role in this project.
    Outsider,
    Viewer,
    Maintainer,
    Admin,
    AgentToken,
    CiToken,
    ReadToken,
}

impl Role {
    pub const ALL: [Role; 7] =
        [Role::Outsider, Role::Viewer, Role::Maintainer, Role::Admin, Role::AgentToken, Role::CiToken, Role::ReadToken];

    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Outsider => "anonymous or non-member",
            Role::Viewer => "viewer",
            Role::Maintainer => "maintainer",
            Role::Admin => "admin",
            Role::AgentToken => "agent token",
            Role::CiToken => "ci token",
            Role::ReadToken => "read token",
        }
    }

    /// The role with its article, for messages ("an agent token").
    pub fn with_article(self) -> &'static str {
        match self {
            Role::Outsider => "anonymous or non-member",
            Role::Viewer => "a viewer",
            Role::Maintainer => "a maintainer",
            Role::Admin => "an admin",
            Role::AgentToken => "an agent token",
            Role::CiToken => "a ci token",
            Role::ReadToken => "a read token",
        }
    }

    pub fn of_membership(role: ProjectRole) -> Role {
        match role {
            ProjectRole::Maintainer => Role::Maintainer,
            ProjectRole::Viewer => Role::Viewer,
        }
    }

    /// The role a project token has in its project (`user` tokens act as their user instead).
    pub fn of_token(scope: TokenScope) -> Option<Role> {
        match scope {
            TokenScope::Agent => Some(Role::AgentToken),
            TokenScope::Ci => Some(Role::CiToken),
            TokenScope::Read => Some(Role::ReadToken),
            TokenScope::User => None,
        }
    }

    /// Whether this role may take `action` in a project (public or not:
    /// reading a public project is open to everyone, see [`may_read`]).
    pub fn may(self, action: Action) -> bool {
        action == Action::Open || PERMISSIONS.iter().any(|(a, roles)| *a == action && roles.contains(&self))
    }
}

/// Whether `role` may read a project that is `public` or not.
pub fn may_read(role: Role, public: bool) -> bool {
    public || role.may(Action::Read)
}

/// The table: each action and the roles that may take it in a project.
/// Reading a public project is open to everyone besides these.
pub const PERMISSIONS: &[(Action, &[Role])] = &[
    (Action::Read, &[Role::Viewer, Role::Maintainer, Role::Admin, Role::AgentToken, Role::CiToken, Role::ReadToken]),
    (Action::SubmitAttempt, &[Role::Maintainer, Role::Admin, Role::AgentToken, Role::CiToken]),
    (Action::Import, &[Role::Maintainer, Role::Admin, Role::CiToken]),
    (Action::WriteReport, &[Role::Maintainer, Role::Admin, Role::CiToken]),
    (Action::Review, &[Role::Maintainer, Role::Admin]),
    (Action::Rerun, &[Role::Maintainer, Role::Admin]),
    (Action::ManageTokens, &[Role::Maintainer, Role::Admin]),
    (Action::ReadEnvironments, &[Role::Maintainer, Role::Admin]),
    (Action::ManageEnvironments, &[Role::Admin]),
    (Action::ManageProjects, &[Role::Admin]),
    (Action::ManageMembers, &[Role::Maintainer, Role::Admin]),
];

/// What a write route's body must be sent as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// No body (GET, HEAD).
    None,
    /// `application/json`.
    Json,
    /// An HTML form (`application/x-www-form-urlencoded`), from failpass's own pages.
    Form,
    /// A bulk import: one of [`IMPORT_TYPES`], never a type a cross-site form can send.
    Import,
    /// A file upload from failpass's own import page (`multipart/form-data`;
    /// `security::guard` holds it to this server's origin like any form).
    Multipart,
}

impl Body {
    pub fn content_types(self) -> &'static [&'static str] {
        match self {
            Body::None => &[],
            Body::Json => &["application/json"],
            Body::Form => &["application/x-www-form-urlencoded"],
            Body::Import => IMPORT_TYPES,
            Body::Multipart => &["multipart/form-data"],
        }
    }
}

/// The content types `POST /api/v1/import` takes (`text/plain`, forms and
/// multipart are refused: a page on another site can send those).
pub const IMPORT_TYPES: &[&str] =
    &["application/x-ndjson", "application/jsonl", "application/json", "application/xml", "text/xml"];

/// One route: method, path (axum syntax), action and body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteSpec {
    pub method: &'static str,
    pub path: &'static str,
    pub action: Action,
    pub body: Body,
    /// What it is, for the README's table.
    pub what: &'static str,
}

const fn route(method: &'static str, path: &'static str, action: Action, body: Body, what: &'static str) -> RouteSpec {
    RouteSpec { method, path, action, body, what }
}

use Action::*;

/// Every route failpass serves (besides the dashboard's pages and assets,
/// which are `GET`/`HEAD` and open).
pub const ROUTES: &[RouteSpec] = &[
    route("GET", "/healthz", Open, Body::None, "health: the database answers and is writable"),
    route("GET", "/signin", Open, Body::None, "the sign-in page"),
    route("POST", "/signin", Open, Body::Form, "sign in (rate-limited per account and address)"),
    route("POST", "/signout", Open, Body::Form, "sign out"),
    route(
        "GET",
        "/settings/tokens",
        ManageTokens,
        Body::None,
        "the API tokens page: tokens of the projects you maintain",
    ),
    route("POST", "/settings/tokens", ManageTokens, Body::Form, "create a project token (shown once)"),
    route("POST", "/settings/tokens/{id}/revoke", ManageTokens, Body::Form, "revoke a token"),
    route("GET", "/settings/hooks", ManageProjects, Body::None, "the webhooks page: every hook, a new hook (admins)"),
    route("POST", "/settings/hooks", ManageProjects, Body::Form, "add a hook (its secret shown once)"),
    route("GET", "/settings/hooks/{id}", ManageProjects, Body::None, "a hook's delivery log: states, answers, bodies"),
    route("POST", "/settings/hooks/{id}/remove", ManageProjects, Body::Form, "remove a hook (its log stays)"),
    route("POST", "/settings/hooks/{id}/test", ManageProjects, Body::Form, "send a hook a test delivery"),
    route("POST", "/settings/deliveries/{id}/redeliver", ManageProjects, Body::Form, "send a delivery again"),
    route("GET", "/settings/projects", ReadEnvironments, Body::None, "the set-up page: your projects, a new project"),
    route("POST", "/settings/projects", ManageProjects, Body::Form, "create a project (the set-up page's form)"),
    route(
        "GET",
        "/settings/projects/{owner}/{name}",
        ReadEnvironments,
        Body::None,
        "a project's set-up: details, environments and their builds",
    ),
    route(
        "POST",
        "/settings/projects/{owner}/{name}",
        ManageProjects,
        Body::Form,
        "change a project's name, description, visibility, upstream address",
    ),
    route(
        "POST",
        "/settings/projects/{owner}/{name}/environments",
        ManageEnvironments,
        Body::Form,
        "create or replace an environment (the set-up page's form)",
    ),
    route(
        "POST",
        "/settings/projects/{owner}/{name}/environments/{id}/build",
        ManageEnvironments,
        Body::Form,
        "build an environment now (the set-up page's button)",
    ),
    route("GET", "/settings/views", Open, Body::None, "your saved views (signed in): named dashboard addresses"),
    route("POST", "/settings/views", Open, Body::Form, "save a view under a name (signed in)"),
    route("POST", "/settings/views/{id}/remove", Open, Body::Form, "forget one of your saved views (signed in)"),
    route("GET", "/settings/users", ManageProjects, Body::None, "the accounts page: every account, a new one (admins)"),
    route("POST", "/settings/users", ManageProjects, Body::Form, "make an account, its password shown once (admins)"),
    route(
        "GET",
        "/inbox",
        Review,
        Body::None,
        "the review inbox: attempts waiting for a person in the projects you review",
    ),
    route("POST", "/inbox/{id}/review", Review, Body::Form, "accept or reject an attempt from the review inbox"),
    route(
        "POST",
        "/settings/projects/{owner}/{name}/members",
        ManageMembers,
        Body::Form,
        "add a member to a project, or change their role (the set-up page's form)",
    ),
    route(
        "POST",
        "/settings/projects/{owner}/{name}/members/remove",
        ManageMembers,
        Body::Form,
        "take a member's role in a project away",
    ),
    route("GET", "/settings/import", Import, Body::None, "the import page: a file, its format and mapping"),
    route(
        "POST",
        "/settings/import",
        Import,
        Body::Multipart,
        "import an uploaded file; the summary with every rejection",
    ),
    route("GET", "/api/v1/session", Open, Body::None, "who you are: user, admin, memberships, token"),
    route("GET", "/api/v1/openapi.json", Open, Body::None, "this API as an OpenAPI 3.1 document"),
    route("GET", "/docs/api", Open, Body::None, "the API reference page, drawn from the OpenAPI document"),
    route("GET", "/api/v1/projects", Read, Body::None, "projects you may see"),
    route("POST", "/api/v1/projects", ManageProjects, Body::Json, "create a project"),
    route("GET", "/api/v1/projects/{*slug}", Read, Body::None, "one project"),
    route(
        "PATCH",
        "/api/v1/projects/{*slug}",
        ManageProjects,
        Body::Json,
        "change a project's name, description, visibility or upstream address",
    ),
    route("GET", "/api/v1/reports", Read, Body::None, "reports (filters, search, keyset pages)"),
    route("POST", "/api/v1/reports", WriteReport, Body::Json, "file a report: it is routed and the explanation stored"),
    route("GET", "/api/v1/reports/table", Read, Body::None, "the reports list as the queue shows it, with its total"),
    route("GET", "/api/v1/reports/{id}", Read, Body::None, "one report with its explanation"),
    route("GET", "/api/v1/hooks", ManageProjects, Body::None, "outgoing webhooks, their deliveries counted"),
    route("POST", "/api/v1/hooks", ManageProjects, Body::Json, "add an outgoing webhook (its secret shown once)"),
    route("DELETE", "/api/v1/hooks/{id}", ManageProjects, Body::None, "remove a webhook (its log stays)"),
    route("GET", "/api/v1/hooks/{id}/deliveries", ManageProjects, Body::None, "a webhook's last 100 deliveries"),
    route(
        "POST",
        "/api/v1/deliveries/{id}/redeliver",
        ManageProjects,
        Body::Json,
        "send a delivery again (an empty JSON body)",
    ),
    route(
        "POST",
        "/api/v1/webhooks/github",
        Open,
        Body::Json,
        "GitHub `issues` and `issue_comment` deliveries, signed with the project's webhook secret",
    ),
    route(
        "POST",
        "/api/v1/reports/{id}/route",
        Review,
        Body::Json,
        "correct a report's route, saying why: it sticks through re-routing and trains the classifier",
    ),
    route(
        "POST",
        "/api/v1/reports/{id}/route/confirm",
        Review,
        Body::Json,
        "confirm that a report's route is right: it clears the route check and counts towards the rule's precision",
    ),
    route(
        "GET",
        "/api/v1/routing/{owner}/{name}",
        Read,
        Body::None,
        "a project's routing health: route mix, route checks, corrections, confirmations, the alarm, its boilerplate",
    ),
    route("GET", "/routing/{owner}/{name}", Read, Body::None, "a project's routing health, as a page"),
    route(
        "POST",
        "/api/v1/reports/{id}/status",
        Review,
        Body::Json,
        "close a report, mark it a duplicate, won't fix or not a bug, or reopen it",
    ),
    route("POST", "/api/v1/reports/{id}/assign", Review, Body::Json, "assign a report to a member of its project"),
    route("POST", "/api/v1/reports/{id}/comments", Review, Body::Json, "comment on a report (its activity timeline)"),
    route(
        "POST",
        "/reports/{id}/lifecycle",
        Review,
        Body::Form,
        "the report page's form: status, assignee or comment, then back to the report",
    ),
    route(
        "GET",
        "/reports/{id}/releases",
        Read,
        Body::None,
        "a report's releases, where each came from, its bisect and the index's list",
    ),
    route(
        "POST",
        "/reports/{id}/releases",
        Review,
        Body::Form,
        "set a report's buggy or fixed release, or start a bisect",
    ),
    route(
        "GET",
        "/reports/{id}/oracle",
        Review,
        Body::None,
        "write an oracle for a report without one (its authoring clock starts)",
    ),
    route(
        "POST",
        "/reports/{id}/oracle",
        Review,
        Body::Form,
        "validate the oracle on buggy and fixed (stored once it fails, then passes); pause, resume",
    ),
    route(
        "POST",
        "/queue/bulk",
        Review,
        Body::Form,
        "a bulk change from the queue: confirm (how many), then each report as its own change",
    ),
    route("GET", "/api/v1/attempts", Read, Body::None, "attempts"),
    route(
        "GET",
        "/api/v1/export/reports",
        Read,
        Body::None,
        "the reports list as CSV, JSON or NDJSON (what the caller may read)",
    ),
    route(
        "GET",
        "/api/v1/export/attempts",
        Read,
        Body::None,
        "the attempts list as CSV, JSON or NDJSON (what the caller may read)",
    ),
    route(
        "GET",
        "/api/v1/export/figures",
        Read,
        Body::None,
        "a figure table as CSV, JSON or NDJSON (what the caller may read)",
    ),
    route(
        "GET",
        "/api/v1/export/throughput",
        Read,
        Body::None,
        "the weekly throughput as CSV, JSON or NDJSON (what the caller may read)",
    ),
    route(
        "GET",
        "/api/v1/export/oracles",
        Read,
        Body::None,
        "an Oracles page table as CSV, JSON or NDJSON (what the caller may read)",
    ),
    route(
        "POST",
        "/api/v1/attempts",
        SubmitAttempt,
        Body::Json,
        "submit an attempt (`verify: true` queues its grading)",
    ),
    route("GET", "/api/v1/attempts/{id}", Read, Body::None, "one attempt with its runs"),
    route("GET", "/api/v1/attempts/{id}/events", Read, Body::None, "an attempt's verification as server-sent events"),
    route(
        "PUT",
        "/api/v1/attempts/{id}/trajectory",
        SubmitAttempt,
        Body::Import,
        "an attempt's trajectory (SWE-agent, OpenHands or JSON Lines of steps)",
    ),
    route("GET", "/api/v1/attempts/{id}/trajectory", Read, Body::None, "an attempt's trajectory, step by step"),
    route(
        "POST",
        "/api/v1/attempts/{id}/review",
        Review,
        Body::Json,
        "accept or reject an attempt as the signed-in user",
    ),
    route("GET", "/api/v1/figures", Read, Body::None, "figures per group"),
    route("GET", "/api/v1/agents", Read, Body::None, "agents' stated figures beside the computed ones"),
    route(
        "GET",
        "/api/v1/distributions",
        Read,
        Body::None,
        "cost or wall time per attempt: histogram, CDF, mean, median, p90",
    ),
    route(
        "GET",
        "/api/v1/throughput",
        Read,
        Body::None,
        "reports filed and finished per week, backlog, time to reproduction",
    ),
    route(
        "GET",
        "/api/v1/glance",
        Read,
        Body::None,
        "a period's figures by event and by filing date, backlog and stuck count; the Overview's cards",
    ),
    route(
        "GET",
        "/api/v1/ranks",
        Read,
        Body::None,
        "success by rank: reports reproduced by the first candidate and within k",
    ),
    route("GET", "/api/v1/facets", Read, Body::None, "agents and models for the filters"),
    route("GET", "/api/v1/charts/{name}", Read, Body::None, "a dashboard chart as SVG (may be embedded)"),
    route(
        "POST",
        "/api/v1/reruns",
        Rerun,
        Body::Json,
        "rerun an attempt, a report's or a filter's failed attempts, or re-check",
    ),
    route("POST", "/api/v1/refine", Rerun, Body::Json, "run the refine loop on an agent_first report"),
    route("GET", "/api/v1/signatures", Read, Body::None, "graded failures grouped by signature"),
    route("GET", "/api/v1/oracles", Read, Body::None, "oracle coverage, sources, authoring time, failure causes"),
    route("GET", "/api/v1/jobs", Read, Body::None, "the queue and its runners"),
    route(
        "GET",
        "/api/v1/runners/environments",
        Read,
        Body::None,
        "the environments the workers keep built (releases named only to who may read a project that builds them)",
    ),
    route("GET", "/runners/environments", Read, Body::None, "the environment cache, as a page"),
    route("GET", "/oracles", Read, Body::None, "the Oracles page: coverage, sources, authoring, failures"),
    route("GET", "/runners", Read, Body::None, "the Runners page: jobs, runners, failures, the wait"),
    route("GET", "/api/v1/jobs/{id}", Read, Body::None, "one job"),
    route("GET", "/api/v1/jobs/{id}/events", Read, Body::None, "a job's progress as server-sent events"),
    route(
        "GET",
        "/api/v1/releases",
        Read,
        Body::None,
        "how a project builds its releases, and the releases the package index lists",
    ),
    route(
        "POST",
        "/api/v1/releases",
        ManageEnvironments,
        Body::Json,
        "set how a project builds any of its releases (admins only: the runner builds what this says)",
    ),
    route(
        "GET",
        "/api/v1/reports/{id}/versions",
        Read,
        Body::None,
        "the releases a report is graded on, where each came from, and its bisect",
    ),
    route(
        "POST",
        "/api/v1/reports/{id}/versions",
        Review,
        Body::Json,
        "set a report's buggy or fixed release (checked against the index)",
    ),
    route(
        "POST",
        "/api/v1/reports/{id}/bisect",
        Review,
        Body::Json,
        "bisect a report's releases with a candidate (a job)",
    ),
    route(
        "GET",
        "/api/v1/environments",
        ReadEnvironments,
        Body::None,
        "a project's environments (recipes may hold paths and variables)",
    ),
    route(
        "POST",
        "/api/v1/environments",
        ManageEnvironments,
        Body::Json,
        "create or replace an environment (admins only: the runner builds it)",
    ),
    route(
        "POST",
        "/api/v1/environments/{id}/build",
        ManageEnvironments,
        Body::Json,
        "build an environment now on a runner (a job); its log is kept",
    ),
    route(
        "GET",
        "/api/v1/environments/{id}/build",
        ReadEnvironments,
        Body::None,
        "an environment's newest requested build, with its log",
    ),
    route(
        "GET",
        "/api/v1/status/{owner}/{name}",
        Read,
        Body::None,
        "a public project's status figures (what its page shows)",
    ),
    route(
        "GET",
        "/metrics",
        Scrape,
        Body::None,
        "Prometheus metrics: open, or only to the --metrics-token (never an API token)",
    ),
    route("GET", "/status", Read, Body::None, "the public projects' status pages (HTML)"),
    route("GET", "/status/{owner}/{name}", Read, Body::None, "a public project's status page (HTML, no script)"),
    route(
        "GET",
        "/status/{owner}/{name}/trend.svg",
        Read,
        Body::None,
        "a public project's 90-day trend, as drawn on its page",
    ),
    route(
        "GET",
        "/status/{owner}/{name}/trend.png",
        Read,
        Body::None,
        "a public project's 90-day trend as PNG (its Open Graph image)",
    ),
    route(
        "GET",
        "/badge/{owner}/{name}/{file}",
        Read,
        Body::None,
        "a public project's badge: METRIC.svg or METRIC.json (shields.io endpoint)",
    ),
    route(
        "POST",
        "/api/v1/import",
        Import,
        Body::Import,
        "bulk import (streamed; each record checked against its project)",
    ),
];

/// The spec of `method path`, if the table has one.
pub fn spec(method: &str, path: &str) -> Option<&'static RouteSpec> {
    ROUTES.iter().find(|r| r.method == method && r.path == path)
}

/// The README's authorization tables, rendered from the code.
pub fn markdown() -> String {
    let mut out = String::from("| action | ");
    out.push_str(&Role::ALL.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(" | "));
    out.push_str(" |\n| --- |");
    out.push_str(&" :-: |".repeat(Role::ALL.len()));
    out.push('\n');
    for (action, _) in PERMISSIONS {
        let cells: Vec<&str> = Role::ALL
            .iter()
            .map(|r| match (r.may(*action), *action == Action::Read) {
                (true, _) => "yes",
                (false, true) => "public only",
                (false, false) => "no",
            })
            .collect();
        out.push_str(&format!("| {} | {} |\n", action.as_str(), cells.join(" | ")));
    }
    out.push_str("\n| route | action | body |\n| --- | --- | --- |\n");
    for r in ROUTES {
        let body = match r.body {
            Body::None => "".to_owned(),
            Body::Import => "ndjson, jsonl, json or xml".to_owned(),
            other => other.content_types().join(", "),
        };
        out.push_str(&format!("| `{} {}` | {} | {} |\n", r.method, r.path, r.action.as_str(), body));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_listed_once() {
        for (i, r) in ROUTES.iter().enumerate() {
            assert!(
                ROUTES[..i].iter().all(|o| (o.method, o.path) != (r.method, r.path)),
                "{} {} twice",
                r.method,
                r.path
            );
            // A DELETE names what it removes in its path (and no cross-site form can send one).
            assert_eq!(
                r.body == Body::None,
                matches!(r.method, "GET" | "HEAD" | "DELETE"),
                "{} {}: reads and deletes take no body, other writes declare one",
                r.method,
                r.path
            );
        }
    }

    #[test]
    fn the_table_reads_as_the_issue_states_it() {
        use Role::*;
        // Only admins build recipes or change visibility.
        for r in Role::ALL {
            assert_eq!(r.may(ManageEnvironments), r == Admin, "{r:?}");
            assert_eq!(r.may(ManageProjects), r == Admin, "{r:?}");
        }
        assert!(AgentToken.may(SubmitAttempt) && !AgentToken.may(Import) && !AgentToken.may(WriteReport));
        assert!(CiToken.may(SubmitAttempt) && CiToken.may(Import));
        assert!(ReadToken.may(Read) && !ReadToken.may(SubmitAttempt));
        assert!(!Viewer.may(Review) && Maintainer.may(Review) && !CiToken.may(Review));
        assert!(may_read(Outsider, true) && !may_read(Outsider, false) && may_read(Viewer, false));
    }

    #[test]
    fn the_readme_shows_the_table_from_the_code() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
        let table = markdown();
        assert!(
            readme.contains(&table),
            "README.md's authorization tables differ from the code; paste this into its Security model section:\n\n{table}"
        );
    }
}
