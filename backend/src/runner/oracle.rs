//! Validating a maintainer's draft oracle: its test (or command) runs on the
//! buggy and the fixed environment under its repeats, graded as any
//! candidate is. It is stored as the report's oracle (source `authored`,
//! with the measured authoring minutes) only when it fails on buggy and
//! passes on fixed; the report is then re-routed by the rule and, when the
//! maintainer asked, the refine loop is queued (in the same transaction).

use std::sync::Arc;

use failpass_shared::api::jobs::Job;
use failpass_shared::model::{RunTrigger, Verdict};
use failpass_shared::routing::{RoutingConfig, RoutingInput, decide_with};

use super::JobError;
use super::verify::Verify;
use crate::db::ProjectScope;
use crate::db::oracle_drafts::{DraftResult, DraftRun};

/// Runs from the output each side shows on the draft's page.
const TAIL: usize = 2000;

#[derive(Clone)]
pub struct ValidateOracle {
    pub verify: Verify,
    pub routing: Arc<RoutingConfig>,
}

impl ValidateOracle {
    /// Carries out one `oracle` job (see [`super::Executor`]).
    #[tracing::instrument(name = "oracle", skip_all, fields(job = job.id, draft = job.payload.oracle_draft_id))]
    pub async fn execute(&self, job: &Job, runner: &str) -> Result<(), JobError> {
        let id = job.payload.oracle_draft_id.ok_or_else(|| JobError::permanent("the job names no oracle_draft_id"))?;
        let storage = self.verify.bench.storage.clone();
        let draft = storage
            .oracle_draft(id)
            .await?
            .ok_or_else(|| JobError::permanent(format!("oracle draft {id} does not exist")))?;
        if draft.status != "validating" {
            return Ok(()); // abandoned or already validated
        }
        // This try's result only: a later try (the form sent again) is its own job.
        let try_no = Some(draft.tries);
        let mut report = storage
            .get_report(draft.report_id, &ProjectScope::All)
            .await?
            .ok_or_else(|| JobError::permanent(format!("report {} does not exist", draft.report_id)))?;
        let fields = draft.fields();
        let oracle = match fields.oracle() {
            Ok(o) => o,
            Err(why) => {
                let result = DraftResult { verdict: "error".into(), reason: why, ..Default::default() };
                storage.finish_oracle_validation(id, try_no, &result, None).await?;
                return Ok(());
            }
        };
        let environments = storage.list_environments(&report.summary.project).await?;
        report.oracle = Some(oracle.clone());
        let script = Some(fields.script.as_str()).filter(|s| !s.trim().is_empty());
        let v = self.verify.grade(runner, 0, &report, script, &environments, RunTrigger::Initial).await?;
        let validated = v.verdict == Verdict::Reproduced && !v.flaky;
        let result = DraftResult {
            validated,
            verdict: if v.flaky { "flaky".into() } else { v.verdict.as_str().into() },
            reason: v.grade.reason.clone().unwrap_or_default(),
            runs: v
                .runs
                .iter()
                .map(|r| DraftRun {
                    environment: r.environment.as_str().into(),
                    exit: if r.timed_out {
                        "timeout".into()
                    } else {
                        r.exit_status.map_or("killed".into(), |s| s.to_string())
                    },
                    output_tail: tail(&r.output),
                })
                .collect(),
        };
        if !validated {
            storage.finish_oracle_validation(id, try_no, &result, None).await?;
            return Ok(());
        }
        // The authoring minutes are filled in when it is stored (the clock runs until then).
        let model = crate::triage::project_model(storage.as_ref(), &self.routing, &report.summary.project).await?;
        let boilerplate = crate::triage::project_boilerplate(storage.as_ref(), &report.summary.project).await?;
        let mut decision = decide_with(
            &self.routing,
            model.as_ref(),
            &RoutingInput { oracle: Some(&oracle), ..RoutingInput::from_report(&report) }
                .with_boilerplate(Some(&boilerplate)),
        );
        if let Some(c) = &report.route_correction {
            decision.keep_correction(c.route);
        }
        match storage.finish_oracle_validation(id, try_no, &result, Some(&decision)).await? {
            Some(minutes) => tracing::info!(
                report = draft.report_id, route = %decision.route, minutes, tries = draft.tries, "authored oracle validated"
            ),
            None => tracing::info!(
                report = draft.report_id,
                "validated oracle not stored: a later try, or the report has one"
            ),
        }
        Ok(())
    }
}

/// The last `TAIL` bytes of a run's output (on a character boundary).
fn tail(output: &str) -> String {
    let mut start = output.len().saturating_sub(TAIL);
    while !output.is_char_boundary(start) {
        start += 1;
    }
    output[start..].to_owned()
}
