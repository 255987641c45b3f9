//! Figures maintained as data arrives (issue 16 item 3): random sequences of
//! writes of every kind, on both engines, and after each one every figure
//! the rollups answer equals the exact recomputation from the raw rows.
//! And `failpass check-figures` finds a damaged rollup and rebuilds it.

use std::process::Command;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use failpass::db::attempts::Verification;
use failpass::db::queue::NewJob;
use failpass::db::{NewReport, ProjectScope, Storage};
use failpass_shared::api::attempts::{CreateAttemptRequest, ReviewRequest};
use failpass_shared::api::figures::FiguresQuery;
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::api::reports::{CreateReportRequest, Oracle, ReportFilter, RouteCorrection};
use failpass_shared::figures::{figure_rows, rows_from_totals};
use failpass_shared::model::*;
use failpass_shared::routing::{RoutingConfig, RoutingInput, decide};

use crate::helpers::{pg_storage, run_storage_test};

/// A small deterministic generator (xorshift64*): the same seed, the same sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const PROJECTS: [&str; 3] = ["acme/open", "acme/other", "acme/private"];
const AGENTS: [&str; 3] = ["swe-agent", "openhands", "repgen"];
const MODELS: [Option<&str>; 3] = [Some("m-large"), Some("m-small"), None];

fn day(n: usize) -> DateTime<Utc> {
    "2026-01-01T00:00:00Z".parse::<DateTime<Utc>>().unwrap() + Duration::hours(n as i64 * 7)
}

/// A report: clear (a traceback) or vague, with or without an oracle.
fn new_report(rng: &mut Rng, external_id: &str) -> NewReport {
    let body = if rng.chance(60) {
        "```python\nimport torch\nf(x)\n```\nTraceback (most recent call last):\nValueError: bad shape (3, 4)\n"
    } else if rng.chance(50) {
        "The CI harness fails to collect tests after the fixture refactor; conftest import error in the runner."
    } else {
        "Sometimes it seems slow, not sure why."
    };
    let oracle = rng.chance(50).then(|| {
        if rng.chance(25) {
            Oracle { kind: OracleKind::LlmJudge, ..Default::default() }
        } else {
            Oracle {
                kind: OracleKind::FailToPass,
                source: Some(*rng.pick(&[OracleSource::InPatchTest, OracleSource::Authored, OracleSource::Reporter])),
                command: Some("pytest tests/test_x.py".into()),
                fail_to_pass: vec!["tests/test_x.py::test_shape".into()],
                ..Default::default()
            }
        }
    });
    let request = CreateReportRequest {
        project: rng.pick(&PROJECTS).to_string(),
        external_id: external_id.into(),
        url: None,
        title: format!("report {external_id}"),
        body: body.into(),
        labels: vec!["bug".into()],
        filed_at: Some(day(rng.below(400))),
        reporter: None,
        environment: None,
        paths: vec![],
        oracle,
        upstream: None,
    };
    let decision = decide(&RoutingConfig::default(), &RoutingInput::from_request(&request));
    NewReport { request, decision, origin: Default::default() }
}

/// An attempt at one of `reports`, valid for its goal and verdict source.
fn new_attempt(rng: &mut Rng, reports: &[i64], key: usize) -> CreateAttemptRequest {
    let goal = if rng.chance(80) { Goal::Reproduce } else { Goal::Fix };
    let (verdict, source) = match goal {
        Goal::Reproduce => *rng.pick(&[
            (Verdict::Reproduced, VerdictSource::Deterministic),
            (Verdict::NotReproduced, VerdictSource::Deterministic),
            (Verdict::Reproduced, VerdictSource::Human),
            (Verdict::Lead, VerdictSource::Llm),
            (Verdict::Error, VerdictSource::Deterministic),
            (Verdict::Hypothesis, VerdictSource::Llm),
        ]),
        Goal::Fix => *rng.pick(&[
            (Verdict::Resolved, VerdictSource::Human),
            (Verdict::Unresolved, VerdictSource::Human),
            (Verdict::Error, VerdictSource::Deterministic),
        ]),
    };
    let agent = *rng.pick(&AGENTS);
    CreateAttemptRequest {
        goal,
        model: rng.pick(&MODELS).map(str::to_owned),
        model_cutoff: rng.chance(70).then(|| day(rng.below(400)).date_naive()),
        started_at: Some(day(rng.below(420))),
        wall_seconds: Some(30.0 + rng.below(600) as f64),
        cost_usd: rng.chance(85).then(|| rng.below(100_000) as f64 / 7_000.0),
        api_calls: rng.chance(50).then(|| rng.below(40) as i64),
        attempt_key: Some(format!("k{key}")),
        ..CreateAttemptRequest::new(*rng.pick(reports), agent, verdict, source)
    }
}

/// The groupings and filters compared after each step.
fn queries(projects: &[&str]) -> Vec<(FiguresQuery, ProjectScope)> {
    use GroupBy::*;
    let groupings: [&[GroupBy]; 12] = [
        &[None],
        &[Project],
        &[Route],
        &[Category],
        &[Vagueness],
        &[Agent],
        &[Model],
        &[Cutoff],
        &[Route, Agent, Model],
        &[Project, Cutoff],
        &[Agent, Cutoff, Vagueness],
        &[Model, Route],
    ];
    let mut out = Vec::new();
    for dims in groupings {
        for goal in [Goal::Reproduce, Goal::Fix] {
            let base = FiguresQuery { group_by: dims[0], then_by: dims[1..].to_vec(), goal, ..FiguresQuery::default() };
            let filtered = [
                base.clone(),
                FiguresQuery {
                    filter: ReportFilter { project: Some(projects[0].into()), ..Default::default() },
                    ..base.clone()
                },
                FiguresQuery {
                    filter: ReportFilter {
                        route: Some(failpass_shared::model::Route::AgentFirst),
                        ..Default::default()
                    },
                    ..base.clone()
                },
                FiguresQuery { agent: Some(AGENTS[0].into()), ..base.clone() },
                FiguresQuery { model: Some("m-small".into()), ..base.clone() },
            ];
            for q in filtered {
                out.push((q.clone(), ProjectScope::All));
                out.push((q, ProjectScope::PublicOnly));
            }
        }
    }
    // Windows of filing days: whole blocks of 32 days and days at the ends,
    // open at either end, and a period.
    let window = |since: Option<&str>, until: Option<&str>| ReportFilter {
        since: since.map(|d| d.parse().unwrap()),
        until: until.map(|d| d.parse().unwrap()),
        ..Default::default()
    };
    for dims in [&[None][..], &[Route], &[Agent, Cutoff], &[Project, Model]] {
        let base = FiguresQuery { group_by: dims[0], then_by: dims[1..].to_vec(), ..FiguresQuery::default() };
        for filter in [
            window(Some("2026-01-04"), Some("2026-04-10")),
            window(Some("2026-01-09"), Option::None),
            window(Option::None, Some("2026-01-20")),
            window(Some("2026-01-12"), Some("2026-01-13")),
            ReportFilter { period: Some(failpass_shared::api::reports::Period::ThisYear), ..Default::default() },
            ReportFilter {
                route: Some(failpass_shared::model::Route::AgentFirst),
                ..window(Some("2026-01-06"), Option::None)
            },
        ] {
            let q = FiguresQuery { filter, ..base.clone() };
            out.push((q.clone(), ProjectScope::All));
            out.push((q, ProjectScope::PublicOnly));
        }
    }
    // Spend windows (`dated=spent`): whole months, days at either end, open
    // ends, one day, across a month's end, a period; by nothing, project or route.
    let spent = |since: Option<&str>, until: Option<&str>| ReportFilter {
        dated: failpass_shared::api::reports::Dated::Spent,
        ..window(since, until)
    };
    for dims in [None, Project, Route] {
        for goal in [Goal::Reproduce, Goal::Fix] {
            let base = FiguresQuery { group_by: dims, goal, ..FiguresQuery::default() };
            for filter in [
                spent(Some("2026-01-04"), Some("2026-04-10")),
                spent(Some("2026-02-01"), Some("2026-03-31")),
                spent(Some("2026-01-09"), Option::None),
                spent(Option::None, Some("2026-01-20")),
                spent(Some("2026-01-12"), Some("2026-01-12")),
                spent(Some("2026-01-20"), Some("2026-02-03")),
                ReportFilter {
                    period: Some(failpass_shared::api::reports::Period::ThisYear),
                    ..spent(Option::None, Option::None)
                },
                // Whole years, from their year's groups.
                spent(Some("2025-01-01"), Some("2025-12-31")),
                spent(Some("2026-01-01"), Some("2026-12-31")),
                // From a year's start, with attempts after its end in the year: the cells.
                spent(Some("2026-01-01"), Some("2026-02-14")),
                ReportFilter { project: Some(projects[0].into()), ..spent(Some("2026-01-15"), Some("2026-03-02")) },
                ReportFilter {
                    route: Some(failpass_shared::model::Route::AgentFirst),
                    ..spent(Some("2026-01-06"), Option::None)
                },
            ] {
                let q = FiguresQuery { filter, ..base.clone() };
                out.push((q.clone(), ProjectScope::All));
                out.push((q, ProjectScope::PublicOnly));
            }
        }
    }
    // The week or month attempts started in, alone, by project or route.
    for period in [Week, Month] {
        for goal in [Goal::Reproduce, Goal::Fix] {
            let base = FiguresQuery { group_by: period, goal, ..FiguresQuery::default() };
            let by = |filter: ReportFilter| FiguresQuery { filter, ..base.clone() };
            for q in [
                base.clone(),
                by(ReportFilter { project: Some(projects[1].into()), ..Default::default() }),
                by(ReportFilter { route: Some(failpass_shared::model::Route::HumanFirst), ..Default::default() }),
            ] {
                out.push((q.clone(), ProjectScope::All));
                out.push((q, ProjectScope::PublicOnly));
            }
        }
    }
    out
}

/// Every rollup-answered figure of `queries` equals the exact one.
async fn compare(s: &dyn Storage, queries: &[(FiguresQuery, ProjectScope)], step: &str) {
    for (q, scope) in queries {
        let exact = figure_rows(s.figure_contributions(q, scope).await.unwrap());
        let totals = s.figure_totals(q, scope).await.unwrap();
        let rolled = rows_from_totals(totals.unwrap_or_else(|| panic!("the rollups answer {:?}", q.pairs())));
        crate::figures::assert_rows_close(&exact, &rolled, &format!("{step}: {:?} in {scope:?}", q.pairs()));
    }
}

/// The glance's spend in a window, read from the window's attempts, equals
/// the figures' total cost with `dated=spent`.
async fn compare_spend(s: &dyn Storage, step: &str) {
    use chrono::NaiveDate;
    use failpass_shared::api::reports::Dated;
    let window = |project: Option<&str>| ReportFilter {
        project: project.map(str::to_owned),
        since: NaiveDate::from_ymd_opt(2026, 1, 20),
        until: NaiveDate::from_ymd_opt(2026, 3, 1),
        dated: Dated::Spent,
        ..Default::default()
    };
    for (filter, scope) in [(window(None), ProjectScope::All), (window(Some(PROJECTS[1])), ProjectScope::PublicOnly)] {
        let q = FiguresQuery { filter: filter.clone(), ..Default::default() };
        let exact = figure_rows(s.figure_contributions(&q, &scope).await.unwrap());
        let want = exact.first().map_or(0.0, |r| r.cost_total_usd);
        let got = s.spend_usd(&filter, &scope).await.unwrap();
        assert!((want - got).abs() < 1e-6, "{step}: spend {got}, figures {want}");
    }
}

/// The throughput counts read from the rollups equal every report's flow
/// folded, for the filters the rollups keep, and the throughput and the
/// glance read from them answer as the exact counts do, in every kind of
/// scope: the levels without a project sum the public projects, and a
/// caller who sees a private one adds it.
async fn compare_flows(s: &dyn Storage, step: &str) {
    use failpass_shared::figures::{FlowCounts, FlowKind, throughput_of};
    let f = |project: Option<&str>, route: Option<Route>, check: Option<bool>| ReportFilter {
        project: project.map(str::to_owned),
        route,
        route_check: check,
        ..Default::default()
    };
    let filters = [
        f(None, None, None),
        f(Some(PROJECTS[0]), None, None),
        f(None, Some(Route::AgentFirst), None),
        f(None, None, Some(true)),
        f(Some(PROJECTS[1]), Some(Route::HumanFirst), Some(false)),
    ];
    let private = s.get_project(PROJECTS[2], &ProjectScope::All).await.unwrap().unwrap().id;
    let scopes = [
        ProjectScope::All,
        ProjectScope::PublicOnly,
        ProjectScope::PublicAnd(vec![private]),
        ProjectScope::Only(vec![private]),
    ];
    for filter in filters {
        for scope in scopes.clone() {
            let exact = FlowCounts::from(s.report_flows(&filter, &scope).await.unwrap().as_slice());
            let everything = failpass_shared::figures::everything();
            let rolled =
                s.flow_totals(&filter, &scope, &everything).await.unwrap().expect("the rollups keep these filters");
            // What the throughput and a glance read, alone, is what they find in the whole.
            let read = failpass_shared::figures::throughput_read();
            let part = s.flow_totals(&filter, &scope, &read).await.unwrap().unwrap();
            // One clock for both: ages count whole seconds, and two reads can straddle one.
            let now = Utc::now();
            assert_eq!(throughput_of(&part, now), throughput_of(&exact, now), "{step}");
            let (from, to) = (day(100).date_naive(), day(160).date_naive());
            let glance = failpass_shared::figures::glance_read(from, to);
            let part = s.flow_totals(&filter, &scope, &glance).await.unwrap().unwrap();
            for kind in [FlowKind::Counted, FlowKind::NotReproduced, FlowKind::Filed] {
                assert_eq!(part.within(kind, from, to), exact.within(kind, from, to), "{step}: {kind:?}");
            }
            assert_eq!(part.total(FlowKind::Backlog), exact.total(FlowKind::Backlog));
            assert_eq!(rolled, exact, "{step}: flows of {:?} in {scope:?}", filter.pairs());
            assert_eq!(throughput_of(&rolled, now), throughput_of(&exact, now));
        }
    }
    let windowed =
        ReportFilter { period: Some(failpass_shared::api::reports::Period::ThisMonth), ..Default::default() };
    let read = failpass_shared::figures::throughput_read();
    assert!(
        s.flow_totals(&windowed, &ProjectScope::All, &read).await.unwrap().is_none(),
        "a window goes the exact way"
    );
}

/// The distributions' bins read from the rollups equal every value binned,
/// for the groupings and filters the rollups keep.
async fn compare_values(s: &dyn Storage, queries: &[(FiguresQuery, ProjectScope)], step: &str) {
    use failpass_shared::api::figures::{DistributionQuery, Metric};
    use failpass_shared::figures::ValueBins;
    let windowed = |q: &FiguresQuery| q.filter.since.is_some() || q.filter.until.is_some() || q.filter.period.is_some();
    for (q, scope) in queries.iter().filter(|(q, _)| q.then_by.is_empty() && !windowed(q)) {
        if matches!(q.group_by, GroupBy::Category | GroupBy::Vagueness | GroupBy::Week | GroupBy::Month) {
            continue;
        }
        for metric in [Metric::CostUsd, Metric::WallSeconds] {
            let query = DistributionQuery { metric, figures: q.clone() };
            let mut exact: std::collections::BTreeMap<String, ValueBins> = Default::default();
            for (key, values) in s.metric_values(&query, scope).await.unwrap() {
                let bins = exact.entry(key).or_default();
                values.into_iter().for_each(|v| bins.add(metric, v));
            }
            let rolled = s.value_totals(&query, scope).await.unwrap().expect("the rollups keep this distribution");
            let what = format!("{step}: {metric:?} of {:?} in {scope:?}", q.pairs());
            assert_eq!(rolled.keys().collect::<Vec<_>>(), exact.keys().collect::<Vec<_>>(), "{what}");
            for (key, bins) in &exact {
                let got = &rolled[key];
                assert_eq!(got.0.keys().collect::<Vec<_>>(), bins.0.keys().collect::<Vec<_>>(), "{what} {key}");
                for (bin, (n, total)) in &bins.0 {
                    let (n2, total2) = got.0[bin];
                    assert!(n2 == *n && (total2 - total).abs() <= 1e-9 * total.abs().max(1.0), "{what} {key} {bin}");
                }
            }
        }
    }
}

async fn random_writes(s: Arc<dyn Storage>, seed: u64, steps: usize) {
    let mut rng = Rng(seed);
    for (i, slug) in PROJECTS.iter().enumerate() {
        s.create_project(&CreateProjectRequest {
            slug: (*slug).into(),
            name: None,
            description: None,
            public: Some(i < 2),
            upstream_url: None,
            benchmark: None,
        })
        .await
        .unwrap();
    }
    let all = queries(&PROJECTS);
    let mut reports: Vec<i64> = Vec::new();
    let mut attempts: Vec<i64> = Vec::new();
    let mut externals = 0usize;
    let mut keys = 0usize;
    let mut kinds = [0usize; 10];
    let now = Utc::now();
    for step in 0..steps {
        let kind = if reports.is_empty() { 0 } else { rng.below(10) };
        let what = match kind {
            0 => {
                externals += 1;
                let r = s.create_report(&new_report(&mut rng, &externals.to_string())).await.unwrap();
                reports.push(r.summary.id);
                "a report created"
            }
            1 => {
                // New reports and new versions of stored ones (their body,
                // oracle and project's routing may change) in one batch.
                let mut batch = Vec::new();
                for _ in 0..1 + rng.below(6) {
                    let id = if rng.chance(50) && externals > 0 {
                        (1 + rng.below(externals)).to_string()
                    } else {
                        externals += 1;
                        externals.to_string()
                    };
                    let mut new = new_report(&mut rng, &id);
                    // A stored report keeps its project.
                    if let Some(found) = find(s.as_ref(), &id).await {
                        new.request.project = found;
                    }
                    if !batch.iter().any(|n: &NewReport| n.request.external_id == id) {
                        batch.push(new);
                    }
                }
                for (new, out) in batch.iter().zip(s.import_reports(&batch).await.unwrap()) {
                    out.unwrap();
                    let id = s.find_report(&new.request.project, &new.request.external_id).await.unwrap().unwrap();
                    if !reports.contains(&id) {
                        reports.push(id);
                    }
                }
                "reports imported"
            }
            2 => {
                keys += 1;
                let req = new_attempt(&mut rng, &reports, keys);
                if req.validate().is_ok()
                    && let Ok((a, _)) = s.create_attempt(&req).await
                {
                    attempts.push(a.id);
                }
                "an attempt created"
            }
            3 => {
                let batch: Vec<CreateAttemptRequest> = (0..1 + rng.below(10))
                    .map(|_| {
                        keys += 1;
                        new_attempt(&mut rng, &reports, keys)
                    })
                    .filter(|r| r.validate().is_ok())
                    .collect();
                s.import_attempts(&batch).await.unwrap();
                "attempts imported"
            }
            4 if !attempts.is_empty() => {
                let review = if rng.chance(60) { Review::Accepted } else { Review::Rejected };
                let id = *rng.pick(&attempts);
                let _ = s
                    .review_attempt(
                        id,
                        &ReviewRequest { review, comment: None },
                        &failpass::db::Origin { actor: "maintainer".into(), via: "api" },
                        &ProjectScope::All,
                    )
                    .await;
                "an attempt reviewed"
            }
            5 => {
                let id = *rng.pick(&reports);
                let previous = s.get_report(id, &ProjectScope::All).await.unwrap().unwrap().summary.route;
                let route = *rng.pick(&[Route::HumanFirst, Route::AgentFirst, Route::Hypothesis]);
                let c =
                    RouteCorrection { route, previous, reason: "seen by a maintainer".into(), by: "m".into(), at: now };
                s.correct_route(id, &c, "web").await.unwrap();
                "a route corrected"
            }
            6 => {
                // A re-route under another rule: the vague flag and route move.
                let id = *rng.pick(&reports);
                let mut new = new_report(&mut rng, "re-route");
                new.decision.vague = !new.decision.vague;
                s.update_routing(id, &new.decision).await.unwrap();
                "a report re-routed"
            }
            7 => {
                // A member closes a report, or reopens it: its status moves
                // without any attempt.
                let id = *rng.pick(&reports);
                let resolution = rng.chance(70).then(|| *rng.pick(Resolution::ALL));
                let origin = failpass::db::reports::Origin { actor: "maintainer".into(), via: "api" };
                s.set_resolution(id, resolution, None, None, &origin).await.unwrap();
                "a report closed or reopened"
            }
            9 => {
                // An admin makes a project public or private: the
                // throughput's sums of the public projects move with it.
                let slug = *rng.pick(&PROJECTS);
                let public = !s.get_project(slug, &ProjectScope::All).await.unwrap().unwrap().public;
                let change =
                    failpass_shared::api::projects::UpdateProjectRequest { public: Some(public), ..Default::default() };
                assert_eq!(s.update_project(slug, &change).await.unwrap().public, public);
                "a project's visibility changed"
            }
            _ if !attempts.is_empty() => {
                // A rerun's verification through the job queue.
                let id = *rng.pick(&attempts);
                let (job, _) = s.enqueue(&NewJob::verify(id, 10, true), now).await.unwrap();
                let claimed = s.claim("prop", now, Duration::seconds(60)).await.unwrap().unwrap();
                assert_eq!(claimed.id, job.id);
                let verdict = *rng.pick(&[Verdict::Reproduced, Verdict::NotReproduced, Verdict::Error]);
                s.complete(job.id, "prop", now, Some(&Verification::new(id, verdict))).await.unwrap();
                "an attempt rerun"
            }
            _ => "nothing",
        };
        kinds[kind] += 1;
        // Every query after a few steps; a sample otherwise (both engines, 240 queries).
        let label = format!("seed {seed} step {step} ({what})");
        if step % 8 == 7 || step + 1 == steps {
            compare(s.as_ref(), &all, &label).await;
            compare_spend(s.as_ref(), &label).await;
            compare_flows(s.as_ref(), &label).await;
            compare_values(s.as_ref(), &all, &label).await;
            // Cells, groups and the oracle figures' facts equal a rebuild.
            let check = s.check_figures(false).await.unwrap();
            assert_eq!(check.differing, 0, "{label}: {:?}", check.differences);
        } else {
            let sample: Vec<_> = (0..12).map(|_| rng.pick(&all).clone()).collect();
            compare(s.as_ref(), &sample, &label).await;
        }
    }
    assert!(kinds.iter().all(|&n| n > 0), "every kind of write ran: {kinds:?}");
    let totals = figure_rows(s.figure_contributions(&FiguresQuery::default(), &ProjectScope::All).await.unwrap());
    assert!(reports.len() > 10 && totals[0].attempts > 30, "{} reports, {:?}", reports.len(), totals[0]);
    let check = s.check_figures(false).await.unwrap();
    assert_eq!(check.differing, 0, "{:?}", check.differences);
    assert!(check.groups > 50 && check.cells > 50, "{check:?}");
}

async fn find(s: &dyn Storage, external_id: &str) -> Option<String> {
    for p in PROJECTS {
        if s.find_report(p, external_id).await.unwrap().is_some() {
            return Some(p.to_owned());
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintained_figures_equal_a_recomputation_after_every_write() {
    for seed in [0x9e37_79b9_7f4a_7c15, 42] {
        run_storage_test(move |s: Arc<dyn Storage>| async move { random_writes(s, seed, 96).await }).await;
    }
}

/// A spend window counts a report as awaiting review only when none of
/// its attempts in the window counts, as the exact fold does: the figures
/// are summed per report in the database, and the random writes rarely put
/// both kinds of attempt on one report in one window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spend_window_counts_a_report_awaiting_review_only_when_nothing_counts() {
    run_storage_test(|s: Arc<dyn Storage>| async move {
        let project = CreateProjectRequest {
            slug: "acme/open".into(),
            name: None,
            description: None,
            public: Some(true),
            upstream_url: None,
            benchmark: None,
        };
        s.create_project(&project).await.unwrap();
        let mut rng = Rng(7);
        let mut ids = Vec::new();
        for external in ["both", "lead-only"] {
            let mut new = new_report(&mut rng, external);
            new.request.project = "acme/open".into();
            new.request.body =
                "```python\nimport torch\nf(x)\n```\nTraceback (most recent call last):\nValueError: bad shape\n"
                    .into();
            new.request.oracle = Some(Oracle {
                kind: OracleKind::FailToPass,
                source: Some(OracleSource::Reporter),
                command: Some("pytest tests/test_x.py".into()),
                fail_to_pass: vec!["tests/test_x.py::test_shape".into()],
                ..Default::default()
            });
            new.decision = decide(&RoutingConfig::default(), &RoutingInput::from_request(&new.request));
            ids.push(s.create_report(&new).await.unwrap().summary.id);
        }
        let at = "2026-02-10T12:00:00Z".parse::<DateTime<Utc>>().unwrap();
        let attempt = |report: i64, key: &str, verdict: Verdict, source: VerdictSource| CreateAttemptRequest {
            started_at: Some(at),
            wall_seconds: Some(60.0),
            cost_usd: Some(0.25),
            attempt_key: Some(key.into()),
            ..CreateAttemptRequest::new(report, "repgen", verdict, source)
        };
        s.create_attempt(&attempt(ids[0], "a", Verdict::Lead, VerdictSource::Llm)).await.unwrap();
        s.create_attempt(&attempt(ids[0], "b", Verdict::Reproduced, VerdictSource::Human)).await.unwrap();
        s.create_attempt(&attempt(ids[1], "c", Verdict::Lead, VerdictSource::Llm)).await.unwrap();
        let filter = ReportFilter {
            dated: failpass_shared::api::reports::Dated::Spent,
            since: "2026-02-01".parse().ok(),
            until: "2026-02-27".parse().ok(),
            ..Default::default()
        };
        let q = FiguresQuery { filter, ..Default::default() };
        let exact = figure_rows(s.figure_contributions(&q, &ProjectScope::All).await.unwrap());
        assert_eq!(exact.len(), 1);
        assert_eq!((exact[0].reports, exact[0].reports_reproduced), (2, 1));
        assert_eq!(exact[0].reports_awaiting_review, 1, "the report with a counting attempt awaits nothing");
        let totals = s.figure_totals(&q, &ProjectScope::All).await.unwrap().expect("the period cells keep this window");
        crate::figures::assert_rows_close(&exact, &rows_from_totals(totals), "a spend window");
    })
    .await;
}

/// The queries the rollups do not keep are answered exactly, not wrongly.
#[test]
fn what_the_rollups_do_not_keep_goes_the_exact_way() {
    let q = |pairs: &[(&str, &str)]| FiguresQuery::from_pairs(pairs.iter().copied()).unwrap();
    for pairs in [
        &[("group_by", "week")][..],
        &[("group_by", "route,month")],
        &[("status", "new")],
        &[("label", "bug")],
        &[("q", "shape")],
        &[("period", "this_month")],
        &[("since", "2026-01-01")],
        &[("period", "this_year"), ("dated", "spent")],
        &[("model", "unknown")],
    ] {
        assert_eq!(failpass::db::rollup_level(&q(pairs)), None, "{pairs:?}");
    }
    assert_eq!(failpass::db::rollup_level(&q(&[("group_by", "route")])), Some(0));
    // The figures keep filing days: a window of them is theirs.
    let today = "2026-12-05".parse().unwrap();
    let level = |pairs: &[(&str, &str)]| failpass::db::figure_level(&q(pairs), today);
    assert_eq!(level(&[("since", "1970-01-01")]), Some((0, Some((Some(0), None)))));
    assert_eq!(level(&[("until", "1970-01-01"), ("group_by", "agent")]), Some((1, Some((None, Some(1))))));
    assert_eq!(level(&[("period", "this_year")]).map(|(_, w)| w), Some(Some((Some(20454), Some(20793)))));
    assert_eq!(level(&[("group_by", "route")]), Some((0, None)));
    for pairs in [&[("period", "this_year"), ("dated", "spent")][..], &[("since", "2026-01-01"), ("status", "new")]] {
        assert_eq!(level(pairs), None, "{pairs:?}");
    }
    assert_eq!(failpass::db::rollup_level(&q(&[("group_by", "route,agent,model")])), Some(3));
    assert_eq!(failpass::db::rollup_level(&q(&[("group_by", "cutoff"), ("agent", "x")])), Some(5));
}

/// `failpass check-figures` on a database whose rollups were damaged behind
/// failpass's back: it names the group, rebuilds, and the next run is clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_figures_finds_a_damaged_rollup_and_rebuilds_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("d.db").to_string_lossy().into_owned();
    let pg = pg_storage().await;
    for url in [file.clone(), pg.url.clone()] {
        let demo = Command::new(env!("CARGO_BIN_EXE_failpass"))
            .args(["demo", "--reports", "60", "--attempts", "400", "--seed", "3", "--today", "2026-06-30"])
            .args(["--database-url", &url])
            .output()
            .unwrap();
        assert_eq!(demo.status.code(), Some(0), "{}", String::from_utf8_lossy(&demo.stderr));
        let check = |extra: &[&str]| {
            let out = Command::new(env!("CARGO_BIN_EXE_failpass"))
                .args(["check-figures", "--database-url", &url])
                .args(extra)
                .output()
                .unwrap();
            (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
        };
        let (code, out) = check(&[]);
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("equal the recomputation"), "{out}");

        let storage = failpass::db::connect(&url).await.unwrap();
        let route = FiguresQuery { group_by: GroupBy::Route, ..Default::default() };
        let before = rows_from_totals(storage.figure_totals(&route, &ProjectScope::All).await.unwrap().unwrap());
        damage(&url).await;
        let damaged = rows_from_totals(storage.figure_totals(&route, &ProjectScope::All).await.unwrap().unwrap());
        assert_ne!(before, damaged, "the damage shows in the figures");

        let (code, out) = check(&["--dry-run"]);
        assert_eq!(code, Some(1), "{out}");
        assert!(
            out.contains("1 differed") && out.contains("reproduce|0|") && out.contains("left as they are"),
            "{out}"
        );
        let (code, out) = check(&[]);
        assert_eq!(code, Some(1), "{out}");
        assert!(out.contains("rebuilt from the raw rows"), "{out}");
        let (code, out) = check(&[]);
        assert_eq!(code, Some(0), "repaired: {out}");
        let after = rows_from_totals(storage.figure_totals(&route, &ProjectScope::All).await.unwrap().unwrap());
        assert_eq!(before, after);

        // As migration 26 leaves a database written before it: reports and
        // attempts, no rollups. Migrating builds them again.
        empty_rollups(&url).await;
        let migrated = failpass::db::connect(&url).await.unwrap();
        migrated.migrate().await.unwrap();
        let rebuilt = rows_from_totals(migrated.figure_totals(&route, &ProjectScope::All).await.unwrap().unwrap());
        assert_eq!(before, rebuilt);
        let (code, out) = check(&[]);
        assert_eq!(code, Some(0), "built when migrated: {out}");

        // As migration 41 leaves one (the flows emptied), and as a process of
        // an earlier version leaves one after it (flows without the
        // filing-day kinds): opening it rebuilds the flows.
        for emptied in [
            "DELETE FROM flow_cells",
            "DELETE FROM flow_groups WHERE kind IN ('filed_counted', 'filed_not_reproduced')",
        ] {
            if emptied.starts_with("DELETE FROM flow_cells") {
                execute(&url, "DELETE FROM flow_groups").await;
            }
            execute(&url, emptied).await;
            let filed = "SELECT COUNT(*) FROM flow_groups WHERE kind = 'filed_counted'";
            assert_eq!(count(&url, filed).await, 0, "emptied by `{emptied}`");
            failpass::db::connect(&url).await.unwrap().migrate().await.unwrap();
            assert!(count(&url, filed).await > 0, "rebuilt after `{emptied}`");
            let (code, out) = check(&[]);
            assert_eq!(code, Some(0), "flows rebuilt when opened after `{emptied}`: {out}");
        }
    }
    pg.drop_now().await;
}

/// The count `sql` reads, through a connection of its own.
async fn count(url: &str, sql: &str) -> i64 {
    use sqlx::Connection;
    let sql = sql.to_owned();
    if url.starts_with("postgres") {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(&mut c).await.unwrap()
    } else {
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{url}")).await.unwrap();
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_one(&mut c).await.unwrap()
    }
}

/// Runs `sql` through a connection of its own.
async fn execute(url: &str, sql: &str) {
    use sqlx::Connection;
    let sql = sql.to_owned();
    if url.starts_with("postgres") {
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut c).await.unwrap();
    } else {
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{url}")).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut c).await.unwrap();
    }
}

/// Empties every rollup, through a connection of its own.
async fn empty_rollups(url: &str) {
    let tables = ["figure_cells", "figure_groups", "figure_facts", "figure_project_facts", "flow_cells", "flow_groups"]
        .into_iter()
        .chain(["value_cells", "value_groups", "period_cells", "period_groups"]);
    for table in tables {
        execute(url, &format!("DELETE FROM {table}")).await;
    }
}

/// Adds a phantom reproduction to one level-0 group (over every filing day), through a connection of its own.
async fn damage(url: &str) {
    let sql = "UPDATE figure_groups SET reports_reproduced = reports_reproduced + 1, counting = counting + 1 \
               WHERE (goal, level, span, project_id, route, category, vague) = (SELECT goal, level, span, project_id, \
               route, category, vague FROM figure_groups WHERE goal = 'reproduce' AND level = 0 AND span = 0 \
               AND route = 'agent_first' ORDER BY reports DESC, project_id, category, vague LIMIT 1)";
    if url.starts_with("postgres") {
        use sqlx::Connection;
        let mut c = sqlx::PgConnection::connect(url).await.unwrap();
        let done = sqlx::query(sql).execute(&mut c).await.unwrap();
        assert_eq!(done.rows_affected(), 1);
    } else {
        use sqlx::Connection;
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite://{url}")).await.unwrap();
        let done = sqlx::query(sql).execute(&mut c).await.unwrap();
        assert_eq!(done.rows_affected(), 1);
    }
}
