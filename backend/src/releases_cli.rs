//! `failpass bisect` (a report's releases, searched here and now, each step
//! printed) and `failpass bench realbugs` (the corpus of real bugs graded on
//! their own releases, with the figures the README quotes).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand};
use failpass_shared::api::jobs::{Job, JobPayload};
use failpass_shared::model::{JobKind, JobStatus};

use crate::config::{DatabaseArgs, RunArgs};
use crate::db::{ProjectScope, Storage};
use crate::runner::executors::{ByKind, RunnerConfig};

#[derive(Debug, Clone, Args)]
pub struct BisectArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    #[command(flatten)]
    pub runs: RunArgs,
    /// The report whose releases are searched (it names its buggy release).
    #[arg(long)]
    pub report: i64,
    /// The attempt whose candidate runs (default: the report's newest reproduced one).
    #[arg(long)]
    pub attempt: Option<i64>,
}

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchWhat,
}

#[derive(Debug, Clone, Subcommand)]
pub enum BenchWhat {
    /// Grade the corpus of real bugs on their own releases and print the figures.
    Realbugs(RealbugsArgs),
}

#[derive(Debug, Clone, Args)]
pub struct RealbugsArgs {
    /// The corpus: a directory of one TOML file per library.
    #[arg(long, default_value = "corpus/realbugs")]
    pub corpus: PathBuf,
    /// Where the bench keeps its database (made afresh), environments and wheels.
    #[arg(long, default_value = "target/realbugs-bench", value_parser = crate::config::absolute_path)]
    pub dir: PathBuf,
    /// Start with an empty wheel cache too (else only the environments are built afresh).
    #[arg(long)]
    pub cold: bool,
    /// Keep the environments built by an earlier run and skip the build
    /// figures: grading and bisects with every environment already built.
    #[arg(long, conflicts_with = "cold")]
    pub keep_envs: bool,
    /// Only the bugs marked `small` (the test command's).
    #[arg(long)]
    pub small: bool,
    /// Only these libraries (repeatable).
    #[arg(long)]
    pub library: Vec<String>,
    /// Workers grading at once.
    #[arg(long, default_value_t = 2)]
    pub workers: usize,
    #[command(flatten)]
    pub runs: RunArgs,
}

pub fn executor_for(storage: Arc<dyn Storage>, data_dir: &std::path::Path, runs: &RunArgs) -> anyhow::Result<ByKind> {
    let config = RunnerConfig {
        allow_unsandboxed: runs.allow_unsandboxed_runs,
        run_networks: runs.networks()?,
        releases: runs.releases()?,
        ..Default::default()
    };
    Ok(ByKind::new(storage, data_dir, config))
}

/// `failpass bisect`: runs the bisect in this process and prints its steps.
pub async fn bisect(args: BisectArgs) -> anyhow::Result<i32> {
    let url = args.database.url();
    let storage =
        crate::db::connect(&url).await.with_context(|| format!("opening {}", crate::startup::redact(&url)))?;
    storage.migrate().await.context("applying migrations")?;
    let report = storage
        .get_report(args.report, &ProjectScope::All)
        .await?
        .with_context(|| format!("report {} does not exist", args.report))?;
    let attempt = match args.attempt {
        Some(a) => a,
        None => crate::runner::bisect::default_attempt(storage.as_ref(), &ProjectScope::All, args.report)
            .await?
            .with_context(|| format!("report {} has no attempt with a candidate; give --attempt", args.report))?,
    };
    let ex = executor_for(storage.clone(), &args.database.data_dir, &args.runs)?;
    ex.bench.preflight().await.map_err(|e| anyhow::anyhow!("{e}"))?;
    println!("bisecting report {} ({}) with attempt {attempt}", args.report, report.summary.title);
    let job = synthetic_job(
        JobKind::Bisect,
        JobPayload { report_id: Some(args.report), attempt_id: Some(attempt), ..Default::default() },
    );
    ex.bisect.execute(&job).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let v = storage.report_versions(args.report).await?;
    let b = v.bisect.context("the bisect stored no result")?;
    for s in &b.steps {
        println!("  {:<12} {:<7} {:>6.1} s  {}", s.version, s.outcome, s.seconds, s.detail);
    }
    println!("{}", b.summary);
    Ok(if b.state == "found" || b.state == "still_fails" { 0 } else { 1 })
}

fn synthetic_job(kind: JobKind, payload: JobPayload) -> Job {
    let now = chrono::Utc::now();
    Job {
        id: 0,
        kind,
        payload,
        status: JobStatus::Running,
        priority: 0,
        tries: 1,
        max_tries: 1,
        run_after: now,
        lease_owner: None,
        lease_expires_at: None,
        last_error: None,
        created_at: now,
        started_at: Some(now),
        finished_at: None,
    }
}

/// `failpass bench realbugs`.
pub async fn bench(args: BenchArgs) -> anyhow::Result<i32> {
    match args.what {
        BenchWhat::Realbugs(a) => super::realbugs_bench::run(a).await,
    }
}
