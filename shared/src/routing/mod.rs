//! The triage decision rule of docs/domain.md ("Routing"), as a pure function.
//!
//! Rules run in order; the first route that applies wins and flags
//! accumulate. Every rule is recorded with whether it fired and on what
//! evidence, so the report page can say why. Keyword lists and thresholds are
//! [`RoutingConfig`], deserialisable from a configuration file, with the
//! defaults below.

use crate::api::reports::{Oracle, ReportFeatures, RuleOutcome};
use crate::model::{Category, OracleKind, OracleSource, Route};

pub mod classifier;
mod config;
pub mod eval;
mod evidence;
pub mod sections;
pub mod text;

pub use classifier::{Classifier, Example};
pub use config::RoutingConfig;
pub use evidence::{HarnessEvidence, contains_word, exception_line, harness_evidence};
pub use sections::{Boilerplate, Reading};

use evidence::{states_version, trim_float};

/// What the rule looks at.
#[derive(Debug, Clone, Copy)]
pub struct RoutingInput<'a> {
    pub title: &'a str,
    pub body: &'a str,
    pub labels: &'a [String],
    pub paths: &'a [String],
    pub environment: Option<&'a str>,
    /// An oracle supplied with the report (benchmark tests, an authored check).
    pub oracle: Option<&'a Oracle>,
    /// The upstream tracker's own type of the issue (`Bug`, `Feature`).
    pub upstream_kind: Option<&'a str>,
    /// Lines the project's reports share, left out of the evidence.
    pub boilerplate: Option<&'a Boilerplate>,
}

/// What the rule decided, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingDecision {
    pub route: Route,
    pub category: Category,
    pub vague: bool,
    pub llm_only: bool,
    pub features: ReportFeatures,
    /// The supplied oracle, or one derived from the report (a crash signature
    /// from a traceback).
    pub oracle: Option<Oracle>,
    pub explanation: Vec<RuleOutcome>,
    /// How sure the harness decision is, 0.5 to 1.
    pub confidence: f64,
    /// Confidence fell under `min_confidence`: a human should look at the route.
    pub route_check: bool,
    /// The label or upstream type that says the report is not a bug.
    pub not_a_bug: Option<String>,
    /// The environment the body's environment sections and dumps give
    /// (empty when there are none), for a report filed without one.
    pub environment: String,
}

impl<'a> RoutingInput<'a> {
    /// What the rule reads from a report as submitted.
    pub fn from_request(req: &'a crate::api::reports::CreateReportRequest) -> Self {
        Self {
            title: &req.title,
            body: &req.body,
            labels: &req.labels,
            paths: &req.paths,
            environment: req.environment.as_deref(),
            oracle: req.oracle.as_ref(),
            upstream_kind: req.upstream.as_ref().and_then(|u| u.kind.as_deref()),
            boilerplate: None,
        }
    }

    /// What the rule reads from a stored report, with no oracle (a caller
    /// that has one sets `oracle`) and no boilerplate.
    pub fn from_report(report: &'a crate::api::reports::Report) -> Self {
        let s = &report.summary;
        Self {
            title: &s.title,
            body: &report.body,
            labels: &s.labels,
            paths: &report.paths,
            environment: report.environment.as_deref(),
            oracle: None,
            upstream_kind: report.upstream.as_ref().and_then(|u| u.kind.as_deref()),
            boilerplate: None,
        }
    }

    /// The same input, read with a project's boilerplate.
    pub fn with_boilerplate(self, boilerplate: Option<&'a Boilerplate>) -> Self {
        Self { boilerplate, ..self }
    }
}

impl RoutingDecision {
    /// The report's environment as stored: the one filed with it, else the
    /// one its body's environment sections give (at most 4,000 characters).
    pub fn environment_for(&self, filed: Option<&str>) -> Option<String> {
        match filed.map(str::trim).filter(|e| !e.is_empty()) {
            Some(e) => Some(e.to_owned()),
            None => {
                let read = self.environment.trim();
                (!read.is_empty()).then(|| match read.char_indices().nth(4000) {
                    Some((i, _)) => read[..i].to_owned(),
                    None => read.to_owned(),
                })
            }
        }
    }

    pub fn oracle_kind(&self) -> OracleKind {
        self.oracle.as_ref().map_or(OracleKind::None, |o| o.kind)
    }

    /// The decision as stored for a report whose route a maintainer
    /// corrected: the corrected route, its category, no route check.
    pub fn keep_correction(&mut self, route: Route) {
        self.route = route;
        if route == Route::HumanFirst {
            self.category = Category::Harness;
        } else if self.category == Category::Harness {
            // Not harness, says the maintainer: the library's own logic.
            self.category = Category::PatchLogic;
        }
        self.route_check = false;
        mark_corrected(&mut self.explanation);
    }
}

/// Report features derived from the text.
pub fn features(cfg: &RoutingConfig, title: &str, body: &str, environment: Option<&str>) -> ReportFeatures {
    features_of(cfg, title, body, environment, &sections::read(body, &Boilerplate::default()))
}

/// Report features of a body already read: code blocks and expected/actual
/// statements of the problem only (an environment dump is not a code block).
pub fn features_of(
    cfg: &RoutingConfig,
    title: &str,
    body: &str,
    environment: Option<&str>,
    reading: &Reading,
) -> ReportFeatures {
    let lower = body.to_lowercase();
    let (blocks, indented) = reading.sections.iter().fold((0, 0), |(b, i), s| (b + s.blocks, i + s.indented));
    let has_code_block = blocks > 0 || indented >= 2;
    let has_traceback = body.contains("Traceback (most recent call last)") || exception_line(body).is_some();
    let has_versions = environment.is_some_and(|e| !e.trim().is_empty())
        || !reading.environment.trim().is_empty()
        || states_version(cfg, &lower);
    let problem = format!("{}{}", reading.prose(), reading.code()).to_lowercase();
    let has_expected_actual = cfg.expected_actual_markers.iter().any(|m| contains_word(&problem, &m.to_lowercase()))
        || reading.sections.iter().any(sections::Section::states_expected_actual);
    ReportFeatures {
        has_code_block,
        has_traceback,
        has_versions,
        has_expected_actual,
        length: (title.chars().count() + body.chars().count()) as u32,
    }
}

/// Runs the explicit rule alone.
pub fn decide(cfg: &RoutingConfig, input: &RoutingInput<'_>) -> RoutingDecision {
    decide_with(cfg, None, input)
}

/// Runs the rule, with a trained classifier beside the explicit harness
/// signals when there is one.
pub fn decide_with(cfg: &RoutingConfig, model: Option<&Classifier>, input: &RoutingInput<'_>) -> RoutingDecision {
    let empty = Boilerplate::default();
    let reading = sections::read(input.body, input.boilerplate.unwrap_or(&empty));
    let f = features_of(cfg, input.title, input.body, input.environment, &reading);
    let mut explanation = Vec::new();

    // 1. harness and plumbing: weighed signals, and the classifier
    let ev = harness_evidence(cfg, input, &reading);
    let prediction = model.map(|m| m.predict_reading(input.title, &reading, input.labels));
    let learned = prediction.as_ref().map_or(0.0, |p| {
        let t = cfg.harness_threshold;
        let l = cfg.classifier_weight * (logit(p.p_harness) - logit(cfg.harness_prior));
        // Against the explicit signals it speaks only when it is sure, and
        // never outweighs more than half the threshold.
        if l < 0.0 && l > -1.0 { 0.0 } else { l.clamp(-t / 2.0, t) }
    });
    let total = ev.score + learned;
    let harness = total >= cfg.harness_threshold;
    let mut weighed = format!("weight {}", trim_float(ev.score));
    if prediction.is_some() {
        weighed =
            format!("{weighed} {} classifier {}", if learned < 0.0 { "-" } else { "+" }, trim_float(learned.abs()));
    }
    explanation.push(RuleOutcome {
        rule: "harness_or_plumbing".into(),
        fired: harness,
        evidence: format!(
            "{weighed} {} {}{}{}",
            if harness { ">=" } else { "<" },
            trim_float(cfg.harness_threshold),
            if ev.items.is_empty() {
                ": no harness keyword, label, code marker or path".to_owned()
            } else {
                format!(": {}", ev.items.join("; "))
            },
            evidence::set_aside(&reading).map(|s| format!(" ({s})")).unwrap_or_default()
        ),
    });
    if let Some(p) = &prediction {
        explanation.push(RuleOutcome {
            rule: "harness_classifier".into(),
            fired: learned > 0.0,
            evidence: p.explain(),
        });
    }
    // Sure when the evidence is far from the threshold either way, unsure
    // within about one keyword's weight of it.
    let margin = (total - (cfg.harness_threshold - 0.5)).abs();
    let confidence = ((1.0 / (1.0 + (-2.0 * margin).exp())) * 100.0).round() / 100.0;
    let route_check = confidence < cfg.min_confidence;
    explanation.push(RuleOutcome {
        rule: "route_check".into(),
        fired: route_check,
        evidence: format!(
            "confidence {confidence:.2} {} {:.2}{}",
            if route_check { "<" } else { ">=" },
            cfg.min_confidence,
            if route_check { ": a human should look at the route" } else { "" }
        ),
    });

    // 2. oracle: supplied, derivable, or cheap to write
    let supplied = input.oracle.filter(|o| o.kind != OracleKind::None).cloned();
    let derived = if supplied.as_ref().is_some_and(Oracle::is_deterministic) {
        None
    } else if f.has_traceback && f.has_code_block {
        exception_line(input.body).map(|sig| Oracle {
            kind: OracleKind::CrashSignature,
            source: Some(OracleSource::Derived),
            command: None,
            fail_to_pass: Vec::new(),
            pass_to_pass: Vec::new(),
            signature: Some(sig.to_owned()),
            repeats: None,
            authoring_minutes: None,
        })
    } else {
        None
    };
    let oracle = derived.or(supplied);
    let deterministic = oracle.as_ref().is_some_and(Oracle::is_deterministic);
    let cheap = f.has_code_block && (f.has_traceback || f.has_expected_actual);
    let (oracle_fired, oracle_evidence) = match &oracle {
        Some(o) if o.is_deterministic() => (
            true,
            match (o.kind, o.source) {
                (OracleKind::CrashSignature, Some(OracleSource::Derived)) => format!(
                    "crash signature derived from the traceback: {}",
                    o.signature.as_deref().unwrap_or_default()
                ),
                (kind, source) => format!(
                    "{kind} oracle from {}{}",
                    source.map_or("unknown source", |s| s.as_str()),
                    if o.fail_to_pass.is_empty() {
                        String::new()
                    } else {
                        format!(" ({} fail-to-pass tests)", o.fail_to_pass.len())
                    }
                ),
            },
        ),
        _ if cheap => (
            true,
            format!(
                "no oracle yet, but one can be written in under an hour: code block and {}",
                if f.has_traceback { "traceback" } else { "stated expected/actual behaviour" }
            ),
        ),
        _ => (
            false,
            missing(&[
                (!f.has_code_block, "no code block"),
                (!f.has_traceback, "no traceback"),
                (!f.has_expected_actual, "no expected/actual behaviour"),
            ]),
        ),
    };
    explanation.push(RuleOutcome {
        rule: "deterministic_oracle".into(),
        fired: oracle_fired,
        evidence: oracle_evidence,
    });

    let route = if harness {
        Route::HumanFirst
    } else if deterministic || cheap {
        Route::AgentFirst
    } else {
        Route::Hypothesis
    };
    explanation.push(RuleOutcome {
        rule: "no_oracle".into(),
        fired: route == Route::Hypothesis,
        evidence: if route == Route::Hypothesis {
            "no oracle and no cheap way to build one: agent output is a hypothesis".into()
        } else {
            "an earlier rule routed the report".into()
        },
    });

    // Flags
    let short = f.length < cfg.short_length;
    let vague = !f.has_code_block && !f.has_traceback && (short || !f.has_versions);
    explanation.push(RuleOutcome {
        rule: "vague".into(),
        fired: vague,
        evidence: if vague {
            missing(&[
                (short, &format!("short ({} < {} characters)", f.length, cfg.short_length)),
                (!f.has_code_block, "no code block"),
                (!f.has_traceback, "no traceback"),
                (!f.has_versions, "no versions"),
            ])
        } else {
            let mut has = Vec::new();
            if f.has_code_block {
                has.push("code block")
            }
            if f.has_traceback {
                has.push("traceback")
            }
            if f.has_versions {
                has.push("versions")
            }
            if !short {
                has.push("long enough")
            }
            format!("has {}", has.join(", "))
        },
    });
    let llm_only = !deterministic && oracle.as_ref().is_some_and(|o| o.kind == OracleKind::LlmJudge);
    explanation.push(RuleOutcome {
        rule: "llm_only".into(),
        fired: llm_only,
        evidence: if llm_only {
            "the only grading is an LLM judge: a human must accept its verdict".into()
        } else if deterministic {
            "a deterministic oracle grades it".into()
        } else {
            "no LLM judge configured".into()
        },
    });

    let category = if harness {
        Category::Harness
    } else if deterministic || f.has_traceback || f.has_code_block || !input.paths.is_empty() {
        Category::PatchLogic
    } else {
        Category::Unknown
    };

    // Not a bug: a label or the tracker's type says so.
    let not_a_bug = input
        .labels
        .iter()
        .map(|l| ("label", l.as_str()))
        .chain(input.upstream_kind.map(|k| ("upstream type", k)))
        .find_map(|(what, v)| {
            cfg.not_a_bug_labels
                .iter()
                .find(|p| text::glob_match(p, v))
                .map(|p| format!("{what} \"{v}\" matches \"{p}\""))
        });
    explanation.push(RuleOutcome {
        rule: "not_a_bug".into(),
        fired: not_a_bug.is_some(),
        evidence: match &not_a_bug {
            Some(why) => format!("{why}: it leaves the backlog as not a bug unless it is reproduced"),
            None => "no label or upstream type says it is not a bug".into(),
        },
    });

    RoutingDecision {
        route,
        category,
        vague,
        llm_only,
        features: f,
        oracle,
        explanation,
        confidence,
        route_check,
        not_a_bug,
        environment: reading.environment,
    }
}

/// A corrected report's explanation: the rule's, with its route check
/// answered by the correction.
pub fn mark_corrected(explanation: &mut [RuleOutcome]) {
    for r in explanation.iter_mut().filter(|r| r.rule == "route_check") {
        r.fired = false;
        r.evidence = format!("{}; a maintainer set the route", r.evidence.split(':').next().unwrap_or_default());
    }
}

fn logit(p: f64) -> f64 {
    let p = p.clamp(1e-6, 1.0 - 1e-6);
    (p / (1.0 - p)).ln()
}

fn missing(items: &[(bool, &str)]) -> String {
    items.iter().filter(|(on, _)| *on).map(|(_, s)| *s).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests;
