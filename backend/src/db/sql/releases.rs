//! The SQL of release templates and report versions, for both engines.

use async_trait::async_trait;
use std::str::FromStr;

use failpass_shared::api::releases::{Bisect, ReleaseTemplate, ReportVersions};
use failpass_shared::api::reports::CreateReportRequest;
use failpass_shared::model::UpstreamState;
use sqlx::types::Json;

use super::Engine;
use crate::db::StorageResult;
use crate::db::common;
use crate::db::releases::ReleaseStore;

type VersionsRow =
    (Option<String>, Option<String>, Option<String>, Option<String>, Option<String>, Option<Json<Bisect>>);

#[async_trait]
impl ReleaseStore for Engine {
    async fn release_template(&self, project: &str) -> StorageResult<Option<ReleaseTemplate>> {
        let row: Option<Json<ReleaseTemplate>> = sqlx::query_scalar(
            "SELECT r.template FROM project_releases r JOIN projects p ON p.id = r.project_id WHERE p.slug = $1",
        )
        .bind(project)
        .fetch_optional(&self.read)
        .await?;
        Ok(row.map(|j| j.0))
    }

    async fn set_release_template(&self, project: &str, template: Option<&ReleaseTemplate>) -> StorageResult<()> {
        let mut tx = self.write.begin().await?;
        let project_id = Self::project_id(&mut tx, project).await?;
        match template {
            Some(t) => {
                sqlx::query(
                    "INSERT INTO project_releases (project_id, template, updated_at) VALUES ($1, $2, $3) \
                     ON CONFLICT (project_id) DO UPDATE SET template = $2, updated_at = $3",
                )
                .bind(project_id)
                .bind(Json(t))
                .bind(common::now())
                .execute(&mut *tx)
                .await?;
            }
            None => {
                sqlx::query("DELETE FROM project_releases WHERE project_id = $1")
                    .bind(project_id)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    async fn report_versions(&self, report_id: i64) -> StorageResult<ReportVersions> {
        let row: Option<VersionsRow> = sqlx::query_as(
            "SELECT buggy, buggy_source, fixed, fixed_source, rejected, bisect FROM report_versions WHERE report_id = $1",
        )
        .bind(report_id)
        .fetch_optional(&self.read)
        .await?;
        Ok(row
            .map(|(buggy, buggy_source, fixed, fixed_source, rejected, bisect)| ReportVersions {
                buggy,
                buggy_source,
                fixed,
                fixed_source,
                rejected,
                bisect: bisect.map(|b| b.0),
            })
            .unwrap_or_default())
    }

    async fn set_report_versions(&self, report_id: i64, v: &ReportVersions) -> StorageResult<()> {
        sqlx::query(
            "INSERT INTO report_versions (report_id, buggy, buggy_source, fixed, fixed_source, rejected, bisect, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (report_id) DO UPDATE SET buggy = $2, buggy_source = $3, \
             fixed = $4, fixed_source = $5, rejected = $6, bisect = $7, updated_at = $8",
        )
        .bind(report_id)
        .bind(&v.buggy)
        .bind(&v.buggy_source)
        .bind(&v.fixed)
        .bind(&v.fixed_source)
        .bind(&v.rejected)
        .bind(v.bisect.as_ref().map(Json))
        .bind(common::now())
        .execute(&self.write)
        .await?;
        Ok(())
    }
}

impl Engine {
    /// The release template of a project, read inside a write.
    pub(in crate::db) async fn template_in(
        tx: &mut super::Tx,
        project_id: i64,
    ) -> StorageResult<Option<ReleaseTemplate>> {
        let template: Option<Json<ReleaseTemplate>> =
            sqlx::query_scalar("SELECT template FROM project_releases WHERE project_id = $1")
                .bind(project_id)
                .fetch_optional(&mut **tx)
                .await?;
        Ok(template.map(|Json(t)| t))
    }

    /// A report taken in by a project that builds releases (`template`):
    /// the buggy release its body names, with the line it came from, and,
    /// when upstream closed it as completed in a milestone that is a
    /// version, that release as the fixed one (both checked against the
    /// index only when something is built with them). Written in the
    /// report's own transaction; a release already read or set stays.
    pub(in crate::db) async fn read_versions(
        tx: &mut super::Tx,
        template: Option<&ReleaseTemplate>,
        report_id: i64,
        report: &CreateReportRequest,
    ) -> StorageResult<()> {
        let Some(t) = template else { return Ok(()) };
        let module = t.module();
        let mut names: Vec<&str> = vec![t.package.as_str(), module.as_str()];
        names.extend(t.aliases.iter().map(String::as_str));
        let buggy = failpass_shared::envinfo::version_of(&report.body, &names);
        let fixed = report.upstream.as_ref().and_then(|u| {
            let completed = u.state == UpstreamState::Closed && u.reason.as_deref().is_none_or(|r| r == "completed");
            let m = u.milestone.as_deref()?.trim();
            let m = m.strip_prefix(['v', 'V']).unwrap_or(m);
            (completed && pep440_rs::Version::from_str(m).is_ok()).then(|| m.to_owned())
        });
        if buggy.is_none() && fixed.is_none() {
            return Ok(());
        }
        sqlx::query(
            "INSERT INTO report_versions (report_id, buggy, buggy_source, fixed, fixed_source, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (report_id) DO UPDATE SET \
             buggy_source = CASE WHEN report_versions.buggy IS NULL THEN excluded.buggy_source ELSE report_versions.buggy_source END, \
             buggy = COALESCE(report_versions.buggy, excluded.buggy), \
             fixed_source = CASE WHEN report_versions.fixed IS NULL THEN excluded.fixed_source ELSE report_versions.fixed_source END, \
             fixed = COALESCE(report_versions.fixed, excluded.fixed), \
             updated_at = excluded.updated_at",
        )
        .bind(report_id)
        .bind(buggy.as_ref().map(|b| b.version.clone()))
        .bind(buggy.as_ref().map(|b| format!("the report, {}", b.source())))
        .bind(&fixed)
        .bind(fixed.as_ref().map(|m| format!("upstream: closed as completed in milestone {m}")))
        .bind(common::now())
        .execute(&mut **tx)
        .await?;
        Ok(())
    }
}
