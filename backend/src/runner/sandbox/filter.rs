//! The system-call filter every run gets, installed last before its command
//! starts (after it gave up root): seccomp-bpf, compiled by `seccompiler`
//! (rust-vmm's, which Firecracker uses) from the list below.
//!
//! Refused with `EPERM`: what a run never needs and what would undo the
//! sandbox — mounting (old and new mount API), `pivot_root`, `chroot`, new
//! namespaces (`unshare`, `setns`, and `clone` with any namespace flag),
//! tracing other processes (`ptrace`, `process_vm_*`), BPF and performance
//! counters, the kernel keyring, `userfaultfd`, modules, kexec, reboot, swap,
//! `io_uring` (its operations pass by this filter), and file handles.
//! `clone3` answers `ENOSYS`: its flags sit in memory a filter cannot read,
//! and C libraries then fall back to `clone`, whose flags it can. On
//! x86-64, x32 system calls (numbered from 0x40000000, the same calls under
//! other numbers) are refused whole, and other architectures' calls end the
//! process. `socket(AF_UNIX)` stays (socketpairs): the run's root holds no
//! host socket to connect to, and its network namespace no abstract one.

use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch, sock_filter,
};

/// Refused outright (by name, for the README and the tests).
pub const REFUSED: &[(&str, libc::c_long)] = &[
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("open_tree", libc::SYS_open_tree),
    ("move_mount", libc::SYS_move_mount),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("setns", libc::SYS_setns),
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("reboot", libc::SYS_reboot),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("acct", libc::SYS_acct),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
];

/// Socket families refused (`socket`'s first argument): vsock reaches the
/// hypervisor's services and is not scoped to a network namespace.
pub const REFUSED_SOCKET_FAMILIES: &[(&str, libc::c_int)] = &[("AF_VSOCK", libc::AF_VSOCK)];

/// Refused when their flags (the first argument) ask for any new namespace.
pub const REFUSED_WITH_NAMESPACE_FLAGS: &[(&str, libc::c_long)] =
    &[("unshare", libc::SYS_unshare), ("clone", libc::SYS_clone)];

/// The namespace flags `clone` and `unshare` may not carry.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];

/// x32 system calls carry this bit in their number.
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

#[cfg(target_arch = "x86_64")]
const ARCH: Option<TargetArch> = Some(TargetArch::x86_64);
#[cfg(target_arch = "aarch64")]
const ARCH: Option<TargetArch> = Some(TargetArch::aarch64);
#[cfg(target_arch = "riscv64")]
const ARCH: Option<TargetArch> = Some(TargetArch::riscv64);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]
const ARCH: Option<TargetArch> = None;

/// The filter's programs (installed in order), compiled once; `None` on an
/// architecture seccompiler does not know.
pub(super) fn programs() -> Option<&'static [BpfProgram]> {
    static PROGRAMS: OnceLock<Option<Vec<BpfProgram>>> = OnceLock::new();
    PROGRAMS
        .get_or_init(|| match compile() {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(error = %e, "the sandbox's system-call filter did not compile; runs get none");
                None
            }
        })
        .as_deref()
}

fn compile() -> Result<Option<Vec<BpfProgram>>, seccompiler::Error> {
    let Some(arch) = ARCH else { return Ok(None) };
    let mut refused: std::collections::BTreeMap<i64, Vec<SeccompRule>> =
        REFUSED.iter().map(|(_, nr)| (*nr, Vec::new())).collect();
    for (_, nr) in REFUSED_WITH_NAMESPACE_FLAGS {
        let rules = NAMESPACE_FLAGS
            .iter()
            .map(|flag| {
                let flag = *flag as u32 as u64;
                SeccompRule::new(vec![SeccompCondition::new(
                    0,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::MaskedEq(flag),
                    flag,
                )?])
            })
            .collect::<Result<Vec<_>, _>>()?;
        refused.insert(*nr, rules);
    }
    let families = REFUSED_SOCKET_FAMILIES
        .iter()
        .map(|(_, family)| {
            SeccompRule::new(vec![SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, *family as u64)?])
        })
        .collect::<Result<Vec<_>, _>>()?;
    refused.insert(libc::SYS_socket, families);
    let mut main: BpfProgram =
        SeccompFilter::new(refused, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)?
            .try_into()?;
    if cfg!(target_arch = "x86_64") {
        // Before everything: x32 numbers are the same calls under other
        // numbers, so none of them passes. Jumps are relative, so the
        // compiled program after these three is unchanged.
        let guard = [
            stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
            jump(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K, X32_SYSCALL_BIT, 0, 1),
            stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        ];
        main.splice(0..0, guard);
    }
    let clone3: BpfProgram = SeccompFilter::new(
        [(libc::SYS_clone3, Vec::new())].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?
    .try_into()?;
    Ok(Some(vec![main, clone3]))
}

fn stmt(code: u32, k: u32) -> sock_filter {
    sock_filter { code: code as u16, jt: 0, jf: 0, k }
}

fn jump(code: u32, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code: code as u16, jt, jf, k }
}

/// `struct sock_fprog`.
#[repr(C)]
struct SockFprog {
    len: libc::c_ushort,
    filter: *const sock_filter,
}

/// Installs `programs` on the calling thread (and what it execs). Needs
/// `no_new_privs` (set here) unless the caller has CAP_SYS_ADMIN.
///
/// # Safety
/// Called between fork and exec: system calls only, on programs built before the fork.
pub(super) unsafe fn install(programs: &[BpfProgram]) -> std::io::Result<()> {
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        for p in programs {
            let prog = SockFprog { len: p.len() as libc::c_ushort, filter: p.as_ptr() };
            if libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &prog as *const SockFprog) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// Whether runs here get the filter: it compiles for this architecture and
/// the kernel takes it (tried once on a throwaway process).
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let Some(programs) = programs() else { return false };
        let mut probe = std::process::Command::new("/bin/true");
        // SAFETY: only the filter's system calls run between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut probe, move || install(programs));
        }
        probe.status().is_ok_and(|s| s.success())
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filter_compiles_and_names_every_call_the_readme_lists() {
        let programs = super::programs().expect("a filter for this architecture");
        assert_eq!(programs.len(), 2);
        assert!(programs[0].len() < 4096, "a BPF program holds at most 4096 instructions");
        for name in ["mount", "umount2", "pivot_root", "ptrace", "bpf", "perf_event_open", "keyctl", "add_key"] {
            assert!(super::REFUSED.iter().any(|(n, _)| *n == name), "{name}");
        }
        for name in ["userfaultfd", "kexec_load", "kexec_file_load", "init_module", "setns", "reboot"] {
            assert!(super::REFUSED.iter().any(|(n, _)| *n == name), "{name}");
        }
    }
}
