//! Which two environments a report is graded on: its own buggy and fixed
//! releases when its project builds releases and the report names a buggy
//! one; otherwise the project's buggy and fixed environments.

use failpass_shared::api::jobs::{Environment, Recipe};
use failpass_shared::api::releases::ReleaseTemplate;
use failpass_shared::api::reports::Report;
use failpass_shared::model::EnvironmentRole;

use super::env::{BuiltEnv, SetupFailed};
use super::workbench::Workbench;
use crate::releases::{self, ResolvedRelease};

/// The two releases of a report, resolved against the index.
pub struct ReleaseSides {
    pub buggy: ResolvedRelease,
    pub fixed: ResolvedRelease,
}

/// Why a report's releases cannot be had.
#[derive(Debug, Clone)]
pub enum SidesError {
    /// The index cannot be reached (and no listing was kept): a later try may work.
    Unreachable(String),
    /// What the report names cannot be built: its grade says why.
    Unusable(String),
}

/// A report's own releases: `Ok(None)` when it is graded on the project's
/// environments (no template, or no buggy release named).
pub async fn for_report(bench: &Workbench, report: &Report) -> Result<Option<ReleaseSides>, SidesError> {
    let unusable = SidesError::Unusable;
    let storage = &bench.storage;
    let project = &report.summary.project;
    let template = storage
        .release_template(project)
        .await
        .map_err(|e| SidesError::Unreachable(format!("reading the release template: {e}")))?;
    let Some(template) = template else { return Ok(None) };
    let versions = storage
        .report_versions(report.summary.id)
        .await
        .map_err(|e| SidesError::Unreachable(format!("reading the report's versions: {e}")))?;
    let Some(buggy) = versions.buggy else { return Ok(None) };
    let Some(fixed) = versions.fixed else {
        return Err(unusable(format!(
            "the report is about {} {buggy}, but no fixed release is set: a maintainer sets it on the report, or a bisect finds it",
            template.package
        )));
    };
    let (b, f) = (resolve(bench, &template, &buggy).await?, resolve(bench, &template, &fixed).await?);
    Ok(Some(ReleaseSides { buggy: b, fixed: f }))
}

/// One release of `template`, checked against the index's list.
pub async fn resolve(
    bench: &Workbench,
    template: &ReleaseTemplate,
    version: &str,
) -> Result<ResolvedRelease, SidesError> {
    let listing = bench
        .index
        .releases(&template.package, !template.setup.is_empty())
        .await
        .map_err(|e| SidesError::Unreachable(format!("listing the releases of {}: {e}", template.package)))?;
    releases::resolve(template, &listing, version, &bench.index.url).map_err(SidesError::Unusable)
}

impl std::fmt::Display for SidesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SidesError::Unreachable(s) | SidesError::Unusable(s) => f.write_str(s),
        }
    }
}

/// A release as the grade records an environment.
pub fn as_environment(report: &Report, role: EnvironmentRole, r: &ResolvedRelease) -> Environment {
    Environment {
        id: 0,
        project: report.summary.project.clone(),
        name: r.label.clone(),
        role,
        recipe: Recipe { version: Some(r.label.clone()), ..Recipe::default() },
        recipe_hash: r.hash(),
        created_at: chrono::Utc::now(),
    }
}

/// Builds (or finds) both releases' environments.
pub async fn build(bench: &Workbench, sides: &ReleaseSides) -> Result<(BuiltEnv, BuiltEnv), SetupFailed> {
    let b = bench.envs.get_release(&sides.buggy).await?;
    let f = bench.envs.get_release(&sides.fixed).await?;
    Ok((b, f))
}
