//! The sandbox on real processes: every limit, the process-tree kill, the
//! scrubbed environment and network isolation.

use std::time::Duration;

use failpass::runner::sandbox::{self, alive, Command};

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
    let mut c = py("import sys\nsys.stdout.write('x' * 1_000_000)\nprint('tail')\nraise SystemExit('Error: at the very end')");
    c.limits.output_bytes = 10_000;
    let r = sandbox::run(&c, None).await.unwrap();
    assert_eq!(r.exit_status, Some(1), "a capped run still finishes");
    assert!(r.output_truncated);
    assert_eq!(r.output_bytes, 1_000_005 + "Error: at the very end\n".len() as u64);
    assert!(r.output.starts_with(&"x".repeat(5_000)), "the start is kept");
    assert!(r.output.ends_with("tail\nError: at the very end\n"), "the end, where the failure is, is kept: {}", &r.output[r.output.len() - 80..]);
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
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(token)))
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
    if r.pid_isolated {
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
    assert!(sandbox::pid_isolation_available() == r.pid_isolated);
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
    // PostgreSQL listens on 127.0.0.1:5432 on these machines; any listener will do.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let probe = format!("import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    print('connected')\nexcept OSError as e:\n    print('refused', e)");
    let open = sandbox::run(&Command { network: true, ..py(&probe) }, None).await.unwrap();
    assert!(open.output.contains("connected"), "{}", open.output);
    let closed = sandbox::run(&py(&probe), None).await.unwrap();
    if sandbox::network_isolation_available() {
        assert!(closed.network_isolated);
        assert!(closed.output.contains("refused"), "{}", closed.output);
    } else {
        eprintln!("network namespaces are not available here (not root?): runs keep the network");
        assert!(!closed.network_isolated);
    }
}

#[tokio::test]
async fn candidates_run_as_an_unprivileged_user_when_the_worker_is_root() {
    let Some(user) = sandbox::unprivileged_user() else {
        eprintln!("not root: runs keep the worker's user");
        return;
    };
    let locked = tempfile::tempdir().unwrap(); // root's, 0755: others may read, not write
    let mut c = sh(&format!("id -u; echo ok > mine.txt && cat mine.txt; touch {}/x 2>&1 || echo denied", locked.path().display()));
    c.run_as = Some(user);
    let r = sandbox::run(&c, None).await.unwrap();
    let lines: Vec<&str> = r.output.lines().collect();
    assert_eq!(lines[0], user.0.to_string(), "{}", r.output);
    assert_eq!(lines[1], "ok", "the run's own directory is writable: {}", r.output);
    assert!(r.output.contains("denied") || r.output.contains("Permission denied"), "root's files are not: {}", r.output);
    assert!(!locked.path().join("x").exists());
}

#[tokio::test]
async fn a_run_sees_only_its_own_processes() {
    let r = sandbox::run(&sh("ls /proc | grep -c '^[0-9]'"), None).await.unwrap();
    if !r.pid_isolated {
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
            assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600, "{f}: runs as another user must not read it");
        }
    }
}
