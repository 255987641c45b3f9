//! Runner overhead: the same command run directly (spawn and wait) and
//! through the sandbox (its own directory, limits, scrubbed environment, and
//! as root its own user, PID and network namespaces, a root built for it and
//! the system-call filter, output capture, process-tree sweep). Prints figures.
//!
//!   cargo run --release -p failpass --example bench_sandbox [RUNS]
//!
//! Two ways, because they disagree for Python on small machines: *pairs*
//! (a direct run, then a sandboxed one, repeated) and *blocks* (20 direct
//! runs, then 20 sandboxed ones, repeated). A sandboxed Python started right
//! after a direct one is several milliseconds slower on a 2-core VM, with or
//! without any of the sandbox's parts (the same happens with only a PID
//! namespace); blocks measure what the sandbox itself adds.
//!
//! Both sides run the same file: a bare name is looked up once on the PATH
//! the sandbox gives its runs, and that absolute path is run directly and
//! sandboxed (a shim earlier on the caller's PATH would otherwise be timed
//! against `/usr/bin/python3`).

use std::time::{Duration, Instant};

use failpass::runner::sandbox::{self, Command};

/// `program` as the sandbox finds it: on its PATH (`FAILPASS_SANDBOX_PATH`,
/// default `/usr/local/bin:/usr/bin:/bin`), unless it is a path already.
fn resolve(program: &str) -> String {
    if program.contains('/') {
        return program.to_owned();
    }
    let path = std::env::var("FAILPASS_SANDBOX_PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    path.split(':')
        .map(|dir| std::path::Path::new(dir).join(program))
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| panic!("{program} is not on the sandbox's PATH ({path})"))
}

fn stats(mut xs: Vec<Duration>) -> (f64, f64, f64) {
    xs.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mean = xs.iter().map(|d| ms(*d)).sum::<f64>() / xs.len() as f64;
    (mean, ms(xs[xs.len() / 2]), ms(xs[xs.len() * 95 / 100]))
}

async fn direct(program: &str, args: &[&str]) -> Duration {
    let t = Instant::now();
    let out = tokio::process::Command::new(program).args(args).output().await.unwrap();
    assert!(out.status.success());
    t.elapsed()
}

async fn boxed(program: &str, args: &[&str]) -> Duration {
    let t = Instant::now();
    let r = sandbox::run(&Command::new(program, args.iter().copied()), None).await.unwrap();
    assert!(r.succeeded(), "{r:?}");
    t.elapsed()
}

fn print(label: &str, how: &str, program: &str, d: Vec<Duration>, b: Vec<Duration>) {
    let (dm, d50, d95) = stats(d);
    let (bm, b50, b95) = stats(b);
    println!("{label:<28} {how:<7} {dm:>9.2} {d50:>9.2} {d95:>9.2}   direct ({program})");
    println!("{:<28} {how:<7} {bm:>9.2} {b50:>9.2} {b95:>9.2}   sandboxed", "");
    println!("{:<28} {how:<7} {:>9.2} {:>9.2} {:>9}   overhead", "", bm - dm, b50 - d50, "");
}

#[tokio::main]
async fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(300);
    println!(
        "network namespace: {}, PID namespace: {}, system-call filter: {}",
        sandbox::network_isolation_available(),
        sandbox::pid_isolation_available(),
        sandbox::syscall_filter_available()
    );
    println!("{:<28} {:<7} {:>9} {:>9} {:>9}", "command (runs)", "how", "mean_ms", "p50_ms", "p95_ms");
    for (label, program, args) in [
        ("/bin/true", "/bin/true", vec![]),
        ("sh -c 'echo hi'", "/bin/sh", vec!["-c", "echo hi"]),
        ("python3 -c pass", "python3", vec!["-c", "pass"]),
    ] {
        let n = if program == "python3" { runs / 5 } else { runs };
        let program = resolve(program);
        let label = format!("{label} ({n})");
        let (mut d, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for _ in 0..n {
            d.push(direct(&program, &args).await);
            b.push(boxed(&program, &args).await);
        }
        print(&label, "pairs", &program, d, b);
        let (mut d, mut b) = (Vec::with_capacity(n), Vec::with_capacity(n));
        while d.len() < n {
            for _ in 0..20.min(n - d.len()) {
                d.push(direct(&program, &args).await);
            }
            for _ in 0..20.min(n - b.len()) {
                b.push(boxed(&program, &args).await);
            }
        }
        print("", "blocks", &program, d, b);
    }
}
