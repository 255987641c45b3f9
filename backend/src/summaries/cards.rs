//! The Overview's cards: the figures of the reports the filters select,
//! each with one name and what it counts beside it, rendered by the server
//! from the same rows as `GET /api/v1/figures` (the rate, the costs) and
//! `GET /api/v1/throughput` (time to reproduction).

use failpass_shared::api::figures::{FigureRow, FiguresQuery};
use failpass_shared::api::reports::Dated;
use failpass_shared::format::{hours, interval, percent, spend_detail, success_cost_detail, thousands, usd};
use failpass_shared::model::Goal;

use super::flow_counts;
use crate::db::{ProjectScope, Storage};
use crate::error::ApiResult;

/// The cards for `query` (its period already made days) from its figure
/// row `total` (none: no report is in the view, and the cards are empty), at `now`.
pub async fn cards(
    storage: &dyn Storage,
    scope: &ProjectScope,
    query: &FiguresQuery,
    total: Option<&FigureRow>,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<String> {
    let Some(t) = total else {
        return Ok(String::new());
    };
    let counts = flow_counts(storage, scope, &query.filter, &failpass_shared::figures::throughput_read()).await?;
    let flow = failpass_shared::figures::throughput_of(&counts, now);
    // Reproduced reports, each with a time to reproduction unless its dates are unknown.
    let reproduced_reports = counts.total(failpass_shared::figures::FlowKind::ReproducedWeek);
    let fix = query.goal == Goal::Fix;
    let (success, rate_name, per_name) = if fix {
        ("Resolved", "Resolution rate", "Cost per resolution")
    } else {
        ("Reproduced", "Reproduction rate", "Cost per reproduction")
    };
    let f = &query.filter;
    let day = |d: Option<chrono::NaiveDate>, none: &str| d.map_or(none.to_owned(), |d| d.to_string());
    let window = format!("{} to {}", day(f.since, "the first day"), day(f.until, "today"));
    let head = match (f.since.is_some() || f.until.is_some(), f.dated) {
        (false, _) => "Every report under the filters, whatever its dates".to_owned(),
        (true, Dated::Filed) => format!("The reports filed {window}, as they stand now (by filing date)"),
        (true, Dated::Reproduced) => format!("The reports first reproduced {window}"),
        (true, Dated::Spent) => format!("The reports with attempts started {window}, those attempts only"),
    };
    let goal_note = fix.then_some(
        "Goal: fix. In these cards a success is a resolved attempt (a fix that passes); the period's panel, \
         the throughput and time to reproduction count reproductions.",
    );
    let awaiting = match t.reports_awaiting_review {
        0 => String::new(),
        1 => " · 1 report awaits review".to_owned(),
        n => format!(" · {n} reports await review"),
    };
    let cards: [(&str, String, &str, String); 8] = [
        (
            "Reports in",
            thousands(t.reports as i64),
            "headline-reports",
            format!(
                "{} triaged to a route · {} graded · {} with a deterministic oracle",
                t.reports, t.reports_graded, t.reports_with_oracle
            ),
        ),
        (
            rate_name,
            percent(t.rate),
            "headline-rate",
            format!(
                "{} of {} graded reports · 95% {}{awaiting}",
                t.reports_reproduced,
                t.reports_graded,
                interval(t.rate_low, t.rate_high)
            ),
        ),
        (
            success,
            thousands(t.reports_reproduced as i64),
            "headline-reproduced",
            format!(
                "{} of {} graded · {} (not counted)",
                plural(t.attempts_counting, "counting attempt"),
                t.attempts_graded,
                plural(t.attempts_lead, "LLM lead")
            ),
        ),
        (
            "Median time to reproduction",
            hours(flow.time_to_reproduction_median_hours),
            "headline-time-to-reproduction",
            format!(
                "intake to first counting verdict · n={}{} · p90 {}",
                flow.time_to_reproduction_n,
                failpass_shared::format::unknown_times(flow.time_to_reproduction_n, reproduced_reports),
                hours(flow.time_to_reproduction_p90_hours)
            ),
        ),
        (
            per_name,
            usd(t.cost_per_reproduction_usd),
            "headline-cost-per-reproduction",
            spend_detail(t.cost_total_usd, t.attempts, t.reports_reproduced, t.attempts_without_cost),
        ),
        (
            "Mean cost of a success",
            usd(t.cost_mean_success_usd),
            "headline-cost-mean-success",
            success_cost_detail(t.attempts_counting, t.cost_mean_success_usd, t.cost_ratio),
        ),
        (
            "Oracle coverage",
            percent(t.oracle_coverage),
            "headline-oracle-coverage",
            format!(
                "{} of {} reports · in-patch tests {} (reference 47.11%)",
                t.reports_with_oracle,
                t.reports,
                percent(t.in_patch_test_share)
            ),
        ),
        (
            "Attempts",
            thousands(t.attempts as i64),
            "headline-attempts",
            format!(
                "{} graded · {} · per-attempt success {}",
                t.attempts_graded,
                plural(t.attempts_error, "error"),
                percent(t.attempt_rate)
            ),
        ),
    ];
    Ok(maud::html! {
        h2.cards-head data-testid="headline-cohort" { (head) }
        @if let Some(note) = goal_note { p.hint data-testid="goal-note" { (note) } }
        div.stats data-testid="headline" {
            @for (label, value, testid, detail) in &cards {
                div.stat {
                    div.stat-label { (label) }
                    div.stat-value data-testid=(testid) { (value) }
                    div.stat-detail { (detail) }
                }
            }
        }
    }
    .into_string())
}

/// `1 error`, `2 errors`.
fn plural(n: u64, what: &str) -> String {
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}
