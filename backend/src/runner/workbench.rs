//! What every executor shares: the storage, the environment cache, the
//! sandbox's limits and scratch directory. It runs a candidate once in an
//! environment (sandboxed, as a user of its own) and reads what the run
//! showed, and computes the static signals.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use failpass_shared::api::attempts::Signal;
use failpass_shared::api::jobs::Environment;
use failpass_shared::api::reports::{Oracle, Report};
use failpass_shared::grading::{self, Criteria, EnvironmentUsed, Observation};
use failpass_shared::model::{EnvironmentRole, OracleKind, RunEnvironment, RunTrigger, SignalSource};

use super::JobError;
use super::env::{BuiltEnv, EnvCache};
use super::sandbox::{self, Command, Limits};
use crate::db::{NewRun, Storage};

/// Most repeats an oracle may ask for.
pub const MAX_REPEATS: u32 = 20;

/// The command a run executes: the oracle's, or the candidate script.
const DEFAULT_COMMAND: &str = "python3 candidate.py";

#[derive(Clone)]
pub struct Workbench {
    pub storage: Arc<dyn Storage>,
    pub envs: EnvCache,
    /// The package index releases are listed from.
    pub index: crate::releases::index::PackageIndex,
    /// Where relative environment directories resolve.
    pub base: PathBuf,
    /// Limits for each run of a candidate.
    pub limits: Limits,
    /// Where run directories are made.
    pub scratch: PathBuf,
    /// Run candidates even when the sandbox cannot give them users of their own.
    pub allow_unsandboxed: bool,
    /// Set once the run user was seen to read the environment cache
    /// (a failed check is repeated, so fixing the permissions needs no restart).
    access: Arc<std::sync::OnceLock<()>>,
}

impl Workbench {
    pub fn new(storage: Arc<dyn Storage>, data_dir: &Path) -> Self {
        Self {
            storage,
            envs: EnvCache::new(data_dir.join("envs")),
            index: crate::releases::Settings::default().index(data_dir),
            base: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            limits: Limits {
                wall: Duration::from_secs(60),
                cpu_seconds: 60,
                memory_bytes: 2 << 30,
                ..Limits::default()
            },
            // Run directories live in the system's temporary directory,
            // away from the data directory.
            scratch: std::env::temp_dir().join("failpass-runs"),
            allow_unsandboxed: false,
            access: Arc::default(),
        }
    }

    /// Whether candidates may run here at all: refused (permanently) when the
    /// runner cannot give them users of their own and was not told to run
    /// them anyway; failed (transiently) when the run user cannot read the
    /// environment cache.
    pub async fn preflight(&self) -> Result<(), JobError> {
        if !sandbox::switches_user() && !self.allow_unsandboxed {
            return Err(JobError::permanent(
                "this runner is not root, so candidates cannot run as users of their own and would run as failpass's own user \
                 (and could change its data); run the workers as root, or pass --allow-unsandboxed-runs on a machine nobody else uses",
            ));
        }
        self.check_access().await
    }

    /// The repeats an oracle asks for, within bounds.
    pub fn repeats(oracle: &Oracle) -> u32 {
        oracle.repeats.unwrap_or(1).clamp(1, MAX_REPEATS)
    }

    /// Fails (transiently, with what to do) when candidates would run as a
    /// user that cannot read the environment cache: every run would fail
    /// for a reason that is not the candidate's. Only where runs see the
    /// host's file system (root without namespaces); in a root of their own
    /// their environment is bound whatever the host's modes on the way.
    async fn check_access(&self) -> Result<(), JobError> {
        if !sandbox::switches_user() || sandbox::pid_isolation_available() || self.access.get().is_some() {
            return Ok(());
        }
        let root = self.envs.root().to_path_buf();
        let scratch = self.scratch.clone();
        let fail = JobError::transient;
        prepare_scratch(&scratch).map_err(|e| fail(format!("creating {}: {e}", scratch.display())))?;
        std::fs::create_dir_all(&root).map_err(|e| fail(format!("creating {}: {e}", root.display())))?;
        let dir = root.to_string_lossy().into_owned();
        let probe = Command::new("/bin/sh", ["-c", "test -r \"$1\" && test -x \"$1\"", "probe", dir.as_str()]);
        match sandbox::run(&probe, Some(&scratch)).await {
            Ok(r) if r.succeeded() => {
                let _ = self.access.set(());
                Ok(())
            }
            Ok(r) => Err(fail(format!(
                "candidates run as users of their own (uid {}, the worker is root) but see the host's file system (this \
                 process cannot create namespaces), and cannot read the environment cache {}; make the data directory \
                 and its parents readable (chmod o+rx), or give the worker CAP_SYS_ADMIN",
                r.uid.unwrap_or_default(),
                root.display()
            ))),
            Err(e) => Err(fail(format!("checking access to {}: {e}", root.display()))),
        }
    }

    /// One run of the candidate (or the oracle's command) in `env`.
    #[tracing::instrument(name = "run", skip_all, fields(env = %env.dir.display()))]
    pub async fn run_once(
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

    /// A finished run as storage takes it.
    pub fn new_run(
        &self,
        runner: &str,
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
            runner_id: Some(runner.to_owned()),
            started_at: None,
            iteration: None,
            release: None,
            isolation: Some(r.isolation),
        }
    }
}

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

/// The directory run directories go in. Others may pass through to their
/// own run's directory, not list the others (a run in a root of its own
/// does not see this directory at all; without namespaces it passes through).
fn prepare_scratch(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711))
}

/// The project's environment with `role` (and `name`, if given).
pub fn find<'a>(envs: &'a [Environment], role: EnvironmentRole, name: Option<&str>) -> Option<&'a Environment> {
    envs.iter().find(|e| e.role == role && name.is_none_or(|n| e.name == n))
}

/// An environment as a grade records it.
pub fn used(e: &Environment, built: &BuiltEnv) -> EnvironmentUsed {
    EnvironmentUsed {
        name: e.name.clone(),
        version: built.version.clone(),
        recipe_hash: built.hash.clone(),
        built_now: built.built_now,
    }
}

/// What grading `report`'s runs by `oracle` needs.
pub fn criteria(oracle: &Oracle, report: &Report) -> Criteria {
    Criteria {
        kind: oracle.kind,
        fail_to_pass: oracle.fail_to_pass.clone(),
        pass_to_pass: oracle.pass_to_pass.clone(),
        signature: oracle.signature.clone().filter(|_| oracle.kind == OracleKind::CrashSignature),
        expects_hang: grading::describes_hang(&format!("{}\n{}", report.summary.title, report.body)),
    }
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
pub async fn static_signals(code: &str, scratch: &Path) -> Result<(Signal, Option<Signal>), JobError> {
    let check = |args: &[&str]| {
        let mut c = Command::new("python3", args.iter().copied());
        c.files.push(("candidate.py".into(), code.as_bytes().to_vec()));
        c.limits = Limits { wall: Duration::from_secs(30), cpu_seconds: 30, ..Limits::default() };
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
