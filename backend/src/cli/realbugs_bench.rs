//! `failpass bench realbugs`: the corpus of real bugs loaded into a fresh
//! database (one project per library), every bug's two environments built
//! cold and then again from the wheel cache alone, then every reference
//! reproduction and every snippet-agent candidate graded by the workers as
//! any attempt is, and every report bisected. It prints what the README
//! quotes: reproduced by reference N/N, by the snippet agent (by kind and by
//! library), bisects that found the documented fixed release, build times
//! cold and from the cache, verification time per bug, disk used.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use failpass_shared::model::Verdict;

use crate::config::RealbugsArgs;
use crate::db::{ProjectScope, Storage};
use crate::demo::realbugs::{self, Library, Seeded};
use crate::runner::env_evict::dir_size;
use crate::runner::executors::ByKind;

pub async fn run(a: RealbugsArgs) -> anyhow::Result<i32> {
    let mut libs = realbugs::load_dir(&a.corpus)?;
    libs.retain(|l| a.library.is_empty() || a.library.contains(&l.library.name));
    for l in &mut libs {
        l.bugs.retain(|b| !a.small || b.small);
    }
    libs.retain(|l| !l.bugs.is_empty());
    let bugs: usize = libs.iter().map(|l| l.bugs.len()).sum();
    anyhow::ensure!(bugs > 0, "no bugs in {} match", a.corpus.display());
    std::fs::create_dir_all(&a.dir)?;
    let (envs, wheels) = (a.dir.join("envs"), a.dir.join("wheels"));
    if a.cold {
        remove(&wheels)?;
    }
    if !a.keep_envs {
        remove(&envs)?;
    }
    for f in ["failpass.db", "failpass.db-wal", "failpass.db-shm"] {
        let _ = std::fs::remove_file(a.dir.join(f));
    }
    let url = a.dir.join("failpass.db").to_string_lossy().into_owned();
    let storage = crate::db::connect(&url).await.with_context(|| format!("opening {url}"))?;
    storage.migrate().await?;
    let ex = super::releases::executor_for(storage.clone(), &a.dir, &a.runs)?;
    ex.bench.preflight().await.map_err(|e| anyhow::anyhow!("{e}"))?;
    println!("failpass bench realbugs: {bugs} bugs of {} libraries from {}", libs.len(), a.corpus.display());
    let routing = failpass_shared::routing::RoutingConfig::default();
    let mut seeded: Vec<Seeded> = Vec::new();
    for lib in &libs {
        seeded.extend(realbugs::seed(storage.as_ref(), &routing, lib, |_| true).await?);
    }
    let mut read = 0;
    for s in &seeded {
        let v = storage.report_versions(s.report.summary.id).await?;
        read += usize::from(v.buggy.as_deref() == Some(s.bug.buggy.as_str()));
    }
    println!("buggy release read from the report's own body: {read}/{}", seeded.len());

    let (cold, cached) = if a.keep_envs {
        println!("\n## environments: kept from an earlier run (--keep-envs); no build figures");
        (Vec::new(), Vec::new())
    } else {
        println!(
            "\n## environments: every bug's buggy and fixed release, built cold{}",
            if a.cold { " (empty wheel cache)" } else { "" }
        );
        let cold = build_all(&ex, &libs).await?;
        remove(&envs)?;
        println!("\n## the same environments again, from the wheel cache (no network)");
        (cold, build_all(&ex, &libs).await?)
    };
    let wheels_bytes = dir_size(&ex.bench.envs.wheels);
    let envs_bytes = dir_size(&envs);

    println!("\n## grading: reference reproductions and snippet-agent candidates, by {} workers", a.workers);
    let started = Instant::now();
    let mut attempts = Vec::new();
    for s in &seeded {
        let (r, _) = storage
            .create_attempt(&realbugs::attempt(
                &s.report,
                "reference",
                s.bug.reproduction.clone(),
                &format!("ref-{}", s.bug.id),
                true,
            ))
            .await?;
        let snippet = crate::runner::snippet::snippet(&s.report.body, 1);
        let sn = match snippet {
            Some(c) => Some(
                storage
                    .create_attempt(&realbugs::attempt(&s.report, "snippet", c, &format!("snip-{}", s.bug.id), true))
                    .await?
                    .0
                    .id,
            ),
            None => None,
        };
        attempts.push((r.id, sn));
    }
    drain(&ex, storage.clone(), a.workers).await;
    let graded = started.elapsed();
    let bisect_started = Instant::now();
    for (s, (r, _)) in seeded.iter().zip(&attempts) {
        storage.enqueue(&crate::db::queue::NewJob::bisect(s.report.summary.id, *r), chrono::Utc::now()).await?;
    }
    drain(&ex, storage.clone(), a.workers).await;
    let bisected = bisect_started.elapsed();

    println!(
        "\n{:<22} {:<10} {:<13} {:<9} {:<9} {:<15} bisect",
        "bug", "library", "kind", "buggy", "fixed", "reference"
    );
    let (mut by_ref, mut bisect_ok) = (0, 0);
    let mut snip: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut verify_secs = Vec::new();
    for (s, (r, sn)) in seeded.iter().zip(&attempts) {
        let rv = verdict(storage.as_ref(), *r).await?;
        by_ref += usize::from(rv == Some(Verdict::Reproduced));
        if let Some(j) = storage.verification_job(*r, &ProjectScope::All).await?
            && let (Some(a), Some(b)) = (j.started_at, j.finished_at)
        {
            verify_secs.push((b - a).num_milliseconds() as f64 / 1000.0);
        }
        let sv = match sn {
            Some(id) => verdict(storage.as_ref(), *id).await?,
            None => None,
        };
        let ok = usize::from(sv == Some(Verdict::Reproduced));
        for key in [format!("kind {}", s.bug.kind), format!("library {}", s.library), "all".to_owned()] {
            let e = snip.entry(key).or_default();
            e.0 += ok;
            e.1 += 1;
        }
        let b = storage.report_versions(s.report.summary.id).await?.bisect;
        let found = b.as_ref().and_then(|b| b.first_passing.clone());
        bisect_ok += usize::from(found.as_deref() == Some(s.bug.fixed.as_str()));
        println!(
            "{:<22} {:<10} {:<13} {:<9} {:<9} {:<15} {}",
            s.bug.id,
            s.library,
            s.bug.kind,
            s.bug.buggy,
            s.bug.fixed,
            rv.map_or("-".into(), |v| v.to_string()),
            b.map_or("-".into(), |b| b.summary)
        );
    }
    let n = seeded.len();
    println!("\n## figures");
    println!("reproduced by the reference reproduction (3 runs a side, all agreeing): {by_ref}/{n}");
    for (k, (ok, all)) in &snip {
        println!("reproduced by the snippet agent, {k}: {ok}/{all}");
    }
    println!("bisect named the documented fixed release: {bisect_ok}/{n}");
    print_times("environment build, cold", &cold);
    print_times("environment build, from the wheel cache", &cached);
    print_times("verification per bug (reference, environments built)", &verify_secs);
    let graded_attempts = attempts.iter().map(|(_, s)| 1 + usize::from(s.is_some())).sum::<usize>();
    println!(
        "grading {graded_attempts} attempts: {:.1} s; bisecting {n} reports: {:.1} s; together {:.1} min",
        graded.as_secs_f64(),
        bisected.as_secs_f64(),
        (graded + bisected).as_secs_f64() / 60.0
    );
    println!(
        "disk: wheel cache {:.0} MB, the bugs' environments {:.0} MB (after the bisects: {:.0} MB)",
        wheels_bytes as f64 / 1e6,
        envs_bytes as f64 / 1e6,
        dir_size(&envs) as f64 / 1e6
    );
    Ok(if by_ref == n { 0 } else { 1 })
}

fn remove(p: &std::path::Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(anyhow::anyhow!("removing {}: {e}", p.display())),
        _ => Ok(()),
    }
}

/// Builds each distinct (library, release) the bugs name; seconds of each build.
async fn build_all(ex: &ByKind, libs: &[Library]) -> anyhow::Result<Vec<f64>> {
    let mut secs = Vec::new();
    for lib in libs {
        let template = lib.template();
        let mut versions: Vec<&str> = lib.bugs.iter().flat_map(|b| [b.buggy.as_str(), b.fixed.as_str()]).collect();
        versions.sort();
        versions.dedup();
        for v in versions {
            let started = Instant::now();
            let release =
                crate::runner::sides::resolve(&ex.bench, &template, v).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            match ex.bench.envs.get_release(&release).await {
                Ok(env) => {
                    let t = started.elapsed().as_secs_f64();
                    let meta = std::fs::read_to_string(env.dir.parent().unwrap_or(&env.dir).join("meta.json"))
                        .unwrap_or_default();
                    let fetched = meta.contains("\"fetched\": true");
                    println!(
                        "  {:<28} {:>6.1} s  {}",
                        release.label,
                        t,
                        if fetched { "fetched from the index" } else { "from the wheel cache, no network" }
                    );
                    secs.push(t);
                }
                Err(e) => {
                    let tail: Vec<&str> = e.log.lines().rev().take(12).collect();
                    println!("  {:<28} FAILED: {}", release.label, e.reason);
                    for l in tail.iter().rev() {
                        println!("      | {l}");
                    }
                }
            }
        }
    }
    Ok(secs)
}

async fn verdict(storage: &dyn Storage, attempt: i64) -> anyhow::Result<Option<Verdict>> {
    Ok(storage.get_attempt(attempt, &ProjectScope::All).await?.map(|d| d.attempt.verdict))
}

/// Runs workers until the queue has nothing waiting or running.
async fn drain(ex: &ByKind, storage: Arc<dyn Storage>, workers: usize) {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let options = crate::runner::worker::WorkerOptions { poll: Duration::from_millis(200), ..Default::default() };
    let pool =
        crate::runner::worker::spawn_pool(Arc::new(ex.clone()), storage.clone(), workers.max(1), options, stopped);
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = chrono::Utc::now();
        match storage.queue_overview(now, &ProjectScope::All).await {
            Ok(q) if q.queued == 0 && q.running == 0 => break,
            _ => {}
        }
    }
    let _ = stop.send(true);
    for p in pool {
        let _ = p.await;
    }
}

fn print_times(what: &str, secs: &[f64]) {
    if secs.is_empty() {
        println!("{what}: none");
        return;
    }
    let mut s = secs.to_vec();
    s.sort_by(f64::total_cmp);
    let pct = |p: f64| s[((s.len() - 1) as f64 * p).round() as usize];
    println!(
        "{what}: {} builds/runs, p50 {:.1} s, p95 {:.1} s, max {:.1} s, total {:.1} s",
        s.len(),
        pct(0.5),
        pct(0.95),
        s[s.len() - 1],
        s.iter().sum::<f64>()
    );
}
