//! `failpass demo --reports N --attempts M --seed S`: synthetic history at
//! any size, for measuring failpass at the scale of a large library.
//!
//! Eight projects of uneven size; reports of every kind the small demo has
//! (so every route), filed over the two years before `today`, more of them
//! recently; attempts spread over the reports with a long tail (a tenth of
//! the reports untouched, a few with hundreds), by five agents on five
//! models whose training cutoffs fall inside those two years; costs and wall
//! times log-normal; leads, reviews and repeats as the small demo has them.
//! Everything follows from the seed and `today`, and goes through the
//! import's batched path, so it is stored exactly as an NDJSON import of
//! the same records would be.

use chrono::{DateTime, Duration, NaiveDate, Utc};
use failpass_shared::api::attempts::{CreateAttemptRequest, ReportKey};
use failpass_shared::api::import::ImportRecord;
use failpass_shared::api::projects::CreateProjectRequest;
use failpass_shared::api::reports::{CreateReportRequest, Oracle};
use failpass_shared::model::{Review, Route, Verdict};
use failpass_shared::routing::{RoutingConfig, RoutingInput, decide};

use crate::db::StorageError;
use crate::import::Importer;

use super::history::{PROJECTS, REPORTS, Rng, body, oracle, outcome, signals};

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    pub reports: u64,
    pub attempts: u64,
    pub seed: u64,
    /// The history ends as this day begins (UTC).
    pub today: NaiveDate,
}

/// Most reports and attempts one run makes.
pub const MAX_REPORTS: u64 = 10_000_000;
pub const MAX_ATTEMPTS: u64 = 100_000_000;

impl Scale {
    /// Refuses sizes it cannot make, naming the flag.
    pub fn check(&self) -> Result<(), String> {
        if self.reports == 0 {
            return Err("--reports: at least 1".into());
        }
        if self.reports > MAX_REPORTS {
            return Err(format!("--reports: at most {MAX_REPORTS}"));
        }
        if self.attempts > MAX_ATTEMPTS {
            return Err(format!("--attempts: at most {MAX_ATTEMPTS}"));
        }
        Ok(())
    }
}

/// Projects beyond the small demo's, and each project's share of reports
/// (a few large libraries, a tail of small ones).
const MORE_PROJECTS: &[(&str, &str)] = &[
    ("scikit-learn/scikit-learn", "Machine learning in Python"),
    ("numpy/numpy", "The fundamental package for scientific computing with Python"),
    ("vllm-project/vllm", "A high-throughput and memory-efficient inference engine for LLMs"),
];
const PROJECT_WEIGHTS: &[f64] = &[30.0, 22.0, 12.0, 8.0, 3.0, 10.0, 9.0, 6.0];

/// Agents, the models each runs, and how costly each agent is (the median
/// cost of an attempt, in dollars).
const AGENTS: &[(&str, &[usize], f64)] = &[
    ("repgen", &[0, 3], 0.18),
    ("swe-agent", &[0, 1, 3], 0.45),
    ("openhands", &[1, 2, 4], 0.60),
    ("claude-code", &[1, 4], 0.85),
    ("aider", &[2, 3], 0.30),
];
/// Models and their training cutoff, in days before `today`: all inside the
/// two years reports are filed over, so both sides of every cutoff hold reports.
const MODELS: &[(&str, i64)] =
    &[("gpt-4.1", 640), ("claude-sonnet-4", 470), ("gemini-2.5-pro", 380), ("gpt-5", 260), ("claude-opus-4-5", 130)];
/// Variations appended to a template's title, so titles differ.
const CONTEXTS: &[&str] = &[
    "on CUDA",
    "on CPU",
    "with bfloat16",
    "in eval mode",
    "after upgrading",
    "with torch.compile",
    "on multi-GPU",
    "with a batch of one",
    "on Apple silicon",
    "in a notebook",
];

/// Two years of filings.
const DAYS: f64 = 730.0;

impl Rng {
    /// A standard normal draw (Box–Muller).
    fn normal(&mut self) -> f64 {
        let u = self.unit().max(f64::MIN_POSITIVE);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
    /// Log-normal around `median`, spread `sigma`: a long right tail.
    fn log_normal(&mut self, median: f64, sigma: f64) -> f64 {
        median * (sigma * self.normal()).exp()
    }
    fn weighted(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        let mut x = self.unit() * total;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len() - 1
    }
}

/// What attempts need to know of their report.
struct Made {
    filed_at: DateTime<Utc>,
    route: Route,
    vague: bool,
    has_oracle: bool,
    project: usize,
}

fn slug(project: usize) -> &'static str {
    PROJECTS.get(project).map_or_else(|| MORE_PROJECTS[project - PROJECTS.len()].0, |p| p.0)
}

/// How many attempts each report gets: a tenth none, the rest by a
/// Pareto-like weight, `attempts` in all.
fn spread(rng: &mut Rng, reports: usize, attempts: u64) -> Vec<u32> {
    let mut cumulative = Vec::with_capacity(reports);
    let mut total = 0.0;
    for _ in 0..reports {
        let w = if rng.chance(0.1) { 0.0 } else { rng.unit().max(1e-4).powf(-0.7).min(200.0) };
        total += w;
        cumulative.push(total);
    }
    let mut counts = vec![0u32; reports];
    if total == 0.0 {
        // Every report drew "untouched": spread them evenly instead.
        for k in 0..attempts {
            counts[(k % reports as u64) as usize] += 1;
        }
        return counts;
    }
    for _ in 0..attempts {
        let x = rng.unit() * total;
        let i = cumulative.partition_point(|c| *c <= x).min(reports - 1);
        counts[i] += 1;
    }
    counts
}

fn report(rng: &mut Rng, i: u64, now: DateTime<Utc>) -> (CreateReportRequest, usize) {
    let (template_project, kind, title, op, error) = REPORTS[rng.below(REPORTS.len())];
    let project = if rng.chance(0.6) { template_project } else { rng.weighted(PROJECT_WEIGHTS) };
    let (body, labels, environment) = body(project, kind, title, op, error, rng);
    let oracle = oracle(kind, i, || rng.chance(0.7).then(|| rng.log_normal(25.0, 0.6).round().clamp(2.0, 600.0)));
    // More filings lately: days ago drawn with the density rising toward today.
    let days_ago = DAYS * rng.unit().powf(1.4);
    let filed_at = (now - Duration::seconds((days_ago * 86_400.0) as i64)).min(now - Duration::minutes(5));
    let slug = slug(project);
    let number = 100_000 + i;
    let mut request = CreateReportRequest {
        project: slug.into(),
        external_id: number.to_string(),
        url: Some(format!("https://github.com/{slug}/issues/{number}")),
        title: format!("{title} {}", CONTEXTS[rng.below(CONTEXTS.len())]),
        body,
        labels,
        filed_at: Some(filed_at),
        reporter: Some(format!("user{}", rng.below(20_000) + 100)),
        environment,
        paths: vec![],
        oracle,
        upstream: None,
    };
    request.normalize();
    (request, project)
}

/// Pushes the whole history into `importer` (which stores it in batches).
/// Returns nothing; the importer's summary counts what was stored.
pub async fn generate(importer: &mut Importer<'_>, routing: &RoutingConfig, scale: Scale) -> Result<(), StorageError> {
    let mut rng = Rng(scale.seed ^ 0x5CA1_AB1E_D00D_F00D);
    // The history ends at the start of `today`, so a day's runs are alike.
    let now = scale.today.and_hms_opt(0, 0, 0).expect("a valid time").and_utc();
    let mut n = 0u64;
    let mut next = || {
        n += 1;
        n
    };
    for (slug, description, public) in PROJECTS.iter().copied().chain(MORE_PROJECTS.iter().map(|(s, d)| (*s, *d, true)))
    {
        importer
            .push(
                next(),
                ImportRecord::Project(CreateProjectRequest {
                    slug: slug.into(),
                    name: None,
                    description: Some(description.into()),
                    public: Some(public),
                    upstream_url: None,
                    benchmark: None,
                }),
            )
            .await?;
    }
    let counts = spread(&mut rng, scale.reports as usize, scale.attempts);
    // Reports and their attempts go in chunks: a chunk's reports, then its
    // attempts, so the importer batches each kind and memory stays small.
    const CHUNK: u64 = 5_000;
    let mut start = 0u64;
    while start < scale.reports {
        let end = (start + CHUNK).min(scale.reports);
        let mut made = Vec::with_capacity((end - start) as usize);
        for i in start..end {
            let (request, project) = report(&mut rng, i, now);
            let decision = decide(routing, &RoutingInput::from_request(&request));
            made.push(Made {
                filed_at: request.filed_at.unwrap_or(now),
                route: decision.route,
                vague: decision.vague,
                has_oracle: decision.oracle.as_ref().is_some_and(Oracle::is_deterministic),
                project,
            });
            importer.push(next(), ImportRecord::Report(request)).await?;
        }
        for (k, m) in made.iter().enumerate() {
            let i = start + k as u64;
            let tries = counts[i as usize] as usize;
            for t in 0..tries {
                let attempt = attempt(&mut rng, m, i, t, tries, scale, now);
                importer.push(next(), ImportRecord::Attempt(attempt)).await?;
            }
        }
        start = end;
    }
    Ok(())
}

fn attempt(
    rng: &mut Rng,
    m: &Made,
    i: u64,
    t: usize,
    tries: usize,
    scale: Scale,
    now: DateTime<Utc>,
) -> CreateAttemptRequest {
    let (agent, models, median_cost) = AGENTS[rng.below(AGENTS.len())];
    // Attempts follow the filing by hours to weeks, later tries later.
    let hours = rng.log_normal(20.0, 1.2).min(24.0 * 60.0) + t as f64 * rng.range(0.5, 6.0);
    let started_at = (m.filed_at + Duration::seconds((hours * 3600.0) as i64)).min(now - Duration::minutes(1));
    // The newest of the agent's models released (cutoff + 90 days) by then.
    let age = (scale.today - started_at.date_naive()).num_days();
    let model = models
        .iter()
        .copied()
        .filter(|&k| MODELS[k].1 - 90 >= age)
        .max_by_key(|&k| std::cmp::Reverse(MODELS[k].1))
        .unwrap_or(models[0]);
    let (model_name, cutoff_days) = MODELS[model];
    let wall = rng.log_normal(240.0, 0.9).clamp(5.0, 6.0 * 3600.0).round();
    let cost = (rng.log_normal(median_cost, 1.0).clamp(0.001, 500.0) * 10_000.0).round() / 10_000.0;
    let (verdict, source, cause, review) =
        outcome(m.route, m.vague, m.has_oracle, i as usize + t, t == 0 && tries > 1, rng);
    let failure_seen = verdict == Verdict::Reproduced;
    let tokens_in = (cost * rng.range(120_000.0, 260_000.0)) as i64;
    CreateAttemptRequest {
        report_id: None,
        report: Some(ReportKey { project: slug(m.project).into(), external_id: (100_000 + i).to_string() }),
        model: Some(model_name.into()),
        model_cutoff: Some(scale.today - Duration::days(cutoff_days)),
        started_at: Some(started_at),
        ended_at: Some(started_at + Duration::seconds(wall as i64)),
        wall_seconds: Some(wall),
        // A few harnesses do not report cost.
        cost_usd: (!rng.chance(0.02)).then_some(cost),
        tokens_in,
        tokens_out: tokens_in / 8,
        api_calls: Some(1 + (wall / 20.0) as i64),
        iterations: 1 + rng.below(4) as u32,
        candidate: Some(format!("# attempt {t} on report {i}\nraise SystemExit(1)\n")),
        signals: signals(rng, failure_seen),
        failure_cause: cause,
        review,
        reviewer: review.map(|_| format!("maintainer{}", rng.below(12))),
        review_comment: review.map(|r| match r {
            Review::Accepted => "Ran it locally; matches the report.".to_owned(),
            Review::Rejected => "Shows a different failure than the report.".to_owned(),
        }),
        attempt_key: Some(format!("scale-{}-{i}-{t}", scale.seed)),
        ..CreateAttemptRequest::new(0, agent, verdict, source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spread_adds_up_and_has_a_long_tail() {
        let mut rng = Rng(7);
        let counts = spread(&mut rng, 10_000, 100_000);
        assert_eq!(counts.iter().map(|c| *c as u64).sum::<u64>(), 100_000);
        let zero = counts.iter().filter(|c| **c == 0).count();
        assert!((800..2_000).contains(&zero), "about a tenth untouched: {zero}");
        let max = *counts.iter().max().unwrap();
        assert!(max >= 100, "a long tail: the busiest report has {max}");
        let mut sorted = counts.clone();
        sorted.sort_unstable();
        assert!(sorted[5_000] < 10, "the median report has few: {}", sorted[5_000]);
        // A single report takes them all.
        assert_eq!(spread(&mut Rng(1), 1, 5), vec![5]);
    }

    #[test]
    fn sizes_are_checked_by_flag() {
        let today = NaiveDate::from_ymd_opt(2026, 12, 4).unwrap();
        let s = |reports, attempts| Scale { reports, attempts, seed: 1, today }.check();
        assert_eq!(s(0, 10).unwrap_err(), "--reports: at least 1");
        assert!(s(MAX_REPORTS + 1, 0).unwrap_err().starts_with("--reports: at most"));
        assert!(s(1, MAX_ATTEMPTS + 1).unwrap_err().starts_with("--attempts: at most"));
        assert!(s(1, 0).is_ok());
    }
}
