//! `failpass user …` and `failpass token …`: accounts and tokens from the
//! command line, for whoever holds the database (the first admin is made
//! here; everything after can be done by admins and maintainers).

use std::io::{BufRead, IsTerminal};

use anyhow::{Context, bail};
use failpass_shared::model::{ProjectRole, TokenScope};

use crate::auth::{password, signin, tokens};
use crate::config::{HookArgs, HookCommand, TokenArgs, TokenCommand, UserArgs, UserCommand};
use crate::db::{ProjectScope, Storage, StorageError};

async fn open(url: &str) -> anyhow::Result<std::sync::Arc<dyn Storage>> {
    let storage = crate::db::connect(url).await.with_context(|| format!("opening {}", crate::startup::redact(url)))?;
    storage.migrate().await.context("applying migrations")?;
    Ok(storage)
}

/// The new password: from standard input's first line (`--password-stdin`,
/// or when input is not a terminal), else asked for twice without echo.
fn read_password(from_stdin: bool) -> anyhow::Result<String> {
    let password = if from_stdin || !std::io::stdin().is_terminal() {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).context("reading the password from standard input")?;
        line.trim_end_matches(['\n', '\r']).to_owned()
    } else {
        let first = rpassword::prompt_password("Password: ").context("reading the password")?;
        let again = rpassword::prompt_password("Again: ").context("reading the password")?;
        if first != again {
            bail!("the two passwords differ");
        }
        first
    };
    password::check(&password).map_err(anyhow::Error::msg)?;
    Ok(password)
}

fn check_name(name: &str) -> anyhow::Result<()> {
    crate::auth::check_user_name(name).map_err(anyhow::Error::msg)
}

/// Names what storage could not find, as the user typed it.
fn not_found(e: StorageError) -> anyhow::Error {
    match e {
        StorageError::NotFound(what) => anyhow::anyhow!("{what} does not exist"),
        other => other.into(),
    }
}

pub async fn user(args: UserArgs) -> anyhow::Result<()> {
    let storage = open(&args.database.url()).await?;
    match args.command {
        UserCommand::Add { name, admin, password_stdin } => {
            check_name(&name)?;
            if storage.user_by_name(&name).await?.is_some() {
                bail!("a user named `{name}` already exists (`failpass user passwd {name}` sets a new password)");
            }
            let hash = password::hash(&read_password(password_stdin)?).await?;
            storage.create_user(&name, &hash, admin).await?;
            println!("added {}{name}", if admin { "admin " } else { "" });
        }
        UserCommand::List => {
            let users = storage.list_users().await?;
            if users.is_empty() {
                println!("no users yet: `failpass user add NAME --admin` adds the first administrator");
            }
            let now = chrono::Utc::now();
            for (u, memberships) in users {
                let roles: Vec<String> = memberships.iter().map(|m| format!("{} of {}", m.role, m.project)).collect();
                let held =
                    signin::throttle(storage.as_ref(), &u.name, now).await.map_err(|e| anyhow::anyhow!("{e}"))?;
                println!(
                    "{}{}  (since {}){}{}",
                    u.name,
                    if u.admin { "  admin" } else { "" },
                    u.created_at.format("%Y-%m-%d"),
                    if roles.is_empty() { String::new() } else { format!("  {}", roles.join(", ")) },
                    if held.is_clear() {
                        String::new()
                    } else {
                        format!("  sign-in throttled (`failpass user throttle {}`)", u.name)
                    }
                );
            }
        }
        UserCommand::Remove { name } => {
            storage.remove_user(&name).await.map_err(not_found)?;
            println!("removed {name}; their sessions and personal tokens are gone");
        }
        UserCommand::Passwd { name, password_stdin } => {
            if storage.user_by_name(&name).await?.is_none() {
                bail!("user `{name}` does not exist");
            }
            let hash = password::hash(&read_password(password_stdin)?).await?;
            storage.set_password(&name, &hash).await.map_err(not_found)?;
            println!("password of {name} set; their sessions ended");
        }
        UserCommand::Grant { name, project, role } => {
            let role: ProjectRole = role.parse().map_err(|e| anyhow::anyhow!("--role: {e}"))?;
            storage.set_membership(&name, &project, Some(role)).await.map_err(not_found)?;
            println!("{name} is now {role} of {project}");
        }
        UserCommand::Revoke { name, project } => {
            storage.set_membership(&name, &project, None).await.map_err(not_found)?;
            println!("{name} has no role in {project} now");
        }
        UserCommand::Throttle { name } => {
            let now = chrono::Utc::now();
            let t = signin::throttle(storage.as_ref(), &name, now).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            if storage.user_by_name(&name).await?.is_none() {
                println!("no user is named `{name}` (failures under that name are counted all the same)");
            }
            println!(
                "{name}: {} failed sign-in(s) in the last {} minutes{}",
                t.failures,
                signin::WINDOW_MINUTES,
                if t.under_attack {
                    format!(
                        "; under attack (at least {}): every try is answered a second later, failed addresses wait longer",
                        signin::ACCOUNT_ALARM
                    )
                } else {
                    String::new()
                }
            );
            for a in &t.addresses {
                let wait = match a.waits_until {
                    Some(u) => {
                        format!("waits until {} ({} s)", u.format("%H:%M:%S UTC"), (u - now).num_seconds().max(1))
                    }
                    None => "may try now".into(),
                };
                println!("  from {}: {} failure(s), {wait}", a.address, a.failures);
            }
            if !t.is_clear() {
                println!("`failpass user unthrottle {name}` lifts it");
            }
        }
        UserCommand::Unthrottle { name } => {
            let was = signin::unthrottle(storage.as_ref(), &name).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            println!(
                "{name}: {} failed sign-in(s) from {} address(es) forgotten; every address may sign in at once",
                was.failures,
                was.addresses.len()
            );
        }
    }
    Ok(())
}

pub async fn token(args: TokenArgs) -> anyhow::Result<()> {
    let storage = open(&args.database.url()).await?;
    match args.command {
        TokenCommand::Create { project, scope, user, name, expires } => {
            let req = match (project, user) {
                (Some(project), None) => {
                    let scope: TokenScope = scope
                        .as_deref()
                        .ok_or_else(|| anyhow::anyhow!("--scope: give agent, ci or read"))?
                        .parse()
                        .map_err(|e| anyhow::anyhow!("--scope: {e}"))?;
                    if scope == TokenScope::User {
                        bail!("--scope user: personal tokens are made with --user NAME");
                    }
                    let p = storage
                        .get_project(&project, &ProjectScope::All)
                        .await?
                        .ok_or_else(|| anyhow::anyhow!("project `{project}` does not exist"))?;
                    tokens::TokenRequest {
                        name,
                        scope,
                        project_id: Some(p.id),
                        user_id: None,
                        created_by: "operator".into(),
                        expires_in_days: expires,
                    }
                }
                (None, Some(user)) => {
                    let u = storage
                        .user_by_name(&user)
                        .await?
                        .ok_or_else(|| anyhow::anyhow!("user `{user}` does not exist"))?;
                    tokens::TokenRequest {
                        name,
                        scope: TokenScope::User,
                        project_id: None,
                        user_id: Some(u.id),
                        created_by: "operator".into(),
                        expires_in_days: expires,
                    }
                }
                _ => bail!("give --project OWNER/NAME --scope agent|ci|read, or --user NAME"),
            };
            let (token, record) = tokens::create(storage.as_ref(), req).await.map_err(|e| anyhow::anyhow!("{e}"))?;
            eprintln!(
                "token {} ({} of {}) created; copy it now, it is not shown again:",
                record.id,
                record.scope,
                record.project.as_deref().or(record.user.as_deref()).unwrap_or("?")
            );
            println!("{token}");
        }
        TokenCommand::List { project } => {
            let ids = match project {
                Some(p) => {
                    let p = storage
                        .get_project(&p, &ProjectScope::All)
                        .await?
                        .ok_or_else(|| anyhow::anyhow!("project `{p}` does not exist"))?;
                    Some(vec![p.id])
                }
                None => None,
            };
            let now = chrono::Utc::now();
            for t in storage.list_tokens(ids.as_deref()).await? {
                let state = match (t.revoked_at, t.is_live(now)) {
                    (Some(at), _) => format!("revoked {}", at.format("%Y-%m-%d")),
                    (None, false) => "expired".to_owned(),
                    (None, true) => "live".to_owned(),
                };
                println!(
                    "{:>4}  {}…  {:<5}  {:<28}  {:<20}  last used {}  {state}",
                    t.id,
                    t.prefix,
                    t.scope,
                    t.project.as_deref().or(t.user.as_deref()).unwrap_or(""),
                    t.name,
                    t.last_used_at.map_or_else(|| "never".to_owned(), |at| at.format("%Y-%m-%d %H:%M").to_string()),
                );
            }
        }
        TokenCommand::Revoke { id } => {
            storage.revoke_token(id, chrono::Utc::now()).await.map_err(not_found)?;
            println!("token {id} revoked");
        }
    }
    Ok(())
}

/// `failpass hook`: outgoing webhooks, as the operator (no access check: who
/// may run this may open the database).
pub async fn hook(args: HookArgs) -> anyhow::Result<()> {
    use failpass_shared::api::hooks::{HookEvent, HookFormat};
    let storage = open(&args.database.url()).await?;
    let now = chrono::Utc::now();
    match args.command {
        HookCommand::Add { project, url, format, events } => {
            let format: HookFormat = format.parse().map_err(|e| anyhow::anyhow!("--format: {e}"))?;
            let events = if events.is_empty() {
                None
            } else {
                let parsed: Result<Vec<HookEvent>, _> = events.iter().map(|e| e.trim().parse()).collect();
                Some(parsed.map_err(|e| anyhow::anyhow!("--events: {e}"))?)
            };
            let (url, format, events) =
                crate::hooks::check_request(&url, Some(format), events, &args.networks.networks()?)
                    .map_err(|e| anyhow::anyhow!("--{e}"))?;
            let p = storage.get_project(&project, &ProjectScope::All).await?.ok_or_else(|| {
                let hint = if project.contains('/') { "" } else { " (projects are named owner/name)" };
                anyhow::anyhow!("project `{project}` does not exist{hint}")
            })?;
            let new = crate::db::hooks::NewHook {
                project_id: p.id,
                url,
                format,
                events,
                secret: crate::hooks::new_secret()?,
                created_by: "operator".into(),
            };
            let hook = storage.create_hook(&new, now).await?;
            let events: Vec<&str> = hook.events.iter().map(|e| e.as_str()).collect();
            eprintln!(
                "hook {} of {} posts {} deliveries of {} to {}; its secret (shown once) follows",
                hook.id,
                hook.project,
                hook.format,
                events.join(", "),
                hook.url
            );
            println!("{}", hook.secret.unwrap_or_default());
        }
        HookCommand::List => {
            for h in storage.list_hooks(&ProjectScope::All).await? {
                let events: Vec<&str> = h.events.iter().map(|e| e.as_str()).collect();
                let state = h.removed_at.map_or_else(|| "live".to_owned(), |t| format!("removed {t}"));
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{} delivered, {} pending, {} failed\t{state}",
                    h.id,
                    h.project,
                    h.format,
                    events.join(","),
                    h.url,
                    h.delivered,
                    h.pending,
                    h.failed
                );
            }
        }
        HookCommand::Log { id, limit } => {
            storage.get_hook(id).await?.ok_or_else(|| anyhow::anyhow!("hook {id} does not exist"))?;
            for d in storage.hook_deliveries(id, limit.clamp(1, 1000)).await? {
                let code = d.status_code.map_or_else(|| "-".to_owned(), |c| c.to_string());
                println!(
                    "{}\t{}\t{}\t{}\ttries {}\t{code}\t{}\t{}",
                    d.id,
                    d.created_at.format("%Y-%m-%d %H:%M:%S"),
                    d.event,
                    d.state,
                    d.tries,
                    d.error.unwrap_or_default(),
                    d.body
                );
            }
        }
        HookCommand::Redeliver { delivery } => {
            let again = storage.redeliver(delivery, now).await?;
            println!("delivery {} queued: {} again", again.id, delivery);
        }
        HookCommand::Remove { id } => {
            storage.get_hook(id).await?.ok_or_else(|| anyhow::anyhow!("hook {id} does not exist"))?;
            storage.remove_hook(id, now).await?;
            println!("hook {id} removed: it is told nothing more");
        }
    }
    Ok(())
}
