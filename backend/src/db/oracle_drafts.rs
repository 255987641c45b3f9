//! Oracle authoring: a maintainer's draft oracle for a report without a
//! deterministic one, its measured authoring time (from opening the form,
//! paused and resumed), its validation tries, and, once it fails on buggy and
//! passes on fixed, the report's new oracle and route in one transaction.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use failpass_shared::api::oracles::AuthoringGroup;
use failpass_shared::api::reports::Oracle;
use failpass_shared::model::{OracleKind, OracleSource};
use failpass_shared::routing::RoutingDecision;

use super::{ProjectScope, StorageResult};

/// What the form holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DraftFields {
    pub kind: OracleKind,
    /// Run in each environment's run directory (`python3 candidate.py` when blank).
    pub command: String,
    /// The test or script, written as `candidate.py` for the command to run.
    pub script: String,
    /// Tests that must keep passing on fixed, one a line.
    pub pass_to_pass: String,
    /// For `crash_signature`: the exception line buggy must show.
    pub signature: String,
    pub repeats: i32,
    /// Queue the refine loop once the oracle is stored.
    pub queue_agents: bool,
}

/// A draft as stored.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct OracleDraft {
    pub id: i64,
    pub report_id: i64,
    pub author: String,
    /// The report's route and category when the maintainer started.
    pub route_before: String,
    pub category: String,
    pub kind: String,
    pub command: String,
    pub script: String,
    pub pass_to_pass: String,
    pub signature: String,
    pub repeats: i32,
    pub queue_agents: bool,
    /// `open`, `validating`, `validated`, `abandoned` or `superseded`.
    pub status: String,
    pub started_at: DateTime<Utc>,
    /// When the clock last started; `None` while paused (or once validated).
    pub resumed_at: Option<DateTime<Utc>>,
    pub active_seconds: f64,
    pub tries: i32,
    /// The last validation's outcome (JSON `DraftResult`).
    pub last_result: Option<String>,
    pub validated_at: Option<DateTime<Utc>>,
}

/// A validation's outcome, kept on the draft and shown on its page.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DraftResult {
    pub validated: bool,
    pub verdict: String,
    pub reason: String,
    /// Each side's runs: exit and the output's tail.
    pub runs: Vec<DraftRun>,
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DraftRun {
    pub environment: String,
    pub exit: String,
    pub output_tail: String,
}

impl OracleDraft {
    /// Authoring seconds so far: the banked time plus the running stretch.
    pub fn seconds_at(&self, now: DateTime<Utc>) -> f64 {
        let running = self.resumed_at.map_or(0.0, |r| ((now - r).num_milliseconds() as f64 / 1000.0).max(0.0));
        self.active_seconds + running
    }

    pub fn paused(&self) -> bool {
        self.resumed_at.is_none() && self.status != "validated"
    }

    pub fn fields(&self) -> DraftFields {
        DraftFields {
            kind: self.kind.parse().unwrap_or(OracleKind::FailToPass),
            command: self.command.clone(),
            script: self.script.clone(),
            pass_to_pass: self.pass_to_pass.clone(),
            signature: self.signature.clone(),
            repeats: self.repeats,
            queue_agents: self.queue_agents,
        }
    }

    pub fn result(&self) -> Option<DraftResult> {
        self.last_result.as_deref().and_then(|t| serde_json::from_str(t).ok())
    }
}

impl DraftFields {
    /// The oracle these fields describe (source `authored`), or what is wrong, naming the field.
    pub fn oracle(&self) -> Result<Oracle, String> {
        if !self.kind.is_deterministic() {
            return Err(format!("kind: `{}` is not deterministic; write fail_to_pass or crash_signature", self.kind));
        }
        if !(1..=20).contains(&self.repeats) {
            return Err(format!("repeats: {} is not 1 to 20", self.repeats));
        }
        if self.script.trim().is_empty() && self.command.trim().is_empty() {
            return Err("script: write the test (or give a command that runs one in the environment)".into());
        }
        for (field, value) in [("command", &self.command), ("script", &self.script), ("signature", &self.signature)] {
            if value.contains('\0') {
                return Err(format!("{field}: holds a NUL character"));
            }
            if value.len() > 200_000 {
                return Err(format!("{field}: is longer than 200000 bytes"));
            }
        }
        let signature = Some(self.signature.trim().to_owned()).filter(|s| !s.is_empty());
        if self.kind == OracleKind::CrashSignature && signature.is_none() {
            return Err("signature: a crash signature oracle needs the exception line buggy must show".into());
        }
        let oracle = Oracle {
            kind: self.kind,
            source: Some(OracleSource::Authored),
            command: Some(self.command.trim().to_owned()).filter(|c| !c.is_empty()),
            fail_to_pass: Vec::new(),
            pass_to_pass: self
                .pass_to_pass
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect(),
            signature,
            repeats: Some(self.repeats as u32),
            authoring_minutes: None,
        };
        let mut check = oracle.clone();
        // A fail_to_pass oracle without a command runs the script (`python3 candidate.py`).
        if check.kind == OracleKind::FailToPass && check.command.is_none() {
            check.command = Some("python3 candidate.py".into());
        }
        check.validate().map_err(|e| format!("{}: {}", e.field.trim_start_matches("oracle."), e.message))?;
        Ok(oracle)
    }
}

#[async_trait]
pub trait OracleDraftStore: Send + Sync {
    /// The author's open (or validating) draft for the report, if any.
    async fn open_oracle_draft(&self, report_id: i64, author: &str) -> StorageResult<Option<OracleDraft>>;

    /// The author's open draft for the report, or a new one whose clock
    /// starts at `since` (when the form was opened; the caller bounds it),
    /// with the report's current route and category.
    async fn start_oracle_draft(
        &self,
        report_id: i64,
        author: &str,
        since: chrono::DateTime<chrono::Utc>,
    ) -> StorageResult<OracleDraft>;

    async fn oracle_draft(&self, id: i64) -> StorageResult<Option<OracleDraft>>;

    /// The report's newest draft, whoever wrote it.
    async fn latest_oracle_draft(&self, report_id: i64) -> StorageResult<Option<OracleDraft>>;

    /// Closes an open draft without an oracle (its time is kept, as spent).
    async fn abandon_oracle_draft(&self, id: i64) -> StorageResult<()>;

    /// Saves the form of an open draft. `Conflict` while a validation runs.
    async fn save_oracle_draft(&self, id: i64, fields: &DraftFields) -> StorageResult<OracleDraft>;

    /// Saves the form, counts a try, marks the draft validating (starting
    /// the clock again if it was paused) and queues `job`, in one
    /// transaction. `Conflict` while a validation runs.
    async fn start_oracle_validation(
        &self,
        id: i64,
        fields: &DraftFields,
        job: &super::queue::NewJob,
    ) -> StorageResult<(OracleDraft, failpass_shared::api::jobs::Job)>;

    /// Stops (banking the time so far) or restarts the draft's clock.
    async fn pause_oracle_draft(&self, id: i64, pause: bool) -> StorageResult<OracleDraft>;

    /// Ends try `try_no` of a validation (`None`: whichever runs, for a job
    /// that failed for good); a later try, or a closed draft, is left alone.
    /// Validated: in one transaction the draft is closed with its authoring
    /// time up to now, and the report takes the routing `decision` with the
    /// new oracle (its minutes filled in), an `oracle` activity by the
    /// author and, if the draft asked and the route is `agent_first`, a
    /// queued refine loop. A report that gained an oracle meanwhile keeps it
    /// (the draft is closed as `superseded`). Otherwise the draft is open
    /// again with the result. The minutes stored, when validated.
    async fn finish_oracle_validation(
        &self,
        id: i64,
        try_no: Option<i32>,
        result: &DraftResult,
        validated: Option<&RoutingDecision>,
    ) -> StorageResult<Option<f64>>;

    /// Authoring figures by category and starting route (reports in scope).
    async fn authoring_rows(&self, project: Option<&str>, scope: &ProjectScope) -> StorageResult<Vec<AuthoringGroup>>;
}
