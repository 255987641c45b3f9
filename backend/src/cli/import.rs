//! `failpass import`: progress on stderr, a closing summary on stdout.
//! Exit status 0 when every record was stored, 3 when some were rejected.

use std::io::IsTerminal;
use std::time::Instant;

use anyhow::Context;
use failpass_shared::api::import::ImportSummary;
use failpass_shared::format::thousands;
use tokio::io::{AsyncBufRead, BufReader};

use crate::config::{DemoArgs, ImportArgs};
use crate::demo::scale::Scale;
use crate::import::{Format, ImportOptions, Importer, run};

pub async fn import(args: ImportArgs) -> anyhow::Result<i32> {
    let format: Format = args.format.parse().map_err(|e: String| anyhow::anyhow!("--format: {e}"))?;
    let storage = crate::db::connect(&args.database.url()).await.context("opening the database")?;
    storage.migrate().await.context("applying migrations")?;
    let input: Box<dyn AsyncBufRead + Unpin + Send> = if args.input == "-" {
        Box::new(BufReader::with_capacity(1 << 20, tokio::io::stdin()))
    } else {
        let file = tokio::fs::File::open(&args.input).await.with_context(|| format!("opening {}", args.input))?;
        Box::new(BufReader::with_capacity(1 << 20, file))
    };
    let routing = crate::config::load_routing(args.routing_config.as_deref())?;
    let started = Instant::now();
    let mut importer = Importer::new(storage.as_ref(), &routing)
        .private_by_default(args.private_by_default)
        .on_progress(progress(started));
    let mapping = args.mapping.as_deref().map(crate::import::mapping::load).transpose()?;
    let input_dir =
        (args.input != "-").then(|| std::path::Path::new(&args.input).parent().map(|p| p.to_path_buf())).flatten();
    let environment = args
        .environment
        .as_deref()
        .map(|e| e.parse::<failpass_shared::model::RunEnvironment>())
        .transpose()
        .map_err(|e| anyhow::anyhow!("--environment: {e}"))?;
    let options =
        ImportOptions { project: args.project.clone(), mapping, input_dir, attempt: args.attempt, environment };
    run(&mut importer, format, input, &options).await.with_context(|| format!("importing {}", args.input))?;
    let summary = importer.finish().await?;
    report(&summary, started, args.json)?;
    Ok(if summary.rejected > 0 { 3 } else { 0 })
}

/// `failpass demo`: synthetic history of the size asked, through the import's path.
pub async fn demo(args: DemoArgs) -> anyhow::Result<i32> {
    let scale = Scale {
        reports: args.reports,
        attempts: args.attempts.unwrap_or(args.reports.saturating_mul(10)),
        seed: args.seed,
        today: args.today.unwrap_or_else(|| chrono::Utc::now().date_naive()),
    };
    scale.check().map_err(|e| anyhow::anyhow!(e))?;
    let storage = crate::db::connect(&args.database.url()).await.context("opening the database")?;
    storage.migrate().await.context("applying migrations")?;
    let routing = crate::config::load_routing(args.routing_config.as_deref())?;
    let started = Instant::now();
    let mut importer = Importer::new(storage.as_ref(), &routing).text_checked().on_progress(progress(started));
    crate::demo::scale::generate(&mut importer, &routing, scale).await?;
    let summary = importer.finish().await?;
    report(&summary, started, false)?;
    Ok(if summary.rejected > 0 { 3 } else { 0 })
}

/// A live line on a terminal; a line every few seconds in a log.
fn progress(started: Instant) -> impl FnMut(&ImportSummary) + Send {
    let tty = std::io::stderr().is_terminal();
    let mut last_line = Instant::now();
    move |s: &ImportSummary| {
        if tty || last_line.elapsed().as_secs() >= 5 {
            last_line = Instant::now();
            let rate = s.records as f64 / started.elapsed().as_secs_f64().max(1e-9);
            eprint!(
                "{}{} records ({}/s): {} created, {} updated, {} unchanged, {} rejected{}",
                if tty { "\r" } else { "" },
                thousands(s.records as i64),
                thousands(rate as i64),
                s.created,
                s.updated,
                s.unchanged,
                s.rejected,
                if tty { "   " } else { "\n" }
            );
        }
    }
}

/// The closing summary on stdout: a line and the rejections, or JSON.
fn report(summary: &ImportSummary, started: Instant, json: bool) -> anyhow::Result<()> {
    let secs = started.elapsed().as_secs_f64();
    if std::io::stderr().is_terminal() {
        eprintln!();
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        println!(
            "{} records in {secs:.1} s ({}/s): {} created, {} updated, {} unchanged, {} rejected{}",
            thousands(summary.records as i64),
            thousands((summary.records as f64 / secs.max(1e-9)) as i64),
            summary.created,
            summary.updated,
            summary.unchanged,
            summary.rejected,
            if summary.skipped > 0 { format!(", {} skipped", summary.skipped) } else { String::new() }
        );
        if !summary.changed.is_empty() {
            let changed: Vec<String> = summary.changed.iter().map(|(f, n)| format!("{f} in {n}")).collect();
            println!("  changed by this re-import: {}", changed.join(", "));
        }
        for line in summary.notes.lines() {
            println!("  note: {line}");
        }
        for r in &summary.rejections {
            println!(
                "  rejected record {}: {}{}",
                r.record,
                r.field.as_deref().map(|f| format!("{f}: ")).unwrap_or_default(),
                r.message
            );
        }
        if summary.rejected as usize > summary.rejections.len() {
            println!("  … and {} more rejections", summary.rejected as usize - summary.rejections.len());
        }
    }
    Ok(())
}
