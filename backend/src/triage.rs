//! The routing rule as the server runs it: the explicit rule, plus a
//! classifier per project once maintainers have corrected enough of its
//! routes. The classifier learns from the examples failpass ships and the
//! project's corrections; it is retrained after each correction.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use failpass_shared::api::reports::CreateReportRequest;
use failpass_shared::model::Route;
use failpass_shared::routing::{Classifier, Example, RoutingConfig, RoutingDecision, RoutingInput, decide_with};

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
    let mut examples = crate::routing_eval::shipped_examples();
    examples.extend(corrected.into_iter().map(|c| Example {
        title: c.title,
        body: c.body,
        labels: c.labels,
        harness: c.route == Route::HumanFirst,
    }));
    Ok(Classifier::train(&examples, Some(cfg.harness_prior)))
}

/// Trained classifiers by project, kept until a correction changes them.
#[derive(Default)]
pub struct Models {
    cache: Mutex<HashMap<String, Option<Arc<Classifier>>>>,
}

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

    /// Forgets a project's classifier: the next report trains it again.
    pub fn forget(&self, project: &str) {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).remove(project);
    }

    /// Routes a report as filed, with its project's classifier if it has one.
    pub async fn decide(
        &self,
        storage: &dyn Storage,
        cfg: &RoutingConfig,
        req: &CreateReportRequest,
    ) -> StorageResult<RoutingDecision> {
        let model = self.get(storage, cfg, &req.project).await?;
        Ok(decide_with(cfg, model.as_deref(), &RoutingInput::from_request(req)))
    }
}
