//! Environments: a recipe (a directory or git checkout plus setup commands)
//! built once into `<data>/envs/<recipe hash>` and reused by every run.
//!
//! A build happens in a scratch directory that is renamed into place only
//! when every setup command succeeded, so a half-built environment is never
//! used; two workers building the same recipe at once both succeed and one
//! rename wins. A failed build leaves nothing behind and is tried again by
//! the next verification (its log goes into that attempt's `error` verdict).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use failpass_shared::api::jobs::Recipe;

use super::sandbox::{self, Command, Limits};

/// A built environment.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltEnv {
    /// The environment's tree: the copied directory or checkout, set up.
    pub dir: PathBuf,
    /// Variables for runs in it, `{env}` already replaced.
    pub vars: Vec<(String, String)>,
    pub version: Option<String>,
    pub hash: String,
    /// Whether this call built it (false: reused from the cache).
    pub built_now: bool,
}

/// A build that failed, with everything its commands printed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("environment setup failed: {reason}")]
pub struct SetupFailed {
    pub reason: String,
    pub log: String,
}

/// The cache of built environments under one directory.
#[derive(Clone)]
pub struct EnvCache {
    root: PathBuf,
    building: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
    /// Limits for each setup command.
    pub setup_limits: Limits,
}

impl EnvCache {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            building: Arc::default(),
            setup_limits: Limits { wall: Duration::from_secs(1200), cpu_seconds: 1200, memory_bytes: 8 << 30, ..Limits::default() },
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The built environment for `recipe`, building it if needed. Relative
    /// `dir` paths resolve against `base`.
    pub async fn get(&self, recipe: &Recipe, base: &Path) -> Result<BuiltEnv, SetupFailed> {
        let hash = recipe.hash();
        let done = self.root.join(&hash);
        let lock = {
            let mut map = self.building.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(hash.clone()).or_default().clone()
        };
        let _guard = lock.lock().await;
        let built_now = if done.join(".built").exists() {
            false
        } else {
            self.build(recipe, base, &hash).await?;
            true
        };
        let tree = done.join("tree");
        let vars = recipe
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.replace("{env}", &tree.to_string_lossy())))
            .collect();
        Ok(BuiltEnv { dir: tree, vars, version: recipe.version.clone(), hash, built_now })
    }

    async fn build(&self, recipe: &Recipe, base: &Path, hash: &str) -> Result<BuiltEnv, SetupFailed> {
        let fail = |reason: String, log: String| SetupFailed { reason, log };
        std::fs::create_dir_all(&self.root).map_err(|e| fail(format!("creating {}: {e}", self.root.display()), String::new()))?;
        let scratch = self.root.join(format!("{hash}.building-{}", uuid::Uuid::new_v4().simple()));
        let tree = scratch.join("tree");
        let result = async {
            let mut log = String::new();
            match (&recipe.dir, &recipe.git) {
                (Some(dir), None) => {
                    let src = if Path::new(dir).is_absolute() { PathBuf::from(dir) } else { base.join(dir) };
                    copy_dir(&src, &tree).map_err(|e| fail(format!("copying {}: {e}", src.display()), String::new()))?;
                    log.push_str(&format!("$ copy {} → tree\n", src.display()));
                }
                (None, Some(git)) => {
                    std::fs::create_dir_all(&tree).map_err(|e| fail(e.to_string(), String::new()))?;
                    for script in [format!("git clone --quiet {} .", shell_quote(&git.url)), format!("git checkout --quiet {}", shell_quote(&git.rev))] {
                        self.step(&tree, &script, &mut log).await?;
                    }
                }
                _ => std::fs::create_dir_all(&tree).map_err(|e| fail(e.to_string(), String::new()))?,
            }
            for script in &recipe.setup {
                self.step(&tree, script, &mut log).await?;
            }
            std::fs::write(scratch.join(".built"), &log).map_err(|e| fail(e.to_string(), log.clone()))?;
            Ok::<_, SetupFailed>(log)
        }
        .await;
        match result {
            Ok(_) => {
                let done = self.root.join(hash);
                if std::fs::rename(&scratch, &done).is_err() && done.join(".built").exists() {
                    // Another worker finished the same recipe first: use theirs.
                    let _ = std::fs::remove_dir_all(&scratch);
                }
                Ok(BuiltEnv { dir: done.join("tree"), vars: Vec::new(), version: None, hash: hash.to_owned(), built_now: true })
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&scratch);
                Err(e)
            }
        }
    }

    /// One setup command, logged; a failure ends the build.
    async fn step(&self, tree: &Path, script: &str, log: &mut String) -> Result<(), SetupFailed> {
        let mut cmd = Command::new("/bin/sh", ["-c", script]);
        cmd.network = true;
        cmd.limits = self.setup_limits;
        log.push_str(&format!("$ {script}\n"));
        let r = sandbox::run_in(&cmd, tree).await.map_err(|e| SetupFailed { reason: e.to_string(), log: log.clone() })?;
        log.push_str(&r.output);
        if r.output_truncated {
            log.push_str(&format!("\n[output cut at {} of {} bytes]\n", r.output.len(), r.output_bytes));
        }
        let _ = std::fs::remove_dir_all(tree.join(".tmp"));
        if !r.succeeded() {
            let why = if r.timed_out { "timed out".to_owned() } else { format!("exited with {}", describe_exit(r.exit_status, r.signal)) };
            return Err(SetupFailed { reason: format!("`{script}` {why}"), log: log.clone() });
        }
        Ok(())
    }
}

pub fn describe_exit(status: Option<i32>, signal: Option<i32>) -> String {
    match (status, signal) {
        (Some(s), _) => format!("status {s}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => "no status".to_owned(),
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Copies a directory tree (files, directories and symlinks).
pub fn copy_dir(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let (from, to) = (entry.path(), dst.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_dir(&from, &to)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&from)?, &to)?;
        } else {
            std::fs::copy(&from, &to)?;
        }
    }
    Ok(())
}
