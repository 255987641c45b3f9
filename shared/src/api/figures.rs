//! `GET /api/v1/figures`

use serde::{Deserialize, Serialize};

use super::query::{non_empty, parse_field, FieldError};
use super::reports::{unknown_parameter, ReportFilter};
use crate::model::{Goal, GroupBy};

/// `GET /api/v1/figures` parameters: a grouping, a goal, the report filters
/// and the attempt filters `agent` and `model`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FiguresQuery {
    pub group_by: GroupBy,
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
                "group_by" => q.group_by = val.map(|v| parse_field(k, v)).transpose()?.unwrap_or_default(),
                "goal" => q.goal = val.map(|v| parse_field(k, v)).transpose()?.unwrap_or_default(),
                "agent" => q.agent = val.map(str::to_owned),
                "model" => q.model = val.map(str::to_owned),
                _ => {
                    return Err(unknown_parameter(
                        k,
                        "group_by, goal, agent, model, project, route, status, label, verdict, q",
                    ))
                }
            }
        }
        Ok(q)
    }

    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![("group_by", self.group_by.to_string())];
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

/// One group's figures. Every definition is DOMAIN.md's; a ratio whose
/// denominator is zero is `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureRow {
    /// The group: `all`, a project slug, a route, an agent, a model, a
    /// category, `before_cutoff`/`after_cutoff`/`unknown`, or a week's Monday.
    pub key: String,
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
    /// Reports with a deterministic oracle.
    pub reports_with_oracle: u64,
    /// `reports_with_oracle / reports`.
    pub oracle_coverage: Option<f64>,
    pub reports_in_patch_test: u64,
    /// Reports whose oracle is an in-patch test, over reports (reference: 47.11%).
    pub in_patch_test_share: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FiguresResponse {
    pub group_by: GroupBy,
    pub goal: Goal,
    pub rows: Vec<FigureRow>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_groupings_and_filters() {
        let q = FiguresQuery::from_pairs([("group_by", "week"), ("goal", "fix"), ("route", "hypothesis"), ("agent", "x")]).unwrap();
        assert_eq!(q.group_by, GroupBy::Week);
        assert_eq!(q.goal, Goal::Fix);
        assert_eq!(q.agent.as_deref(), Some("x"));
        let e = FiguresQuery::from_pairs([("group_by", "colour")]).unwrap_err();
        assert_eq!(e.field, "group_by");
        assert!(e.message.contains("cutoff"));
    }
}
