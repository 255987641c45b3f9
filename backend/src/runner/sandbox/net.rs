//! Outbound network without the host: runs that need the network (setup
//! steps install packages, the agent command calls its model) get a network
//! namespace of their own whose only way out is user-mode networking
//! (Debian's `slirp4netns`), started with `--disable-host-loopback`. The
//! host's loopback services (PostgreSQL trusting local connections, say)
//! are out of reach, and so are the host's abstract Unix sockets, which
//! belong to the host's network namespace. Every other run gets an empty
//! namespace: no network at all.
//!
//! The namespace is made before the run starts (by a short-lived thread
//! that unshares its own and keeps a descriptor of it), slirp4netns attaches
//! to it and says when its interface is up, and the run joins it with
//! `setns`. Closing the exit pipe ends slirp4netns with the run.

use std::io::{Read, Seek};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long slirp4netns has to bring its interface up.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// Where slirp4netns is, when it is installed (`FAILPASS_SLIRP4NETNS`, or
/// on the usual paths).
pub fn slirp4netns() -> Option<&'static PathBuf> {
    static FOUND: OnceLock<Option<PathBuf>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            std::env::var_os("FAILPASS_SLIRP4NETNS")
                .map(PathBuf::from)
                .into_iter()
                .chain(["/usr/bin/slirp4netns", "/usr/local/bin/slirp4netns", "/bin/slirp4netns"].map(PathBuf::from))
                .find(|p| p.is_file())
        })
        .as_ref()
}

/// Whether runs that ask for the network can get it without the host's
/// loopback: root (namespaces), slirp4netns and `/dev/net/tun`.
pub fn outbound_available() -> bool {
    super::network_isolation_available() && slirp4netns().is_some() && std::path::Path::new("/dev/net/tun").exists()
}

/// A network namespace with user-mode networking attached; slirp4netns
/// stops when this is dropped.
pub(super) struct Outbound {
    /// The namespace, for the run to `setns` into.
    pub(super) ns: OwnedFd,
    slirp: std::process::Child,
    /// Closing it tells slirp4netns to exit.
    exit: Option<OwnedFd>,
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills two new descriptors we then own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A new, empty network namespace, held by a descriptor.
fn new_namespace() -> std::io::Result<OwnedFd> {
    // unshare changes the calling thread's namespace only: a thread of its own does it.
    std::thread::spawn(|| {
        // SAFETY: plain system calls; the thread ends right after.
        unsafe {
            if libc::unshare(libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let fd = libc::open(c"/proc/thread-self/ns/net".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(OwnedFd::from_raw_fd(fd))
        }
    })
    .join()
    .map_err(|_| std::io::Error::other("the thread making a network namespace panicked"))?
}

impl Outbound {
    /// A namespace with slirp4netns up on `tap0` (10.0.2.100/24, resolver
    /// 10.0.2.3), or why not. Blocks until the interface is up.
    pub(super) fn start() -> std::io::Result<Outbound> {
        let program = slirp4netns().ok_or_else(|| std::io::Error::other("slirp4netns is not installed"))?;
        let ns = new_namespace()?;
        let (ready_r, ready_w) = pipe()?;
        let (exit_r, exit_w) = pipe()?;
        let path = format!("/proc/{}/fd/{}", std::process::id(), ns.as_raw_fd());
        let mut log = tempfile::tempfile()?;
        let mut cmd = std::process::Command::new(program);
        cmd.args([
            "--configure",
            "--mtu=65520",
            "--disable-host-loopback",
            "--enable-sandbox",
            "--enable-seccomp",
            "--netns-type=path",
            "--ready-fd=3",
            "--exit-fd=4",
        ])
        .arg(&path)
        .arg("tap0")
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        // A file, not a pipe: nobody reads it while the run goes on, and a full pipe would stall it.
        .stderr(log.try_clone()?);
        let (ready_fd, exit_fd) = (ready_w.as_raw_fd(), exit_r.as_raw_fd());
        // SAFETY: dup2 and prctl only, between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                // dup2 leaves the copies open across exec.
                if libc::dup2(ready_fd, 3) < 0 || libc::dup2(exit_fd, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut slirp = cmd.spawn()?;
        drop((ready_w, exit_r));
        match wait_ready(&ready_r) {
            Ok(()) => Ok(Outbound { ns, slirp, exit: Some(exit_w) }),
            Err(e) => {
                let _ = slirp.kill();
                let _ = slirp.wait();
                let mut said = String::new();
                let _ = log.seek(std::io::SeekFrom::Start(0)).and_then(|_| log.read_to_string(&mut said));
                Err(std::io::Error::other(format!(
                    "slirp4netns did not bring the run's network up: {e}{}",
                    said.lines().last().map(|l| format!(" ({l})")).unwrap_or_default()
                )))
            }
        }
    }
}

/// Waits for slirp4netns to write its ready byte.
fn wait_ready(ready: &OwnedFd) -> std::io::Result<()> {
    let started = Instant::now();
    loop {
        let left = READY_WITHIN.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(std::io::Error::other(format!("no answer within {} s", READY_WITHIN.as_secs())));
        }
        let mut pfd = libc::pollfd { fd: ready.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: poll on one descriptor we own.
        let n = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(i32::MAX as u128) as i32) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            continue;
        }
        let mut byte = [0u8; 1];
        // SAFETY: read into a buffer we own.
        let r = unsafe { libc::read(ready.as_raw_fd(), byte.as_mut_ptr().cast(), 1) };
        return if r == 1 { Ok(()) } else { Err(std::io::Error::other("it exited before its interface was up")) };
    }
}

impl Drop for Outbound {
    fn drop(&mut self) {
        drop(self.exit.take());
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.slirp.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = self.slirp.kill();
        let _ = self.slirp.wait();
    }
}
