//! A run's processes: every one it started is found by its session id and
//! killed at the end, and the threads a user runs are counted for
//! `RLIMIT_NPROC`.

use std::path::PathBuf;
use std::time::Duration;

/// Kills a run's session when dropped (unless forgotten after a normal end).
pub(super) struct SessionGuard(pub(super) i32);

impl Drop for SessionGuard {
    fn drop(&mut self) {
        kill_session(self.0);
    }
}

/// Kills the run's process group and every process left in its session;
/// returns how many processes besides the main one were killed.
pub(super) fn kill_session(sid: i32) -> usize {
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
/// Threads the user `uid` runs now (what RLIMIT_NPROC counts).
pub(super) fn threads_of(uid: u32) -> u64 {
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
