use anyhow::Context;
use clap::Parser;
use failpass::config::{Cli, Command};
use failpass::startup::{App, AppConfig, redact, shutdown_signal};

fn main() {
    let cli = Cli::parse();
    failpass::telemetry::init();
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|rt| rt.block_on(run(cli)));
    // One line naming what went wrong and why, not a backtrace.
    if let Err(e) = result {
        eprintln!("failpass: error: {e:#}");
        std::process::exit(1);
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => {
            let url = args.database.url();
            let routing = failpass::config::load_routing(args.routing_config.as_deref())?;
            let app = App::build(AppConfig {
                database_url: url.clone(),
                bind: args.bind,
                demo: args.demo,
                demo_real_bugs: true,
                routing,
                data_dir: args.database.data_dir.clone(),
                workers: args.workers,
                generator: args.refine.generator(),
                refine_budget: args.refine.refine_budget,
                recheck_every: (args.recheck_every_hours > 0)
                    .then(|| std::time::Duration::from_secs(args.recheck_every_hours * 3600)),
                security: args.security()?,
            })
            .await?;
            let addr = app.local_addr().context("reading the bound address")?;
            tracing::info!(database = %redact(&url), "failpass listening on http://{addr}/");
            // A closed stdout (a supervisor that read the first line) must not stop the server.
            use std::io::Write;
            let mut out = std::io::stdout();
            let _ =
                writeln!(out, "failpass is running at http://{addr}/  (database: {}; Ctrl-C stops it)", redact(&url));
            if args.demo {
                match failpass::demo::credentials(&args.database.data_dir) {
                    Some(text) => {
                        let _ = write!(out, "{text}");
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "no demo users in this data directory (its data predates accounts): add an admin with `failpass user add NAME --admin`"
                        );
                    }
                }
            }
            let _ = out.flush();
            app.run_until(shutdown_signal()).await.context("serving")?;
            Ok(())
        }
        Command::Import(args) => {
            let code = failpass::cli::import::import(args).await?;
            std::process::exit(code);
        }
        Command::Submit(args) => std::process::exit(failpass::cli::submit::run(args).await),
        Command::Bisect(args) => std::process::exit(failpass::cli::releases::bisect(args).await?),
        Command::Bench(args) => match args.what {
            failpass::config::BenchWhat::Realbugs(a) => {
                std::process::exit(failpass::cli::realbugs_bench::run(a).await?)
            }
        },
        Command::Backup(args) => failpass::cli::backup::backup(&args.database.url(), &args.to).await,
        Command::Demo(args) => {
            let code = failpass::cli::import::demo(args).await?;
            std::process::exit(code);
        }
        Command::Reroute(args) => {
            let cfg = failpass::config::load_routing(args.routing_config.as_deref())?;
            let url = args.database.url();
            let storage = failpass::db::connect(&url).await.with_context(|| format!("opening {}", redact(&url)))?;
            storage.migrate().await.context("applying migrations")?;
            let s = failpass::cli::reroute::reroute(storage.as_ref(), &cfg, args.dry_run).await?;
            println!(
                "{} reports: {} routes {}changed, {} with other routing changes (flags, category or evidence)",
                s.reports,
                s.routes_changed,
                if args.dry_run { "would be " } else { "" },
                s.changed - s.routes_changed
            );
            for (t, n) in &s.transitions {
                println!("  {t}: {n}");
            }
            for (project, n) in s.boilerplate.iter().filter(|(_, n)| **n > 0) {
                println!(
                    "  {project}: {n} lines of boilerplate {}",
                    if args.dry_run { "would be learned" } else { "learned" }
                );
            }
            Ok(())
        }
        Command::CheckFigures(args) => {
            let url = args.database.url();
            let storage = failpass::db::connect(&url).await.with_context(|| format!("opening {}", redact(&url)))?;
            storage.migrate().await.context("applying migrations")?;
            let started = std::time::Instant::now();
            let c = storage.check_figures(!args.dry_run).await.context("checking the figures")?;
            println!(
                "{} groups and {} cells compared with a recomputation from the raw rows in {:.1} s",
                c.groups,
                c.cells,
                started.elapsed().as_secs_f64()
            );
            if c.differing == 0 {
                println!("the maintained figures equal the recomputation");
                return Ok(());
            }
            println!("{} differed:", c.differing);
            for d in &c.differences {
                println!("  {d}");
            }
            if c.differing > c.differences.len() {
                println!("  … and {} more", c.differing - c.differences.len());
            }
            println!("{}", if c.repaired { "rebuilt from the raw rows" } else { "left as they are (--dry-run)" });
            std::process::exit(1);
        }
        Command::Worker(args) => {
            let url = args.database.url();
            let storage = failpass::db::connect(&url).await.with_context(|| format!("opening {}", redact(&url)))?;
            storage.migrate().await.context("applying migrations")?;
            if args.concurrency == 0 || args.lease_seconds < 1 {
                anyhow::bail!("--concurrency and --lease-seconds must be at least 1");
            }
            let config = failpass::runner::executors::RunnerConfig {
                generator: args.refine.generator(),
                refine_budget: args.refine.refine_budget,
                allow_unsandboxed: args.runs.allow_unsandboxed_runs,
                routing: std::sync::Arc::new(failpass::config::load_routing(args.routing_config.as_deref())?),
                hook_networks: std::sync::Arc::new(args.hooks.networks()?),
                run_networks: args.runs.networks()?,
                releases: args.runs.releases()?,
            };
            let executor = std::sync::Arc::new(failpass::runner::executors::ByKind::new(
                storage.clone(),
                &args.database.data_dir,
                config,
            ));
            let options = failpass::runner::worker::WorkerOptions {
                lease: chrono::Duration::seconds(args.lease_seconds),
                ..Default::default()
            };
            let (stop, stopped) = tokio::sync::watch::channel(false);
            let pool = failpass::runner::worker::spawn_pool(executor, storage, args.concurrency, options, stopped);
            println!(
                "failpass worker: {} worker(s) on {} (Ctrl-C stops them after their current job)",
                args.concurrency,
                redact(&url)
            );
            shutdown_signal().await;
            let _ = stop.send(true);
            for w in pool {
                let _ = w.await;
            }
            Ok(())
        }
        Command::User(args) => failpass::cli::accounts::user(args).await,
        Command::Token(args) => failpass::cli::accounts::token(args).await,
        Command::Hook(args) => failpass::cli::accounts::hook(args).await,
        Command::Webhook(args) => {
            let url = args.database.url();
            let storage = failpass::db::connect(&url).await.with_context(|| format!("opening {}", redact(&url)))?;
            storage.migrate().await.context("applying migrations")?;
            let failpass::config::WebhookCommand::Secret { project, remove } = args.command;
            if remove {
                storage.set_webhook_secret(&project, None).await?;
                println!("webhook secret of {project} removed: its deliveries are refused");
            } else {
                let secret = failpass::auth::tokens::generate()?;
                storage.set_webhook_secret(&project, Some(&secret)).await?;
                println!(
                    "webhook secret of {project} (shown once):\n{secret}\nIn GitHub: Settings → Webhooks → Add webhook: payload URL \
                     https://YOUR-HOST/api/v1/webhooks/github, content type application/json, this secret, \
                     events Issues and Issue comments."
                );
            }
            Ok(())
        }
        Command::Sync(args) => {
            let failpass::config::SyncCommand::Github(gh) = args.command;
            let cfg = failpass::config::load_routing(gh.routing_config.as_deref())?;
            failpass::cli::sync::check_repo(&gh.repo)?;
            let url = args.database.url();
            let storage = failpass::db::connect(&url).await.with_context(|| format!("opening {}", redact(&url)))?;
            storage.migrate().await.context("applying migrations")?;
            let opts = failpass::cli::sync::SyncOptions {
                project: gh.project.clone().unwrap_or_else(|| gh.repo.clone()),
                repo: gh.repo,
                token: gh.token.filter(|t| !t.trim().is_empty()),
                api_url: gh.api_url,
                max_wait: std::time::Duration::from_secs(gh.max_wait_seconds),
                per_page: 100,
            };
            if opts.token.is_none() {
                eprintln!("failpass: no GITHUB_TOKEN: GitHub allows 60 requests an hour without one");
            }
            let client = failpass::cli::sync::client()?;
            let models = failpass::triage::Models::default();
            loop {
                let result = failpass::cli::sync::github(storage.as_ref(), &models, &cfg, &client, &opts).await;
                match result {
                    Ok(summary) => println!("sync {} → {}: {summary}", opts.repo, opts.project),
                    // Once: the error is the exit status. Polling: said, and tried again next time.
                    Err(e) if gh.every_minutes == 0 => return Err(e),
                    Err(e) => eprintln!("failpass: sync {}: {e:#}", opts.repo),
                }
                if gh.every_minutes == 0 {
                    return Ok(());
                }
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_secs(gh.every_minutes * 60)) => {}
                    _ = shutdown_signal() => return Ok(()),
                }
            }
        }
        Command::Export(args) => {
            use failpass::export::ExportFormat;
            let url = args.database.url();
            let storage = failpass::db::connect(&url).await.with_context(|| format!("opening {}", redact(&url)))?;
            storage.migrate().await.context("applying migrations")?;
            let format = if args.what == "all" {
                ExportFormat::Ndjson
            } else {
                ExportFormat::parse(&args.format).map_err(|e| anyhow::anyhow!("--format: {}", e.message))?
            };
            let pairs = failpass_shared::api::query::parse_query_string(args.query.trim_start_matches('?'));
            let pairs = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()));
            let bad =
                |e: failpass_shared::api::query::FieldError| anyhow::anyhow!("--query: {}: {}", e.field, e.message);
            // Buffered: unbuffered, every row was a write of its own (a 1 GB
            // export spent more time in the kernel than in failpass).
            let mut out: std::pin::Pin<Box<dyn tokio::io::AsyncWrite + Send>> = match &args.output {
                Some(path) => Box::pin(tokio::io::BufWriter::with_capacity(
                    1 << 20,
                    tokio::fs::File::create(path).await.with_context(|| format!("creating {}", path.display()))?,
                )),
                None => Box::pin(tokio::io::BufWriter::with_capacity(1 << 20, tokio::io::stdout())),
            };
            let scope = failpass::db::ProjectScope::All;
            let s = storage.as_ref();
            let n = match args.what.as_str() {
                "reports" => {
                    let q = failpass_shared::api::reports::ReportListQuery::from_pairs(pairs).map_err(bad)?;
                    if q.arrived == Some(failpass_shared::api::reports::Arrived::Visit) {
                        anyhow::bail!(
                            "--query: `arrived=visit` is since a person's last visit; the command line has none: use `arrived=24h`"
                        );
                    }
                    failpass::export::reports(s, &q, &scope, format, &mut out).await?
                }
                "attempts" => {
                    let q = failpass_shared::api::attempts::AttemptListQuery::from_pairs(pairs).map_err(bad)?;
                    failpass::export::attempts(s, &q, &scope, format, &mut out).await?
                }
                "figures" => {
                    let q = failpass_shared::api::figures::FiguresQuery::from_pairs(pairs).map_err(bad)?;
                    let rows =
                        failpass::summaries::figures(s, &scope, q).await.map_err(|e| anyhow::anyhow!("{e}"))?.rows;
                    failpass::export::table(&rows, format, &mut out).await?
                }
                "all" => {
                    let pairs: Vec<_> = pairs.collect();
                    if let Some((k, _)) = pairs.iter().find(|(k, _)| *k != "project") {
                        anyhow::bail!(
                            "--query: `{k}`: `all` takes only `project` (attempts of other reports would not import)"
                        );
                    }
                    let project = pairs.iter().find(|(k, _)| *k == "project").map(|(_, v)| (*v).to_owned());
                    let reports = failpass_shared::api::reports::ReportListQuery::from_pairs(pairs).map_err(bad)?;
                    let attempts = failpass_shared::api::attempts::AttemptListQuery { project, ..Default::default() };
                    failpass::export::reports(s, &reports, &scope, format, &mut out).await?
                        + failpass::export::attempts(s, &attempts, &scope, format, &mut out).await?
                }
                other => anyhow::bail!("`{other}`: export reports, attempts, figures or all"),
            };
            tokio::io::AsyncWriteExt::flush(&mut out).await?;
            eprintln!("{n} records exported");
            Ok(())
        }
        Command::Routing(args) => match args.command {
            failpass::config::RoutingCommand::Eval(args) => {
                let cfg = failpass::config::load_routing(args.routing_config.as_deref())?;
                let report = failpass::cli::routing_eval::run(&args, &cfg)?;
                print!("{report}");
                Ok(())
            }
            failpass::config::RoutingCommand::Corrections(args) => {
                let url = args.database.url();
                let storage = failpass::db::connect(&url).await.with_context(|| format!("opening {}", redact(&url)))?;
                storage.migrate().await.context("applying migrations")?;
                let rows = storage.corrected_routes(&args.project).await?;
                let text = failpass::cli::routing_eval::corrections_truth(&args.project, &rows);
                match &args.output {
                    Some(path) => {
                        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
                        eprintln!("{} corrected routes of {} written to {}", rows.len(), args.project, path.display());
                    }
                    None => print!("{text}"),
                }
                Ok(())
            }
        },
        Command::Migrate(args) => {
            let url = args.url();
            let storage = failpass::db::connect(&url).await.with_context(|| format!("opening {}", redact(&url)))?;
            storage.migrate().await.context("applying migrations")?;
            println!("migrations applied to {}", redact(&url));
            Ok(())
        }
    }
}
