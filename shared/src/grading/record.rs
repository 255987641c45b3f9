//! What grading by execution records on an attempt (`Attempt::grade`): the
//! runner writes it, the database stores it as JSON, the API and the
//! dashboard read it, all through these types.
//!
//! Every part is optional, because a grade may stop early (a setup that
//! failed, a candidate that does not parse) and a re-check writes only its
//! own part. Rows written before these types existed read too: they have
//! the same keys, and unknown keys are ignored.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model::{RecheckOutcome, RefineStop, Verdict};

/// An attempt's grade. The run counts sit at the top level, as they always
/// have in the stored JSON; [`GradeRecord::counts`] reads them as one value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct GradeRecord {
    /// One sentence saying why: the report page shows it, the refine loop
    /// feeds it back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What a failed environment setup printed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<SetupFailure>,
    /// Repeats on one side disagreed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flaky: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buggy_failed: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buggy_runs: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_passed: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_runs: Option<u32>,
    /// `pass_to_pass` tests failing on fixed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_failures: Option<Vec<String>>,
    /// The distinct failure signatures each side showed, first seen first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buggy_signatures: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixed_signatures: Option<Vec<String>>,
    /// The environments the runs used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environments: Option<Sides>,
    /// The latest re-check against a newer release.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recheck: Option<Recheck>,
    /// Every release it was re-checked on, with the latest result there,
    /// in the order first checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rechecks: Vec<Recheck>,
    /// The refine loop that produced the candidate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refine: Option<RefineLog>,
}

/// A failed environment setup.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct SetupFailure {
    pub setup_log: String,
}

/// What the runs on each side showed: how many failed on buggy and passed
/// on fixed, of how many.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunCounts {
    pub buggy_failed: u32,
    pub buggy_runs: u32,
    pub fixed_passed: u32,
    pub fixed_runs: u32,
}

/// The buggy and the fixed environment a grade ran in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Sides {
    pub buggy: EnvironmentUsed,
    pub fixed: EnvironmentUsed,
}

/// One environment as a grade used it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct EnvironmentUsed {
    pub name: String,
    /// The library's version, as the environment reported it.
    pub version: Option<String>,
    /// The recipe's hash: the environment's identity in the cache.
    pub recipe_hash: String,
    /// Built for this grade rather than found in the cache.
    pub built_now: bool,
}

/// A re-check of a reproduced attempt against another environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Recheck {
    pub environment: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    pub outcome: RecheckOutcome,
    /// Failing runs out of `runs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs: Option<u32>,
    /// Why the environment could not be built (outcome `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_log: Option<String>,
    #[serde(default)]
    #[cfg_attr(target_arch = "wasm32", serde(deserialize_with = "crate::time::utc_opt"))]
    pub at: Option<DateTime<Utc>>,
}

/// A refine loop's record: its generator, budget, why it stopped, and each
/// iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RefineLog {
    pub generator: String,
    pub budget: u32,
    pub stop: RefineStop,
    #[serde(default)]
    pub iterations: Vec<RefineIteration>,
}

/// One iteration of a refine loop.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct RefineIteration {
    pub iteration: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub candidate_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flaky: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What the generator said when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What repeated (`candidate`), when that stopped the loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeated: Option<String>,
}

impl GradeRecord {
    /// A grade that is only a reason (nothing ran).
    pub fn because(reason: impl Into<String>) -> Self {
        Self { reason: Some(reason.into()), ..Self::default() }
    }

    /// A grade from runs on both sides: `grade`'s verdict reason, counts and
    /// new failures, with the failure signatures each side showed and the
    /// environments they ran in.
    pub fn graded(grade: super::Grade, signatures: [Vec<String>; 2], environments: Sides) -> Self {
        let [buggy, fixed] = signatures;
        Self {
            reason: Some(grade.reason),
            flaky: Some(grade.flaky),
            buggy_failed: Some(grade.buggy_failed),
            buggy_runs: Some(grade.buggy_runs),
            fixed_passed: Some(grade.fixed_passed),
            fixed_runs: Some(grade.fixed_runs),
            new_failures: Some(grade.new_failures),
            buggy_signatures: Some(buggy),
            fixed_signatures: Some(fixed),
            environments: Some(environments),
            ..Self::default()
        }
    }

    /// The run counts, when the candidate ran on both sides.
    pub fn counts(&self) -> Option<RunCounts> {
        Some(RunCounts {
            buggy_failed: self.buggy_failed.unwrap_or(0),
            buggy_runs: self.buggy_runs?,
            fixed_passed: self.fixed_passed.unwrap_or(0),
            fixed_runs: self.fixed_runs?,
        })
    }

    /// The first failure signature the buggy side showed: what groups
    /// attempts by failure.
    pub fn buggy_signature(&self) -> Option<&str> {
        self.buggy_signatures.as_ref()?.first().map(String::as_str)
    }

    /// Whether the latest re-check found the bug fixed in its release.
    pub fn recheck_found_fixed(&self) -> bool {
        self.recheck.as_ref().is_some_and(|r| r.outcome == RecheckOutcome::NoLongerReproduces)
    }

    /// This (new) grade stored over `stored`. A verification replaces the
    /// grade but keeps the latest re-check (a verification and a re-check
    /// may have run side by side); a re-check (`replaces_grade` false)
    /// replaces only the re-check.
    pub fn stored_over(self, stored: Option<GradeRecord>, replaces_grade: bool) -> GradeRecord {
        let stored = stored.unwrap_or_default();
        let mut rechecks = stored.recheck_history();
        if let Some(new) = &self.recheck {
            match rechecks.iter_mut().find(|r| r.environment == new.environment) {
                Some(r) => *r = new.clone(),
                None => rechecks.push(new.clone()),
            }
        }
        if replaces_grade {
            GradeRecord { recheck: self.recheck.or(stored.recheck), rechecks, ..self }
        } else {
            GradeRecord { recheck: self.recheck.or(stored.recheck), rechecks, ..stored }
        }
    }

    /// Every release re-checked, with its latest result (a grade stored
    /// before the history was kept has its latest re-check only).
    pub fn recheck_history(&self) -> Vec<Recheck> {
        if self.rechecks.is_empty() { self.recheck.iter().cloned().collect() } else { self.rechecks.clone() }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// Grades exactly as the runner wrote them before these types existed.
    fn old_rows() -> Vec<Value> {
        vec![
            json!({"reason": "the report has no deterministic oracle to grade by", "detail": null}),
            json!({"reason": "setup exited with status 3", "detail": {"setup_log": "pip: no such package"}}),
            json!({"reason": "the candidate does not parse: SyntaxError"}),
            json!({
                "reason": "fails on buggy (1 of 1) and passes on fixed (1 of 1)", "flaky": false,
                "buggy_failed": 1, "buggy_runs": 1, "fixed_passed": 1, "fixed_runs": 1, "new_failures": [],
                "buggy_signatures": ["ValueError: bad <n>"], "fixed_signatures": [],
                "environments": {
                    "buggy": {"name": "buggy", "version": "2.1", "recipe_hash": "ab12", "built_now": true},
                    "fixed": {"name": "fixed", "version": null, "recipe_hash": "cd34", "built_now": false}
                },
                "recheck": {"environment": "lib-2.2", "version": "2.2", "outcome": "no_longer_reproduces",
                            "failed": 0, "runs": 1, "at": "2026-11-02T10:00:00Z"}
            }),
            json!({"recheck": {"environment": "lib-2.3", "outcome": "error", "reason": "no such version",
                               "setup_log": "…", "at": "2026-11-02T10:00:00Z"}}),
            json!({
                "reason": "reproduced on iteration 2; last: fails on buggy (1 of 1) and passes on fixed (1 of 1)",
                "flaky": false, "buggy_failed": 1, "buggy_runs": 1, "fixed_passed": 1, "fixed_runs": 1,
                "new_failures": [], "buggy_signatures": [], "fixed_signatures": [],
                "refine": {"generator": "snippet", "budget": 5, "stop": "reproduced", "iterations": [
                    {"iteration": 1, "candidate_hash": "aa", "verdict": "not_reproduced", "reason": "no failure",
                     "flaky": false, "cost_usd": 0.0, "seconds": 0.25, "model": null},
                    {"iteration": 2, "candidate_hash": "bb", "repeated": "candidate", "cost_usd": 0.01, "seconds": 0.1},
                    {"iteration": 3, "error": "the agent exited 1"}
                ]}
            }),
        ]
    }

    fn without_nulls(v: Value) -> Value {
        match v {
            Value::Object(m) => {
                Value::Object(m.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, without_nulls(v))).collect())
            }
            Value::Array(a) => Value::Array(a.into_iter().map(without_nulls).collect()),
            other => other,
        }
    }

    #[test]
    fn old_rows_read_and_write_back_the_same_keys() {
        for row in old_rows() {
            let g: GradeRecord = serde_json::from_value(row.clone()).unwrap_or_else(|e| panic!("{e}: {row}"));
            let back = serde_json::to_value(&g).unwrap();
            // Every value is kept as it was; some nulls are left out now.
            assert_eq!(without_nulls(back), without_nulls(row.clone()), "{row}");
        }
        let graded: GradeRecord = serde_json::from_value(old_rows()[3].clone()).unwrap();
        assert_eq!(graded.buggy_signature(), Some("ValueError: bad <n>"));
        assert!(graded.recheck_found_fixed());
        assert_eq!(graded.counts().map(|r| (r.buggy_failed, r.fixed_runs)), Some((1, 1)));
        let partial: GradeRecord = serde_json::from_value(old_rows()[2].clone()).unwrap();
        assert_eq!((partial.counts(), partial.buggy_signature()), (None, None), "no runs, no counts");
        // A grade with signatures and no counts (written by hand) keeps its signature.
        let bare: GradeRecord = serde_json::from_value(json!({"buggy_signatures": ["E: x"], "reason": "r"})).unwrap();
        assert_eq!((bare.buggy_signature(), bare.counts()), (Some("E: x"), None));
    }

    #[test]
    fn a_verification_keeps_the_recheck_and_a_recheck_keeps_the_grade() {
        let stored: GradeRecord = serde_json::from_value(old_rows()[3].clone()).unwrap();
        let fresh = GradeRecord::because("does not fail on buggy");
        let merged = fresh.clone().stored_over(Some(stored.clone()), true);
        assert_eq!((merged.reason.as_deref(), merged.counts()), (Some("does not fail on buggy"), None));
        assert_eq!(merged.recheck, stored.recheck, "the re-check survives a verification");

        let recheck = Recheck {
            environment: "lib-2.4".into(),
            version: None,
            outcome: RecheckOutcome::Regressed,
            failed: Some(1),
            runs: Some(1),
            reason: None,
            setup_log: None,
            at: None,
        };
        let only = GradeRecord { recheck: Some(recheck.clone()), ..GradeRecord::default() };
        let merged = only.stored_over(Some(stored.clone()), false);
        assert_eq!((&merged.reason, merged.counts()), (&stored.reason, stored.counts()), "a re-check keeps the grade");
        assert_eq!(merged.buggy_signatures, stored.buggy_signatures);
        assert_eq!(merged.recheck, Some(recheck.clone()));
        // Each release keeps its latest result; the history survives a new verification.
        let on = |env: &str, outcome| GradeRecord {
            recheck: Some(Recheck { environment: env.into(), outcome, ..recheck.clone() }),
            ..GradeRecord::default()
        };
        let g = on("lib-2.2", RecheckOutcome::NoLongerReproduces).stored_over(None, false);
        let g = on("lib-2.3", RecheckOutcome::Regressed).stored_over(Some(g), false);
        let g = on("lib-2.3", RecheckOutcome::Regressed).stored_over(Some(g), false);
        let g = GradeRecord::default().stored_over(Some(g), true);
        let h: Vec<(&str, RecheckOutcome)> = g.rechecks.iter().map(|r| (r.environment.as_str(), r.outcome)).collect();
        assert_eq!(h, [("lib-2.2", RecheckOutcome::NoLongerReproduces), ("lib-2.3", RecheckOutcome::Regressed)]);
    }

    #[test]
    fn recheck_outcomes() {
        use RecheckOutcome::*;
        assert_eq!(RecheckOutcome::of(3, 3, false), StillReproduces);
        assert_eq!(RecheckOutcome::of(3, 3, true), Regressed);
        assert_eq!(RecheckOutcome::of(0, 3, true), NoLongerReproduces);
        assert_eq!(RecheckOutcome::of(1, 3, false), Flaky);
    }
}
