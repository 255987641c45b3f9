//! The sandbox on real processes: every limit, the process-tree kill, the
//! scrubbed environment and network isolation.

use std::time::Duration;

use failpass::runner::sandbox::{self, Command, alive};

fn sh(script: &str) -> Command {
    Command::new("/bin/sh", ["-c", script])
}

fn py(code: &str) -> Command {
    Command::new("python3", ["-c", code])
}

#[tokio::test]
async fn exit_status_and_interleaved_output() {
    let r = sandbox::run(&sh("echo out; echo err >&2; exit 3"), None).await.unwrap();
    assert_eq!(r.exit_status, Some(3));
    assert_eq!(r.output, "out\nerr\n");
    assert!(!r.timed_out && !r.output_truncated && !r.succeeded());
    let missing = sandbox::run(&Command::new("/no/such/program", Vec::<String>::new()), None).await.unwrap_err();
    assert!(missing.to_string().contains("/no/such/program"), "{missing}");
}

#[tokio::test]
async fn wall_time_limit_kills_the_run() {
    let mut c = sh("echo started; sleep 30");
    c.limits.wall = Duration::from_millis(300);
    let r = sandbox::run(&c, None).await.unwrap();
    assert!(r.timed_out);
    assert_eq!(r.exit_status, None);
    assert_eq!(r.signal, Some(libc::SIGKILL));
    assert!(r.duration < Duration::from_secs(5), "{:?}", r.duration);
    assert_eq!(r.output, "started\n", "output before the kill is kept");
}

#[tokio::test]
async fn cpu_limit_stops_a_busy_loop() {
    let mut c = py("while True: pass");
    c.limits.cpu_seconds = 1;
    c.limits.wall = Duration::from_secs(20);
    let r = sandbox::run(&c, None).await.unwrap();
    assert!(r.cpu_limited, "{r:?}");
    assert!(!r.timed_out);
    assert!(r.duration < Duration::from_secs(10), "{:?}", r.duration);
}

#[tokio::test]
async fn memory_limit_fails_a_large_allocation() {
    let mut c = py("x = bytearray(2 * 1024**3)\nprint('allocated')");
    c.limits.memory_bytes = 512 << 20;
    let r = sandbox::run(&c, None).await.unwrap();
    assert_ne!(r.exit_status, Some(0));
    assert!(r.output.contains("MemoryError"), "{}", r.output);
    assert!(!r.output.contains("allocated"));
}

#[tokio::test]
async fn output_cap_keeps_the_start_and_the_end_and_counts_the_rest() {
    let mut c =
        py("import sys\nsys.stdout.write('x' * 1_000_000)\nprint('tail')\nraise SystemExit('Error: at the very end')");
    c.limits.output_bytes = 10_000;
    let r = sandbox::run(&c, None).await.unwrap();
    assert_eq!(r.exit_status, Some(1), "a capped run still finishes");
    assert!(r.output_truncated);
    assert_eq!(r.output_bytes, 1_000_005 + "Error: at the very end\n".len() as u64);
    assert!(r.output.starts_with(&"x".repeat(5_000)), "the start is kept");
    assert!(
        r.output.ends_with("tail\nError: at the very end\n"),
        "the end, where the failure is, is kept: {}",
        &r.output[r.output.len() - 80..]
    );
    assert!(r.output.contains("bytes cut"), "the cut is marked");
    assert!(r.output.len() < 10_100);
}

/// Processes (outside any namespace view) whose command line holds `token`.
pub fn processes_with(token: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| alive(*pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(token))
        })
        .collect()
}

#[tokio::test]
async fn no_process_outlives_its_run() {
    // A child that forks into the background and sleeps, a grandchild, and
    // one that leaves the session; each sleeps a unique number of seconds.
    let c = sh("sleep 61.1 & (sleep 61.2 & wait) & setsid sleep 61.3 & sleep 0.3; exit 0");
    let r = sandbox::run(&c, None).await.unwrap();
    assert_eq!(r.exit_status, Some(0), "{}", r.output);
    tokio::time::sleep(Duration::from_millis(200)).await;
    for token in ["61.1", "61.2"] {
        assert!(processes_with(token).is_empty(), "`sleep {token}` outlived its run");
    }
    if r.isolation.pid_namespace {
        assert!(processes_with("61.3").is_empty(), "a new session does not escape a PID namespace");
    } else {
        for pid in processes_with("61.3") {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    // The same when the wall limit strikes.
    let mut c = sh("sleep 62.1 & sleep 60");
    c.limits.wall = Duration::from_millis(300);
    let r = sandbox::run(&c, None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(r.timed_out && processes_with("62.1").is_empty());
    assert!(sandbox::pid_isolation_available() == r.isolation.pid_namespace);
}

#[tokio::test]
async fn environment_is_scrubbed_and_the_directory_is_private() {
    // cargo runs tests with CARGO_MANIFEST_DIR (and the rest of its environment) set.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let parent = tempfile::tempdir().unwrap();
    let mut c = sh("env; pwd; echo made > file.txt");
    c.env.push(("ASKED_FOR".into(), "yes".into()));
    c.files.push(("input.txt".into(), b"hello".to_vec()));
    let r = sandbox::run(&c, Some(parent.path())).await.unwrap();
    assert!(!r.output.contains("CARGO_"), "{}", r.output);
    assert!(r.output.contains("ASKED_FOR=yes"));
    let home = r.output.lines().find_map(|l| l.strip_prefix("HOME=")).unwrap().to_owned();
    assert!(home.starts_with(parent.path().to_str().unwrap()), "{home}");
    assert!(r.output.contains(&format!("\n{home}\n")), "the working directory is the run's own");
    assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0, "the run's directory is removed afterwards");
    let r = sandbox::run(&sh("cat input.txt"), None).await.unwrap();
    assert_eq!(r.exit_status, Some(1), "files of one run are not seen by another: {}", r.output);
}

#[tokio::test]
async fn no_network_where_the_os_allows_it() {
    use sandbox::NetworkAccess;
    // Listening on every address; any listener will do.
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let host_ip = crate::escape::host_address().expect("a non-loopback address here");
    let host = host_ip.to_string();
    let probe = crate::escape::connect_probe(&[
        ("loopback", "127.0.0.1", port),
        ("host", &host, port),
        // Fenced off: no packet leaves for it (a prohibit route answers at once).
        ("metadata", "169.254.169.254", 80),
    ]);
    let closed = sandbox::run(&py(&probe), None).await.unwrap();
    let fenced = sandbox::run(&Command { network: true, ..py(&probe) }, None).await.unwrap();
    let allowed = Command { network: true, allow_networks: vec![ipnet::IpNet::from(host_ip)], ..py(&probe) };
    let open = sandbox::run(&allowed, None).await.unwrap();
    if !sandbox::network_isolation_available() {
        eprintln!("network namespaces are not available here (not root?): runs keep the host's network");
        assert_eq!(closed.isolation.network, NetworkAccess::Host);
        return;
    }
    assert_eq!(closed.isolation.network, NetworkAccess::None);
    assert!(closed.output.contains("loopback refused") && closed.output.contains("host refused"), "{}", closed.output);
    // Asked for, the network is outbound only: never the host's loopback nor a metadata
    // service, and the host's own other addresses only where the operator allows them.
    assert_eq!(fenced.isolation.network, NetworkAccess::Outbound, "{fenced:?}");
    for label in ["loopback", "host", "metadata"] {
        assert!(fenced.output.contains(&format!("{label} refused")), "{}", fenced.output);
    }
    assert!(open.output.contains("host connected"), "{}", open.output);
    assert!(open.output.contains("loopback refused") && open.output.contains("metadata refused"), "{}", open.output);
}

/// These machines run the tests as root, as runners are deployed; the
/// checks below are the root case (without root the sandbox keeps the
/// worker's user and says so in `Finished::uid`).
fn require_root() {
    assert!(sandbox::switches_user(), "the sandbox tests run as root (as runners do): run `cargo xtask test` as root");
}

#[tokio::test]
async fn every_run_has_a_user_of_its_own_never_root() {
    require_root();
    let locked = tempfile::tempdir().unwrap(); // root's: others may not write
    let script = format!(
        "id -u; id -G; echo ok > mine.txt && cat mine.txt; touch {}/x 2>&1 || echo denied",
        locked.path().display()
    );
    let cmd = sh(&script);
    let (a, b) = tokio::join!(sandbox::run(&cmd, None), sandbox::run(&cmd, None));
    let (a, b) = (a.unwrap(), b.unwrap());
    for r in [&a, &b] {
        let lines: Vec<&str> = r.output.lines().collect();
        let uid = r.uid.expect("a run's own user");
        assert_eq!(lines[0], uid.to_string(), "{}", r.output);
        assert_ne!(uid, 0);
        assert_eq!(lines[1], uid.to_string(), "no supplementary groups: {}", r.output);
        assert_eq!(lines[2], "ok", "the run's own directory is writable: {}", r.output);
        assert!(r.output.contains("denied") || r.output.contains("Read-only"), "nothing else is: {}", r.output);
    }
    assert_ne!(a.uid, b.uid, "two runs at once never share a user");
    assert!(!locked.path().join("x").exists());
}

#[tokio::test]
async fn a_run_cannot_touch_another_runs_directory() {
    require_root();
    let parent = tempfile::tempdir().unwrap();
    // A long run holding a file, and a second run in the same parent trying to read and change it.
    let mut slow = sh("echo secret > held.txt; pwd > /dev/stderr; sleep 3");
    slow.split_stderr = true;
    let first = {
        let p = parent.path().to_path_buf();
        tokio::spawn(async move { sandbox::run(&slow, Some(&p)).await.unwrap() })
    };
    let start = std::time::Instant::now();
    let held = loop {
        let found =
            std::fs::read_dir(parent.path()).unwrap().flatten().map(|e| e.path().join("held.txt")).find(|p| p.exists());
        if let Some(p) = found {
            break p;
        }
        assert!(start.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let probe = format!(
        "cat {0} 2>&1; echo changed > {0} 2>&1; ls {1} 2>&1; echo done",
        held.display(),
        held.parent().unwrap().display()
    );
    let r = sandbox::run(&sh(&probe), Some(parent.path())).await.unwrap();
    assert!(!r.output.contains("secret"), "another run's file was read: {}", r.output);
    // In a root of its own the other run's directory is not even there.
    assert!(r.isolation.built_root && r.output.contains("No such file or directory"), "{}", r.output);
    assert_eq!(std::fs::read_to_string(&held).unwrap(), "secret\n", "and not changed");
    first.await.unwrap();
}

#[tokio::test]
async fn nothing_written_outside_the_runs_directory_survives() {
    require_root();
    let marker = format!("fp-{}", uuid::Uuid::new_v4().simple());
    std::fs::write(std::env::temp_dir().join(format!("{marker}-host")), "the host's").unwrap();
    let script = format!(
        "ls /tmp | grep -c {m}-host; for d in /tmp /var/tmp /dev/shm; do echo x > $d/{m} && echo wrote $d; done; \
         echo x > /etc/{m} 2>&1 || echo etc-refused; echo x > $HOME/../{m} 2>&1 || echo parent-refused",
        m = marker
    );
    let parent = tempfile::tempdir().unwrap();
    let r = sandbox::run(&sh(&script), Some(parent.path())).await.unwrap();
    assert!(r.isolation.built_root, "{r:?}");
    let lines: Vec<&str> = r.output.lines().collect();
    assert_eq!(lines[0], "0", "the host's /tmp is not the run's: {}", r.output);
    for d in ["/tmp", "/var/tmp", "/dev/shm"] {
        assert!(r.output.contains(&format!("wrote {d}")), "a private {d} is writable inside: {}", r.output);
        assert!(!std::path::Path::new(d).join(&marker).exists(), "{d}/{marker} outlived the run");
    }
    assert!(r.output.contains("etc-refused") && r.output.contains("parent-refused"), "{}", r.output);
    assert!(!std::path::Path::new("/etc").join(&marker).exists());
    assert_eq!(
        std::fs::read_dir(parent.path()).unwrap().count(),
        0,
        "the parent holds nothing, not even the run's directory"
    );
    let _ = std::fs::remove_file(std::env::temp_dir().join(format!("{marker}-host")));
}

#[tokio::test]
async fn a_fork_bomb_stops_at_the_process_limit() {
    require_root();
    let mut c = sh("bomb() { bomb | bomb & }; bomb; sleep 2; echo survived");
    c.limits.processes = 64;
    c.limits.wall = Duration::from_secs(20);
    let started = std::time::Instant::now();
    let r = sandbox::run(&c, None).await.unwrap();
    assert!(
        !r.timed_out,
        "the bomb was contained before the wall limit: {}",
        r.output.chars().take(300).collect::<String>()
    );
    assert!(
        r.output.contains("Resource temporarily unavailable")
            || r.output.contains("Cannot fork")
            || r.output.contains("retry"),
        "{}",
        &r.output[..r.output.len().min(400)]
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    let uid = r.uid.unwrap();
    // Where a pids controller is mounted (cgroup v2, or v1's pids hierarchy, as here) the run had
    // a cgroup of its own with pids.max besides RLIMIT_NPROC on its user; it is gone afterwards.
    assert_eq!(r.isolation.pids_cgroup, sandbox::pids_cgroup_available(), "{r:?}");
    let leftover = || {
        std::fs::read_dir("/sys/fs/cgroup")
            .into_iter()
            .flatten()
            .chain(std::fs::read_dir("/sys/fs/cgroup/pids").into_iter().flatten())
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(&format!("failpass-run-{uid}-")))
    };
    // Removed once the kernel has reaped the bomb's last child (within seconds on a loaded machine).
    let waited = std::time::Instant::now();
    while leftover() && waited.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!leftover(), "the run's cgroup was removed");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let left = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read_to_string(e.path().join("status")).is_ok_and(|s| {
                s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some(&uid.to_string()))
            })
        })
        .count();
    assert_eq!(left, 0, "no process of the run's user is left");
}

#[tokio::test]
async fn a_run_sees_only_its_own_processes() {
    let r = sandbox::run(&sh("ls /proc | grep -c '^[0-9]'"), None).await.unwrap();
    if !r.isolation.pid_namespace {
        eprintln!("no PID namespace here (not root)");
        return;
    }
    let visible: u32 = r.output.trim().parse().unwrap();
    assert!(visible < 10, "the run sees {visible} processes: its own /proc shows only its namespace");
}

#[tokio::test]
async fn the_database_file_is_the_workers_alone() {
    use std::os::unix::fs::PermissionsExt;
    let (_s, dir) = crate::helpers::sqlite_storage().await;
    for f in ["t.db", "t.db-wal", "t.db-shm"] {
        let p = dir.path().join(f);
        if p.exists() {
            assert_eq!(
                std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
                0o600,
                "{f}: runs as another user must not read it"
            );
        }
    }
}

#[tokio::test]
async fn output_with_nul_characters_is_stored_as_text() {
    let r = sandbox::run(&py("import sys; sys.stdout.write('a\\0b\\xff'); sys.stdout.flush()"), None).await.unwrap();
    assert!(!r.output.contains('\0'), "{:?}", r.output);
    assert!(r.output.starts_with("a\u{FFFD}b"), "{:?}", r.output);
}

#[tokio::test]
async fn a_run_is_in_a_pids_cgroup_of_its_own_where_one_can_be_made() {
    require_root();
    if !sandbox::pids_cgroup_available() {
        eprintln!("no pids controller mounted here: RLIMIT_NPROC on the run's own user is the limit");
        return;
    }
    let mut c = sh("grep -E '(^0::|pids)' /proc/self/cgroup");
    c.limits.processes = 37;
    let r = sandbox::run(&c, None).await.unwrap();
    assert!(r.isolation.pids_cgroup);
    let uid = r.uid.unwrap();
    assert!(r.output.contains(&format!("failpass-run-{uid}")), "{}", r.output);
}
