//! A mapping's re-import, compared with what an earlier import stored: the
//! summary counts what changed by field (`report.labels`, `attempt.verdict`),
//! and labels are merged when the mapping says so. (A date the input does
//! not give keeps the one stored: storage updates a report's `filed_at` only
//! with a stated one.)

use std::collections::{BTreeMap, HashMap};

use failpass_shared::api::attempts::{AttemptListQuery, CreateAttemptRequest};
use failpass_shared::api::reports::CreateReportRequest;

use super::{LabelsOnReimport, Mapping};
use crate::db::{ProjectScope, Storage, StorageResult};

/// Compares every row whose report exists already with what is stored;
/// adjusts `reports` as the mapping says and returns, per field, how many
/// records change it.
pub async fn compare(
    storage: &dyn Storage,
    mapping: &Mapping,
    reports: &mut [(u64, CreateReportRequest)],
    attempts: &[(u64, CreateAttemptRequest)],
) -> StorageResult<BTreeMap<String, u64>> {
    let mut changed: BTreeMap<String, u64> = BTreeMap::new();
    let mut count = |field: &str, differs: bool| {
        if differs {
            *changed.entry(field.to_owned()).or_default() += 1;
        }
    };
    let mut ids: HashMap<String, i64> = HashMap::new();
    for (_, req) in reports.iter_mut() {
        let key = req.external_id.trim().to_owned();
        let Some(id) = storage.find_report(&req.project, &key).await? else { continue };
        let Some(old) = storage.get_report(id, &ProjectScope::All).await? else { continue };
        ids.insert(key, id);
        if mapping.report.labels_on_reimport == LabelsOnReimport::Merge {
            let mut merged = old.summary.labels.clone();
            for l in &req.labels {
                if !merged.iter().any(|m| m == l.trim()) {
                    merged.push(l.trim().to_owned());
                }
            }
            req.labels = merged;
        }
        let set = |v: &[String]| {
            let mut v: Vec<String> = v.iter().map(|l| l.trim().to_owned()).filter(|l| !l.is_empty()).collect();
            v.sort();
            v.dedup();
            v
        };
        count("report.title", old.summary.title != req.title.trim());
        count("report.body", old.body != req.body);
        count("report.url", old.summary.url != req.url);
        count("report.labels", set(&old.summary.labels) != set(&req.labels));
        count("report.filed_at", req.filed_at.is_some_and(|t| t.timestamp() != old.summary.filed_at.timestamp()));
        count("report.oracle", old.oracle != req.oracle);
    }
    // Each report's stored attempts, read once however many rows it has.
    let mut stored: HashMap<i64, Vec<failpass_shared::api::attempts::Attempt>> = HashMap::new();
    for (_, a) in attempts {
        let (Some(key), Some(report)) = (a.attempt_key.as_deref(), a.report.as_ref()) else { continue };
        let Some(&report_id) = ids.get(report.external_id.trim()) else { continue };
        if let std::collections::hash_map::Entry::Vacant(slot) = stored.entry(report_id) {
            let q = AttemptListQuery { report_id: Some(report_id), limit: 500, ..Default::default() };
            slot.insert(storage.list_attempts(&q, &ProjectScope::All).await?.items);
        }
        let agent = a.agent.trim();
        let Some(old) = stored[&report_id].iter().find(|o| o.agent == agent && o.attempt_key.as_deref() == Some(key))
        else {
            continue;
        };
        count("attempt.verdict", old.verdict != a.verdict);
        count("attempt.verdict_source", old.verdict_source != a.verdict_source);
        count("attempt.review", old.review != a.review);
        count("attempt.rank", old.rank != a.rank);
        count("attempt.model", old.model != a.model);
        count("attempt.cost_usd", old.cost_usd != a.cost_usd);
        count("attempt.wall_seconds", a.wall_seconds.is_some() && old.wall_seconds != a.wall_seconds);
    }
    Ok(changed)
}
