//! Environments for a project's real releases: a virtual environment made
//! by `uv` from the release's requirement lines, resolved as of the
//! release's date (`--exclude-newer`), from wheels only.
//!
//! Every build shares one wheel cache (uv's), so a wheel is fetched once for
//! all the releases that use it. A build first installs with no network at
//! all from that cache (`--offline`, in a sandbox without a network), and
//! goes to the index only for what the cache lacks; the log says which. The
//! cache is written only by the builder id ([`sandbox::RunUser::lease_builder`]),
//! which runs nothing but uv on checked requirement lines; the import check
//! that follows runs the package's code as an ordinary run (a user of its
//! own, no network), and a package that does not import fails the build, so
//! its reports grade `error`, never `fails`.
//!
//! The install compiles every module to bytecode (`--compile-bytecode`):
//! runs see the environment read-only and write no bytecode, so without it
//! every run would compile what it imports from source again (importing
//! pandas took 2.0 s that way against 0.65 s with the bytecode here), and a
//! grade runs its candidate three times a side.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use failpass_shared::api::jobs::Recipe;

use super::env::{BuiltEnv, EnvCache, SetupFailed, Step, own_tree};
use super::env_evict::{EnvMeta, dir_size};
use super::sandbox::{self, Command};
use crate::releases::ResolvedRelease;

/// The Python environments are built on (its wheels are what the index is asked for).
pub const PYTHON: &str = "/usr/bin/python3.11";

/// The `uv` binary: `FAILPASS_UV`, else the first `uv` on `PATH`.
pub fn uv_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FAILPASS_UV") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join("uv")).find(|p| p.is_file())
}

impl EnvCache {
    /// The built environment of one release, building it if needed.
    pub async fn get_release(&self, release: &ResolvedRelease) -> Result<BuiltEnv, SetupFailed> {
        if !release.setup.is_empty() {
            // Not a Python package: its setup commands are an ordinary recipe.
            let recipe =
                Recipe { setup: release.setup.clone(), version: Some(release.label.clone()), ..Recipe::default() };
            return self.get(&recipe, Path::new("/")).await;
        }
        let hash = format!("r{}", release.hash());
        let done = self.root().join(&hash);
        let built_now = self.once(&hash, |cache| async move { cache.build_release(release, &done).await }).await?;
        let tree = self.root().join(&hash).join("tree");
        let venv = tree.join("venv");
        let vars = vec![
            ("PATH".into(), format!("{}:/usr/local/bin:/usr/bin:/bin", venv.join("bin").display())),
            ("VIRTUAL_ENV".into(), venv.to_string_lossy().into_owned()),
        ];
        Ok(BuiltEnv { dir: tree, vars, version: Some(release.label.clone()), hash, built_now })
    }

    async fn build_release(&self, release: &ResolvedRelease, done: &Path) -> Result<(), SetupFailed> {
        let started = Instant::now();
        let fail = |reason: String, log: &str| SetupFailed { reason, log: log.to_owned() };
        let uv = uv_path().ok_or_else(|| {
            fail(
                "uv is not installed on this runner (set FAILPASS_UV or put uv on PATH; `cargo xtask run` installs it)"
                    .into(),
                "",
            )
        })?;
        let uv_dir = uv.parent().map(Path::to_path_buf).unwrap_or_default();
        if done.exists() {
            std::fs::remove_dir_all(done).map_err(|e| fail(format!("clearing {}: {e}", done.display()), ""))?;
        }
        let tree = done.join("tree");
        std::fs::create_dir_all(&tree).map_err(|e| fail(format!("creating {}: {e}", tree.display()), ""))?;
        let builder = tokio::task::spawn_blocking(sandbox::RunUser::lease_builder)
            .await
            .map_err(|e| fail(e.to_string(), ""))?
            .map_err(|e| fail(format!("leasing the builder id: {e}"), ""))?
            .map(Arc::new);
        std::fs::create_dir_all(&self.wheels)
            .map_err(|e| fail(format!("creating {}: {e}", self.wheels.display()), ""))?;
        if let Some(b) = &builder {
            let (w, t, uid) = (self.wheels.clone(), tree.clone(), b.uid);
            tokio::task::spawn_blocking(move || own_top(&w, uid).and_then(|()| own_tree(&t, uid, false)))
                .await
                .map_err(|e| fail(e.to_string(), ""))?
                .map_err(|e| fail(format!("handing the wheel cache and tree to the builder: {e}"), ""))?;
        }
        let mut log = format!(
            "# {}: requirements resolved as of {} from {}, wheels only, for CPython 3.11\n",
            release.label,
            release.exclude_newer.map(|d| d.to_rfc3339()).unwrap_or_else(|| "today".into()),
            release.index_url
        );
        let result = self.install(release, &tree, &uv, &uv_dir, builder.clone(), &mut log).await;
        drop(builder);
        let fetched = match result {
            Ok(f) => f,
            Err(e) => {
                let _ = std::fs::remove_dir_all(done);
                return Err(e);
            }
        };
        let publish = {
            let t = tree.clone();
            tokio::task::spawn_blocking(move || own_tree(&t, 0, true)).await.map_err(|e| fail(e.to_string(), &log))?
        };
        if let Err(e) = publish {
            let _ = std::fs::remove_dir_all(done);
            return Err(fail(format!("handing the built tree to root: {e}"), &log));
        }
        if let Err(e) = self.import_check(release, &tree, &mut log).await {
            let _ = std::fs::remove_dir_all(done);
            return Err(e);
        }
        let resolved = frozen(&log);
        let size_bytes = dir_size(done);
        let meta = EnvMeta {
            label: release.label.clone(),
            hash: done.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            built_seconds: started.elapsed().as_secs_f64(),
            size_bytes,
            resolved,
            fetched,
        };
        log.push_str(&format!(
            "# built in {:.1} s, {:.1} MB, {}\n",
            meta.built_seconds,
            size_bytes as f64 / 1e6,
            if fetched {
                "fetching what the wheel cache lacked"
            } else {
                "with no network: every wheel came from the cache"
            }
        ));
        let written = serde_json::to_vec_pretty(&meta)
            .map_err(std::io::Error::other)
            .and_then(|m| std::fs::write(done.join("meta.json"), m))
            .and_then(|()| std::fs::write(done.join(".built"), &log));
        if let Err(e) = written {
            let _ = std::fs::remove_dir_all(done);
            return Err(fail(format!("recording the build: {e}"), &log));
        }
        Ok(())
    }

    /// Makes the virtual environment and installs into it: from the wheel
    /// cache with no network, else from the index. Whether it fetched.
    async fn install(
        &self,
        release: &ResolvedRelease,
        tree: &Path,
        uv: &Path,
        uv_dir: &Path,
        builder: Option<Arc<sandbox::RunUser>>,
        log: &mut String,
    ) -> Result<bool, SetupFailed> {
        let reqs = release.requirements.join("\n") + "\n";
        std::fs::write(tree.join("requirements.txt"), &reqs)
            .map_err(|e| SetupFailed { reason: format!("writing requirements.txt: {e}"), log: log.clone() })?;
        if let Some(b) = &builder {
            let _ = std::os::unix::fs::chown(tree.join("requirements.txt"), Some(b.uid), Some(b.uid));
        }
        log.push_str(&format!("# requirements.txt:\n{reqs}"));
        let env = vec![
            ("UV_CACHE_DIR".to_owned(), self.wheels.to_string_lossy().into_owned()),
            ("UV_PYTHON_DOWNLOADS".to_owned(), "never".to_owned()),
            ("UV_NO_CONFIG".to_owned(), "1".to_owned()),
            ("UV_LINK_MODE".to_owned(), "copy".to_owned()),
            ("UV_NO_PROGRESS".to_owned(), "1".to_owned()),
            // The system's certificate store (where an operator adds a proxy's or mirror's CA), not uv's own.
            ("UV_SYSTEM_CERTS".to_owned(), "1".to_owned()),
        ];
        let mut env = env;
        if let Some(f) = std::env::var_os("SSL_CERT_FILE").filter(|f| Path::new(f).starts_with("/etc/ssl")) {
            env.push(("SSL_CERT_FILE".to_owned(), f.to_string_lossy().into_owned()));
        }
        let binds = vec![(self.wheels.clone(), true), (uv_dir.to_path_buf(), false)];
        let how = |network: bool| Step { user: builder.clone(), binds: binds.clone(), network, env: env.clone() };
        let uv = shell_word(uv);
        self.step_with(tree, &format!("{uv} venv --quiet --python {PYTHON} venv"), how(false), log).await?;
        let mut install = format!(
            "{uv} pip install --python venv/bin/python --only-binary :all: --compile-bytecode --index-url {} -r requirements.txt",
            shell_word(Path::new(&release.index_url))
        );
        if let Some(d) = release.exclude_newer {
            install.push_str(&format!(" --exclude-newer {}", d.format("%Y-%m-%dT%H:%M:%SZ")));
        }
        let mut offline_log = String::new();
        let offline = self.step_with(tree, &format!("{install} --offline"), how(false), &mut offline_log).await;
        let fetched = match offline {
            Ok(()) => {
                log.push_str("# installing from the wheel cache alone, with no network:\n");
                log.push_str(&offline_log);
                false
            }
            Err(_) => {
                let why =
                    offline_log.lines().rev().find(|l| l.contains("error") || l.contains("cause")).unwrap_or("").trim();
                log.push_str(&format!(
                    "# the wheel cache alone was not enough (with no network: {why}); fetching what it lacks from the index:\n"
                ));
                self.step_with(tree, &install, how(true), log).await?;
                true
            }
        };
        self.step_with(tree, &format!("{uv} pip freeze --python venv/bin/python"), how(false), log).await?;
        Ok(fetched)
    }

    /// The package must import in its environment, as a run would import it.
    async fn import_check(&self, release: &ResolvedRelease, tree: &Path, log: &mut String) -> Result<(), SetupFailed> {
        let code =
            format!("import {m}; print('{m}', getattr({m}, '__version__', '(no __version__)'))", m = release.module);
        let mut cmd = Command::new(tree.join("venv/bin/python").to_string_lossy().into_owned(), ["-c", code.as_str()]);
        cmd.binds.push((tree.to_path_buf(), false));
        cmd.limits = self.setup_limits;
        cmd.limits.wall = std::time::Duration::from_secs(120);
        log.push_str(&format!("$ python -c \"{code}\"  (as a run: a user of its own, no network)\n"));
        let scratch = std::env::temp_dir().join("failpass-runs");
        let r = sandbox::run(&cmd, Some(&scratch))
            .await
            .map_err(|e| SetupFailed { reason: format!("the import check could not start: {e}"), log: log.clone() })?;
        log.push_str(&r.output);
        if !r.succeeded() {
            return Err(SetupFailed {
                reason: format!("the environment cannot import `{}`, so nothing can be graded in it", release.module),
                log: log.clone(),
            });
        }
        Ok(())
    }
}

/// Hands the wheel cache's top directory to the builder (what is inside is its already).
fn own_top(dir: &Path, uid: u32) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata(dir)?.uid() != uid {
        own_tree(dir, uid, false)?;
    }
    Ok(())
}

/// The `name==version` lines `uv pip freeze` printed into a build's log.
fn frozen(log: &str) -> Vec<String> {
    log.lines()
        .skip_while(|l| !(l.starts_with("$ ") && l.contains(" pip freeze ")))
        .skip(1)
        .take_while(|l| !l.starts_with('$') && !l.starts_with('#'))
        .filter(|l| l.contains("==") && !l.starts_with("Using "))
        .map(str::to_owned)
        .collect()
}

fn shell_word(p: &Path) -> String {
    format!("'{}'", p.to_string_lossy().replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_resolved_recipe_is_what_freeze_printed() {
        let log = "# numpy 2.0.1\n$ '/x/uv' pip install -r requirements.txt\nInstalled 1 package\n + numpy==2.0.1\n\
                   $ '/x/uv' pip freeze --python venv/bin/python\nUsing Python 3.11.2 environment at: venv\n\
                   numpy==2.0.1\nscipy==1.11.1\n$ python -c \"import numpy\"\nnumpy 2.0.1\n";
        assert_eq!(super::frozen(log), ["numpy==2.0.1", "scipy==1.11.1"]);
    }
}
