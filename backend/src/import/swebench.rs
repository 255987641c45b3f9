//! SWE-bench: task instances (reports with an in-patch fail-to-pass oracle)
//! and leaderboard results (one agent per entry, `fix` attempts per instance).

use std::collections::HashSet;

use chrono::{DateTime, NaiveDateTime, Utc};
use failpass_shared::api::attempts::{CreateAttemptRequest, ReportKey};
use failpass_shared::api::import::{AgentRecord, ImportRecord, Outcome};
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::api::reports::{CreateReportRequest, Oracle};
use failpass_shared::model::{Goal, OracleKind, OracleSource, Verdict, VerdictSource};
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _};

use super::{Importer, json_field};

/// Reports stored per transaction.
const REPORT_BATCH: usize = 500;

/// One SWE-bench task instance. Unknown fields are ignored (datasets add columns).
#[derive(Debug, Deserialize)]
#[allow(non_snake_case)]
struct Instance {
    instance_id: String,
    repo: String,
    #[serde(default)]
    problem_statement: String,
    #[serde(default)]
    created_at: Option<String>,
    #[serde(default)]
    version: Option<Value>,
    #[serde(default)]
    patch: Option<String>,
    #[serde(default)]
    FAIL_TO_PASS: Option<Value>,
    #[serde(default)]
    PASS_TO_PASS: Option<Value>,
}

/// A test list is a JSON array, or (as in the published dataset) a string holding one.
fn test_list(v: Option<Value>, field: &str) -> Result<Vec<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|i| i.as_str().map(str::to_owned).ok_or_else(|| format!("{field}: every test id must be a string")))
            .collect(),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(Vec::new()),
        Some(Value::String(s)) => {
            serde_json::from_str::<Vec<String>>(&s).map_err(|e| format!("{field}: not a JSON list of test ids: {e}"))
        }
        Some(_) => Err(format!("{field}: expected a list of test ids")),
    }
}

/// `2022-03-03T15:14:54Z`, `2022-03-03 15:14:54` (UTC) or with an offset.
pub fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").ok().map(|n| n.and_utc()))
        .or_else(|| NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").ok().map(|n| n.and_utc()))
}

/// Files a unified diff touches (`+++ b/path`).
fn diff_paths(patch: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in patch.lines() {
        if let Some(p) = line.strip_prefix("+++ b/")
            && !out.iter().any(|o| o == p)
        {
            out.push(p.to_owned());
        }
    }
    out
}

fn title_of(statement: &str, fallback: &str) -> String {
    let first = statement.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or(fallback);
    let first = first.trim_start_matches('#').trim();
    let mut t: String = first.chars().take(200).collect();
    if t.is_empty() {
        t = fallback.to_owned();
    }
    t
}

fn instance_to_report(i: Instance) -> Result<CreateReportRequest, (Option<String>, String)> {
    let fail_to_pass = test_list(i.FAIL_TO_PASS, "FAIL_TO_PASS").map_err(|e| (Some("FAIL_TO_PASS".to_owned()), e))?;
    let pass_to_pass = test_list(i.PASS_TO_PASS, "PASS_TO_PASS").map_err(|e| (Some("PASS_TO_PASS".to_owned()), e))?;
    let filed_at = match i.created_at.as_deref() {
        None => None,
        Some(s) => Some(
            parse_time(s).ok_or_else(|| (Some("created_at".to_owned()), format!("`{s}` is not a date and time")))?,
        ),
    };
    let version = i.version.map(|v| match v {
        Value::String(s) => s,
        other => other.to_string(),
    });
    let name = i.repo.rsplit('/').next().unwrap_or(&i.repo).to_owned();
    Ok(CreateReportRequest {
        project: i.repo.clone(),
        url: None,
        title: title_of(&i.problem_statement, &i.instance_id),
        body: i.problem_statement,
        labels: vec!["swe-bench".into()],
        filed_at,
        reporter: None,
        environment: version.map(|v| format!("{name} {v}")),
        paths: i.patch.as_deref().map(diff_paths).unwrap_or_default(),
        oracle: Some(Oracle {
            kind: OracleKind::FailToPass,
            source: Some(OracleSource::InPatchTest),
            command: None,
            fail_to_pass,
            pass_to_pass,
            signature: None,
            repeats: None,
            authoring_minutes: None,
        }),
        external_id: i.instance_id,
        upstream: None,
    })
}

/// SWE-bench instances as JSON Lines (streamed) or one JSON array.
pub async fn import_instances<R: AsyncBufRead + Unpin>(
    importer: &mut Importer<'_>,
    mut input: R,
) -> anyhow::Result<()> {
    let mut projects: HashSet<String> = HashSet::new();
    let mut batch: Vec<(u64, CreateReportRequest)> = Vec::new();
    let handle = |n: u64, value: Result<Instance, serde_json::Error>, importer: &mut Importer<'_>| match value {
        Err(e) => {
            importer.reject(n, json_field(&e), format!("record {n}: {e}"));
            None
        }
        Ok(inst) => match instance_to_report(inst) {
            Ok(r) => Some((n, r)),
            Err((field, message)) => {
                importer.reject(n, field, format!("record {n}: {message}"));
                None
            }
        },
    };
    let first = input.fill_buf().await?.iter().copied().find(|b| !b.is_ascii_whitespace());
    let mut records: Vec<(u64, CreateReportRequest)> = Vec::new();
    if first == Some(b'[') {
        let text = crate::input::read_document(&mut input, "a JSON array of instances").await?;
        let items: Vec<Value> =
            serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("not a JSON array of instances: {e}"))?;
        for (k, v) in items.into_iter().enumerate() {
            if let Some(r) = handle(k as u64 + 1, serde_json::from_value(v), importer) {
                records.push(r);
            }
        }
    } else {
        let (mut line, mut n) = (String::new(), 0u64);
        while let Some(read) = super::next_line(&mut input, &mut line, &mut n).await? {
            if let Err(e) = read {
                importer.reject(n, None, e);
                continue;
            }
            if let Some(r) = handle(n, serde_json::from_str(line.trim()), importer) {
                batch.push(r);
            }
            if batch.len() >= REPORT_BATCH {
                store(importer, &mut projects, std::mem::take(&mut batch)).await?;
            }
        }
    }
    batch.extend(records);
    store(importer, &mut projects, batch).await?;
    Ok(())
}

async fn store(
    importer: &mut Importer<'_>,
    projects: &mut HashSet<String>,
    batch: Vec<(u64, CreateReportRequest)>,
) -> anyhow::Result<()> {
    for (n, r) in &batch {
        if projects.insert(r.project.clone()) {
            importer
                .push(
                    *n,
                    ImportRecord::Project(CreateProjectRequest {
                        slug: r.project.clone(),
                        name: None,
                        description: None,
                        public: None,
                        upstream_url: None,
                        // A benchmark's instances are graded, not a backlog.
                        benchmark: Some(true),
                    }),
                )
                .await?;
        }
    }
    importer.push_reports(batch).await?;
    Ok(())
}

/// `astropy__astropy-12907` → `astropy/astropy`.
pub fn repo_of_instance(instance_id: &str) -> Option<String> {
    let (owner, rest) = instance_id.split_once("__")?;
    let (name, number) = rest.rsplit_once('-')?;
    (!owner.is_empty() && !name.is_empty() && number.chars().all(|c| c.is_ascii_digit()))
        .then(|| format!("{owner}/{name}"))
}

/// Instances each board is scored on.
fn board_size(board: &str) -> Option<u64> {
    match board.to_ascii_lowercase().as_str() {
        "bash-only" | "verified" => Some(500),
        "lite" => Some(300),
        "full" | "test" => Some(2294),
        "multimodal" => Some(517),
        _ => None,
    }
}

struct Entry {
    agent: AgentRecord,
    attempt_key: String,
    details: Option<serde_json::Map<String, Value>>,
}

/// The SWE-bench site's `leaderboards.json` (`{"leaderboards":[{name, results}]}`)
/// or `info_for_leaderboard.json` (`{model: {instance: {resolved, cost, api_calls}}}`).
pub async fn import_leaderboard(importer: &mut Importer<'_>, text: &str) -> anyhow::Result<()> {
    let doc: Value = serde_json::from_str(text).map_err(|e| anyhow::anyhow!("not JSON: {e}"))?;
    let Value::Object(top) = doc else { anyhow::bail!("expected a JSON object at the top level") };
    let mut entries = Vec::new();
    let mut names: HashSet<String> = HashSet::new();
    let mut n = 0u64;
    if let Some(boards) = top.get("leaderboards") {
        let Some(boards) = boards.as_array() else { anyhow::bail!("`leaderboards` must be an array") };
        for board in boards {
            let board_name = board.get("name").and_then(Value::as_str).unwrap_or("unnamed");
            for e in board.get("results").and_then(Value::as_array).into_iter().flatten() {
                n += 1;
                let Some(name) = e.get("name").and_then(Value::as_str) else {
                    importer.reject(n, Some("name".into()), format!("entry {n} of board `{board_name}` has no name"));
                    continue;
                };
                let num = |k: &str| e.get(k).and_then(Value::as_f64);
                let model = e
                    .get("tags")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .find_map(|t| t.strip_prefix("Model: "))
                    .map(str::to_owned);
                let details = e.get("per_instance_details").and_then(Value::as_object).cloned();
                let mut notes = Vec::new();
                if details.is_none() {
                    notes.push("no per-instance rows: only the stated figures are known".to_owned());
                }
                if let Some(w) = e.get("warning").and_then(Value::as_str) {
                    notes.push(format!("source warning: {w}"));
                }
                // Some boards list one name twice (two submissions); the folder tells them apart.
                let mut agent_name = format!("{name} [{board_name}]");
                if !names.insert(agent_name.clone()) {
                    let folder = e.get("folder").and_then(Value::as_str).unwrap_or("second entry");
                    agent_name = format!("{name} [{board_name}/{folder}]");
                    names.insert(agent_name.clone());
                }
                entries.push(Entry {
                    agent: AgentRecord {
                        name: agent_name,
                        source: Some(format!("swebench:{board_name}")),
                        model,
                        date: e.get("date").and_then(Value::as_str).map(str::to_owned),
                        stated_rate: num("resolved").map(|r| r / 100.0),
                        stated_instances: board_size(board_name),
                        stated_cost_usd: num("cost"),
                        stated_instance_cost_usd: num("instance_cost"),
                        stated_instance_calls: num("instance_calls"),
                        notes: (!notes.is_empty()).then(|| notes.join("; ")),
                    },
                    attempt_key: format!("swebench:{board_name}"),
                    details,
                });
            }
        }
    } else {
        for (model, details) in &top {
            n += 1;
            let Some(details) = details.as_object() else {
                importer.reject(n, Some(model.clone()), format!("`{model}` must map instance ids to results"));
                continue;
            };
            entries.push(Entry {
                agent: AgentRecord {
                    name: model.clone(),
                    source: Some("swebench:info_for_leaderboard".into()),
                    model: Some(model.clone()),
                    date: None,
                    stated_rate: None,
                    stated_instances: None,
                    stated_cost_usd: None,
                    stated_instance_cost_usd: None,
                    stated_instance_calls: None,
                    notes: None,
                },
                attempt_key: "swebench:info".into(),
                details: Some(details.clone()),
            });
        }
    }

    // Every instance needs a report; create a stub (with the benchmark's in-patch
    // oracle) only where none exists, so richer imported reports are kept.
    let mut instances: Vec<&str> =
        entries.iter().flat_map(|e| e.details.iter().flat_map(|d| d.keys().map(String::as_str))).collect();
    instances.sort_unstable();
    instances.dedup();
    // Looked up in the importer's scope: a report or project it may not see
    // is treated as a missing one (and its stub refused as such).
    let scope = importer.scope();
    let mut stubs = Vec::new();
    for id in &instances {
        let Some(repo) = repo_of_instance(id) else { continue };
        let visible = match importer.storage().find_report(&repo, id).await? {
            Some(report) => importer.storage().report_project(report, &scope).await?.is_some(),
            None => false,
        };
        if visible {
            // Counted as a record, as it was when it was first stored (a
            // re-import's summary covers what the first one did).
            importer.count(Outcome::Unchanged);
        } else {
            stubs.push((repo, (*id).to_owned()));
        }
    }
    let mut seen_projects = HashSet::new();
    for id in &instances {
        let Some(repo) = repo_of_instance(id) else { continue };
        if !seen_projects.insert(repo.clone()) {
            continue;
        }
        if importer.storage().get_project(&repo, &scope).await?.is_some() {
            importer.count(Outcome::Unchanged);
        } else if stubs.iter().any(|(r, _)| *r == repo) {
            importer
                .push(
                    0,
                    ImportRecord::Project(CreateProjectRequest {
                        slug: repo.clone(),
                        name: None,
                        description: None,
                        public: None,
                        upstream_url: None,
                        // A benchmark's instances are graded, not a backlog.
                        benchmark: Some(true),
                    }),
                )
                .await?;
        }
    }
    let stub_reports = stubs
        .into_iter()
        .map(|(repo, id)| {
            (
                0,
                CreateReportRequest {
                    project: repo,
                    title: id.clone(),
                    url: None,
                    body: String::new(),
                    labels: vec!["swe-bench".into()],
                    filed_at: None,
                    reporter: None,
                    environment: None,
                    paths: Vec::new(),
                    oracle: Some(Oracle {
                        kind: OracleKind::FailToPass,
                        source: Some(OracleSource::InPatchTest),
                        // The test ids come with the instance import; the leaderboard only says how it is graded.
                        command: Some(
                            "SWE-bench evaluation harness: the instance's FAIL_TO_PASS and PASS_TO_PASS tests".into(),
                        ),
                        fail_to_pass: Vec::new(),
                        pass_to_pass: Vec::new(),
                        signature: None,
                        repeats: None,
                        authoring_minutes: None,
                    }),
                    external_id: id,
                    upstream: None,
                },
            )
        })
        .collect::<Vec<_>>();
    if !stub_reports.is_empty() {
        importer.push_reports(stub_reports).await?;
    }

    for (k, e) in entries.into_iter().enumerate() {
        let entry_no = k as u64 + 1;
        let agent = e.agent.name.clone();
        let model = e.agent.model.clone();
        importer.push(entry_no, ImportRecord::Agent(e.agent)).await?;
        for (instance, result) in e.details.into_iter().flatten() {
            let Some(repo) = repo_of_instance(&instance) else {
                importer.reject(
                    entry_no,
                    Some(instance.clone()),
                    format!("`{instance}` is not an owner__repo-number instance id"),
                );
                continue;
            };
            let Some(resolved) = result.get("resolved").and_then(Value::as_bool) else {
                importer.reject(
                    entry_no,
                    Some(format!("{instance}.resolved")),
                    format!("{agent}: `{instance}` has no boolean `resolved`"),
                );
                continue;
            };
            let verdict = if resolved { Verdict::Resolved } else { Verdict::Unresolved };
            let key = ReportKey { project: repo, external_id: instance.clone() };
            let attempt = CreateAttemptRequest {
                goal: Goal::Fix,
                model: model.clone(),
                cost_usd: result.get("cost").and_then(Value::as_f64),
                api_calls: result.get("api_calls").and_then(Value::as_i64),
                attempt_key: Some(e.attempt_key.clone()),
                ..CreateAttemptRequest::for_key(key, agent.clone(), verdict, VerdictSource::Deterministic)
            };
            importer.push(entry_no, ImportRecord::Attempt(attempt)).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_ids_name_their_repository() {
        assert_eq!(repo_of_instance("astropy__astropy-12907").as_deref(), Some("astropy/astropy"));
        assert_eq!(repo_of_instance("scikit-learn__scikit-learn-10297").as_deref(), Some("scikit-learn/scikit-learn"));
        assert_eq!(repo_of_instance("psf__requests-2317").as_deref(), Some("psf/requests"));
        assert_eq!(repo_of_instance("nonsense"), None);
        assert_eq!(repo_of_instance("a__b-x1"), None);
    }

    #[test]
    fn test_lists_come_as_strings_or_arrays() {
        assert_eq!(test_list(Some(Value::String("[\"a\", \"b\"]".into())), "F").unwrap(), ["a", "b"]);
        assert_eq!(test_list(Some(serde_json::json!(["x"])), "F").unwrap(), ["x"]);
        assert!(test_list(Some(Value::String("[oops".into())), "F").unwrap_err().starts_with("F:"));
        assert!(test_list(None, "F").unwrap().is_empty());
    }

    #[test]
    fn times_and_paths() {
        assert!(parse_time("2022-03-03T15:14:54Z").is_some());
        assert!(parse_time("2022-03-03 15:14:54").is_some());
        assert!(parse_time("yesterday").is_none());
        assert_eq!(diff_paths("--- a/x.py\n+++ b/x.py\n@@\n+++ b/y.py\n"), ["x.py", "y.py"]);
    }
}
