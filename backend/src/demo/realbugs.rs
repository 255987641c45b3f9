//! The corpus of real bugs (`corpus/realbugs/*.toml`): real reports of real
//! libraries, each with its buggy and fixed releases on the package index
//! and a reference reproduction we wrote. Loaded as one project per library
//! (`realbugs/<library>`), with the library's release template; each bug is
//! a report whose body names its buggy release (read from the body, as any
//! report's is) and whose fixed release is set from the corpus.

use std::path::Path;

use failpass_shared::api::attempts::CreateAttemptRequest;
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::api::releases::ReleaseTemplate;
use failpass_shared::api::reports::{CreateReportRequest, Oracle, Report};
use failpass_shared::model::{OracleKind, OracleSource, Verdict, VerdictSource};
use failpass_shared::routing::{RoutingConfig, RoutingInput, decide};
use serde::Deserialize;

use crate::db::{NewReport, Storage};

/// One library's file.
#[derive(Debug, Clone, Deserialize)]
pub struct Library {
    pub library: LibraryInfo,
    #[serde(default, rename = "bug")]
    pub bugs: Vec<Bug>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LibraryInfo {
    pub name: String,
    pub package: String,
    pub import_name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub requirements: Vec<String>,
    pub tracker: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Bug {
    pub id: String,
    pub url: String,
    pub title: String,
    pub kind: String,
    pub buggy: String,
    pub fixed: String,
    #[serde(default)]
    pub small: bool,
    pub description: String,
    pub body: String,
    pub reproduction: String,
}

impl Library {
    pub fn project(&self) -> String {
        format!("realbugs/{}", self.library.name)
    }

    pub fn template(&self) -> ReleaseTemplate {
        ReleaseTemplate {
            package: self.library.package.clone(),
            import_name: Some(self.library.import_name.clone()),
            requirements: self.library.requirements.clone(),
            setup: Vec::new(),
            aliases: self.library.aliases.clone(),
        }
    }
}

/// Every library file in `dir`, by name.
pub fn load_dir(dir: &Path) -> anyhow::Result<Vec<Library>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files.iter().map(|f| parse(&std::fs::read_to_string(f)?, &f.display().to_string())).collect()
}

/// One library file's text.
pub fn parse(text: &str, name: &str) -> anyhow::Result<Library> {
    let lib: Library = toml::from_str(text).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    crate::releases::validate_template(&lib.template()).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    Ok(lib)
}

/// A bug's report and what was made for it.
pub struct Seeded {
    pub library: String,
    pub bug: Bug,
    pub report: Report,
}

/// Creates the library's project (public) with its release template, and a
/// report per bug `keep` takes, its fixed release set from the corpus.
pub async fn seed(
    storage: &dyn Storage,
    routing: &RoutingConfig,
    lib: &Library,
    keep: impl Fn(&Bug) -> bool,
) -> anyhow::Result<Vec<Seeded>> {
    let project = lib.project();
    if storage.get_project(&project, &crate::db::ProjectScope::All).await?.is_none() {
        storage
            .create_project(&CreateProjectRequest {
                slug: project.clone(),
                name: Some(format!("{} (real bugs)", lib.library.name)),
                description: Some(format!(
                    "Real bugs of {} from {}, graded on the releases they broke and were fixed in.",
                    lib.library.package, lib.library.tracker
                )),
                public: Some(true),
                upstream_url: None,
                benchmark: None,
            })
            .await?;
    }
    storage.set_release_template(&project, Some(&lib.template())).await?;
    let mut out = Vec::new();
    for bug in lib.bugs.iter().filter(|b| keep(b)) {
        let external_id = bug.url.rsplit('/').next().unwrap_or(&bug.id).to_owned();
        if let Some(id) = storage.find_report(&project, &external_id).await? {
            let report = storage.get_report(id, &crate::db::ProjectScope::All).await?;
            if let Some(report) = report {
                out.push(Seeded { library: lib.library.name.clone(), bug: bug.clone(), report });
            }
            continue;
        }
        let request = CreateReportRequest {
            project: project.clone(),
            external_id,
            url: Some(bug.url.clone()),
            title: bug.title.clone(),
            body: bug.body.clone(),
            labels: vec![format!("kind:{}", bug.kind)],
            filed_at: None,
            reporter: None,
            environment: None,
            paths: vec![],
            // The reproduction exits non-zero on the buggy release and zero on the fixed one.
            oracle: Some(Oracle {
                kind: OracleKind::FailToPass,
                source: Some(OracleSource::Authored),
                command: Some("python3 candidate.py".into()),
                // Three runs a side, which must agree: a flaky reproduction is not a reproduction.
                repeats: Some(3),
                ..Default::default()
            }),
            upstream: None,
        };
        let decision = decide(routing, &RoutingInput::from_request(&request));
        let report = storage.create_report(&NewReport { request, decision, origin: Default::default() }).await?;
        let mut v = storage.report_versions(report.summary.id).await?;
        v.fixed = Some(bug.fixed.clone());
        v.fixed_source = Some("the corpus: the release the fix shipped in".into());
        storage.set_report_versions(report.summary.id, &v).await?;
        out.push(Seeded { library: lib.library.name.clone(), bug: bug.clone(), report });
    }
    Ok(out)
}

/// An attempt of `agent` with `candidate` for the report, queued for verification if `verify`.
pub fn attempt(report: &Report, agent: &str, candidate: String, key: &str, verify: bool) -> CreateAttemptRequest {
    CreateAttemptRequest {
        candidate: Some(candidate),
        attempt_key: Some(key.to_owned()),
        cost_usd: Some(0.0),
        verify,
        ..CreateAttemptRequest::new(report.summary.id, agent.to_owned(), Verdict::Hypothesis, VerdictSource::Llm)
    }
}
