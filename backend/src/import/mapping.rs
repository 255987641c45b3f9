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

/// A join file's records by key, and the record an unmatched row gets.
pub struct Joined {
    records: HashMap<String, serde_json::Value>,
    default: Option<serde_json::Value>,
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

/// One input record: a CSV row, or a JSON object whose fields are the columns.
struct Row<'a> {
    source: Source<'a>,
    joined: Option<&'a serde_json::Value>,
}

enum Source<'a> {
    Csv { headers: &'a [String], cells: &'a csv::StringRecord },
    Json(&'a serde_json::Value),
}

/// A field of a JSON object by name, or by path: `issue.url`, `a.b[0].c`
/// (a name holding dots is found as it is first).
pub fn json_path<'v>(obj: &'v serde_json::Value, path: &str) -> Option<&'v serde_json::Value> {
    if let Some(v) = obj.get(path) {
        return Some(v);
    }
    let mut here = obj;
    for part in path.split('.') {
        let (name, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            here = here.get(name)?;
        }
        for ix in indexes.split('[').skip(1) {
            here = here.get(ix.strip_suffix(']')?.parse::<usize>().ok()?)?;
        }
    }
    Some(here)
}

/// A JSON field as text: strings as they are, numbers and booleans printed.
fn json_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// `{field}` templates over one JSON object (a joined record or a list item).
fn json_template(t: &str, obj: &serde_json::Value) -> Result<String, String> {
    let mut out = String::with_capacity(t.len());
    let mut rest = t;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').ok_or_else(|| format!("unclosed `{{` in template `{t}`"))? + start;
        let field = &rest[start + 1..end];
        // `{}` is the item itself (a list of plain strings).
        let found = if field.is_empty() { Some(obj) } else { json_path(obj, field) };
        match found {
            None => return Err(format!("no field `{field}`")),
            Some(serde_json::Value::Null) => {}
            Some(v) => out.push_str(&json_text(v).ok_or_else(|| format!("field `{field}` is not text or a number"))?),
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Row<'_> {
    fn get(&self, column: &str) -> Result<String, String> {
        if let Some(field) = column.strip_prefix("join.") {
            let rec = self.joined.ok_or_else(|| "no joined record for this row".to_owned())?;
            return json_path(rec, field)
                .and_then(json_text)
                .ok_or_else(|| format!("joined record has no field `{field}`"));
        }
        match &self.source {
            Source::Csv { headers, cells } => {
                let i = headers.iter().position(|h| h == column).ok_or_else(|| format!("no column `{column}`"))?;
                Ok(cells.get(i).unwrap_or_default().trim().to_owned())
            }
            Source::Json(obj) => match json_path(obj, column) {
                None => Err(format!("no field `{column}`")),
                Some(serde_json::Value::Null) => Ok(String::new()),
                Some(v) => json_text(v).ok_or_else(|| format!("field `{column}` is not text or a number")),
            },
        }
    }

    /// A list field as text items: strings, or objects' `name` (GitHub's
    /// labels); `None` when the field is not a list.
    fn list(&self, field: &str) -> Option<Vec<String>> {
        let v = match (field.strip_prefix("join."), &self.source) {
            (Some(f), _) => json_path(self.joined?, f)?,
            (None, Source::Json(obj)) => json_path(obj, field)?,
            (None, Source::Csv { .. }) => return None,
        };
        let items = v.as_array()?;
        Some(items.iter().filter_map(|i| json_text(i).or_else(|| i.get("name").and_then(json_text))).collect())
    }

    fn template(&self, t: &str) -> Result<String, String> {
        let mut out = String::with_capacity(t.len());
        let mut rest = t;
        while let Some(start) = rest.find('{') {
            out.push_str(&rest[..start]);
            let end = rest[start..].find('}').ok_or_else(|| format!("unclosed `{{` in template `{t}`"))? + start;
            out.push_str(&self.get(&rest[start + 1..end])?);
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn value(&self, v: &Value) -> Result<String, String> {
        match v {
            Value::Template(t) => self.template(t),
            Value::Column { column, regex, map, scale } => {
                let mut raw = self.get(column)?;
                if let Some(Pattern(re)) = regex {
                    let caps = re
                        .captures(&raw)
                        .ok_or_else(|| format!("{column}: `{raw}` does not match `{}`", re.as_str()))?;
                    raw = caps.get(1).or_else(|| caps.get(0)).map(|m| m.as_str().to_owned()).unwrap_or_default();
                }
                // `"*"` in a map stands for any other value.
                let mapped = if map.is_empty() {
                    raw
                } else {
                    map.get(&raw)
                        .or_else(|| map.get("*"))
                        .cloned()
                        .ok_or_else(|| format!("{column}: `{raw}` is none of {:?}", map.keys().collect::<Vec<_>>()))?
                };
                match scale {
                    None => Ok(mapped),
                    Some(s) => {
                        let n: f64 = mapped.parse().map_err(|_| format!("{column}: `{mapped}` is not a number"))?;
                        Ok((n * s).to_string())
                    }
                }
            }
        }
    }
}

fn parse<T: std::str::FromStr>(field: &str, v: String) -> Result<T, (String, String)>
where
    T::Err: std::fmt::Display,
{
    v.parse().map_err(|e: T::Err| (field.to_owned(), e.to_string()))
}

fn convert(
    m: &Mapping,
    row: &Row<'_>,
) -> Result<(CreateReportRequest, Option<CreateAttemptRequest>), (String, String)> {
    fn at(field: &'static str) -> impl Fn(String) -> (String, String) {
        move |e| (field.to_owned(), e)
    }
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
    let verdict_source: VerdictSource =
        parse("verdict_source", row.value(&a.verdict_source).map_err(at("verdict_source"))?)?;
    let number = |field: &'static str, v: &Option<Value>| -> Result<Option<f64>, (String, String)> {
        match v {
            None => Ok(None),
            Some(v) => {
                let s = row.value(v).map_err(at(field))?;
                if s.is_empty() { Ok(None) } else { parse(field, s).map(Some) }
            }
        }
    };
    let key = ReportKey { project: report.project.clone(), external_id: report.external_id.clone() };
    let agent = row.template(&a.agent).map_err(at("agent"))?;
    let attempt = CreateAttemptRequest {
        goal: a.goal.unwrap_or_default(),
        model: a.model.as_deref().map(|m| row.template(m)).transpose().map_err(at("model"))?,
        wall_seconds: number("wall_seconds", &a.wall_seconds)?,
        cost_usd: number("cost_usd", &a.cost_usd)?,
        attempt_key: a.attempt_key.as_deref().map(|k| row.template(k)).transpose().map_err(at("attempt_key"))?,
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
        review: optional(row, "review", &a.review)?.map(|v| parse("review", v)).transpose()?,
        reviewer: optional(row, "reviewer", &a.reviewer)?,
        ..CreateAttemptRequest::for_key(key, agent, verdict, verdict_source)
    };
    Ok((report, Some(attempt)))
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

/// One line per item of a joined list.
fn list_lines(spec: &ListSpec, row: &Row<'_>, what: &str) -> Result<Vec<String>, (String, String)> {
    let field = spec.list.strip_prefix("join.").unwrap_or(&spec.list);
    let items = row
        .joined
        .and_then(|j| json_path(j, field))
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| (what.to_owned(), format!("joined record has no list `{field}`")))?;
    items.iter().map(|item| json_template(&spec.item, item).map_err(|e| (what.to_owned(), e))).collect()
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

/// Loads the join file into records by key.
fn load_join(j: &JoinMapping, input_dir: Option<&std::path::Path>) -> anyhow::Result<Joined> {
    let path = std::path::Path::new(&j.file);
    let path = match input_dir {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_path_buf(),
    };
    let text = std::fs::read_to_string(&path).map_err(|e| anyhow::anyhow!("join file {}: {e}", path.display()))?;
    let text = crate::input::strip_bom(&text).to_owned();
    let parsed: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("join file {}: not JSON: {e}", path.display()))?;
    let keyed: Vec<(Option<String>, serde_json::Value)> = match parsed {
        serde_json::Value::Array(items) => items.into_iter().map(|r| (None, r)).collect(),
        serde_json::Value::Object(map) => map.into_iter().map(|(k, r)| (Some(k), r)).collect(),
        _ => anyhow::bail!("join file {}: not a JSON array of objects, nor an object keyed by id", path.display()),
    };
    let mut records = HashMap::with_capacity(keyed.len());
    for (i, (id, r)) in keyed.into_iter().enumerate() {
        let key = match (&j.key, id) {
            (Some(t), _) => json_template(t, &r)
                .map_err(|e| anyhow::anyhow!("join file {} record {}: {e}", path.display(), i + 1))?,
            (None, Some(id)) => id,
            (None, None) => {
                anyhow::bail!("join file {} is an array: say which field keys it (`key = \"{{id}}\"`)", path.display())
            }
        };
        records.insert(key, r);
    }
    let default = j.left.then(|| serde_json::Value::Object(j.defaults.clone()));
    Ok(Joined { records, default })
}

/// Joins, converts and queues one row; rejections name row `n`.
fn take_row<'a>(
    importer: &mut Importer<'_>,
    mapping: &Mapping,
    joined: Option<&'a Joined>,
    n: u64,
    mut row: Row<'a>,
    reports: &mut Vec<(u64, CreateReportRequest)>,
    attempts: &mut Vec<(u64, CreateAttemptRequest)>,
) {
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
    importer
        .push(
            0,
            ImportRecord::Project(CreateProjectRequest {
                slug: mapping.project.clone(),
                name: None,
                description: None,
                public: None,
                upstream_url: None,
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
    importer.push_reports(reports).await?;
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
    let joined = mapping.join.as_ref().map(|j| load_join(j, input_dir)).transpose()?;
    let text = crate::input::read_document(&mut input, "a CSV file").await?;
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(text.as_bytes());
    let headers: Vec<String> = reader.headers()?.iter().map(|h| h.trim().to_owned()).collect();
    mapping.check_columns(|c| headers.iter().any(|h| h == c), headers.iter().map(String::as_str), "its header")?;
    let (mut reports, mut attempts) = (Vec::new(), Vec::new());
    for (i, rec) in reader.records().enumerate() {
        let n = i as u64 + 2;
        match rec {
            Ok(cells) => {
                let row = Row { source: Source::Csv { headers: &headers, cells: &cells }, joined: None };
                take_row(importer, mapping, joined.as_ref(), n, row, &mut reports, &mut attempts);
            }
            Err(e) => importer.reject(n, None, format!("row {n}: {e}")),
        }
    }
    store(importer, mapping, reports, attempts).await
}

/// Reads JSON records (an array of objects, or one object per line); fields
/// are the mapping's columns. Record numbers count from 1 (lines for JSON Lines).
pub async fn import_json<R: AsyncBufRead + Unpin>(
    importer: &mut Importer<'_>,
    mut input: R,
    mapping: &Mapping,
    input_dir: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let joined = mapping.join.as_ref().map(|j| load_join(j, input_dir)).transpose()?;
    let text = crate::input::read_document(&mut input, "a JSON input for a mapping").await?;
    let records: Vec<(u64, Result<serde_json::Value, String>)> = if text.trim_start().starts_with('[') {
        let items: Vec<serde_json::Value> =
            serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("not a JSON array: {e}"))?;
        items.into_iter().enumerate().map(|(i, v)| (i as u64 + 1, Ok(v))).collect()
    } else {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| (i as u64 + 1, serde_json::from_str(l).map_err(|e| e.to_string())))
            .collect()
    };
    if let Some((_, Ok(first))) = records.iter().find(|(_, r)| r.as_ref().is_ok_and(serde_json::Value::is_object)) {
        let fields = first.as_object().map(|o| o.keys().map(String::as_str).collect::<Vec<_>>()).unwrap_or_default();
        mapping.check_columns(|c| json_path(first, c).is_some(), fields, "its first record")?;
    }
    let (mut reports, mut attempts) = (Vec::new(), Vec::new());
    for (n, value) in &records {
        match value {
            Ok(v) if v.is_object() => {
                let row = Row { source: Source::Json(v), joined: None };
                take_row(importer, mapping, joined.as_ref(), *n, row, &mut reports, &mut attempts);
            }
            Ok(_) => importer.reject(*n, None, format!("record {n}: not a JSON object")),
            Err(e) => importer.reject(*n, None, format!("record {n}: {e}")),
        }
    }
    store(importer, mapping, reports, attempts).await
}
