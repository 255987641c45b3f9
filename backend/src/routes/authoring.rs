//! Oracle authoring, a page rendered on the server: on a report without a
//! deterministic oracle, a maintainer writes one (a test or script with its
//! command, `pass_to_pass`, repeats; or a crash signature picked from what
//! the report's runs showed), failpass validates it on the buggy and the
//! fixed environment (an `oracle` job), and stores it only once it fails on
//! buggy and passes on fixed. The authoring time is measured, not typed:
//! the clock starts when the form is first opened and stops while paused.

use axum::Form;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use failpass_shared::api::attempts::AttemptListQuery;
use failpass_shared::api::reports::Report;
use failpass_shared::model::OracleKind;
use maud::html;
use serde::Deserialize;

use super::AppState;
use super::pages::page;
use super::reports::reviewable;
use crate::auth::Viewer;
use crate::db::oracle_drafts::{DraftFields, OracleDraft};
use crate::db::queue::NewJob;
use crate::error::{ApiPath, ApiResult};

fn has_oracle(report: &Report) -> bool {
    report.oracle.as_ref().is_some_and(|o| o.is_deterministic())
}

async fn view(
    state: &AppState,
    viewer: &Viewer,
    report: &Report,
    draft: Option<&OracleDraft>,
    typed: Option<&DraftFields>,
    error: Option<&str>,
) -> ApiResult<Response> {
    let s = &report.summary;
    let now = state.storage.clock().await.unwrap_or_else(|_| chrono::Utc::now());
    // What this report's runs showed on buggy: the crash signatures to pick from.
    let attempts = state
        .storage
        .list_attempts(&AttemptListQuery { report_id: Some(s.id), limit: 200, ..Default::default() }, &viewer.scope())
        .await?;
    let mut signatures: Vec<String> = attempts
        .items
        .iter()
        .filter_map(|a| a.grade.as_ref().and_then(|g| g.buggy_signatures.clone()))
        .flatten()
        .collect();
    signatures.sort();
    signatures.dedup();
    let fields = typed.cloned().or_else(|| draft.map(OracleDraft::fields)).unwrap_or_default();
    // A new draft starts from the report's own code, when it has some.
    let script = if fields.script.is_empty() && draft.is_none_or(|d| d.tries == 0) {
        crate::runner::refine::code_blocks(&report.body).into_iter().next().unwrap_or_default()
    } else {
        fields.script.clone()
    };
    let action = format!("/reports/{}/oracle", s.id);
    let validating = draft.is_some_and(|d| d.status == "validating");
    // The form: a draft under way, or none yet on a report without an oracle.
    let editing = match draft {
        Some(d) => d.status != "validated",
        None => !has_oracle(report),
    };
    let body = html! {
        p.muted { a href=(format!("/reports/{}", s.id)) { (s.project) " #" (s.external_id) } " / oracle" }
        h1 { "An oracle for #" (s.external_id) ": " (s.title) }
        p.muted { "A deterministic oracle fails on the buggy environment and passes on the fixed one. It is stored only once "
            "failpass has run it there and seen both; the report is then routed again by the rule. The time from opening "
            "this form to the validated oracle is measured (pause it when you step away)." }
        @if let Some(e) = error { p.state.state-error role="alert" data-testid="oracle-error" { (e) } }
        @if validating {
            meta http-equiv="refresh" content=(format!("5; url={action}"));
            p.state role="status" data-testid="oracle-validating" { "Validating on buggy and fixed… this page reloads every 5 seconds." }
        }
        div.authoring {
        // The report in view while writing (folded away on a phone, if wished).
        aside.panel.authoring-report data-testid="oracle-report" {
            details open {
                summary { h2 { "The report" } }
                div.markdown { (maud::PreEscaped(crate::markdown::render(&report.body))) }
                @if let Some(e) = &report.environment { p.env { "Environment: " (e) } }
            }
        }
        div.authoring-work {
        @match (draft, has_oracle(report)) {
            (Some(d), _) if d.status == "validated" => {
                section.panel data-testid="oracle-validated" {
                    h2 { "Validated" }
                    p { "Stored as the report's oracle after " (d.tries) " " (if d.tries == 1 { "try" } else { "tries" })
                        " and " (format!("{:.1}", d.active_seconds / 60.0)) " minutes of authoring; the report's route is now "
                        strong data-testid="oracle-route" { (s.route.as_str().replace('_', " ")) } "." }
                    p { a href=(format!("/reports/{}", s.id)) { "Back to the report" } }
                }
            }
            (None, true) => {
                section.panel {
                    p data-testid="oracle-exists" { "This report has a deterministic oracle already ("
                        (report.oracle.as_ref().map_or("", |o| o.kind.as_str())) ")." }
                }
            }
            _ => {}
        }
        @if editing {
            @if let Some(d) = draft {
            section.panel {
                h2 { "Authoring" }
                dl.lifecycle {
                    dt { "Time" } dd data-testid="oracle-clock" {
                        (format!("{:.1}", d.seconds_at(now) / 60.0)) " min" @if d.paused() { " (paused)" } @else { " (running)" }
                    }
                    dt { "Tries" } dd data-testid="oracle-tries" { (d.tries) }
                    dt { "Started" } dd { (d.started_at.format("%Y-%m-%d %H:%M")) " by " (d.author) }
                }
                form.inline method="post" action=(action) {
                    input type="hidden" name="action" value=(if d.paused() { "resume" } else { "pause" });
                    button type="submit" data-testid="oracle-pause" { (if d.paused() { "Resume the clock" } else { "Pause the clock" }) }
                }
                " "
                form.inline method="post" action=(action) {
                    input type="hidden" name="action" value="abandon";
                    button.link-button type="submit" data-testid="oracle-abandon" { "Abandon this draft" }
                }
            }
            // While a try validates, the last one's result would mislead: it waits.
            @if let (false, Some(r)) = (validating, d.result()) {
                section.panel data-testid="oracle-result" {
                    h2 { "Last validation: " (r.verdict.replace('_', " ")) }
                    p { (r.reason) }
                    @if !r.runs.is_empty() {
                        div.table-scroll { table {
                            thead { tr { th scope="col" { "Environment" } th scope="col" { "Exit" } th scope="col" { "Output (its end)" } } }
                            tbody { @for run in &r.runs { tr {
                                td { (run.environment) } td { (run.exit) } td.wrap { pre.output { (run.output_tail) } }
                            } } }
                        } }
                    }
                }
            }
            }
            section.panel {
                h2 { "The oracle" }
                @if draft.is_none() {
                    p.muted data-testid="oracle-opened-note" { "The authoring clock runs from when you opened this page; it is kept from your first try." }
                }
                form.stack method="post" action=(action) data-testid="oracle-form" {
                    input type="hidden" name="action" value="validate";
                    input type="hidden" name="opened" value=(now.to_rfc3339());
                    label.field { span { "Kind" } select name="kind" {
                        option value="fail_to_pass" selected[fields.kind != OracleKind::CrashSignature] { "fail to pass: the test fails on buggy, passes on fixed" }
                        option value="crash_signature" selected[fields.kind == OracleKind::CrashSignature] { "crash signature: buggy shows this error, fixed does not" }
                    } }
                    label.field { span { "Test or script (run as candidate.py)" }
                        textarea name="script" rows="10" spellcheck="false" data-testid="oracle-script" { (script) } }
                    label.field { span { "Command (blank: python3 candidate.py)" }
                        input type="text" name="command" value=(fields.command) placeholder="python3 -m pytest -x candidate.py"; }
                    label.field { span { "Crash signature (for a crash signature oracle)" }
                        input type="text" name="signature" value=(fields.signature) list="signatures" placeholder="ValueError: shapes do not match"; }
                    datalist #signatures { @for sig in &signatures { option value=(sig) {} } }
                    @if !signatures.is_empty() {
                        p.muted data-testid="oracle-signatures" { "Seen on buggy in this report's runs: "
                            @for (i, sig) in signatures.iter().enumerate() { @if i > 0 { "; " } code { (sig) } } }
                    }
                    label.field { span { "Tests that must keep passing on fixed (pass_to_pass), one a line" }
                        textarea name="pass_to_pass" rows="2" spellcheck="false" { (fields.pass_to_pass) } }
                    label.field { span { "Repeats on each side (for failures that come and go)" }
                        input type="number" name="repeats" min="1" max="20" value=(fields.repeats.max(1)); }
                    label.check { input type="checkbox" name="queue_agents" value="on" checked[fields.queue_agents];
                        " Queue the refine loop once the oracle is stored" }
                    button type="submit" data-testid="oracle-validate" disabled[validating] { "Validate on buggy and fixed" }
                }
            }
        }
        }
        }
    };
    let status = if error.is_some() { StatusCode::BAD_REQUEST } else { StatusCode::OK };
    Ok(page(status, &format!("Oracle · #{}", s.external_id), viewer, body))
}

/// `GET /reports/{id}/oracle`: the form (opening it starts the clock).
#[utoipa::path(
    get, path = "/reports/{id}/oracle", tag = "pages",
    params(("id" = i64, Path, example = 1, description = "The report's id.")),
    responses((status = 200, description = "The authoring form, its clock, tries and last validation.", content_type = "text/html", body = String))
)]
pub async fn oracle_page(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
) -> ApiResult<Response> {
    let report = reviewable(&state, &viewer, id).await?;
    // The maintainer's draft under way, else the validated one of an authored oracle.
    let draft = match state.storage.open_oracle_draft(id, &viewer.name()).await? {
        Some(d) => Some(d),
        None => state.storage.latest_oracle_draft(id).await?.filter(|d| d.status == "validated"),
    };
    view(&state, &viewer, &report, draft.as_ref(), None, None).await
}

/// Text fields of the form are held to this many bytes each.
const FIELD_LIMIT: usize = 200_000;

#[derive(Deserialize, Default, utoipa::ToSchema)]
#[serde(default)]
pub struct OracleForm {
    /// `start`, `validate`, `pause`, `resume` or `abandon`.
    action: String,
    kind: String,
    script: String,
    command: String,
    signature: String,
    pass_to_pass: String,
    repeats: String,
    queue_agents: Option<String>,
    /// When the form was opened (RFC 3339, from the page): the clock of a
    /// draft the first try starts runs from then (at most 4 hours back).
    opened: String,
}

/// How far back a form's `opened` may start the authoring clock.
const OPENED_LIMIT_HOURS: i64 = 4;

/// `POST /reports/{id}/oracle`: start a draft (its clock starts), validate
/// the oracle as written (a job), or pause, resume or abandon the draft.
#[utoipa::path(
    post, path = "/reports/{id}/oracle", tag = "pages",
    params(("id" = i64, Path, example = 1, description = "The report's id.")),
    request_body(content = OracleForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 303, description = "Back to the form (started, validating, paused or resumed)."),
              (status = 400, description = "Refused: the form again, as typed, saying why.", content_type = "text/html", body = String))
)]
pub async fn oracle_form(
    State(state): State<AppState>,
    viewer: Viewer,
    ApiPath(id): ApiPath<i64>,
    form: Result<Form<OracleForm>, FormRejection>,
) -> ApiResult<Response> {
    let report = reviewable(&state, &viewer, id).await?;
    let back = Redirect::to(&format!("/reports/{id}/oracle")).into_response();
    let open = state.storage.open_oracle_draft(id, &viewer.name()).await?;
    if has_oracle(&report) {
        let draft = state.storage.latest_oracle_draft(id).await?;
        let e = "this report has a deterministic oracle already";
        return view(&state, &viewer, &report, draft.as_ref(), None, Some(e)).await;
    }
    let Form(form) = match form {
        Ok(f) => f,
        Err(e) => {
            let e = format!("the form did not arrive whole: {}", e.body_text());
            return view(&state, &viewer, &report, open.as_ref(), None, Some(&e)).await;
        }
    };
    // A draft starts with its first post (a followed link starts nothing),
    // its clock from when the form was opened.
    let draft = match (form.action.as_str(), open) {
        (_, Some(d)) if form.action != "start" => d,
        ("pause" | "resume" | "abandon", None) => {
            let e = "this account has no draft oracle for this report: a try starts one";
            return view(&state, &viewer, &report, None, None, Some(e)).await;
        }
        (action, open) => {
            let now = chrono::Utc::now();
            let since = chrono::DateTime::parse_from_rfc3339(form.opened.trim())
                .map(|t| t.to_utc().clamp(now - chrono::Duration::hours(OPENED_LIMIT_HOURS), now))
                .unwrap_or(now);
            let started = open.is_none();
            let draft = state.storage.start_oracle_draft(id, &viewer.name(), since).await?;
            if started {
                tracing::info!(report = id, draft = draft.id, by = %viewer.name(), "oracle draft started");
            }
            if action == "start" {
                return Ok(back);
            }
            draft
        }
    };
    match form.action.as_str() {
        "pause" | "resume" => {
            state.storage.pause_oracle_draft(draft.id, form.action == "pause").await?;
            return Ok(back);
        }
        "abandon" => {
            state.storage.abandon_oracle_draft(draft.id).await?;
            tracing::info!(report = id, by = %viewer.name(), "oracle draft abandoned");
            return Ok(Redirect::to(&format!("/reports/{id}")).into_response());
        }
        "validate" => {}
        other => {
            let e = format!("action: `{other}` is not one of start, validate, pause, resume, abandon");
            return view(&state, &viewer, &report, Some(&draft), None, Some(&e)).await;
        }
    }
    let kind = form.kind.parse::<OracleKind>();
    let repeats = match form.repeats.trim() {
        "" => Ok(1),
        n => n.parse::<i32>().map_err(|_| format!("repeats: `{n}` is not a number")),
    };
    let fields = DraftFields {
        kind: kind.clone().unwrap_or(OracleKind::FailToPass),
        command: form.command.trim().to_owned(),
        script: form.script.replace("\r\n", "\n"),
        pass_to_pass: form.pass_to_pass.clone(),
        signature: form.signature.trim().to_owned(),
        repeats: *repeats.as_ref().unwrap_or(&1),
        queue_agents: form.queue_agents.is_some(),
    };
    if draft.status == "validating" {
        let e = "a validation of this draft is running: wait for its result, then change it";
        return view(&state, &viewer, &report, Some(&draft), Some(&fields), Some(e)).await;
    }
    let too_long = [("script", &form.script), ("command", &form.command), ("pass_to_pass", &form.pass_to_pass)]
        .into_iter()
        .find(|(_, v)| v.len() > FIELD_LIMIT)
        .map(|(f, _)| format!("{f}: is longer than {FIELD_LIMIT} bytes"));
    let refused = match (kind, repeats) {
        _ if too_long.is_some() => too_long,
        (Err(e), _) => Some(format!("kind: {e}")),
        (_, Err(e)) => Some(e),
        _ => fields.oracle().err(),
    };
    let environments = state.storage.list_environments(&report.summary.project).await?;
    // A project that builds its releases validates on the report's own.
    let releases = state.storage.release_template(&report.summary.project).await?.is_some();
    let refused = refused.or_else(|| {
        if releases {
            return None;
        }
        use failpass_shared::model::EnvironmentRole::{Buggy, Fixed};
        (![Buggy, Fixed].iter().all(|r| environments.iter().any(|e| e.role == *r))).then(|| {
            format!(
                "{} has no buggy and fixed environment to validate in; an admin adds them on /settings/projects/{}",
                report.summary.project, report.summary.project
            )
        })
    });
    if let Some(e) = refused {
        // Kept as typed (the clock runs on), not sent to a runner; an oversized field is not kept.
        let draft = if e.contains("is longer than") {
            draft
        } else {
            state.storage.save_oracle_draft(draft.id, &fields).await?
        };
        return view(&state, &viewer, &report, Some(&draft), Some(&fields), Some(&e)).await;
    }
    match state.storage.start_oracle_validation(draft.id, &fields, &NewJob::oracle(draft.id, id)).await {
        Ok((draft, job)) => {
            tracing::info!(report = id, draft = draft.id, job = job.id, tries = draft.tries, by = %viewer.name(), "oracle validation queued");
            Ok(back)
        }
        Err(crate::db::StorageError::Conflict(e)) => {
            view(&state, &viewer, &report, Some(&draft), Some(&fields), Some(&e)).await
        }
        Err(e) => Err(e.into()),
    }
}
