//! Exports: the reports and attempts lists, with the pages' filters, as CSV
//! (a spreadsheet), JSON (the API's objects, one array) or NDJSON (failpass's
//! own import records, so an export imports back). Written page by page to
//! any async writer: the HTTP routes stream it, `failpass export` writes a
//! file or standard output.

use std::collections::HashMap;

use failpass_shared::api::attempts::{AttemptListQuery, CreateAttemptRequest, ReportKey};
use failpass_shared::api::import::ImportRecord;
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::api::query::FieldError;
use failpass_shared::api::reports::{CreateReportRequest, Report, ReportListQuery};
use failpass_shared::model::OracleSource;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use crate::db::{ProjectScope, Storage, StorageError};

/// How an export is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Csv,
    Json,
    Ndjson,
}

impl ExportFormat {
    pub fn parse(s: &str) -> std::result::Result<Self, FieldError> {
        match s.trim() {
            "csv" => Ok(Self::Csv),
            "json" => Ok(Self::Json),
            "ndjson" | "jsonl" => Ok(Self::Ndjson),
            other => Err(FieldError::new("format", format!("`{other}` is not one of csv, json, ndjson"))),
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Csv => "text/csv; charset=utf-8",
            Self::Json => "application/json",
            Self::Ndjson => "application/x-ndjson",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Self::Csv => "csv",
            Self::Json => "json",
            Self::Ndjson => "ndjson",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("writing the export: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Encode(String),
}

type Result<T> = std::result::Result<T, ExportError>;

const PAGE: u32 = 500;

/// A report as its import record: what was filed (an oracle the rule derived
/// from the report is derived again on import, so it is left out).
pub fn report_record(r: &Report) -> CreateReportRequest {
    CreateReportRequest {
        project: r.summary.project.clone(),
        external_id: r.summary.external_id.clone(),
        url: r.summary.url.clone(),
        title: r.summary.title.clone(),
        body: r.body.clone(),
        labels: r.summary.labels.clone(),
        // A date nobody stated goes out as none, so it comes back unknown.
        filed_at: r.summary.filed_at_stated.then_some(r.summary.filed_at),
        reporter: r.reporter.clone(),
        environment: r.environment.clone(),
        paths: r.paths.clone(),
        oracle: r.oracle.clone().filter(|o| o.source != Some(OracleSource::Derived)),
        upstream: r.upstream.clone(),
    }
}

fn attempt_record(a: &failpass_shared::api::attempts::Attempt, report: ReportKey) -> CreateAttemptRequest {
    CreateAttemptRequest {
        report_id: None,
        report: Some(report),
        goal: a.goal,
        agent: a.agent.clone(),
        model: a.model.clone(),
        model_cutoff: a.model_cutoff,
        started_at: a.time_stated.then_some(a.started_at),
        ended_at: a.ended_at.filter(|_| a.time_stated),
        wall_seconds: a.wall_seconds,
        cost_usd: a.cost_usd,
        tokens_in: a.tokens_in,
        tokens_out: a.tokens_out,
        api_calls: a.api_calls,
        iterations: a.iterations,
        candidate: a.candidate.clone(),
        signals: a.signals.clone(),
        verdict: a.verdict,
        verdict_source: a.verdict_source,
        failure_cause: a.failure_cause,
        review: a.review,
        reviewer: a.reviewer.clone(),
        review_comment: a.review_comment.clone(),
        attempt_key: a.attempt_key.clone(),
        rank: a.rank,
        verify: false,
    }
}

fn json_line<T: serde::Serialize>(v: &T) -> Result<Vec<u8>> {
    let mut line = serde_json::to_vec(v).map_err(|e| ExportError::Encode(e.to_string()))?;
    line.push(b'\n');
    Ok(line)
}

fn csv_row(fields: &[String]) -> Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(fields).map_err(|e| ExportError::Encode(e.to_string()))?;
    w.into_inner().map_err(|e| ExportError::Encode(e.to_string()))
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(ToString::to_string).unwrap_or_default()
}

/// JSON arrays are written item by item: `[`, items joined by `,`, `]`.
struct JsonArray {
    first: bool,
}

impl JsonArray {
    async fn item<W: AsyncWrite + Unpin, T: serde::Serialize>(&mut self, out: &mut W, v: &T) -> Result<()> {
        out.write_all(if self.first { b"[\n" } else { b",\n" }).await?;
        self.first = false;
        out.write_all(&serde_json::to_vec(v).map_err(|e| ExportError::Encode(e.to_string()))?).await?;
        Ok(())
    }

    async fn end<W: AsyncWrite + Unpin>(self, out: &mut W) -> Result<()> {
        out.write_all(if self.first { b"[]\n" } else { b"\n]\n" }).await?;
        Ok(())
    }
}

pub const REPORT_COLUMNS: [&str; 16] = [
    "id",
    "project",
    "number",
    "title",
    "status",
    "route",
    "category",
    "labels",
    "upstream_state",
    "assignee",
    "filed_at",
    "last_activity_at",
    "attempts",
    "best_verdict",
    "cost_usd",
    "url",
];

/// The reports matching `query` (its filters and order; its limit and
/// cursor are ignored: every page is written). NDJSON starts each project
/// with its record, so the file imports into an empty database.
pub async fn reports<W: AsyncWrite + Unpin>(
    storage: &dyn Storage,
    query: &ReportListQuery,
    scope: &ProjectScope,
    format: ExportFormat,
    out: &mut W,
) -> Result<u64> {
    let mut q = query.clone();
    q.limit = PAGE;
    q.cursor = None;
    let mut n = 0;
    let mut array = JsonArray { first: true };
    let mut projects = std::collections::HashSet::new();
    // Reports whose life cycle follows all the reports (a duplicate names another report).
    let mut life_cycles = Vec::new();
    if format == ExportFormat::Csv {
        out.write_all(&csv_row(&REPORT_COLUMNS.map(String::from))?).await?;
    }
    loop {
        let page = storage.list_reports(&q, scope).await?;
        for s in &page.items {
            n += 1;
            match format {
                ExportFormat::Csv => {
                    let row = [
                        s.id.to_string(),
                        s.project.clone(),
                        s.external_id.clone(),
                        s.title.clone(),
                        s.status.to_string(),
                        s.route.to_string(),
                        s.category.to_string(),
                        s.labels.join(";"),
                        opt(&s.upstream_state),
                        opt(&s.assignee),
                        s.filed_at.to_rfc3339(),
                        opt(&s.last_activity_at.map(|t| t.to_rfc3339())),
                        s.attempts.to_string(),
                        opt(&s.best_verdict),
                        s.cost_usd.to_string(),
                        opt(&s.url),
                    ];
                    out.write_all(&csv_row(&row)?).await?;
                }
                ExportFormat::Json => array.item(out, s).await?,
                ExportFormat::Ndjson => {
                    if projects.insert(s.project.clone()) {
                        let p = storage.get_project(&s.project, scope).await?;
                        let record = ImportRecord::Project(CreateProjectRequest {
                            slug: s.project.clone(),
                            name: p.as_ref().map(|p| p.name.clone()),
                            description: p.as_ref().and_then(|p| p.description.clone()),
                            public: p.as_ref().map(|p| p.public),
                            upstream_url: p.as_ref().and_then(|p| p.upstream_url.clone()),
                            // A benchmark stays one through an export and back.
                            benchmark: p.as_ref().and_then(|p| p.benchmark.then_some(true)),
                        });
                        out.write_all(&json_line(&record)?).await?;
                    }
                    let Some(r) = storage.get_report(s.id, scope).await? else { continue };
                    out.write_all(&json_line(&ImportRecord::Report(report_record(&r)))?).await?;
                    // Every change of a report adds to its timeline: one taken in by an
                    // import and left alone has nothing more to carry.
                    if r.route_correction.is_some()
                        || r.activity.len() != 1
                        || r.activity.first().is_some_and(|a| a.via != "import")
                    {
                        life_cycles.push(s.id);
                    }
                }
            }
        }
        match page.next_cursor {
            Some(c) => q.cursor = Some(c),
            None => break,
        }
    }
    if format == ExportFormat::Json {
        array.end(out).await?;
    }
    for id in life_cycles {
        if let Some(l) = storage.life_cycle(id).await? {
            out.write_all(&json_line(&ImportRecord::LifeCycle(l))?).await?;
        }
    }
    out.flush().await?;
    Ok(n)
}

pub const ATTEMPT_COLUMNS: [&str; 17] = [
    "id",
    "project",
    "report_id",
    "agent",
    "model",
    "goal",
    "verdict",
    "verdict_source",
    "counts",
    "review",
    "cost_usd",
    "wall_seconds",
    "tokens_in",
    "tokens_out",
    "started_at",
    "ended_at",
    "attempt_key",
];

/// The attempts matching `query`, every page. NDJSON names each attempt's
/// report by project and number, as the import reads it.
pub async fn attempts<W: AsyncWrite + Unpin>(
    storage: &dyn Storage,
    query: &AttemptListQuery,
    scope: &ProjectScope,
    format: ExportFormat,
    out: &mut W,
) -> Result<u64> {
    let mut q = query.clone();
    q.limit = PAGE;
    q.cursor = None;
    let mut n = 0;
    let mut array = JsonArray { first: true };
    let mut keys: HashMap<i64, Option<ReportKey>> = HashMap::new();
    if format == ExportFormat::Csv {
        out.write_all(&csv_row(&ATTEMPT_COLUMNS.map(String::from))?).await?;
    }
    loop {
        let page = storage.list_attempts(&q, scope).await?;
        for a in &page.items {
            n += 1;
            match format {
                ExportFormat::Csv => {
                    let row = [
                        a.id.to_string(),
                        a.project.clone(),
                        a.report_id.to_string(),
                        a.agent.clone(),
                        opt(&a.model),
                        a.goal.to_string(),
                        a.verdict.to_string(),
                        a.verdict_source.to_string(),
                        a.counts.to_string(),
                        opt(&a.review),
                        opt(&a.cost_usd),
                        opt(&a.wall_seconds),
                        a.tokens_in.to_string(),
                        a.tokens_out.to_string(),
                        a.started_at.to_rfc3339(),
                        opt(&a.ended_at.map(|t| t.to_rfc3339())),
                        opt(&a.attempt_key),
                    ];
                    out.write_all(&csv_row(&row)?).await?;
                }
                ExportFormat::Json => array.item(out, a).await?,
                ExportFormat::Ndjson => {
                    if let std::collections::hash_map::Entry::Vacant(e) = keys.entry(a.report_id) {
                        let key = storage
                            .get_report(a.report_id, scope)
                            .await?
                            .map(|r| ReportKey { project: r.summary.project, external_id: r.summary.external_id });
                        e.insert(key);
                    }
                    let Some(Some(key)) = keys.get(&a.report_id) else { continue };
                    out.write_all(&json_line(&ImportRecord::Attempt(attempt_record(a, key.clone())))?).await?;
                }
            }
        }
        match page.next_cursor {
            Some(c) => q.cursor = Some(c),
            None => break,
        }
    }
    if format == ExportFormat::Json {
        array.end(out).await?;
    }
    out.flush().await?;
    Ok(n)
}

/// A figure table (the rows `GET /api/v1/figures` gives, or one of the
/// Oracles page's): CSV with a column per field (the API's names, the key
/// first), JSON as the API's rows, NDJSON a row a line. The rows are
/// computed first, so a failure is an error, never a cut file.
pub async fn table<W: AsyncWrite + Unpin, T: serde::Serialize>(
    rows: &[T],
    format: ExportFormat,
    out: &mut W,
) -> Result<u64> {
    let mut array = JsonArray { first: true };
    let objects: Vec<serde_json::Map<String, serde_json::Value>> = rows
        .iter()
        .map(|r| match serde_json::to_value(r) {
            Ok(serde_json::Value::Object(m)) => Ok(m),
            other => Err(ExportError::Encode(format!("a table row is not an object: {other:?}"))),
        })
        .collect::<Result<_>>()?;
    // The columns are the row's fields: what names the row first (a group's
    // key, an oracle kind or source, a cause, a category), then the figures
    // by name (a crossed grouping's `keys` among them).
    const NAMES: [&str; 7] = ["key", "week", "kind", "source", "cause", "category", "route"];
    let mut columns: Vec<String> = objects.first().map(|m| m.keys().cloned().collect()).unwrap_or_default();
    columns.sort_by_key(|c| (NAMES.iter().position(|n| n == c).unwrap_or(NAMES.len()), c.clone()));
    if format == ExportFormat::Csv {
        let header = if columns.is_empty() { vec!["key".to_owned()] } else { columns.clone() };
        out.write_all(&csv_row(&header)?).await?;
    }
    for m in &objects {
        match format {
            ExportFormat::Csv => {
                let cell = |c: &String| match m.get(c) {
                    None | Some(serde_json::Value::Null) => String::new(),
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                };
                out.write_all(&csv_row(&columns.iter().map(cell).collect::<Vec<_>>())?).await?;
            }
            ExportFormat::Json => array.item(out, m).await?,
            ExportFormat::Ndjson => {
                let mut line = serde_json::to_vec(m).map_err(|e| ExportError::Encode(e.to_string()))?;
                line.push(b'\n');
                out.write_all(&line).await?;
            }
        }
    }
    if format == ExportFormat::Json {
        array.end(out).await?;
    }
    out.flush().await?;
    Ok(objects.len() as u64)
}
