//! The Overview's figures (issue 34 item 5): one definition per figure,
//! the period's two views (by event date, by filing date) labelled side by
//! side, and one backlog. Every figure the page shows for this week, last
//! week and this month, on a fixed clock, is computed the page's way (the
//! glance, the cards' figures and the throughput the page asks for) and
//! again from the stored rows, on both engines.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use failpass::db::{NewReport, ProjectScope, Storage};
use failpass_shared::api::attempts::{Attempt, AttemptListQuery, CreateAttemptRequest};
use failpass_shared::api::figures::{FigureRow, FiguresQuery, Glance};
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::api::reports::{CreateReportRequest, Period, ReportFilter, ReportListQuery, SetStatusRequest};
use failpass_shared::model::{Goal, ReportStatus, Verdict, VerdictSource};
use failpass_shared::routing::{RoutingConfig, RoutingInput, decide};

use crate::helpers::run_storage_test;

const PROJECT: &str = "o/overview";

/// The page's clock: Wednesday 18 March 2026, noon (UTC).
fn fixed_now() -> DateTime<Utc> {
    "2026-03-18T12:00:00Z".parse().unwrap()
}

/// xorshift64*: the same data on both engines and every run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// 120 reports filed over the 40 days up to the clock, each with up to three
/// attempts over the days after its filing (none after the clock): every
/// verdict kind, some costs unknown, some reports closed.
async fn seed(s: &dyn Storage) {
    s.create_project(&CreateProjectRequest {
        slug: PROJECT.into(),
        name: None,
        description: None,
        public: None,
        upstream_url: None,
        benchmark: None,
    })
    .await
    .unwrap();
    let now = fixed_now();
    let mut rng = Rng(0x5eed_0034);
    for i in 0..120 {
        let filed = now - Duration::hours(1 + rng.below(40 * 24) as i64);
        let request = CreateReportRequest {
            project: PROJECT.into(),
            external_id: i.to_string(),
            url: None,
            title: format!("report {i}"),
            body: "```python\nimport numpy\n```\nTraceback (most recent call last):\nValueError: bad shape\n".into(),
            labels: vec!["bug".into()],
            filed_at: Some(filed),
            reporter: None,
            environment: None,
            paths: vec![],
            oracle: None,
            upstream: None,
        };
        let decision = decide(&RoutingConfig::default(), &RoutingInput::from_request(&request));
        s.import_reports(&[NewReport { request, decision, origin: Default::default() }]).await.unwrap();
        let id = s.find_report(PROJECT, &i.to_string()).await.unwrap().unwrap();
        let mut at = filed;
        for k in 0..rng.below(4) {
            at += Duration::hours(rng.below(3 * 24) as i64);
            if at >= now {
                break;
            }
            let (verdict, source) = [
                (Verdict::Reproduced, VerdictSource::Deterministic),
                (Verdict::NotReproduced, VerdictSource::Deterministic),
                (Verdict::NotReproduced, VerdictSource::Deterministic),
                (Verdict::Error, VerdictSource::Deterministic),
                (Verdict::Lead, VerdictSource::Llm),
                (Verdict::Reproduced, VerdictSource::Human),
            ][rng.below(6) as usize];
            let minutes = 5 + rng.below(300) as i64;
            let req = CreateAttemptRequest {
                started_at: Some(at),
                ended_at: Some((at + Duration::minutes(minutes)).min(now)),
                cost_usd: (rng.below(100) >= 15).then(|| rng.below(4000) as f64 / 1000.0),
                attempt_key: Some(format!("{i}-{k}")),
                ..CreateAttemptRequest::new(id, "repgen", verdict, source)
            };
            s.create_attempt(&req).await.unwrap();
        }
        if rng.below(10) == 0 {
            let close: SetStatusRequest = serde_json::from_value(serde_json::json!({"status": "wont_fix"})).unwrap();
            s.set_resolution(id, close.resolution().unwrap(), None, None, &Default::default()).await.unwrap();
        }
    }
}

/// A report as its row has it, with its attempts' rows.
struct Row {
    filed: Option<NaiveDate>,
    status: ReportStatus,
    attempts: Vec<Attempt>,
}

/// Every report of the project and its reproduction attempts, as stored.
async fn rows(s: &dyn Storage) -> Vec<Row> {
    let mut out: BTreeMap<i64, Row> = BTreeMap::new();
    let mut q = ReportListQuery { limit: 500, ..Default::default() };
    q.filter.project = Some(PROJECT.into());
    let page = s.list_reports(&q, &ProjectScope::All).await.unwrap();
    assert!(page.next_cursor.is_none(), "one page holds them");
    for r in page.items {
        let filed = r.filed_at_stated.then(|| r.filed_at.date_naive());
        out.insert(r.id, Row { filed, status: r.status, attempts: Vec::new() });
    }
    let mut q = AttemptListQuery { project: Some(PROJECT.into()), limit: 500, ..Default::default() };
    loop {
        let page = s.list_attempts(&q, &ProjectScope::All).await.unwrap();
        for a in page.items.into_iter().filter(|a| a.goal == Goal::Reproduce) {
            out.get_mut(&a.report_id).unwrap().attempts.push(a);
        }
        match page.next_cursor {
            Some(c) => q.cursor = Some(c),
            None => break,
        }
    }
    out.into_values().collect()
}

/// The Overview's figures for one period, recounted from rows by their
/// definitions (the words the page shows beside them).
#[derive(Debug, Default)]
struct Recount {
    came_in: u64,
    reproduced: u64,
    finished: u64,
    spent: f64,
    filed_reproduced: u64,
    filed_finished: u64,
    filed_spent: f64,
    filed_graded: u64,
    filed_attempts: u64,
    backlog: u64,
}

fn recount(rows: &[Row], from: NaiveDate, to: NaiveDate) -> Recount {
    let within = |d: NaiveDate| from <= d && d <= to;
    let end = |a: &Attempt| a.ended_at.unwrap_or(a.started_at).date_naive();
    let mut r = Recount::default();
    for row in rows {
        let counting: Vec<&Attempt> = row.attempts.iter().filter(|a| a.counts).collect();
        let graded: Vec<&Attempt> = row.attempts.iter().filter(|a| a.verdict.is_graded()).collect();
        // By event date: what happened in the period, to any report.
        let first_reproduction = counting.iter().map(|a| end(a)).min();
        let last_graded = graded.iter().map(|a| end(a)).max();
        let reproduced_in = first_reproduction.is_some_and(within);
        let not_reproduced_in = row.status == ReportStatus::NotReproduced && last_graded.is_some_and(within);
        r.reproduced += u64::from(reproduced_in);
        r.finished += u64::from(reproduced_in) + u64::from(not_reproduced_in);
        r.spent += row
            .attempts
            .iter()
            .filter(|a| a.time_stated && within(a.started_at.date_naive()))
            .filter_map(|a| a.cost_usd)
            .sum::<f64>();
        // The backlog: not in a final state now, whatever the period.
        r.backlog +=
            u64::from(matches!(row.status, ReportStatus::New | ReportStatus::InProgress | ReportStatus::NeedsReview));
        // By filing date: the reports filed in the period, as they stand now.
        if row.filed.is_some_and(within) {
            r.came_in += 1;
            let reproduced = !counting.is_empty();
            r.filed_reproduced += u64::from(reproduced);
            r.filed_finished += u64::from(reproduced || row.status == ReportStatus::NotReproduced);
            r.filed_spent += row.attempts.iter().filter_map(|a| a.cost_usd).sum::<f64>();
            r.filed_graded += u64::from(!graded.is_empty());
            r.filed_attempts += row.attempts.len() as u64;
        }
    }
    r
}

/// The glance the page asks for (`period=…`), on the fixed clock.
async fn glance(s: &dyn Storage, period: Period) -> Glance {
    let pairs = [("project", PROJECT.to_owned()), ("period", period.as_str().to_owned())];
    failpass::summaries::glance(s, &ProjectScope::All, pairs.iter().map(|(k, v)| (*k, v.as_str())), fixed_now())
        .await
        .unwrap()
}

/// The cards' figures under the same period (the page sends the period; the
/// server reads it as these days on its clock).
async fn cards(s: &dyn Storage, from: NaiveDate, to: NaiveDate) -> FigureRow {
    let filter =
        ReportFilter { project: Some(PROJECT.into()), since: Some(from), until: Some(to), ..Default::default() };
    let q = FiguresQuery { filter, ..Default::default() };
    failpass::summaries::figures(s, &ProjectScope::All, q)
        .await
        .unwrap()
        .rows
        .into_iter()
        .next()
        .expect("a row for the period")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[tokio::test]
async fn every_overview_figure_equals_its_recount_from_rows_for_three_periods() {
    run_storage_test(|s: Arc<dyn Storage>| async move {
        let s = s.as_ref();
        seed(s).await;
        let rows = rows(s).await;
        let today = fixed_now().date_naive();
        let throughput = failpass::summaries::throughput_of(s, &ProjectScope::All, [("project", PROJECT)].into_iter())
            .await
            .unwrap();
        let mut views_differ = false;
        for period in [Period::ThisWeek, Period::LastWeek, Period::ThisMonth] {
            let (from, to) = period.days(today);
            let want = recount(&rows, from, to);
            let g = glance(s, period).await;
            let c = cards(s, from, to).await;
            let at = format!("{period} ({from} to {to}): {want:?}\nglance {g:?}\ncards {c:?}");
            assert_eq!((g.from, g.to), (from, to), "{at}");
            assert!(want.came_in > 0 && want.reproduced > 0 && want.filed_reproduced > 0, "data in the period: {at}");
            // Came in.
            assert_eq!(g.filed, want.came_in, "{at}");
            assert_eq!(c.reports, want.came_in, "the cards count the reports filed in it: {at}");
            // Reproduced, reached a verdict, spent, cost per reproduction: by event date.
            assert_eq!(g.reproduced, want.reproduced, "{at}");
            assert_eq!(g.finished, want.finished, "{at}");
            assert!(close(g.spend_usd, want.spent), "{at}");
            let per = |spent: f64, n: u64| (n > 0).then(|| spent / n as f64);
            assert!(close(g.cost_per_reproduction_usd.unwrap(), per(want.spent, want.reproduced).unwrap()), "{at}");
            // The same ideas by filing date, and the cards agree with that column.
            assert_eq!(g.by_filing.reproduced, want.filed_reproduced, "{at}");
            assert_eq!(c.reports_reproduced, want.filed_reproduced, "{at}");
            assert_eq!(g.by_filing.finished, want.filed_finished, "{at}");
            assert!(close(g.by_filing.spend_usd, want.filed_spent) && close(c.cost_total_usd, want.filed_spent), "{at}");
            let filed_per = per(want.filed_spent, want.filed_reproduced).unwrap();
            assert!(close(g.by_filing.cost_per_reproduction_usd.unwrap(), filed_per), "{at}");
            assert!(close(c.cost_per_reproduction_usd.unwrap(), filed_per), "{at}");
            // The cards' other figures of the same reports.
            assert_eq!((c.reports_graded, c.attempts), (want.filed_graded, want.filed_attempts), "{at}");
            let rate = want.filed_reproduced as f64 / want.filed_graded as f64;
            assert!(close(c.rate.unwrap(), rate), "{at}");
            // One backlog: the glance's, the throughput's, the rows'.
            assert_eq!(g.backlog, want.backlog, "{at}");
            assert_eq!(throughput.backlog, want.backlog, "{at}");
            assert_eq!(g.backlog_change, want.came_in as i64 - want.finished as i64, "{at}");
            // Every attempt was written just now: nothing is stuck.
            assert_eq!(g.stuck, 0, "{at}");
            views_differ |= g.reproduced != g.by_filing.reproduced;
            // Shown with `--nocapture`: the page's figure beside its recount.
            eprintln!(
                "{period} {from}..{to}: came in {}/{}; by event date reproduced {}/{}, verdicts {}/{}, spent {:.2}/{:.2}, \
                 per reproduction {:?}; by filing date reproduced {}/{}, verdicts {}/{}, spent {:.2}/{:.2}, \
                 per reproduction {:?}; rate {:?}; backlog {}/{}, change {}",
                g.filed, want.came_in, g.reproduced, want.reproduced, g.finished, want.finished, g.spend_usd,
                want.spent, g.cost_per_reproduction_usd, g.by_filing.reproduced, want.filed_reproduced,
                g.by_filing.finished, want.filed_finished, g.by_filing.spend_usd, want.filed_spent,
                g.by_filing.cost_per_reproduction_usd, c.rate, g.backlog, want.backlog, g.backlog_change
            );
            // The page labels each view and shows each number once in its column.
            for (testid, value) in [
                ("glance-reproduced", g.reproduced.to_string()),
                ("glance-reproduced-filed", g.by_filing.reproduced.to_string()),
                ("glance-finished", g.finished.to_string()),
                ("glance-finished-filed", g.by_filing.finished.to_string()),
                ("glance-backlog", g.backlog.to_string()),
            ] {
                let cell = format!("data-testid=\"{testid}\">{value}<");
                assert!(g.html.contains(&cell), "{testid} = {value} in the page: {}", g.html);
            }
            assert!(g.html.contains("By event date") && g.html.contains("By filing date"), "{}", g.html);
            // The cards under the same period are the filing-date view's reports, named as such.
            for (testid, value) in [
                ("headline-reports", want.came_in.to_string()),
                ("headline-reproduced", want.filed_reproduced.to_string()),
                ("headline-attempts", want.filed_attempts.to_string()),
                ("headline-cost-per-reproduction", failpass_shared::format::usd(Some(filed_per))),
                ("headline-rate", failpass_shared::format::percent(Some(rate))),
            ] {
                let cell = format!("data-testid=\"{testid}\">{value}<");
                assert!(g.cards_html.contains(&cell), "{testid} = {value} in the cards: {}", g.cards_html);
            }
            assert!(g.cards_html.contains(&format!("The reports filed {from} to {to}")), "{}", g.cards_html);
            assert!(!g.cards_html.contains("Backlog"), "the backlog is the glance's alone: {}", g.cards_html);
        }
        assert!(views_differ, "the data tells the two views apart in some period");
    })
    .await;
}

/// A benchmark's instances (issue 34 item 7) are in no backlog and never
/// stuck; marking a project a benchmark, or not, moves its backlog at once,
/// and the maintained counts stay those of a rebuild, on both engines.
#[tokio::test]
async fn a_benchmarks_instances_are_no_backlog_on_both_engines() {
    use failpass_shared::api::projects::UpdateProjectRequest;
    crate::helpers::run_storage_test_url(|s: Arc<dyn Storage>, url: String| async move {
        let s = s.as_ref();
        seed(s).await;
        let open = |rows: &[Row]| {
            rows.iter()
                .filter(|r| {
                    matches!(r.status, ReportStatus::New | ReportStatus::InProgress | ReportStatus::NeedsReview)
                })
                .count() as u64
        };
        let want = open(&rows(s).await);
        assert!(want > 0);
        // One instance untouched for 20 days: stuck, while it is a report.
        let mut q = ReportListQuery { limit: 1, ..Default::default() };
        q.filter.status = failpass_shared::api::reports::Statuses::of(&[ReportStatus::New]);
        let one = s.list_reports(&q, &ProjectScope::All).await.unwrap().items.remove(0);
        crate::lifecycle::age(&url, &one.external_id, 20).await;
        let now = Utc::now();
        let look = || async {
            let pairs = [("project", PROJECT)];
            let g = failpass::summaries::glance(s, &ProjectScope::All, pairs.iter().copied(), now).await.unwrap();
            let t = failpass::summaries::throughput_of(s, &ProjectScope::All, pairs.iter().copied()).await.unwrap();
            let all = failpass::summaries::throughput_of(s, &ProjectScope::All, std::iter::empty()).await.unwrap();
            (g.backlog, t.backlog, all.backlog, g.stuck)
        };
        let stuck_before = look().await.3;
        assert_eq!(stuck_before, 1, "the aged open instance is stuck");
        assert_eq!(look().await, (want, want, want, stuck_before));
        let mark = |on: bool| UpdateProjectRequest { benchmark: Some(on), ..Default::default() };
        let p = s.update_project(PROJECT, &mark(true)).await.unwrap();
        assert!(p.benchmark);
        assert_eq!(look().await, (0, 0, 0, 0), "a benchmark's open instances wait for no maintainer");
        assert!(s.check_figures(false).await.unwrap().differences.is_empty(), "the counts are a rebuild's");
        // Its figures stay: the instances are still reports, graded as before.
        let c = cards(s, NaiveDate::MIN, fixed_now().date_naive()).await;
        assert_eq!(c.reports, 120);
        let p = s.update_project(PROJECT, &mark(false)).await.unwrap();
        assert!(!p.benchmark);
        assert_eq!(look().await, (want, want, want, stuck_before));
        assert!(s.check_figures(false).await.unwrap().differences.is_empty());
    })
    .await;
}
