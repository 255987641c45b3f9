//! A project's routing health (issue 33): the route mix by week, unsure,
//! corrected and confirmed routes, the precision maintainers' reviews give
//! per route, the alarm, the evidence that fired most, and the boilerplate.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Datelike, Duration, Utc};
use failpass_shared::api::routing::{EvidenceCount, ReviewedRoute, RoutingHealth, WeekMix, alarm, evidence_pieces};
use failpass_shared::model::Route;

use crate::db::{ProjectScope, Storage, StorageResult};

/// The days the alarm reads.
pub const WINDOW_DAYS: u32 = 30;
const WEEKS: i64 = 12;

/// The health of `project` at `now`.
pub async fn health(storage: &dyn Storage, project: &str, now: DateTime<Utc>) -> StorageResult<RoutingHealth> {
    let monday = |t: DateTime<Utc>| {
        let d = t.date_naive();
        d - Duration::days(d.weekday().num_days_from_monday() as i64)
    };
    let first_week = monday(now) - Duration::weeks(WEEKS - 1);
    let since = first_week.and_hms_opt(0, 0, 0).map_or(now, |d| d.and_utc());
    let window_start = now - Duration::days(WINDOW_DAYS as i64);
    let reports = storage.routed_reports(project, since.min(window_start)).await?;
    let mut weeks: BTreeMap<chrono::NaiveDate, WeekMix> = (0..WEEKS)
        .map(|k| {
            let week = first_week + Duration::weeks(k);
            (week, WeekMix { week, human_first: 0, agent_first: 0, hypothesis: 0, route_check: 0, corrected: 0 })
        })
        .collect();
    let mut h = RoutingHealth {
        project: project.to_owned(),
        window_days: WINDOW_DAYS,
        routed: 0,
        human_first: 0,
        agent_first: 0,
        hypothesis: 0,
        route_check: 0,
        corrected: 0,
        confirmed: 0,
        reviewed: Vec::new(),
        weeks: Vec::new(),
        alarm: None,
        top_evidence: Vec::new(),
        boilerplate: Vec::new(),
        boilerplate_reports: 0,
        boilerplate_learned_at: None,
    };
    // Per route the rule chose: (confirmed, corrected).
    let mut reviewed: BTreeMap<&'static str, (Route, u64, u64)> = BTreeMap::new();
    let mut evidence: HashMap<String, u64> = HashMap::new();
    for r in &reports {
        if let Some(w) = weeks.get_mut(&monday(r.filed_at)) {
            match r.route {
                Route::HumanFirst => w.human_first += 1,
                Route::AgentFirst => w.agent_first += 1,
                Route::Hypothesis => w.hypothesis += 1,
            }
            w.route_check += u64::from(r.route_check);
            w.corrected += u64::from(r.correction.is_some());
        }
        if r.filed_at < window_start {
            continue;
        }
        h.routed += 1;
        match r.route {
            Route::HumanFirst => h.human_first += 1,
            Route::AgentFirst => h.agent_first += 1,
            Route::Hypothesis => h.hypothesis += 1,
        }
        h.route_check += u64::from(r.route_check);
        if let Some(c) = &r.correction {
            h.corrected += 1;
            reviewed.entry(c.previous.as_str()).or_insert((c.previous, 0, 0)).2 += 1;
        } else if r.confirmation.as_ref().is_some_and(|c| c.route == r.route) {
            h.confirmed += 1;
            reviewed.entry(r.route.as_str()).or_insert((r.route, 0, 0)).1 += 1;
        }
        if r.route == Route::HumanFirst && r.correction.is_none() {
            let pieces = r.harness.as_ref().map(|o| evidence_pieces(&o.evidence)).unwrap_or_default();
            let mut seen = std::collections::HashSet::new();
            for p in pieces.into_iter().filter(|p| seen.insert(p.clone())) {
                *evidence.entry(p).or_default() += 1;
            }
        }
    }
    h.weeks = weeks.into_values().collect();
    h.reviewed = reviewed
        .into_values()
        .map(|(route, confirmed, corrected)| ReviewedRoute {
            route,
            confirmed,
            corrected,
            precision: (confirmed + corrected > 0).then(|| confirmed as f64 / (confirmed + corrected) as f64),
        })
        .collect();
    let mut top: Vec<EvidenceCount> =
        evidence.into_iter().map(|(evidence, reports)| EvidenceCount { evidence, reports }).collect();
    top.sort_by(|a, b| b.reports.cmp(&a.reports).then_with(|| a.evidence.cmp(&b.evidence)));
    top.truncate(8);
    h.top_evidence = top;
    h.alarm = alarm(h.routed, h.human_first, h.corrected, WINDOW_DAYS);
    let learned = storage.project_boilerplate(project).await?;
    h.boilerplate = learned.lines;
    h.boilerplate_reports = learned.reports;
    h.boilerplate_learned_at = learned.learned_at;
    Ok(h)
}

/// The projects in `scope` whose routing sounds the alarm at `now`, with
/// what it says.
pub async fn alarms(
    storage: &dyn Storage,
    scope: &ProjectScope,
    now: DateTime<Utc>,
) -> StorageResult<Vec<(String, String)>> {
    let since = now - Duration::days(WINDOW_DAYS as i64);
    Ok(storage
        .routing_counts(scope, since)
        .await?
        .into_iter()
        .filter_map(|(project, routed, human, corrected)| {
            alarm(routed, human, corrected, WINDOW_DAYS).map(|a| (project, a))
        })
        .collect())
}
