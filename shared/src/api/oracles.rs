//! `GET /api/v1/oracles`: oracle coverage (docs/domain.md "Figures").

use serde::{Deserialize, Serialize};

use crate::figures::wilson_interval;
use crate::model::{FailureCause, OracleKind, OracleSource};

/// The published share of issues that carry an in-patch test (AgentBug-Smith).
pub const IN_PATCH_REFERENCE: f64 = 0.4711;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KindCount {
    pub kind: OracleKind,
    pub reports: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SourceCount {
    /// `None`: a deterministic oracle whose source is not stated.
    pub source: Option<OracleSource>,
    pub reports: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CauseCount {
    pub cause: FailureCause,
    pub attempts: i64,
}

/// A share with its sample size and Wilson 95% interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Share {
    pub count: i64,
    pub of: i64,
    pub rate: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

impl Share {
    pub fn new(count: i64, of: i64) -> Self {
        let interval = wilson_interval(count.max(0) as u64, of.max(0) as u64);
        Share {
            count,
            of,
            rate: (of > 0).then(|| count as f64 / of as f64),
            low: interval.map(|i| i.0),
            high: interval.map(|i| i.1),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OracleSummary {
    pub reports: i64,
    /// Reports by oracle kind (`none` included).
    pub by_kind: Vec<KindCount>,
    /// Reports with a deterministic oracle, by source.
    pub by_source: Vec<SourceCount>,
    /// Oracle coverage: reports with a deterministic oracle over all reports.
    pub coverage: Share,
    /// Reports whose oracle is an in-patch test, over all reports.
    pub in_patch: Share,
    pub in_patch_reference: f64,
    /// Oracles with authoring minutes recorded, their total and median.
    pub authored_oracles: i64,
    pub authoring_minutes_total: f64,
    pub authoring_minutes_median: Option<f64>,
    /// Failure causes of reproduction attempts.
    pub failure_causes: Vec<CauseCount>,
    /// LLM-verdict precision: of LLM-judged leads (accepted or not) that a
    /// deterministic check graded later (the attempt rerun in place, else a
    /// later attempt on its report), the share that check reproduced.
    /// `1 - rate` is LLM judging's false-positive rate.
    pub llm_precision: Share,
    /// Oracles maintainers wrote in the dashboard, by the report's category
    /// and its route when they started (measured minutes and tries).
    /// Not read by the dashboard, which shows `authoring_html`.
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub authoring: Vec<AuthoringGroup>,
    /// Of reports a maintainer started an oracle for, those validated
    /// within an hour of authoring time: the rule's "under an hour" question.
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(skip))]
    pub validated_within_hour: Option<Share>,
    /// `authoring` as the Oracles page shows it (rendered and escaped by the server).
    #[serde(default)]
    pub authoring_html: String,
}

/// Authored oracles of one category and starting route.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuthoringGroup {
    pub category: String,
    /// The report's route when the maintainer started writing.
    pub route: String,
    /// Reports a maintainer started an oracle for.
    pub started: i64,
    pub validated: i64,
    /// Validated within 60 minutes of authoring time.
    pub within_hour: i64,
    pub median_minutes: Option<f64>,
    pub mean_tries: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_and_medians() {
        let s = Share::new(3, 10);
        assert_eq!(s.rate, Some(0.3));
        assert!(s.low.unwrap() < 0.3 && s.high.unwrap() > 0.3);
        assert_eq!(Share::new(0, 0).rate, None);
        // The one median (`figures::median_sorted`), as the summary takes it.
        let median = |xs: &[f64]| {
            crate::figures::oracle_summary(crate::figures::OracleCounts {
                authoring_minutes: xs.to_vec(),
                ..Default::default()
            })
            .authoring_minutes_median
        };
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
