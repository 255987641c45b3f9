//! The public face of a public project: `GET /api/v1/status/{owner}/{name}`
//! (what its status page at `/status/{owner}/{name}` is built from) and its
//! badges (`/badge/{owner}/{name}/{metric}.svg`, `.json`).
//!
//! Everything here is about public projects only; a private project answers
//! as a missing one. Report bodies, logs and candidate scripts are never part
//! of it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::figures::WeekFlow;
use super::oracles::Share;
use crate::format;
use crate::model::{Review, Route, Verdict, VerdictSource};

/// Weeks the status page's trend covers (about 90 days).
pub const TREND_WEEKS: usize = 13;

/// Verdicts the status page lists.
pub const LATEST_VERDICTS: usize = 10;

/// Seconds a computed status is served before it is computed again.
pub const STATUS_TTL_SECONDS: u64 = 60;

/// `GET /api/v1/status/{owner}/{name}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProjectStatus {
    /// `owner/name`.
    pub project: String,
    pub name: String,
    pub description: String,
    /// When these figures were computed (they are recomputed at most once a minute).
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc"))]
    pub updated_at: DateTime<Utc>,
    /// Reports in: every report of the project.
    pub reports: u64,
    /// Reports with at least one graded reproduction attempt (the rate's denominator).
    pub reports_graded: u64,
    /// Reports with a counting reproduction (`reproduced` or `confirmed`).
    pub reports_reproduced: u64,
    /// Reproduction rate with its Wilson 95% interval.
    pub rate: Option<f64>,
    pub rate_low: Option<f64>,
    pub rate_high: Option<f64>,
    /// Reports not yet in a final state, and the age of the oldest and median one.
    pub backlog: u64,
    pub backlog_oldest_days: Option<f64>,
    pub backlog_median_days: Option<f64>,
    /// Median time from intake to the first counting verdict, over `time_to_reproduction_n` reports.
    pub time_to_reproduction_n: u64,
    pub time_to_reproduction_median_hours: Option<f64>,
    /// Reports with a deterministic oracle over all reports.
    pub oracle_coverage: Share,
    /// The published share of bugs with an in-patch test (47.11%), for comparison.
    pub in_patch_reference: f64,
    /// How the triage rule routed the project's reports.
    pub routes: Vec<RouteShare>,
    /// The last [`TREND_WEEKS`] weeks: filed, reached a final state, reproduced.
    pub weeks: Vec<WeekFlow>,
    /// The newest graded reproduction verdicts, newest first.
    pub latest: Vec<LatestVerdict>,
}

/// One route's share of the project's reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RouteShare {
    pub route: Route,
    pub reports: u64,
    /// Over all the project's reports.
    pub share: Option<f64>,
    /// What the route means, in one line.
    pub meaning: String,
}

/// A verdict as the public sees it: which report (its title and upstream
/// link), what was found, and how it was graded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LatestVerdict {
    pub external_id: String,
    pub title: String,
    /// The report's own page upstream (the issue tracker), when known.
    pub url: Option<String>,
    pub verdict: Verdict,
    pub graded_by: GradedBy,
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc"))]
    pub at: DateTime<Utc>,
}

crate::model::string_enum!(
    /// How a verdict was reached, for the public.
    GradedBy, "graded by" {
        Deterministic => "deterministic",
        LlmLead => "llm_lead",
        Human => "human",
    }
);

impl GradedBy {
    /// A deterministic check, a person (who ran it, or accepted an LLM's
    /// lead), or an LLM alone (a lead until a person accepts it).
    pub fn of(verdict: Verdict, source: VerdictSource, review: Option<Review>) -> GradedBy {
        match (source, verdict, review) {
            (VerdictSource::Deterministic, ..) => GradedBy::Deterministic,
            (VerdictSource::Human, ..) | (_, Verdict::Confirmed, _) | (_, _, Some(Review::Accepted)) => GradedBy::Human,
            _ => GradedBy::LlmLead,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            GradedBy::Deterministic => "deterministic check",
            GradedBy::LlmLead => "LLM lead",
            GradedBy::Human => "human",
        }
    }
}

/// What a route means, in one line, for the public.
pub fn route_meaning(route: Route) -> &'static str {
    match route {
        Route::HumanFirst => "harness and plumbing bugs: a person looks first, agents rarely solve these",
        Route::AgentFirst => "a deterministic check exists (or is cheap to write): an agent tries, the check grades it",
        Route::Hypothesis => "no check to grade by: an agent's output is a hypothesis and never counts",
    }
}

/// `GET /status`: the public projects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatusIndex {
    pub projects: Vec<StatusIndexEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StatusIndexEntry {
    pub project: String,
    pub name: String,
    pub description: String,
    pub reports: u64,
}

crate::model::string_enum!(
    /// What a badge shows.
    BadgeMetric, "badge" {
        ReproductionRate => "reproduction-rate",
        OracleCoverage => "oracle-coverage",
        Backlog => "backlog",
        MedianTime => "median-time",
    }
);

crate::model::string_enum!(
    /// A badge's look, as shields.io names it.
    BadgeStyle, "style" {
        Flat => "flat",
        FlatSquare => "flat-square",
    }
);

/// A badge's text and colour (a shields.io colour name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct BadgeFace {
    pub label: String,
    pub message: String,
    pub color: String,
}

/// shields.io's endpoint format (`https://img.shields.io/endpoint?url=…`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShieldsEndpoint {
    pub schema_version: u8,
    pub label: String,
    pub message: String,
    pub color: String,
}

impl From<BadgeFace> for ShieldsEndpoint {
    fn from(f: BadgeFace) -> Self {
        ShieldsEndpoint { schema_version: 1, label: f.label, message: f.message, color: f.color }
    }
}

/// No figure yet.
const GREY: &str = "lightgrey";

impl BadgeMetric {
    pub fn default_label(self) -> &'static str {
        match self {
            BadgeMetric::ReproductionRate => "reproduced",
            BadgeMetric::OracleCoverage => "oracle coverage",
            BadgeMetric::Backlog => "backlog",
            BadgeMetric::MedianTime => "time to reproduce",
        }
    }

    /// The badge's message and colour for `status`. Thresholds: a
    /// reproduction rate of 60% or more is bright green, 40% green, 20%
    /// yellow, less orange; oracle coverage at or above the 47.11% in-patch
    /// reference is green, above half of it yellow, less orange; a backlog
    /// of 0 is bright green, up to 10 green, up to 50 yellow, more orange; a
    /// median time to reproduction within a day is bright green, three days
    /// green, a week yellow, more orange.
    pub fn face(self, status: &ProjectStatus, label: Option<&str>) -> BadgeFace {
        let label = label.unwrap_or(self.default_label()).to_owned();
        let (message, color) = match self {
            BadgeMetric::ReproductionRate => match status.rate {
                None => ("no graded reports".to_owned(), GREY),
                Some(r) => (
                    format!("{} of {}", format::percent(Some(r)), format::thousands(status.reports_graded as i64)),
                    match r {
                        r if r >= 0.6 => "brightgreen",
                        r if r >= 0.4 => "green",
                        r if r >= 0.2 => "yellow",
                        _ => "orange",
                    },
                ),
            },
            BadgeMetric::OracleCoverage => match status.oracle_coverage.rate {
                None => ("no reports".to_owned(), GREY),
                Some(r) => (
                    format::percent(Some(r)),
                    match r {
                        r if r >= status.in_patch_reference => "green",
                        r if r >= status.in_patch_reference / 2.0 => "yellow",
                        _ => "orange",
                    },
                ),
            },
            BadgeMetric::Backlog => (
                format::thousands(status.backlog as i64),
                match status.backlog {
                    0 => "brightgreen",
                    1..=10 => "green",
                    11..=50 => "yellow",
                    _ => "orange",
                },
            ),
            BadgeMetric::MedianTime => match status.time_to_reproduction_median_hours {
                // Reproductions whose times nobody recorded are not "none".
                None if status.reports_reproduced > 0 => ("unknown".to_owned(), GREY),
                None => ("no reproductions".to_owned(), GREY),
                Some(h) => (
                    format::hours(Some(h)),
                    match h {
                        h if h <= 24.0 => "brightgreen",
                        h if h <= 72.0 => "green",
                        h if h <= 168.0 => "yellow",
                        _ => "orange",
                    },
                ),
            },
        };
        BadgeFace { label, message, color: color.to_owned() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status() -> ProjectStatus {
        ProjectStatus {
            project: "o/n".into(),
            name: "n".into(),
            description: String::new(),
            updated_at: DateTime::from_timestamp(0, 0).unwrap(),
            reports: 10,
            reports_graded: 8,
            reports_reproduced: 4,
            rate: Some(0.5),
            rate_low: Some(0.2),
            rate_high: Some(0.8),
            backlog: 11,
            backlog_oldest_days: Some(3.0),
            backlog_median_days: Some(1.0),
            time_to_reproduction_n: 4,
            time_to_reproduction_median_hours: Some(30.0),
            oracle_coverage: Share::new(6, 10),
            in_patch_reference: 0.4711,
            routes: vec![],
            weeks: vec![],
            latest: vec![],
        }
    }

    #[test]
    fn badges_say_the_figure_and_colour_it_by_threshold() {
        let s = status();
        let face = BadgeMetric::ReproductionRate.face(&s, None);
        assert_eq!(
            (face.label.as_str(), face.message.as_str(), face.color.as_str()),
            ("reproduced", "50.0% of 8", "green")
        );
        assert_eq!(BadgeMetric::OracleCoverage.face(&s, Some("oracles")).label, "oracles");
        assert_eq!(BadgeMetric::OracleCoverage.face(&s, None).color, "green");
        assert_eq!(BadgeMetric::Backlog.face(&s, None).color, "yellow");
        assert_eq!(BadgeMetric::MedianTime.face(&s, None).message, "30.0 h");
        let undated = ProjectStatus { time_to_reproduction_median_hours: None, ..s.clone() };
        assert_eq!(BadgeMetric::MedianTime.face(&undated, None).message, "unknown", "reproductions without times");
        let empty = ProjectStatus { rate: None, time_to_reproduction_median_hours: None, reports_reproduced: 0, ..s };
        assert_eq!(BadgeMetric::ReproductionRate.face(&empty, None).color, "lightgrey");
        assert_eq!(BadgeMetric::MedianTime.face(&empty, None).message, "no reproductions");
    }

    #[test]
    fn grading_is_told_apart() {
        use VerdictSource::*;
        assert_eq!(GradedBy::of(Verdict::Reproduced, Deterministic, None), GradedBy::Deterministic);
        assert_eq!(GradedBy::of(Verdict::Lead, Llm, None), GradedBy::LlmLead);
        assert_eq!(GradedBy::of(Verdict::Confirmed, Llm, Some(Review::Accepted)), GradedBy::Human);
        assert_eq!(GradedBy::of(Verdict::Reproduced, Human, None), GradedBy::Human);
        assert_eq!("flat-square".parse::<BadgeStyle>().unwrap(), BadgeStyle::FlatSquare);
        assert!("plastic".parse::<BadgeStyle>().is_err());
    }
}
