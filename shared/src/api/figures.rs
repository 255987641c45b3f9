//! `GET /api/v1/figures`

use serde::{Deserialize, Serialize};

use super::query::{FieldError, non_empty, parse_field};
use super::reports::{ReportFilter, unknown_parameter};
use crate::model::{Goal, GroupBy};

/// The most dimensions one `group_by` may cross.
pub const MAX_GROUP_DIMENSIONS: usize = 3;

/// What joins the parts of a crossed group's key (`route · agent · model`).
pub const KEY_SEPARATOR: &str = " · ";

/// Weeks the throughput chart draws (the overview's table lists them all).
pub const THROUGHPUT_CHART_WEEKS: usize = 26;

/// `GET /api/v1/figures` parameters: a grouping, a goal, the report filters
/// and the attempt filters `agent` and `model`.
///
/// `group_by` may cross up to three dimensions, comma-separated
/// (`group_by=route,agent,model`): the first is `group_by`, the rest `then_by`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FiguresQuery {
    pub group_by: GroupBy,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub then_by: Vec<GroupBy>,
    pub goal: Goal,
    pub filter: ReportFilter,
    pub agent: Option<String>,
    pub model: Option<String>,
}

impl FiguresQuery {
    pub fn from_pairs<'a, I>(pairs: I) -> Result<Self, FieldError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut q = Self::default();
        for (k, v) in pairs {
            if q.filter.take(k, v)? {
                continue;
            }
            let val = non_empty(v);
            match k {
                "group_by" => {
                    let dims = parse_grouping(val.unwrap_or("none"))?;
                    q.group_by = dims[0];
                    q.then_by = dims[1..].to_vec();
                }
                "goal" => q.goal = val.map(|v| parse_field(k, v)).transpose()?.unwrap_or_default(),
                "agent" => q.agent = val.map(str::to_owned),
                "model" => q.model = val.map(str::to_owned),
                _ => {
                    return Err(unknown_parameter(
                        k,
                        &format!("group_by, goal, agent, model, {}", ReportFilter::PARAMETERS),
                    ));
                }
            }
        }
        q.filter.check_window()?;
        Ok(q)
    }

    /// Every dimension, `group_by` first.
    pub fn dimensions(&self) -> Vec<GroupBy> {
        std::iter::once(self.group_by).chain(self.then_by.iter().copied()).collect()
    }

    /// Whether a report belongs to groups through its attempts.
    pub fn is_per_attempt(&self) -> bool {
        self.dimensions().iter().any(|d| d.is_per_attempt())
    }

    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let dims: Vec<&str> = self.dimensions().iter().map(|d| d.as_str()).collect();
        let mut out = vec![("group_by", dims.join(","))];
        if self.goal != Goal::default() {
            out.push(("goal", self.goal.to_string()));
        }
        out.extend(self.filter.pairs());
        if let Some(a) = &self.agent {
            out.push(("agent", a.clone()));
        }
        if let Some(m) = &self.model {
            out.push(("model", m.clone()));
        }
        out
    }
}

/// `route,agent,model` as dimensions: no repeats, `none` alone, at most three.
pub fn parse_grouping(value: &str) -> Result<Vec<GroupBy>, FieldError> {
    let mut dims: Vec<GroupBy> = Vec::new();
    for part in value.split(',') {
        let d: GroupBy = parse_field("group_by", part.trim())?;
        if dims.contains(&d) {
            return Err(FieldError::new("group_by", format!("`{d}` is given twice")));
        }
        dims.push(d);
    }
    if dims.len() > 1 && dims.contains(&GroupBy::None) {
        return Err(FieldError::new("group_by", "`none` cannot be crossed with another dimension"));
    }
    if dims.len() > MAX_GROUP_DIMENSIONS {
        return Err(FieldError::new("group_by", format!("at most {MAX_GROUP_DIMENSIONS} dimensions can be crossed")));
    }
    Ok(dims)
}

/// One group's figures. Every definition is docs/domain.md's; a ratio whose
/// denominator is zero is `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FigureRow {
    /// The group: `all`, a project slug, a route, an agent, a model, a
    /// category, `before_cutoff`/`after_cutoff`/`unknown`, `vague`/`clear`,
    /// or a week's Monday; for crossed dimensions the parts joined by ` · `.
    pub key: String,
    /// A crossed group's key, one part per dimension (absent for one dimension).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// Reports in the group (for per-attempt groupings: reports with an attempt in it).
    pub reports: u64,
    /// Reports with at least one graded attempt (the rate's denominator).
    pub reports_graded: u64,
    /// Reports with at least one counting attempt (`reproduced`/`confirmed`, or `resolved` for goal fix).
    pub reports_reproduced: u64,
    pub rate: Option<f64>,
    /// Wilson 95% interval of `rate`.
    pub rate_low: Option<f64>,
    pub rate_high: Option<f64>,
    pub attempts: u64,
    pub attempts_graded: u64,
    pub attempts_counting: u64,
    /// Per-attempt success rate: counting over graded attempts.
    pub attempt_rate: Option<f64>,
    pub attempts_lead: u64,
    /// Leads over graded attempts, shown beside the rate, never inside it.
    pub lead_rate: Option<f64>,
    pub attempts_error: u64,
    /// All spend, failed and errored attempts included.
    pub cost_total_usd: f64,
    /// `cost_total_usd / attempts`: what one attempt costs on average.
    pub cost_mean_attempt_usd: Option<f64>,
    /// Mean model API calls per attempt, over attempts that reported them.
    pub api_calls_mean: Option<f64>,
    /// `cost_total_usd / reports_reproduced`.
    pub cost_per_reproduction_usd: Option<f64>,
    /// Mean cost of the counting attempts alone.
    pub cost_mean_success_usd: Option<f64>,
    /// `cost_per_reproduction_usd / cost_mean_success_usd`.
    pub cost_ratio: Option<f64>,
    /// Attempts that count only once a person accepts them, not yet reviewed.
    #[serde(default)]
    pub attempts_awaiting_review: u64,
    /// Reports not reproduced yet with such an attempt: accepting them would
    /// raise `reports_reproduced` (and the rate) by up to this many.
    #[serde(default)]
    pub reports_awaiting_review: u64,
    /// Attempts whose cost is unknown: left out of every cost figure (a mean
    /// is over the attempts with a cost; a total is theirs only).
    #[serde(default)]
    pub attempts_without_cost: u64,
    /// Reports with a deterministic oracle.
    pub reports_with_oracle: u64,
    /// `reports_with_oracle / reports`.
    pub oracle_coverage: Option<f64>,
    pub reports_in_patch_test: u64,
    /// Reports whose oracle is an in-patch test, over reports (reference: 47.11%).
    pub in_patch_test_share: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FiguresResponse {
    pub group_by: GroupBy,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub then_by: Vec<GroupBy>,
    pub goal: Goal,
    pub rows: Vec<FigureRow>,
}

crate::model::string_enum!(
    /// What a distribution is taken of: one value per attempt.
    Metric, "metric" {
        CostUsd => "cost_usd",
        WallSeconds => "wall_seconds",
    }
);

// `string_enum!` derives no `Default`: the default variant is named here.
#[allow(clippy::derivable_impls)]
impl Default for Metric {
    fn default() -> Self {
        Metric::CostUsd
    }
}

impl Metric {
    /// The unit its values are in, for axis labels.
    pub const fn unit(self) -> &'static str {
        match self {
            Metric::CostUsd => "USD",
            Metric::WallSeconds => "seconds",
        }
    }
}

/// `GET /api/v1/distributions`: the figures' parameters (one dimension at
/// most) and the `metric`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DistributionQuery {
    pub metric: Metric,
    pub figures: FiguresQuery,
}

impl DistributionQuery {
    pub fn from_pairs<'a, I>(pairs: I) -> Result<Self, FieldError>
    where
        I: IntoIterator<Item = (&'a str, &'a str)>,
    {
        let mut metric = Metric::default();
        let mut rest = Vec::new();
        for (k, v) in pairs {
            if k == "metric" {
                metric = non_empty(v).map(|v| parse_field(k, v)).transpose()?.unwrap_or_default();
            } else {
                rest.push((k, v));
            }
        }
        let figures =
            FiguresQuery::from_pairs(rest).map_err(|e| match e.message.starts_with("unknown query parameter") {
                true => FieldError::new(e.field, format!("{}, metric", e.message)),
                false => e,
            })?;
        if !figures.then_by.is_empty() {
            return Err(FieldError::new("group_by", "a distribution takes one dimension"));
        }
        Ok(Self { metric, figures })
    }

    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![("metric", self.metric.as_str().to_owned())];
        out.extend(self.figures.pairs());
        out
    }
}

/// One histogram bar: values in `[low, high)` (the last bar includes `high`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Bin {
    pub low: f64,
    pub high: f64,
    pub count: u64,
}

/// One group's distribution of a metric over its attempts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Distribution {
    pub key: String,
    /// Attempts with a value recorded.
    pub n: u64,
    pub mean: Option<f64>,
    pub median: Option<f64>,
    pub p90: Option<f64>,
    pub max: Option<f64>,
    /// Over the bins every group shares, so groups compare bar by bar.
    pub histogram: Vec<Bin>,
    /// `(value, share of attempts at or below it)`, at most 101 points, rising.
    pub cdf: Vec<(f64, f64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DistributionResponse {
    pub metric: Metric,
    pub unit: String,
    pub group_by: GroupBy,
    pub groups: Vec<Distribution>,
}

/// One week's flow: reports filed in it, and reports reaching a final state in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WeekFlow {
    /// The week's Monday, `YYYY-MM-DD`.
    pub week: String,
    pub filed: u64,
    /// Reports whose final state (reproduced, or not reproduced) was reached this week.
    pub finished: u64,
    /// Of those, reproduced.
    pub reproduced: u64,
}

/// `GET /api/v1/glance`: a period's answer in one look, for the Overview:
/// what was reproduced and spent in it, how the backlog moved, what is stuck.
/// The top-level counts are by event date (what happened in the period);
/// `by_filing` has the same ideas for the reports filed in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Glance {
    /// The period asked for (none for days given as `since`/`until`).
    pub period: Option<super::reports::Period>,
    /// The period's first and last day (UTC), both included.
    pub from: chrono::NaiveDate,
    pub to: chrono::NaiveDate,
    /// By event date: reports whose first counting reproduction ended in the
    /// period (as the queue's `dated=reproduced` list has them, later closed
    /// ones too).
    pub reproduced: u64,
    /// By event date: spend on attempts started in the period (unknown costs left out).
    pub spend_usd: f64,
    /// `spend_usd` over `reproduced`; none without a reproduction.
    pub cost_per_reproduction_usd: Option<f64>,
    /// Reports filed in the period (on a stated day).
    pub filed: u64,
    /// By event date: reports that reached a final state (reproduced or
    /// not) in the period.
    pub finished: u64,
    /// The same ideas by filing date: the reports filed in the period, as
    /// they stand now (the Overview's cards under the same period).
    pub by_filing: FiledCohort,
    /// Age in days of the oldest report not in a final state (filed on a stated day).
    pub backlog_oldest_days: Option<f64>,
    /// Median age in days of the reports not in a final state.
    pub backlog_median_days: Option<f64>,
    /// `filed - finished`: how the backlog moved over the period (reports
    /// closed without a verdict are not in it).
    pub backlog_change: i64,
    /// Reports not in a final state now.
    pub backlog: u64,
    /// Reports with no final state and no activity for `stuck_days` days.
    pub stuck: u64,
    pub stuck_days: u32,
    /// The same, as the Overview shows it (rendered and escaped by the server).
    pub html: String,
    /// The cards of the reports the filters select (`dated`, `agent`,
    /// `model`, `goal` included), as the Overview shows them; empty when no
    /// report is in the view.
    pub cards_html: String,
}

/// The reports filed in a period, as they stand now: a glance's ideas by filing date.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FiledCohort {
    /// Of the reports filed in the period, those with a counting reproduction (whenever it came).
    pub reproduced: u64,
    /// Of them, those in a final state: reproduced, or graded and not reproduced.
    pub finished: u64,
    /// Spend on every attempt at them, whenever it started (unknown costs left out).
    pub spend_usd: f64,
    /// `spend_usd` over `reproduced`; none without a reproduction.
    pub cost_per_reproduction_usd: Option<f64>,
}

/// `GET /api/v1/throughput`: docs/domain.md's throughput, backlog and time to reproduction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Throughput {
    pub reports: u64,
    /// Reproduced reports a re-check found back on a later release after an
    /// earlier one found them fixed (counted as reproductions in the weeks too).
    #[serde(default)]
    pub regressed: u64,
    pub weeks: Vec<WeekFlow>,
    /// Reports not yet in a final state (new, in progress, needs review).
    pub backlog: u64,
    /// Reports that left the backlog without a verdict: closed, duplicate,
    /// won't fix, not a bug, closed upstream.
    #[serde(default)]
    pub resolved: u64,
    /// Age (since filing) of the backlog's oldest and median report.
    pub backlog_oldest_days: Option<f64>,
    pub backlog_median_days: Option<f64>,
    /// Reproduced reports with a known time of their first counting verdict;
    /// the time runs from intake (failpass's, or filing for reports imported
    /// with their history).
    pub time_to_reproduction_n: u64,
    pub time_to_reproduction_median_hours: Option<f64>,
    pub time_to_reproduction_p90_hours: Option<f64>,
}

/// `GET /api/v1/facets`: the values the dashboard's filters offer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Facets {
    /// Agents with at least one attempt, sorted.
    pub agents: Vec<String>,
    /// Models with at least one attempt, sorted.
    pub models: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_groupings_and_filters() {
        let q =
            FiguresQuery::from_pairs([("group_by", "week"), ("goal", "fix"), ("route", "hypothesis"), ("agent", "x")])
                .unwrap();
        assert_eq!(q.group_by, GroupBy::Week);
        assert_eq!(q.goal, Goal::Fix);
        assert_eq!(q.agent.as_deref(), Some("x"));
        let e = FiguresQuery::from_pairs([("group_by", "colour")]).unwrap_err();
        assert_eq!(e.field, "group_by");
        assert!(e.message.contains("cutoff"));
        assert!(e.message.contains("vagueness"));
    }

    #[test]
    fn crosses_dimensions_and_round_trips() {
        let q = FiguresQuery::from_pairs([("group_by", "route, agent,model"), ("since", "2026-01-05")]).unwrap();
        assert_eq!(q.dimensions(), [GroupBy::Route, GroupBy::Agent, GroupBy::Model]);
        assert!(q.is_per_attempt());
        let pairs = q.pairs();
        assert_eq!(pairs[0], ("group_by", "route,agent,model".to_owned()));
        let back = FiguresQuery::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str()))).unwrap();
        assert_eq!(back, q);
        for (bad, says) in [
            ("route,route", "twice"),
            ("none,route", "none"),
            ("route,agent,model,week", "at most 3"),
            ("route,", "unknown"),
        ] {
            let e = FiguresQuery::from_pairs([("group_by", bad)]).unwrap_err();
            assert!(e.message.contains(says), "{bad}: {e}");
        }
        let e = FiguresQuery::from_pairs([("until", "30/11/2026")]).unwrap_err();
        assert_eq!(e.field, "until");
        assert!(e.message.contains("YYYY-MM-DD"), "{e}");
    }
}

/// `GET /api/v1/ranks`: success by rank, for agents and studies that rank
/// their candidates (an attempt's `rank`: where its first success came).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RankFigures {
    /// Reports the filters select: every rate's denominator (a study's full set).
    pub reports: u64,
    /// One row per agent with a ranked counting attempt.
    pub agents: Vec<RankRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RankRow {
    pub agent: String,
    /// Reports this agent reproduced with a ranked attempt.
    pub reports_ranked: u64,
    /// For each k asked (1, 3, 5, 10 by default): reports reproduced within
    /// the agent's first k candidates, over `reports`, with the Wilson 95% interval.
    pub within: Vec<RankWithin>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RankWithin {
    pub k: u32,
    pub reports: u64,
    pub rate: Option<f64>,
    pub rate_low: Option<f64>,
    pub rate_high: Option<f64>,
}
