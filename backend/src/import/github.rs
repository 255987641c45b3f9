//! GitHub issues: the REST "list repository issues" objects (JSON Lines or an
//! array) and what `gh issue list --json number,title,body,labels,createdAt,author,url`
//! writes. Pull requests (a non-null `pull_request`) are skipped, not rejected.

use crate::db::hooks::Change;
use failpass_shared::api::hooks::HookEvent;
use std::collections::HashSet;

use failpass_shared::api::import::{ImportRecord, Outcome};
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::api::reports::CreateReportRequest;
use failpass_shared::model::Route;
use failpass_shared::routing::RoutingConfig;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use super::Importer;
use super::swebench::parse_time;
use crate::db::reports::Origin;
use crate::db::{NewReport, ProjectScope, Storage, StorageError, StorageResult};
use crate::triage::Models;

const BATCH: usize = 500;

/// `https://api.github.com/repos/OWNER/NAME` or `https://github.com/OWNER/NAME/…` → `OWNER/NAME`.
fn repo_of(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://api.github.com/repos/").or_else(|| url.strip_prefix("https://github.com/"))?;
    let mut parts = rest.split('/');
    Some(format!("{}/{}", parts.next().filter(|p| !p.is_empty())?, parts.next().filter(|p| !p.is_empty())?))
}

fn str_at<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| {
        let mut cur = v;
        for part in k.split('.') {
            cur = cur.get(part)?;
        }
        cur.as_str()
    })
}

pub(crate) enum Converted {
    Report(Box<CreateReportRequest>),
    Skip(String),
    Reject(Option<String>, String),
}

/// The issue's state upstream: REST `state`/`state_reason`/`locked`/`type`,
/// or `gh`'s `state` (`OPEN`, `CLOSED`), `stateReason` and `isLocked`.
fn upstream_of(v: &Value) -> Option<failpass_shared::api::reports::Upstream> {
    let state = str_at(v, &["state"])?.to_lowercase().parse().ok()?;
    let reason = str_at(v, &["state_reason", "stateReason"])
        .map(str::to_lowercase)
        .filter(|r| !r.is_empty() && r != "reopened" && r.len() <= 100);
    let locked = ["locked", "isLocked"].iter().any(|k| v.get(*k).and_then(Value::as_bool) == Some(true));
    let kind =
        str_at(v, &["type.name", "issueType.name"]).map(str::to_owned).filter(|k| !k.is_empty() && k.len() <= 100);
    let milestone =
        str_at(v, &["milestone.title"]).map(str::trim).filter(|m| !m.is_empty() && m.len() <= 100).map(str::to_owned);
    Some(failpass_shared::api::reports::Upstream { state, reason, locked, kind, milestone })
}

pub(crate) fn convert(v: &Value, project: Option<&str>) -> Converted {
    if v.get("pull_request").is_some_and(|p| !p.is_null()) {
        return Converted::Skip("a pull request, not an issue".into());
    }
    let Some(number) = v.get("number").and_then(Value::as_u64) else {
        return Converted::Reject(Some("number".into()), "missing or not a whole number".into());
    };
    let Some(title) = str_at(v, &["title"]) else {
        return Converted::Reject(Some("title".into()), "missing".into());
    };
    let project = project
        .map(str::to_owned)
        .or_else(|| str_at(v, &["repository_url"]).and_then(repo_of))
        .or_else(|| str_at(v, &["html_url", "url"]).and_then(repo_of));
    let Some(project) = project else {
        return Converted::Reject(
            Some("repository_url".into()),
            "no repository named: pass --project OWNER/NAME".into(),
        );
    };
    let filed_at = match str_at(v, &["created_at", "createdAt"]) {
        Some(t) => match parse_time(t) {
            Some(t) => Some(t),
            None => return Converted::Reject(Some("created_at".into()), format!("`{t}` is not a date and time")),
        },
        None => None,
    };
    let labels = v
        .get("labels")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|l| l.get("name").and_then(Value::as_str).or_else(|| l.as_str()))
        .map(str::to_owned)
        .collect();
    let url = str_at(v, &["html_url"]).or_else(|| str_at(v, &["url"]).filter(|u| u.starts_with("https://github.com/")));
    Converted::Report(Box::new(CreateReportRequest {
        project,
        external_id: number.to_string(),
        url: url.map(str::to_owned),
        title: title.to_owned(),
        body: str_at(v, &["body"]).unwrap_or_default().to_owned(),
        labels,
        filed_at,
        reporter: str_at(v, &["user.login", "author.login"]).map(str::to_owned),
        environment: None,
        paths: Vec::new(),
        oracle: None,
        upstream: upstream_of(v),
    }))
}

/// What became of one issue taken in live (a webhook delivery or a sync).
pub enum Intake {
    /// Stored and routed: created, updated or unchanged.
    Stored { outcome: Outcome, id: Option<i64>, route: Option<Route> },
    /// Not an issue failpass keeps (a pull request).
    Skipped(String),
    /// Not a valid issue: the field and what is wrong.
    Rejected(String, String),
}

/// Creates or updates `project`'s report for a GitHub issue object and
/// routes it with the project's rule (and classifier, once it has one).
pub async fn intake_issue(
    storage: &dyn Storage,
    models: &Models,
    cfg: &RoutingConfig,
    project: &str,
    issue: &Value,
    origin: Origin,
) -> StorageResult<Intake> {
    let mut req = match convert(issue, Some(project)) {
        Converted::Report(r) => *r,
        Converted::Skip(why) => return Ok(Intake::Skipped(why)),
        Converted::Reject(field, message) => return Ok(Intake::Rejected(field.unwrap_or_default(), message)),
    };
    req.normalize();
    if let Err(e) = req.validate() {
        return Ok(Intake::Rejected(e.field, e.message));
    }
    let decision = models.decide(storage, cfg, &req).await?;
    let read = |id: Option<i64>| async move {
        match id {
            Some(id) => {
                storage.get_report(id, &ProjectScope::All).await.map(|r| r.map(|r| (r.summary.route, r.summary.status)))
            }
            None => Ok(None),
        }
    };
    let before = read(storage.find_report(project, &req.external_id).await?).await?;
    let outcome = storage
        .import_reports(&[NewReport { request: req.clone(), decision, origin }])
        .await?
        .pop()
        .unwrap_or_else(|| Err(StorageError::Corrupt("no outcome for the report".into())))?;
    let id = storage.find_report(project, &req.external_id).await?;
    let after = read(id).await?;
    let route = after.map(|(route, _)| route);
    // Live intake tells the project's hooks of a new or changed route, and a
    // status changed upstream (a bulk import of issues tells no one). Told
    // after the import's own transaction, so best effort: a failure is
    // logged, not answered (the report is stored; GitHub would only resend it).
    if let (Some(id), Some((to_route, to_status))) = (id, after) {
        let mut changes = Vec::new();
        if before.map(|(r, _)| r) != Some(to_route) {
            changes.push(Change {
                event: HookEvent::Route,
                report_id: id,
                attempt_id: None,
                from: before.map(|(r, _)| r.as_str().to_owned()),
                to: to_route.as_str().to_owned(),
            });
        }
        if let Some((_, from_status)) = before
            && from_status != to_status
        {
            changes.push(Change {
                event: HookEvent::Status,
                report_id: id,
                attempt_id: None,
                from: Some(from_status.as_str().to_owned()),
                to: to_status.as_str().to_owned(),
            });
        }
        if let Err(e) = storage.tell(&changes).await {
            tracing::error!(report = id, error = %e, "could not tell the project's hooks of the change");
        }
    }
    Ok(Intake::Stored { outcome, id, route })
}

pub async fn import_issues<R: AsyncBufRead + Unpin>(
    importer: &mut Importer<'_>,
    mut input: R,
    project: Option<&str>,
) -> anyhow::Result<()> {
    let mut projects = HashSet::new();
    let mut batch = Vec::new();
    let first = input.fill_buf().await?.iter().copied().find(|b| !b.is_ascii_whitespace());
    let mut values: Box<dyn Iterator<Item = (u64, Result<Value, String>)> + Send> = if first == Some(b'[') {
        let text = crate::input::read_document(&mut input, "a JSON array of issues").await?;
        let items: Vec<Value> =
            serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("not a JSON array of issues: {e}"))?;
        Box::new(items.into_iter().enumerate().map(|(i, v)| (i as u64 + 1, Ok(v))))
    } else {
        Box::new(std::iter::empty())
    };
    let mut line = String::new();
    let mut n = 0u64;
    loop {
        let next = match values.next() {
            Some(item) => Some(item),
            None if first == Some(b'[') => None,
            None => match super::next_line(&mut input, &mut line, &mut n).await? {
                None => None,
                Some(Err(e)) => Some((n, Err(e))),
                Some(Ok(())) => {
                    Some((n, serde_json::from_str::<Value>(line.trim()).map_err(|e| format!("line {n}: {e}"))))
                }
            },
        };
        let Some((n, value)) = next else { break };
        match value {
            Err(e) => importer.reject(n, None, e),
            Ok(v) => match convert(&v, project) {
                Converted::Skip(why) => importer.skip(why),
                Converted::Reject(field, message) => importer.reject(n, field, format!("record {n}: {message}")),
                Converted::Report(r) => {
                    if projects.insert(r.project.clone()) {
                        importer
                            .push(
                                0,
                                ImportRecord::Project(CreateProjectRequest {
                                    slug: r.project.clone(),
                                    name: None,
                                    description: None,
                                    public: None,
                                    upstream_url: None,
                                    benchmark: None,
                                }),
                            )
                            .await?;
                    }
                    batch.push((n, *r));
                }
            },
        }
        if batch.len() >= BATCH {
            importer.push_reports(std::mem::take(&mut batch)).await?;
        }
    }
    importer.push_reports(batch).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_from_urls() {
        assert_eq!(
            repo_of("https://api.github.com/repos/huggingface/datasets").as_deref(),
            Some("huggingface/datasets")
        );
        assert_eq!(repo_of("https://github.com/pytorch/pytorch/issues/1").as_deref(), Some("pytorch/pytorch"));
        assert_eq!(repo_of("https://example.com/x/y"), None);
    }

    #[test]
    fn gh_cli_shape_converts() {
        let v = serde_json::json!({"number": 7, "title": "NaN loss", "body": "x", "labels": [{"name": "bug"}],
            "createdAt": "2024-01-02T03:04:05Z", "author": {"login": "me"}, "url": "https://github.com/a/b/issues/7"});
        let Converted::Report(r) = convert(&v, None) else { panic!() };
        assert_eq!((r.project.as_str(), r.external_id.as_str(), r.reporter.as_deref()), ("a/b", "7", Some("me")));
        assert_eq!(r.labels, ["bug"]);
        let pr = serde_json::json!({"number": 8, "title": "t", "pull_request": {"url": "u"}});
        assert!(matches!(convert(&pr, Some("a/b")), Converted::Skip(_)));
        let null_pr = serde_json::json!({"number": 9, "title": "t", "pull_request": null, "repository_url": "https://api.github.com/repos/a/b"});
        assert!(matches!(convert(&null_pr, None), Converted::Report(_)), "pull_request: null is an issue");
    }
}
