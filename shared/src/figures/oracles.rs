//! The oracle figures (docs/domain.md, "Figures"): coverage, in-patch share,
//! authoring time, failure causes and LLM-verdict precision, from the counts
//! storage hands over.

use crate::api::oracles::{CauseCount, IN_PATCH_REFERENCE, KindCount, OracleSummary, Share, SourceCount};
use crate::model::{FailureCause, OracleKind, OracleSource};

use super::median_sorted;

/// What storage counts for the oracle figures of a scope.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OracleCounts {
    /// Reports by their oracle's kind and source (`None` kind: no oracle).
    pub reports: Vec<(Option<OracleKind>, Option<OracleSource>, i64)>,
    /// Authoring minutes of every oracle that records them.
    pub authoring_minutes: Vec<f64>,
    /// Reproduction attempts by failure cause.
    pub failure_causes: Vec<(FailureCause, i64)>,
    /// LLM-judged leads a deterministic check graded later, and how many of
    /// them it reproduced.
    pub llm_judged: i64,
    pub llm_right: i64,
}

/// The oracle figures from their counts.
pub fn oracle_summary(counts: OracleCounts) -> OracleSummary {
    let mut reports = 0;
    let mut by_kind: Vec<KindCount> = Vec::new();
    let mut by_source: Vec<SourceCount> = Vec::new();
    let (mut deterministic, mut in_patch) = (0, 0);
    for (kind, source, n) in counts.reports {
        reports += n;
        let kind = kind.unwrap_or(OracleKind::None);
        match by_kind.iter_mut().find(|k| k.kind == kind) {
            Some(k) => k.reports += n,
            None => by_kind.push(KindCount { kind, reports: n }),
        }
        if kind.is_deterministic() {
            deterministic += n;
            if source == Some(OracleSource::InPatchTest) {
                in_patch += n;
            }
            match by_source.iter_mut().find(|s| s.source == source) {
                Some(s) => s.reports += n,
                None => by_source.push(SourceCount { source, reports: n }),
            }
        }
    }
    by_kind.sort_by(|a, b| b.reports.cmp(&a.reports).then(a.kind.cmp(&b.kind)));
    by_source.sort_by(|a, b| b.reports.cmp(&a.reports).then(a.source.cmp(&b.source)));
    let mut minutes = counts.authoring_minutes;
    minutes.sort_by(f64::total_cmp);
    let mut causes = counts.failure_causes;
    causes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.as_str().cmp(b.0.as_str())));
    OracleSummary {
        llm_precision: Share::new(counts.llm_right, counts.llm_judged),
        reports,
        by_kind,
        by_source,
        coverage: Share::new(deterministic, reports),
        in_patch: Share::new(in_patch, reports),
        in_patch_reference: IN_PATCH_REFERENCE,
        authored_oracles: minutes.len() as i64,
        // Tidied: an empty f64 sum is -0.0, which would print as such.
        authoring_minutes_total: super::tidy(minutes.iter().sum::<f64>()),
        authoring_minutes_median: median_sorted(&minutes),
        failure_causes: causes.into_iter().map(|(cause, attempts)| CauseCount { cause, attempts }).collect(),
        authoring: Vec::new(),
        validated_within_hour: None,
        authoring_html: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_authoring_minutes_total_zero_not_minus_zero() {
        let s = oracle_summary(OracleCounts::default());
        assert_eq!(s.authoring_minutes_total.to_bits(), 0.0f64.to_bits());
        assert_eq!(serde_json::to_string(&s.authoring_minutes_total).unwrap(), "0.0");
    }

    #[test]
    fn coverage_sources_minutes_and_causes() {
        use OracleKind::{CrashSignature, FailToPass, LlmJudge};
        let s = oracle_summary(OracleCounts {
            reports: vec![
                (None, None, 4),
                (Some(FailToPass), Some(OracleSource::InPatchTest), 3),
                (Some(CrashSignature), Some(OracleSource::Authored), 2),
                (Some(FailToPass), None, 1),
                (Some(LlmJudge), None, 2),
            ],
            authoring_minutes: vec![30.0, 10.0, 20.0, 40.0],
            failure_causes: vec![(FailureCause::Timeout, 2), (FailureCause::NoFailure, 5), (FailureCause::EnvSetup, 2)],
            llm_judged: 4,
            llm_right: 1,
        });
        assert_eq!(s.reports, 12);
        assert_eq!((s.coverage.count, s.coverage.of), (6, 12), "fail_to_pass and crash_signature count");
        assert_eq!((s.in_patch.count, s.in_patch.of), (3, 12));
        let kinds: Vec<_> = s.by_kind.iter().map(|k| (k.kind, k.reports)).collect();
        assert_eq!(kinds, [(FailToPass, 4), (OracleKind::None, 4), (CrashSignature, 2), (LlmJudge, 2)]);
        let sources: Vec<_> = s.by_source.iter().map(|k| (k.source, k.reports)).collect();
        assert_eq!(sources, [(Some(OracleSource::InPatchTest), 3), (Some(OracleSource::Authored), 2), (None, 1)]);
        assert_eq!((s.authored_oracles, s.authoring_minutes_total, s.authoring_minutes_median), (4, 100.0, Some(25.0)));
        let causes: Vec<_> = s.failure_causes.iter().map(|c| (c.cause, c.attempts)).collect();
        assert_eq!(
            causes,
            [(FailureCause::NoFailure, 5), (FailureCause::EnvSetup, 2), (FailureCause::Timeout, 2)],
            "most first, then by name"
        );
        assert_eq!(s.llm_precision.rate, Some(0.25));
        assert_eq!(oracle_summary(OracleCounts::default()).coverage.rate, None);
    }
}
