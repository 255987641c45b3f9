//! Runner overhead: the same command run directly (spawn and wait) and
//! through the sandbox (temporary directory, limits, scrubbed environment,
//! namespaces as root, output capture, process-tree sweep). Prints figures.
//!
//!   cargo run --release -p failpass --example bench_sandbox [RUNS]
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

#[tokio::main]
async fn main() {
    let runs: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(300);
    println!(
        "network namespace: {}, PID namespace: {}",
        sandbox::network_isolation_available(),
        sandbox::pid_isolation_available()
    );
    println!("{:<28} {:>9} {:>9} {:>9}", "command (runs)", "mean_ms", "p50_ms", "p95_ms");
    for (label, program, args) in [
        ("/bin/true", "/bin/true", vec![]),
        ("sh -c 'echo hi'", "/bin/sh", vec!["-c", "echo hi"]),
        ("python3 -c pass", "python3", vec!["-c", "pass"]),
    ] {
        let n = if program == "python3" { runs / 5 } else { runs };
        let program = resolve(program);
        let mut direct = Vec::with_capacity(n);
        let mut boxed = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let out = tokio::process::Command::new(&program).args(&args).output().await.unwrap();
            assert!(out.status.success());
            direct.push(t.elapsed());
            let t = Instant::now();
            let r = sandbox::run(&Command::new(&program, args.iter().copied()), None).await.unwrap();
            assert!(r.succeeded(), "{r:?}");
            boxed.push(t.elapsed());
        }
        let (dm, d50, d95) = stats(direct);
        let (bm, b50, b95) = stats(boxed);
        println!("{:<28} {:>9.2} {:>9.2} {:>9.2}   direct ({program})", format!("{label} ({n})"), dm, d50, d95);
        println!("{:<28} {:>9.2} {:>9.2} {:>9.2}   sandboxed", "", bm, b50, b95);
        println!("{:<28} {:>9.2} {:>9.2} {:>9}   overhead", "", bm - dm, b50 - d50, "");
    }
}
