//! `--format csv --mapping FILE.toml`: any table of reports and (optionally)
//! one attempt per row, described by a mapping file. Templates are text with
//! `{Column}` placeholders; a value spec may instead name a column with a
//! `map` of values and a numeric `scale`. See mappings/ for shipped examples.

use std::collections::HashMap;

use failpass_shared::api::attempts::{CreateAttemptRequest, ReportKey};
use failpass_shared::api::import::ImportRecord;
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::api::reports::CreateReportRequest;
use failpass_shared::model::{Goal, Verdict, VerdictSource};
use serde::Deserialize;
use tokio::io::AsyncBufRead;

use super::Importer;
use read::Joined;
use row::{Row, Source, list_lines};

mod read;
mod reimport;
mod row;
pub use row::json_path;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mapping {
    /// The project every row belongs to.
    pub project: String,
    pub report: ReportMapping,
    #[serde(default)]
    pub attempt: Option<AttemptMapping>,
    /// A second file whose records join each row (`{join.field}` in templates).
    #[serde(default)]
    pub join: Option<JoinMapping>,
    /// The study's full set: every item it lists is a report, whether or
    /// not the input has a result for it.
    #[serde(default)]
    pub denominator: Option<DenominatorMapping>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DenominatorMapping {
    /// A JSON array, an object keyed by id, JSON Lines, or a `.csv` table;
    /// a relative path is looked up beside the input file.
    pub file: String,
    /// Template over an item giving its key, which is the report's
    /// `external_id`; an object keyed by id may leave it out (its ids).
    #[serde(default)]
    pub key: Option<String>,
    /// What an item without a result in the input is: attempted and not
    /// reproduced (an attempt is stored for it), or not attempted.
    pub missing: Missing,
    /// Template over an item: the title of a report the input has no row
    /// for (default: its key). `{_key}` is the key.
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub body: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Missing {
    NotReproduced,
    NotAttempted,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinMapping {
    /// A JSON array of objects, or an object whose values are the records
    /// keyed by id; a relative path is looked up beside the input file.
    pub file: String,
    /// Template over a joined record giving its key (`"{project}_{bugId}"`);
    /// for an object keyed by id, the id unless this is given.
    #[serde(default)]
    pub key: Option<String>,
    /// Template over a row giving the key to look up (`"{bug_id}"`).
    pub on: String,
    /// Keep a row without a match (a left join); its joined fields are
    /// `defaults` (so a study's denominator can be reached).
    #[serde(default)]
    pub left: bool,
    /// The joined record of an unmatched row, with `left = true`.
    #[serde(default)]
    pub defaults: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OracleMapping {
    pub kind: failpass_shared::model::OracleKind,
    #[serde(default)]
    pub source: Option<failpass_shared::model::OracleSource>,
    #[serde(default)]
    pub command: Option<String>,
    /// Test ids: one per item of a joined list (`{ list = "failingTests", item = "{className}::{methodName}" }`).
    #[serde(default)]
    pub fail_to_pass: Option<ListSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListSpec {
    /// A list field of the joined record.
    pub list: String,
    /// Template over each item.
    pub item: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportMapping {
    pub external_id: Value,
    pub title: Value,
    #[serde(default)]
    pub url: Option<Value>,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub labels: Vec<String>,
    /// Lines appended to the body, one per item of a joined list (a failing test's error).
    #[serde(default)]
    pub details: Option<ListSpec>,
    #[serde(default)]
    pub oracle: Option<OracleMapping>,
    /// When it was filed: RFC 3339, `YYYY-MM-DD HH:MM:SS` or `YYYY-MM-DD` (UTC).
    #[serde(default)]
    pub filed_at: Option<Value>,
    #[serde(default)]
    pub reporter: Option<Value>,
    /// Framework and versions, hardware.
    #[serde(default)]
    pub environment: Option<Value>,
    /// Its state upstream: `open`, `closed` or `merged` (case-insensitive).
    #[serde(default)]
    pub upstream_state: Option<Value>,
    /// Why upstream closed it (`completed`, `not_planned`, `duplicate`).
    #[serde(default)]
    pub upstream_reason: Option<Value>,
    /// The tracker's own type of the issue (`Bug`, `Feature`).
    #[serde(default)]
    pub upstream_type: Option<Value>,
    /// The milestone it was closed in (`2.0.1`): a fixed release.
    #[serde(default)]
    pub upstream_milestone: Option<Value>,
    /// What a re-import does to a report's labels: `replace` them (the
    /// default) or `merge` them with those stored (another import's stay).
    #[serde(default)]
    pub labels_on_reimport: LabelsOnReimport,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelsOnReimport {
    #[default]
    Replace,
    Merge,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttemptMapping {
    pub agent: String,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub attempt_key: Option<String>,
    #[serde(default)]
    pub goal: Option<Goal>,
    pub verdict: Value,
    pub verdict_source: Value,
    /// The model's training cutoff, `YYYY-MM-DD` (the contamination split).
    #[serde(default)]
    pub model_cutoff: Option<Value>,
    #[serde(default)]
    pub started_at: Option<Value>,
    #[serde(default)]
    pub ended_at: Option<Value>,
    #[serde(default)]
    pub tokens_in: Option<Value>,
    #[serde(default)]
    pub tokens_out: Option<Value>,
    /// `accepted` or `rejected`: a person's review recorded with the attempt.
    #[serde(default)]
    pub review: Option<Value>,
    #[serde(default)]
    pub reviewer: Option<Value>,
    #[serde(default)]
    pub wall_seconds: Option<Value>,
    #[serde(default)]
    pub cost_usd: Option<Value>,
    /// Where the first success ranked among the attempt's candidates (1 =
    /// the first one shown); empty is none.
    #[serde(default)]
    pub rank: Option<Value>,
}

/// A template (`"{Column} text"`) or a column lookup with an optional value map and scale.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Value {
    Template(String),
    Column {
        column: String,
        /// A regular expression: the value is its first capture group (or
        /// the whole match), e.g. the issue number out of a URL.
        #[serde(default)]
        regex: Option<Pattern>,
        #[serde(default)]
        map: HashMap<String, String>,
        #[serde(default)]
        scale: Option<f64>,
    },
}

/// A regular expression, compiled when the mapping is read.
#[derive(Debug, Clone)]
pub struct Pattern(regex::Regex);

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        regex::Regex::new(&s).map(Pattern).map_err(|e| serde::de::Error::custom(format!("regex `{s}`: {e}")))
    }
}

/// The `{column}` names in a template (besides `join.` fields).
fn template_columns(t: &str, out: &mut Vec<(String, String)>, field: &str) {
    let mut rest = t;
    while let Some(start) = rest.find('{') {
        let Some(end) = rest[start..].find('}') else { return };
        let column = &rest[start + 1..start + end];
        if !column.starts_with("join.") {
            out.push((field.to_owned(), column.to_owned()));
        }
        rest = &rest[start + end + 1..];
    }
}

impl Mapping {
    /// Every input column the mapping reads, with the mapping field that reads it.
    pub fn columns(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let r = &self.report;
        let mut t = |field: &str, v: Option<&str>| {
            if let Some(v) = v {
                template_columns(v, &mut out, field)
            }
        };
        let value = |v: &Value| match v {
            Value::Template(s) => s.clone(),
            Value::Column { column, .. } => format!("{{{column}}}"),
        };
        t("report.external_id", Some(&value(&r.external_id)));
        t("report.title", Some(&value(&r.title)));
        t("report.url", r.url.as_ref().map(value).as_deref());
        t("report.body", r.body.as_deref());
        for l in &r.labels {
            t("report.labels", Some(l));
        }
        t("report.oracle.command", r.oracle.as_ref().and_then(|o| o.command.as_deref()));
        for (field, v) in [
            ("report.filed_at", &r.filed_at),
            ("report.reporter", &r.reporter),
            ("report.environment", &r.environment),
            ("report.upstream_state", &r.upstream_state),
            ("report.upstream_reason", &r.upstream_reason),
            ("report.upstream_type", &r.upstream_type),
            ("report.upstream_milestone", &r.upstream_milestone),
        ] {
            t(field, v.as_ref().map(value).as_deref());
        }
        if let Some(j) = &self.join {
            t("join.on", Some(&j.on));
        }
        if let Some(a) = &self.attempt {
            t("attempt.agent", Some(&a.agent));
            t("attempt.model", a.model.as_deref());
            t("attempt.attempt_key", a.attempt_key.as_deref());
            for (field, v) in [
                ("attempt.verdict", Some(&a.verdict)),
                ("attempt.verdict_source", Some(&a.verdict_source)),
                ("attempt.wall_seconds", a.wall_seconds.as_ref()),
                ("attempt.cost_usd", a.cost_usd.as_ref()),
                ("attempt.model_cutoff", a.model_cutoff.as_ref()),
                ("attempt.started_at", a.started_at.as_ref()),
                ("attempt.ended_at", a.ended_at.as_ref()),
                ("attempt.tokens_in", a.tokens_in.as_ref()),
                ("attempt.tokens_out", a.tokens_out.as_ref()),
                ("attempt.review", a.review.as_ref()),
                ("attempt.reviewer", a.reviewer.as_ref()),
                ("attempt.rank", a.rank.as_ref()),
            ] {
                match v {
                    Some(Value::Template(s)) => t(field, Some(s)),
                    Some(Value::Column { column, .. }) => t(field, Some(&format!("{{{column}}}"))),
                    _ => {}
                }
            }
        }
        out
    }

    /// Fails once, before any row is read, when the input lacks a column the
    /// mapping reads (`available`: the CSV header, or the first JSON record's fields).
    pub fn check_columns<'a>(
        &self,
        has: impl Fn(&str) -> bool,
        available: impl IntoIterator<Item = &'a str>,
        what: &str,
    ) -> anyhow::Result<()> {
        let missing: Vec<String> = self
            .columns()
            .into_iter()
            .filter(|(_, c)| !has(c))
            .map(|(field, c)| format!("`{c}` (read by {field})"))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut have: Vec<&str> = available.into_iter().collect();
        have.sort_unstable();
        anyhow::bail!(
            "the mapping reads {} the input does not have; {what} has: {}",
            missing.join(", "),
            if have.is_empty() { "nothing".to_owned() } else { have.join(", ") }
        )
    }
}

pub fn load(path: &std::path::Path) -> anyhow::Result<Mapping> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("reading mapping {}: {e}", path.display()))?;
    let text = crate::input::strip_bom(&text).to_owned();
    toml::from_str(&text).map_err(|e| anyhow::anyhow!("mapping {}: {e}", path.display()))
}

fn parse<T: std::str::FromStr>(field: &str, v: String) -> Result<T, (String, String)>
where
    T::Err: std::fmt::Display,
{
    v.parse().map_err(|e: T::Err| (field.to_owned(), e.to_string()))
}

/// A message about `field`, as a rejection names it.
fn at(field: &'static str) -> impl Fn(String) -> (String, String) {
    move |e| (field.to_owned(), e)
}

fn convert(
    m: &Mapping,
    row: &Row<'_>,
) -> Result<(CreateReportRequest, Option<CreateAttemptRequest>), (String, String)> {
    let r = &m.report;
    let mut labels = Vec::new();
    for l in &r.labels {
        // `"{labels}"` naming a list (of strings, or of objects with a
        // `name`, as GitHub gives them) is one label per item.
        match l.strip_prefix('{').and_then(|l| l.strip_suffix('}')).and_then(|field| row.list(field)) {
            Some(items) => labels.extend(items),
            None => labels.push(row.template(l).map_err(at("labels"))?),
        }
    }
    let labels = labels.into_iter().filter(|l| !l.trim().is_empty()).collect();
    let report = CreateReportRequest {
        project: m.project.clone(),
        external_id: row.value(&r.external_id).map_err(at("external_id"))?,
        url: r.url.as_ref().map(|u| row.value(u)).transpose().map_err(at("url"))?,
        title: row.value(&r.title).map_err(at("title"))?,
        body: {
            let mut body =
                r.body.as_deref().map(|b| row.template(b)).transpose().map_err(at("body"))?.unwrap_or_default();
            if let Some(spec) = &r.details {
                for line in list_lines(spec, row, "details")? {
                    body.push('\n');
                    body.push_str(&line);
                }
            }
            body
        },
        labels,
        filed_at: optional(row, "filed_at", &r.filed_at)?.map(|v| instant("filed_at", &v)).transpose()?,
        reporter: optional(row, "reporter", &r.reporter)?,
        environment: optional(row, "environment", &r.environment)?,
        paths: Vec::new(),
        oracle: match &r.oracle {
            None => None,
            Some(o) => Some(oracle(o, row)?),
        },
        upstream: match optional(row, "upstream_state", &r.upstream_state)? {
            None => None,
            Some(state) => Some(failpass_shared::api::reports::Upstream {
                state: parse("upstream_state", state.to_lowercase())?,
                reason: optional(row, "upstream_reason", &r.upstream_reason)?,
                locked: false,
                kind: optional(row, "upstream_type", &r.upstream_type)?,
                milestone: optional(row, "upstream_milestone", &r.upstream_milestone)?,
            }),
        },
    };
    let Some(a) = &m.attempt else { return Ok((report, None)) };
    let verdict: Verdict = parse("verdict", row.value(&a.verdict).map_err(at("verdict"))?)?;
    let number = |field: &'static str, v: &Option<Value>| -> Result<Option<f64>, (String, String)> {
        match v {
            None => Ok(None),
            Some(v) => {
                let s = row.value(v).map_err(at(field))?;
                if s.is_empty() { Ok(None) } else { parse(field, s).map(Some) }
            }
        }
    };
    let attempt = CreateAttemptRequest {
        wall_seconds: number("wall_seconds", &a.wall_seconds)?,
        cost_usd: number("cost_usd", &a.cost_usd)?,
        model_cutoff: optional(row, "model_cutoff", &a.model_cutoff)?
            .map(|v| failpass_shared::api::reports::parse_day("model_cutoff", &v).map_err(|e| (e.field, e.message)))
            .transpose()?,
        started_at: optional(row, "started_at", &a.started_at)?.map(|v| instant("started_at", &v)).transpose()?,
        ended_at: optional(row, "ended_at", &a.ended_at)?.map(|v| instant("ended_at", &v)).transpose()?,
        tokens_in: optional(row, "tokens_in", &a.tokens_in)?.map(|v| parse("tokens_in", v)).transpose()?.unwrap_or(0),
        tokens_out: optional(row, "tokens_out", &a.tokens_out)?
            .map(|v| parse("tokens_out", v))
            .transpose()?
            .unwrap_or(0),
        rank: optional(row, "rank", &a.rank)?.map(|v| parse("rank", v)).transpose()?,
        ..attempt_of(a, row, &report, verdict)?
    };
    Ok((report, Some(attempt)))
}

/// An attempt at `report` with `verdict`: who made it (agent, model, key,
/// goal) and who judged it (verdict source, review), read from `row`; the
/// rest as an API caller who leaves it out gets it.
fn attempt_of(
    a: &AttemptMapping,
    row: &Row<'_>,
    report: &CreateReportRequest,
    verdict: Verdict,
) -> Result<CreateAttemptRequest, (String, String)> {
    let key = ReportKey { project: report.project.clone(), external_id: report.external_id.clone() };
    let verdict_source: VerdictSource =
        parse("verdict_source", row.value(&a.verdict_source).map_err(at("verdict_source"))?)?;
    let agent = row.template(&a.agent).map_err(at("agent"))?;
    Ok(CreateAttemptRequest {
        goal: a.goal.unwrap_or_default(),
        model: a.model.as_deref().map(|m| row.template(m)).transpose().map_err(at("model"))?,
        attempt_key: a.attempt_key.as_deref().map(|k| row.template(k)).transpose().map_err(at("attempt_key"))?,
        review: optional(row, "review", &a.review)?.map(|v| parse("review", v)).transpose()?,
        reviewer: optional(row, "reviewer", &a.reviewer)?,
        ..CreateAttemptRequest::for_key(key, agent, verdict, verdict_source)
    })
}

/// An optional field's value; an empty one is absent.
fn optional(row: &Row<'_>, field: &str, v: &Option<Value>) -> Result<Option<String>, (String, String)> {
    match v {
        None => Ok(None),
        Some(v) => {
            let s = row.value(v).map_err(|e| (field.to_owned(), e))?;
            Ok(Some(s.trim().to_owned()).filter(|s| !s.is_empty()))
        }
    }
}

/// An instant: RFC 3339, `YYYY-MM-DD HH:MM:SS` or `YYYY-MM-DD` (both UTC).
fn instant(field: &str, v: &str) -> Result<chrono::DateTime<chrono::Utc>, (String, String)> {
    use chrono::{NaiveDateTime, TimeZone, Utc};
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(v) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(t) = NaiveDateTime::parse_from_str(v, "%Y-%m-%d %H:%M:%S") {
        return Ok(Utc.from_utc_datetime(&t));
    }
    failpass_shared::api::reports::parse_day(field, v)
        .map(|d| Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).unwrap_or_default()))
        .map_err(|_| {
            (field.to_owned(), format!("`{v}` is not a time: RFC 3339, `YYYY-MM-DD HH:MM:SS` or `YYYY-MM-DD`"))
        })
}

fn oracle(o: &OracleMapping, row: &Row<'_>) -> Result<failpass_shared::api::reports::Oracle, (String, String)> {
    let tests = match &o.fail_to_pass {
        Some(spec) => list_lines(spec, row, "oracle.fail_to_pass")?,
        None => Vec::new(),
    };
    Ok(failpass_shared::api::reports::Oracle {
        kind: o.kind,
        source: o.source,
        command: o
            .command
            .as_deref()
            .map(|c| row.template(c))
            .transpose()
            .map_err(|e| ("oracle.command".to_owned(), e))?,
        fail_to_pass: tests,
        pass_to_pass: Vec::new(),
        signature: None,
        repeats: None,
        authoring_minutes: None,
    })
}

/// Joins, converts and queues one row; rejections name row `n`. The row's
/// key goes into `seen` even when it is refused, so a full set does not
/// take its item for one without a result.
#[allow(clippy::too_many_arguments)]
fn take_row<'a>(
    importer: &mut Importer<'_>,
    mapping: &Mapping,
    joined: Option<&'a Joined>,
    n: u64,
    mut row: Row<'a>,
    seen: &mut std::collections::HashSet<String>,
    reports: &mut Vec<(u64, CreateReportRequest)>,
    attempts: &mut Vec<(u64, CreateAttemptRequest)>,
) {
    if let Ok(key) = row.value(&mapping.report.external_id) {
        seen.insert(key.trim().to_owned());
    }
    if let (Some(j), Some(records)) = (&mapping.join, joined) {
        let key = match row.template(&j.on) {
            Ok(k) => k,
            Err(e) => return importer.reject(n, Some("join".into()), format!("row {n}: {e}")),
        };
        match records.records.get(&key).or(records.default.as_ref()) {
            Some(r) => row.joined = Some(r),
            None => {
                return importer.reject(
                    n,
                    Some("join".into()),
                    format!("row {n}: no record `{key}` in the join file (`left = true` keeps such rows)"),
                );
            }
        }
    }
    if let Ok(key) = row.value(&mapping.report.external_id) {
        seen.insert(key.trim().to_owned());
    }
    match convert(mapping, &row) {
        Ok((report, attempt)) => {
            reports.push((n, report));
            if let Some(a) = attempt {
                attempts.push((n, a));
            }
        }
        Err((field, message)) => importer.reject(n, Some(field), format!("row {n}: {message}")),
    }
}

/// Stores the project, then the reports, then the attempts of a mapped file.
async fn store(
    importer: &mut Importer<'_>,
    mapping: &Mapping,
    mut reports: Vec<(u64, CreateReportRequest)>,
    attempts: Vec<(u64, CreateAttemptRequest)>,
) -> anyhow::Result<()> {
    if reports.is_empty() {
        // Every record was refused: no project is made for nothing.
        return Ok(());
    }
    importer
        .push(
            0,
            ImportRecord::Project(CreateProjectRequest {
                slug: mapping.project.clone(),
                name: None,
                description: None,
                public: None,
                upstream_url: None,
                benchmark: None,
            }),
        )
        .await?;
    // A key repeated with the same content is one report (a file with a row
    // per attempt); with other content it would silently merge two reports,
    // so the later row is refused, naming the first.
    let mut first: HashMap<&str, (u64, &CreateReportRequest)> = HashMap::new();
    let mut refused = std::collections::HashSet::new();
    for (n, r) in &reports {
        match first.get(r.external_id.trim()) {
            Some((m, earlier)) if *earlier != r => {
                let differs = differing_fields(earlier, r);
                importer.reject(
                    *n,
                    Some("external_id".into()),
                    format!(
                        "row {n}: external_id `{}` was already given by row {m} with a different {differs}; \
                         a key names one report (make it unique in the mapping)",
                        r.external_id.trim()
                    ),
                );
                refused.insert(*n);
            }
            Some(_) => {}
            None => {
                first.insert(r.external_id.trim(), (*n, r));
            }
        }
    }
    reports.retain(|(n, _)| !refused.contains(n));
    let kept: Vec<_> = attempts.iter().filter(|(n, _)| !refused.contains(n)).cloned().collect();
    let changed = reimport::compare(importer.storage(), mapping, &mut reports, &kept).await?;
    importer.push_reports(reports).await?;
    importer.count_changed(changed);
    for (n, a) in attempts {
        if !refused.contains(&n) {
            importer.push(n, ImportRecord::Attempt(a)).await?;
        }
    }
    Ok(())
}

/// The fields two reports of one key disagree on, for the message.
fn differing_fields(a: &CreateReportRequest, b: &CreateReportRequest) -> String {
    let mut out = Vec::new();
    if a.title != b.title {
        out.push("title");
    }
    if a.body != b.body {
        out.push("body");
    }
    if a.url != b.url {
        out.push("url");
    }
    if a.labels != b.labels {
        out.push("labels");
    }
    if a.oracle != b.oracle {
        out.push("oracle");
    }
    if out.is_empty() {
        out.push("content");
    }
    out.join(", ")
}

/// Reads a CSV with a header row; each row becomes a report (and an attempt).
/// Row numbers in rejections count the header as row 1.
pub async fn import_csv<R: AsyncBufRead + Unpin>(
    importer: &mut Importer<'_>,
    mut input: R,
    mapping: &Mapping,
    input_dir: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let files = Files::load(mapping, input_dir)?;
    let text = crate::input::read_document(&mut input, "a CSV file").await?;
    read::check_csv(&text)?;
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(text.as_bytes());
    let headers: Vec<String> = reader.headers()?.iter().map(|h| h.trim().to_owned()).collect();
    mapping.check_columns(|c| headers.iter().any(|h| h == c), headers.iter().map(String::as_str), "its header")?;
    let (mut reports, mut attempts, mut seen) = (Vec::new(), Vec::new(), std::collections::HashSet::new());
    let mut last = 1;
    for (i, rec) in reader.records().enumerate() {
        let n = i as u64 + 2;
        last = n;
        match rec {
            Ok(cells) => {
                let row = Row { source: Source::Csv { headers: &headers, cells: &cells }, joined: None };
                take_row(importer, mapping, files.joined.as_ref(), n, row, &mut seen, &mut reports, &mut attempts);
            }
            Err(e) => importer.reject(n, None, format!("row {n}: {e}")),
        }
    }
    files.complete(importer, mapping, last, &seen, &mut reports, &mut attempts);
    store(importer, mapping, reports, attempts).await
}

/// Reads JSON records (an array of objects, an object of records keyed by
/// id, or one object per line); fields are the mapping's columns, and a
/// record's id in a keyed object is `{_key}`. Record numbers count from 1
/// (lines for JSON Lines).
pub async fn import_json<R: AsyncBufRead + Unpin>(
    importer: &mut Importer<'_>,
    mut input: R,
    mapping: &Mapping,
    input_dir: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let files = Files::load(mapping, input_dir)?;
    let text = crate::input::read_document(&mut input, "a JSON input for a mapping").await?;
    let records = read::json_records(&text)?;
    drop(text);
    if let Some((_, Ok(first))) = records.iter().find(|(_, r)| r.as_ref().is_ok_and(serde_json::Value::is_object)) {
        let fields = first.as_object().map(|o| o.keys().map(String::as_str).collect::<Vec<_>>()).unwrap_or_default();
        mapping.check_columns(|c| json_path(first, c).is_some(), fields, "its first record")?;
    }
    let (mut reports, mut attempts, mut seen) = (Vec::new(), Vec::new(), std::collections::HashSet::new());
    for (n, value) in &records {
        match value {
            Ok(v) if v.is_object() => {
                let row = Row { source: Source::Json(v), joined: None };
                take_row(importer, mapping, files.joined.as_ref(), *n, row, &mut seen, &mut reports, &mut attempts);
            }
            Ok(_) => importer.reject(*n, None, format!("record {n}: not a JSON object")),
            Err(e) => importer.reject(*n, None, format!("record {n}: {e}")),
        }
    }
    let last = records.last().map_or(0, |(n, _)| *n);
    files.complete(importer, mapping, last, &seen, &mut reports, &mut attempts);
    store(importer, mapping, reports, attempts).await
}

/// The files beside the input a mapping names: its join and its full set.
struct Files {
    joined: Option<Joined>,
    full_set: Option<Vec<(String, serde_json::Value)>>,
}

impl Files {
    fn load(mapping: &Mapping, input_dir: Option<&std::path::Path>) -> anyhow::Result<Self> {
        Ok(Self {
            joined: mapping.join.as_ref().map(|j| read::load_join(j, input_dir)).transpose()?,
            full_set: mapping.denominator.as_ref().map(|d| read::load_full_set(d, input_dir)).transpose()?,
        })
    }

    /// With a full set: refuses rows outside it, and adds a report (and, if
    /// the mapping says so, an attempt not reproduced) for every item the
    /// input has no row for. Their record numbers follow the input's `last`.
    fn complete(
        &self,
        importer: &mut Importer<'_>,
        mapping: &Mapping,
        last: u64,
        seen: &std::collections::HashSet<String>,
        reports: &mut Vec<(u64, CreateReportRequest)>,
        attempts: &mut Vec<(u64, CreateAttemptRequest)>,
    ) {
        let (Some(items), Some(d)) = (&self.full_set, &mapping.denominator) else { return };
        let listed: std::collections::HashSet<&str> = items.iter().map(|(k, _)| k.as_str()).collect();
        let outside: std::collections::HashSet<u64> =
            reports.iter().filter(|(_, r)| !listed.contains(r.external_id.trim())).map(|(n, _)| *n).collect();
        for (n, r) in reports.iter().filter(|(n, _)| outside.contains(n)) {
            importer.reject(
                *n,
                Some("external_id".into()),
                format!(
                    "row {n}: `{}` is not in the full set ({}); a study's results are of its own items",
                    r.external_id.trim(),
                    d.file
                ),
            );
        }
        reports.retain(|(n, _)| !outside.contains(n));
        attempts.retain(|(n, _)| !outside.contains(n));
        // A row the input has for an item, stored or refused, is its result.
        for (i, (key, record)) in items.iter().filter(|(k, _)| !seen.contains(k.as_str())).enumerate() {
            let n = last + 1 + i as u64;
            match missing_item(mapping, d, key, record) {
                Ok((report, attempt)) => {
                    reports.push((n, report));
                    if let Some(a) = attempt {
                        attempts.push((n, a));
                    }
                }
                Err((field, message)) => importer.reject(
                    n,
                    Some(field),
                    format!("full-set item `{key}`: {message} (for items without a result, a value must be a constant or a field of the full-set file)"),
                ),
            }
        }
    }
}

/// The report (and attempt) of a full-set item the input has no row for.
fn missing_item(
    m: &Mapping,
    d: &DenominatorMapping,
    key: &str,
    record: &serde_json::Value,
) -> Result<(CreateReportRequest, Option<CreateAttemptRequest>), (String, String)> {
    let row = Row { source: Source::Json(record), joined: None };
    let text = |field: &str, t: Option<&String>| -> Result<Option<String>, (String, String)> {
        t.map(|t| row.template(t)).transpose().map_err(|e| (format!("denominator.{field}"), e))
    };
    let report = CreateReportRequest {
        project: m.project.clone(),
        external_id: key.to_owned(),
        title: text("title", d.title.as_ref())?.unwrap_or_else(|| key.to_owned()),
        url: text("url", d.url.as_ref())?,
        body: {
            let mut body = text("body", d.body.as_ref())?.unwrap_or_default();
            // The mapping's details and oracle where the item itself has what they read.
            for line in
                m.report.details.as_ref().and_then(|spec| list_lines(spec, &row, "details").ok()).unwrap_or_default()
            {
                body.push('\n');
                body.push_str(&line);
            }
            body
        },
        labels: Vec::new(),
        filed_at: None,
        reporter: None,
        environment: None,
        paths: Vec::new(),
        oracle: m.report.oracle.as_ref().and_then(|o| oracle(o, &row).ok()),
        upstream: None,
    };
    let Some(a) = m.attempt.as_ref().filter(|_| d.missing == Missing::NotReproduced) else { return Ok((report, None)) };
    let attempt = attempt_of(a, &row, &report, Verdict::NotReproduced).map_err(|(f, e)| (format!("attempt.{f}"), e))?;
    Ok((report, Some(attempt)))
}
