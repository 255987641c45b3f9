//! The file system a run sees: a root assembled for it, never the host's.
//!
//! [`layout`] is the one list of what a run's root holds; the README's
//! security model says the same in words, and a test compares a run's mount
//! table with it. Everything else of the host (`/run`, `/var/lib`, `/home`,
//! `/root`, `/srv`, `/mnt`, `/opt`, the data directory and its neighbours,
//! its host Unix sockets) is simply not there.
//!
//! The root is built in the run's own mount namespace, by root, before the
//! run gives up root: a tmpfs on a private mount point, each host path
//! cloned onto it with `open_tree` (so the host's directory modes on the way
//! to a path do not matter: an environment under a 0700 parent is reached),
//! made read-only with `mount_setattr`, then `pivot_root` into it and the
//! host's tree detached. The root's own tmpfs is read-only too; only the
//! run's directory and the fresh `/tmp`, `/var/tmp` and `/dev/shm` are
//! writable.
//!
//! Between fork and exec nothing may allocate, so [`Plan`] turns the layout
//! into system-call arguments before the fork and [`Plan::apply`] only makes
//! the calls.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One thing a run's root holds, at `path` inside it.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// The host's `path`, at the same path: read-only unless `writable`;
    /// device nodes work only where `device` is set.
    Bind { path: PathBuf, writable: bool, device: bool },
    /// A fresh, empty tmpfs whose top has `mode`, of at most `bytes` (the
    /// run's file-size limit when `None`) and [`TMPFS_INODES`] files.
    Tmpfs { path: PathBuf, mode: u32, bytes: Option<u64> },
    /// A fresh `/proc`: the run's own PID namespace, not the host's processes.
    Proc { path: PathBuf },
    /// A symbolic link (the host's `/lib64 -> usr/lib64`, `/dev/fd`).
    Symlink { path: PathBuf, target: PathBuf },
    /// A file written for the run (`/etc/passwd` naming only root, the run's
    /// user and nobody), read-only like the rest of the root.
    File { path: PathBuf, contents: Vec<u8> },
}

impl Entry {
    pub fn path(&self) -> &Path {
        match self {
            Entry::Bind { path, .. }
            | Entry::Tmpfs { path, .. }
            | Entry::Proc { path }
            | Entry::Symlink { path, .. }
            | Entry::File { path, .. } => path,
        }
    }
}

/// Top-level directories that are `/usr`'s on merged systems: copied as the
/// links they are, or bound read-only where the host keeps real ones.
const USR_SIBLINGS: &[&str] = &["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"];

/// What of the host's `/etc` a run gets: what the dynamic loader, Python, pip,
/// git and TLS read. Host links (`/etc/localtime`) are copied as links.
/// `passwd`, `group`, `hosts` and `resolv.conf` are written per run instead.
const ETC: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/alternatives",
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates.conf",
    "/etc/mime.types",
    "/etc/python3",
    "/etc/python3.11",
    "/etc/python3.12",
    "/etc/python3.13",
];

/// What of `/etc` only runs with network get (setup steps, the agent
/// command): package-index and git settings, which may hold an index's
/// token, never shown to candidates.
const NETWORK_ETC: &[&str] = &["/etc/pip.conf", "/etc/gitconfig"];

/// Most files a fresh tmpfs holds (each costs the kernel memory no limit counts).
pub const TMPFS_INODES: u64 = 65_536;

/// Device nodes a run gets (in a fresh `/dev`), besides links to `/proc/self/fd`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// What of `/sys` a run gets, read-only: the CPU and memory topology that
/// numerical libraries (OpenBLAS, MKL, XLA, PyTorch's cpuinfo) read.
const SYS: &[&str] = &["/sys/devices/system/cpu", "/sys/devices/system/node"];

/// Extra read-only host directories an operator adds for every run
/// (`FAILPASS_SANDBOX_BIND`, colon-separated absolute paths): a Python
/// outside `/usr`, say.
pub const OPERATOR_BINDS: &str = "FAILPASS_SANDBOX_BIND";

/// What every run's root holds whatever it runs, read once from the host.
fn system() -> &'static [Entry] {
    static SYSTEM: OnceLock<Vec<Entry>> = OnceLock::new();
    SYSTEM.get_or_init(|| {
        let ro = |p: &str| Entry::Bind { path: PathBuf::from(p), writable: false, device: false };
        let mut out = vec![ro("/usr")];
        for p in USR_SIBLINGS.iter().chain(ETC) {
            match std::fs::symlink_metadata(p) {
                Ok(m) if m.file_type().is_symlink() => {
                    if let Ok(target) = std::fs::read_link(p) {
                        out.push(Entry::Symlink { path: PathBuf::from(p), target });
                    }
                }
                Ok(_) => out.push(ro(p)),
                Err(_) => {}
            }
        }
        out.push(Entry::Symlink { path: "/etc/mtab".into(), target: "../proc/self/mounts".into() });
        out.push(Entry::Tmpfs { path: "/dev".into(), mode: 0o755, bytes: Some(64 << 10) });
        for d in DEVICES {
            let path = Path::new("/dev").join(d);
            if path.exists() {
                out.push(Entry::Bind { path, writable: true, device: true });
            }
        }
        for (name, target) in [
            ("fd", "/proc/self/fd"),
            ("stdin", "/proc/self/fd/0"),
            ("stdout", "/proc/self/fd/1"),
            ("stderr", "/proc/self/fd/2"),
        ] {
            out.push(Entry::Symlink { path: Path::new("/dev").join(name), target: target.into() });
        }
        out.push(Entry::Tmpfs { path: "/dev/shm".into(), mode: 0o1777, bytes: None });
        out.push(Entry::Proc { path: "/proc".into() });
        out.extend(SYS.iter().filter(|p| Path::new(p).is_dir()).map(|p| ro(p)));
        out.push(Entry::Tmpfs { path: "/tmp".into(), mode: 0o1777, bytes: None });
        out.push(Entry::Tmpfs { path: "/var/tmp".into(), mode: 0o1777, bytes: None });
        if let Ok(extra) = std::env::var(OPERATOR_BINDS) {
            for p in extra.split(':').filter(|p| !p.is_empty()) {
                match Path::new(p).canonicalize() {
                    Ok(c) if c.is_absolute() && c != Path::new("/") => {
                        out.push(Entry::Bind { path: c, writable: false, device: false })
                    }
                    _ => {
                        tracing::warn!(path = p, "{OPERATOR_BINDS}: not an existing directory other than /; not bound")
                    }
                }
            }
        }
        out
    })
}

/// What one run's root is made of besides the system part.
pub struct Spec<'a> {
    /// The run's own directory, the only writable host path.
    pub workdir: &'a Path,
    /// Host paths it needs at their own paths (an environment's tree, the
    /// agent command's files), read-only unless marked writable.
    pub binds: &'a [(PathBuf, bool)],
    /// Its user, named in the run's `/etc/passwd`.
    pub uid: u32,
    /// Whether it has outbound network (then `/etc/resolv.conf` names
    /// user-mode networking's resolver).
    pub network: bool,
}

/// The resolver that user-mode networking (slirp4netns) answers on.
pub const RESOLVER: &str = "10.0.2.3";

/// Every entry of a run's root, in the order it is made: the system part,
/// the files written for it, then its own paths (parents before children).
pub fn layout(spec: &Spec<'_>) -> std::io::Result<Vec<Entry>> {
    let mut out = system().to_vec();
    let home = spec.workdir.display();
    let uid = spec.uid;
    let file = |path: &str, contents: String| Entry::File { path: path.into(), contents: contents.into_bytes() };
    out.push(file(
        "/etc/passwd",
        format!(
            "root:x:0:0:root:/root:/usr/sbin/nologin\nrun:x:{uid}:{uid}:failpass run:{home}:/bin/sh\n\
             nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        ),
    ));
    out.push(file("/etc/group", format!("root:x:0:\nrun:x:{uid}:\nnogroup:x:65534:\n")));
    let mut hosts = String::from("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
    if spec.network {
        // Names the host resolves through its own hosts file (a package index
        // behind a proxy, a mirror) resolve the same for runs with network;
        // its loopback names do not (the run cannot reach its loopback).
        hosts.push_str(&host_names(&std::fs::read_to_string("/etc/hosts").unwrap_or_default()));
    }
    out.push(file("/etc/hosts", hosts));
    if spec.network {
        out.push(file("/etc/resolv.conf", format!("nameserver {RESOLVER}\n")));
        out.extend(NETWORK_ETC.iter().filter(|p| Path::new(p).is_file()).map(|p| Entry::Bind {
            path: PathBuf::from(p),
            writable: false,
            device: false,
        }));
    }
    let mut own: Vec<(PathBuf, bool)> = Vec::with_capacity(spec.binds.len() + 1);
    for (p, writable) in std::iter::once((spec.workdir.to_path_buf(), true)).chain(spec.binds.iter().cloned()) {
        let c = p.canonicalize().map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", p.display())))?;
        if c == Path::new("/") {
            return Err(std::io::Error::other("a run may not be given the whole host file system (/)"));
        }
        own.push((c, writable));
    }
    // Parents first, so a child bound later is not hidden by its parent.
    own.sort_by(|a, b| a.0.cmp(&b.0));
    own.dedup_by(|b, a| a.0 == b.0 && (a.1 || !b.1));
    out.extend(own.into_iter().map(|(path, writable)| Entry::Bind { path, writable, device: false }));
    Ok(out)
}

/// The lines of a hosts file that name addresses other than loopback.
fn host_names(hosts: &str) -> String {
    let mut out = String::new();
    for line in hosts.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some(addr) = line.split_whitespace().next() else { continue };
        let Ok(ip) = addr.parse::<std::net::IpAddr>() else { continue };
        if !ip.is_loopback() && !ip.is_unspecified() && line.split_whitespace().count() > 1 {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

// The mount API's flags (linux/mount.h), not all in the libc crate.
const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;

/// `struct mount_attr`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// One system call of the plan, its arguments ready.
enum Op {
    /// A directory of the root (0755; one that exists already is fine).
    Mkdir(CString),
    /// An empty file, for a file to be bound on.
    Touch(CString),
    Bind {
        source: CString,
        target: CString,
        set: u64,
        clear: u64,
    },
    Tmpfs {
        target: CString,
        options: CString,
    },
    Proc(CString),
    Symlink {
        target: CString,
        path: CString,
    },
    Write {
        path: CString,
        contents: Vec<u8>,
    },
}

/// A run's root as system calls, computed before the fork.
pub(super) struct Plan {
    /// Where the root is assembled: a private, root-only directory of the host.
    stage: CString,
    ops: Vec<Op>,
    /// What each op makes, for the error when one fails.
    what: Vec<String>,
    /// The run's directory: the working directory once the root is in place.
    workdir: CString,
}

fn cstring(p: &Path) -> std::io::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other(format!("{} holds a NUL byte", p.display())))
}

impl Plan {
    /// The plan for `entries`, assembled on `stage`; fresh tmpfs mounts are
    /// at most `tmpfs_bytes` each.
    pub(super) fn new(entries: &[Entry], stage: &Path, workdir: &Path, tmpfs_bytes: u64) -> std::io::Result<Plan> {
        let at = |p: &Path| cstring(&stage.join(p.strip_prefix("/").unwrap_or(p)));
        let mut made: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
        let mut ops = Vec::with_capacity(entries.len() * 2);
        let mut what = Vec::with_capacity(entries.len() * 2);
        for e in entries {
            let path = e.path();
            // Every parent inside the root, once.
            let mut parents: Vec<&Path> = path.ancestors().skip(1).take_while(|a| *a != Path::new("/")).collect();
            parents.reverse();
            for p in parents {
                if made.insert(p.to_path_buf()) {
                    ops.push(Op::Mkdir(at(p)?));
                    what.push(format!("making {}", p.display()));
                }
            }
            let (op, text) = match e {
                Entry::Bind { path, writable, device } => {
                    let is_dir = std::fs::metadata(path)?.is_dir();
                    if made.insert(path.clone()) {
                        ops.push(if is_dir { Op::Mkdir(at(path)?) } else { Op::Touch(at(path)?) });
                        what.push(format!("making {}", path.display()));
                    }
                    let mut set = MOUNT_ATTR_NOSUID;
                    let mut clear = 0;
                    if *writable {
                        clear |= MOUNT_ATTR_RDONLY
                    } else {
                        set |= MOUNT_ATTR_RDONLY
                    }
                    if *device {
                        clear |= MOUNT_ATTR_NODEV
                    } else {
                        set |= MOUNT_ATTR_NODEV
                    }
                    let how = if *writable { "writable" } else { "read-only" };
                    (
                        Op::Bind { source: cstring(path)?, target: at(path)?, set, clear },
                        format!("binding {} ({how})", path.display()),
                    )
                }
                Entry::Tmpfs { path, mode, bytes } => {
                    if made.insert(path.clone()) {
                        ops.push(Op::Mkdir(at(path)?));
                        what.push(format!("making {}", path.display()));
                    }
                    let size = bytes.unwrap_or_else(|| tmpfs_bytes.max(1 << 20));
                    let options = CString::new(format!("mode={mode:o},size={size},nr_inodes={TMPFS_INODES}"))
                        .map_err(std::io::Error::other)?;
                    (Op::Tmpfs { target: at(path)?, options }, format!("mounting a fresh tmpfs on {}", path.display()))
                }
                Entry::Proc { path } => {
                    if made.insert(path.clone()) {
                        ops.push(Op::Mkdir(at(path)?));
                        what.push(format!("making {}", path.display()));
                    }
                    (Op::Proc(at(path)?), format!("mounting a fresh proc on {}", path.display()))
                }
                Entry::Symlink { path, target } => (
                    Op::Symlink { target: cstring(target)?, path: at(path)? },
                    format!("linking {} to {}", path.display(), target.display()),
                ),
                Entry::File { path, contents } => {
                    (Op::Write { path: at(path)?, contents: contents.clone() }, format!("writing {}", path.display()))
                }
            };
            made.insert(path.to_path_buf());
            ops.push(op);
            what.push(text);
        }
        Ok(Plan { stage: cstring(stage)?, ops, what, workdir: cstring(workdir)? })
    }

    /// What step `index` of [`Plan::apply`] was, for its error.
    pub(super) fn describe(&self, index: u32) -> &str {
        match index as usize {
            i if i < self.what.len() => &self.what[i],
            i if i == self.what.len() => "mounting the root's tmpfs",
            _ => "switching to the run's root (pivot_root)",
        }
    }

    /// In the child, as root, in its own mount and PID namespaces: builds
    /// the root and moves into it. On failure, the step that failed (an
    /// index for [`Plan::describe`]) and the error.
    ///
    /// # Safety
    /// Called between fork and exec: only system calls, on values made before the fork.
    pub(super) unsafe fn apply(&self) -> Result<(), (u32, std::io::Error)> {
        let err = |i: usize| (i as u32, std::io::Error::last_os_error());
        let n = self.ops.len();
        unsafe {
            if libc::mount(
                c"tmpfs".as_ptr(),
                self.stage.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                c"mode=0755,size=4m".as_ptr().cast(),
            ) != 0
            {
                return Err(err(n));
            }
            for (i, op) in self.ops.iter().enumerate() {
                if !op.make() {
                    return Err(err(i));
                }
            }
            // Into the new root; the host's tree, stacked on it by
            // pivot_root(".", "."), is detached.
            if libc::chdir(self.stage.as_ptr()) != 0
                || libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) != 0
                || libc::umount2(c".".as_ptr(), libc::MNT_DETACH) != 0
                || libc::chdir(c"/".as_ptr()) != 0
                || set_attr(
                    libc::AT_FDCWD,
                    c"/".as_ptr(),
                    0,
                    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                    0,
                ) != 0
                || libc::chdir(self.workdir.as_ptr()) != 0
            {
                return Err(err(n + 1));
            }
        }
        Ok(())
    }
}

impl Op {
    /// Makes this step; false (errno set) when it failed.
    ///
    /// # Safety
    /// Between fork and exec: system calls only.
    unsafe fn make(&self) -> bool {
        unsafe {
            match self {
                Op::Mkdir(p) => libc::mkdir(p.as_ptr(), 0o755) == 0 || *libc::__errno_location() == libc::EEXIST,
                Op::Touch(p) => {
                    let fd = libc::open(p.as_ptr(), libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC, 0o644);
                    fd >= 0 && libc::close(fd) == 0
                }
                Op::Bind { source, target, set, clear } => {
                    let fd = libc::syscall(
                        libc::SYS_open_tree,
                        libc::AT_FDCWD,
                        source.as_ptr(),
                        OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | AT_RECURSIVE,
                    ) as libc::c_int;
                    if fd < 0 {
                        return false;
                    }
                    let ok =
                        set_attr(fd, c"".as_ptr(), libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE, *set, *clear)
                            == 0
                            && libc::syscall(
                                libc::SYS_move_mount,
                                fd,
                                c"".as_ptr(),
                                libc::AT_FDCWD,
                                target.as_ptr(),
                                MOVE_MOUNT_F_EMPTY_PATH,
                            ) == 0;
                    let errno = *libc::__errno_location();
                    libc::close(fd);
                    *libc::__errno_location() = errno;
                    ok
                }
                Op::Tmpfs { target, options } => {
                    libc::mount(
                        c"tmpfs".as_ptr(),
                        target.as_ptr(),
                        c"tmpfs".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV,
                        options.as_ptr().cast(),
                    ) == 0
                }
                Op::Proc(p) => {
                    libc::mount(
                        c"proc".as_ptr(),
                        p.as_ptr(),
                        c"proc".as_ptr(),
                        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                        std::ptr::null(),
                    ) == 0
                }
                Op::Symlink { target, path } => libc::symlink(target.as_ptr(), path.as_ptr()) == 0,
                Op::Write { path, contents } => {
                    let fd = libc::open(path.as_ptr(), libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC, 0o644);
                    if fd < 0 {
                        return false;
                    }
                    let ok = libc::write(fd, contents.as_ptr().cast(), contents.len()) == contents.len() as isize;
                    libc::close(fd) == 0 && ok
                }
            }
        }
    }
}

/// `mount_setattr(dirfd, path, flags, {set, clear})`; 0 on success.
///
/// # Safety
/// A system call on caller-provided pointers.
unsafe fn set_attr(
    dirfd: libc::c_int,
    path: *const libc::c_char,
    flags: libc::c_uint,
    set: u64,
    clear: u64,
) -> libc::c_long {
    let attr = MountAttr { attr_set: set, attr_clr: clear, propagation: 0, userns_fd: 0 };
    unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path,
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_with_network_resolve_the_hosts_names_but_not_its_loopback() {
        let hosts = "127.0.0.1 localhost\n127.0.1.1 vm\n::1 ip6-localhost\n# a comment\n203.0.113.80    pypi.org files.pythonhosted.org # index\n10.1.2.3 mirror\nbogus line\n";
        assert_eq!(host_names(hosts), "203.0.113.80    pypi.org files.pythonhosted.org\n10.1.2.3 mirror\n");
    }

    #[test]
    fn the_layout_holds_the_system_the_runs_own_paths_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let env = tempfile::tempdir().unwrap();
        let spec = Spec {
            workdir: dir.path(),
            binds: &[(env.path().to_path_buf(), false)],
            uid: 1_900_000_001,
            network: false,
        };
        let entries = layout(&spec).unwrap();
        let paths: Vec<&Path> = entries.iter().map(Entry::path).collect();
        for p in ["/usr", "/etc/passwd", "/dev/null", "/proc", "/tmp", "/var/tmp", "/dev/shm"] {
            assert!(paths.contains(&Path::new(p)), "{p} missing from {paths:?}");
        }
        for p in ["/run", "/var/run", "/var/lib", "/home", "/root", "/srv", "/mnt", "/etc/shadow", "/etc/resolv.conf"] {
            assert!(!paths.iter().any(|x| x.starts_with(p)), "{p} is in the root: {paths:?}");
        }
        let own = |p: &Path| entries.iter().find(|e| e.path() == p.canonicalize().unwrap()).cloned();
        assert!(matches!(own(dir.path()), Some(Entry::Bind { writable: true, .. })));
        assert!(matches!(own(env.path()), Some(Entry::Bind { writable: false, .. })));
        let Some(Entry::File { contents, .. }) = entries.iter().find(|e| e.path() == Path::new("/etc/passwd")) else {
            panic!("no passwd")
        };
        let passwd = String::from_utf8_lossy(contents);
        assert_eq!(passwd.lines().count(), 3, "{passwd}");
        assert!(passwd.contains(":1900000001:1900000001:"), "{passwd}");
        assert!(
            !paths.iter().any(|p| p.ends_with("pip.conf") || p.ends_with("gitconfig")),
            "no index token for candidates"
        );
        let with_net = layout(&Spec { network: true, ..spec }).unwrap();
        assert!(with_net.iter().any(|e| e.path() == Path::new("/etc/resolv.conf")));
    }

    #[test]
    fn the_whole_host_is_never_a_bind() {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec { workdir: dir.path(), binds: &[(PathBuf::from("/"), false)], uid: 1, network: false };
        assert!(layout(&spec).unwrap_err().to_string().contains("whole host"));
    }
}
