//! The storage contract, continued: crossed groups, windows, distributions and
//! flows on both engines; the re-check schedule; route corrections and routing
//! health; webhook secrets and deliveries.

use super::*;

#[tokio::test]
async fn crossed_groups_windows_distributions_and_flows_agree_on_both_engines() {
    use failpass_shared::api::figures::{DistributionQuery, Metric};
    use failpass_shared::api::reports::ReportFilter;
    run_storage_test(|s: Arc<dyn Storage>| async move {
        let [r1, ..] = dataset(s.as_ref()).await;
        // crossed: agent × model, each part a dimension's value
        let crossed = rows(
            s.as_ref(),
            FiguresQuery { group_by: GroupBy::Agent, then_by: vec![GroupBy::Model], ..Default::default() },
        )
        .await;
        let keys: Vec<&str> = crossed.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(
            keys,
            ["judge\u{1f}judge-model", "repgen\u{1f}repgen-model", "swe-agent\u{1f}swe-agent-model"],
            "one part per dimension"
        );
        let by_agent = rows(s.as_ref(), by(GroupBy::Agent)).await;
        for (c, a) in crossed.iter().zip(&by_agent) {
            assert_eq!(
                (c.reports, c.attempts, c.reports_reproduced),
                (a.reports, a.attempts, a.reports_reproduced),
                "{}",
                c.key
            );
        }
        // vague against clear: the split follows the reports' flag
        let page =
            s.list_reports(&ReportListQuery { limit: 100, ..Default::default() }, &ProjectScope::All).await.unwrap();
        let vague = page.items.iter().filter(|r| r.vague).count() as u64;
        let split = rows(s.as_ref(), by(GroupBy::Vagueness)).await;
        let get = |k: &str| split.iter().find(|r| r.key == k).map_or(0, |r| r.reports);
        assert_eq!((get("vague"), get("clear")), (vague, 4 - vague), "{split:?}");
        // the time window is on filing day, both ends inclusive
        let window = |since: Option<&str>, until: Option<&str>| FiguresQuery {
            filter: ReportFilter {
                since: since.map(|d| d.parse().unwrap()),
                until: until.map(|d| d.parse().unwrap()),
                ..Default::default()
            },
            ..Default::default()
        };
        let count = |q: FiguresQuery| {
            let s = s.clone();
            async move { rows(s.as_ref(), q).await.first().map_or(0, |r| r.reports) }
        };
        assert_eq!(count(window(Some("2026-02-01"), Some("2026-02-01"))).await, 4);
        assert_eq!(count(window(Some("2026-02-02"), None)).await, 0);
        assert_eq!(count(window(None, Some("2026-01-31"))).await, 0);
        // the window may be of reproduction or of spend instead of filing
        let dated = |d: Dated, since: &str, until: &str| FiguresQuery {
            filter: ReportFilter {
                since: Some(since.parse().unwrap()),
                until: Some(until.parse().unwrap()),
                dated: d,
                ..Default::default()
            },
            ..Default::default()
        };
        // R1 first counted on 2026-03-08 (23:00), R2 on 2026-03-09 (00:30)
        assert_eq!(count(dated(Dated::Reproduced, "2026-03-08", "2026-03-08")).await, 1);
        assert_eq!(count(dated(Dated::Reproduced, "2026-03-01", "2026-03-31")).await, 2);
        assert_eq!(count(dated(Dated::Reproduced, "2026-03-10", "2026-03-31")).await, 0);
        // spent on 2026-03-10: R2's errored attempt ($0.50) and R3's two ($0.25 each), and only those count
        let spent = rows(s.as_ref(), dated(Dated::Spent, "2026-03-10", "2026-03-10")).await;
        assert_eq!((spent[0].reports, spent[0].attempts), (2, 3), "{spent:?}");
        approx(Some(spent[0].cost_total_usd), 1.0);
        let listed = s
            .list_reports(
                &ReportListQuery {
                    filter: dated(Dated::Spent, "2026-03-10", "2026-03-10").filter,
                    ..Default::default()
                },
                &ProjectScope::All,
            )
            .await
            .unwrap();
        assert_eq!(listed.items.len(), 2);
        // per-attempt values: six reproduction attempts, $7 in all
        let dq = DistributionQuery { metric: Metric::CostUsd, figures: by(GroupBy::Agent) };
        let values = flat(s.metric_values(&dq, &ProjectScope::All).await.unwrap());
        assert_eq!(values.len(), 6);
        approx(Some(values.iter().map(|v| v.1).sum()), 7.0);
        let repgen: f64 = values.iter().filter(|v| v.0 == "repgen").map(|v| v.1).sum();
        approx(Some(repgen), 3.25);
        let walls = flat(
            s.metric_values(
                &DistributionQuery { metric: Metric::WallSeconds, ..Default::default() },
                &ProjectScope::All,
            )
            .await
            .unwrap(),
        );
        assert!(walls.iter().all(|v| v.0 == "all" && v.1 == 60.0) && walls.len() == 6, "{walls:?}");
        // flows: R1's first counting verdict is its second attempt's (no end recorded: its start)
        let flows = s.report_flows(&ReportFilter::default(), &ProjectScope::All).await.unwrap();
        assert_eq!(flows.len(), 4);
        let reproduced: Vec<_> = flows.iter().filter_map(|f| f.first_counting_at).collect();
        assert!(reproduced.contains(&t("2026-03-08T23:00:00Z")), "{flows:?}");
        // R1 after 35 d 23 h (863 h), R2 after 36 d 0.5 h (864.5 h)
        let out = failpass_shared::figures::throughput(&flows, t("2026-04-01T00:00:00Z"));
        assert_eq!(out.time_to_reproduction_n, 2);
        // read from histogram bins: within 2.2% of 863.75 h
        let median = out.time_to_reproduction_median_hours.unwrap();
        assert!((median / 863.75 - 1.0).abs() <= 0.022, "{median}");
        let _ = r1;
        let facets = s.facets(&ProjectScope::All).await.unwrap();
        assert_eq!(facets.agents, ["judge", "repgen", "swe-agent"]);
        assert_eq!(facets.models, ["judge-model", "repgen-model", "swe-agent-model"]);
        // the window's ends: the last second of `until` is in, the next midnight out
        project(s.as_ref(), "c/three", true).await;
        let late = report(s.as_ref(), "c/three", "5", "late", CRASH, "2026-02-01T23:59:59Z", None).await;
        report(s.as_ref(), "c/three", "6", "next", CRASH, "2026-02-02T00:00:00Z", None).await;
        assert_eq!(count(window(None, Some("2026-02-01"))).await, 5);
        assert_eq!(count(window(Some("2026-02-02"), Some("2026-02-02"))).await, 1);
        // a name holding the display separator still makes one part per dimension
        attempt(s.as_ref(), late, a("a · b", Verdict::NotReproduced, 1.0, "2026-03-01T00:00:00Z")).await;
        let crossed = rows(
            s.as_ref(),
            FiguresQuery { group_by: GroupBy::Agent, then_by: vec![GroupBy::Model], ..Default::default() },
        )
        .await;
        let odd = crossed.iter().find(|r| r.key.starts_with("a · b")).expect("the odd agent's group");
        assert_eq!(odd.key.split('\u{1f}').collect::<Vec<_>>(), ["a · b", "a · b-model"]);
    })
    .await;
}

/// The re-check schedule counts from its last run, kept in storage: a
/// server restarted more often than the period still re-checks.
#[tokio::test]
async fn the_recheck_schedule_holds_across_restarts() {
    run_storage_test(|s| async move {
        use failpass::runner::schedule::due_in;
        use std::time::Duration;
        let hour = Duration::from_secs(3600);
        let start: DateTime<Utc> = "2026-12-01T00:00:00Z".parse().unwrap();
        // A first start: a full period, and the start is recorded.
        assert_eq!(due_in(s.as_ref(), 4 * hour, start).await.unwrap(), 4 * hour);
        // Restarted three hours later: one hour left, not four.
        let later = start + chrono::Duration::hours(3);
        assert_eq!(due_in(s.as_ref(), 4 * hour, later).await.unwrap(), hour);
        // Down past the due time: at once.
        assert_eq!(due_in(s.as_ref(), 4 * hour, start + chrono::Duration::hours(9)).await.unwrap(), Duration::ZERO);
        // A run is recorded; the next is a period after it.
        s.set_task_last_run("recheck", later).await.unwrap();
        assert_eq!(s.task_last_run("recheck").await.unwrap(), Some(later));
        assert_eq!(due_in(s.as_ref(), 4 * hour, later + chrono::Duration::hours(1)).await.unwrap(), 3 * hour);
    })
    .await;
}

#[tokio::test]
async fn a_corrected_route_sticks_through_reimport_and_reroute_and_trains_the_classifier() {
    use failpass_shared::api::reports::RouteCorrection;
    run_storage_test(|s: Arc<dyn Storage>| async move {
        project(s.as_ref(), "a/one", true).await;
        let id = report(s.as_ref(), "a/one", "17", "f crashes", CRASH, "2026-01-01T10:20:30Z", None).await;
        let before = s.get_report(id, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(before.summary.route, Route::AgentFirst);
        assert!(!before.summary.route_corrected && before.route_correction.is_none());
        let correction = RouteCorrection {
            route: Route::HumanFirst,
            previous: Route::AgentFirst,
            reason: "the shape error comes from the data loader's workers".into(),
            by: "maintainer".into(),
            at: t("2026-02-01T00:00:00Z"),
        };
        s.correct_route(id, &correction, "api").await.unwrap();
        let after = s.get_report(id, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!(after.summary.route, Route::HumanFirst);
        assert_eq!(after.summary.category, Category::Harness);
        assert!(after.summary.route_corrected && !after.summary.route_check);
        assert_eq!(after.route_correction.as_ref(), Some(&correction));
        let missing = s.correct_route(999_999, &correction, "api").await.unwrap_err();
        assert!(matches!(missing, StorageError::NotFound(_)), "{missing}");

        // Re-importing the report with new text re-routes it, but keeps the correction.
        let cfg = RoutingConfig::default();
        let request = CreateReportRequest {
            project: "a/one".into(),
            external_id: "17".into(),
            url: None,
            title: "f crashes (updated)".into(),
            body: CRASH.into(),
            labels: vec!["bug".into()],
            filed_at: Some(t("2026-01-01T10:20:30Z")),
            reporter: None,
            environment: None,
            paths: vec![],
            oracle: None,
            upstream: None,
        };
        let decision = decide(&cfg, &RoutingInput::from_request(&request));
        assert_eq!(decision.route, Route::AgentFirst);
        let out = s.import_reports(&[NewReport { request, decision, origin: Default::default() }]).await.unwrap();
        assert!(out[0].is_ok(), "{:?}", out[0]);
        let r = s.get_report(id, &ProjectScope::All).await.unwrap().unwrap();
        assert_eq!((r.summary.title.as_str(), r.summary.route), ("f crashes (updated)", Route::HumanFirst));
        // So does `failpass reroute`, and it finds nothing to change.
        let summary = failpass::cli::reroute::reroute(s.as_ref(), &cfg, false).await.unwrap();
        assert_eq!(summary.routes_changed, 0, "{summary:?}");
        assert_eq!(s.get_report(id, &ProjectScope::All).await.unwrap().unwrap().summary.route, Route::HumanFirst);

        // The correction is training data: with enough of them the project gets a classifier.
        let corrected = s.corrected_routes("a/one").await.unwrap();
        assert_eq!(corrected.len(), 1);
        assert_eq!((corrected[0].external_id.as_str(), corrected[0].route), ("17", Route::HumanFirst));
        assert!(failpass::triage::project_model(s.as_ref(), &cfg, "a/one").await.unwrap().is_none());
        let few = RoutingConfig { classifier_min_corrections: 1, ..RoutingConfig::default() };
        let model = failpass::triage::project_model(s.as_ref(), &few, "a/one").await.unwrap().unwrap();
        assert_eq!(model.trained_on.0 + model.trained_on.1, failpass::cli::routing_eval::shipped_examples().len() + 1);
        assert!(s.corrected_routes("no/such").await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn routing_health_boilerplate_and_confirmations_on_both_engines() {
    use failpass::db::routing::{LearnedBoilerplate, RouteConfirmation};
    use failpass_shared::routing::sections::LearnedLine;
    run_storage_test(|s: Arc<dyn Storage>| async move {
        project(s.as_ref(), "a/one", true).await;
        project(s.as_ref(), "a/hidden", false).await;
        report(s.as_ref(), "a/one", "1", "f crashes", CRASH, "2026-01-01T10:00:00Z", None).await;
        let new =
            report(s.as_ref(), "a/one", "2", "cmake build fails", "see title", "2026-03-01T10:00:00Z", None).await;
        report(s.as_ref(), "a/hidden", "3", "bazel build fails", "x", "2026-03-02T10:00:00Z", None).await;

        // Boilerplate: none, then what was stored, replaced whole.
        assert_eq!(s.project_boilerplate("a/one").await.unwrap(), LearnedBoilerplate::default());
        let learned = LearnedBoilerplate {
            lines: vec![LearnedLine { line: "### Describe the bug".into(), reports: 12 }],
            reports: 12,
            learned_at: Some(t("2026-03-03T00:00:00Z")),
        };
        s.set_project_boilerplate("a/one", &learned).await.unwrap();
        s.set_project_boilerplate("a/one", &learned).await.unwrap();
        assert_eq!(s.project_boilerplate("a/one").await.unwrap(), learned);
        let e = s.set_project_boilerplate("no/such", &learned).await.unwrap_err();
        assert!(matches!(e, StorageError::Invalid { .. }), "{e}");
        assert_eq!(s.report_bodies("a/one", 1).await.unwrap(), ["see title"], "newest first");

        // A confirmation holds for the route it names, and is in the timeline.
        let route = s.get_report(new, &ProjectScope::All).await.unwrap().unwrap().summary.route;
        assert_eq!(route, Route::HumanFirst);
        let c = RouteConfirmation { route, by: "maintainer".into(), at: t("2026-03-04T00:00:00Z"), reason: None };
        s.confirm_route(new, &c, "api").await.unwrap();
        let r = s.get_report(new, &ProjectScope::All).await.unwrap().unwrap();
        assert!(!r.summary.route_check);
        assert!(r.activity.iter().any(|a| a.text == "route human first confirmed" && a.actor == "maintainer"));
        let wrong = RouteConfirmation { route: Route::Hypothesis, ..c.clone() };
        let e = s.confirm_route(new, &wrong, "api").await.unwrap_err();
        assert!(e.to_string().contains("now routed human first, not hypothesis"), "{e}");
        assert!(matches!(s.confirm_route(999_999, &c, "api").await.unwrap_err(), StorageError::NotFound(_)));
        // Routed again to the same route, unsure: the confirmation holds, no route check.
        let mut again = s.get_report(new, &ProjectScope::All).await.unwrap().unwrap();
        let cfg = RoutingConfig::default();
        let input = RoutingInput {
            title: &again.summary.title,
            body: &again.body,
            labels: &[],
            paths: &[],
            environment: None,
            oracle: None,
            upstream_kind: None,
            boilerplate: None,
        };
        let mut d = decide(&cfg, &input);
        d.route_check = true;
        s.update_routing(new, &d).await.unwrap();
        again = s.get_report(new, &ProjectScope::All).await.unwrap().unwrap();
        assert!(!again.summary.route_check, "the confirmation holds");
        // Routed elsewhere: the confirmation no longer applies, and the flag is the rule's.
        d.route = Route::Hypothesis;
        s.update_routing(new, &d).await.unwrap();
        again = s.get_report(new, &ProjectScope::All).await.unwrap().unwrap();
        assert!(again.summary.route_check);
        let rows = s.routed_reports("a/one", t("2026-02-01T00:00:00Z")).await.unwrap();
        assert_eq!((rows[0].route, rows[0].confirmation.as_ref()), (Route::Hypothesis, None));

        // What the panel reads: since a date, oldest first, with the harness rule's evidence.
        let rows = s.routed_reports("a/one", t("2026-02-01T00:00:00Z")).await.unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].route, rows[0].confirmation.as_ref()), (Route::Hypothesis, None));
        assert!(rows[0].harness.as_ref().unwrap().evidence.contains("keyword \"build\" in title"));
        assert_eq!(s.routed_reports("a/one", t("2025-01-01T00:00:00Z")).await.unwrap().len(), 2);
        // Counts per project, in scope only.
        let since = t("2025-01-01T00:00:00Z");
        let all = s.routing_counts(&ProjectScope::All, since).await.unwrap();
        assert_eq!(all, [("a/hidden".to_owned(), 1, 1, 0), ("a/one".to_owned(), 2, 0, 0)]);
        let public = s.routing_counts(&ProjectScope::PublicOnly, since).await.unwrap();
        assert_eq!(public, [("a/one".to_owned(), 2, 0, 0)]);
    })
    .await;
}

#[tokio::test]
async fn webhook_secrets_and_deliveries() {
    run_storage_test(|s: Arc<dyn Storage>| async move {
        project(s.as_ref(), "Owner/Repo", true).await;
        assert!(s.webhook_secret("owner/repo").await.unwrap().is_none(), "no secret yet");
        s.set_webhook_secret("Owner/Repo", Some("s3cret")).await.unwrap();
        // GitHub's full_name keeps capitals; either spelling finds the project.
        assert_eq!(s.webhook_secret("owner/REPO").await.unwrap(), Some(("Owner/Repo".into(), "s3cret".into())));
        let missing = s.set_webhook_secret("no/such", Some("x")).await.unwrap_err();
        assert!(missing.to_string().contains("no/such"), "{missing}");
        assert!(!s.delivery_seen("abc").await.unwrap());
        s.record_delivery("abc", "Owner/Repo", "issues", "created").await.unwrap();
        s.record_delivery("abc", "Owner/Repo", "issues", "created").await.unwrap();
        assert!(s.delivery_seen("abc").await.unwrap());
        s.set_webhook_secret("Owner/Repo", None).await.unwrap();
        assert!(s.webhook_secret("Owner/Repo").await.unwrap().is_none());
    })
    .await;
}
