//! Replays of the ways out of the sandbox that issue 31 found, each on real
//! processes: host services through Unix sockets (path and abstract) and the
//! host's loopback, the data directory's neighbours, the mount table, and the
//! system calls the filter refuses. Candidates, setup steps and the agent
//! command are each tried.

/// An address of this machine other than loopback, to show that outbound
/// network reaches past the run (a connection to it stays on this machine).
pub fn host_address() -> Option<std::net::IpAddr> {
    failpass::runner::sandbox::net::host_addresses().into_iter().find(|a| !a.is_loopback()).map(std::net::IpAddr::V4)
}

/// Python that tries to connect to each `(label, host, port)` and prints
/// `label connected` or `label refused (why)`.
pub fn connect_probe(targets: &[(&str, &str, u16)]) -> String {
    let list: Vec<String> = targets.iter().map(|(l, h, p)| format!("({l:?}, {h:?}, {p})")).collect();
    format!(
        "import socket\nfor label, host, port in [{}]:\n    try:\n        socket.create_connection((host, port), timeout=3).close()\n        print(label, 'connected')\n    except OSError as e:\n        print(label, 'refused', e)\n",
        list.join(", ")
    )
}

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use failpass::runner::sandbox::{self, Command, root};

fn require_full_sandbox() {
    assert!(sandbox::switches_user(), "these replays run as root, as runners do: run `cargo xtask test` as root");
    assert!(sandbox::pid_isolation_available() && sandbox::network_isolation_available(), "namespaces");
    assert!(sandbox::net::outbound_available(), "slirp4netns, which `cargo xtask test` installs");
    assert!(sandbox::syscall_filter_available(), "seccomp");
}

fn sh(script: &str) -> Command {
    Command::new("/bin/sh", ["-c", script])
}

/// Mount points in a run's `/proc/self/mountinfo` (its fifth field).
fn mount_points(mountinfo: &str) -> BTreeSet<PathBuf> {
    mountinfo.lines().filter_map(|l| l.split(' ').nth(4)).map(|p| PathBuf::from(p.replace("\\040", " "))).collect()
}

/// The mount table inside a run is exactly what `root::layout` lists: the
/// root, each bind, tmpfs and proc at its path; and what a run's root holds
/// at its top is only that list's top directories.
#[tokio::test]
async fn the_mount_table_inside_a_run_is_the_layout() {
    require_full_sandbox();
    let env = tempfile::tempdir().unwrap();
    std::fs::write(env.path().join("lib.py"), "X = 1\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut c = sh("cat /proc/self/mountinfo; echo ---; ls -a /; echo ---; pwd");
    c.binds.push((env.path().to_path_buf(), false));
    let r = sandbox::run_in(&c, dir.path()).await.unwrap();
    assert!(r.succeeded(), "{}", r.output);
    let mut parts = r.output.split("---\n");
    let (mountinfo, top, pwd) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap().trim());
    let expected = root::layout(&root::Spec {
        workdir: Path::new(pwd),
        binds: &[(env.path().to_path_buf(), false)],
        uid: r.uid.unwrap(),
        network: false,
    })
    .unwrap();
    let mut want: BTreeSet<PathBuf> = expected
        .iter()
        .filter(|e| matches!(e, root::Entry::Bind { .. } | root::Entry::Tmpfs { .. } | root::Entry::Proc { .. }))
        .map(|e| e.path().to_path_buf())
        .collect();
    want.insert(PathBuf::from("/"));
    let seen = mount_points(mountinfo);
    // A bound tree may hold mounts of its own (none of these do on a plain host).
    let extra: Vec<&PathBuf> =
        seen.difference(&want).filter(|p| !want.iter().any(|w| w != Path::new("/") && p.starts_with(w))).collect();
    let missing: Vec<&PathBuf> = want.difference(&seen).collect();
    assert!(extra.is_empty() && missing.is_empty(), "extra mounts {extra:?}, missing {missing:?}\n{mountinfo}");
    let names: BTreeSet<&str> = top.lines().filter(|l| *l != "." && *l != "..").collect();
    for gone in ["run", "home", "root", "srv", "mnt", "opt", "media", "boot", "work"] {
        if !(pwd.starts_with(&format!("/{gone}/")) || env.path().starts_with(format!("/{gone}/"))) {
            assert!(!names.contains(gone), "/{gone} is in a run's root: {names:?}");
        }
    }
    for here in ["usr", "etc", "dev", "proc", "sys", "tmp", "var"] {
        assert!(names.contains(here), "/{here} is missing: {names:?}");
    }
    // Read-only everywhere but the run's own directory and the fresh temporary ones.
    let mut w =
        sh("for d in / /usr /etc /dev /sys /var \"$ENV\"; do touch \"$d/x\" 2>/dev/null && echo \"wrote $d\"; done; \
                    for d in /tmp /var/tmp /dev/shm .; do touch \"$d/x\" && echo \"ok $d\"; done");
    w.env.push(("ENV".into(), env.path().to_string_lossy().into_owned()));
    w.binds.push((env.path().to_path_buf(), false));
    let r = sandbox::run(&w, None).await.unwrap();
    assert!(!r.output.contains("wrote"), "{}", r.output);
    assert_eq!(r.output.matches("ok ").count(), 4, "{}", r.output);
}

/// Host services a run might reach: a path socket (in a directory anyone may
/// enter, the socket open to all), an abstract socket and a TCP listener on
/// 127.0.0.1, all this test's own, plus PostgreSQL's real socket.
struct HostServices {
    _dir: tempfile::TempDir,
    path: PathBuf,
    path_listener: std::os::unix::net::UnixListener,
    abstract_name: String,
    abstract_listener: std::os::unix::net::UnixListener,
    tcp: std::net::TcpListener,
}

impl HostServices {
    fn start() -> HostServices {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let path = dir.path().join("service.sock");
        let path_listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        let abstract_name = format!("failpass-escape-{}", uuid::Uuid::new_v4().simple());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        let abstract_listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        path_listener.set_nonblocking(true).unwrap();
        abstract_listener.set_nonblocking(true).unwrap();
        tcp.set_nonblocking(true).unwrap();
        HostServices { _dir: dir, path, path_listener, abstract_name, abstract_listener, tcp }
    }

    /// Python that tries each service and prints `LABEL reached` or `LABEL refused (why)`.
    fn probe(&self) -> String {
        let port = self.tcp.local_addr().unwrap().port();
        format!(
            r#"import socket
def unix(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(addr)
def tcp(host):
    socket.create_connection((host, {port}), timeout=3).close()
for label, go in [("path", lambda: unix({path:?})), ("abstract", lambda: unix("\0" + {name:?})),
                  ("postgres", lambda: unix("/var/run/postgresql/.s.PGSQL.5432")),
                  ("loopback", lambda: tcp("127.0.0.1")), ("gateway", lambda: tcp("10.0.2.2"))]:
    try:
        go()
        print(label, "reached")
    except OSError as e:
        print(label, "refused", e)
"#,
            path = self.path.to_string_lossy(),
            name = self.abstract_name,
        )
    }

    /// Asserts `output` reached none of them, and that none saw a connection.
    #[track_caller]
    fn assert_unreached(&self, who: &str, output: &str) {
        for label in ["path", "abstract", "postgres", "loopback", "gateway"] {
            assert!(output.contains(&format!("{label} refused")), "{who}: {label} was not refused:\n{output}");
        }
        assert!(!output.contains("reached"), "{who}:\n{output}");
        let would_block = |r: std::io::Result<()>| matches!(r, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        assert!(would_block(self.path_listener.accept().map(|_| ())), "{who}: the path socket took a connection");
        assert!(
            would_block(self.abstract_listener.accept().map(|_| ())),
            "{who}: the abstract socket took a connection"
        );
        assert!(would_block(self.tcp.accept().map(|_| ())), "{who}: the TCP listener took a connection");
    }
}

/// A candidate, a setup step and the refine loop's agent command each try
/// the host's services through a path socket, an abstract socket,
/// PostgreSQL's socket and the loopback: none is reached, though the same
/// probe outside the sandbox reaches them.
#[tokio::test]
async fn no_run_reaches_host_services_through_sockets_or_the_loopback() {
    require_full_sandbox();
    let services = HostServices::start();
    let probe = services.probe();
    // The probe works: outside the sandbox it reaches this test's own services.
    let direct = std::process::Command::new("/usr/bin/python3").args(["-c", &probe]).output().unwrap();
    let direct = String::from_utf8_lossy(&direct.stdout).into_owned();
    for label in ["path", "abstract", "loopback"] {
        assert!(direct.contains(&format!("{label} reached")), "{direct}");
    }
    for _ in 0..3 {
        for l in [&services.path_listener, &services.abstract_listener] {
            let _ = l.accept();
        }
        let _ = services.tcp.accept();
    }
    for (who, output) in in_every_kind_of_run(&probe).await {
        services.assert_unreached(who, &output);
    }
}

/// What Python `script` printed run as a candidate, as a setup step and as
/// the refine loop's agent command, each as the runner runs them.
async fn in_every_kind_of_run(script: &str) -> [(&'static str, String); 3] {
    let candidate = sandbox::run(&Command::new("python3", ["-c", script]), None).await.unwrap();
    assert!(candidate.isolation.built_root && candidate.isolation.syscall_filter, "{candidate:?}");
    let data = tempfile::tempdir().unwrap();
    let cache = failpass::runner::env::EnvCache::new(data.path().join("envs"));
    let recipe = failpass_shared::api::jobs::Recipe {
        setup: vec![format!("python3 - > printed.txt 2>&1 <<'PY'\n{script}PY")],
        ..Default::default()
    };
    let built = cache.get(&recipe, data.path()).await.unwrap();
    let setup = std::fs::read_to_string(built.dir.join("printed.txt")).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let input = serde_json::json!({"report": {"title": "t"}, "iteration": 1, "history": []});
    let command = format!("python3 - <<'PY'\n{script}PY");
    let agent = failpass::runner::refine::agent_command(
        &command,
        &input,
        Duration::from_secs(30),
        &[],
        scratch.path(),
        &[],
        &[],
    )
    .await
    .unwrap();
    [("a candidate", candidate.output), ("a setup step", setup), ("the agent command", agent.candidate)]
}

/// The data directory's neighbours: a server log beside it (world-readable,
/// holding a password, as `serve --demo` once printed it), the database in
/// it, other projects' environments. A setup step and a candidate see
/// their own tree and nothing else, whatever the host's modes.
#[tokio::test]
async fn a_run_sees_nothing_beside_its_environment() {
    use std::os::unix::fs::PermissionsExt;
    require_full_sandbox();
    let parent = tempfile::tempdir().unwrap(); // 0700, as mktemp -d makes it
    let data = parent.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let log = parent.path().join("server.log");
    std::fs::write(&log, "demo-admin password: hunter2-escape\n").unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(data.join("failpass.db"), "not for runs").unwrap();
    let cache = failpass::runner::env::EnvCache::new(data.join("envs"));
    let look = format!(
        "cat {log} 2>&1; ls -a {parent} 2>&1; ls -a {data} 2>&1; ls -a {data}/envs 2>&1; echo looked",
        log = log.display(),
        parent = parent.path().display(),
        data = data.display()
    );
    let other = cache
        .get(
            &failpass_shared::api::jobs::Recipe { setup: vec!["echo other > other.txt".into()], ..Default::default() },
            &data,
        )
        .await
        .unwrap();
    let recipe = failpass_shared::api::jobs::Recipe {
        setup: vec![format!("({look}) > seen.txt"), "echo graded-in > lib.txt".into()],
        ..Default::default()
    };
    let built = cache.get(&recipe, &data).await.unwrap();
    let setup_saw = std::fs::read_to_string(built.dir.join("seen.txt")).unwrap();
    let mut c = sh(&format!("cat \"$ENV/lib.txt\"; {look}"));
    c.env.push(("ENV".into(), built.dir.to_string_lossy().into_owned()));
    c.binds.push((built.dir.clone(), false));
    let r = sandbox::run(&c, None).await.unwrap();
    assert!(
        r.output.starts_with("graded-in\n"),
        "the candidate reads its environment under a 0700 parent: {}",
        r.output
    );
    for (who, saw) in [("a setup step", setup_saw.as_str()), ("a candidate", r.output.as_str())] {
        assert!(saw.ends_with("looked\n"), "{who}: {saw}");
        assert!(!saw.contains("hunter2"), "{who} read the log beside the data directory: {saw}");
        assert!(saw.contains("server.log: No such file or directory"), "{who}: {saw}");
        assert!(
            !saw.contains("\nserver.log\n") && !saw.contains("\nfailpass.db\n"),
            "{who} listed the data directory's neighbours: {saw}"
        );
        assert!(!saw.contains(&other.hash), "{who} saw another environment: {saw}");
    }
}

/// Each call the filter refuses answers EPERM inside a run (`clone3`
/// ENOSYS, so C libraries fall back to `clone`); calls that would work
/// without it (ptrace(PTRACE_TRACEME), unshare(CLONE_NEWUSER), an x32
/// getpid) are refused too, and the kernel says a filter is installed.
#[tokio::test]
async fn every_filtered_system_call_is_refused_in_every_kind_of_run() {
    require_full_sandbox();
    let calls: Vec<String> = sandbox::FILTERED_CALLS.iter().map(|(n, nr)| format!("({n:?}, {nr}, 0)")).collect();
    let flags = [
        ("CLONE_NEWNS", libc::CLONE_NEWNS),
        ("CLONE_NEWCGROUP", libc::CLONE_NEWCGROUP),
        ("CLONE_NEWUTS", libc::CLONE_NEWUTS),
        ("CLONE_NEWIPC", libc::CLONE_NEWIPC),
        ("CLONE_NEWUSER", libc::CLONE_NEWUSER),
        ("CLONE_NEWPID", libc::CLONE_NEWPID),
        ("CLONE_NEWNET", libc::CLONE_NEWNET),
    ];
    let mut with_flags = Vec::new();
    for (name, nr) in sandbox::FILTERED_NAMESPACE_CALLS {
        for (flag, value) in flags {
            // clone also gets SIGCHLD, as a fork would.
            let arg = if *name == "clone" { value | libc::SIGCHLD } else { value };
            with_flags.push(format!("(\"{name}({flag})\", {nr}, {arg})"));
        }
    }
    let script = format!(
        r#"import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
status = open("/proc/self/status").read()
print("filter", [l for l in status.splitlines() if l.startswith("Seccomp:")])
if "Seccomp:\t2" not in status:
    raise SystemExit("no filter")
def call(nr, arg):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), ctypes.c_long(arg), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0))
    return r, ctypes.get_errno()
for name, nr, arg in [{calls}, {flagged}]:
    r, e = call(nr, arg)
    print(name, "EPERM" if (r == -1 and e == 1) else "ANSWERED %d %d" % (r, e))
r, e = call({clone3}, 0)
print("clone3", "ENOSYS" if (r == -1 and e == 38) else "ANSWERED %d %d" % (r, e))
r, e = call({getpid} | 0x40000000, 0)
print("x32 getpid", "EPERM" if (r == -1 and e == 1) else "ANSWERED %d %d" % (r, e))
r, e = call({socket}, {vsock})
print("socket(AF_VSOCK)", "EPERM" if (r == -1 and e == 1) else "ANSWERED %d %d" % (r, e))
r, e = call({unshare}, 0x400)
print("unshare(CLONE_FILES)", "allowed" if r == 0 else "ANSWERED %d %d" % (r, e))
import threading, subprocess
t = threading.Thread(target=lambda: None); t.start(); t.join()
print("threads and subprocesses", subprocess.run(["/bin/true"]).returncode == 0)
"#,
        calls = calls.join(", "),
        flagged = with_flags.join(", "),
        clone3 = libc::SYS_clone3,
        getpid = libc::SYS_getpid,
        unshare = libc::SYS_unshare,
        socket = libc::SYS_socket,
        vsock = libc::AF_VSOCK,
    );
    let expected = sandbox::FILTERED_CALLS.len() + with_flags.len();
    let check = |who: &str, out: &str| {
        assert!(out.contains("Seccomp:\\t2"), "{who}: no filter: {out}");
        assert_eq!(out.matches(" EPERM").count(), expected + 2, "{who}: every filtered call is refused:\n{out}");
        assert!(!out.contains("ANSWERED"), "{who}:\n{out}");
        for line in ["clone3 ENOSYS", "unshare(CLONE_FILES) allowed", "threads and subprocesses True"] {
            assert!(out.contains(line), "{who}: {line}:\n{out}");
        }
    };
    for (who, output) in in_every_kind_of_run(&script).await {
        check(who, &output);
    }
}

/// A data directory under a parent only root may enter (0700, as
/// `mktemp -d` makes it): an attempt still grades, in environments built
/// there (it used to be retried for ever, each try a warning in the log).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_directory_under_a_private_parent_grades() {
    use std::os::unix::fs::PermissionsExt;
    require_full_sandbox();
    let app = crate::helpers::spawn_app_with_workers(false, 1).await;
    let parent = app.data_dir().parent().unwrap().to_path_buf();
    assert_eq!(std::fs::metadata(&parent).unwrap().permissions().mode() & 0o777, 0o700);
    app.project("p/lib").await;
    for (name, role, mode) in [("v1", "buggy", "buggy"), ("v2", "fixed", "fixed")] {
        let recipe =
            serde_json::json!({"setup": [format!("echo {mode} > mode.txt")], "env": {"MODE_FILE": "{env}/mode.txt"}});
        let r = app
            .post(
                "/api/v1/environments",
                &serde_json::json!({"project": "p/lib", "name": name, "role": role, "recipe": recipe}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let report = app
        .report(serde_json::json!({"project": "p/lib", "external_id": "1", "title": "mode bug",
            "oracle": {"kind": "fail_to_pass", "source": "authored", "command": "python3 candidate.py"}}))
        .await;
    let candidate =
        "import os\nraise SystemExit(1 if open(os.environ['MODE_FILE']).read().strip() == 'buggy' else 0)\n";
    let a = app
        .attempt(
            serde_json::json!({"report_id": report, "agent": "x", "verdict": "hypothesis", "verdict_source": "llm",
            "candidate": candidate, "verify": true}),
        )
        .await;
    crate::runner::drain(&app, Duration::from_secs(120)).await;
    let graded = app.get(&format!("/api/v1/attempts/{}", a["id"])).await.body;
    assert_eq!(graded["verdict"], "reproduced", "{}", graded["grade"]);
    let isolation = &graded["runs"][0]["isolation"];
    assert_eq!(
        (isolation["own_user"].as_bool(), isolation["built_root"].as_bool(), isolation["syscall_filter"].as_bool()),
        (Some(true), Some(true), Some(true)),
        "each run records the sandbox it had: {isolation}"
    );
    assert_eq!(isolation["network"], "none");
}

/// A run has an IPC namespace of its own: a System V shared-memory segment
/// of the host's, open to everyone, is neither listed nor attachable.
#[tokio::test]
async fn a_run_sees_no_shared_memory_of_the_hosts() {
    require_full_sandbox();
    let key: libc::key_t = 0x0fa1_0000 | (std::process::id() as libc::key_t & 0xffff);
    // SAFETY: a segment of this test's own, removed below.
    let id = unsafe { libc::shmget(key, 4096, libc::IPC_CREAT | 0o666) };
    assert!(id >= 0, "{}", std::io::Error::last_os_error());
    let script = format!(
        r#"import ctypes
libc = ctypes.CDLL(None, use_errno=True)
listed = open("/proc/sysvipc/shm").read()
print("listed" if " {key} " in listed else "not listed")
print("attached" if libc.shmget({key}, 0, 0) >= 0 else "no such segment")
"#
    );
    let direct = std::process::Command::new("/usr/bin/python3").args(["-c", &script]).output().unwrap();
    let r = sandbox::run(&Command::new("python3", ["-c", script.as_str()]), None).await;
    // SAFETY: removing the segment made above.
    unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
    assert_eq!(String::from_utf8_lossy(&direct.stdout), "listed\nattached\n", "the probe sees it from outside");
    assert_eq!(r.unwrap().output, "not listed\nno such segment\n");
}
