//! One sandboxed execution: its own temporary directory, wall-time, CPU,
//! memory, file-size, process and output limits, a scrubbed environment, no
//! network where the OS allows it (a new network namespace, as root), and
//! the whole process tree killed at the end.
//!
//! As root (the way runners are deployed), nothing runs as root: every run
//! gets a user id of its own from a reserved range ([`RunUser`]), so runs
//! cannot read or change each other's directories, and `RLIMIT_NPROC` on
//! that fresh id caps the run's processes (a fork bomb stops there). Each run
//! also gets its own mount namespace: the whole file system is read-only,
//! `/tmp`, `/var/tmp` and `/dev/shm` are fresh, private tmpfs mounts that
//! vanish with the run, and only the run's directory is writable (what it
//! needs from under a masked directory, such as a data directory in `/tmp`,
//! is mounted back read-only with the host's permissions). Without root the
//! run keeps the worker's user and the host's file system: its own directory
//! and `TMPDIR`, and `RLIMIT_NPROC` counted on top of the user's processes.
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
    /// Allow network access (setup commands that download); runs are isolated.
    pub network: bool,
    /// The user to run as, when the worker is root: a leased id shared by
    /// the steps of one environment build; a fresh one per run when `None`.
    pub user: Option<std::sync::Arc<RunUser>>,
    /// Host paths the run needs besides its own directory (an environment's
    /// tree), read-only unless said otherwise.
    pub binds: Vec<(PathBuf, bool)>,
    /// Host directories the run must not see (the environment cache: other
    /// projects' environments), covered by an empty tmpfs; what `binds`
    /// needs from under them is mounted back.
    pub hide: Vec<PathBuf>,
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
            user: None,
            binds: Vec::new(),
            hide: Vec::new(),
            split_stderr: false,
        }
    }
}

/// Whether runs switch to a user of their own (the worker is root).
pub fn switches_user() -> bool {
    unsafe { libc::geteuid() == 0 }
}

/// Where a run's pids cgroup goes: the pids hierarchy's mount, this
/// process's cgroup in it, and whether it is cgroup v2. `None` when no pids
/// controller is mounted (then `RLIMIT_NPROC` alone limits processes).
fn pids_hierarchy() -> Option<&'static (PathBuf, PathBuf, bool)> {
    static PLACE: OnceLock<Option<(PathBuf, PathBuf, bool)>> = OnceLock::new();
    PLACE
        .get_or_init(|| {
            let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
            let v2 = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers")
                .is_ok_and(|c| c.split_whitespace().any(|w| w == "pids"));
            let line = |pick: &dyn Fn(&str) -> bool| {
                own.lines().find_map(|l| {
                    let mut parts = l.splitn(3, ':');
                    let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
                    pick(controllers).then(|| PathBuf::from(path.trim_start_matches('/')))
                })
            };
            if v2 {
                Some((PathBuf::from("/sys/fs/cgroup"), line(&|c: &str| c.is_empty())?, true))
            } else if Path::new("/sys/fs/cgroup/pids").is_dir() {
                Some((PathBuf::from("/sys/fs/cgroup/pids"), line(&|c: &str| c.split(',').any(|x| x == "pids"))?, false))
            } else {
                None
            }
        })
        .as_ref()
}

/// Whether runs get a pids cgroup of their own (`pids.max`), as root where a
/// pids controller is mounted (cgroup v2, or v1's `pids` hierarchy).
pub fn pids_cgroup_available() -> bool {
    switches_user() && pids_hierarchy().is_some()
}

/// A run's own cgroup with `pids.max`; the run joins it before it starts,
/// and it is removed when dropped (after the run's processes are gone).
struct PidsCgroup {
    dir: PathBuf,
    /// `cgroup.procs`, open for the child to write `0` (itself) into.
    procs: std::fs::File,
}

impl PidsCgroup {
    /// A cgroup for one run of at most `max` processes, or `None` where
    /// the hierarchy cannot take one (then `RLIMIT_NPROC` alone holds).
    fn create(uid: u32, max: u64) -> Option<PidsCgroup> {
        let (mount, own, v2) = pids_hierarchy()?;
        let parent = mount.join(own);
        if *v2 {
            // The controller must be on for children; it may already be (or be refused: then no cgroup).
            let _ = std::fs::write(parent.join("cgroup.subtree_control"), "+pids");
        }
        let dir = parent.join(format!("failpass-run-{uid}"));
        let _ = std::fs::remove_dir(&dir); // a leftover of a killed worker, empty by now
        std::fs::create_dir(&dir).ok()?;
        let made = std::fs::write(dir.join("pids.max"), max.to_string())
            .and_then(|()| std::fs::OpenOptions::new().write(true).open(dir.join("cgroup.procs")));
        match made {
            Ok(procs) => Some(PidsCgroup { dir, procs }),
            Err(_) => {
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        // The kernel frees a cgroup only when its last process is reaped; retry briefly.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        tracing::warn!(dir = %self.dir.display(), "a run's pids cgroup could not be removed");
    }
}

/// The first of the user ids reserved for runs (`FAILPASS_SANDBOX_UID_BASE`,
/// default 1,900,000,000: far from system, login and container ranges).
fn uid_base() -> u32 {
    static BASE: OnceLock<u32> = OnceLock::new();
    *BASE.get_or_init(|| {
        std::env::var("FAILPASS_SANDBOX_UID_BASE").ok().and_then(|v| v.parse().ok()).unwrap_or(1_900_000_000)
    })
}

/// How many ids the range holds.
pub const UID_COUNT: u32 = 65_536;

/// A user id leased to one run (or one environment build) until dropped.
/// Leases are `flock`s on files in a root-only directory, so workers in
/// several processes on one machine never hand out the same id at once.
#[derive(Debug)]
pub struct RunUser {
    pub uid: u32,
    _lock: std::fs::File,
}

impl RunUser {
    /// Leases a free id of the range; `None` when the worker is not root.
    pub fn lease() -> std::io::Result<Option<RunUser>> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        if !switches_user() {
            return Ok(None);
        }
        use std::os::unix::fs::MetadataExt;
        let dir = if Path::new("/run").is_dir() {
            PathBuf::from("/run/failpass-sandbox")
        } else {
            std::env::temp_dir().join("failpass-sandbox")
        };
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
        // Root's own directory, never a link someone planted (the fallback is in /tmp).
        let meta = std::fs::symlink_metadata(&dir)?;
        if !meta.is_dir() || meta.uid() != 0 {
            return Err(std::io::Error::other(format!(
                "{} is not a directory of root's own; remove it",
                dir.display()
            )));
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
        let mut seed = [0u8; 4];
        let _ = getrandom::fill(&mut seed);
        let start = u32::from_le_bytes(seed) % UID_COUNT;
        for i in 0..UID_COUNT {
            let uid = uid_base() + (start + i) % UID_COUNT;
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(dir.join(format!("{uid}.lock")))?;
            // SAFETY: flock on a descriptor we own.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(Some(RunUser { uid, _lock: file }));
            }
        }
        Err(std::io::Error::other(format!("all {UID_COUNT} sandbox user ids are in use")))
    }
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
    /// The user id it ran as (`None`: the worker's own, not root).
    pub uid: Option<u32>,
    /// Whether it had a private mount namespace: read-only host, fresh `/tmp`.
    pub private_tmp: bool,
    /// Its stderr, when kept apart ([`Command::split_stderr`]).
    pub stderr: String,
    /// Whether it had a pids cgroup of its own (`pids.max`) besides `RLIMIT_NPROC`.
    pub pids_cgroup: bool,
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

/// Says in the log, once, when runs will get users of their own but not
/// their namespaces (root without CAP_SYS_ADMIN: in a container started
/// without `--cap-add SYS_ADMIN`, or a kernel that forbids them): runs then
/// keep the network and see the host's file system. Workers call it as they start.
pub fn warn_if_isolation_missing() {
    static SAID: OnceLock<()> = OnceLock::new();
    if switches_user() && !(network_isolation_available() && pid_isolation_available()) {
        SAID.get_or_init(|| {
            tracing::warn!(
                network = network_isolation_available(),
                pids = pid_isolation_available(),
                "runs get user ids of their own, but this process cannot create namespaces: runs keep the network and \
                 see the host's file system; give it CAP_SYS_ADMIN (a container: --cap-add SYS_ADMIN)"
            );
        });
    }
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

/// Directories every run gets fresh and empty (tmpfs), when it has a mount namespace.
const MASKED: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// A bind mount the run's mount namespace gets, prepared before the fork.
struct Bind {
    /// The host directory, which is also where it goes.
    target: std::ffi::CString,
    /// Create the target first (it is the top directory under a fresh tmpfs).
    mkdir: bool,
    writable: bool,
}

/// One step of a run's file system, in order.
enum Step {
    /// A fresh, empty tmpfs over this directory.
    Mask(std::ffi::CString),
    Bind(Bind),
}

/// What the child does in its own mount namespace, computed before the fork
/// (between fork and exec nothing may allocate).
struct MountPlan {
    steps: Vec<Step>,
    tmpfs_options: std::ffi::CString,
    /// The run's directory: the working directory again once mounts are done.
    workdir: std::ffi::CString,
}

fn cstring(p: &Path) -> std::io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other(format!("{} holds a NUL byte", p.display())))
}

/// Most bind mounts a run may ask for (the child keeps their descriptors on its stack).
const MAX_BINDS: usize = 16;

impl MountPlan {
    /// The run's directory writable, `extra` paths as asked (read-only
    /// unless marked writable), and `hide` (such as the environment cache)
    /// covered like `/tmp`. A path under a covered directory is reached
    /// through its top directory there (`/tmp/data`, `envs/<hash>`), mounted
    /// read-only with the host's permissions; nothing else under it shows.
    fn new(dir: &Path, extra: &[(PathBuf, bool)], hide: &[PathBuf], limits: &Limits) -> std::io::Result<MountPlan> {
        let wanted: Vec<(PathBuf, bool)> = std::iter::once((dir.to_path_buf(), true))
            .chain(extra.iter().cloned())
            .map(|(p, w)| Ok((p.canonicalize()?, w)))
            .collect::<std::io::Result<_>>()?;
        let hide: Vec<PathBuf> = hide.iter().filter_map(|h| h.canonicalize().ok()).filter(|h| h.is_dir()).collect();
        let masks: Vec<PathBuf> =
            MASKED.iter().map(PathBuf::from).filter(|m| m.is_dir()).chain(hide.iter().cloned()).collect();
        let mut steps = Vec::new();
        let mut tops: Vec<PathBuf> = Vec::new();
        for (i, mask) in masks.iter().enumerate() {
            steps.push(Step::Mask(cstring(mask)?));
            // What must show under this mask: the wanted paths, and the masks after it (mounted on top).
            let under: Vec<&PathBuf> = wanted
                .iter()
                .map(|(p, _)| p)
                .chain(masks[i + 1..].iter())
                .filter(|p| p.starts_with(mask) && *p != mask)
                .collect();
            for p in under {
                let first = p
                    .strip_prefix(mask)
                    .ok()
                    .and_then(|r| r.components().next())
                    .map(|c| c.as_os_str().to_owned())
                    .unwrap_or_default();
                let top = mask.join(first);
                if !tops.contains(&top) {
                    steps.push(Step::Bind(Bind { target: cstring(&top)?, mkdir: true, writable: false }));
                    tops.push(top);
                }
            }
        }
        for (p, writable) in &wanted {
            if *writable || !tops.iter().any(|t| p.starts_with(t)) {
                steps.push(Step::Bind(Bind { target: cstring(p)?, mkdir: false, writable: *writable }));
            }
        }
        if steps.iter().filter(|s| matches!(s, Step::Bind(_))).count() > MAX_BINDS {
            return Err(std::io::Error::other(format!("a run may bind at most {MAX_BINDS} host directories")));
        }
        Ok(MountPlan {
            steps,
            tmpfs_options: std::ffi::CString::new(format!("mode=1777,size={}", limits.file_bytes.max(1 << 20)))
                .map_err(std::io::Error::other)?,
            workdir: cstring(dir)?,
        })
    }

    /// In the child, in its new mount namespace: everything read-only, then
    /// the steps in order, back in the working directory.
    ///
    /// # Safety
    /// Called between fork and exec: only syscalls, on values made before the fork.
    unsafe fn apply(&self) -> std::io::Result<()> {
        let fail = || Err(std::io::Error::last_os_error());
        unsafe {
            // The bind sources, opened in this namespace (a mount of another
            // namespace cannot be bound) and before any mask hides them.
            let mut fds = [-1i32; MAX_BINDS];
            let mut n = 0;
            for step in &self.steps {
                if let Step::Bind(b) = step {
                    fds[n] = libc::open(b.target.as_ptr(), libc::O_PATH | libc::O_CLOEXEC | libc::O_DIRECTORY);
                    if fds[n] < 0 {
                        return fail();
                    }
                    n += 1;
                }
            }
            // The whole tree read-only (mount_setattr, Linux 5.12). Without it
            // the run is refused: a half read-only host is not what it says.
            if set_mount_attr(c"/".as_ptr(), true, true) != 0 {
                return fail();
            }
            let mut source = [0u8; 32];
            let mut i = 0;
            for step in &self.steps {
                match step {
                    Step::Mask(m) => {
                        let flags = libc::MS_NOSUID | libc::MS_NODEV;
                        if libc::mount(
                            c"tmpfs".as_ptr(),
                            m.as_ptr(),
                            c"tmpfs".as_ptr(),
                            flags,
                            self.tmpfs_options.as_ptr().cast(),
                        ) != 0
                        {
                            return fail();
                        }
                    }
                    Step::Bind(b) => {
                        if b.mkdir
                            && libc::mkdir(b.target.as_ptr(), 0o755) != 0
                            && *libc::__errno_location() != libc::EEXIST
                        {
                            return fail();
                        }
                        proc_fd_path(fds[i], &mut source);
                        if libc::mount(
                            source.as_ptr().cast(),
                            b.target.as_ptr(),
                            std::ptr::null(),
                            libc::MS_BIND | libc::MS_REC,
                            std::ptr::null(),
                        ) != 0
                        {
                            return fail();
                        }
                        if set_mount_attr(b.target.as_ptr(), !b.writable, false) != 0 {
                            return fail();
                        }
                        libc::close(fds[i]);
                        i += 1;
                    }
                }
            }
            if libc::chdir(self.workdir.as_ptr()) != 0 {
                return fail();
            }
        }
        Ok(())
    }
}

/// `/proc/self/fd/N` into `buf` (NUL-terminated), without allocating.
fn proc_fd_path(fd: i32, buf: &mut [u8; 32]) {
    let prefix = b"/proc/self/fd/";
    buf[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 12];
    let (mut n, mut len) = (fd.max(0) as u32, 0);
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        buf[prefix.len() + i] = digits[len - 1 - i];
    }
    buf[prefix.len() + len] = 0;
}

/// `mount_setattr(path, read_only)`, recursively when asked; 0 on success.
unsafe fn set_mount_attr(path: *const libc::c_char, read_only: bool, recursive: bool) -> libc::c_long {
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    let attr = MountAttr {
        attr_set: if read_only { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if read_only { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path,
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    }
}

/// Threads the user `uid` runs now (what RLIMIT_NPROC counts).
fn threads_of(uid: u32) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .filter(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next())
                .is_some_and(|u| u == uid.to_string())
        })
        .filter_map(|status| {
            status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|n| n.trim().parse::<u64>().ok())
        })
        .sum()
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
    let isolate = !cmd.network && network_isolation_available();
    let own_pids = pid_isolation_available();
    // A private mount namespace comes with the PID namespace (both need root).
    let mounts = if own_pids {
        Some(std::sync::Arc::new(MountPlan::new(dir, &cmd.binds, &cmd.hide, &cmd.limits)?))
    } else {
        None
    };
    // RLIMIT_NPROC counts every thread of the real user: a fresh user starts
    // at none; the worker's own user (not root) already runs the server.
    let nproc = match uid {
        Some(_) => cmd.limits.processes,
        None => threads_of(unsafe { libc::getuid() }) + cmd.limits.processes,
    };
    // Where the pids controller can be used, a cgroup of the run's own caps
    // its processes too (and holds even for a process that changes user).
    let cgroup = uid.and_then(|u| PidsCgroup::create(u, cmd.limits.processes));
    let cgroup_fd = cgroup.as_ref().map(|c| std::os::fd::AsRawFd::as_raw_fd(&c.procs));
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
    let plan = mounts.clone();
    // SAFETY: only async-signal-safe calls (setsid, prctl, setrlimit, unshare, mount, setuid) run
    // between fork and exec, on values computed before the fork.
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
            if isolate && libc::unshare(libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if own_pids {
                keep_in_pid_namespace(plan.as_deref())?;
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
            Ok(())
        });
    }
    let started = Instant::now();
    let mut process = child.spawn().map_err(|source| SandboxError::Spawn { program: cmd.program.clone(), source })?;
    // The parent's copies of the write ends are gone with `child`'s Stdio, so
    // the pipes reach end-of-file once every process of the run is gone.
    drop(child);
    let err_read = err_pipe.map(|(r, w)| {
        drop(w);
        r
    });
    drop(mounts);
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
    let stragglers = kill_session(pid);
    let status = match status {
        Some(s) => s,
        None => process.wait().await?,
    };
    let duration = started.elapsed();
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
        network_isolated: isolate,
        stragglers_killed: stragglers,
        pid_isolated: own_pids,
        uid,
        private_tmp: own_pids,
        stderr,
        pids_cgroup: cgroup.is_some(),
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
unsafe fn keep_in_pid_namespace(mounts: Option<&MountPlan>) -> std::io::Result<()> {
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
            // Its own mount namespace: its own /proc (it sees its own
            // processes, not the host's), then the file system plan.
            if libc::unshare(libc::CLONE_NEWNS) != 0
                || libc::mount(
                    c"none".as_ptr(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) != 0
                || libc::mount(
                    c"proc".as_ptr(),
                    c"/proc".as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    std::ptr::null(),
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if let Some(plan) = mounts {
                plan.apply()?;
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

/// Bytes a run printed as text that can be stored anywhere: invalid UTF-8
/// and NUL characters (which PostgreSQL refuses) become U+FFFD.
fn stored_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace('\0', "\u{FFFD}")
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
