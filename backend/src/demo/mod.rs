//! Demo data: a small, realistic picture of a team triaging ML-library bug
//! reports with agents (`history`), the runnable `fastnum` package whose
//! candidates are graded for real (`fastnum`), and users with the three
//! roles. `serve --demo` loads it into an empty database.

mod fastnum;
mod history;
pub mod realbugs;
pub mod scale;
mod summary;

pub use history::seed;
pub use summary::DemoSummary;

use chrono::Utc;
use failpass_shared::routing::RoutingConfig;

use crate::db::Storage;

/// Loads the demo into an empty database; `None` when it already has data.
/// Besides the recorded history, it writes the runnable `fastnum` demo
/// package under `data_dir` and queues its candidates for real grading.
pub async fn seed_if_empty(
    storage: &dyn Storage,
    routing: &RoutingConfig,
    data_dir: &std::path::Path,
    real_bugs: bool,
) -> anyhow::Result<Option<DemoSummary>> {
    if !storage.is_empty().await? {
        return Ok(None);
    }
    let mut summary = seed(storage, routing, Utc::now()).await?;
    let runnable = fastnum::seed(storage, routing, data_dir).await?;
    summary.projects += runnable.projects;
    summary.reports += runnable.reports;
    summary.attempts += runnable.attempts;
    let real = if real_bugs { seed_real_bugs(storage, routing).await? } else { 0 };
    summary.projects += usize::from(real_bugs);
    summary.reports += real;
    summary.attempts += 2 * real;
    seed_users(storage, data_dir).await?;
    Ok(Some(summary))
}

/// The demo's real library: networkx (pure Python, small wheels, so the
/// first start stays quick), its corpus bugs graded for real on the releases
/// their reports name, by the reference reproduction and the snippet agent.
/// Where the package index cannot be reached the verifications wait and say
/// so (their jobs retry with the reason), and the rest of the demo starts.
pub const REAL_LIBRARY: &str = include_str!("../../../corpus/realbugs/networkx.toml");

async fn seed_real_bugs(storage: &dyn Storage, routing: &RoutingConfig) -> anyhow::Result<usize> {
    let lib = realbugs::parse(REAL_LIBRARY, "corpus/realbugs/networkx.toml")?;
    let seeded = realbugs::seed(storage, routing, &lib, |_| true).await?;
    for s in &seeded {
        let reference =
            realbugs::attempt(&s.report, "reference", s.bug.reproduction.clone(), &format!("ref-{}", s.bug.id), true);
        storage.create_attempt(&reference).await?;
        if let Some(c) = crate::runner::snippet::snippet(&s.report.body, 1) {
            storage
                .create_attempt(&realbugs::attempt(&s.report, "snippet", c, &format!("snip-{}", s.bug.id), true))
                .await?;
        }
    }
    Ok(seeded.len())
}

/// Where the demo users' passwords are kept (readable by the operator only),
/// so every `serve --demo` can print them again.
pub fn credentials_file(data_dir: &std::path::Path) -> std::path::PathBuf {
    data_dir.join("demo-credentials.txt")
}

/// The demo's users, one per kind of person failpass serves, with fresh
/// random passwords written to [`credentials_file`].
pub const DEMO_USERS: &[(&str, &str)] = &[
    ("demo-admin", "admin: every project, environments and visibility"),
    (
        "demo-maintainer",
        "maintainer of fastnum/fastnum, realbugs/networkx, pytorch/pytorch, jax-ml/jax and the private acme/trainer-internal",
    ),
    ("demo-viewer", "viewer of the private acme/trainer-internal"),
];

async fn seed_users(storage: &dyn Storage, data_dir: &std::path::Path) -> anyhow::Result<()> {
    use failpass_shared::model::ProjectRole;
    let mut text = String::from("failpass demo users (sign in at /signin):\n");
    for (name, what) in DEMO_USERS {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("reading randomness: {e}"))?;
        let password = format!("demo-{}", crate::auth::tokens::hex(&bytes));
        storage.create_user(name, &crate::auth::password::hash(&password).await?, *name == "demo-admin").await?;
        text.push_str(&format!("  {name:<16} {password}   {what}\n"));
    }
    for (project, role) in [
        (fastnum::PROJECT, ProjectRole::Maintainer),
        ("pytorch/pytorch", ProjectRole::Maintainer),
        ("jax-ml/jax", ProjectRole::Maintainer),
        ("acme/trainer-internal", ProjectRole::Maintainer),
        ("realbugs/networkx", ProjectRole::Maintainer),
    ] {
        // The real bugs' project exists only when the demo loaded it.
        if storage.get_project(project, &crate::db::ProjectScope::All).await?.is_some() {
            storage.set_membership("demo-maintainer", project, Some(role)).await?;
        }
    }
    storage.set_membership("demo-viewer", "acme/trainer-internal", Some(ProjectRole::Viewer)).await?;
    let path = credentials_file(data_dir);
    std::fs::create_dir_all(data_dir)?;
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&path)?;
        f.write_all(text.as_bytes())?;
    }
    Ok(())
}

/// The demo users' credentials, if this data directory's demo made them.
pub fn credentials(data_dir: &std::path::Path) -> Option<String> {
    std::fs::read_to_string(credentials_file(data_dir)).ok()
}
