//! The set-up pages, rendered on the server like the token pages (no
//! WebAssembly, so they cost the dashboard's bundle nothing): projects
//! (create; name, description, visibility, upstream address), a project's
//! environments (recipe, setup commands, variables; "build now" and the
//! build's log) and imports from the browser (a file, its format and mapping;
//! the summary with every rejection).
//!
//! Each form's change is made by the JSON API's own handler, so the page and
//! the API refuse the same things with the same words. A refused form comes
//! back with the message and what was typed; a stored one with a notice.

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::extract::{Multipart, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use failpass_shared::api::import::ImportSummary;
use failpass_shared::api::jobs::{CreateEnvironmentRequest, Environment, EnvironmentBuild, GitSource, Recipe};
use failpass_shared::api::projects::{CreateProjectRequest, Project, UpdateProjectRequest};
use failpass_shared::model::{BuildStatus, EnvironmentRole, ProjectRole};
use maud::{Markup, html};
use serde::Deserialize;

use super::AppState;
use super::pages::{page, when};
use crate::auth::{Action, Viewer};
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult};
use crate::import::{Format, ImportOptions, Importer};

/// The largest upload the import page takes (the command line has no limit).
pub const UPLOAD_LIMIT: usize = 512 << 20;

/// What a form post ended in, shown above the forms.
enum Said {
    Nothing,
    Notice(String),
    Error(String),
}

impl Said {
    fn status(&self, ok: StatusCode) -> StatusCode {
        if matches!(self, Said::Error(_)) { StatusCode::BAD_REQUEST } else { ok }
    }

    fn render(&self) -> Markup {
        html! {
            @match self {
                Said::Nothing => {},
                Said::Notice(m) => p.state role="status" data-testid="setup-notice" { (m) },
                Said::Error(m) => p.state.state-error role="alert" data-testid="setup-error" { (m) },
            }
        }
    }
}

/// A refused change as the page says it; who may not is answered as the API answers.
fn said(e: ApiError) -> Result<Said, ApiError> {
    match e {
        e @ (ApiError::Unauthorized(_)
        | ApiError::Forbidden(_)
        | ApiError::NotFound(_)
        | ApiError::Unavailable(_)
        | ApiError::Internal(_)) => Err(e),
        e => Ok(Said::Error(e.to_string())),
    }
}

fn form_error(e: FormRejection) -> Said {
    Said::Error(format!("the form did not arrive whole: {}", e.body_text()))
}

fn internal(m: String) -> ApiError {
    ApiError::Internal(anyhow::anyhow!(m))
}

/// Trimmed, or `None` when blank.
fn opt(v: &str) -> Option<String> {
    Some(v.trim().to_owned()).filter(|v| !v.is_empty())
}

// ----- the projects list -----

#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(default)]
pub struct ProjectForm {
    slug: String,
    name: String,
    description: String,
    upstream_url: String,
    /// `public` or `private`.
    visibility: String,
    /// `on` when the box "a benchmark" is ticked (the project page's form).
    benchmark: String,
}

impl ProjectForm {
    fn public(&self) -> Result<Option<bool>, Said> {
        match self.visibility.as_str() {
            "" => Ok(None),
            "public" => Ok(Some(true)),
            "private" => Ok(Some(false)),
            other => Err(Said::Error(format!("visibility: `{other}` is not public or private"))),
        }
    }
}

async fn projects_view(state: &AppState, viewer: &Viewer, said: Said, typed: &ProjectForm) -> ApiResult<Response> {
    let projects = state.storage.list_projects(&viewer.scope_for(Action::ReadEnvironments)).await?;
    let status = said.status(StatusCode::OK);
    let body = html! {
        h1 { "Set-up" }
        p.muted { "Projects, the environments their candidates are graded in, and imports. "
            a href="/settings/tokens" { "API tokens" } " are on their own page." }
        (said.render())
        section.panel {
            h2 { "Projects" }
            @if projects.is_empty() {
                p.state.state-empty { "You maintain no project yet." }
            } @else {
                div.table-scroll { table data-testid="setup-projects" {
                    thead { tr { th scope="col" { "Project" } th scope="col" { "Visibility" } th scope="col" .num { "Reports" } th scope="col" { "Upstream" } } }
                    tbody { @for p in &projects { tr {
                        td { a href=(format!("/settings/projects/{}", p.slug)) { (p.slug) } }
                        td { (if p.public { "public" } else { "private" }) }
                        td.num { (p.reports) }
                        td { @if let Some(u) = &p.upstream_url { a href=(u) rel="noopener noreferrer" { (u) } } }
                    } } }
                } }
            }
        }
        @if viewer.is_admin() {
            section.panel {
                h2 { "New project" }
                form.stack method="post" action="/settings/projects" data-testid="new-project" {
                    label.field { span { "Slug (owner/name, as upstream)" }
                        input type="text" name="slug" required maxlength="201" placeholder="pytorch/pytorch" value=(typed.slug); }
                    label.field { span { "Name" } input type="text" name="name" maxlength="200" value=(typed.name); }
                    label.field { span { "Description" } textarea name="description" rows="2" { (typed.description) } }
                    label.field { span { "Upstream address" }
                        input type="url" name="upstream_url" maxlength="500" placeholder="https://github.com/pytorch/pytorch" value=(typed.upstream_url); }
                    (visibility_select(typed.visibility != "private" && !state.security.private_by_default || typed.visibility == "public"))
                    button type="submit" data-testid="create-project" { "Create project" }
                }
            }
        }
    };
    Ok(page(status, "Set-up", viewer, body))
}

fn visibility_select(public: bool) -> Markup {
    html! {
        label.field { span { "Visibility" } select name="visibility" {
            option value="public" selected[public] { "public: anyone may read it; it has a status page" }
            option value="private" selected[!public] { "private: members only" }
        } }
    }
}

/// `GET /settings/projects`
#[utoipa::path(
    get, path = "/settings/projects", tag = "pages",
    responses((status = 200, description = "Your projects, and (admins) the new-project form.", content_type = "text/html", body = String),
              (status = 303, description = "Anonymous: on to sign in."))
)]
pub async fn projects_page(State(state): State<AppState>, viewer: Viewer) -> ApiResult<Response> {
    projects_view(&state, &viewer, Said::Nothing, &ProjectForm::default()).await
}

/// `POST /settings/projects`: on to the new project's set-up page.
#[utoipa::path(
    post, path = "/settings/projects", tag = "pages", operation_id = "create_project_form",
    request_body(content = ProjectForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 303, description = "Created: on to its set-up page."),
              (status = 400, description = "Refused: the page again, saying why.", content_type = "text/html", body = String))
)]
pub async fn create_project(
    State(state): State<AppState>,
    viewer: Viewer,
    form: Result<Form<ProjectForm>, FormRejection>,
) -> ApiResult<Response> {
    let Form(form) = match form {
        Ok(f) => f,
        Err(e) => return projects_view(&state, &viewer, form_error(e), &ProjectForm::default()).await,
    };
    let public = match form.public() {
        Ok(p) => p,
        Err(s) => return projects_view(&state, &viewer, s, &form).await,
    };
    let req = CreateProjectRequest {
        slug: form.slug.trim().to_owned(),
        name: opt(&form.name),
        description: opt(&form.description),
        public,
        upstream_url: opt(&form.upstream_url),
        benchmark: None,
    };
    match super::projects::create_project(State(state.clone()), ApiJson(req)).await {
        Ok((_, ApiJson(p))) => {
            tracing::info!(project = %p.slug, by = %viewer.name(), "project created");
            Ok(Redirect::to(&format!("/settings/projects/{}?created=1", p.slug)).into_response())
        }
        Err(e) => projects_view(&state, &viewer, said(e)?, &form).await,
    }
}

// ----- one project -----

#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(default)]
pub struct EnvironmentForm {
    name: String,
    role: String,
    /// `none`, `dir` or `git`.
    source: String,
    dir: String,
    git_url: String,
    git_rev: String,
    /// One command a line.
    setup: String,
    /// `NAME=value`, one a line.
    variables: String,
    version: String,
}

impl EnvironmentForm {
    fn of(e: &Environment) -> Self {
        let r = &e.recipe;
        EnvironmentForm {
            name: e.name.clone(),
            role: e.role.as_str().to_owned(),
            source: if r.git.is_some() {
                "git"
            } else if r.dir.is_some() {
                "dir"
            } else {
                "none"
            }
            .to_owned(),
            dir: r.dir.clone().unwrap_or_default(),
            git_url: r.git.as_ref().map(|g| g.url.clone()).unwrap_or_default(),
            git_rev: r.git.as_ref().map(|g| g.rev.clone()).unwrap_or_default(),
            setup: r.setup.join("\n"),
            variables: r.env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("\n"),
            version: r.version.clone().unwrap_or_default(),
        }
    }

    /// The API's request, or what is wrong with the form (naming the field).
    fn request(&self, project: &str) -> Result<CreateEnvironmentRequest, String> {
        let role: EnvironmentRole = self.role.parse().map_err(|e| format!("role: {e}"))?;
        let (dir, git) = match self.source.as_str() {
            "" | "none" => (None, None),
            "dir" => (Some(opt(&self.dir).ok_or("dir: give the directory to copy in")?), None),
            "git" => {
                let url = opt(&self.git_url).ok_or("git_url: give the repository to check out")?;
                let rev = opt(&self.git_rev).ok_or("git_rev: give the revision (a commit, tag or branch)")?;
                (None, Some(GitSource { url, rev }))
            }
            other => return Err(format!("source: `{other}` is not none, dir or git")),
        };
        let setup = self.setup.lines().map(str::trim_end).filter(|l| !l.trim().is_empty()).map(str::to_owned).collect();
        let mut env = std::collections::BTreeMap::new();
        for (n, line) in self.variables.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let (k, v) = line
                .split_once('=')
                .ok_or_else(|| format!("variables: line {} `{}` is not NAME=value", n + 1, line.trim()))?;
            env.insert(k.trim().to_owned(), v.trim().to_owned());
        }
        Ok(CreateEnvironmentRequest {
            project: project.to_owned(),
            name: self.name.trim().to_owned(),
            role,
            recipe: Recipe { dir, git, setup, env, version: opt(&self.version) },
        })
    }
}

/// The project `owner/name` as this viewer may set it up (`NotFound` as the API answers).
async fn project_for(state: &AppState, viewer: &Viewer, slug: &str) -> ApiResult<Project> {
    let project = state
        .storage
        .get_project(slug, &viewer.scope())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("project `{slug}` not found")))?;
    viewer.require(Action::ReadEnvironments, &project.slug)?;
    Ok(project)
}

/// What the project page's forms hold after a refused post.
#[derive(Default)]
struct Typed {
    project: Option<ProjectForm>,
    environment: Option<EnvironmentForm>,
}

async fn project_view(state: &AppState, viewer: &Viewer, slug: &str, said: Said, typed: Typed) -> ApiResult<Response> {
    let project = project_for(state, viewer, slug).await?;
    let envs = state.storage.list_environments(&project.slug).await?;
    let builds = state.storage.latest_builds(&project.slug).await?;
    let may_edit = viewer.role_in(&project.slug).may(Action::ManageProjects);
    let may_envs = viewer.role_in(&project.slug).may(Action::ManageEnvironments);
    let may_import = viewer.role_in(&project.slug).may(Action::Import);
    let may_members = viewer.role_in(&project.slug).may(Action::ManageMembers);
    let members = state.storage.project_members(&project.slug).await?;
    // A build waiting for a runner or running: the page reloads until it ends.
    let queue = state.storage.queue_overview(chrono::Utc::now(), &viewer.scope()).await?;
    let running = builds.iter().any(|b| b.status == BuildStatus::Running)
        || queue.jobs.iter().any(|j| {
            j.kind == failpass_shared::model::JobKind::Build
                && j.payload.environment_id.is_some_and(|id| envs.iter().any(|e| e.id == id))
        });
    let graded = ["buggy", "fixed"].iter().all(|r| envs.iter().any(|e| e.role.as_str() == *r));
    let pf = typed.project.unwrap_or_else(|| ProjectForm {
        slug: project.slug.clone(),
        name: project.name.clone(),
        description: project.description.clone().unwrap_or_default(),
        upstream_url: project.upstream_url.clone().unwrap_or_default(),
        visibility: if project.public { "public" } else { "private" }.to_owned(),
        benchmark: if project.benchmark { "on" } else { "" }.to_owned(),
    });
    let action = format!("/settings/projects/{}", project.slug);
    let status = said.status(StatusCode::OK);
    let body = html! {
        p.muted { a href="/settings/projects" { "Set-up" } " / " (project.slug) }
        h1 { (project.name) }
        (said.render())
        @if !graded {
            p.state data-testid="setup-missing" {
                "Candidates are graded on a " strong { "buggy" } " and a " strong { "fixed" } " environment; this project "
                "lacks " (if envs.iter().any(|e| e.role == EnvironmentRole::Buggy) { "a fixed one" } else if envs.iter().any(|e| e.role == EnvironmentRole::Fixed) { "a buggy one" } else { "both" })
                ", so reruns, verification and refine cannot run yet."
            }
        }
        section.panel {
            h2 { "Project" }
            @if may_edit {
                form.stack method="post" action=(action) data-testid="project-form" {
                    label.field { span { "Name" } input type="text" name="name" required maxlength="200" value=(pf.name); }
                    label.field { span { "Description" } textarea name="description" rows="2" { (pf.description) } }
                    label.field { span { "Upstream address" }
                        input type="url" name="upstream_url" maxlength="500" placeholder="https://github.com/owner/name" value=(pf.upstream_url); }
                    (visibility_select(pf.visibility != "private"))
                    label.check {
                        input type="checkbox" name="benchmark" value="on" checked[pf.benchmark == "on"] data-testid="project-benchmark";
                        " A benchmark (SWE-bench and the like): its instances are graded, not waiting for a maintainer, so they are in no backlog"
                    }
                    button type="submit" data-testid="save-project" { "Save" }
                }
            } @else {
                dl.lifecycle {
                    dt { "Visibility" } dd { (if project.public { "public" } else { "private" }) }
                    dt { "Benchmark" } dd { (if project.benchmark { "yes: its instances are in no backlog" } else { "no" }) }
                    dt { "Description" } dd { (project.description.as_deref().unwrap_or("none")) }
                    dt { "Upstream" } dd { (project.upstream_url.as_deref().unwrap_or("not given")) }
                }
                p.muted { "Only an admin changes a project." }
            }
            p { a href=(format!("/queue?project={}", project.slug)) { "Its reports" } " · "
                @if may_import { a href=(format!("/settings/import?project={}", project.slug)) data-testid="import-link" { "Import into it" } " · " }
                @if project.public { a href=(format!("/status/{}", project.slug)) { "Status page" } } }
        }
        (members_panel(&project.slug, &members, may_members))
        section.panel {
            h2 { "Environments" }
            @if running { meta http-equiv="refresh" content=(format!("5; url=/settings/projects/{}", project.slug)); p.muted data-testid="build-running" { "A build is running; this page reloads every 5 seconds." } }
            @if envs.is_empty() {
                p.state.state-empty { "No environment yet." }
            }
            @for e in &envs {
                (environment_block(&project, e, builds.iter().find(|b| b.environment_id == e.id), may_envs))
            }
        }
        @if may_envs {
            section.panel {
                h2 { "New environment (or replace one by its name)" }
                (environment_form(&project, typed.environment.as_ref().unwrap_or(&EnvironmentForm { role: if envs.iter().any(|e| e.role == EnvironmentRole::Buggy) { "fixed" } else { "buggy" }.into(), source: "dir".into(), ..Default::default() }), "new-environment"))
            }
        }
    };
    Ok(page(status, &format!("Set-up · {}", project.slug), viewer, body))
}

fn environment_block(project: &Project, e: &Environment, build: Option<&EnvironmentBuild>, may_envs: bool) -> Markup {
    let r = &e.recipe;
    html! {
        article.environment data-testid="environment" data-name=(e.name) {
            h3 { (e.name) " " span.badge { (e.role.as_str()) } }
            dl.lifecycle {
                dt { "Source" } dd { @if let Some(g) = &r.git { code { (g.url) } " at " code { (g.rev) } } @else if let Some(d) = &r.dir { "copy of " code { (d) } } @else { "an empty directory" } }
                dt { "Setup" } dd { @if r.setup.is_empty() { "none" } @else { @for c in &r.setup { code { (c) } br; } } }
                dt { "Variables" } dd { @if r.env.is_empty() { "none" } @else { @for (k, v) in &r.env { code { (k) "=" (v) } br; } } }
                @if let Some(v) = &r.version { dt { "Version" } dd { (v) } }
                dt { "Build" } dd data-testid="build-status" {
                    @match build {
                        None => "not built on request yet",
                        Some(b) => {
                            (b.status.as_str())
                            @if let Some(f) = b.finished_at { " " (when(Some(f))) } @else { " since " (when(Some(b.started_at))) }
                            @if b.recipe_hash != e.recipe_hash { " (of an earlier recipe)" }
                        },
                    }
                }
            }
            @if let Some(b) = build && !b.log.is_empty() {
                details.build-log open[b.status == BuildStatus::Failed] {
                    summary { "Build log" }
                    pre data-testid="build-log" { (b.log) }
                }
            }
            @if may_envs {
                form.inline method="post" action=(format!("/settings/projects/{}/environments/{}/build", project.slug, e.id)) {
                    button type="submit" data-testid="build-now" { "Build now" }
                }
                details.edit {
                    summary { "Edit" }
                    (environment_form(project, &EnvironmentForm::of(e), "edit-environment"))
                }
            }
        }
    }
}

fn environment_form(project: &Project, f: &EnvironmentForm, testid: &str) -> Markup {
    html! {
        form.stack method="post" action=(format!("/settings/projects/{}/environments", project.slug)) data-testid=(testid) {
            label.field { span { "Name" } input type="text" name="name" required maxlength="100" pattern="[A-Za-z0-9._-]+" value=(f.name); }
            label.field { span { "Role" } select name="role" {
                @for (v, t) in [("buggy", "buggy: the version the report is about"), ("fixed", "fixed: the version with the fix"), ("release", "release: a later version, for re-checks")] {
                    option value=(v) selected[f.role == v] { (t) }
                }
            } }
            label.field { span { "Source" } select name="source" {
                @for (v, t) in [("dir", "a directory on the runners, copied in"), ("git", "a git repository at a revision"), ("none", "nothing (setup commands make it)")] {
                    option value=(v) selected[f.source == v] { (t) }
                }
            } }
            label.field { span { "Directory (with source: directory)" } input type="text" name="dir" value=(f.dir) placeholder="/srv/envs/fastnum-0.3.0"; }
            label.field { span { "Git repository and revision (with source: git)" }
                input type="text" name="git_url" value=(f.git_url) placeholder="https://github.com/owner/name";
                input type="text" name="git_rev" value=(f.git_rev) placeholder="v0.3.0 or a commit"; }
            label.field { span { "Setup commands, one a line (run in order with network; a failing one fails the build)" }
                textarea name="setup" rows="4" spellcheck="false" placeholder="python3 -m venv .venv\n.venv/bin/pip install -e ." { (f.setup) } }
            label.field { span { "Variables, NAME=value a line ({env} is the environment's directory)" }
                textarea name="variables" rows="2" spellcheck="false" placeholder="PYTHONPATH={env}" { (f.variables) } }
            label.field { span { "Version label (shown on re-checks)" } input type="text" name="version" value=(f.version); }
            button type="submit" data-testid="save-environment" { "Save environment" }
        }
    }
}

#[derive(Deserialize)]
pub struct Created {
    #[serde(default)]
    created: Option<String>,
    /// The build job just queued.
    #[serde(default)]
    build: Option<i64>,
}

/// The project's set-up page again, saying why a form was refused (400).
pub(super) async fn project_page_saying(
    state: &AppState,
    viewer: &Viewer,
    slug: &str,
    why: String,
) -> ApiResult<Response> {
    project_view(state, viewer, slug, Said::Error(why), Typed::default()).await
}

/// `GET /settings/projects/{owner}/{name}`
#[utoipa::path(
    get, path = "/settings/projects/{owner}/{name}", tag = "pages",
    params(("owner" = String, Path, example = "pytorch"), ("name" = String, Path, example = "pytorch")),
    responses((status = 200, description = "The project's details, environments and builds.", content_type = "text/html", body = String))
)]
pub async fn project_page(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath((owner, name)): ApiPath<(String, String)>,
    Query(q): Query<Created>,
) -> ApiResult<Response> {
    let said = match (q.created, q.build) {
        (Some(_), _) => Said::Notice("Project created.".into()),
        (None, Some(job)) => Said::Notice(format!("Build queued as job {job}.")),
        (None, None) => Said::Nothing,
    };
    project_view(&state, &viewer, &format!("{owner}/{name}"), said, Typed::default()).await
}

/// `POST /settings/projects/{owner}/{name}`
#[utoipa::path(
    post, path = "/settings/projects/{owner}/{name}", tag = "pages", operation_id = "update_project_form",
    params(("owner" = String, Path, example = "pytorch"), ("name" = String, Path, example = "pytorch")),
    request_body(content = ProjectForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Saved: the page again, saying so.", content_type = "text/html", body = String),
              (status = 400, description = "Refused: the page again, saying why.", content_type = "text/html", body = String))
)]
pub async fn update_project(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath((owner, name)): ApiPath<(String, String)>,
    form: Result<Form<ProjectForm>, FormRejection>,
) -> ApiResult<Response> {
    let slug = format!("{owner}/{name}");
    let Form(form) = match form {
        Ok(f) => f,
        Err(e) => return project_view(&state, &viewer, &slug, form_error(e), Typed::default()).await,
    };
    let said = match form.public() {
        Err(s) => s,
        Ok(public) => {
            let req = UpdateProjectRequest {
                name: Some(form.name.trim().to_owned()),
                description: Some(form.description.clone()),
                public,
                upstream_url: Some(form.upstream_url.clone()),
                benchmark: Some(form.benchmark == "on"),
            };
            match super::projects::update_project(
                State(state.clone()),
                viewer.clone(),
                ApiPath(slug.clone()),
                ApiJson(req),
            )
            .await
            {
                Ok(_) => Said::Notice("Project saved.".into()),
                Err(e) => said(e)?,
            }
        }
    };
    let typed = if matches!(said, Said::Error(_)) {
        Typed { project: Some(form), ..Default::default() }
    } else {
        Typed::default()
    };
    project_view(&state, &viewer, &slug, said, typed).await
}

/// `POST /settings/projects/{owner}/{name}/environments`
#[utoipa::path(
    post, path = "/settings/projects/{owner}/{name}/environments", tag = "pages",
    params(("owner" = String, Path, example = "pytorch"), ("name" = String, Path, example = "pytorch")),
    request_body(content = EnvironmentForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "Saved: the page again, saying so.", content_type = "text/html", body = String),
              (status = 400, description = "Refused: the page again, with the form as typed and why.", content_type = "text/html", body = String))
)]
pub async fn save_environment(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath((owner, name)): ApiPath<(String, String)>,
    form: Result<Form<EnvironmentForm>, FormRejection>,
) -> ApiResult<Response> {
    let slug = format!("{owner}/{name}");
    let Form(form) = match form {
        Ok(f) => f,
        Err(e) => return project_view(&state, &viewer, &slug, form_error(e), Typed::default()).await,
    };
    let said = match form.request(&slug) {
        Err(m) => Said::Error(m),
        Ok(req) => {
            match super::environments::create_environment(State(state.clone()), viewer.clone(), ApiJson(req)).await {
                Ok((code, ApiJson(env))) => Said::Notice(format!(
                    "Environment `{}` {}. Build it now to see that the recipe builds.",
                    env.name,
                    if code == StatusCode::CREATED { "created" } else { "replaced" }
                )),
                Err(e) => said(e)?,
            }
        }
    };
    let typed = if matches!(said, Said::Error(_)) {
        Typed { environment: Some(form), ..Default::default() }
    } else {
        Typed::default()
    };
    project_view(&state, &viewer, &slug, said, typed).await
}

/// `POST /settings/projects/{owner}/{name}/environments/{id}/build`
#[utoipa::path(
    post, path = "/settings/projects/{owner}/{name}/environments/{id}/build", tag = "pages", operation_id = "build_environment_form",
    params(("owner" = String, Path, example = "pytorch"), ("name" = String, Path, example = "pytorch"),
           ("id" = i64, Path, example = 1, description = "The environment's id.")),
    responses((status = 303, description = "Queued: back to the project's page, which reloads until the build ends."))
)]
pub async fn build_environment(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath((owner, name, id)): ApiPath<(String, String, i64)>,
) -> ApiResult<Response> {
    let slug = format!("{owner}/{name}");
    if state.storage.environment(id).await?.is_none_or(|e| e.project != slug) {
        project_for(&state, &viewer, &slug).await?;
        return Err(ApiError::NotFound(format!("environment {id} of {slug} not found")));
    }
    match super::environments::build_environment(State(state.clone()), viewer.clone(), ApiPath(id)).await {
        // Back to the page by GET, so reloading it (as it does until the build ends) posts nothing again.
        Ok((_, ApiJson(job))) => {
            Ok(Redirect::to(&format!("/settings/projects/{slug}?build={}", job.id)).into_response())
        }
        Err(e) => {
            let said = said(e)?;
            project_view(&state, &viewer, &slug, said, Typed::default()).await
        }
    }
}

// ----- imports -----

/// The formats the import page offers, with what each is.
const FORMATS: &[(&str, &str)] = &[
    ("ndjson", "failpass NDJSON (an export)"),
    ("github-issues", "GitHub issues (REST JSON or gh issue list --json)"),
    ("swebench-instances", "SWE-bench instances"),
    ("swebench-leaderboard", "SWE-bench leaderboard"),
    ("csv", "CSV, with a mapping"),
    ("json", "JSON, with a mapping"),
];

/// The mappings failpass ships (`mappings/`), offered by name.
const SHIPPED_MAPPINGS: &[(&str, &str)] = &[
    ("dlbugs_manual_reproduction", include_str!("../../../mappings/dlbugs_manual_reproduction.toml")),
    ("libro_ranking_d4j", include_str!("../../../mappings/libro_ranking_d4j.toml")),
];

#[derive(Deserialize, Default)]
pub struct ImportQuery {
    #[serde(default)]
    project: Option<String>,
}

#[derive(Default)]
struct ImportForm {
    format: String,
    project: String,
    mapping: String,
    mapping_text: String,
}

async fn import_view(
    state: &AppState,
    viewer: &Viewer,
    said: Said,
    typed: &ImportForm,
    summary: Option<&ImportSummary>,
) -> ApiResult<Response> {
    let projects = state.storage.list_projects(&viewer.scope_for(Action::Import)).await?;
    let status = said.status(StatusCode::OK);
    let body = html! {
        p.muted { a href="/settings/projects" { "Set-up" } " / import" }
        h1 { "Import" }
        p.muted { "Records are checked one by one: a bad one is listed below with its line and field, and the rest are stored. "
            "Importing the same file again changes nothing. Large files go faster with " code { "failpass import" } "." }
        (said.render())
        @if let Some(s) = summary {
            section.panel data-testid="import-summary" {
                h2 { "Summary" }
                dl.lifecycle {
                    dt { "Records" } dd data-testid="import-records" { (s.records) }
                    dt { "Created" } dd data-testid="import-created" { (s.created) }
                    dt { "Updated" } dd { (s.updated) }
                    dt { "Unchanged" } dd { (s.unchanged) }
                    dt { "Skipped" } dd { (s.skipped) }
                    dt { "Rejected" } dd data-testid="import-rejected" { (s.rejected) }
                }
                @if !s.changed.is_empty() {
                    p data-testid="import-changed" { "Changed by this re-import: "
                        @for (i, (field, n)) in s.changed.iter().enumerate() { @if i > 0 { ", " } code { (field) } " in " (n) } }
                }
                @let notes = s.notes.lines();
                @if !notes.is_empty() {
                    ul data-testid="import-notes" { @for line in &notes { li { (line) } } }
                }
                @if !s.rejections.is_empty() {
                    div.table-scroll { table data-testid="import-rejections" {
                        thead { tr { th scope="col" .num { "Record" } th scope="col" { "Field" } th scope="col" { "Why" } } }
                        tbody { @for r in &s.rejections { tr {
                            td.num { (r.record) } td { (r.field.as_deref().unwrap_or("")) } td.wrap { (r.message) }
                        } } }
                    } }
                    @if (s.rejections.len() as u64) < s.rejected { p.muted { "The first " (s.rejections.len()) " of " (s.rejected) " rejections." } }
                }
            }
        }
        section.panel {
            h2 { "A file" }
            @if projects.is_empty() {
                p.state.state-empty { "You may import into no project." }
            } @else {
                form.stack method="post" action="/settings/import" enctype="multipart/form-data" data-testid="import-form" {
                    label.field { span { "Format" } select name="format" {
                        @for (v, t) in FORMATS { option value=(v) selected[typed.format == *v] { (t) } }
                    } }
                    label.field { span { "Project (for GitHub issues and mappings; NDJSON names its own)" } select name="project" {
                        option value="" { "(as the file says)" }
                        @for p in &projects { option value=(p.slug) selected[typed.project == p.slug] { (p.slug) } }
                    } }
                    label.field { span { "Mapping (CSV and JSON)" } select name="mapping" {
                        option value="" { "(none, or the one pasted below)" }
                        @for (n, _) in SHIPPED_MAPPINGS { option value=(n) selected[typed.mapping == *n] { "shipped: " (n) } }
                    } }
                    label.field { span { "…or a mapping pasted here (TOML, as in mappings/)" }
                        textarea name="mapping_text" rows="4" spellcheck="false" { (typed.mapping_text) } }
                    label.field { span { "File" } input type="file" name="file" required; }
                    button type="submit" data-testid="import-submit" { "Import" }
                }
            }
        }
    };
    Ok(page(status, "Import", viewer, body))
}

/// `GET /settings/import`
#[utoipa::path(
    get, path = "/settings/import", tag = "pages",
    params(("project" = Option<String>, Query, example = "pytorch/pytorch", description = "The project picked in the form.")),
    responses((status = 200, description = "The import form.", content_type = "text/html", body = String))
)]
pub async fn import_page(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(q): Query<ImportQuery>,
) -> ApiResult<Response> {
    let typed = ImportForm { project: q.project.unwrap_or_default(), ..Default::default() };
    import_view(&state, &viewer, Said::Nothing, &typed, None).await
}

/// `POST /settings/import`: the file is spooled to a temporary file, then
/// imported as `failpass import` would (each record checked against its project).
#[utoipa::path(
    post, path = "/settings/import", tag = "pages",
    request_body(content_type = "multipart/form-data", description = "format, project, mapping or mapping_text, and file."),
    responses((status = 200, description = "The summary, with every rejection.", content_type = "text/html", body = String),
              (status = 400, description = "Refused: the form again, saying why.", content_type = "text/html", body = String))
)]
pub async fn import_upload(State(state): State<AppState>, viewer: Viewer, multipart: Multipart) -> ApiResult<Response> {
    let mut typed = ImportForm::default();
    let (said, summary) = match upload(&state, &viewer, multipart, &mut typed).await {
        Ok(summary) => {
            let what = format!(
                "Imported: {} created, {} updated, {} unchanged, {} rejected.",
                summary.created, summary.updated, summary.unchanged, summary.rejected
            );
            (Said::Notice(what), Some(summary))
        }
        Err(e) => (said(e)?, None),
    };
    import_view(&state, &viewer, said, &typed, summary.as_ref()).await
}

async fn upload(
    state: &AppState,
    viewer: &Viewer,
    mut multipart: Multipart,
    typed: &mut ImportForm,
) -> ApiResult<ImportSummary> {
    use tokio::io::AsyncWriteExt;
    let bad = |m: String| ApiError::BadRequest(m);
    let spool = tempfile::NamedTempFile::new().map_err(|e| internal(format!("a temporary file: {e}")))?;
    let mut got_file = false;
    while let Some(mut field) =
        multipart.next_field().await.map_err(|e| bad(format!("the upload: {}", e.body_text())))?
    {
        let name = field.name().unwrap_or_default().to_owned();
        if name == "file" {
            let mut out =
                tokio::fs::File::create(spool.path()).await.map_err(|e| internal(format!("a temporary file: {e}")))?;
            while let Some(chunk) = field.chunk().await.map_err(|e| bad(format!("file: {}", e.body_text())))? {
                out.write_all(&chunk).await.map_err(|e| internal(format!("spooling the upload: {e}")))?;
            }
            out.flush().await.map_err(|e| internal(format!("spooling the upload: {e}")))?;
            got_file = true;
            continue;
        }
        // The form's own fields are short (a mapping is a few lines): held to 1 MiB each.
        let mut bytes = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(|e| bad(format!("{name}: {}", e.body_text())))? {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > 1 << 20 {
                return Err(bad(format!("{name}: is longer than 1 MiB")));
            }
        }
        let text = String::from_utf8(bytes).map_err(|_| bad(format!("{name}: is not UTF-8")))?;
        if text.contains('\0') {
            return Err(bad(crate::input::nul_message(&name)));
        }
        match name.as_str() {
            "format" => typed.format = text.trim().to_owned(),
            "project" => typed.project = text.trim().to_owned(),
            "mapping" => typed.mapping = text.trim().to_owned(),
            "mapping_text" => typed.mapping_text = text,
            other => return Err(bad(format!("{other}: not a field of the import form"))),
        }
    }
    if !got_file {
        return Err(bad("file: choose the file to import".into()));
    }
    let format: Format = typed.format.parse().map_err(|e: String| bad(format!("format: {e}")))?;
    if format == Format::Junit {
        return Err(bad(
            "format: JUnit results belong to an attempt; upload them with `failpass import --format junit`".into(),
        ));
    }
    let mut options = ImportOptions::default();
    if let Some(p) = opt(&typed.project) {
        failpass_shared::api::projects::validate_slug(&p).map_err(|e| bad(format!("project: {}", e.message)))?;
        options.project = Some(p);
    }
    if matches!(format, Format::Csv | Format::Json) {
        let text = match (opt(&typed.mapping), opt(&typed.mapping_text)) {
            (Some(_), Some(_)) => return Err(bad("mapping: pick a shipped mapping or paste one, not both".into())),
            (Some(n), None) => SHIPPED_MAPPINGS
                .iter()
                .find(|(m, _)| *m == n)
                .map(|(_, t)| (*t).to_owned())
                .ok_or_else(|| bad(format!("mapping: `{n}` is not a shipped mapping")))?,
            (None, Some(t)) => t,
            (None, None) => return Err(bad("mapping: CSV and JSON need a mapping (pick one or paste it)".into())),
        };
        let mut mapping: crate::import::mapping::Mapping =
            toml::from_str(&text).map_err(|e| bad(format!("mapping: {}", e.message())))?;
        if mapping.join.is_some() {
            return Err(bad("mapping: `join` reads a second file on the server, which the browser cannot send; \
                 import with `failpass import --mapping` instead"
                .into()));
        }
        if let Some(p) = &options.project {
            mapping.project = p.clone();
        }
        options.mapping = Some(mapping);
    }
    let file = tokio::fs::File::open(spool.path()).await.map_err(|e| internal(format!("the upload: {e}")))?;
    let input = tokio::io::BufReader::with_capacity(1 << 20, file);
    let mut importer = Importer::new(state.storage.as_ref(), &state.routing)
        .in_server()
        .as_viewer(viewer.clone())
        .private_by_default(state.security.private_by_default);
    if let Err(e) = crate::import::run(&mut importer, format, input, &options).await {
        return Err(match e.downcast::<crate::db::StorageError>() {
            Ok(storage) => storage.into(),
            Err(other) => bad(format!("file: {other:#}")),
        });
    }
    let summary = importer.finish().await?;
    tracing::info!(by = %viewer.name(), format = %typed.format, records = summary.records, rejected = summary.rejected, "import from the browser");
    Ok(summary)
}

/// The set-up page's members panel: who, in which role, and (for those who
/// may) the forms to add and take away.
fn members_panel(slug: &str, members: &[(String, ProjectRole)], may_manage: bool) -> Markup {
    let action = format!("/settings/projects/{slug}/members");
    html! {
        section.panel data-testid="members" {
            h2 { "Members" }
            @if members.is_empty() { p.muted { "No member yet: only admins work on it." } }
            @else {
                table.chart-table {
                    thead { tr { th { "Member" } th { "Role" } @if may_manage { th { span.visually-hidden { "Remove" } } } } }
                    tbody { @for (name, role) in members {
                        tr data-testid="member" data-name=(name) {
                            td { (name) }
                            td { (role.as_str()) }
                            @if may_manage { td {
                                form.inline.confirm method="post" action=(format!("{action}/remove")) {
                                    input type="hidden" name="user" value=(name);
                                    label.check { input type="checkbox" name="confirm" value="yes" required; " take away" }
                                    button.danger type="submit" data-testid="remove-member" { "Remove" }
                                }
                            } }
                        }
                    } }
                }
            }
            @if may_manage {
                form.stack method="post" action=(action) data-testid="add-member" {
                    label.field { span { "Account name" } input type="text" name="user" required maxlength="100" autocomplete="off"; }
                    label.field { span { "Role" } select name="role" {
                        option value="viewer" { "viewer: reads the project, private or not" }
                        option value="maintainer" { "maintainer: reviews, reruns, assigns, imports, tokens, members" }
                    } }
                    button type="submit" { "Add, or change the role" }
                }
                p.muted { "An account is made by an admin (" code { "failpass user add" } ")." }
            }
        }
    }
}
