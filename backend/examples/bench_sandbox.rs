//! Runner overhead: the same command run directly (spawn and wait) and
//! through the sandbox (temporary directory, limits, scrubbed environment,
//! namespaces as root, output capture, process-tree sweep). Prints figures.
//!
//!   cargo run --release -p failpass --example bench_sandbox [RUNS]

use std::time::{Duration, Instant};

use failpass::runner::sandbox::{self, Command};

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
        let mut direct = Vec::with_capacity(n);
        let mut boxed = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let out = tokio::process::Command::new(program).args(&args).output().await.unwrap();
            assert!(out.status.success());
            direct.push(t.elapsed());
            let t = Instant::now();
            let r = sandbox::run(&Command::new(program, args.iter().copied()), None).await.unwrap();
            assert!(r.succeeded(), "{r:?}");
            boxed.push(t.elapsed());
        }
        let (dm, d50, d95) = stats(direct);
        let (bm, b50, b95) = stats(boxed);
        println!("{:<28} {:>9.2} {:>9.2} {:>9.2}   direct", format!("{label} ({n})"), dm, d50, d95);
        println!("{:<28} {:>9.2} {:>9.2} {:>9.2}   sandboxed", "", bm, b50, b95);
        println!("{:<28} {:>9.2} {:>9.2} {:>9}   overhead", "", bm - dm, b50 - d50, "");
    }
}
