//! The Overview's figures, rendered once on the server: the period's two
//! views (by event date, by filing date) side by side, the backlog, what
//! is stuck, and the cards of the reports the filters select, each figure
//! with one name and its definition beside it.

use failpass_shared::api::figures::FiguresQuery;
use failpass_shared::api::reports::{ReportFilter, unknown_parameter};
use failpass_shared::figures::FlowKind;

use super::{flow_counts, known_project, rows_of};
use crate::db::{ProjectScope, Storage};
use crate::error::{ApiError, ApiResult};

/// Days without activity after which an open report is stuck, unless the
/// caller says otherwise (`stuck_days`).
pub const STUCK_DAYS: u32 = 14;

/// A period's answer for the reports `pairs` filter (report filters, a
/// `period`, by default this month, or days, and `stuck_days`), at `now`,
/// and the cards of the reports the same filters select (`dated`, `agent`,
/// `model` and `goal` narrow the cards only: the period gives every date).
pub async fn glance<'a>(
    storage: &dyn Storage,
    scope: &ProjectScope,
    pairs: impl Iterator<Item = (&'a str, &'a str)>,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<failpass_shared::api::figures::Glance> {
    use failpass_shared::api::reports::{Period, ReportListQuery};
    let mut filter = ReportFilter::default();
    let mut stuck_days = STUCK_DAYS;
    let mut cards_only: Vec<(&str, &str)> = Vec::new();
    for (k, v) in pairs {
        if matches!(k, "dated" | "agent" | "model" | "goal") {
            cards_only.push((k, v));
        } else if k == "stuck_days" {
            stuck_days = match v.trim().parse::<u32>() {
                Ok(n) if (1..=3650).contains(&n) => n,
                _ => {
                    return Err(ApiError::BadRequest(format!(
                        "stuck_days: `{v}` is not a whole number of days from 1 to 3650"
                    )));
                }
            };
        } else if !filter.take(k, v)? {
            return Err(
                unknown_parameter(k, &format!("{}, stuck_days, agent, model, goal", ReportFilter::PARAMETERS)).into()
            );
        }
    }
    filter.check_window()?;
    // The cards' query: the same filters, with their own date, agent, model and goal.
    let mut cards_q = FiguresQuery::from_pairs(
        filter.pairs().iter().map(|(k, v)| (*k, v.as_str())).chain(cards_only.iter().copied()),
    )?;
    known_project(storage, scope, filter.project.as_deref()).await?;
    let today = now.date_naive();
    // A period (this month by default), or days: `since` to today, or the
    // 30 days ending on `until`.
    let (period, (from, to)) = match (filter.period, filter.since, filter.until) {
        (None, Some(s), u) => (None, (s, u.unwrap_or(today))),
        (None, None, Some(u)) => (None, (u - chrono::Duration::days(29), u)),
        (p, ..) => {
            let p = p.unwrap_or(Period::ThisMonth);
            (Some(p), p.days(today))
        }
    };
    // A period is the same days for the cards, on the same clock.
    if let Some(p) = cards_q.filter.period.take() {
        (cards_q.filter.since, cards_q.filter.until) = (Some(from), Some(to));
        debug_assert_eq!(p.days(today), (from, to));
    }
    // The period as days, so every count below is of the same days, at `now`.
    let windowed = ReportFilter { since: Some(from), until: Some(to), period: None, ..filter.clone() };
    // The page's own filters, window included, for its downloads.
    let asked = filter.pairs();
    let base = ReportFilter { period: None, since: None, until: None, ..filter };
    // Whole days, as the counts keep them.
    // The reports filed in the period, as their filing days keep them, read
    // in the same call.
    let mut read = failpass_shared::figures::glance_read(from, to);
    read.extend(failpass_shared::figures::cohort_read(from, to));
    // The reads below do not depend on each other: they start at once, on
    // the read pool's connections (the glance waited for six in turn: 8 ms
    // at a million attempts, 4 of them in SQL).
    let cards = async {
        let total = rows_of(storage, scope, &cards_q).await?.into_iter().next();
        let cards = super::cards::cards(storage, scope, &cards_q, total.as_ref(), now).await?;
        Ok::<_, ApiError>((total, cards))
    };
    let stuck_q = ReportListQuery { filter: base.clone(), stuck_days: Some(stuck_days), ..Default::default() };
    let ((cards_total, cards), counts, spend_usd, stuck, alarms) = tokio::try_join!(
        cards,
        flow_counts(storage, scope, &base, &read),
        async { Ok::<_, ApiError>(storage.spend_usd(&windowed, scope).await?) },
        async { Ok::<_, ApiError>(storage.count_reports(&stuck_q, scope).await? as u64) },
        async { Ok::<_, ApiError>(crate::routing_health::alarms(storage, scope, now).await?) },
    )?;
    let reproduced = counts.within(FlowKind::Counted, from, to);
    let not_reproduced = counts.within(FlowKind::NotReproduced, from, to);
    // Filed in the period, as the throughput and the period's list count it.
    let filed = counts.within(FlowKind::Filed, from, to);
    let backlog = counts.total(FlowKind::Backlog);
    let ages = failpass_shared::figures::throughput_of(&counts, now);
    let spend_usd = failpass_shared::figures::tidy(spend_usd);
    // The same ideas by filing date: the reports filed in the period, as the
    // Overview's cards count them under the same window.
    let cohort_q = FiguresQuery { filter: windowed.clone(), ..Default::default() };
    // Under the same period (the usual Overview) the cards' row is this one: read once.
    let cohort =
        if cohort_q == cards_q { cards_total } else { rows_of(storage, scope, &cohort_q).await?.into_iter().next() };
    let by_filing = failpass_shared::api::figures::FiledCohort {
        reproduced: cohort.as_ref().map_or(0, |r| r.reports_reproduced),
        finished: counts.within(FlowKind::FiledCounted, from, to)
            + counts.within(FlowKind::FiledNotReproduced, from, to),
        spend_usd: cohort.as_ref().map_or(0.0, |r| r.cost_total_usd),
        cost_per_reproduction_usd: cohort.as_ref().and_then(|r| r.cost_per_reproduction_usd),
    };
    let finished = reproduced + not_reproduced;
    let mut g = failpass_shared::api::figures::Glance {
        period,
        from,
        to,
        reproduced,
        spend_usd,
        cost_per_reproduction_usd: (reproduced > 0).then(|| spend_usd / reproduced as f64),
        filed,
        finished,
        by_filing,
        backlog_oldest_days: ages.backlog_oldest_days,
        backlog_median_days: ages.backlog_median_days,
        backlog_change: filed as i64 - finished as i64,
        backlog,
        stuck,
        stuck_days,
        html: String::new(),
        cards_html: cards,
    };
    // Projects whose routing sends too much to a human, or is corrected too often.
    let alarms: Vec<(String, String)> =
        alarms.into_iter().filter(|(p, _)| base.project.as_deref().is_none_or(|f| f == p)).collect();
    g.html = glance_html(&g, &base, &asked, &alarms);
    Ok(g)
}

/// The glance as the Overview shows it: four figures, each linking to the
/// list behind it with the same filters.
fn glance_html(
    g: &failpass_shared::api::figures::Glance,
    filter: &ReportFilter,
    asked: &[(&'static str, String)],
    alarms: &[(String, String)],
) -> String {
    use failpass_shared::api::query::to_query_string;
    use failpass_shared::format::{hours, thousands, usd};
    let link = |path: &str, extra: &[(&'static str, String)]| {
        let mut pairs = filter.pairs();
        pairs.extend(extra.iter().cloned());
        format!("{path}?{}", to_query_string(&pairs))
    };
    let window: Vec<(&'static str, String)> = match g.period {
        Some(p) => vec![("period", p.as_str().to_owned())],
        None => vec![("since", g.from.to_string()), ("until", g.to.to_string())],
    };
    let dated = |d: &str| window.iter().cloned().chain([("dated", d.to_owned())]).collect::<Vec<_>>();
    let reproduced = link("/queue", &dated("reproduced"));
    let spent = link("/cost", &dated("spent"));
    let stuck = link(
        "/queue",
        &[("stuck_days", g.stuck_days.to_string()), ("sort", "last_activity".into()), ("order", "asc".into())],
    );
    let change = match g.backlog_change {
        0 => "no change".to_owned(),
        c if c > 0 => format!("+{c}"),
        c => c.to_string(),
    };
    let weekly = format!("/api/v1/export/throughput?{}", to_query_string(asked));
    let by_filing = &g.by_filing;
    // Whether the address named the period (else it is this month, and the cards count every report).
    let windowed = asked.iter().any(|(k, _)| matches!(*k, "period" | "since" | "until"));
    let came_in = match g.filed {
        1 => "1 report came in".to_owned(),
        n => format!("{} reports came in", thousands(n as i64)),
    };
    let ages = format!(
        "oldest {} · median age {}",
        hours(g.backlog_oldest_days.map(|d| d * 24.0)),
        hours(g.backlog_median_days.map(|d| d * 24.0))
    );
    maud::html! {
        @for (project, why) in alarms {
            p.state.state-error role="alert" data-testid="routing-alarm" {
                strong { "Routing alarm, " (project) ": " } (why) " "
                a href=(format!("/routing/{project}")) { "routing health" }
            }
        }
        section.panel.glance data-testid="glance" aria-labelledby="glance-title" {
            h2 #glance-title {
                @if let Some(p) = g.period { (p.label()) ": " }
                (g.from) " to " (g.to)
            }
            p.count {
                (came_in) " (filed on a day in the period). "
                "Two views of the period, side by side: "
                strong { "by event date" } " counts what happened in it, to any report; "
                strong { "by filing date" } " follows the reports filed in it, as they stand now"
                @if windowed { " (the cards below count the same reports)." }
                @else { ". The cards below count every report: pick a period to see this one's." }
            }
            div.table-wrap {
                table.chart-table.period-views data-testid="period-views" {
                    thead { tr {
                        th scope="col" { "In the period" }
                        th scope="col" { "By event date" }
                        th scope="col" { "By filing date" }
                    } }
                    tbody {
                        tr {
                            th scope="row" { "Reproduced" }
                            td { span data-testid="glance-reproduced" { (thousands(g.reproduced as i64)) }
                                 " first counting reproduction in the period · " a href=(reproduced) { "the reports" } }
                            td { span data-testid="glance-reproduced-filed" { (thousands(by_filing.reproduced as i64)) }
                                 " of the reports filed in it, reproduced by now" }
                        }
                        tr {
                            th scope="row" { "Reached a verdict" }
                            td { span data-testid="glance-finished" { (thousands(g.finished as i64)) }
                                 " reproduced, or graded not reproduced, in the period" }
                            td { span data-testid="glance-finished-filed" { (thousands(by_filing.finished as i64)) }
                                 " of the reports filed in it, by now" }
                        }
                        tr {
                            th scope="row" { "Spent" }
                            td { span data-testid="glance-spend" { (usd(Some(g.spend_usd))) }
                                 " on attempts started in the period · " a href=(spent) { "cost & time" } }
                            td { span data-testid="glance-spend-filed" { (usd(Some(by_filing.spend_usd))) }
                                 " on every attempt at the reports filed in it" }
                        }
                        tr {
                            th scope="row" { "Cost per reproduction" }
                            td { span data-testid="glance-cost-per-reproduction" { (usd(g.cost_per_reproduction_usd)) }
                                 " spent over reproduced, both by event date" }
                            td { span data-testid="glance-cost-per-reproduction-filed" { (usd(by_filing.cost_per_reproduction_usd)) }
                                 " spent over reproduced, both by filing date" }
                        }
                    }
                }
            }
            div.stats {
                div.stat {
                    div.stat-label { "Backlog" }
                    div.stat-value data-testid="glance-backlog" { (thousands(g.backlog as i64)) }
                    div.stat-detail {
                        "not in a final state now, whatever the period · " (ages)
                    }
                }
                div.stat {
                    div.stat-label { "Backlog change" }
                    div.stat-value data-testid="glance-backlog-change" { (change) }
                    div.stat-detail {
                        (thousands(g.filed as i64)) " came in, " (thousands(g.finished as i64)) " reached a verdict, by event date"
                    }
                }
                div.stat {
                    div.stat-label { "Stuck" }
                    div.stat-value data-testid="glance-stuck" { (thousands(g.stuck as i64)) }
                    div.stat-detail {
                        "open, no activity for " (g.stuck_days) " days · "
                        a href=(stuck) data-testid="glance-stuck-link" { "the list, oldest first" }
                    }
                }
            }
            p.count {
                "The weekly throughput under the Overview's filters, all weeks: "
                a href=(weekly) download data-testid="export-throughput" { "CSV" }
            }
            p.count data-testid="flow-resolution" { (failpass_shared::figures::RESOLUTION_NOTE) }
        }
    }
    .into_string()
}
