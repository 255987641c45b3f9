//! Which files of a release install here: a wheel for CPython 3.11 on this
//! machine's platform (Linux x86_64 with its glibc), as pip decides it from
//! the wheel's tags. Source distributions are not built (no compilers run
//! during a build); a release with only those is listed as not buildable.

/// The interpreter environments are built with: CPython 3.11.
pub const PYTHON: (u64, u64) = (3, 11);

/// Whether a wheel's file name says it installs on CPython 3.11, Linux x86_64.
pub fn installs_here(filename: &str) -> bool {
    let Some(stem) = filename.strip_suffix(".whl") else { return false };
    // name-version(-build)?-python-abi-platform
    let parts: Vec<&str> = stem.split('-').collect();
    if parts.len() < 5 {
        return false;
    }
    let (pythons, abis, platforms) = (parts[parts.len() - 3], parts[parts.len() - 2], parts[parts.len() - 1]);
    let python_ok = |abi: &str| {
        pythons.split('.').any(|p| match p {
            "py3" | "py311" => true,
            "cp311" => true,
            // abi3 wheels built for an older CPython 3 run on 3.11.
            p if abi == "abi3" => {
                p.strip_prefix("cp3").and_then(|m| m.parse::<u64>().ok()).is_some_and(|minor| minor <= PYTHON.1)
            }
            _ => false,
        })
    };
    let abi_ok = |abi: &str| matches!(abi, "none" | "abi3" | "cp311");
    let platform_ok = |p: &str| p == "any" || manylinux_here(p);
    abis.split('.').any(|a| abi_ok(a) && python_ok(a)) && platforms.split('.').any(platform_ok)
}

/// `manylinux1_x86_64`, `manylinux2014_x86_64`, `manylinux_2_17_x86_64`:
/// x86_64 and a glibc no newer than this machine's.
fn manylinux_here(tag: &str) -> bool {
    let Some(rest) = tag.strip_suffix("_x86_64") else { return false };
    let needs = match rest {
        "manylinux1" => (2, 5),
        "manylinux2010" => (2, 12),
        "manylinux2014" => (2, 17),
        other => {
            let Some(v) = other.strip_prefix("manylinux_") else { return false };
            let Some((major, minor)) = v.split_once('_') else { return false };
            match (major.parse::<u32>(), minor.parse::<u32>()) {
                (Ok(a), Ok(b)) => (a, b),
                _ => return false,
            }
        }
    };
    needs <= glibc()
}

/// This machine's glibc version.
fn glibc() -> (u32, u32) {
    static VERSION: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();
    *VERSION.get_or_init(|| {
        // SAFETY: returns a pointer to a static, NUL-terminated string.
        let s = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
        let s = s.to_string_lossy();
        let mut it = s.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        (it.next().unwrap_or(2), it.next().unwrap_or(17))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_as_pip_reads_them() {
        assert!(installs_here("einops-0.6.0-py3-none-any.whl"));
        assert!(installs_here("six-1.16.0-py2.py3-none-any.whl"));
        assert!(installs_here("numpy-1.26.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"));
        assert!(installs_here("cryptography-41.0.0-cp37-abi3-manylinux_2_28_x86_64.whl"));
        assert!(!installs_here("numpy-1.26.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"));
        assert!(!installs_here("numpy-1.21.0-cp39-cp39-manylinux_2_12_x86_64.manylinux2010_x86_64.whl"));
        assert!(!installs_here("numpy-1.26.0-cp311-cp311-macosx_10_9_x86_64.whl"));
        assert!(!installs_here("numpy-1.26.0-cp311-cp311-musllinux_1_1_x86_64.whl"));
        assert!(!installs_here("numpy-1.26.0-cp311-cp311-manylinux_2_17_aarch64.whl"));
        assert!(!installs_here("jaxlib-0.4.30-cp311-cp311-manylinux_9_99_x86_64.whl"));
        assert!(!installs_here("einops-0.6.0.tar.gz"));
        assert!(!installs_here("py2only-1.0-py2-none-any.whl"));
    }
}
