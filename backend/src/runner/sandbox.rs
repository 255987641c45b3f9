//! One sandboxed execution: its own temporary directory, wall-time, CPU,
//! memory, file-size and output limits, a scrubbed environment, no network
//! where the OS allows it (a new network namespace, as root), and the whole
//! process tree killed at the end.
//!
//! The child starts a new session (`setsid`), so everything it spawns shares
//! its session id. When the main process exits or the wall limit strikes, the
//! process group is killed and `/proc` is swept for any process still in the
//! session (a child that double-forked into the background). As root, the
//! run also gets its own PID namespace: when its first process ends, the
//! kernel kills everything else in it (even a process that started a session
//! of its own), and a worker killed with SIGKILL takes its runs with it.

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            wall: Duration::from_secs(120),
            cpu_seconds: 120,
            memory_bytes: 4 << 30,
            file_bytes: 256 << 20,
            output_bytes: 256 << 10,
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
    /// Allow network access (setup commands that download); runs are isolated.
    pub network: bool,
    /// Run as this (uid, gid) instead of the worker's user: candidates run
    /// as `nobody` when the worker is root (see [`unprivileged_user`]).
    pub run_as: Option<(u32, u32)>,
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
            run_as: None,
        }
    }
}

/// The user candidates run as when the worker is root: `nobody`, or the user
/// `FAILPASS_SANDBOX_USER` names (`root` keeps root). `None` when the worker
/// is not root (it cannot switch users, and needs not).
pub fn unprivileged_user() -> Option<(u32, u32)> {
    static USER: OnceLock<Option<(u32, u32)>> = OnceLock::new();
    *USER.get_or_init(|| {
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let name = std::env::var("FAILPASS_SANDBOX_USER").unwrap_or_else(|_| "nobody".into());
        if name == "root" {
            return None;
        }
        let c = std::ffi::CString::new(name).ok()?;
        // SAFETY: getpwnam returns a pointer into static storage or null; read at once.
        let pw = unsafe { libc::getpwnam(c.as_ptr()) };
        if pw.is_null() {
            return Some((65534, 65534));
        }
        Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
    })
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
    /// Whether the run had no network (a fresh network namespace).
    pub network_isolated: bool,
    /// Processes still alive in the run's session when it ended, and killed.
    pub stragglers_killed: usize,
    /// Whether the run had its own PID namespace (every process it started
    /// died with its first one).
    pub pid_isolated: bool,
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
    run_in(cmd, dir.path()).await
}

/// Runs `cmd` with `dir` as its working directory and home.
pub async fn run_in(cmd: &Command, dir: &Path) -> Result<Finished, SandboxError> {
    let tmp = dir.join(".tmp");
    std::fs::create_dir_all(&tmp)?;
    for (name, contents) in &cmd.files {
        std::fs::write(dir.join(name), contents)?;
    }
    if let Some((uid, gid)) = cmd.run_as {
        // The run's own directory becomes the run user's.
        for entry in [dir.to_path_buf(), tmp.clone()].into_iter().chain(cmd.files.iter().map(|(n, _)| dir.join(n))) {
            std::os::unix::fs::chown(&entry, Some(uid), Some(gid))?;
        }
    }
    let run_as = cmd.run_as;
    let isolate = !cmd.network && network_isolation_available();
    let own_pids = pid_isolation_available();
    let (read_end, write_end) = pipe()?;
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
        .stderr(Stdio::from(write_end))
        .kill_on_drop(true);
    let limits = cmd.limits;
    // SAFETY: only async-signal-safe calls (setsid, prctl, setrlimit, unshare, setuid) run
    // between fork and exec, on values computed before the fork.
    unsafe {
        child.pre_exec(move || {
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
            if isolate && libc::unshare(libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if own_pids {
                keep_in_pid_namespace()?;
            }
            if let Some((uid, gid)) = run_as {
                // Give up root: no capabilities, no way back (no setuid binaries either).
                if libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(gid) != 0 || libc::setuid(uid) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                // A change of user clears the parent-death signal: set it again.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            }
            Ok(())
        });
    }
    let started = Instant::now();
    let mut process = child.spawn().map_err(|source| SandboxError::Spawn { program: cmd.program.clone(), source })?;
    // The parent's copies of the write end are gone with `child`'s Stdio, so
    // the pipe reaches end-of-file once every process of the run is gone.
    drop(child);
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
    let (status, timed_out) = match tokio::time::timeout(cmd.limits.wall, process.wait()).await {
        Ok(status) => (Some(status?), false),
        Err(_) => (None, true),
    };
    std::mem::forget(guard);
    let stragglers = kill_session(pid);
    let status = match status {
        Some(s) => s,
        None => process.wait().await?,
    };
    let duration = started.elapsed();
    // Everything in the session is dead, so the pipe closes; a process that
    // left the session may still hold it, so stop reading shortly after and
    // keep what was read by then.
    let abort = reader.abort_handle();
    if tokio::time::timeout(Duration::from_millis(500), reader).await.is_err() {
        abort.abort();
    }
    let (output, output_bytes, truncated) = {
        let c = captured.lock().unwrap_or_else(|p| p.into_inner());
        (c.text(), c.total, c.total > (c.head.len() + c.tail.len()) as u64)
    };
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
        output: String::from_utf8_lossy(&output).into_owned(),
        output_bytes,
        network_isolated: isolate,
        stragglers_killed: stragglers,
        pid_isolated: own_pids,
    })
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
///
/// # Safety
/// Called between fork and exec: only async-signal-safe calls.
unsafe fn keep_in_pid_namespace() -> std::io::Result<()> {
    unsafe {
        if libc::unshare(libc::CLONE_NEWPID) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let child = libc::fork();
        if child < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if child == 0 {
            // PID 1 of the new namespace: dies when the keeper does.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // Its own /proc, so the run sees its own processes, not the host's.
            if libc::unshare(libc::CLONE_NEWNS) == 0
                && libc::mount(c"none".as_ptr(), c"/".as_ptr(), std::ptr::null(), libc::MS_REC | libc::MS_PRIVATE, std::ptr::null()) == 0
            {
                libc::mount(
                    c"proc".as_ptr(),
                    c"/proc".as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    std::ptr::null(),
                );
            }
            return Ok(());
        }
        // Close everything, or the caller's spawn waits on its exec-status
        // pipe until the run ends. close_range needs Linux 5.9; else close one by one.
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 { lim.rlim_cur.min(1 << 20) as i32 } else { 4096 };
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

/// What a run wrote so far: its first and last bytes (up to the cap
/// together) and the total. The end is where a traceback usually is.
#[derive(Default)]
struct Captured {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: u64,
}

impl Captured {
    /// The kept output; a cut in the middle is marked in the text.
    fn text(&self) -> Vec<u8> {
        let kept = self.head.len() + self.tail.len();
        let mut out = self.head.clone();
        if self.total > kept as u64 {
            out.extend_from_slice(format!("\n[… {} bytes cut …]\n", self.total - kept as u64).as_bytes());
        }
        out.extend(self.tail.iter());
        out
    }
}

/// Kills a run's session when dropped (unless forgotten after a normal end).
struct SessionGuard(i32);

impl Drop for SessionGuard {
    fn drop(&mut self) {
        kill_session(self.0);
    }
}

/// Reads everything into `into`, keeping the first and last `cap / 2` bytes
/// and counting the rest.
async fn read_capped(fd: OwnedFd, cap: usize, into: std::sync::Arc<std::sync::Mutex<Captured>>) {
    let Ok(mut rx) = tokio::net::unix::pipe::Receiver::from_owned_fd(fd) else { return };
    let (head_cap, tail_cap) = (cap / 2, cap - cap / 2);
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match rx.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut c = into.lock().unwrap_or_else(|p| p.into_inner());
                c.total += n as u64;
                let to_head = n.min(head_cap.saturating_sub(c.head.len()));
                c.head.extend_from_slice(&buf[..to_head]);
                c.tail.extend(&buf[to_head..n]);
                let excess = c.tail.len().saturating_sub(tail_cap);
                c.tail.drain(..excess);
            }
        }
    }
}

/// Kills the run's process group and every process left in its session;
/// returns how many processes besides the main one were killed.
fn kill_session(sid: i32) -> usize {
    if sid <= 0 {
        return 0;
    }
    // SAFETY: plain syscalls on a process group and pids we just read.
    unsafe { libc::killpg(sid, libc::SIGKILL) };
    let mut killed = 0;
    for _ in 0..5 {
        let members = session_members(sid);
        let others: Vec<i32> = members.into_iter().filter(|p| *p != sid).collect();
        if others.is_empty() {
            break;
        }
        for p in &others {
            unsafe { libc::kill(*p, libc::SIGKILL) };
        }
        killed = killed.max(others.len());
        std::thread::sleep(Duration::from_millis(5));
    }
    killed
}

/// Live (not zombie) processes whose session id is `sid`.
pub fn session_members(sid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| proc_stat(*pid).is_some_and(|(state, session)| session == sid && state != 'Z' && state != 'X'))
        .collect()
}

/// (state, session id) from `/proc/PID/stat`.
pub fn proc_stat(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(PathBuf::from(format!("/proc/{pid}/stat"))).ok()?;
    // The command name is in parentheses and may hold spaces: read after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let _pgrp = fields.next()?;
    let session = fields.next()?.parse().ok()?;
    Some((state, session))
}

/// Whether `pid` is still running (not gone, not a zombie).
pub fn alive(pid: i32) -> bool {
    proc_stat(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}
