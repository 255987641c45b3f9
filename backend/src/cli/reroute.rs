//! `failpass reroute`: apply a changed routing rule to every stored report
//! and say what changed (the rule's file is read by `config::load_routing`).

use std::collections::BTreeMap;

use failpass_shared::api::reports::{Order, ReportListQuery, ReportSort};
use failpass_shared::model::OracleSource;
use failpass_shared::routing::{RoutingConfig, RoutingInput, decide_with};

use crate::db::{ProjectScope, Storage, StorageResult};

#[derive(Debug, Default, PartialEq)]
pub struct RerouteSummary {
    pub reports: u64,
    /// Reports whose routing changed in any way (route, flags, category, evidence).
    pub changed: u64,
    pub routes_changed: u64,
    /// `"hypothesis → agent_first"` → count.
    pub transitions: BTreeMap<String, u64>,
    /// Lines of boilerplate learned, by project.
    pub boilerplate: BTreeMap<String, usize>,
}

/// Re-decides every stored report under `cfg` (with its project's classifier
/// once it has one); stores the changes unless `dry_run`. A supplied oracle
/// is kept; a derived one is derived again; a corrected route is kept. Each
/// project's boilerplate is learned again from its reports first (and
/// stored unless `dry_run`). Like every reroute, it tells no hook.
pub async fn reroute(storage: &dyn Storage, cfg: &RoutingConfig, dry_run: bool) -> StorageResult<RerouteSummary> {
    let mut summary = RerouteSummary::default();
    let mut models = std::collections::HashMap::new();
    let mut boilerplates = std::collections::HashMap::new();
    let mut query =
        ReportListQuery { sort: ReportSort::CreatedAt, order: Order::Asc, limit: 500, ..Default::default() };
    loop {
        let page = storage.list_reports(&query, &ProjectScope::All).await?;
        for item in &page.items {
            let Some(report) = storage.get_report(item.id, &ProjectScope::All).await? else { continue };
            summary.reports += 1;
            let supplied = report.oracle.as_ref().filter(|o| o.source != Some(OracleSource::Derived));
            let s = &report.summary;
            if !models.contains_key(&s.project) {
                let m = crate::triage::project_model(storage, cfg, &s.project).await?;
                models.insert(s.project.clone(), m);
                let b = crate::triage::learn_boilerplate(storage, cfg, &s.project, dry_run).await?;
                summary.boilerplate.insert(s.project.clone(), b.len());
                boilerplates.insert(s.project.clone(), b);
            }
            let mut decision = decide_with(
                cfg,
                models[&s.project].as_ref(),
                &RoutingInput { oracle: supplied, ..RoutingInput::from_report(&report) }
                    .with_boilerplate(boilerplates.get(&s.project)),
            );
            if let Some(c) = &report.route_correction {
                decision.keep_correction(c.route);
            }
            let same = decision.route == s.route
                && decision.route_check == s.route_check
                && decision.category == s.category
                && decision.vague == s.vague
                && decision.llm_only == s.llm_only
                && decision.explanation == report.explanation
                && decision.oracle == report.oracle;
            if same {
                continue;
            }
            summary.changed += 1;
            if decision.route != s.route {
                summary.routes_changed += 1;
                *summary.transitions.entry(format!("{} → {}", s.route, decision.route)).or_default() += 1;
            }
            if !dry_run {
                storage.update_routing(s.id, &decision).await?;
            }
        }
        match page.next_cursor {
            Some(c) => query.cursor = Some(c),
            None => break,
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_file_is_the_default() {
        let text = include_str!("../../../docs/routing.toml");
        let parsed: RoutingConfig = toml::from_str(text).unwrap();
        assert_eq!(parsed, RoutingConfig::default(), "docs/routing.toml and RoutingConfig::default() must agree");
    }

    #[test]
    fn partial_files_override_and_typos_are_named() {
        let cfg: RoutingConfig = toml::from_str("short_length = 50\n").unwrap();
        assert_eq!(cfg.short_length, 50);
        assert_eq!(cfg.harness_labels, RoutingConfig::default().harness_labels);
        let e = toml::from_str::<RoutingConfig>("harness_keyword = []\n").unwrap_err().to_string();
        assert!(e.contains("harness_keyword"), "{e}");
        let e = toml::from_str::<RoutingConfig>("short_length = \"long\"\n").unwrap_err().to_string();
        assert!(e.contains("short_length") || e.contains("line 1"), "{e}");
    }
}
