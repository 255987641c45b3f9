//! Bulk intake: every format is turned into [`ImportRecord`]s, and one
//! [`Importer`] stores them.
//!
//! Batches continue past bad records: a record that does not parse or
//! validate is rejected with its line (or record) number and field, and
//! every other record is stored. Nothing is half-written: each record is
//! written whole or not at all (attempts go in batched transactions; a
//! storage failure aborts the import with the batch rolled back, and the
//! records before it stay stored). Line formats stream in constant memory.

pub mod github;
pub mod junit;
pub mod mapping;
pub mod swebench;

use failpass_shared::api::attempts::CreateAttemptRequest;
use failpass_shared::api::import::{ImportRecord, ImportSummary, Outcome};
use std::collections::HashMap;

use failpass_shared::routing::{RoutingConfig, RoutingInput, decide_with};
use tokio::io::AsyncBufRead;

use crate::auth::{Action, Viewer};
use crate::db::{NewReport, Storage, StorageError};

/// Attempts per storage transaction, from the command line. A write moves
/// each rollup group it touches once, so larger batches write fewer group
/// rows per attempt, and hold more in memory: the 1,010,001 records of
/// `gen_attempts.py 1000000` into SQLite took 25.6 to 30.3 s at 50,000 (peak
/// RSS 245 MB) and 26.9 to 27.9 s at 25,000 (135 MB, with the writer's
/// 16 MiB page cache); issue 36's budget is 150 MB.
pub const ATTEMPT_BATCH: usize = 25000;
/// Reports per storage transaction, from the command line.
pub const REPORT_BATCH: usize = 5000;
/// Attempts and reports per storage transaction in the server, which keeps
/// its memory small ([`Importer::in_server`]).
pub const SERVER_BATCHES: (usize, usize) = (20000, 2000);
/// Parsed NDJSON lines handed from the reading task to the importer at a time.
const PARSE_CHUNK: usize = 1024;
/// …or fewer, once their text reaches this many bytes.
const PARSE_CHUNK_BYTES: usize = 16 << 20;

/// The formats `failpass import --format` and `POST /api/v1/import?format=` take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// failpass's own lossless format: one `{"kind": …}` record per line.
    Ndjson,
    /// SWE-bench instances, JSON Lines or a JSON array.
    SwebenchInstances,
    /// The SWE-bench site's `leaderboards.json` (or `info_for_leaderboard.json`).
    SwebenchLeaderboard,
    /// GitHub REST issues (JSON Lines or an array), or `gh issue list --json …` output.
    GithubIssues,
    /// Any CSV, described by a mapping file (`--mapping`).
    Csv,
    /// Any JSON array (or JSON Lines) of objects, described by a mapping file.
    Json,
    /// JUnit XML test results: one run of an attempt (`--attempt`, `--environment`).
    Junit,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "ndjson" => Ok(Format::Ndjson),
            "swebench-instances" => Ok(Format::SwebenchInstances),
            "swebench-leaderboard" => Ok(Format::SwebenchLeaderboard),
            "github-issues" => Ok(Format::GithubIssues),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "junit" => Ok(Format::Junit),
            _ => Err(format!(
                "unknown format `{s}`, expected one of: ndjson, swebench-instances, swebench-leaderboard, github-issues, csv, json, junit"
            )),
        }
    }
}

/// Called after every stored batch with the summary so far.
type Progress<'a> = Box<dyn FnMut(&ImportSummary) + Send + 'a>;

/// Stores records in order, batching attempts, and keeps the summary.
pub struct Importer<'a> {
    storage: &'a dyn Storage,
    routing: &'a RoutingConfig,
    /// Each project's classifier, trained once per import.
    models: HashMap<String, Option<failpass_shared::routing::Classifier>>,
    boilerplate: HashMap<String, failpass_shared::routing::Boilerplate>,
    summary: ImportSummary,
    /// The batch's attempts, and the input record each came from.
    attempts: Vec<CreateAttemptRequest>,
    attempt_records: Vec<u64>,
    reports: Vec<(u64, failpass_shared::api::reports::CreateReportRequest)>,
    progress: Option<Progress<'a>>,
    gate: Gate,
    /// Records were checked for NUL characters as they were read (NDJSON lines).
    nul_checked: bool,
    /// Records created when the planner's statistics were last refreshed.
    analyzed_at: u64,
    /// Attempts, then reports, stored per transaction.
    batches: (usize, usize),
    /// Whether each report this import stored is vague, by (project,
    /// external id), for its attempts' notes (the first [`MAX_REMEMBERED`]).
    vague: HashMap<(String, String), bool>,
}

/// How many reports an import remembers the vagueness of (a bulk import of
/// a million reports keeps its memory flat; later attempts' notes treat
/// their report as clear).
const MAX_REMEMBERED: usize = 200_000;

/// A vague report's reason without its numbers (`short (12 < 80
/// characters), no code block` → `short, no code block`), to count by.
fn vague_reason(evidence: &str) -> String {
    let mut out = String::with_capacity(evidence.len());
    let mut depth = 0usize;
    for c in evidence.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split(',').map(str::trim).filter(|p| !p.is_empty()).collect::<Vec<_>>().join(", ")
}

/// Who is importing, and what each record may touch. Every record is
/// checked against its own project: a token of one project cannot write
/// into another through a line that names it, and a project the importer may
/// not see is refused exactly as a missing one is.
struct Gate {
    viewer: Viewer,
    /// New projects' visibility when a record does not say.
    default_public: bool,
    /// Decisions so far, per (project, action): `Some(why)` is a refusal.
    decided: std::collections::HashMap<(String, Action), Option<(String, String)>>,
    /// Projects of reports and attempts named by id, looked up once.
    report_projects: std::collections::HashMap<i64, Option<String>>,
    attempt_projects: std::collections::HashMap<i64, Option<String>>,
}

/// A refusal: the field at fault and why.
type Refusal = Option<(String, String)>;

impl Gate {
    /// Whether the importer may take `action` in `project`.
    async fn allow(
        &mut self,
        storage: &dyn Storage,
        action: Action,
        project: &str,
        hidden: impl FnOnce() -> (String, String),
    ) -> Result<Refusal, StorageError> {
        if self.viewer.is_admin() {
            return Ok(None);
        }
        let key = (project.to_owned(), action);
        if let Some(d) = self.decided.get(&key) {
            return Ok(d.clone());
        }
        let decision = if storage.get_project(project, &self.viewer.scope()).await?.is_none() {
            Some(hidden())
        } else {
            self.viewer.require(action, project).err().map(|e| ("project".to_owned(), e.to_string()))
        };
        self.decided.insert(key, decision.clone());
        Ok(decision)
    }

    /// Whether `record` may be stored by this importer.
    async fn check(&mut self, storage: &dyn Storage, record: &ImportRecord) -> Result<Refusal, StorageError> {
        if self.viewer.is_admin() {
            return Ok(None);
        }
        let missing_project = |slug: &str| {
            let (field, message) = match crate::db::common::no_project(slug) {
                StorageError::Invalid { field, message } => (field, message),
                other => ("project".to_owned(), other.to_string()),
            };
            move || (field, message)
        };
        match record {
            ImportRecord::Project(p) => {
                let Some(existing) = storage.get_project(&p.slug, &self.viewer.scope()).await? else {
                    return Ok(Some((
                        "slug".into(),
                        format!("project `{}` does not exist, and only admins create projects", p.slug),
                    )));
                };
                if p.public.is_some_and(|public| public != existing.public) {
                    return Ok(Some(("public".into(), "only admins change a project's visibility".into())));
                }
                // The flag moves the project's backlog: an admin's, as on the set-up page.
                if p.benchmark.is_some_and(|b| b != existing.benchmark) {
                    return Ok(Some(("benchmark".into(), "only admins mark a project a benchmark, or not".into())));
                }
                self.allow(storage, Action::Import, &p.slug, missing_project(&p.slug)).await
            }
            ImportRecord::Agent(_) => Ok(Some((
                "kind".into(),
                "agent records are shared by every project, and only admins import them".into(),
            ))),
            ImportRecord::Environment(_) => Ok(Some((
                "kind".into(),
                "environments are recipes the runner builds, and only admins create or change them".into(),
            ))),
            ImportRecord::Report(r) => {
                self.allow(storage, Action::WriteReport, &r.project, missing_project(&r.project)).await
            }
            // Statuses, assignees and timelines are a reviewer's to set.
            ImportRecord::LifeCycle(l) => {
                self.allow(storage, Action::Review, &l.project, missing_project(&l.project)).await
            }
            ImportRecord::Attempt(a) => {
                let project = match (&a.report_id, &a.report) {
                    (Some(id), _) => self.report_project(storage, *id).await?,
                    (None, Some(k)) => Some(k.project.clone()),
                    (None, None) => return Ok(None), // storage names what is missing
                };
                let hidden =
                    || ("report".to_owned(), format!("{} does not exist", crate::db::attempts::describe_report_ref(a)));
                let Some(p) = project else { return Ok(Some(hidden())) };
                if matches!(self.viewer.principal, crate::auth::Principal::Token { .. })
                    && a.verdict_source != failpass_shared::model::VerdictSource::Llm
                {
                    return Ok(Some((
                        "verdict_source".to_owned(),
                        format!(
                            "a token records `llm` verdicts only (this one says `{}`); failpass grades them (`verify: true`)",
                            a.verdict_source
                        ),
                    )));
                }
                if let Some(refused) = self.allow(storage, Action::SubmitAttempt, &p, hidden).await? {
                    return Ok(Some(refused));
                }
                // A recorded review is history a reviewer may import, not a token's claim.
                if a.review.is_some() || a.reviewer.is_some() || a.review_comment.is_some() {
                    return self
                        .allow(storage, Action::Review, &p, hidden)
                        .await
                        .map(|r| r.map(|(_, m)| ("review".to_owned(), m)));
                }
                Ok(None)
            }
            ImportRecord::Run(r) => {
                let project = match (&r.attempt_id, &r.attempt) {
                    (Some(id), _) => self.attempt_project(storage, *id).await?,
                    (None, Some(k)) => Some(k.report.project.clone()),
                    (None, None) => return Ok(None),
                };
                let hidden = || {
                    ("attempt".to_owned(), format!("{} does not exist", crate::db::attempts::describe_attempt_ref(r)))
                };
                match project {
                    Some(p) => self.allow(storage, Action::SubmitAttempt, &p, hidden).await,
                    None => Ok(Some(hidden())),
                }
            }
        }
    }

    async fn report_project(&mut self, storage: &dyn Storage, id: i64) -> Result<Option<String>, StorageError> {
        if let Some(p) = self.report_projects.get(&id) {
            return Ok(p.clone());
        }
        let p = storage.report_project(id, &self.viewer.scope()).await?;
        self.report_projects.insert(id, p.clone());
        Ok(p)
    }

    async fn attempt_project(&mut self, storage: &dyn Storage, id: i64) -> Result<Option<String>, StorageError> {
        if let Some(p) = self.attempt_projects.get(&id) {
            return Ok(p.clone());
        }
        let p = storage.attempt_project(id, &self.viewer.scope()).await?;
        self.attempt_projects.insert(id, p.clone());
        Ok(p)
    }
}

impl<'a> Importer<'a> {
    /// An importer with the operator's rights (the command line).
    pub fn new(storage: &'a dyn Storage, routing: &'a RoutingConfig) -> Self {
        Self {
            storage,
            routing,
            models: HashMap::new(),
            boilerplate: HashMap::new(),
            summary: ImportSummary::default(),
            attempts: Vec::new(),
            attempt_records: Vec::new(),
            reports: Vec::new(),
            progress: None,
            nul_checked: false,
            analyzed_at: 0,
            batches: (ATTEMPT_BATCH, REPORT_BATCH),
            vague: HashMap::new(),
            gate: Gate {
                viewer: Viewer::operator(),
                default_public: true,
                decided: Default::default(),
                report_projects: Default::default(),
                attempt_projects: Default::default(),
            },
        }
    }

    /// The records come from failpass itself (the scale demo), whose text
    /// holds no NUL character: the per-record check is skipped.
    pub(crate) fn text_checked(mut self) -> Self {
        self.nul_checked = true;
        self
    }

    /// Stores smaller batches, as the server does ([`SERVER_BATCHES`]).
    pub fn in_server(mut self) -> Self {
        self.batches = SERVER_BATCHES;
        self
    }

    /// Imports as `viewer` (an HTTP caller): each record is checked against its project.
    pub fn as_viewer(mut self, viewer: Viewer) -> Self {
        self.gate.viewer = viewer;
        self
    }

    /// The projects the importer may see.
    pub fn scope(&self) -> crate::db::ProjectScope {
        self.gate.viewer.scope()
    }

    /// New projects are private unless a record says otherwise.
    pub fn private_by_default(mut self, private: bool) -> Self {
        self.gate.default_public = !private;
        self
    }

    /// Checks that the importer may add a run to attempt `id` (JUnit uploads);
    /// `Some((field, why))` when not.
    pub async fn may_add_run(&mut self, id: i64) -> Result<Refusal, StorageError> {
        let hidden = || ("attempt".to_owned(), format!("attempt {id} does not exist"));
        match self.gate.attempt_project(self.storage, id).await? {
            _ if self.gate.viewer.is_admin() => Ok(None),
            Some(p) => self.gate.allow(self.storage, Action::SubmitAttempt, &p, hidden).await,
            None => Ok(Some(hidden())),
        }
    }

    pub fn storage(&self) -> &'a dyn Storage {
        self.storage
    }

    /// Called after every stored batch with the summary so far.
    pub fn on_progress(mut self, f: impl FnMut(&ImportSummary) + Send + 'a) -> Self {
        self.progress = Some(Box::new(f));
        self
    }

    /// Counts a record stored outside the batching paths (a run).
    pub fn count(&mut self, outcome: Outcome) {
        self.summary.count(outcome);
    }

    /// Counts a record that is deliberately not imported (a pull request).
    pub fn skip(&mut self, _why: String) {
        self.summary.records += 1;
        self.summary.skipped += 1;
    }

    /// Rejects record `n` without storing anything.
    pub fn reject(&mut self, n: u64, field: Option<String>, message: impl Into<String>) {
        self.summary.reject(n, field, message.into());
    }

    /// Validates and stores record `n` (attempts are batched; order is kept:
    /// pending attempts are stored before any later project, report or agent).
    pub async fn push(&mut self, n: u64, record: ImportRecord) -> Result<(), StorageError> {
        if let Err(e) = record.validate() {
            self.reject(n, Some(e.field), e.message);
            return Ok(());
        }
        if !self.nul_checked
            && let Some(field) = crate::input::record_nul_field(&record)
        {
            self.reject(n, Some(field.clone()), crate::input::nul_message(&field));
            return Ok(());
        }
        // Reports are checked as their batch is stored (they also arrive through `push_reports`).
        if !matches!(record, ImportRecord::Report(_))
            && let Some((field, message)) = self.gate.check(self.storage, &record).await?
        {
            self.reject(n, Some(field), message);
            return Ok(());
        }
        match record {
            // Runs of one kind are batched; a record of another kind first
            // stores what is pending, so input order is kept.
            ImportRecord::Attempt(a) => {
                self.flush_reports().await?;
                self.attempts.push(a);
                self.attempt_records.push(n);
                if self.attempts.len() >= self.batches.0 {
                    self.flush().await?;
                }
            }
            ImportRecord::Report(r) => {
                self.flush_attempts().await?;
                self.reports.push((n, r));
                if self.reports.len() >= self.batches.1 {
                    self.flush().await?;
                }
            }
            ImportRecord::Project(p) => {
                self.flush().await?;
                let out = self.storage.import_projects(std::slice::from_ref(&p), self.gate.default_public).await?;
                self.summary.count(out[0]);
            }
            ImportRecord::Agent(a) => {
                self.flush().await?;
                let out = self.storage.import_agents(std::slice::from_ref(&a)).await?;
                self.summary.count(out[0]);
            }
            ImportRecord::Environment(e) => {
                self.flush().await?;
                let existing = self.storage.list_environments(&e.project).await?;
                let before = existing.iter().find(|x| x.name == e.name.trim());
                let clash = existing.iter().find(|x| {
                    x.role == e.role
                        && x.name != e.name.trim()
                        && !matches!(e.role, failpass_shared::model::EnvironmentRole::Release)
                });
                if let Some(other) = clash {
                    self.reject(
                        n,
                        Some("role".into()),
                        format!("project {} already has a {} environment, `{}`", e.project, e.role, other.name),
                    );
                    return Ok(());
                }
                let outcome = match before {
                    Some(x) if x.role == e.role && x.recipe == e.recipe => Ok(Outcome::Unchanged),
                    _ => self
                        .storage
                        .create_environment(&e.project, &e)
                        .await
                        .map(|_| if before.is_some() { Outcome::Updated } else { Outcome::Created }),
                };
                match outcome {
                    Err(StorageError::NotFound(_)) => {
                        self.reject(n, Some("project".into()), format!("project `{}` does not exist", e.project))
                    }
                    out => self.record(n, out),
                }
            }
            ImportRecord::Run(r) => {
                self.flush().await?;
                match self.storage.import_run(&r).await {
                    Err(StorageError::NotFound(what)) => {
                        self.reject(n, Some("attempt".into()), format!("{what} does not exist"))
                    }
                    out => self.record(n, out),
                }
            }
            ImportRecord::LifeCycle(l) => {
                self.flush().await?;
                let Some(id) = self.storage.find_report(&l.project, &l.external_id).await? else {
                    let why = format!(
                        "report #{} of {} is not in failpass (its report record comes first)",
                        l.external_id, l.project
                    );
                    self.reject(n, Some("external_id".into()), why);
                    return Ok(());
                };
                let duplicate_of = match &l.duplicate_of {
                    None => None,
                    Some(d) => match self.storage.find_report(&l.project, d).await? {
                        Some(d) => Some(d),
                        None => {
                            self.reject(
                                n,
                                Some("duplicate_of".into()),
                                format!("report #{d} of {} is not in failpass", l.project),
                            );
                            return Ok(());
                        }
                    },
                };
                let out = self.storage.import_life_cycle(id, &l, duplicate_of).await;
                self.record(n, out);
            }
        }
        Ok(())
    }

    /// Stores reports in one transaction (after anything pending).
    pub async fn push_reports(
        &mut self,
        reports: Vec<(u64, failpass_shared::api::reports::CreateReportRequest)>,
    ) -> Result<(), StorageError> {
        self.flush().await?;
        self.store_reports(reports).await
    }

    async fn store_reports(
        &mut self,
        reports: Vec<(u64, failpass_shared::api::reports::CreateReportRequest)>,
    ) -> Result<(), StorageError> {
        if reports.is_empty() {
            return Ok(());
        }
        let mut numbers = Vec::with_capacity(reports.len());
        let mut news = Vec::with_capacity(reports.len());
        for (n, mut r) in reports {
            r.normalize();
            if let Err(e) = r.validate() {
                self.reject(n, Some(e.field), e.message);
                continue;
            }
            let record = ImportRecord::Report(r);
            if !self.nul_checked
                && let Some(field) = crate::input::record_nul_field(&record)
            {
                self.reject(n, Some(field.clone()), crate::input::nul_message(&field));
                continue;
            }
            if let Some((field, message)) = self.gate.check(self.storage, &record).await? {
                self.reject(n, Some(field), message);
                continue;
            }
            let ImportRecord::Report(r) = record else { unreachable!() };
            if !self.models.contains_key(&r.project) {
                let m = crate::triage::project_model(self.storage, self.routing, &r.project).await?;
                self.models.insert(r.project.clone(), m);
                let b = crate::triage::project_boilerplate(self.storage, &r.project).await?;
                self.boilerplate.insert(r.project.clone(), b);
            }
            let input = RoutingInput::from_request(&r).with_boilerplate(self.boilerplate.get(&r.project));
            let decision = decide_with(self.routing, self.models[&r.project].as_ref(), &input);
            numbers.push(n);
            news.push(NewReport { request: r, decision, origin: Default::default() });
        }
        let out = batch_or_each(self.storage, &news, |s, batch| s.import_reports(batch), "report").await?;
        for ((n, o), new) in numbers.into_iter().zip(out).zip(&news) {
            if matches!(o, Ok(Outcome::Created | Outcome::Updated)) {
                self.note_report(new);
            }
            self.record(n, o);
        }
        self.tick();
        self.keep_statistics().await
    }

    fn record(&mut self, n: u64, outcome: Result<Outcome, StorageError>) {
        match outcome {
            Ok(o) => self.summary.count(o),
            Err(StorageError::Invalid { field, message }) => self.reject(n, Some(field), message),
            Err(StorageError::NotFound(what)) => {
                self.reject(n, Some("report".into()), format!("{what} does not exist"))
            }
            Err(StorageError::Conflict(m)) => self.reject(n, None, m),
            Err(other) => self.reject(n, None, format!("the database refused it: {other}")),
        }
    }

    /// Stores everything pending, in input order.
    async fn flush(&mut self) -> Result<(), StorageError> {
        self.flush_reports().await?;
        self.flush_attempts().await
    }

    async fn flush_reports(&mut self) -> Result<(), StorageError> {
        let pending = std::mem::take(&mut self.reports);
        self.store_reports(pending).await?;
        self.keep_statistics().await
    }

    /// When the records created reach 50,000 and each time they double
    /// after that, the planner learns the tables' new sizes (as autovacuum's
    /// threshold, proportional: an `ANALYZE` at 1,000,000 attempts takes 2 s).
    async fn keep_statistics(&mut self) -> Result<(), StorageError> {
        const FIRST: u64 = 50_000;
        if self.summary.created >= FIRST.max(2 * self.analyzed_at) {
            self.analyzed_at = self.summary.created;
            self.storage.refresh_statistics().await?;
        }
        Ok(())
    }

    async fn flush_attempts(&mut self) -> Result<(), StorageError> {
        if self.attempts.is_empty() {
            return Ok(());
        }
        let reqs = std::mem::take(&mut self.attempts);
        let numbers = std::mem::take(&mut self.attempt_records);
        let out = batch_or_each(self.storage, &reqs, |s, batch| s.import_attempts(batch), "attempt").await?;
        for ((n, o), req) in numbers.into_iter().zip(out).zip(&reqs) {
            if matches!(o, Ok(Outcome::Created | Outcome::Updated)) {
                self.note_attempt(req);
            }
            self.record(n, o);
        }
        self.tick();
        Ok(())
    }

    /// Counts what the figures will make of a stored report (the summary's notes).
    fn note_report(&mut self, new: &NewReport) {
        let r = &new.request;
        let key = (r.project.clone(), r.external_id.trim().to_owned());
        if new.decision.vague {
            self.summary.notes.vague_reports += 1;
            let why = new.decision.explanation.iter().find(|e| e.rule == "vague").map(|e| e.evidence.as_str());
            *self.summary.notes.vague_why.entry(vague_reason(why.unwrap_or("vague"))).or_default() += 1;
        }
        if self.vague.len() < MAX_REMEMBERED {
            self.vague.insert(key, new.decision.vague);
        }
    }

    /// Counts what the figures will make of a stored attempt: its cost,
    /// its time, and whether it waits for a person to count.
    fn note_attempt(&mut self, a: &CreateAttemptRequest) {
        let notes = &mut self.summary.notes;
        notes.without_cost += u64::from(a.cost_usd.is_none());
        notes.without_time += u64::from(a.wall_seconds.is_none() && (a.started_at.is_none() || a.ended_at.is_none()));
        let vague = a
            .report
            .as_ref()
            .and_then(|k| self.vague.get(&(k.project.clone(), k.external_id.trim().to_owned())))
            .copied()
            .unwrap_or(false);
        notes.awaiting_review += u64::from(failpass_shared::model::attempt_awaits_review(
            a.goal,
            a.verdict,
            a.verdict_source,
            a.review,
            vague,
        ));
    }

    /// Adds a re-import's changes by field to the summary.
    pub fn count_changed(&mut self, changed: std::collections::BTreeMap<String, u64>) {
        for (field, n) in changed {
            *self.summary.changed.entry(field).or_default() += n;
        }
    }

    fn tick(&mut self) {
        if let Some(p) = self.progress.as_mut() {
            p(&self.summary);
        }
    }

    pub async fn finish(mut self) -> Result<ImportSummary, StorageError> {
        self.flush().await?;
        // Attempts are judged when their batch is stored, so restore input order.
        self.summary.rejections.sort_by_key(|r| r.record);
        crate::metrics::imported(&self.summary);
        Ok(self.summary)
    }
}

/// What a batch store answers: one outcome per record.
type BatchOutcomes = Result<Vec<Result<Outcome, StorageError>>, StorageError>;

/// A batch store in progress (a storage method's future).
type StoreFuture<'x> = std::pin::Pin<Box<dyn std::future::Future<Output = BatchOutcomes> + Send + 'x>>;

/// Stores `items` as one batch with `store`. When the database refuses the
/// batch for something about its records (not a full disk or a lost
/// connection), they are stored one by one, so one record the database
/// refuses takes no other with it.
async fn batch_or_each<T>(
    storage: &dyn Storage,
    items: &[T],
    store: for<'x> fn(&'x dyn Storage, &'x [T]) -> StoreFuture<'x>,
    what: &str,
) -> BatchOutcomes {
    match store(storage, items).await {
        Err(e) if e.unavailable().is_none() && items.len() > 1 => {
            tracing::warn!(error.cause_chain = ?e, "{what} batch failed; storing its records one by one");
            let mut out = Vec::with_capacity(items.len());
            for one in items {
                out.push(match store(storage, std::slice::from_ref(one)).await {
                    Ok(mut o) => o.pop().unwrap_or(Ok(Outcome::Unchanged)),
                    Err(e) if e.unavailable().is_none() => Err(e),
                    Err(e) => return Err(e),
                });
            }
            Ok(out)
        }
        other => other,
    }
}

/// Options some formats take.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// The project records belong to when the input does not say (`gh issue list` output).
    pub project: Option<String>,
    /// How a CSV's columns become reports and attempts (`--format csv`).
    pub mapping: Option<mapping::Mapping>,
    /// Where the input file lives: a mapping's relative join file is looked up there.
    pub input_dir: Option<std::path::PathBuf>,
    /// For JUnit results: the attempt the run belongs to and where it ran.
    pub attempt: Option<i64>,
    pub environment: Option<failpass_shared::model::RunEnvironment>,
}

/// Reads `input` in `format` and stores it.
pub async fn run<R>(
    importer: &mut Importer<'_>,
    format: Format,
    mut input: R,
    options: &ImportOptions,
) -> anyhow::Result<()>
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    crate::input::skip_bom(&mut input).await?;
    match format {
        Format::Ndjson => {
            // Lines are checked for NUL characters as text (cheaply), so records need no second look.
            importer.nul_checked = true;
            // Lines are read and parsed on another task while batches are
            // stored, so parsing and writing use both cores. The channel is
            // bounded, so memory stays constant however long the input.
            let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<(u64, Result<ImportRecord, LineError>)>>(4);
            let reader = tokio::spawn(async move {
                let (mut line, mut n) = (String::new(), 0u64);
                let mut chunk = Vec::with_capacity(PARSE_CHUNK);
                // A chunk is handed over at PARSE_CHUNK records or PARSE_CHUNK_BYTES of
                // text, so the records in flight stay small however long the lines.
                let mut bytes = 0usize;
                while let Some(read) = next_line(&mut input, &mut line, &mut n).await? {
                    bytes += line.len();
                    chunk.push((n, read.map_err(LineError::Encoding).and_then(|()| parse_line(n, line.trim()))));
                    if chunk.len() == PARSE_CHUNK || bytes >= PARSE_CHUNK_BYTES {
                        bytes = 0;
                        if tx.send(std::mem::replace(&mut chunk, Vec::with_capacity(PARSE_CHUNK))).await.is_err() {
                            return Ok(()); // the importer stopped; its error is reported
                        }
                    }
                }
                let _ = tx.send(chunk).await;
                Ok::<_, std::io::Error>(())
            });
            while let Some(chunk) = rx.recv().await {
                for (n, parsed) in chunk {
                    match parsed {
                        Ok(record) => importer.push(n, record).await?,
                        Err(LineError::Json(e)) => importer.reject(n, json_field(&e), format!("line {n}: {e}")),
                        Err(LineError::Encoding(message)) => importer.reject(n, None, message),
                        Err(LineError::Nul(field)) => importer.reject(
                            n,
                            Some(field.clone()),
                            format!("line {n}: {}", crate::input::nul_message(&field)),
                        ),
                    }
                }
            }
            reader.await.map_err(|e| anyhow::anyhow!("reading the input: {e}"))??;
        }
        Format::SwebenchInstances => swebench::import_instances(importer, input).await?,
        Format::GithubIssues => github::import_issues(importer, input, options.project.as_deref()).await?,
        Format::Junit => junit::import_junit(importer, input, options.attempt, options.environment).await?,
        Format::Csv | Format::Json => {
            let m = options
                .mapping
                .as_ref()
                .ok_or_else(|| anyhow::anyhow!("--format csv and json need --mapping FILE.toml"))?;
            let dir = options.input_dir.as_deref();
            if format == Format::Csv {
                mapping::import_csv(importer, input, m, dir).await?
            } else {
                mapping::import_json(importer, input, m, dir).await?
            }
        }
        Format::SwebenchLeaderboard => {
            let text = crate::input::read_document(input, "a leaderboard").await?;
            swebench::import_leaderboard(importer, &text).await?;
        }
    }
    Ok(())
}

/// Reads the next non-blank line into `line`; `n` counts every line read, so
/// it is the line number for messages. `Ok(None)` at the end of the input;
/// `Ok(Some(Err(_)))` for a line that is not UTF-8 (the caller rejects it
/// and goes on, as with any bad record).
pub(crate) async fn next_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut String,
    n: &mut u64,
) -> std::io::Result<Option<Result<(), String>>> {
    let mut bytes = Vec::new();
    loop {
        line.clear();
        let Some(whole) = crate::input::read_line_capped(input, &mut bytes).await? else { return Ok(None) };
        *n += 1;
        if !whole {
            return Ok(Some(Err(format!(
                "line {n}: longer than the {} MiB limit for one line; nothing of it was stored",
                crate::input::LINE_LIMIT >> 20
            ))));
        }
        match String::from_utf8(std::mem::take(&mut bytes)) {
            Err(e) => return Ok(Some(Err(format!("line {n}: not UTF-8 ({})", e.utf8_error())))),
            Ok(text) => *line = text,
        }
        if !line.trim().is_empty() {
            return Ok(Some(Ok(())));
        }
    }
}

/// Why a line is not a record.
enum LineError {
    Encoding(String),
    Json(serde_json::Error),
    /// A field holding a NUL character.
    Nul(String),
}

/// One NDJSON line as a record, refused when a field holds a NUL character.
fn parse_line(n: u64, text: &str) -> Result<ImportRecord, LineError> {
    let _ = n;
    if crate::input::may_hold_nul(text.as_bytes())
        && let Some(field) =
            serde_json::from_str::<serde_json::Value>(text).ok().as_ref().and_then(crate::input::nul_path)
    {
        return Err(LineError::Nul(field));
    }
    parse_record(text).map_err(LineError::Json)
}

/// Parses one NDJSON record. Lines that start `{"kind":"attempt",` (the bulk
/// of any large import, as failpass itself writes them) skip serde's
/// buffering of internally tagged enums and parse straight into the struct.
pub fn parse_record(text: &str) -> Result<ImportRecord, serde_json::Error> {
    if let Some(rest) = strip_attempt_tag(text) {
        let mut direct = String::with_capacity(rest.len() + 1);
        direct.push('{');
        direct.push_str(rest);
        return serde_json::from_str(&direct).map(ImportRecord::Attempt);
    }
    serde_json::from_str(text)
}

/// `{ "kind" : "attempt" ,` (any spacing) → the rest of the object.
fn strip_attempt_tag(text: &str) -> Option<&str> {
    let mut rest = text.strip_prefix('{')?;
    for token in ["\"kind\"", ":", "\"attempt\"", ","] {
        rest = rest.trim_start().strip_prefix(token)?;
    }
    Some(rest)
}

/// The field a serde error names (`missing field `title``), if any.
pub fn json_field(e: &serde_json::Error) -> Option<String> {
    let msg = e.to_string();
    let start = msg.find('`')? + 1;
    let end = start + msg[start..].find('`')?;
    let name = &msg[start..end];
    (msg.contains("field") && !name.is_empty()).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempt_lines_parse_alike_on_both_paths() {
        for line in [
            r#"{"kind":"attempt","report_id":1,"agent":"a","verdict":"error","verdict_source":"deterministic"}"#,
            r#"{ "kind" : "attempt" , "report_id": 1, "agent": "a", "verdict": "error", "verdict_source": "deterministic"}"#,
        ] {
            let fast = parse_record(line).unwrap();
            let slow: ImportRecord = serde_json::from_str(line).unwrap();
            assert_eq!(fast, slow);
        }
        let e = parse_record(r#"{"kind":"attempt","agent":"a","bogus":1}"#).unwrap_err().to_string();
        assert!(e.contains("unknown field `bogus`"), "{e}");
        assert_eq!(strip_attempt_tag(r#"{"kind":"report","x":1}"#), None);
    }
}
