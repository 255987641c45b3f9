//! The storage contract suite: every case runs on SQLite and on PostgreSQL.

use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use failpass::db::{NewReport, NewRun, ProjectScope, Storage, StorageError};
use failpass_shared::api::attempts::{AttemptListQuery, CreateAttemptRequest};
use failpass_shared::api::figures::{FigureRow, FiguresQuery};
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::api::reports::{CreateReportRequest, Dated, Oracle, Order, ReportListQuery, ReportSort};
use failpass_shared::figures::{figure_rows, wilson_interval};
use failpass_shared::model::*;
use failpass_shared::routing::{RoutingConfig, RoutingInput, decide};

use crate::helpers::{pg_storage, run_storage_test, sqlite_storage};

pub(crate) const CRASH: &str =
    "```python\nimport torch\nf(x)\n```\nTraceback (most recent call last):\nValueError: bad shape (3, 4)\n";

fn t(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

/// `(group key, value)` pairs of a metric's values per group.
fn flat(groups: std::collections::BTreeMap<String, Vec<f64>>) -> Vec<(String, f64)> {
    groups.into_iter().flat_map(|(k, vs)| vs.into_iter().map(move |v| (k.clone(), v))).collect()
}

pub(crate) async fn project(s: &dyn Storage, slug: &str, public: bool) {
    s.create_project(&CreateProjectRequest {
        slug: slug.into(),
        name: None,
        description: None,
        public: Some(public),
        upstream_url: None,
        benchmark: None,
    })
    .await
    .unwrap();
}

pub(crate) async fn report(
    s: &dyn Storage,
    project: &str,
    id: &str,
    title: &str,
    body: &str,
    filed: &str,
    oracle: Option<Oracle>,
) -> i64 {
    let request = CreateReportRequest {
        project: project.into(),
        external_id: id.into(),
        url: None,
        title: title.into(),
        body: body.into(),
        labels: vec!["bug".into()],
        filed_at: Some(t(filed)),
        reporter: None,
        environment: Some("torch 2.4.1".into()),
        paths: vec![],
        oracle,
        upstream: None,
    };
    let cfg = RoutingConfig::default();
    let decision = decide(&cfg, &RoutingInput::from_request(&request));
    s.create_report(&NewReport { request, decision, origin: Default::default() }).await.unwrap().summary.id
}

struct A<'a> {
    agent: &'a str,
    verdict: Verdict,
    source: VerdictSource,
    cost: f64,
    goal: Goal,
    cutoff: Option<&'a str>,
    started: &'a str,
}

fn a<'a>(agent: &'a str, verdict: Verdict, cost: f64, started: &'a str) -> A<'a> {
    A { agent, verdict, source: VerdictSource::Deterministic, cost, goal: Goal::Reproduce, cutoff: None, started }
}

async fn attempt(s: &dyn Storage, report_id: i64, x: A<'_>) -> i64 {
    let req = CreateAttemptRequest {
        goal: x.goal,
        model: Some(format!("{}-model", x.agent)),
        model_cutoff: x.cutoff.map(|c| c.parse::<NaiveDate>().unwrap()),
        started_at: Some(t(x.started)),
        wall_seconds: Some(60.0),
        cost_usd: Some(x.cost),
        tokens_in: 10,
        tokens_out: 5,
        ..CreateAttemptRequest::new(report_id, x.agent, x.verdict, x.source)
    };
    req.validate().unwrap();
    s.create_attempt(&req).await.unwrap().0.id
}

/// The hand-computed dataset (see the comments for each expected figure).
async fn dataset(s: &dyn Storage) -> [i64; 4] {
    project(s, "a/one", true).await;
    project(s, "b/two", true).await;
    let in_patch = Oracle {
        kind: OracleKind::FailToPass,
        source: Some(OracleSource::InPatchTest),
        command: None,
        fail_to_pass: vec!["t::x".into()],
        pass_to_pass: vec![],
        signature: None,
        repeats: None,
        authoring_minutes: None,
    };
    // R1: agent_first, derived crash signature. R2: in-patch test. R3: vague, hypothesis. R4: no attempts.
    let r1 = report(s, "a/one", "1", "f crashes", CRASH, "2026-02-01T00:00:00Z", None).await;
    let r2 = report(
        s,
        "a/one",
        "2",
        "sum wrong",
        "```python\nsum(x)\n```\nExpected 3 but got 4.",
        "2026-02-01T00:00:00Z",
        Some(in_patch),
    )
    .await;
    let r3 = report(s, "b/two", "3", "pmap slow", "slow", "2026-02-01T00:00:00Z", None).await;
    let r4 = report(s, "b/two", "4", "g crashes", CRASH, "2026-02-01T00:00:00Z", None).await;
    attempt(
        s,
        r1,
        A { cutoff: Some("2026-01-15"), ..a("repgen", Verdict::NotReproduced, 1.0, "2026-03-04T12:00:00Z") },
    )
    .await;
    attempt(s, r1, A { cutoff: Some("2026-01-15"), ..a("repgen", Verdict::Reproduced, 2.0, "2026-03-08T23:00:00Z") })
        .await;
    attempt(
        s,
        r2,
        A { cutoff: Some("2026-06-01"), ..a("swe-agent", Verdict::Reproduced, 3.0, "2026-03-09T00:30:00Z") },
    )
    .await;
    attempt(s, r2, a("swe-agent", Verdict::Error, 0.5, "2026-03-10T00:00:00Z")).await;
    attempt(s, r3, A { source: VerdictSource::Llm, ..a("repgen", Verdict::Hypothesis, 0.25, "2026-03-10T00:00:00Z") })
        .await;
    attempt(s, r3, A { source: VerdictSource::Llm, ..a("judge", Verdict::Lead, 0.25, "2026-03-10T00:00:00Z") }).await;
    attempt(s, r2, A { goal: Goal::Fix, ..a("swe-agent", Verdict::Resolved, 4.0, "2026-03-11T00:00:00Z") }).await;
    [r1, r2, r3, r4]
}

async fn rows(s: &dyn Storage, q: FiguresQuery) -> Vec<FigureRow> {
    figure_rows(s.figure_contributions(&q, &ProjectScope::All).await.unwrap())
}

fn by(g: GroupBy) -> FiguresQuery {
    FiguresQuery { group_by: g, ..Default::default() }
}

#[track_caller]
fn approx(a: Option<f64>, b: f64) {
    let a = a.expect("a value");
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

#[tokio::test]
async fn figures_match_the_hand_computed_dataset() {
    run_storage_test(|s: Arc<dyn Storage>| async move {
        let [r1, r2, r3, _r4] = dataset(s.as_ref()).await;
        let all = rows(s.as_ref(), by(GroupBy::None)).await;
        assert_eq!(all.len(), 1);
        let r = &all[0];
        assert_eq!(r.key, "all");
        assert_eq!((r.reports, r.reports_graded, r.reports_reproduced), (4, 3, 2));
        approx(r.rate, 2.0 / 3.0);
        let (lo, hi) = wilson_interval(2, 3).unwrap();
        approx(r.rate_low, lo);
        approx(r.rate_high, hi);
        assert_eq!(
            (r.attempts, r.attempts_graded, r.attempts_counting, r.attempts_lead, r.attempts_error),
            (6, 4, 2, 1, 1)
        );
        approx(Some(r.cost_total_usd), 7.0);
        approx(r.cost_per_reproduction_usd, 3.5);
        approx(r.cost_mean_success_usd, 2.5);
        approx(r.cost_ratio, 1.4);
        assert_eq!(r.reports_with_oracle, 3);
        approx(r.oracle_coverage, 0.75);
        approx(r.in_patch_test_share, 0.25);
        approx(r.attempt_rate, 0.5);
        approx(r.lead_rate, 0.25);

        let p = rows(s.as_ref(), by(GroupBy::Project)).await;
        assert_eq!(p.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(), ["a/one", "b/two"]);
        assert_eq!((p[0].reports, p[0].reports_graded, p[0].reports_reproduced), (2, 2, 2));
        approx(Some(p[0].cost_total_usd), 6.5);
        approx(p[0].oracle_coverage, 1.0);
        assert_eq!((p[1].reports, p[1].reports_graded, p[1].reports_reproduced), (2, 1, 0));
        approx(p[1].rate, 0.0);
        assert_eq!(p[1].cost_per_reproduction_usd, None);

        let g = rows(s.as_ref(), by(GroupBy::Agent)).await;
        assert_eq!(g.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(), ["judge", "repgen", "swe-agent"]);
        assert_eq!((g[1].reports, g[1].reports_graded, g[1].reports_reproduced, g[1].attempts), (2, 1, 1, 3));
        approx(Some(g[1].cost_total_usd), 3.25);
        assert_eq!((g[2].reports, g[2].reports_reproduced, g[2].attempts), (1, 1, 2));
        assert_eq!((g[0].reports_graded, g[0].reports_reproduced, g[0].attempts_lead), (1, 0, 1));

        let route = rows(s.as_ref(), by(GroupBy::Route)).await;
        assert_eq!(
            route.iter().map(|r| (r.key.as_str(), r.reports)).collect::<Vec<_>>(),
            [("agent_first", 3), ("hypothesis", 1)]
        );

        let c = rows(s.as_ref(), by(GroupBy::Cutoff)).await;
        let keys: Vec<_> = c.iter().map(|r| (r.key.as_str(), r.reports, r.reports_reproduced)).collect();
        // R1 filed after repgen's cutoff; R2 before swe-agent's; the rest have no cutoff.
        assert_eq!(keys, [("after_cutoff", 1, 1), ("before_cutoff", 1, 1), ("unknown", 2, 0)]);

        let w = rows(s.as_ref(), by(GroupBy::Week)).await;
        let keys: Vec<_> = w.iter().map(|r| (r.key.as_str(), r.attempts)).collect();
        // Wed 4 and Sun 8 March fall in the week of Mon 2 March; Mon 9 and Tue 10 in the next.
        assert_eq!(keys, [("2026-03-02", 2), ("2026-03-09", 4)]);

        let fix = rows(s.as_ref(), FiguresQuery { goal: Goal::Fix, ..Default::default() }).await;
        assert_eq!((fix[0].reports, fix[0].reports_graded, fix[0].reports_reproduced), (4, 1, 1));
        approx(fix[0].cost_per_reproduction_usd, 4.0);

        let repgen = rows(s.as_ref(), FiguresQuery { agent: Some("repgen".into()), ..Default::default() }).await;
        assert_eq!((repgen[0].reports, repgen[0].attempts), (2, 3));

        let filtered = rows(
            s.as_ref(),
            FiguresQuery {
                filter: failpass_shared::api::reports::ReportFilter {
                    route: Some(Route::AgentFirst),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await;
        assert_eq!(filtered[0].reports, 3);

        // report counters follow the reproduction attempts
        let rep2 = s.get_report(r2, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(rep2.summary.attempts, 2, "the fix attempt is not a reproduction attempt");
        approx(Some(rep2.summary.cost_usd), 3.5); // reproduction spend: the $4 fix is not in it
        assert_eq!(rep2.summary.best_verdict, Some(Verdict::Reproduced));
        let rep1 = s.get_report(r1, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(rep1.summary.status, ReportStatus::Reproduced);
        let rep3 = s.get_report(r3, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(rep3.summary.status, ReportStatus::NeedsReview, "an unreviewed lead waits for a human");
    })
    .await;
}

#[tokio::test]
async fn projects_scope_and_conflicts() {
    run_storage_test(|s: Arc<dyn Storage>| async move {
        assert!(s.is_empty().await.unwrap());
        project(s.as_ref(), "pub/lic", true).await;
        project(s.as_ref(), "pri/vate", false).await;
        assert!(!s.is_empty().await.unwrap());
        let err = s
            .create_project(&CreateProjectRequest {
                slug: "pub/lic".into(),
                name: None,
                description: None,
                public: Some(true),
                upstream_url: None,
                benchmark: None,
            })
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::Conflict(_)), "{err}");
        assert_eq!(s.list_projects(&ProjectScope::All).await.unwrap().len(), 2);
        let public = s.list_projects(&ProjectScope::PublicOnly).await.unwrap();
        assert_eq!(public.iter().map(|p| p.slug.as_str()).collect::<Vec<_>>(), ["pub/lic"]);
        assert!(s.get_project("pri/vate", &ProjectScope::PublicOnly).await.unwrap().is_none());
        assert!(s.get_project("pri/vate", &ProjectScope::All).await.unwrap().is_some());

        let id = report(s.as_ref(), "pri/vate", "9", "secret crash", CRASH, "2026-01-01T00:00:00Z", None).await;
        assert!(s.get_report(id, &ProjectScope::PublicOnly).await.unwrap().is_none());
        let q = ReportListQuery::default();
        assert_eq!(s.list_reports(&q, &ProjectScope::PublicOnly).await.unwrap().items.len(), 0);
        assert_eq!(s.list_reports(&q, &ProjectScope::All).await.unwrap().items.len(), 1);
        let f = s.figure_contributions(&FiguresQuery::default(), &ProjectScope::PublicOnly).await.unwrap();
        assert!(f.is_empty(), "private reports stay out of public figures");
        assert_eq!(s.get_project("pri/vate", &ProjectScope::All).await.unwrap().unwrap().reports, 1);
    })
    .await;
}

#[tokio::test]
async fn reports_round_trip_and_conflicts_keep_the_original() {
    run_storage_test(|s: Arc<dyn Storage>| async move {
        project(s.as_ref(), "a/one", true).await;
        let id = report(s.as_ref(), "a/one", "17", "f crashes", CRASH, "2026-01-01T10:20:30Z", None).await;
        let r = s.get_report(id, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(r.summary.filed_at, t("2026-01-01T10:20:30Z"));
        assert_eq!(r.summary.labels, ["bug"]);
        assert_eq!(r.summary.route, Route::AgentFirst);
        assert_eq!(r.oracle.as_ref().unwrap().signature.as_deref(), Some("ValueError: bad shape (3, 4)"));
        assert_eq!(r.explanation.len(), 7);
        assert!(r.features.has_traceback);

        let cfg = RoutingConfig::default();
        let dup = CreateReportRequest {
            project: "a/one".into(),
            external_id: "17".into(),
            url: None,
            title: "other".into(),
            body: String::new(),
            labels: vec![],
            filed_at: None,
            reporter: None,
            environment: None,
            paths: vec![],
            oracle: None,
            upstream: None,
        };
        let decision = decide(
            &cfg,
            &RoutingInput {
                title: "other",
                body: "",
                labels: &[],
                paths: &[],
                environment: None,
                oracle: None,
                upstream_kind: None,
                boilerplate: None,
            },
        );
        let err = s
            .create_report(&NewReport { request: dup.clone(), decision: decision.clone(), origin: Default::default() })
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::Conflict(_)), "{err}");
        let mut missing = dup;
        missing.project = "no/such".into();
        let err =
            s.create_report(&NewReport { request: missing, decision, origin: Default::default() }).await.unwrap_err();
        assert!(matches!(err, StorageError::Invalid { ref field, .. } if field == "project"), "{err}");
        assert_eq!(s.get_report(id, &ProjectScope::All).await.unwrap().unwrap().summary.title, "f crashes");
        assert_eq!(s.list_reports(&ReportListQuery::default(), &ProjectScope::All).await.unwrap().items.len(), 1);
        assert!(s.get_report(id + 1000, &ProjectScope::All).await.unwrap().is_none());
    })
    .await;
}

#[tokio::test]
async fn report_lists_filter_sort_and_page_alike() {
    run_storage_test(|s: Arc<dyn Storage>| async move {
        project(s.as_ref(), "a/one", true).await;
        for i in 0..9 {
            let id = report(
                s.as_ref(),
                "a/one",
                &i.to_string(),
                &format!("Case {i} NaN"),
                CRASH,
                &format!("2026-01-0{}T00:00:00Z", 1 + i % 4),
                None,
            )
            .await;
            attempt(
                s.as_ref(),
                id,
                a(
                    "x",
                    if i % 3 == 0 { Verdict::Reproduced } else { Verdict::NotReproduced },
                    (i % 5) as f64 * 0.5,
                    "2026-02-01T00:00:00Z",
                ),
            )
            .await;
        }
        for sort in ReportSort::ALL {
            for order in [Order::Asc, Order::Desc] {
                let mut q = ReportListQuery { sort: *sort, order, limit: 2, ..Default::default() };
                let mut seen = Vec::new();
                loop {
                    let page = s.list_reports(&q, &ProjectScope::All).await.unwrap();
                    seen.extend(page.items.iter().map(|r| r.id));
                    match page.next_cursor {
                        Some(c) => q.cursor = Some(c),
                        None => break,
                    }
                }
                let mut unique = seen.clone();
                unique.sort();
                unique.dedup();
                assert_eq!((seen.len(), unique.len()), (9, 9), "{sort:?} {order:?}: {seen:?}");
            }
        }
        let mut q = ReportListQuery::default();
        q.filter.verdict = Some(Verdict::Reproduced);
        assert_eq!(s.list_reports(&q, &ProjectScope::All).await.unwrap().items.len(), 3);
        q.filter.verdict = None;
        q.filter.q = Some("nan".into());
        assert_eq!(
            s.list_reports(&q, &ProjectScope::All).await.unwrap().items.len(),
            9,
            "case-insensitive on both engines"
        );
        q.filter.q = Some("case 4".into());
        assert_eq!(s.list_reports(&q, &ProjectScope::All).await.unwrap().items.len(), 1);
        q.filter.q = None;
        q.filter.status = failpass_shared::api::reports::Statuses::of(&[ReportStatus::NotReproduced]);
        assert_eq!(s.list_reports(&q, &ProjectScope::All).await.unwrap().items.len(), 6);
        let costs: Vec<f64> = s
            .list_reports(
                &ReportListQuery { sort: ReportSort::Cost, order: Order::Asc, ..Default::default() },
                &ProjectScope::All,
            )
            .await
            .unwrap()
            .items
            .iter()
            .map(|r| r.cost_usd)
            .collect();
        assert!(costs.windows(2).all(|w| w[0] <= w[1]), "{costs:?}");
        let err = s
            .list_reports(
                &ReportListQuery { cursor: Some("filed_at.desc:x:1".into()), ..Default::default() },
                &ProjectScope::All,
            )
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::Invalid { ref field, .. } if field == "cursor"), "{err}");
    })
    .await;
}

#[tokio::test]
async fn attempts_runs_and_natural_keys() {
    run_storage_test(|s: Arc<dyn Storage>| async move {
        project(s.as_ref(), "a/one", true).await;
        let r = report(s.as_ref(), "a/one", "1", "f crashes", CRASH, "2026-01-01T00:00:00Z", None).await;
        let id = attempt(s.as_ref(), r, a("x", Verdict::Reproduced, 1.5, "2026-02-01T00:00:00Z")).await;
        let run = NewRun {
            attempt_id: id, trigger: RunTrigger::Initial, environment: RunEnvironment::Buggy, exit_status: Some(1),
            timed_out: false, duration_ms: 420, output: "ValueError: bad shape".into(), output_truncated: true,
            output_bytes: 1 << 20, failing_tests: vec!["t::a".into()], passing_tests: vec![], runner_id: Some("r1".into()),
            started_at: Some(t("2026-02-01T00:01:00Z")), iteration: Some(2), release: Some("v2.5.0".into()),
            isolation: Some(failpass_shared::api::attempts::Isolation {
                own_user: true, pid_namespace: true, built_root: true,
                network: failpass_shared::api::attempts::NetworkAccess::Outbound, syscall_filter: true, pids_cgroup: false,
            }),
        };
        let (run_id, o) = s.create_run(&run).await.unwrap();
        assert_eq!(o, failpass_shared::api::import::Outcome::Created);
        assert_eq!(s.create_run(&run).await.unwrap(), (run_id, failpass_shared::api::import::Outcome::Unchanged), "the same run twice is stored once");
        let detail = s.get_attempt(id, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(detail.runs.len(), 1);
        assert_eq!((detail.runs[0].id, detail.runs[0].attempt_id), (run_id, id));
        assert!(detail.runs[0].output_truncated);
        assert_eq!(detail.runs[0].started_at, t("2026-02-01T00:01:00Z"));
        assert_eq!(detail.runs[0].failing_tests, ["t::a"]);
        assert_eq!((detail.runs[0].iteration, detail.runs[0].release.as_deref()), (Some(2), Some("v2.5.0")));
        assert_eq!(detail.runs[0].isolation, run.isolation, "the sandbox a run had is stored with it");
        assert_eq!(detail.attempt.verdict, Verdict::Reproduced);
        assert!(detail.attempt.counts);
        let missing = s.create_run(&NewRun { attempt_id: 9999, ..run_input(id) }).await.unwrap_err();
        assert!(matches!(missing, StorageError::NotFound(_)), "{missing}");

        let mut req: CreateAttemptRequest = serde_json::from_value(serde_json::json!({
            "report_id": r, "agent": "x", "verdict": "not_reproduced", "verdict_source": "deterministic", "attempt_key": "k", "cost_usd": 0.25
        })).unwrap();
        let (first, o) = s.create_attempt(&req).await.unwrap();
        assert_eq!(o, failpass_shared::api::import::Outcome::Created);
        let (again, o) = s.create_attempt(&req).await.unwrap();
        assert_eq!((again.id, o), (first.id, failpass_shared::api::import::Outcome::Unchanged), "a retry answers with the stored attempt");
        req.cost_usd = Some(9.0);
        let err = s.create_attempt(&req).await.unwrap_err();
        assert!(matches!(err, StorageError::Conflict(_)), "{err}");
        req.cost_usd = Some(0.25);
        req.report_id = Some(4242);
        assert!(matches!(s.create_attempt(&req).await.unwrap_err(), StorageError::NotFound(_)));
        // a deterministic grade needs a deterministic oracle on the report
        let plain = report(s.as_ref(), "a/one", "2", "slow", "It is slow.", "2026-01-01T00:00:00Z", None).await;
        req.report_id = Some(plain);
        req.attempt_key = None;
        let err = s.create_attempt(&req).await.unwrap_err();
        assert!(matches!(err, StorageError::Invalid { ref field, .. } if field == "verdict_source"), "{err}");
        let batch = s.import_attempts(std::slice::from_ref(&req)).await.unwrap();
        assert!(matches!(batch[0], Err(StorageError::Invalid { .. })), "the import path applies the same rule");

        let rep = s.get_report(r, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(rep.summary.attempts, 2);
        assert!((rep.summary.cost_usd - 1.75).abs() < 1e-9, "the rejected duplicate added no cost");

        let page = s.list_attempts(&AttemptListQuery { report_id: Some(r), limit: 1, ..Default::default() }, &ProjectScope::All).await.unwrap();
        assert_eq!(page.items.len(), 1);
        let next = s.list_attempts(&AttemptListQuery { report_id: Some(r), limit: 1, cursor: page.next_cursor, ..Default::default() }, &ProjectScope::All).await.unwrap();
        assert_eq!(next.items.len(), 1);
        assert_ne!(next.items[0].id, page.items[0].id);
        assert!(next.next_cursor.is_none());

        // One key twice in one batch with different content: the later line is what is stored.
        req.report_id = Some(r);
        req.attempt_key = Some("twice".into());
        let mut later = req.clone();
        later.cost_usd = Some(0.75);
        let out = s.import_attempts(&[req.clone(), later]).await.unwrap();
        assert!(matches!(out[..], [Ok(failpass_shared::api::import::Outcome::Created), Ok(failpass_shared::api::import::Outcome::Updated)]), "{out:?}");
        let stored = s.list_attempts(&AttemptListQuery { report_id: Some(r), ..Default::default() }, &ProjectScope::All).await.unwrap();
        let twice: Vec<_> = stored.items.iter().filter(|a| a.attempt_key.as_deref() == Some("twice")).collect();
        assert_eq!(twice.len(), 1);
        assert_eq!(twice[0].cost_usd, Some(0.75), "the later version wins");
    })
    .await;
}

#[tokio::test]
async fn imported_attempts_equal_created_ones_whatever_their_text_holds() {
    // PostgreSQL imports attempts with COPY's text format: every value the
    // format splits or escapes on must come back as a live write stores it.
    run_storage_test(|s: Arc<dyn Storage>| async move {
        project(s.as_ref(), "a/one", true).await;
        let r = report(s.as_ref(), "a/one", "1", "f crashes", CRASH, "2026-01-01T00:00:00Z", None).await;
        let record = |key: &str| -> CreateAttemptRequest {
            serde_json::from_value(serde_json::json!({
                "report_id": r, "agent": "agent \\ one", "model": "m\\1 \u{e9}\u{6f22}", "model_cutoff": "2025-06-30",
                "started_at": "2026-02-01T10:00:00.123456789Z", "ended_at": "2026-02-01T10:01:00.5Z",
                "cost_usd": 0.1 + 0.2, "tokens_in": 9007199254740993_i64, "api_calls": 3,
                "candidate": "line 1\nline\t2\r\\N not null \\. end\n", "verdict": "lead", "verdict_source": "llm",
                "failure_cause": "env_setup", "review_comment": "\\N", "signals": {"syntax": {"passed": true, "source": "static", "detail": "a\tb\nc\\"}},
                "attempt_key": key
            }))
            .unwrap()
        };
        let (live, _) = s.create_attempt(&record("live")).await.unwrap();
        let out = s.import_attempts(&[record("imported"), record("imported two")]).await.unwrap();
        assert!(out.iter().all(|o| matches!(o, Ok(failpass_shared::api::import::Outcome::Created))), "{out:?}");
        let stored = s.list_attempts(&AttemptListQuery { report_id: Some(r), ..Default::default() }, &ProjectScope::All).await.unwrap();
        assert_eq!(stored.items.len(), 3);
        for a in stored.items.iter().filter(|a| a.id != live.id) {
            let detail = s.get_attempt(a.id, &ProjectScope::All).await.unwrap().unwrap().attempt;
            let live = s.get_attempt(live.id, &ProjectScope::All).await.unwrap().unwrap().attempt;
            let mut same = serde_json::to_value(&detail).unwrap();
            let mut want = serde_json::to_value(&live).unwrap();
            for v in [&mut same, &mut want] {
                for field in ["id", "attempt_key", "created_at"] {
                    v.as_object_mut().unwrap().remove(field);
                }
            }
            assert_eq!(same, want, "an imported attempt reads as a created one");
            assert_eq!(detail.candidate.as_deref(), Some("line 1\nline\t2\r\\N not null \\. end\n"));
        }
        // The same lines again change nothing; a changed one is an update.
        let again = s.import_attempts(&[record("imported")]).await.unwrap();
        assert!(matches!(again[0], Ok(failpass_shared::api::import::Outcome::Unchanged)), "{again:?}");
    })
    .await;
}

#[tokio::test]
async fn imported_reports_equal_created_ones_and_later_lines_win() {
    use failpass_shared::api::import::Outcome;
    run_storage_test(|s: Arc<dyn Storage>| async move {
        project(s.as_ref(), "a/one", true).await;
        let cfg = RoutingConfig::default();
        let new = |id: &str, title: &str, labels: &[&str], oracle: Option<Oracle>| {
            let request = CreateReportRequest {
                project: "a/one".into(),
                external_id: id.into(),
                url: Some("https://example.org/1".into()),
                title: title.into(),
                body: CRASH.into(),
                labels: labels.iter().map(|l| l.to_string()).collect(),
                filed_at: Some(t("2026-01-02T03:04:05Z")),
                reporter: Some("someone".into()),
                environment: Some("torch 2.4.1".into()),
                paths: vec!["torch/nn.py".into()],
                oracle,
                upstream: None,
            };
            NewReport {
                decision: decide(&cfg, &RoutingInput::from_request(&request)),
                request,
                origin: Default::default(),
            }
        };
        let f2p = Oracle {
            kind: OracleKind::FailToPass,
            source: Some(OracleSource::InPatchTest),
            command: Some("pytest t.py".into()),
            fail_to_pass: vec!["t.py::a".into()],
            pass_to_pass: vec!["t.py::b".into()],
            signature: None,
            repeats: Some(3),
            authoring_minutes: Some(12.5),
        };
        // A report written by the bulk path reads back exactly as one created through the API.
        let via_api = s.create_report(&new("api", "same", &["bug", "cuda"], Some(f2p.clone()))).await.unwrap();
        let out = s
            .import_reports(&[
                new("bulk", "same", &["bug", "cuda"], Some(f2p.clone())),
                new("other", "first title", &["bug"], None),
                new("other", "second title", &["regression", "bug"], Some(f2p.clone())),
                new("other", "second title", &["regression", "bug"], Some(f2p.clone())),
            ])
            .await
            .unwrap();
        let out: Vec<Outcome> = out.into_iter().map(Result::unwrap).collect();
        assert_eq!(out, [Outcome::Created, Outcome::Created, Outcome::Updated, Outcome::Unchanged]);
        let id_of = |ext: &'static str| {
            let s = s.clone();
            async move { s.find_report("a/one", ext).await.unwrap().unwrap() }
        };
        let bulk = s.get_report(id_of("bulk").await, &ProjectScope::All).await.unwrap().unwrap();
        let mut a = serde_json::to_value(&via_api).unwrap();
        let mut b = serde_json::to_value(&bulk).unwrap();
        for v in [&mut a, &mut b] {
            // The clock's (whole seconds): the two writes may fall in two.
            for k in ["id", "external_id", "created_at", "last_activity_at", "lifecycle_html"] {
                v.as_object_mut().unwrap().remove(k);
            }
            for entry in v["activity"].as_array_mut().unwrap() {
                entry.as_object_mut().unwrap().remove("at");
            }
        }
        assert_eq!(a, b, "bulk-written and API-written reports differ");
        let other = s.get_report(id_of("other").await, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(other.summary.title, "second title", "the later line of a batch wins");
        assert_eq!(other.summary.labels, ["regression", "bug"]);
        assert_eq!(other.oracle.as_ref().map(|o| o.fail_to_pass.clone()), Some(vec!["t.py::a".to_string()]));
        let by_label = s
            .list_reports(
                &ReportListQuery {
                    filter: failpass_shared::api::reports::ReportFilter {
                        label: Some("regression".into()),
                        ..Default::default()
                    },
                    ..Default::default()
                },
                &ProjectScope::All,
            )
            .await
            .unwrap();
        assert_eq!(by_label.items.len(), 1, "labels of the later line are indexed");
    })
    .await;
}

fn run_input(attempt_id: i64) -> NewRun {
    NewRun {
        attempt_id,
        trigger: RunTrigger::Rerun,
        environment: RunEnvironment::Fixed,
        exit_status: Some(0),
        timed_out: false,
        duration_ms: 1,
        output: String::new(),
        output_truncated: false,
        output_bytes: 0,
        failing_tests: vec![],
        started_at: None,
        passing_tests: vec![],
        runner_id: None,
        iteration: None,
        release: None,
        isolation: None,
    }
}

#[tokio::test]
async fn migrations_are_idempotent() {
    run_storage_test(|s: Arc<dyn Storage>| async move {
        s.migrate().await.unwrap();
        s.migrate().await.unwrap();
        s.ping().await.unwrap();
    })
    .await;
}

/// The same demo on both engines gives the same figures for every grouping.
#[tokio::test]
async fn both_engines_agree_on_the_demo_figures() {
    let now = t("2026-11-20T12:00:00Z");
    let (sqlite, _dir) = sqlite_storage().await;
    let pg = pg_storage().await;
    failpass::demo::seed(sqlite.as_ref(), &RoutingConfig::default(), now).await.unwrap();
    failpass::demo::seed(pg.storage.as_ref(), &RoutingConfig::default(), now).await.unwrap();
    for g in GroupBy::ALL {
        for goal in Goal::ALL {
            let q = FiguresQuery { group_by: *g, goal: *goal, ..Default::default() };
            let a = rows(sqlite.as_ref(), q.clone()).await;
            let b = rows(pg.storage.as_ref(), q).await;
            assert!(!a.is_empty(), "{g} {goal}");
            crate::figures::assert_rows_close(&a, &b, &format!("{g} {goal}"));
        }
    }
    let qa = s_list(sqlite.as_ref()).await;
    let qb = s_list(pg.storage.as_ref()).await;
    assert_eq!(qa, qb, "the queue lists the same reports in the same order");
    // the crossed landscape, the distributions, the flows and the oracle summary
    let crossed =
        FiguresQuery { group_by: GroupBy::Route, then_by: vec![GroupBy::Agent, GroupBy::Model], ..Default::default() };
    crate::figures::assert_rows_close(
        &rows(sqlite.as_ref(), crossed.clone()).await,
        &rows(pg.storage.as_ref(), crossed).await,
        "crossed",
    );
    let dq = failpass_shared::api::figures::DistributionQuery { figures: by(GroupBy::Agent), ..Default::default() };
    let mut va = flat(sqlite.metric_values(&dq, &ProjectScope::All).await.unwrap());
    let mut vb = flat(pg.storage.metric_values(&dq, &ProjectScope::All).await.unwrap());
    va.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)));
    vb.sort_by(|x, y| x.0.cmp(&y.0).then(x.1.total_cmp(&y.1)));
    assert_eq!(va, vb);
    let fa = failpass_shared::figures::throughput(
        &sqlite.report_flows(&Default::default(), &ProjectScope::All).await.unwrap(),
        now,
    );
    let fb = failpass_shared::figures::throughput(
        &pg.storage.report_flows(&Default::default(), &ProjectScope::All).await.unwrap(),
        now,
    );
    assert_eq!(fa, fb);
    assert!(fa.time_to_reproduction_n > 0 && fa.backlog > 0, "{fa:?}");
    let oa = sqlite.oracle_summary(None, &ProjectScope::All).await.unwrap();
    let ob = pg.storage.oracle_summary(None, &ProjectScope::All).await.unwrap();
    assert_eq!(oa, ob);
    pg.drop_now().await;
}

async fn s_list(s: &dyn Storage) -> Vec<(String, String, i64)> {
    let mut q = ReportListQuery { limit: 500, ..Default::default() };
    q.filter.route = Some(Route::AgentFirst);
    s.list_reports(&q, &ProjectScope::All)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|r| (r.project, r.external_id, r.attempts))
        .collect()
}

#[path = "storage/engines.rs"]
mod engines;
