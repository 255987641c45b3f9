//! The runnable demo: `fastnum`, a tiny Python array library shipped in a
//! buggy (0.3.0) and a fixed (0.3.1) release with genuine numeric bugs of the
//! deep-learning kind (softmax and logsumexp overflowing to nan/inf, a mean
//! over the wrong axis, quantization that truncates, a train/test split that
//! intermittently overlaps), reports written the way users write them, and
//! candidate scripts good and bad. Seeding writes the package into the data
//! directory, registers the environments and queues every candidate for
//! verification, so the workers grade them for real on first start.

use std::path::Path;

use failpass_shared::api::attempts::CreateAttemptRequest;
use failpass_shared::api::jobs::{CreateEnvironmentRequest, Recipe};
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::api::reports::{CreateReportRequest, Oracle};
use failpass_shared::model::{EnvironmentRole, Verdict, VerdictSource};
use failpass_shared::routing::{RoutingConfig, RoutingInput, decide};
use serde::Deserialize;

use super::DemoSummary;
use crate::db::{NewReport, Storage};

pub const PROJECT: &str = "fastnum/fastnum";
const BUGGY: &str = include_str!("../../../demo/fastnum/buggy/fastnum/__init__.py");
const FIXED: &str = include_str!("../../../demo/fastnum/fixed/fastnum/__init__.py");
const REPORTS: &str = include_str!("../../../demo/fastnum/reports.json");

#[derive(Deserialize)]
struct DemoReport {
    external_id: String,
    title: String,
    labels: Vec<String>,
    environment: Option<String>,
    reporter: String,
    body: String,
    #[serde(default)]
    oracle: Option<Oracle>,
    candidates: Vec<DemoCandidate>,
}

#[derive(Deserialize)]
struct DemoCandidate {
    agent: String,
    model: Option<String>,
    cost_usd: f64,
    key: String,
    code: String,
}

/// Writes the package releases under `data_dir/demo` and returns the three
/// environment requests (buggy 0.3.0, fixed 0.3.1, release 0.4.0).
pub fn write_package(data_dir: &Path) -> std::io::Result<Vec<CreateEnvironmentRequest>> {
    let root = std::path::absolute(data_dir.join("demo"))?;
    let releases = [
        ("fastnum-0.3.0", EnvironmentRole::Buggy, BUGGY.to_owned()),
        ("fastnum-0.3.1", EnvironmentRole::Fixed, FIXED.to_owned()),
        ("fastnum-0.4.0", EnvironmentRole::Release, FIXED.replace("0.3.1", "0.4.0")),
    ];
    let mut envs = Vec::new();
    for (name, role, source) in releases {
        let pkg = root.join(name).join("fastnum");
        std::fs::create_dir_all(&pkg)?;
        std::fs::write(pkg.join("__init__.py"), source)?;
        let version = name.replace('-', " ");
        envs.push(CreateEnvironmentRequest {
            project: PROJECT.to_owned(),
            name: name.to_owned(),
            role,
            recipe: Recipe {
                dir: Some(root.join(name).to_string_lossy().into_owned()),
                git: None,
                // A real setup step: the package imports and says its version.
                setup: vec!["python3 -c 'import fastnum; print(\"fastnum\", fastnum.__version__)'".into()],
                env: [("PYTHONPATH".to_owned(), "{env}".to_owned())].into_iter().collect(),
                version: Some(version),
            },
        });
    }
    Ok(envs)
}

pub async fn seed(storage: &dyn Storage, routing: &RoutingConfig, data_dir: &Path) -> anyhow::Result<DemoSummary> {
    storage
        .create_project(&CreateProjectRequest {
            slug: PROJECT.into(),
            name: Some("fastnum".into()),
            description: Some("Runnable demo: a tiny array library in a buggy and a fixed release; its candidates are graded for real.".into()),
            public: Some(true),
            upstream_url: None,
        benchmark: None,
        })
        .await?;
    for env in write_package(data_dir)? {
        storage.create_environment(PROJECT, &env).await?;
    }
    let reports: Vec<DemoReport> = serde_json::from_str(REPORTS)?;
    let mut summary = DemoSummary { projects: 1, reports: 0, attempts: 0 };
    let filed = chrono::Utc::now() - chrono::Duration::days(3);
    for (i, r) in reports.into_iter().enumerate() {
        let request = CreateReportRequest {
            project: PROJECT.into(),
            external_id: r.external_id.clone(),
            url: Some(format!("https://github.com/fastnum/fastnum/issues/{}", r.external_id)),
            title: r.title,
            body: r.body,
            labels: r.labels,
            filed_at: Some(filed + chrono::Duration::hours(i as i64 * 5)),
            reporter: Some(r.reporter),
            environment: r.environment,
            paths: vec![],
            oracle: r.oracle,
            upstream: None,
        };
        let decision = decide(routing, &RoutingInput::from_request(&request));
        let report = storage.create_report(&NewReport { request, decision, origin: Default::default() }).await?;
        summary.reports += 1;
        // The refine loop, offline (`snippet`), on every report an agent should take.
        if report.summary.route == failpass_shared::model::Route::AgentFirst
            && report.oracle.as_ref().is_some_and(|o| o.is_deterministic())
        {
            let job =
                crate::db::queue::NewJob::refine(report.summary.id, failpass_shared::api::jobs::PRIORITY_BULK, false);
            storage.enqueue(&job, chrono::Utc::now()).await?;
        }
        for c in r.candidates {
            storage
                .create_attempt(&CreateAttemptRequest {
                    model: c.model,
                    started_at: Some(filed + chrono::Duration::hours(i as i64 * 5 + 1)),
                    cost_usd: Some(c.cost_usd),
                    candidate: Some(c.code),
                    attempt_key: Some(format!("fastnum-{}-{}", r.external_id, c.key)),
                    verify: true,
                    ..CreateAttemptRequest::new(report.summary.id, c.agent, Verdict::Hypothesis, VerdictSource::Llm)
                })
                .await?;
            summary.attempts += 1;
        }
    }
    Ok(summary)
}
