//! Releases: a project's release template, and the versions each report is
//! graded on (with where they came from) and its newest bisect.

use async_trait::async_trait;
use failpass_shared::api::releases::{ReleaseTemplate, ReportVersions};

use super::StorageResult;

#[async_trait]
pub trait ReleaseStore: Send + Sync {
    /// How `project` builds its releases; `None` when it does not say.
    async fn release_template(&self, project: &str) -> StorageResult<Option<ReleaseTemplate>>;

    /// Sets (or, with `None`, removes) the template. `Invalid` (field
    /// `project`) when the project does not exist.
    async fn set_release_template(&self, project: &str, template: Option<&ReleaseTemplate>) -> StorageResult<()>;

    /// The versions a report is graded on (all `None` when none are known).
    async fn report_versions(&self, report_id: i64) -> StorageResult<ReportVersions>;

    /// Replaces what is known of a report's versions, in one statement.
    async fn set_report_versions(&self, report_id: i64, versions: &ReportVersions) -> StorageResult<()>;
}
