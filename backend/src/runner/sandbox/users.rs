//! Who a run is: a user id of its own from a reserved range, leased with a
//! lock file so no two runs (in any process on this machine) share one, and
//! a pids cgroup of its own where the pids controller can be used.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use super::switches_user;

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
pub(super) struct PidsCgroup {
    dir: PathBuf,
    /// `cgroup.procs`, open for the child to write `0` (itself) into.
    pub(super) procs: std::fs::File,
}

impl PidsCgroup {
    /// A cgroup for one run of at most `max` processes, or `None` where
    /// the hierarchy cannot take one (then `RLIMIT_NPROC` alone holds).
    pub(super) fn create(uid: u32, max: u64) -> Option<PidsCgroup> {
        let (mount, own, v2) = pids_hierarchy()?;
        let parent = mount.join(own);
        if *v2 {
            // The controller must be on for children; it may already be (or be refused: then no cgroup).
            let _ = std::fs::write(parent.join("cgroup.subtree_control"), "+pids");
        }
        // A name of its own per run: the builder's id serves build after build,
        // and an earlier run's cgroup may still be on its way out.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let prefix = format!("failpass-run-{uid}-");
        // Leftovers of this id (a killed worker's, empty by now); whoever holds
        // the id now is this run, so none of them is another live run's.
        for e in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(&prefix) || name == format!("failpass-run-{uid}") {
                let _ = std::fs::remove_dir(e.path());
            }
        }
        let dir = parent.join(format!("{prefix}{}-{n}", std::process::id()));
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
        // The kernel frees a cgroup only when its last process is reaped: retry
        // briefly here, then (a fork bomb's children on a loaded machine take
        // longer) from a thread of its own for up to ten seconds.
        let gone = |dir: &Path| std::fs::remove_dir(dir).is_ok() || !dir.exists();
        for _ in 0..20 {
            if gone(&self.dir) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let dir = self.dir.clone();
        std::thread::spawn(move || {
            for _ in 0..100 {
                std::thread::sleep(Duration::from_millis(100));
                if gone(&dir) {
                    return;
                }
            }
            tracing::warn!(dir = %dir.display(), "a run's pids cgroup could not be removed");
        });
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
        if !switches_user() {
            return Ok(None);
        }
        let dir = private_dir()?;
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

impl RunUser {
    /// The one id that builds release environments and owns the shared
    /// wheel cache (the id below the range), waiting while another build
    /// holds it; `None` when the worker is not root. Release builds run only
    /// the installer on checked requirement lines (wheels are unpacked, no
    /// package code runs), so they may share a cache no run can write.
    pub fn lease_builder() -> std::io::Result<Option<RunUser>> {
        use std::os::fd::AsRawFd;
        if !switches_user() {
            return Ok(None);
        }
        let uid = uid_base() - 1;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(private_dir()?.join(format!("{uid}.lock")))?;
        // SAFETY: flock on a descriptor we own; blocks until the other build is done.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Some(RunUser { uid, _lock: file }))
    }
}

/// Where a run's root is assembled (in the run's own mount namespace, so
/// every run shares the one empty directory): made once per process.
pub(super) fn stage() -> std::io::Result<&'static Path> {
    static STAGE: OnceLock<PathBuf> = OnceLock::new();
    if let Some(s) = STAGE.get() {
        return Ok(s);
    }
    let stage = private_dir()?.join("root");
    match std::fs::create_dir(&stage) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    Ok(STAGE.get_or_init(|| stage))
}

/// Root's own directory for the sandbox (`/run/failpass-sandbox`, or under
/// the temporary directory where there is no `/run`): the user leases, and
/// the mount point a run's root is assembled on. Made 0700 if missing, and
/// refused if it is anything but a directory of root's.
pub(super) fn private_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let dir = if Path::new("/run").is_dir() {
        PathBuf::from("/run/failpass-sandbox")
    } else {
        std::env::temp_dir().join("failpass-sandbox")
    };
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir)?;
    // Never a link someone planted (the fallback is in /tmp).
    let meta = std::fs::symlink_metadata(&dir)?;
    if !meta.is_dir() || meta.uid() != 0 {
        return Err(std::io::Error::other(format!("{} is not a directory of root's own; remove it", dir.display())));
    }
    if meta.mode() & 0o777 != 0o700 {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(dir)
}
