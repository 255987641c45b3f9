//! The routing rule as the server runs it: the explicit rule, plus a
//! classifier per project once maintainers have corrected enough of its
//! routes. The classifier learns from the examples failpass ships and the
//! project's corrections; it is retrained after each correction.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use failpass_shared::api::reports::CreateReportRequest;
use failpass_shared::model::Route;
use failpass_shared::routing::sections::learn;
use failpass_shared::routing::{
    Boilerplate, Classifier, Example, RoutingConfig, RoutingDecision, RoutingInput, decide_with,
};

use crate::db::routing::LearnedBoilerplate;
use crate::db::{Storage, StorageResult};

/// A project's classifier: `None` until it has `classifier_min_corrections`
/// corrected routes.
pub async fn project_model(
    storage: &dyn Storage,
    cfg: &RoutingConfig,
    project: &str,
) -> StorageResult<Option<Classifier>> {
    let corrected = storage.corrected_routes(project).await?;
    if corrected.is_empty() || corrected.len() < cfg.classifier_min_corrections as usize {
        return Ok(None);
    }
    let mut examples = crate::cli::routing_eval::shipped_examples();
    examples.extend(corrected.into_iter().map(|c| Example {
        title: c.title,
        body: c.body,
        labels: c.labels,
        harness: c.route == Route::HumanFirst,
    }));
    Ok(Classifier::train(&examples, Some(cfg.harness_prior)))
}

/// A project's learned boilerplate, as `reroute` last stored it.
pub async fn project_boilerplate(storage: &dyn Storage, project: &str) -> StorageResult<Boilerplate> {
    let learned = storage.project_boilerplate(project).await?;
    Ok(Boilerplate::from_learned(&learned.lines))
}

/// Learns a project's boilerplate from its newest reports (at most
/// `LEARN_FROM`) and, unless `dry_run`, stores it; answers the lines learned.
pub async fn learn_boilerplate(
    storage: &dyn Storage,
    cfg: &RoutingConfig,
    project: &str,
    dry_run: bool,
) -> StorageResult<Boilerplate> {
    const LEARN_FROM: i64 = 2000;
    let bodies = storage.report_bodies(project, LEARN_FROM).await?;
    let refs: Vec<&str> = bodies.iter().map(String::as_str).collect();
    let lines = learn(&refs, cfg.boilerplate_min_reports as usize, cfg.boilerplate_share);
    let boilerplate = Boilerplate::from_learned(&lines);
    if !dry_run {
        let learned = LearnedBoilerplate { lines, reports: bodies.len() as u64, learned_at: Some(chrono::Utc::now()) };
        storage.set_project_boilerplate(project, &learned).await?;
    }
    Ok(boilerplate)
}

/// Trained classifiers and learned boilerplate by project, kept until a
/// correction (or a reroute) changes them.
#[derive(Default)]
pub struct Models {
    cache: Mutex<HashMap<String, Option<Arc<Classifier>>>>,
    /// Read again after [`BOILERPLATE_TTL`]: `failpass reroute` may have
    /// learned it anew in another process.
    boilerplate: Mutex<HashMap<String, (std::time::Instant, Arc<Boilerplate>)>>,
}

/// How long a server keeps a project's boilerplate before reading it again.
pub const BOILERPLATE_TTL: std::time::Duration = std::time::Duration::from_secs(300);

impl Models {
    pub async fn get(
        &self,
        storage: &dyn Storage,
        cfg: &RoutingConfig,
        project: &str,
    ) -> StorageResult<Option<Arc<Classifier>>> {
        if let Some(m) = self.cache.lock().unwrap_or_else(|e| e.into_inner()).get(project) {
            return Ok(m.clone());
        }
        let model = project_model(storage, cfg, project).await?.map(Arc::new);
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).insert(project.to_owned(), model.clone());
        Ok(model)
    }

    /// The project's boilerplate, kept for [`BOILERPLATE_TTL`].
    pub async fn boilerplate(&self, storage: &dyn Storage, project: &str) -> StorageResult<Arc<Boilerplate>> {
        if let Some((at, b)) = self.boilerplate.lock().unwrap_or_else(|e| e.into_inner()).get(project)
            && at.elapsed() < BOILERPLATE_TTL
        {
            return Ok(b.clone());
        }
        let b = Arc::new(project_boilerplate(storage, project).await?);
        let entry = (std::time::Instant::now(), b.clone());
        self.boilerplate.lock().unwrap_or_else(|e| e.into_inner()).insert(project.to_owned(), entry);
        Ok(b)
    }

    /// Forgets a project's classifier and boilerplate: the next report reads them again.
    pub fn forget(&self, project: &str) {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).remove(project);
        self.boilerplate.lock().unwrap_or_else(|e| e.into_inner()).remove(project);
    }

    /// Routes a report as filed, with its project's classifier if it has one.
    pub async fn decide(
        &self,
        storage: &dyn Storage,
        cfg: &RoutingConfig,
        req: &CreateReportRequest,
    ) -> StorageResult<RoutingDecision> {
        let model = self.get(storage, cfg, &req.project).await?;
        let boilerplate = self.boilerplate(storage, &req.project).await?;
        Ok(decide_with(cfg, model.as_deref(), &RoutingInput::from_request(req).with_boilerplate(Some(&boilerplate))))
    }
}
