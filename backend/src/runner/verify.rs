//! Grading one attempt by execution: build the environments, check the
//! candidate statically, run it (repeatedly, if the oracle asks) on buggy and
//! fixed, grade the runs by the report's oracle, and compute the four signals.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::SubsecRound;
use failpass_shared::api::attempts::{Signal, Signals};
use failpass_shared::api::jobs::{Environment, Job, JobPayload};
use failpass_shared::api::reports::{Oracle, Report};
use failpass_shared::grading::{self, Criteria, Observation};
use failpass_shared::model::{
    EnvironmentRole, FailureCause, JobKind, OracleKind, RunEnvironment, RunTrigger, SignalSource, Verdict,
};
use serde_json::json;

use super::env::{BuiltEnv, EnvCache};
use super::sandbox::{self, Command, Limits};
use crate::db::jobs::Verification;
use crate::db::{NewRun, ProjectScope, Storage, StorageError};

/// A job that could not be carried out (as opposed to a candidate that failed).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct JobError {
    pub message: String,
    /// Retrying cannot help (the attempt is gone, the payload is wrong).
    pub permanent: bool,
}

impl JobError {
    pub fn permanent(message: impl Into<String>) -> Self {
        Self { message: message.into(), permanent: true }
    }
    pub fn transient(message: impl Into<String>) -> Self {
        Self { message: message.into(), permanent: false }
    }
}

impl From<StorageError> for JobError {
    fn from(e: StorageError) -> Self {
        JobError::transient(format!("storage: {e}"))
    }
}

/// Most repeats an oracle may ask for.
pub const MAX_REPEATS: u32 = 20;

/// Runs verification jobs.
#[derive(Clone)]
pub struct Verifier {
    pub storage: Arc<dyn Storage>,
    pub envs: EnvCache,
    /// Where relative environment directories resolve.
    pub base: PathBuf,
    pub runner_id: String,
    /// Limits for each run of a candidate.
    pub limits: Limits,
    /// Where run directories are made.
    pub scratch: PathBuf,
    /// Where the refine loop's candidates come from, and its try budget.
    pub generator: super::refine::Generator,
    pub refine_budget: u32,
    /// Run candidates even when the sandbox cannot give them users of their own.
    pub allow_unsandboxed: bool,
    /// Set once the run user was seen to read the environment cache
    /// (a failed check is repeated, so fixing the permissions needs no restart).
    access: Arc<std::sync::OnceLock<()>>,
}

/// The command a run executes: the oracle's, or the candidate script.
const DEFAULT_COMMAND: &str = "python3 candidate.py";

impl Verifier {
    pub fn new(storage: Arc<dyn Storage>, data_dir: &Path, runner_id: impl Into<String>) -> Self {
        Self {
            storage,
            envs: EnvCache::new(data_dir.join("envs")),
            base: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            runner_id: runner_id.into(),
            limits: Limits {
                wall: Duration::from_secs(60),
                cpu_seconds: 60,
                memory_bytes: 2 << 30,
                ..Limits::default()
            },
            // Run directories live in the system's temporary directory: a
            // candidate runs as `nobody` (when the worker is root), and the
            // data directory's parents may not be open to it.
            scratch: std::env::temp_dir().join("failpass-runs"),
            generator: super::refine::Generator::Snippet,
            refine_budget: super::refine::DEFAULT_BUDGET,
            allow_unsandboxed: false,
            access: Arc::default(),
        }
    }

    /// What a run must not see: the environment cache (other projects'
    /// environments); its own environment is mounted back.
    pub fn hidden(&self) -> Vec<PathBuf> {
        vec![self.envs.root().to_path_buf()]
    }

    /// Fails (transiently, with what to do) when candidates would run as a
    /// user that cannot read the environment cache: every run would fail
    /// for a reason that is not the candidate's.
    async fn check_access(&self) -> Result<(), JobError> {
        if !sandbox::switches_user() || self.access.get().is_some() {
            return Ok(());
        }
        let root = self.envs.root().to_path_buf();
        let scratch = self.scratch.clone();
        let fail = JobError::transient;
        prepare_scratch(&scratch).map_err(|e| fail(format!("creating {}: {e}", scratch.display())))?;
        std::fs::create_dir_all(&root).map_err(|e| fail(format!("creating {}: {e}", root.display())))?;
        let dir = root.to_string_lossy().into_owned();
        let mut probe = Command::new("/bin/sh", ["-c", "test -r \"$1\" && test -x \"$1\"", "probe", dir.as_str()]);
        probe.binds.push((root.clone(), false));
        match sandbox::run(&probe, Some(&scratch)).await {
            Ok(r) if r.succeeded() => {
                let _ = self.access.set(());
                Ok(())
            }
            Ok(r) => Err(fail(format!(
                "candidates run as users of their own (uid {}, the worker is root), which cannot read the environment cache {}; \
                 make the data directory and its parents readable (chmod o+rx)",
                r.uid.unwrap_or_default(),
                root.display()
            ))),
            Err(e) => Err(fail(format!("checking access to {}: {e}", root.display()))),
        }
    }

    /// Verifies (or re-checks) the attempt a job names.
    pub async fn run_job(&self, job: &Job) -> Result<Verification, JobError> {
        if !sandbox::switches_user() && !self.allow_unsandboxed {
            return Err(JobError::permanent(
                "this runner is not root, so candidates cannot run as users of their own and would run as failpass's own user \
                 (and could change its data); run the workers as root, or pass --allow-unsandboxed-runs on a machine nobody else uses",
            ));
        }
        self.check_access().await?;
        if job.kind == JobKind::Refine {
            return super::refine::run(self, &self.generator, self.refine_budget, job).await;
        }
        let attempt_id = job.payload.attempt_id.ok_or_else(|| JobError::permanent("the job names no attempt_id"))?;
        let detail = self
            .storage
            .get_attempt(attempt_id, &ProjectScope::All)
            .await?
            .ok_or_else(|| JobError::permanent(format!("attempt {attempt_id} does not exist")))?;
        let report = self
            .storage
            .get_report(detail.attempt.report_id, &ProjectScope::All)
            .await?
            .ok_or_else(|| JobError::permanent(format!("report {} does not exist", detail.attempt.report_id)))?;
        let environments = self.storage.list_environments(&report.summary.project).await?;
        let candidate = detail.attempt.candidate.clone();
        match job.kind {
            JobKind::Recheck => {
                self.recheck(
                    attempt_id,
                    &report,
                    candidate.as_deref(),
                    &environments,
                    &job.payload,
                    &detail.attempt.grade,
                )
                .await
            }
            _ => self.verify(attempt_id, &report, candidate.as_deref(), &environments, trigger(&job.payload)).await,
        }
    }

    /// Grades `candidate` for `report` on its project's buggy and fixed
    /// environments. What the candidate did is a result (any verdict, an
    /// `error` for a failed setup); a run that could not start at all is the
    /// runner's trouble, not the candidate's, and fails the job (transiently).
    pub async fn verify(
        &self,
        attempt_id: i64,
        report: &Report,
        candidate: Option<&str>,
        environments: &[Environment],
        trigger: RunTrigger,
    ) -> Result<Verification, JobError> {
        let error = |cause: FailureCause, reason: String, extra: serde_json::Value| Verification {
            attempt_id,
            verdict: Verdict::Error,
            failure_cause: Some(cause),
            signals: Signals::default(),
            flaky: false,
            grade: json!({ "reason": reason, "detail": extra }),
            runs: Vec::new(),
            sets_verdict: true,
            refined: None,
            new_attempt: None,
        };
        let Some(oracle) = report.oracle.as_ref().filter(|o| o.is_deterministic()) else {
            return Ok(error(
                FailureCause::Other,
                "the report has no deterministic oracle to grade by".into(),
                json!(null),
            ));
        };
        let (Some(buggy), Some(fixed)) =
            (find(environments, EnvironmentRole::Buggy, None), find(environments, EnvironmentRole::Fixed, None))
        else {
            return Ok(error(
                FailureCause::EnvSetup,
                format!(
                    "project {} has no buggy and fixed environment to run in (POST /api/v1/environments)",
                    report.summary.project
                ),
                json!(null),
            ));
        };
        if candidate.is_none() && oracle.command.is_none() {
            return Ok(error(
                FailureCause::Other,
                "nothing to run: the attempt has no candidate and the oracle no command".into(),
                json!(null),
            ));
        }
        let (buggy_env, fixed_env) =
            match (self.envs.get(&buggy.recipe, &self.base).await, self.envs.get(&fixed.recipe, &self.base).await) {
                (Ok(b), Ok(f)) => (b, f),
                (Err(e), _) | (_, Err(e)) => {
                    return Ok(error(FailureCause::EnvSetup, e.to_string(), json!({ "setup_log": e.log })));
                }
            };
        let mut signals = Signals::default();
        if let Some(code) = candidate {
            let (syntax, quality) = static_signals(code, &self.scratch, &self.hidden()).await?;
            let (relevant, detail) = grading::relevance(&format!("{}\n{}", report.summary.title, report.body), code);
            signals.relevance =
                Some(Signal { passed: relevant, source: SignalSource::Deterministic, detail: Some(detail) });
            signals.quality = quality;
            let parses = syntax.passed;
            let syntax_detail = syntax.detail.clone().unwrap_or_default();
            signals.syntax = Some(syntax);
            if !parses {
                return Ok(Verification {
                    attempt_id,
                    verdict: Verdict::NotReproduced,
                    failure_cause: Some(FailureCause::Other),
                    signals,
                    flaky: false,
                    grade: json!({ "reason": format!("the candidate does not parse: {syntax_detail}") }),
                    runs: Vec::new(),
                    sets_verdict: true,
                    refined: None,
                    new_attempt: None,
                });
            }
        }
        let repeats = oracle.repeats.unwrap_or(1).clamp(1, MAX_REPEATS);
        let mut runs = Vec::new();
        let mut observed = [Vec::new(), Vec::new()];
        for (side, (env_role, env)) in
            [(RunEnvironment::Buggy, &buggy_env), (RunEnvironment::Fixed, &fixed_env)].into_iter().enumerate()
        {
            for _ in 0..repeats {
                let (obs, run) = self
                    .execute(oracle, candidate, env)
                    .await
                    .map_err(|e| JobError::transient(format!("a run could not start: {e}")))?;
                runs.push(self.new_run(attempt_id, trigger, env_role, run, &obs));
                observed[side].push(obs);
            }
        }
        let criteria = criteria(oracle, report);
        let g = grading::grade(&criteria, &observed[0], &observed[1]);
        let buggy_sigs = signatures(&observed[0]);
        let report_exception = failpass_shared::routing::exception_line(&report.body).map(str::to_owned);
        let failure_shown = match (&report_exception, oracle.signature.as_deref()) {
            (_, Some(sig)) => observed[0].iter().all(|o| grading::signature_matches(sig, &o.output)),
            (Some(exc), None) => observed[0].iter().all(|o| grading::signature_matches(exc, &o.output)),
            (None, None) => g.buggy_failed == g.buggy_runs,
        };
        signals.failure_behaviour = Some(Signal {
            passed: failure_shown,
            source: SignalSource::Deterministic,
            detail: Some(match buggy_sigs.first() {
                Some(s) => format!("buggy shows {s}"),
                None => {
                    format!("buggy exits {}", observed[0].iter().map(exit_text).collect::<Vec<_>>().join(", "))
                }
            }),
        });
        let failure_cause = (g.verdict != Verdict::Reproduced).then(|| {
            if g.flaky {
                FailureCause::Other
            } else if observed[0].iter().any(|o| o.timed_out) {
                FailureCause::Timeout
            } else if g.buggy_failed == 0 && observed[0].iter().any(|o| o.exit_status != Some(0)) {
                FailureCause::WrongFailure // it fails, but not the way the oracle says
            } else if g.buggy_failed == 0 {
                FailureCause::NoFailure
            } else {
                FailureCause::WrongFailure // fails on fixed too, or breaks other tests
            }
        });
        Ok(Verification {
            attempt_id,
            verdict: g.verdict,
            failure_cause,
            signals,
            flaky: g.flaky,
            grade: json!({
                "reason": g.reason,
                "flaky": g.flaky,
                "buggy_failed": g.buggy_failed,
                "buggy_runs": g.buggy_runs,
                "fixed_passed": g.fixed_passed,
                "fixed_runs": g.fixed_runs,
                "new_failures": g.new_failures,
                "buggy_signatures": buggy_sigs,
                "fixed_signatures": signatures(&observed[1]),
                "environments": { "buggy": env_label(buggy, &buggy_env), "fixed": env_label(fixed, &fixed_env) },
            }),
            runs,
            sets_verdict: true,
            refined: None,
            new_attempt: None,
        })
    }

    /// Runs a reproduced attempt's candidate against another environment
    /// (a newer release): `still_reproduces` when it still fails there,
    /// `no_longer_reproduces` when it passes, `regressed` when it fails again
    /// after an earlier re-check found it fixed.
    async fn recheck(
        &self,
        attempt_id: i64,
        report: &Report,
        candidate: Option<&str>,
        environments: &[Environment],
        payload: &JobPayload,
        previous: &Option<serde_json::Value>,
    ) -> Result<Verification, JobError> {
        let name =
            payload.environment.as_deref().ok_or_else(|| JobError::permanent("a re-check names no environment"))?;
        let target = environments.iter().find(|e| e.name == name).ok_or_else(|| {
            JobError::permanent(format!("project {} has no environment `{name}`", report.summary.project))
        })?;
        let oracle = report.oracle.clone().unwrap_or_default();
        let mut grade = previous.clone().filter(|g| g.is_object()).unwrap_or_else(|| json!({}));
        let env = match self.envs.get(&target.recipe, &self.base).await {
            Ok(env) => env,
            Err(e) => {
                grade["recheck"] = json!({ "environment": name, "outcome": "error", "reason": e.to_string(), "setup_log": e.log, "at": chrono::Utc::now().trunc_subsecs(0) });
                return Ok(Verification {
                    attempt_id,
                    verdict: Verdict::Error,
                    failure_cause: None,
                    signals: Signals::default(),
                    flaky: false,
                    grade,
                    runs: Vec::new(),
                    sets_verdict: false,
                    refined: None,
                    new_attempt: None,
                });
            }
        };
        let repeats = oracle.repeats.unwrap_or(1).clamp(1, MAX_REPEATS);
        let criteria = criteria(&oracle, report);
        let mut runs = Vec::new();
        let mut failed = 0;
        for _ in 0..repeats {
            let (obs, run) =
                self.execute(&oracle, candidate, &env).await.map_err(|e| JobError::transient(e.to_string()))?;
            failed += u32::from(grading::failed(&criteria, &obs));
            runs.push(self.new_run(attempt_id, RunTrigger::Scheduled, RunEnvironment::Release, run, &obs));
        }
        let was_fixed = grade.pointer("/recheck/outcome").and_then(|v| v.as_str()) == Some("no_longer_reproduces");
        let outcome = match (failed == repeats, failed == 0) {
            (true, _) if was_fixed => "regressed",
            (true, _) => "still_reproduces",
            (_, true) => "no_longer_reproduces",
            _ => "flaky",
        };
        let version = env.version.clone().unwrap_or_else(|| name.to_owned());
        grade["recheck"] = json!({
            "environment": name, "version": version, "outcome": outcome, "failed": failed, "runs": repeats, "at": chrono::Utc::now().trunc_subsecs(0),
        });
        Ok(Verification {
            attempt_id,
            verdict: Verdict::Reproduced,
            failure_cause: None,
            signals: Signals::default(),
            flaky: outcome == "flaky",
            grade,
            runs,
            sets_verdict: false,
            refined: None,
            new_attempt: None,
        })
    }

    /// One run of the candidate (or the oracle's command) in `env`.
    async fn execute(
        &self,
        oracle: &Oracle,
        candidate: Option<&str>,
        env: &BuiltEnv,
    ) -> Result<(Observation, sandbox::Finished), sandbox::SandboxError> {
        prepare_scratch(&self.scratch)?;
        let dir = tempfile::Builder::new().prefix("run-").tempdir_in(&self.scratch)?;
        let script = oracle.command.clone().unwrap_or_else(|| DEFAULT_COMMAND.to_owned());
        let mut cmd = Command::new("/bin/sh", ["-c", script.as_str()]);
        cmd.limits = self.limits;
        cmd.binds.push((env.dir.clone(), false));
        cmd.hide = self.hidden();
        cmd.env = env.vars.clone();
        cmd.env.push(("FAILPASS_ENV".into(), env.dir.to_string_lossy().into_owned()));
        let junit = dir.path().join("junit.xml");
        cmd.env.push(("FAILPASS_JUNIT".into(), junit.to_string_lossy().into_owned()));
        if let Some(code) = candidate {
            cmd.files.push(("candidate.py".into(), code.as_bytes().to_vec()));
        }
        let finished = sandbox::run_in(&cmd, dir.path()).await?;
        let run_uid = finished.uid;
        let report = tokio::task::spawn_blocking(move || read_run_file(&junit, run_uid)).await.ok().flatten();
        let (failing_tests, passing_tests) = match report.and_then(|x| crate::import::junit::parse(&x).ok()) {
            Some(r) => (r.failing, r.passing),
            None => (Vec::new(), Vec::new()),
        };
        let obs = Observation {
            exit_status: finished.exit_status,
            timed_out: finished.timed_out,
            output: finished.output.clone(),
            failing_tests,
            passing_tests,
        };
        Ok((obs, finished))
    }

    fn new_run(
        &self,
        attempt_id: i64,
        trigger: RunTrigger,
        environment: RunEnvironment,
        r: sandbox::Finished,
        obs: &Observation,
    ) -> NewRun {
        NewRun {
            attempt_id,
            trigger,
            environment,
            exit_status: r.exit_status.or(r.signal.map(|s| 128 + s)),
            timed_out: r.timed_out,
            duration_ms: r.duration.as_millis() as i64,
            output_truncated: r.output_truncated,
            output_bytes: r.output_bytes as i64,
            output: r.output,
            failing_tests: obs.failing_tests.clone(),
            passing_tests: obs.passing_tests.clone(),
            runner_id: Some(self.runner_id.clone()),
            started_at: None,
        }
    }
}

/// The directory run directories go in, open for the run user to pass through.
/// A file the run wrote (its JUnit report), read by the worker without
/// trusting it: not followed through a symlink, not a FIFO or device (which
/// could block or never end), owned by the run's user, and at most the
/// import's document limit. `None` for anything else.
fn read_run_file(path: &Path, uid: Option<u32>) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.file_type().is_file() || uid.is_some_and(|u| meta.uid() != u) {
        return None;
    }
    let mut text = String::new();
    file.take(crate::input::DOCUMENT_LIMIT).read_to_string(&mut text).ok()?;
    Some(text)
}

fn prepare_scratch(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    // Others may pass through to their own run's directory, not list the others.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711))
}

fn trigger(payload: &JobPayload) -> RunTrigger {
    if payload.manual { RunTrigger::Rerun } else { RunTrigger::Initial }
}

fn find<'a>(envs: &'a [Environment], role: EnvironmentRole, name: Option<&str>) -> Option<&'a Environment> {
    envs.iter().find(|e| e.role == role && name.is_none_or(|n| e.name == n))
}

fn env_label(e: &Environment, built: &BuiltEnv) -> serde_json::Value {
    json!({ "name": e.name, "version": built.version, "recipe_hash": built.hash, "built_now": built.built_now })
}

fn criteria(oracle: &Oracle, report: &Report) -> Criteria {
    Criteria {
        kind: oracle.kind,
        fail_to_pass: oracle.fail_to_pass.clone(),
        pass_to_pass: oracle.pass_to_pass.clone(),
        signature: oracle.signature.clone().filter(|_| oracle.kind == OracleKind::CrashSignature),
        expects_hang: grading::describes_hang(&format!("{}\n{}", report.summary.title, report.body)),
    }
}

fn signatures(observed: &[Observation]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in observed.iter().filter_map(|o| grading::failure_signature(&o.output)) {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

fn exit_text(o: &Observation) -> String {
    if o.timed_out { "timeout".into() } else { o.exit_status.map_or("killed".into(), |s| s.to_string()) }
}

/// Whether pyflakes can be imported by the Python that sandboxed runs use
/// (probed once, in the sandbox).
async fn pyflakes_available(scratch: &Path) -> bool {
    static AVAILABLE: tokio::sync::OnceCell<bool> = tokio::sync::OnceCell::const_new();
    *AVAILABLE
        .get_or_init(|| async {
            let probe = Command::new("python3", ["-c", "import pyflakes"]);
            sandbox::run(&probe, Some(scratch)).await.is_ok_and(|r| r.succeeded())
        })
        .await
}

/// Syntax from Python's own compiler; quality from pyflakes when installed
/// (`None`, not computed, otherwise).
pub async fn static_signals(
    code: &str,
    scratch: &Path,
    hide: &[PathBuf],
) -> Result<(Signal, Option<Signal>), JobError> {
    let check = |args: &[&str]| {
        let mut c = Command::new("python3", args.iter().copied());
        c.files.push(("candidate.py".into(), code.as_bytes().to_vec()));
        c.limits = Limits { wall: Duration::from_secs(30), cpu_seconds: 30, ..Limits::default() };
        c.hide = hide.to_vec();
        c
    };
    let _ = prepare_scratch(scratch);
    let syntax = match sandbox::run(&check(&["-m", "py_compile", "candidate.py"]), Some(scratch)).await {
        Ok(r) if r.succeeded() => {
            Signal { passed: true, source: SignalSource::Static, detail: Some("python3 -m py_compile: ok".into()) }
        }
        Ok(r) => Signal {
            passed: false,
            source: SignalSource::Static,
            detail: Some(
                r.output.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("does not compile").trim().to_owned(),
            ),
        },
        // No Python to compile with is the runner's trouble, not the candidate's.
        Err(e) => return Err(JobError::transient(format!("python3 could not run for the syntax check: {e}"))),
    };
    let quality = if syntax.passed && pyflakes_available(scratch).await {
        match sandbox::run(&check(&["-m", "pyflakes", "candidate.py"]), Some(scratch)).await {
            Ok(r) => Some(Signal {
                passed: r.succeeded(),
                source: SignalSource::Static,
                detail: Some(if r.succeeded() {
                    "pyflakes: clean".into()
                } else {
                    format!("pyflakes: {}", r.output.lines().take(3).collect::<Vec<_>>().join("; "))
                }),
            }),
            Err(_) => None,
        }
    } else {
        None
    };
    Ok((syntax, quality))
}
