//! The triage queue as a work list. The table is rendered on the server
//! (the dashboard shows it as is, so its columns cost the WebAssembly
//! nothing): total count, labels, upstream state, age and last activity,
//! and for maintainers a checkbox a row. Bulk actions go through a
//! confirmation page that says how many reports they touch, and each report
//! is then checked against the caller's rights like a single change.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use failpass_shared::api::jobs::RerunRequest;
use failpass_shared::api::reports::{AssignRequest, ReportListQuery, ReportSummary, SetStatusRequest, WorkList};
use failpass_shared::format::usd;
use maud::{Markup, html};

use super::AppState;
use super::pages::page;
use crate::auth::{Action, Viewer};
use crate::error::{ApiError, ApiJson, ApiPath, ApiResult, QueryPairs};

/// Most reports one bulk action takes.
const BULK_LIMIT: usize = 2000;

/// `GET /api/v1/reports/table`: one page of the reports list as the queue
/// shows it (HTML), with the total the filters select.
#[utoipa::path(
    get, path = "/api/v1/reports/table", tag = "reports",
    params(ReportListQuery),
    responses((status = 200, description = "The page as a table, the total and the next cursor.", body = WorkList))
)]
pub async fn report_table(
    State(state): State<AppState>,
    viewer: Viewer,
    query: QueryPairs,
) -> ApiResult<ApiJson<WorkList>> {
    let mut query = ReportListQuery::from_pairs(query.iter())?;
    super::reports::mine(&state, &viewer, &mut query).await?;
    let scope = viewer.scope();
    crate::summaries::known_project(state.storage.as_ref(), &scope, query.filter.project.as_deref()).await?;
    let page = state.storage.list_reports(&query, &scope).await?;
    let total = state.storage.count_reports(&query, &scope).await?;
    let maintains = viewer.me(false).maintains_any();
    let view = failpass_shared::api::query::to_query_string(
        &query.pairs().into_iter().filter(|(k, _)| !matches!(*k, "cursor" | "limit")).collect::<Vec<_>>(),
    );
    let html = table(&page.items, total, maintains, &view, chrono::Utc::now()).into_string();
    Ok(ApiJson(WorkList { total, next_cursor: page.next_cursor, html }))
}

fn days(now: chrono::DateTime<chrono::Utc>, t: chrono::DateTime<chrono::Utc>) -> String {
    match (now - t).num_days() {
        d if d < 1 => "today".into(),
        d => format!("{d} d"),
    }
}

fn words(s: &str) -> String {
    s.replace('_', " ")
}

fn table(
    rows: &[ReportSummary],
    total: i64,
    maintains: bool,
    view: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Markup {
    html! {
        @if maintains {
            form #bulk.bulk method="post" action="/queue/bulk" data-testid="bulk-form" {
                input type="hidden" name="view" value=(view);
                label.field { span { "With" } select name="scope" data-testid="bulk-scope" {
                    option value="selected" { "the reports ticked below" }
                    option value="view" { "all " (total) " reports of this view" }
                } }
                label.field { span { "Do" } select name="action" data-testid="bulk-action" {
                    option value="rerun" { "rerun their failed attempts" }
                    option value="assign" { "assign them to…" }
                    option value="closed" { "close them" }
                    option value="wont_fix" { "mark them won't fix" }
                    option value="not_a_bug" { "mark them not a bug" }
                    option value="reopen" { "reopen them" }
                } }
                label.field { span { "Assignee (to assign)" } input name="assignee" size="12" placeholder="member"; }
                button type="submit" data-testid="bulk-review" { "Review and confirm…" }
            }
        }
        div.table-wrap {
            // At phone width the priority columns show; this opens the rest.
            details.all-columns { summary { "Every column" } }
            table.reports data-testid="queue-table" {
                thead { tr {
                    @if maintains { th scope="col" { span.visually-hidden { "Select" } } }
                    th scope="col" { "Report" }
                    th scope="col" { "Project" }
                    th scope="col" { "Route" }
                    th scope="col" { "Status" }
                    th scope="col".opt.wide { "Labels" }
                    th scope="col".opt.wide { "Upstream" }
                    th scope="col".opt { "Best verdict" }
                    th scope="col".num.opt { "Attempts" }
                    th scope="col".num.opt { "Cost" }
                    th scope="col".opt { "Assignee" }
                    th scope="col".num { "Age" }
                    th scope="col".num.opt { "Last activity" }
                } }
                tbody { @for r in rows {
                    tr data-testid="queue-row" data-route=(r.route.as_str()) data-id=(r.id) {
                        @if maintains {
                            td { input type="checkbox" name="report" value=(r.id) form="bulk" aria-label=(format!("select #{}", r.external_id)); }
                        }
                        td.title {
                            a href=(format!("/reports/{}", r.id)) { (r.title) }
                            " " span.ext { "#" (r.external_id) }
                            @for flag in [(r.vague, "vague"), (r.llm_only, "llm only"), (r.route_check, "route check"), (r.route_corrected, "corrected")] {
                                @if flag.0 { " " span.badge.badge-flag { (flag.1) } }
                            }
                        }
                        td { (r.project) }
                        td { span class=(format!("badge badge-{}", r.route.as_str())) { (words(r.route.as_str())) } }
                        td data-testid="row-status" { (words(r.status.as_str())) }
                        td.opt.wide { @for l in &r.labels { span.badge.badge-label { (l) } " " } }
                        td.opt.wide data-testid="row-upstream" data-label="upstream" { (r.upstream_state.map_or("", |u| u.as_str())) }
                        td.opt { @if let Some(v) = r.best_verdict { span class=(format!("badge badge-{}", v.as_str())) { (words(v.as_str())) } } }
                        td.num.opt data-label="attempts" { (r.attempts) }
                        td.num.opt data-label="cost" { (usd(Some(r.cost_usd))) }
                        td.opt data-testid="row-assignee" data-label="assignee" { @match &r.assignee { Some(a) => (a), None => span.muted { "nobody" } } }
                        td.num data-label="filed" { (days(now, r.filed_at)) }
                        td.num.opt data-label="last activity" { (days(now, r.last_activity_at.unwrap_or(r.created_at))) }
                    }
                } }
            }
        }
    }
}

/// What a bulk form asks for.
#[derive(Debug, Default)]
struct Bulk {
    view: String,
    scope: String,
    action: String,
    assignee: String,
    reports: Vec<i64>,
    confirm: bool,
}

impl Bulk {
    fn parse(body: &[u8]) -> Result<Self, String> {
        let mut b = Bulk::default();
        for (k, v) in form_urlencoded::parse(body) {
            if v.contains('\0') {
                return Err(crate::input::nul_message(&k));
            }
            match k.as_ref() {
                "view" => b.view = v.into_owned(),
                "scope" => b.scope = v.into_owned(),
                "action" => b.action = v.into_owned(),
                "assignee" => b.assignee = v.trim().to_owned(),
                "confirm" => b.confirm = true,
                "report" => {
                    b.reports.push(v.parse().map_err(|_| format!("report: `{v}` is not a report id"))?);
                    if b.reports.len() > BULK_LIMIT {
                        return Err(format!("report: more than {BULK_LIMIT} reports ticked"));
                    }
                }
                other => return Err(format!("{other}: not a field of the bulk form")),
            }
        }
        Ok(b)
    }

    fn describe(&self) -> Result<&'static str, String> {
        Ok(match self.action.as_str() {
            "rerun" => "Rerun the failed attempts of",
            "assign" if self.assignee.is_empty() => return Err("assignee: name the member to assign them to".into()),
            "assign" => "Assign",
            "closed" => "Close",
            "wont_fix" => "Mark as won't fix",
            "not_a_bug" => "Mark as not a bug",
            "reopen" => "Reopen",
            other => {
                return Err(format!(
                    "action: `{other}` is not one of rerun, assign, closed, wont_fix, not_a_bug, reopen"
                ));
            }
        })
    }
}

/// The reports a bulk form names, as the caller may see them.
async fn chosen(state: &AppState, viewer: &Viewer, bulk: &Bulk) -> Result<Vec<ReportSummary>, String> {
    let scope = viewer.scope();
    let pairs: Vec<_> = form_urlencoded::parse(bulk.view.as_bytes()).collect();
    let mut query = ReportListQuery::from_pairs(pairs.iter().map(|(k, v)| (k.as_ref(), v.as_ref())))
        .map_err(|e| format!("view: {e}"))?;
    // `assignee=me` and `arrived=visit` mean this caller, as on the queue.
    super::reports::mine(state, viewer, &mut query).await.map_err(|e| format!("view: {e}"))?;
    let mut out = Vec::new();
    match bulk.scope.as_str() {
        "selected" => {
            if bulk.reports.is_empty() {
                return Err("tick the reports to act on first (or choose all of this view)".into());
            }
            for id in &bulk.reports {
                if let Some(r) = state.storage.get_report(*id, &scope).await.map_err(|e| e.to_string())? {
                    out.push(r.summary);
                }
            }
        }
        "view" => {
            query.limit = 500;
            query.cursor = None;
            loop {
                let page = state.storage.list_reports(&query, &scope).await.map_err(|e| e.to_string())?;
                out.extend(page.items);
                if out.len() > BULK_LIMIT {
                    return Err(format!("this view holds more than {BULK_LIMIT} reports: narrow it first"));
                }
                match page.next_cursor {
                    Some(c) => query.cursor = Some(c),
                    None => break,
                }
            }
        }
        other => return Err(format!("scope: `{other}` is not selected or view")),
    }
    Ok(out)
}

/// `POST /queue/bulk`: without `confirm`, the confirmation page (how many
/// reports, which); with it, the action on each report the caller may
/// change, and what was done.
#[utoipa::path(
    post, path = "/queue/bulk", tag = "pages",
    request_body(content_type = "application/x-www-form-urlencoded", description = "view, scope (selected or view), action, assignee, report (repeated), confirm."),
    responses((status = 200, description = "The confirmation page, or what was done.", content_type = "text/html", body = String),
              (status = 400, description = "Refused: said on the page.", content_type = "text/html", body = String))
)]
pub async fn bulk(State(state): State<AppState>, viewer: Viewer, body: Bytes) -> ApiResult<Response> {
    let back = |view: &str| format!("/queue?{view}");
    let refuse = |viewer: &Viewer, view: &str, e: String| {
        let body = html! {
            h1 { "Bulk change" }
            p.state.state-error role="alert" data-testid="bulk-error" { (e) }
            p { a href=(back(view)) { "Back to the queue" } }
        };
        page(StatusCode::BAD_REQUEST, "Bulk change", viewer, body)
    };
    let bulk = match Bulk::parse(&body) {
        Ok(b) => b,
        Err(e) => return Ok(refuse(&viewer, "", e)),
    };
    let what = match bulk.describe() {
        Ok(w) => w,
        Err(e) => return Ok(refuse(&viewer, &bulk.view, e)),
    };
    let reports = match chosen(&state, &viewer, &bulk).await {
        Ok(r) => r,
        Err(e) => return Ok(refuse(&viewer, &bulk.view, e)),
    };
    // Only reports of projects where the caller may take the action count.
    let action = if bulk.action == "rerun" { Action::Rerun } else { Action::Review };
    let (mine, others): (Vec<_>, Vec<_>) = reports.into_iter().partition(|r| viewer.role_in(&r.project).may(action));
    let target = if bulk.action == "assign" { format!(" to {}", bulk.assignee) } else { String::new() };
    if !bulk.confirm {
        let body = html! {
            h1 { "Confirm" }
            p data-testid="bulk-summary" { strong { (what) " " (mine.len()) " " (if mine.len() == 1 { "report" } else { "reports" }) (target) "?" } }
            @if !others.is_empty() {
                p.muted { (others.len()) " more in this choice belong to projects where you may not; they are left alone." }
            }
            @if mine.is_empty() {
                p.state.state-empty { "Nothing you may change." }
            } @else {
                form.inline method="post" action="/queue/bulk" {
                    input type="hidden" name="view" value=(bulk.view);
                    input type="hidden" name="scope" value="selected";
                    input type="hidden" name="action" value=(bulk.action);
                    input type="hidden" name="assignee" value=(bulk.assignee);
                    input type="hidden" name="confirm" value="1";
                    @for r in &mine { input type="hidden" name="report" value=(r.id); }
                    button type="submit" data-testid="bulk-confirm" { (what) " " (mine.len()) " " (if mine.len() == 1 { "report" } else { "reports" }) }
                }
            }
            " " a href=(back(&bulk.view)) { "Cancel" }
            div.table-scroll { table { tbody { @for r in mine.iter().take(100) { tr {
                td { a href=(format!("/reports/{}", r.id)) { "#" (r.external_id) } } td.wrap { (r.title) } td { (r.project) } td { (words(r.status.as_str())) }
            } } } } }
            @if mine.len() > 100 { p.muted { "…and " (mine.len() - 100) " more." } }
        };
        return Ok(page(StatusCode::OK, "Confirm", &viewer, body));
    }
    // Each change as the API makes it (so each is checked and recorded the same way).
    let (mut done, mut queued, mut failed) = (0usize, 0usize, Vec::new());
    for r in &mine {
        let outcome = match bulk.action.as_str() {
            "rerun" => super::reruns::rerun(
                State(state.clone()),
                viewer.clone(),
                ApiJson(RerunRequest { report_id: Some(r.id), ..Default::default() }),
            )
            .await
            .map(|(_, ApiJson(res))| queued += res.queued.len()),
            "assign" => super::reports::assign(
                State(state.clone()),
                viewer.clone(),
                ApiPath(r.id),
                ApiJson(AssignRequest { assignee: Some(bulk.assignee.clone()) }),
            )
            .await
            .map(|_| ()),
            status => super::reports::set_status(
                State(state.clone()),
                viewer.clone(),
                ApiPath(r.id),
                ApiJson(SetStatusRequest {
                    status: status.to_owned(),
                    duplicate_of: None,
                    reason: Some("bulk change from the queue".into()),
                }),
            )
            .await
            .map(|_| ()),
        };
        match outcome {
            Ok(()) => done += 1,
            Err(e @ (ApiError::Unavailable(_) | ApiError::Internal(_))) => return Err(e),
            Err(e) => failed.push(format!("#{}: {e}", r.external_id)),
        }
    }
    tracing::info!(by = %viewer.name(), action = %bulk.action, done, failed = failed.len(), "bulk change from the queue");
    let body = html! {
        h1 { "Done" }
        p data-testid="bulk-result" {
            (what) " " (done) " of " (mine.len()) " " (if mine.len() == 1 { "report" } else { "reports" }) (target) "."
            @if bulk.action == "rerun" { " " (queued) " rerun(s) queued; follow them on the Runners page." }
        }
        @if !failed.is_empty() {
            p.state.state-error role="alert" { (failed.len()) " refused:" }
            ul { @for f in failed.iter().take(50) { li { (f) } } }
        }
        p { a href=(back(&bulk.view)) data-testid="bulk-back" { "Back to the queue" } }
    };
    Ok(page(StatusCode::OK, "Done", &viewer, body))
}
