//! One sandboxed execution: its own directory, wall-time, CPU, memory,
//! file-size, process and output limits, a scrubbed environment, and the
//! whole process tree killed at the end.
//!
//! As root (the way runners are deployed), nothing runs as root, and a run
//! sees only what was built for it:
//!
//! - **a user of its own** from a reserved range ([`RunUser`]): runs cannot
//!   read or change each other's directories, and `RLIMIT_NPROC` on that
//!   fresh id (and a `pids.max` cgroup where one can be made) stops a fork
//!   bomb;
//! - **its own PID namespace**: when its first process ends, the kernel kills
//!   everything else in it, and a worker killed with SIGKILL takes its runs
//!   with it;
//! - **its own root** ([`root::layout`]): the system's read-only `/usr`, a
//!   minimal `/etc` and `/dev`, its own `/proc`, the CPU topology of `/sys`,
//!   fresh `/tmp`, `/var/tmp` and `/dev/shm`, the paths it was given
//!   read-only, and its directory writable; nothing else of the host;
//! - **its own network namespace**: empty, or for runs that need the network
//!   (setup, the agent command) user-mode networking without the host's
//!   loopback ([`net`]);
//! - **a system-call filter** ([`filter`]), installed last.
//!
//! Without root a run keeps the worker's user and sees the host's file
//! system and network (only the filter, its own directory and `TMPDIR`,
//! and `RLIMIT_NPROC` counted on top of the user's processes); each run's
//! record says which isolation it had ([`Isolation`]).
//!
//! The child starts a new session (`setsid`), so everything it spawns shares
//! its session id. When the main process exits or the wall limit strikes, the
//! process group is killed and `/proc` is swept for any process still in the
//! session (a child that double-forked into the background).

mod filter;
pub mod net;
mod output;
pub mod root;
mod session;
mod users;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use failpass_shared::api::attempts::{Isolation, NetworkAccess};
use tokio::io::AsyncWriteExt;

pub use filter::{REFUSED as FILTERED_CALLS, REFUSED_WITH_NAMESPACE_FLAGS as FILTERED_NAMESPACE_CALLS};
use output::{Captured, read_capped, stored_text};
use session::{SessionGuard, kill_session, threads_of};
pub use session::{alive, proc_stat, session_members};
pub use users::{RunUser, UID_COUNT, pids_cgroup_available};

/// What one run may use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Wall-clock time; the process tree is killed when it is up.
    pub wall: Duration,
    /// CPU seconds (RLIMIT_CPU: SIGXCPU, then SIGKILL a second later).
    pub cpu_seconds: u64,
    /// Address space in bytes (RLIMIT_AS): allocations beyond it fail.
    pub memory_bytes: u64,
    /// Largest file the run may write (RLIMIT_FSIZE).
    pub file_bytes: u64,
    /// Output (stdout and stderr, interleaved) kept: the first and the last
    /// half of this many bytes, the middle counted and marked as cut.
    pub output_bytes: usize,
    /// Processes (and threads) the run may have at once (RLIMIT_NPROC on its own user).
    pub processes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            wall: Duration::from_secs(120),
            cpu_seconds: 120,
            memory_bytes: 4 << 30,
            file_bytes: 256 << 20,
            output_bytes: 256 << 10,
            processes: 512,
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Command {
    pub program: String,
    pub args: Vec<String>,
    /// Variables set on top of the scrubbed environment.
    pub env: Vec<(String, String)>,
    /// Written to the process's stdin, which is then closed.
    pub stdin: Option<Vec<u8>>,
    /// Files written into the run's directory before it starts (name, contents).
    pub files: Vec<(String, Vec<u8>)>,
    pub limits: Limits,
    /// Outbound network (setup commands that download, the agent command):
    /// user-mode networking without the host's loopback, fenced off from
    /// link-local, metadata and private addresses ([`net::fenced`]). Runs
    /// without it have no network at all.
    pub network: bool,
    /// Private networks an outbound run may reach (the operator's
    /// `--run-allow-network`).
    pub allow_networks: Vec<ipnet::IpNet>,
    /// The user to run as, when the worker is root: a leased id shared by
    /// the steps of one environment build; a fresh one per run when `None`.
    pub user: Option<std::sync::Arc<RunUser>>,
    /// Host paths the run needs besides its own directory (an environment's
    /// tree, the agent command's files), at their own paths in its root,
    /// read-only unless said otherwise. Nothing else of the host is there.
    pub binds: Vec<(PathBuf, bool)>,
    /// Keep stderr apart from stdout (in [`Finished::stderr`]), for commands
    /// whose stdout is an answer (the refine loop's agent).
    pub split_stderr: bool,
}

impl Command {
    pub fn new(program: impl Into<String>, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            stdin: None,
            files: Vec::new(),
            limits: Limits::default(),
            network: false,
            allow_networks: Vec::new(),
            user: None,
            binds: Vec::new(),
            split_stderr: false,
        }
    }
}

/// Whether runs switch to a user of their own (the worker is root).
pub fn switches_user() -> bool {
    unsafe { libc::geteuid() == 0 }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// Exit status, when the process exited rather than being killed.
    pub exit_status: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// The CPU limit ended it (SIGXCPU, or SIGKILL at the hard limit).
    pub cpu_limited: bool,
    pub duration: Duration,
    /// Output kept (up to the cap), lossily decoded.
    pub output: String,
    /// Every byte the run wrote, kept or not.
    pub output_bytes: u64,
    pub output_truncated: bool,
    /// Processes still alive in the run's session when it ended, and killed.
    pub stragglers_killed: usize,
    /// The user id it ran as (`None`: the worker's own, not root).
    pub uid: Option<u32>,
    /// Its stderr, when kept apart ([`Command::split_stderr`]).
    pub stderr: String,
    /// What the sandbox gave it.
    pub isolation: Isolation,
}

impl Finished {
    /// Exited with status 0.
    pub fn succeeded(&self) -> bool {
        self.exit_status == Some(0) && !self.timed_out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("could not start `{program}`: {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("could not build the run's root: {0}")]
    Root(std::io::Error),
    #[error("sandbox: {0}")]
    Io(#[from] std::io::Error),
}

/// Whether this process may create network namespaces (root, and a kernel
/// that allows it). Probed once.
pub fn network_isolation_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| namespace_available(libc::CLONE_NEWNET))
}

/// Whether runs can get their own PID namespace (root). Then the whole tree
/// dies with its first process, and with the worker if the worker is killed.
pub fn pid_isolation_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| namespace_available(libc::CLONE_NEWPID))
}

/// Whether runs here get the system-call filter.
pub fn syscall_filter_available() -> bool {
    filter::available()
}

/// What this process can give runs, and what it cannot, in words: one line
/// per missing piece (empty when runs get everything).
pub fn missing_isolation() -> Vec<String> {
    let mut missing = Vec::new();
    if !switches_user() {
        missing.push(
            "the worker is not root: runs keep its user, see the host's file system and have the host's network".into(),
        );
    } else if !(network_isolation_available() && pid_isolation_available()) {
        missing.push(
            "this process cannot create namespaces (root without CAP_SYS_ADMIN: a container needs --cap-add SYS_ADMIN): \
             runs keep the network and see the host's file system"
                .into(),
        );
    } else if let Some(why) = net::outbound_missing() {
        missing.push(format!("setup steps and the agent command get no network: {why}"));
    }
    if !syscall_filter_available() {
        missing.push("the kernel takes no seccomp filter here: runs get no system-call filter".into());
    }
    missing
}

/// Says in the log, once, what runs will not get here. Workers call it as they start.
pub fn warn_if_isolation_missing() {
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| {
        for why in missing_isolation() {
            tracing::warn!("sandbox: {why}");
        }
    });
}

fn namespace_available(flag: libc::c_int) -> bool {
    if unsafe { libc::geteuid() } != 0 {
        return false;
    }
    let mut probe = std::process::Command::new("/bin/true");
    // SAFETY: unshare is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut probe, move || {
            if libc::unshare(flag) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    probe.status().is_ok_and(|s| s.success())
}

/// Runs `cmd` in a fresh temporary directory under `parent` (the system's
/// temporary directory when `None`), removed afterwards. Relative `program`
/// paths resolve in that directory.
pub async fn run(cmd: &Command, parent: Option<&Path>) -> Result<Finished, SandboxError> {
    let dir = match parent {
        Some(p) => {
            std::fs::create_dir_all(p)?;
            tempfile::Builder::new().prefix("run-").tempdir_in(p)?
        }
        None => tempfile::Builder::new().prefix("failpass-run-").tempdir()?,
    };
    let finished = run_in(cmd, dir.path()).await;
    // The run's user owned it; remove it whatever the run left inside.
    if let Err(e) = dir.close() {
        tracing::warn!(error = %crate::telemetry::cause_chain(&e), "removing a run's directory");
    }
    finished
}

/// Runs `cmd` with `dir` as its working directory and home.
pub async fn run_in(cmd: &Command, dir: &Path) -> Result<Finished, SandboxError> {
    use std::os::unix::fs::PermissionsExt;
    let tmp = dir.join(".tmp");
    std::fs::create_dir_all(&tmp)?;
    for (name, contents) in &cmd.files {
        std::fs::write(dir.join(name), contents)?;
    }
    // As root: a user of the run's own (the build's, when shared). The lease
    // is held until the run's processes are gone.
    let fresh;
    let user: Option<&RunUser> = match &cmd.user {
        Some(u) => Some(u),
        None => {
            fresh = RunUser::lease()?;
            fresh.as_ref()
        }
    };
    let uid = user.map(|u| u.uid);
    if let Some(uid) = uid {
        // The run's own directory becomes the run user's, and only theirs.
        for entry in [dir.to_path_buf(), tmp.clone()].into_iter().chain(cmd.files.iter().map(|(n, _)| dir.join(n))) {
            std::os::unix::fs::chown(&entry, Some(uid), Some(uid))?;
        }
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    // The network: the host's (not root), an empty namespace, or one whose
    // only way out is user-mode networking (runs that ask for the network).
    let outbound = if cmd.network && net::outbound_available() {
        let allowed = cmd.allow_networks.clone();
        Some(
            tokio::task::spawn_blocking(move || net::Outbound::start(&allowed))
                .await
                .map_err(std::io::Error::other)??,
        )
    } else {
        None
    };
    let network = match (&outbound, network_isolation_available()) {
        (Some(_), _) => NetworkAccess::Outbound,
        (None, true) => NetworkAccess::None,
        (None, false) => NetworkAccess::Host,
    };
    let join_net = outbound.as_ref().map(|o| o.ns.as_raw_fd());
    let new_net = network == NetworkAccess::None;
    let own_pids = pid_isolation_available();
    // A root of its own comes with the PID namespace (both need root).
    let plan = match uid {
        Some(uid) if own_pids => {
            let stage = users::stage()?;
            let spec = root::Spec { workdir: dir, binds: &cmd.binds, uid, network: network == NetworkAccess::Outbound };
            let entries = root::layout(&spec).map_err(SandboxError::Root)?;
            Some(std::sync::Arc::new(root::Plan::new(&entries, stage, dir, cmd.limits.file_bytes)?))
        }
        _ => None,
    };
    let built_root = plan.is_some();
    let programs = filter::programs().filter(|_| filter::available());
    // RLIMIT_NPROC counts every thread of the real user: a fresh user starts
    // at none; the worker's own user (not root) already runs the server.
    let nproc = match uid {
        Some(_) => cmd.limits.processes,
        None => threads_of(unsafe { libc::getuid() }) + cmd.limits.processes,
    };
    // Where the pids controller can be used, a cgroup of the run's own caps
    // its processes too (and holds even for a process that changes user).
    let mut cgroup = uid.and_then(|u| users::PidsCgroup::create(u, cmd.limits.processes));
    let had_cgroup = cgroup.is_some();
    let cgroup_fd = cgroup.as_ref().map(|c| c.procs.as_raw_fd());
    // Which step of building the root failed, when one does (the child can only say a number).
    let (note_read, note_write) = pipe()?;
    let note_fd = note_write.as_raw_fd();
    let (read_end, write_end) = pipe()?;
    let err_pipe = if cmd.split_stderr { Some(pipe()?) } else { None };
    let mut child = tokio::process::Command::new(&cmd.program);
    child
        .args(&cmd.args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("FAILPASS_SANDBOX_PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()))
        .env("HOME", dir)
        .env("TMPDIR", &tmp)
        .env("LANG", "C.UTF-8")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .envs(cmd.env.iter().map(|(k, v)| (k, v)))
        .stdin(if cmd.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::from(write_end.try_clone()?))
        .kill_on_drop(true);
    match &err_pipe {
        Some((_, err_write)) => child.stderr(Stdio::from(err_write.try_clone()?)),
        None => child.stderr(Stdio::from(write_end)),
    };
    let limits = cmd.limits;
    let child_plan = plan.clone();
    // SAFETY: only async-signal-safe calls (setsid, prctl, setrlimit, setns, unshare, mount, setuid,
    // seccomp) run between fork and exec, on values computed before the fork.
    unsafe {
        child.pre_exec(move || {
            // Into the run's cgroup first, so everything it starts is counted there.
            if let Some(fd) = cgroup_fd
                && libc::write(fd, b"0\n".as_ptr().cast(), 2) != 2
            {
                return Err(std::io::Error::last_os_error());
            }
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // If the worker dies (kill -9), its run dies with it.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            let set = |res, soft: u64, hard: u64| {
                let lim = libc::rlimit { rlim_cur: soft as libc::rlim_t, rlim_max: hard as libc::rlim_t };
                if libc::setrlimit(res, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            };
            set(libc::RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 1)?;
            set(libc::RLIMIT_AS, limits.memory_bytes, limits.memory_bytes)?;
            set(libc::RLIMIT_FSIZE, limits.file_bytes, limits.file_bytes)?;
            set(libc::RLIMIT_CORE, 0, 0)?;
            if let Some(fd) = join_net {
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if new_net && libc::unshare(libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if own_pids {
                keep_in_pid_namespace(child_plan.as_deref(), note_fd)?;
            }
            if let Some(uid) = uid {
                // Give up root: no capabilities, no way back (no setuid binaries either).
                if libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(uid) != 0 || libc::setuid(uid) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                // A change of user clears the parent-death signal: set it again.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            }
            // Counted against the run's user from here on (root is exempt).
            set(libc::RLIMIT_NPROC, nproc, nproc)?;
            // No descriptor the worker inherited without close-on-exec (from a
            // supervisor, a shell) reaches the run. Linux 5.11; older kernels
            // say EINVAL and keep them.
            const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
            libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC);
            // Last: the system-call filter (it refuses what the steps above needed).
            if let Some(p) = programs {
                filter::install(p)?;
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let spawned = child.spawn();
    drop(note_write);
    let mut process = match spawned {
        Ok(p) => p,
        Err(source) => {
            return Err(match (read_note(&note_read), &plan) {
                (Some(step), Some(plan)) => {
                    SandboxError::Root(std::io::Error::new(source.kind(), format!("{}: {source}", plan.describe(step))))
                }
                _ => SandboxError::Spawn { program: cmd.program.clone(), source },
            });
        }
    };
    // The parent's copies of the write ends are gone with `child`'s Stdio, so
    // the pipes reach end-of-file once every process of the run is gone.
    drop(child);
    let err_read = err_pipe.map(|(r, w)| {
        drop(w);
        r
    });
    drop(plan);
    let pid = process.id().unwrap_or(0) as i32;
    if let (Some(input), Some(mut stdin)) = (cmd.stdin.clone(), process.stdin.take()) {
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await; // a child that does not read its input is fine
        });
    }
    // If this future is dropped mid-run (a worker that lost its lease), the
    // guard still kills the session; `kill_on_drop` alone reaches only the first process.
    let guard = SessionGuard(pid);
    let captured = std::sync::Arc::new(std::sync::Mutex::new(Captured::default()));
    let reader = tokio::spawn(read_capped(read_end, cmd.limits.output_bytes, captured.clone()));
    let err_captured = std::sync::Arc::new(std::sync::Mutex::new(Captured::default()));
    let err_reader = err_read.map(|fd| tokio::spawn(read_capped(fd, 64 << 10, err_captured.clone())));
    let (status, timed_out) = match tokio::time::timeout(cmd.limits.wall, process.wait()).await {
        Ok(status) => (Some(status?), false),
        Err(_) => (None, true),
    };
    std::mem::forget(guard);
    // In a PID namespace of its own, the kernel has killed (and reaped)
    // everything the run started by the time its first process is waited
    // for, so only the keeper's group is left: no need to sweep /proc.
    let stragglers = if own_pids {
        // SAFETY: a signal to the run's own process group.
        unsafe { libc::killpg(pid, libc::SIGKILL) };
        0
    } else {
        kill_session(pid)
    };
    let status = match status {
        Some(s) => s,
        None => process.wait().await?,
    };
    let duration = started.elapsed();
    // Removing the cgroup may wait for the kernel to free it: not on the runtime's threads.
    if let Some(c) = cgroup.take() {
        tokio::task::spawn_blocking(move || drop(c));
    }
    drop(outbound);
    // Everything in the session is dead, so the pipe closes; a process that
    // left the session may still hold it, so stop reading shortly after and
    // keep what was read by then.
    for r in std::iter::once(reader).chain(err_reader) {
        let abort = r.abort_handle();
        if tokio::time::timeout(Duration::from_millis(500), r).await.is_err() {
            abort.abort();
        }
    }
    let (output, output_bytes, truncated) = {
        let c = captured.lock().unwrap_or_else(|p| p.into_inner());
        (c.text(), c.total, c.total > (c.head.len() + c.tail.len()) as u64)
    };
    let stderr = stored_text(&err_captured.lock().unwrap_or_else(|p| p.into_inner()).text());
    let signal = status.signal();
    let cpu_limited = signal == Some(libc::SIGXCPU)
        || (signal == Some(libc::SIGKILL) && !timed_out && cpu_time_exhausted(duration, cmd.limits.cpu_seconds));
    Ok(Finished {
        exit_status: status.code(),
        signal,
        timed_out,
        cpu_limited,
        duration,
        output_truncated: truncated,
        output: stored_text(&output),
        output_bytes,
        stragglers_killed: stragglers,
        uid,
        stderr,
        isolation: Isolation {
            own_user: uid.is_some(),
            pid_namespace: own_pids,
            built_root,
            network,
            syscall_filter: programs.is_some(),
            pids_cgroup: had_cgroup,
        },
    })
}

/// The step number a child wrote before failing, if it wrote one.
fn read_note(fd: &OwnedFd) -> Option<u32> {
    let mut buf = [0u8; 4];
    // SAFETY: a non-blocking read into a buffer we own; every writer is gone.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
        (libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), 4) == 4).then(|| u32::from_ne_bytes(buf))
    }
}

/// Runs in the forked child before exec: moves the command into a new PID
/// namespace whose first process (the command) dies with this one.
///
/// This process stays behind as a *keeper*: it closes every descriptor (so
/// the caller sees the exec and the output pipe's end as usual), waits for
/// the command and exits as it did. The command runs as PID 1 of its own
/// namespace with a parent-death signal on the keeper, and the keeper has one
/// on the worker, so a worker killed with SIGKILL takes the keeper, the
/// command and, with the namespace, every process the command started.
/// The command also gets its own mount namespace, and in it the root `plan`
/// builds (or, without one, only a fresh `/proc`); a step that fails is
/// written to `note` as its number.
///
/// # Safety
/// Called between fork and exec: only async-signal-safe calls.
unsafe fn keep_in_pid_namespace(plan: Option<&root::Plan>, note: i32) -> std::io::Result<()> {
    unsafe {
        if libc::unshare(libc::CLONE_NEWPID) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let child = libc::fork();
        if child < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if child == 0 {
            // PID 1 of the new namespace: dies when the keeper does. Its
            // own mount namespace, and its own IPC (no host or other run's
            // System V or POSIX shared memory, semaphores or queues) and
            // host name.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS) != 0
                || libc::mount(
                    c"none".as_ptr(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            match plan {
                Some(plan) => {
                    if let Err((step, e)) = plan.apply() {
                        let bytes = step.to_ne_bytes();
                        libc::write(note, bytes.as_ptr().cast(), bytes.len());
                        return Err(e);
                    }
                }
                None => {
                    if libc::mount(
                        c"proc".as_ptr(),
                        c"/proc".as_ptr(),
                        c"proc".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                        std::ptr::null(),
                    ) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
            }
            return Ok(());
        }
        // Close everything, or the caller's spawn waits on its exec-status
        // pipe until the run ends. close_range needs Linux 5.9; else close one by one.
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                lim.rlim_cur.min(1 << 20) as i32
            } else {
                4096
            };
            for fd in 0..max {
                libc::close(fd);
            }
        }
        let mut status = 0;
        loop {
            let r = libc::waitpid(child, &mut status, 0);
            if r == child {
                break;
            }
            if r < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        if libc::WIFEXITED(status) {
            libc::_exit(libc::WEXITSTATUS(status));
        }
        // Killed by a signal: end the same way, so the caller sees which.
        let sig = libc::WTERMSIG(status);
        libc::signal(sig, libc::SIG_DFL);
        libc::kill(libc::getpid(), sig);
        libc::_exit(128 + sig)
    }
}

/// A SIGKILL with no timeout after at least the CPU allowance: the hard CPU limit.
fn cpu_time_exhausted(wall: Duration, cpu_seconds: u64) -> bool {
    wall.as_secs_f64() >= cpu_seconds as f64
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two new descriptors we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}
