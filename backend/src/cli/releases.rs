//! `failpass bisect`: a report's releases, searched here and now, each step
//! printed; and the runner `failpass bench realbugs` grades with.

use std::sync::Arc;

use anyhow::Context;
use failpass_shared::api::jobs::{Job, JobPayload};
use failpass_shared::model::{JobKind, JobStatus};

use crate::config::{BisectArgs, RunArgs};
use crate::db::{ProjectScope, Storage};
use crate::runner::executors::{ByKind, RunnerConfig};

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
