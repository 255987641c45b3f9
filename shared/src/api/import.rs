//! Bulk intake: failpass's own lossless NDJSON format (one [`ImportRecord`]
//! per line, the same shapes as the API) and the summary every import ends with.

use serde::{Deserialize, Serialize};

use super::attempts::{CreateAttemptRequest, CreateRunRequest};
use super::projects::CreateProjectRequest;
use super::query::FieldError;
use super::reports::CreateReportRequest;

/// One line of an NDJSON import: `{"kind": "report", …the API's fields…}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ImportRecord {
    Project(CreateProjectRequest),
    Report(CreateReportRequest),
    Attempt(CreateAttemptRequest),
    Agent(AgentRecord),
    Run(CreateRunRequest),
    Environment(super::jobs::CreateEnvironmentRequest),
    /// What maintainers did to a report: its route correction, resolution,
    /// assignee and activity timeline (after the reports it names).
    LifeCycle(LifeCycleRecord),
}

/// A report's life cycle, as the NDJSON export writes it after every report
/// and the import restores it: the timeline replaces the report's own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LifeCycleRecord {
    #[cfg_attr(feature = "openapi", schema(schema_with = crate::api::projects::slug))]
    pub project: String,
    pub external_id: String,
    /// A maintainer's route correction (left out: the stored one stays).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_correction: Option<super::reports::RouteCorrection>,
    /// `closed`, `duplicate`, `wont_fix`, `not_a_bug`, `closed_upstream`, or
    /// `reopened` (a member's reopening, which upstream does not undo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    /// `upstream`, or the member who set the resolution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution_by: Option<String>,
    /// For a duplicate: the upstream number of the report it duplicates, in the same project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// The whole timeline, oldest first.
    #[serde(default)]
    pub activity: Vec<super::reports::Activity>,
}

impl LifeCycleRecord {
    pub fn validate(&self) -> Result<(), FieldError> {
        super::projects::validate_slug(&self.project).map_err(|e| FieldError::new("project", e.message))?;
        if self.external_id.trim().is_empty() {
            return Err(FieldError::new("external_id", "names no report"));
        }
        if let Some(r) = &self.resolution
            && r != "reopened"
            && r.parse::<crate::model::Resolution>().is_err()
        {
            return Err(FieldError::new(
                "resolution",
                format!("`{r}` is not closed, duplicate, wont_fix, not_a_bug, closed_upstream or reopened"),
            ));
        }
        if self.resolution.is_some() != self.resolution_by.is_some() {
            return Err(FieldError::new("resolution_by", "a resolution says who set it, and only a resolution does"));
        }
        if self.duplicate_of.is_some() && self.resolution.as_deref() != Some("duplicate") {
            return Err(FieldError::new("duplicate_of", "only a duplicate duplicates a report"));
        }
        if self.activity.len() > 10_000 {
            return Err(FieldError::new("activity", "holds more than 10000 entries"));
        }
        for a in &self.activity {
            if a.kind.trim().is_empty() || a.actor.trim().is_empty() || a.via.trim().is_empty() {
                return Err(FieldError::new("activity", "an entry lacks its kind, actor or via"));
            }
            if a.text.len() > 20_000 {
                return Err(FieldError::new("activity", "an entry's text is longer than 20000 bytes"));
            }
        }
        Ok(())
    }
}

impl ImportRecord {
    pub fn kind(&self) -> &'static str {
        match self {
            ImportRecord::Project(_) => "project",
            ImportRecord::Report(_) => "report",
            ImportRecord::Attempt(_) => "attempt",
            ImportRecord::Agent(_) => "agent",
            ImportRecord::Run(_) => "run",
            ImportRecord::Environment(_) => "environment",
            ImportRecord::LifeCycle(_) => "life_cycle",
        }
    }

    pub fn validate(&self) -> Result<(), FieldError> {
        match self {
            ImportRecord::Project(p) => p.validate(),
            ImportRecord::Report(r) => r.validate(),
            ImportRecord::Attempt(a) => a.validate(),
            ImportRecord::Agent(a) => a.validate(),
            ImportRecord::Run(r) => r.validate(),
            ImportRecord::Environment(e) => e.validate(),
            ImportRecord::LifeCycle(l) => l.validate(),
        }
    }
}

/// An agent (or leaderboard entry) with the figures its source states about
/// itself. failpass computes its own figures from the attempt rows and shows
/// both, with any discrepancy, side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AgentRecord {
    /// The name attempts carry in `agent`.
    pub name: String,
    /// Where the statement comes from (`swebench:bash-only`).
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// The date the source gives for the entry (`YYYY-MM-DD`).
    #[serde(default)]
    pub date: Option<String>,
    /// Stated success rate as a fraction (0.649 for 64.9%).
    #[serde(default)]
    pub stated_rate: Option<f64>,
    /// The denominator the stated rate is over (500 instances).
    #[serde(default)]
    pub stated_instances: Option<u64>,
    #[serde(default)]
    pub stated_cost_usd: Option<f64>,
    #[serde(default)]
    pub stated_instance_cost_usd: Option<f64>,
    #[serde(default)]
    pub stated_instance_calls: Option<f64>,
    #[serde(default)]
    pub notes: Option<String>,
}

impl AgentRecord {
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.name.trim().is_empty() || self.name.len() > 200 {
            return Err(FieldError::new("name", "must be 1 to 200 characters"));
        }
        if let Some(r) = self.stated_rate
            && !(0.0..=1.0).contains(&r)
        {
            return Err(FieldError::new("stated_rate", "must be a fraction between 0 and 1"));
        }
        for (field, v) in [
            ("stated_cost_usd", self.stated_cost_usd),
            ("stated_instance_cost_usd", self.stated_instance_cost_usd),
            ("stated_instance_calls", self.stated_instance_calls),
        ] {
            if v.is_some_and(|v| !(v.is_finite() && v >= 0.0)) {
                return Err(FieldError::new(field, "must be a non-negative number"));
            }
        }
        Ok(())
    }
}

/// What happened to one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Created,
    Updated,
    Unchanged,
}

impl Outcome {
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Created => "created",
            Outcome::Updated => "updated",
            Outcome::Unchanged => "unchanged",
        }
    }
}

/// A record that was not stored, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Rejection {
    /// 1-based line (NDJSON, CSV) or record number (JSON arrays).
    pub record: u64,
    /// The field at fault, where there is one.
    pub field: Option<String>,
    pub message: String,
}

/// How many rejections a summary lists; the count goes on past it.
pub const MAX_LISTED_REJECTIONS: usize = 100;

/// The closing summary of an import.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ImportSummary {
    pub records: u64,
    pub created: u64,
    pub updated: u64,
    pub unchanged: u64,
    pub rejected: u64,
    /// Records deliberately not imported (pull requests in an issues dump).
    #[serde(default)]
    pub skipped: u64,
    /// The first [`MAX_LISTED_REJECTIONS`] rejections.
    pub rejections: Vec<Rejection>,
    /// Per field (`report.labels`, `attempt.verdict`), how many records a
    /// re-import changed it in.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub changed: std::collections::BTreeMap<String, u64>,
    /// What the figures will make of the records stored.
    #[serde(default)]
    pub notes: ImportNotes,
}

/// What an import's stored records will do to the figures, said before
/// anyone reads a figure that counts them for nothing or as unknown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ImportNotes {
    /// Reports the router found vague: a success on one counts once a
    /// person accepts it (or the verdict is a person's own).
    pub vague_reports: u64,
    /// Vague reports by what they lack (`no code block, no traceback, no versions`).
    #[serde(default)]
    pub vague_why: std::collections::BTreeMap<String, u64>,
    /// Attempts whose verdict counts only once a person reviews it: leads,
    /// and unreviewed successes on vague reports.
    pub awaiting_review: u64,
    /// Attempts without a cost: unknown, left out of every cost figure.
    pub without_cost: u64,
    /// Attempts without a time (no `wall_seconds`, nor both ends): unknown
    /// in every time figure.
    pub without_time: u64,
}

/// `1 report is`, `2 reports are`.
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl ImportNotes {
    /// The notes as sentences, empty when there is nothing to say.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.vague_reports > 0 {
            let why: Vec<String> = self.vague_why.iter().map(|(w, n)| format!("{n} with {w}")).collect();
            out.push(format!(
                "{} vague ({}): a success on one counts once a person accepts it, \
                 or when the mapping records the verdict as reviewed (`review`, `reviewer`)",
                plural(self.vague_reports, "report is", "reports are"),
                why.join("; ")
            ));
        }
        if self.awaiting_review > 0 {
            out.push(format!(
                "{} a review to count (POST /api/v1/attempts/{{id}}/review, or the report page)",
                plural(self.awaiting_review, "verdict needs", "verdicts need")
            ));
        }
        if self.without_cost > 0 {
            out.push(format!(
                "{} no cost: cost figures leave them out and say so",
                plural(self.without_cost, "attempt has", "attempts have")
            ));
        }
        if self.without_time > 0 {
            out.push(format!(
                "{} no time: time figures leave them out and say so",
                plural(self.without_time, "attempt has", "attempts have")
            ));
        }
        out
    }
}

impl ImportSummary {
    pub fn count(&mut self, outcome: Outcome) {
        self.records += 1;
        match outcome {
            Outcome::Created => self.created += 1,
            Outcome::Updated => self.updated += 1,
            Outcome::Unchanged => self.unchanged += 1,
        }
    }

    pub fn reject(&mut self, record: u64, field: Option<String>, message: String) {
        self.records += 1;
        self.rejected += 1;
        if self.rejections.len() < MAX_LISTED_REJECTIONS {
            self.rejections.push(Rejection { record, field, message });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_tagged_by_kind() {
        let r: ImportRecord = serde_json::from_str(r#"{"kind":"project","slug":"a/b"}"#).unwrap();
        assert_eq!(r.kind(), "project");
        let a: ImportRecord = serde_json::from_str(
            r#"{"kind":"attempt","report":{"project":"a/b","external_id":"7"},"agent":"x","verdict":"resolved","verdict_source":"deterministic","goal":"fix","api_calls":12}"#,
        )
        .unwrap();
        let ImportRecord::Attempt(a) = a else { panic!() };
        assert_eq!(a.api_calls, Some(12));
        assert!(a.validate().is_ok());
        let e = serde_json::from_str::<ImportRecord>(r#"{"kind":"bogus"}"#).unwrap_err().to_string();
        assert!(e.contains("bogus"), "{e}");
        let e =
            serde_json::from_str::<ImportRecord>(r#"{"kind":"project","slug":"a/b","x":1}"#).unwrap_err().to_string();
        assert!(e.contains("unknown field `x`"), "{e}");
    }

    #[test]
    fn summary_caps_the_listed_rejections() {
        let mut s = ImportSummary::default();
        for i in 0..150 {
            s.reject(i, None, "bad".into());
        }
        s.count(Outcome::Created);
        assert_eq!((s.records, s.rejected, s.created), (151, 150, 1));
        assert_eq!(s.rejections.len(), MAX_LISTED_REJECTIONS);
    }
}

/// `GET /api/v1/agents`: what an agent's source states beside what its rows give.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentFigures {
    pub agent: AgentRecord,
    /// The goal the computed figures are for (`fix` when the agent has fix attempts).
    pub goal: crate::model::Goal,
    /// Figures computed from the stored attempts; `None` without any.
    pub computed: Option<super::figures::FigureRow>,
    /// Where the stated figures and the rows disagree, in words. Empty when they agree.
    pub discrepancies: Vec<String>,
}

/// Compares an agent's stated figures with the ones computed from its rows.
/// Rates are compared over the stated denominator (the board's instances).
pub fn discrepancies(agent: &AgentRecord, computed: Option<&super::figures::FigureRow>) -> Vec<String> {
    let mut out = Vec::new();
    let Some(c) = computed else {
        if agent.stated_rate.is_some() || agent.stated_cost_usd.is_some() {
            out.push("no per-instance rows: the stated figures cannot be checked".to_owned());
        }
        return out;
    };
    let denominator = agent.stated_instances.unwrap_or(c.reports_graded);
    if let Some(n) = agent.stated_instances
        && c.reports_graded != n
    {
        out.push(format!("rows cover {} of the {} instances the source scores on", c.reports_graded, n));
    }
    if let Some(stated) = agent.stated_rate
        && denominator > 0
    {
        let rows = c.reports_reproduced as f64 / denominator as f64;
        // Sources round to two decimals of a percent.
        if (rows - stated).abs() > 0.00006 {
            out.push(format!(
                "stated rate {:.2}% but the rows give {} of {} = {:.2}%",
                stated * 100.0,
                c.reports_reproduced,
                denominator,
                rows * 100.0
            ));
        }
    }
    if let Some(stated) = agent.stated_cost_usd
        && (stated - c.cost_total_usd).abs() > 0.005
    {
        out.push(format!("stated cost ${stated:.2} but the rows add up to ${:.2}", c.cost_total_usd));
    }
    out
}

#[cfg(test)]
mod discrepancy_tests {
    use super::*;
    use crate::figures::{ReportContribution, figure_rows};

    fn agent(rate: f64, cost: f64) -> AgentRecord {
        AgentRecord {
            name: "a".into(),
            source: None,
            model: None,
            date: None,
            stated_rate: Some(rate),
            stated_instances: Some(500),
            stated_cost_usd: Some(cost),
            stated_instance_cost_usd: None,
            stated_instance_calls: None,
            notes: None,
        }
    }

    fn rows(resolved: u64, n: u64, cost_each: f64) -> crate::api::figures::FigureRow {
        let cs = (0..n).map(|i| ReportContribution {
            key: "a".into(),
            attempts: 1,
            attempts_graded: 1,
            attempts_counting: u64::from(i < resolved),
            cost_usd: cost_each,
            cost_counting_usd: if i < resolved { cost_each } else { 0.0 },
            ..Default::default()
        });
        figure_rows(cs).remove(0)
    }

    #[test]
    fn agreement_is_silent_and_disagreement_is_named() {
        assert!(discrepancies(&agent(0.65, 100.0), Some(&rows(325, 500, 0.2))).is_empty());
        let d = discrepancies(&agent(0.6493, 100.0), Some(&rows(324, 500, 0.2)));
        assert_eq!(d, ["stated rate 64.93% but the rows give 324 of 500 = 64.80%"]);
        let d = discrepancies(&agent(0.528, 50.0), Some(&rows(51, 500, 0.1)));
        assert!(d[0].contains("52.80%") && d[0].contains("10.20%"), "{d:?}");
        let d = discrepancies(&agent(0.5, 1.0), None);
        assert!(d[0].starts_with("no per-instance rows"));
        let d = discrepancies(&agent(0.65, 100.0), Some(&rows(325, 499, 0.2)));
        assert!(d.iter().any(|x| x.contains("rows cover 499 of the 500")), "{d:?}");
    }
}
