//! Environments: a recipe (a directory or git checkout plus setup commands)
//! built once into `<data>/envs/<recipe hash>` and reused by every run.
//!
//! A build happens at its final path (virtual environments write absolute
//! paths into their scripts, so it cannot move afterwards) under an exclusive
//! lock file, so two workers — in one process or many — never build the same
//! recipe at once; the second finds it built. `.built` is written last, so a
//! half-built environment (a killed worker) is never used: the next build
//! starts it over. A failed build leaves nothing behind and is tried again by
//! the next verification (its log goes into that attempt's `error` verdict).
//!
//! The cache key is the recipe: change its `dir`, `git.rev`, setup or
//! `version` to rebuild. A directory whose contents change under the same
//! recipe keeps the first build.
//!
//! Setup commands never run as root: as root, a build leases one sandbox
//! user for all its steps (they build on each other's files) and runs each
//! step in the sandbox with the network on (package installs need it) and
//! the rest of the file system read-only. When the build is done its tree is
//! handed to root and opened for reading, so no later run, whatever its
//! user, can change what every other run is graded in.

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
    /// Private networks setup commands and the agent command may reach (`--run-allow-network`).
    pub allow_networks: Vec<ipnet::IpNet>,
    /// The wheel cache every release build shares (`FAILPASS_WHEEL_CACHE`, else `<data>/wheels`).
    pub wheels: PathBuf,
    /// The most the cache may hold (`--env-cache-gb`); the least recently used environments go first.
    pub cap_bytes: Option<u64>,
}

impl EnvCache {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root: PathBuf = root.into();
        let wheels = std::env::var_os("FAILPASS_WHEEL_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.parent().unwrap_or(&root).join("wheels"));
        Self {
            wheels,
            cap_bytes: None,
            root,
            building: Arc::default(),
            setup_limits: Limits {
                wall: Duration::from_secs(1200),
                cpu_seconds: 1200,
                memory_bytes: 8 << 30,
                // A wheel unpacks into files bigger than a run may write (jaxlib's, torch's).
                file_bytes: 4 << 30,
                ..Limits::default()
            },
            allow_networks: Vec::new(),
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
        let built_now = self.once(&hash, |cache| async move { cache.build(recipe, base, &done).await }).await?;
        let tree = self.root.join(&hash).join("tree");
        let vars = recipe.env.iter().map(|(k, v)| (k.clone(), v.replace("{env}", &tree.to_string_lossy()))).collect();
        Ok(BuiltEnv { dir: tree, vars, version: recipe.version.clone(), hash, built_now })
    }

    /// Builds the entry `hash` with `build` unless it is built: one build
    /// at a time per entry, across tasks and processes. Whether this call
    /// built it. Marks the entry used (for eviction), and evicts the least
    /// recently used entries when a build took the cache over its cap.
    pub(super) async fn once<'a, F, Fut>(&'a self, hash: &str, build: F) -> Result<bool, SetupFailed>
    where
        F: FnOnce(&'a EnvCache) -> Fut,
        Fut: std::future::Future<Output = Result<(), SetupFailed>> + 'a,
    {
        let done = self.root.join(hash);
        if done.join(".built").exists() {
            let _ = std::fs::write(done.join(".used"), b"");
            return Ok(false);
        }
        let lock = {
            let mut map = self.building.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(hash.to_owned()).or_default().clone()
        };
        let _guard = lock.lock().await;
        let _file_lock = self.lock_file(hash).await?;
        let mut built_now = false;
        // Another process may have built it while we waited for the lock.
        if !done.join(".built").exists() {
            build(self).await?;
            built_now = true;
        }
        let _ = std::fs::write(done.join(".used"), b"");
        drop(_file_lock);
        if built_now {
            super::env_evict::evict(self.root(), self.cap_bytes, hash);
        }
        Ok(built_now)
    }

    /// An exclusive lock on `<root>/<hash>.lock`, shared by every process
    /// using this cache; released when the returned file is dropped.
    async fn lock_file(&self, hash: &str) -> Result<std::fs::File, SetupFailed> {
        let fail = |e: std::io::Error| SetupFailed {
            reason: format!("locking the environment cache: {e}"),
            log: String::new(),
        };
        std::fs::create_dir_all(&self.root).map_err(fail)?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.root.join(format!("{hash}.lock")))
            .map_err(fail)?;
        loop {
            use std::os::fd::AsRawFd;
            // SAFETY: flock on a descriptor we own.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(file);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn build(&self, recipe: &Recipe, base: &Path, done: &Path) -> Result<(), SetupFailed> {
        let fail = |reason: String, log: String| SetupFailed { reason, log };
        // Leftovers of a build that was killed half-way start over.
        if done.exists() {
            std::fs::remove_dir_all(done)
                .map_err(|e| fail(format!("clearing {}: {e}", done.display()), String::new()))?;
        }
        let tree = done.join("tree");
        let fail_io =
            |what: &str, e: std::io::Error| SetupFailed { reason: format!("{what}: {e}"), log: String::new() };
        let user = sandbox::RunUser::lease().map_err(|e| fail_io("leasing a sandbox user", e))?.map(Arc::new);
        let result = async {
            let mut log = match &user {
                Some(u) if sandbox::net::outbound_available() => format!(
                    "# setup runs as uid {} (not root) in a root of its own, with outbound network for package installs \
                     (not the host's loopback, metadata or private addresses); candidates run without network\n",
                    u.uid
                ),
                Some(u) => format!(
                    "# setup runs as uid {} (not root) in a root of its own, with no network: {}\n",
                    u.uid,
                    sandbox::net::outbound_missing().unwrap_or("this runner cannot give it one")
                ),
                None => "# setup runs as the worker's own user (not root, so no sandbox user or namespaces) with the host's network; so do candidates\n".to_owned(),
            };
            match (&recipe.dir, &recipe.git) {
                (Some(dir), None) => {
                    let src = if Path::new(dir).is_absolute() { PathBuf::from(dir) } else { base.join(dir) };
                    let (from, to) = (src.clone(), tree.clone());
                    tokio::task::spawn_blocking(move || copy_dir(&from, &to))
                        .await
                        .map_err(|e| fail(e.to_string(), String::new()))?
                        .map_err(|e| fail(format!("copying {}: {e}", src.display()), String::new()))?;
                    log.push_str(&format!("$ copy {} → tree\n", src.display()));
                }
                (None, Some(git)) => {
                    std::fs::create_dir_all(&tree).map_err(|e| fail(e.to_string(), String::new()))?;
                    if let Some(u) = &user {
                        std::os::unix::fs::chown(&tree, Some(u.uid), Some(u.uid)).map_err(|e| fail(e.to_string(), String::new()))?;
                    }
                    // A repository on this machine is shown to the clone, read-only.
                    let local: Vec<PathBuf> = local_repository(&git.url).into_iter().collect();
                    for script in [format!("git clone --quiet {} .", shell_quote(&git.url)), format!("git checkout --quiet {}", shell_quote(&git.rev))] {
                        self.step(&tree, &script, user.clone(), &local, &mut log).await?;
                    }
                }
                _ => std::fs::create_dir_all(&tree).map_err(|e| fail(e.to_string(), String::new()))?,
            }
            if let Some(u) = &user {
                let (dir, uid) = (tree.clone(), u.uid);
                tokio::task::spawn_blocking(move || own_tree(&dir, uid, false))
                    .await
                    .map_err(|e| fail(e.to_string(), log.clone()))?
                    .map_err(|e| fail(format!("handing the tree to the setup user: {e}"), log.clone()))?;
            }
            for script in &recipe.setup {
                self.step(&tree, script, user.clone(), &[], &mut log).await?;
            }
            if user.is_some() {
                let dir = tree.clone();
                tokio::task::spawn_blocking(move || own_tree(&dir, 0, true))
                    .await
                    .map_err(|e| fail(e.to_string(), log.clone()))?
                    .map_err(|e| fail(format!("handing the built tree to root: {e}"), log.clone()))?;
            }
            // Written last: its presence means the whole build succeeded.
            std::fs::write(done.join(".built"), &log).map_err(|e| fail(e.to_string(), log.clone()))?;
            Ok::<_, SetupFailed>(())
        }
        .await;
        if result.is_err() {
            let _ = std::fs::remove_dir_all(done);
        }
        result
    }

    /// One setup command, logged; a failure ends the build.
    async fn step(
        &self,
        tree: &Path,
        script: &str,
        user: Option<Arc<sandbox::RunUser>>,
        binds: &[PathBuf],
        log: &mut String,
    ) -> Result<(), SetupFailed> {
        let binds: Vec<(PathBuf, bool)> = binds.iter().map(|b| (b.clone(), false)).collect();
        self.step_with(tree, script, Step { user, binds, network: true, env: Vec::new() }, log).await
    }

    /// One setup command as `how` says, logged; a failure ends the build.
    pub(super) async fn step_with(
        &self,
        tree: &Path,
        script: &str,
        how: Step,
        log: &mut String,
    ) -> Result<(), SetupFailed> {
        let mut cmd = Command::new("/bin/sh", ["-c", script]);
        cmd.network = how.network;
        cmd.allow_networks = self.allow_networks.clone();
        cmd.user = how.user;
        // This build's tree is the run's own directory; other environments are not in its root.
        cmd.binds = how.binds;
        cmd.env = how.env;
        cmd.limits = self.setup_limits;
        log.push_str(&format!("$ {script}\n"));
        let r =
            sandbox::run_in(&cmd, tree).await.map_err(|e| SetupFailed { reason: e.to_string(), log: log.clone() })?;
        log.push_str(&r.output);
        if r.output_truncated {
            log.push_str(&format!("\n[output cut at {} of {} bytes]\n", r.output.len(), r.output_bytes));
        }
        let _ = std::fs::remove_dir_all(tree.join(".tmp"));
        if !r.succeeded() {
            let why = if r.timed_out {
                "timed out".to_owned()
            } else {
                format!("exited with {}", describe_exit(r.exit_status, r.signal))
            };
            return Err(SetupFailed { reason: format!("`{script}` {why}"), log: log.clone() });
        }
        Ok(())
    }
}

/// How one setup step runs: as whom, seeing what, with or without network.
pub(super) struct Step {
    pub user: Option<Arc<sandbox::RunUser>>,
    pub binds: Vec<(PathBuf, bool)>,
    pub network: bool,
    pub env: Vec<(String, String)>,
}

pub fn describe_exit(status: Option<i32>, signal: Option<i32>) -> String {
    match (status, signal) {
        (Some(s), _) => format!("status {s}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => "no status".to_owned(),
    }
}

/// The directory of a git source on this machine (`/srv/repo.git`,
/// `file:///srv/repo.git`), which the clone must see; `None` for a remote.
fn local_repository(url: &str) -> Option<PathBuf> {
    let path = url.strip_prefix("file://").unwrap_or(url);
    Path::new(path).is_absolute().then(|| PathBuf::from(path)).filter(|p| p.exists())
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Hands a tree to `uid` (its group too). `publish`: also opens it for
/// reading by everyone and closes it for writing by anyone but its owner
/// (a built environment, read by every run's own user).
pub fn own_tree(dir: &Path, uid: u32, publish: bool) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let meta = std::fs::symlink_metadata(dir)?;
    std::os::unix::fs::lchown(dir, Some(uid), Some(uid))?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    if publish {
        let mode = meta.mode() & 0o7777;
        // Readable by all, executable by all where it was by its owner; no set-id bits, no writes but the owner's.
        let exec = if meta.is_dir() || mode & 0o100 != 0 { 0o111 } else { 0 };
        let new = (mode | 0o444 | exec) & !0o7022;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(new))?;
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(dir)? {
            own_tree(&entry?.path(), uid, publish)?;
        }
    }
    Ok(())
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
