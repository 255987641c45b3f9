use failpass::db::ProjectScope;
use failpass_shared::api::figures::FiguresQuery;
use failpass_shared::figures::figure_rows;
use failpass_shared::model::GroupBy;

use crate::helpers::{assert_error, spawn_app, spawn_app_with_demo};

#[tokio::test]
async fn every_grouping_answers_with_the_documented_fields() {
    let app = spawn_app_with_demo().await;
    for g in GroupBy::ALL {
        let r = app.get(&format!("/api/v1/figures?group_by={g}")).await;
        assert_eq!(r.status, 200, "{g}: {}", r.body);
        assert_eq!(r.body["group_by"], g.as_str());
        let rows = r.body["rows"].as_array().unwrap();
        assert!(!rows.is_empty(), "{g} has rows");
        for field in [
            "key",
            "reports",
            "reports_graded",
            "reports_reproduced",
            "rate",
            "rate_low",
            "rate_high",
            "attempts",
            "cost_total_usd",
            "cost_per_reproduction_usd",
            "cost_mean_success_usd",
            "oracle_coverage",
        ] {
            assert!(rows[0].get(field).is_some(), "{g}: field {field} missing");
        }
        // the API's rows are exactly the shared math over storage's contributions
        let q = FiguresQuery { group_by: *g, ..Default::default() };
        let expected = figure_rows(app.storage.figure_contributions(&q, &ProjectScope::All).await.unwrap());
        let got: Vec<failpass_shared::api::figures::FigureRow> =
            serde_json::from_value(r.body["rows"].clone()).unwrap();
        assert_rows_close(&got, &expected, g.as_str());
    }
    let week = app.get("/api/v1/figures?group_by=week").await.body;
    for row in week["rows"].as_array().unwrap() {
        let key = row["key"].as_str().unwrap();
        let d = chrono::NaiveDate::parse_from_str(key, "%Y-%m-%d").unwrap_or_else(|_| panic!("week key {key}"));
        assert_eq!(chrono::Datelike::weekday(&d), chrono::Weekday::Mon, "{key} is a Monday");
    }
}

#[tokio::test]
async fn filters_narrow_the_figures() {
    let app = spawn_app_with_demo().await;
    let all = app.get("/api/v1/figures").await.body["rows"][0]["reports"].as_u64().unwrap();
    let one = app.get("/api/v1/figures?project=pytorch/pytorch").await.body["rows"][0]["reports"].as_u64().unwrap();
    assert!(one < all && one > 0, "{one} of {all}");
    let routed = app.get("/api/v1/figures?route=agent_first").await.body;
    let by_route = app.get("/api/v1/figures?group_by=route").await.body;
    let agent_first = by_route["rows"].as_array().unwrap().iter().find(|r| r["key"] == "agent_first").unwrap();
    assert_eq!(&routed["rows"][0]["reports"], &agent_first["reports"]);
    assert_eq!(&routed["rows"][0]["rate"], &agent_first["rate"]);
    let fix = app.get("/api/v1/figures?goal=fix").await.body;
    assert_eq!(fix["goal"], "fix");
    assert!(fix["rows"][0]["reports_reproduced"].as_u64().unwrap() > 0, "demo has resolved fix attempts");
}

#[tokio::test]
async fn empty_database_gives_no_rows_and_no_nan() {
    let app = spawn_app().await;
    let r = app.get("/api/v1/figures").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["rows"].as_array().unwrap().len(), 0);
    app.project("a/b").await;
    app.report(serde_json::json!({"project": "a/b", "external_id": "1", "title": "t"})).await;
    let row = app.get("/api/v1/figures").await.body["rows"][0].clone();
    assert_eq!(row["reports"], 1);
    assert!(row["rate"].is_null(), "no graded report, no rate: {row}");
    assert!(row["cost_per_reproduction_usd"].is_null());
    assert_eq!(row["cost_total_usd"], 0.0);
}

#[tokio::test]
async fn bad_figure_parameters_are_400s() {
    let app = spawn_app().await;
    assert_error(
        &app.get("/api/v1/figures?group_by=colour").await,
        400,
        "bad_request",
        "group_by: unknown group_by `colour`",
    );
    assert_error(&app.get("/api/v1/figures?goal=win").await, 400, "bad_request", "goal");
    assert_error(&app.get("/api/v1/figures?limit=3").await, 400, "bad_request", "unknown query parameter `limit`");
    assert_error(&app.get("/api/v1/figures?route=x").await, 400, "bad_request", "route");
}

/// Equal but for the last bit of a float (JSON parsing is not bit-exact).
#[track_caller]
pub fn assert_rows_close(
    a: &[failpass_shared::api::figures::FigureRow],
    b: &[failpass_shared::api::figures::FigureRow],
    what: &str,
) {
    let close = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(1.0),
        (None, None) => true,
        _ => false,
    };
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(b) {
        let ints = |r: &failpass_shared::api::figures::FigureRow| {
            (
                r.key.clone(),
                r.reports,
                r.reports_graded,
                r.reports_reproduced,
                r.attempts,
                r.attempts_graded,
                r.attempts_counting,
                r.attempts_lead,
                r.attempts_error,
                r.reports_with_oracle,
                r.reports_in_patch_test,
            )
        };
        assert_eq!(ints(x), ints(y), "{what}");
        let waiting = |r: &failpass_shared::api::figures::FigureRow| {
            (r.attempts_awaiting_review, r.reports_awaiting_review, r.attempts_without_cost)
        };
        assert_eq!(waiting(x), waiting(y), "{what} {}: awaiting review, without cost", x.key);
        let floats = |r: &failpass_shared::api::figures::FigureRow| {
            [
                r.rate,
                r.rate_low,
                r.rate_high,
                r.attempt_rate,
                r.lead_rate,
                Some(r.cost_total_usd),
                r.cost_mean_attempt_usd,
                r.api_calls_mean,
                r.cost_per_reproduction_usd,
                r.cost_mean_success_usd,
                r.cost_ratio,
                r.oracle_coverage,
                r.in_patch_test_share,
            ]
        };
        for (i, (p, q)) in floats(x).into_iter().zip(floats(y)).enumerate() {
            assert!(close(p, q), "{what} {}: float #{i} {p:?} != {q:?}", x.key);
        }
    }
}

#[tokio::test]
async fn oracle_coverage_by_kind_and_source() {
    let app = crate::helpers::spawn_app().await;
    app.project("o/one").await;
    app.report(serde_json::json!({"project": "o/one", "external_id": "1", "title": "a",
        "oracle": {"kind": "fail_to_pass", "source": "authored", "command": "pytest t.py", "authoring_minutes": 6}}))
        .await;
    app.report(serde_json::json!({"project": "o/one", "external_id": "2", "title": "b",
        "oracle": {"kind": "fail_to_pass", "source": "in_patch_test", "fail_to_pass": ["t::a"], "authoring_minutes": 10}})).await;
    app.report(serde_json::json!({"project": "o/one", "external_id": "3", "title": "c", "body": "```python\nf()\n```\nTraceback (most recent call last):\nValueError: bad\n"})).await;
    app.report(serde_json::json!({"project": "o/one", "external_id": "4", "title": "d", "body": "It is slow."})).await;
    let s = app.get("/api/v1/oracles?project=o/one").await.body;
    assert_eq!(s["reports"], 4);
    assert_eq!((s["coverage"]["count"].as_i64(), s["coverage"]["of"].as_i64()), (Some(3), Some(4)), "{s}");
    assert_eq!(s["in_patch"]["count"], 1);
    assert_eq!(s["in_patch_reference"], 0.4711);
    assert_eq!(s["authored_oracles"], 2);
    assert_eq!(s["authoring_minutes_total"], 16.0);
    assert_eq!(s["authoring_minutes_median"], 8.0);
    let kinds: Vec<(String, i64)> = s["by_kind"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["kind"].as_str().unwrap().to_owned(), k["reports"].as_i64().unwrap()))
        .collect();
    assert_eq!(kinds, [("fail_to_pass".to_owned(), 2), ("crash_signature".to_owned(), 1), ("none".to_owned(), 1)]);
    let sources: Vec<Option<&str>> = s["by_source"].as_array().unwrap().iter().map(|k| k["source"].as_str()).collect();
    assert_eq!(sources.len(), 3, "authored, in_patch_test, derived: {sources:?}");
    assert!(s["coverage"]["low"].as_f64().unwrap() < 0.75 && s["coverage"]["high"].as_f64().unwrap() > 0.75);
    // Minutes are counted as data arrives (per value), fractions kept.
    app.report(serde_json::json!({"project": "o/one", "external_id": "5", "title": "e",
        "oracle": {"kind": "fail_to_pass", "source": "authored", "command": "pytest u.py", "authoring_minutes": 2.25}}))
        .await;
    let s = app.get("/api/v1/oracles?project=o/one").await.body;
    assert_eq!((s["authored_oracles"].as_i64(), s["authoring_minutes_total"].as_f64()), (Some(3), Some(18.25)), "{s}");
    assert_eq!(s["authoring_minutes_median"], 6.0);
    crate::helpers::assert_error(&app.get("/api/v1/oracles?project=no/such").await, 404, "not_found", "no/such");
    crate::helpers::assert_error(&app.get("/api/v1/oracles?x=1").await, 400, "bad_request", "x");
}

#[tokio::test]
async fn crossed_groupings_carry_their_parts() {
    let app = spawn_app_with_demo().await;
    let r = app.get("/api/v1/figures?group_by=route,agent,model").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["group_by"], "route");
    assert_eq!(r.body["then_by"], serde_json::json!(["agent", "model"]));
    let rows = r.body["rows"].as_array().unwrap();
    assert!(rows.len() > 3, "{}", r.body);
    let by_route = app.get("/api/v1/figures?group_by=route").await.body;
    for row in rows {
        let keys: Vec<&str> = row["keys"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
        assert_eq!(keys.len(), 3, "{row}");
        assert_eq!(row["key"].as_str().unwrap(), keys.join(" · "));
        assert!(by_route["rows"].as_array().unwrap().iter().any(|r| r["key"] == keys[0]), "{row}");
    }
    // the attempts of one route add up over its agent × model cells
    let sum: u64 = rows.iter().filter(|r| r["keys"][0] == "agent_first").map(|r| r["attempts"].as_u64().unwrap()).sum();
    let route = app.get("/api/v1/figures?group_by=route&route=agent_first").await.body;
    assert_eq!(sum, route["rows"][0]["attempts"].as_u64().unwrap());
    let single = app.get("/api/v1/figures?group_by=agent").await.body;
    assert!(
        single.get("then_by").is_none() && single["rows"][0].get("keys").is_none(),
        "one dimension stays as it was"
    );
    assert_error(&app.get("/api/v1/figures?group_by=route,route").await, 400, "bad_request", "twice");
    assert_error(
        &app.get("/api/v1/figures?group_by=route,agent,model,week").await,
        400,
        "bad_request",
        "at most 3 dimensions",
    );
    assert_error(
        &app.get("/api/v1/figures?since=yesterday").await,
        400,
        "bad_request",
        "since: `yesterday` is not a day",
    );
    for path in ["figures", "reports", "throughput"] {
        assert_error(
            &app.get(&format!("/api/v1/{path}?since=2026-03-02&until=2026-03-01")).await,
            400,
            "bad_request",
            "is after until",
        );
    }
}

#[tokio::test]
async fn distributions_count_every_attempt_once() {
    let app = spawn_app_with_demo().await;
    let all = app.get("/api/v1/figures").await.body["rows"][0].clone();
    let r = app.get("/api/v1/distributions?metric=cost_usd").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["unit"], "USD");
    let g = &r.body["groups"][0];
    assert_eq!(g["key"], "all");
    assert_eq!(g["n"], all["attempts"], "every attempt has a cost");
    let bars: u64 = g["histogram"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(bars, g["n"].as_u64().unwrap());
    let mean = g["mean"].as_f64().unwrap();
    let expected = all["cost_mean_attempt_usd"].as_f64().unwrap();
    assert!((mean - expected).abs() < 1e-9, "{mean} {expected}");
    let cdf = g["cdf"].as_array().unwrap();
    assert_eq!(cdf.last().unwrap()[1], 1.0);
    assert!(cdf.windows(2).all(|w| w[0][0].as_f64() < w[1][0].as_f64() && w[0][1].as_f64() < w[1][1].as_f64()));
    let by_agent = app.get("/api/v1/distributions?metric=wall_seconds&group_by=agent").await.body;
    assert_eq!(by_agent["unit"], "seconds");
    let groups = by_agent["groups"].as_array().unwrap();
    assert!(groups.len() > 1);
    let edges =
        |g: &serde_json::Value| g["histogram"].as_array().unwrap().iter().map(|b| b["low"].clone()).collect::<Vec<_>>();
    assert!(groups.iter().all(|g| edges(g) == edges(&groups[0])), "groups share their bins");
    assert_error(
        &app.get("/api/v1/distributions?metric=tokens").await,
        400,
        "bad_request",
        "metric: unknown metric `tokens`",
    );
    assert_error(&app.get("/api/v1/distributions?group_by=agent,model").await, 400, "bad_request", "one dimension");
    assert_error(&app.get("/api/v1/distributions?x=1").await, 400, "bad_request", "metric");
}

/// A glance whose days start after today (a window that ends before it
/// starts) counts nothing; it is no error and never a 500.
#[tokio::test]
async fn a_glance_starting_after_today_counts_nothing() {
    let app = spawn_app_with_demo().await;
    let r = app.get("/api/v1/glance?since=2099-01-01").await;
    assert_eq!(r.status, 200, "{}", r.body);
    for field in ["reproduced", "filed", "finished"] {
        assert_eq!(r.body[field], 0, "{field}: {}", r.body);
    }
    assert!(r.body["backlog"].as_u64().unwrap() > 0, "the backlog is today's: {}", r.body);
}

#[tokio::test]
async fn throughput_matches_the_report_statuses() {
    let app = spawn_app_with_demo().await;
    let t = app.get("/api/v1/throughput").await;
    assert_eq!(t.status, 200, "{}", t.body);
    let t = t.body;
    let count = |status: &str| {
        let app = &app;
        let status = status.to_owned();
        async move {
            app.get(&format!("/api/v1/reports?status={status}&limit=500")).await.body["items"].as_array().unwrap().len()
                as u64
        }
    };
    let backlog = count("new").await + count("in_progress").await + count("needs_review").await;
    assert_eq!(t["backlog"].as_u64().unwrap(), backlog);
    let reproduced = count("reproduced").await;
    let weeks = t["weeks"].as_array().unwrap();
    let filed: u64 = weeks.iter().map(|w| w["filed"].as_u64().unwrap()).sum();
    assert_eq!(filed, t["reports"].as_u64().unwrap());
    let repro: u64 = weeks.iter().map(|w| w["reproduced"].as_u64().unwrap()).sum();
    assert_eq!(repro, reproduced);
    assert_eq!(t["time_to_reproduction_n"].as_u64().unwrap(), reproduced);
    assert!(t["time_to_reproduction_median_hours"].as_f64().unwrap() >= 0.0);
    let one = app.get("/api/v1/throughput?project=pytorch/pytorch").await.body;
    assert!(one["reports"].as_u64().unwrap() < t["reports"].as_u64().unwrap());
    assert_error(
        &app.get("/api/v1/throughput?group_by=week").await,
        400,
        "bad_request",
        "unknown query parameter `group_by`",
    );
    let facets = app.get("/api/v1/facets").await.body;
    assert!(
        facets["agents"].as_array().unwrap().len() > 1 && !facets["models"].as_array().unwrap().is_empty(),
        "{facets}"
    );
}

#[tokio::test]
async fn llm_precision_pairs_leads_with_later_deterministic_grades() {
    let app = crate::helpers::spawn_app().await;
    app.project("l/p").await;
    let oracle = serde_json::json!({"kind": "fail_to_pass", "source": "authored", "command": "pytest t.py"});
    let mut ids = Vec::new();
    for ext in ["a", "b", "c", "d"] {
        ids.push(
            app.report(serde_json::json!({"project": "l/p", "external_id": ext, "title": ext, "oracle": oracle})).await,
        );
    }
    let attempt = |report: i64, verdict: &str, source: &str, day: u32| {
        serde_json::json!({"report_id": report, "agent": format!("{source}-{day}"), "verdict": verdict, "verdict_source": source,
            "started_at": format!("2026-01-{day:02}T00:00:00Z")})
    };
    // a: the lead was right; b: wrong; c: never checked; d: checked before the lead, so not a check of it
    for (r, v, s, d) in [
        (0, "lead", "llm", 1),
        (0, "reproduced", "deterministic", 2),
        (1, "lead", "llm", 1),
        (1, "not_reproduced", "deterministic", 2),
        (2, "lead", "llm", 1),
        (3, "reproduced", "deterministic", 1),
        (3, "lead", "llm", 2),
    ] {
        app.attempt(attempt(ids[r], v, s, d)).await;
    }
    let s = app.get("/api/v1/oracles?project=l/p").await.body;
    assert_eq!((s["llm_precision"]["count"].as_i64(), s["llm_precision"]["of"].as_i64()), (Some(1), Some(2)), "{s}");
    assert_eq!(s["llm_precision"]["rate"], 0.5);
    let empty = app.get("/api/v1/oracles?project=no/such").await;
    assert_eq!(empty.status, 404);
}
