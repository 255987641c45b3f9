//! `GET /api/v1/routing/{owner}/{name}`: a project's routing health.

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use crate::model::Route;
use crate::routing::sections::LearnedLine;

/// How a project's routing is doing: the route mix over time, unsure and
/// corrected routes, maintainers' confirmations, the alarm, and the
/// boilerplate its reports share.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RoutingHealth {
    pub project: String,
    /// The last days the alarm and the counts below read (30).
    pub window_days: u32,
    /// Reports filed in the window, by the route they have now.
    pub routed: u64,
    pub human_first: u64,
    pub agent_first: u64,
    pub hypothesis: u64,
    /// Flagged `route_check` and not yet confirmed or corrected.
    pub route_check: u64,
    /// Routes a maintainer corrected, and confirmed as right.
    pub corrected: u64,
    pub confirmed: u64,
    /// Per route the rule chose: how many a maintainer confirmed and
    /// corrected, and the precision that gives (confirmed over both).
    pub reviewed: Vec<ReviewedRoute>,
    /// The route mix by week (Monday first), the last 12 weeks.
    pub weeks: Vec<WeekMix>,
    /// Set when, over the window and at least 20 routed reports, more than
    /// 60% went to a human first or corrections pass 20%: what is wrong.
    pub alarm: Option<String>,
    /// The evidence that sent the window's `human_first` reports to a
    /// human, most frequent first (at most 8).
    pub top_evidence: Vec<EvidenceCount>,
    /// Lines the project's reports share, left out of the evidence.
    pub boilerplate: Vec<LearnedLine>,
    /// How many reports it was learned from, and when (`failpass reroute`).
    pub boilerplate_reports: u64,
    pub boilerplate_learned_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewedRoute {
    /// The route the rule chose.
    pub route: Route,
    pub confirmed: u64,
    pub corrected: u64,
    pub precision: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WeekMix {
    pub week: NaiveDate,
    pub human_first: u64,
    pub agent_first: u64,
    pub hypothesis: u64,
    pub route_check: u64,
    pub corrected: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EvidenceCount {
    /// As the explanation names it: `keyword "build"`, `label "module: ci"`.
    pub evidence: String,
    pub reports: u64,
}

/// `POST /api/v1/reports/{id}/route/confirm`: a maintainer says the route is right.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ConfirmRouteRequest {
    /// The route the maintainer saw (optional): refused if the report has
    /// been routed elsewhere since.
    #[serde(default)]
    pub route: Option<crate::model::Route>,
    /// Why (optional): kept in the report's timeline.
    #[serde(default)]
    pub reason: Option<String>,
}

impl ConfirmRouteRequest {
    pub fn validate(&self) -> Result<(), crate::api::query::FieldError> {
        if self.reason.as_deref().is_some_and(|r| r.trim().chars().count() > 2000) {
            return Err(crate::api::query::FieldError::new("reason", "at most 2000 characters"));
        }
        Ok(())
    }
}

/// The alarm's thresholds.
pub const ALARM_MIN_ROUTED: u64 = 20;
pub const ALARM_HUMAN_SHARE: f64 = 0.6;
pub const ALARM_CORRECTED_SHARE: f64 = 0.2;

/// The alarm for `routed` reports of which `human_first` went to a human
/// and `corrected` were corrected; `None` when all is well or there are too
/// few to say.
pub fn alarm(routed: u64, human_first: u64, corrected: u64, window_days: u32) -> Option<String> {
    if routed < ALARM_MIN_ROUTED {
        return None;
    }
    let share = |n: u64| n as f64 / routed as f64;
    let mut why = Vec::new();
    if share(human_first) > ALARM_HUMAN_SHARE {
        why.push(format!(
            "{human_first} of {routed} reports ({:.0}%) went to a human first (alarm above {:.0}%)",
            share(human_first) * 100.0,
            ALARM_HUMAN_SHARE * 100.0
        ));
    }
    if share(corrected) > ALARM_CORRECTED_SHARE {
        why.push(format!(
            "{corrected} of {routed} routes ({:.0}%) were corrected (alarm above {:.0}%)",
            share(corrected) * 100.0,
            ALARM_CORRECTED_SHARE * 100.0
        ));
    }
    (!why.is_empty()).then(|| format!("Over the last {window_days} days {}.", why.join(", and ")))
}

/// The pieces of evidence a harness rule's explanation names, without
/// their weights and sections: `keyword "build"`, `hint "cuda"`,
/// `label "module: ci"`, `"undefined symbol"` (a code marker).
pub fn evidence_pieces(evidence: &str) -> Vec<String> {
    let Some((_, items)) = evidence.split_once(": ") else { return Vec::new() };
    // The explanation's own parenthesis (what was not read) is not evidence.
    let items = items.split(" (not evidence:").next().unwrap_or(items);
    items
        .split("; ")
        .filter_map(|item| {
            let item = item.trim();
            let quoted = |s: &str| s.split('"').nth(1).map(str::to_owned);
            if let Some(rest) = ["keyword ", "hint ", "label "].iter().find(|p| item.starts_with(**p)) {
                quoted(item).map(|w| format!("{}\"{w}\"", rest))
            } else if item.starts_with('"') {
                quoted(item).map(|w| format!("\"{w}\""))
            } else {
                None
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alarm_sounds_past_its_shares_and_not_below_twenty_reports() {
        assert_eq!(alarm(19, 19, 0, 30), None);
        assert_eq!(alarm(20, 12, 4, 30), None);
        let a = alarm(20, 13, 0, 30).unwrap();
        assert!(a.contains("13 of 20 reports (65%) went to a human first"), "{a}");
        let a = alarm(50, 10, 11, 30).unwrap();
        assert!(a.contains("11 of 50 routes (22%) were corrected"), "{a}");
    }

    #[test]
    fn evidence_is_read_back_from_the_explanation() {
        let e = "weight 6 >= 2: label \"module: ci\" matches \"ci*\" (+3); keyword \"build\" in \"Current behavior?\" (+1); \
                 hint \"cuda\" in title (+1); \"undefined symbol\" in code of description (+2) (not evidence: 3 environment)";
        assert_eq!(
            evidence_pieces(e),
            ["label \"module: ci\"", "keyword \"build\"", "hint \"cuda\"", "\"undefined symbol\""]
        );
        assert!(evidence_pieces("weight 0 < 2: no harness keyword, label, code marker or path").is_empty());
    }
}
